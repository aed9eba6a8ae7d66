//! Shared by `tests/dynamic.rs` and `examples/dynamic_speed.rs`: dynamic
//! sets and a plain index over the same member columns.

use bloomslice::BloomParams;
use bloomslice_papers::{DynamicBloomFilter, DynamicSlicedIndex};

/// Builds `sets` dynamic sets of `members` full members each (capacity
/// `cap`), in a `DynamicSlicedIndex` and, member bit view by member bit view,
/// in a plain `SlicedIndex` (same columns, same fill); returns both and the
/// column -> set map of the plain index.
pub fn dynamic_and_plain(
    p: BloomParams,
    cap: u64,
    sets: u64,
    members: u64,
) -> (DynamicSlicedIndex, bloomslice::SlicedIndex, Vec<u64>) {
    let mut dynamic = DynamicSlicedIndex::new(p, cap).unwrap();
    let mut plain = bloomslice::SlicedIndex::new(p);
    let mut owner = Vec::new();
    for id in 0..sets {
        let mut d = DynamicBloomFilter::new(p, cap).unwrap();
        for j in 0..members * cap {
            d.insert(&((id << 32) | j).to_le_bytes());
        }
        for view in d.bit_views().unwrap() {
            plain.insert_filter(owner.len() as u64, &view).unwrap();
            owner.push(id);
        }
        dynamic.insert_filter(id, &d).unwrap();
    }
    (dynamic, plain, owner)
}

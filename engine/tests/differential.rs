//! Every kernel backend gives the scalar backend's answers on a large
//! index. (`SlicedIndex` against `NaiveIndex` under random operation
//! sequences, with ground truth for "no false negatives", is the shared
//! harness of `tests/filter_index.rs`.)

use bloomslice::kernels::Kernels;
use bloomslice::{BatchResults, BloomFilter, BloomParams, SlicedIndex};

fn filter(params: BloomParams, keys: impl IntoIterator<Item = u32>) -> BloomFilter {
    let mut f = BloomFilter::new(params).unwrap();
    for key in keys {
        f.insert(&key.to_le_bytes());
    }
    f
}

#[test]
fn every_backend_gives_the_same_answers() {
    let params = BloomParams::new(3000, 5).unwrap();
    let mut index = SlicedIndex::new(params);
    for id in 0..2000u64 {
        index.insert_filter(id, &filter(params, (id as u32 * 4)..(id as u32 * 4 + 30))).unwrap();
    }
    let keys: Vec<[u8; 4]> = (0u32..12_000).map(u32::to_le_bytes).collect();
    index.set_kernels(Kernels::scalar());
    let mut want = BatchResults::new();
    index.query_batch(&keys, &mut want);
    for kernels in Kernels::available() {
        index.set_kernels(kernels);
        let mut got = BatchResults::new();
        index.query_batch(&keys, &mut got);
        assert!(want.iter().eq(got.iter()), "{} differs from scalar", kernels.backend());
    }
}

//! The filters of one set of a naive `SetIndex` model, filled as the
//! collection's documentation says a set's filters fill: keys go to the last
//! filter until it holds its capacity, then to a new one. Shared by the
//! differential test (`collection_differential.rs`) and the fuzz target
//! (`fuzz/fuzz_targets/collection_ops.rs`), each of which includes this file
//! with `#[path]`.

use bloomslice::BloomFilter;
use bloomslice::collection::FilterInfo;

/// A model set's filters: each with its capacity and the keys it holds.
pub type ModelFilters = Vec<(BloomFilter, u64, u64)>;

/// Gives `keys` to set `id`'s model `filters`, taking new filters'
/// parameters and capacities from the collection's `infos` (the model places
/// the keys itself, so the loads the collection reports are checked, not
/// copied), then checks every filter's capacity and load, that capacities
/// at least double and that each added filter has a part of its own; with
/// `p`, also that added filter `j` is at rate `p / 2^j`.
///
/// # Panics
///
/// On any of those checks failing.
pub fn fill_filters(id: u64, filters: &mut ModelFilters, keys: &[u64], infos: &[FilterInfo], p: Option<f64>) {
    for key in keys {
        let full = filters.last().is_none_or(|&(_, capacity, load)| load >= capacity);
        if full {
            let j = filters.len();
            let info = infos.get(j).unwrap_or_else(|| panic!("set {id}: no filter {j} in {infos:?}"));
            filters.push((BloomFilter::new(info.params).unwrap(), info.capacity, 0));
        }
        let (filter, _, load) = filters.last_mut().unwrap();
        filter.insert(&key.to_le_bytes());
        *load += 1;
    }
    // A set of no keys still has its first filter.
    if filters.is_empty() {
        filters.push((BloomFilter::new(infos[0].params).unwrap(), infos[0].capacity, 0));
    }
    assert_eq!(infos.len(), filters.len(), "set {id}: filters");
    for (j, (info, (_, capacity, load))) in infos.iter().zip(filters.iter()).enumerate() {
        assert_eq!((info.capacity, info.load), (*capacity, *load), "set {id}: filter {j}");
        if j > 0 {
            // Capacities at least double (an added filter may land in an
            // existing part up to twice the bits it needs, so the next one's
            // `m` may equal it, but never its place).
            let first = infos[0].capacity.max(1);
            assert!(info.capacity >= first << j, "set {id}: filter {j} holds {} < {first} * 2^{j}", info.capacity);
            assert!(infos[..j].iter().all(|earlier| earlier.part != info.part), "set {id}: filter {j} shares a part");
            if let Some(p) = p {
                let rate = p / f64::powi(2.0, j as i32);
                assert!(
                    info.params.expected_fpr(info.capacity) <= rate * 1.000_001,
                    "set {id}: filter {j} over {rate}"
                );
            }
        }
    }
}

//! Counting Bloom filters and the counting sliced index: an exact counter
//! model (sticky saturation at 15), laws checked with proptest (no false
//! negatives, bit view == filter of the multiset, union laws), and the index
//! differentially against a list of counting filters. Insert/remove
//! throughput is printed by `cargo run --release -p bloomslice-papers --example
//! counting_throughput`.

use std::collections::HashMap;

use bloomslice::{BloomFilter, BloomParams, Error, NaiveIndex};
use bloomslice_papers::counting::COUNTER_MAX;
use bloomslice_papers::{CountingBloomFilter, CountingError, CountingSlicedIndex};
use proptest::prelude::*;

#[path = "common/set_model.rs"]
mod set_model;

/// The counters as plain integers plus a sticky "ever reached 15" flag.
struct CounterModel {
    count: Vec<u32>,
    saturated: Vec<bool>,
}

impl CounterModel {
    fn new(m: usize) -> Self {
        CounterModel { count: vec![0; m], saturated: vec![false; m] }
    }
    fn value(&self, i: usize) -> u8 {
        if self.saturated[i] { COUNTER_MAX } else { self.count[i] as u8 }
    }
    fn insert(&mut self, pos: &[u32]) {
        for &p in pos {
            let p = p as usize;
            if !self.saturated[p] {
                self.count[p] += 1;
                self.saturated[p] = self.count[p] >= u32::from(COUNTER_MAX);
            }
        }
    }
    fn remove(&mut self, pos: &[u32]) -> bool {
        let mut need: HashMap<u32, u32> = HashMap::new();
        for &p in pos {
            *need.entry(p).or_default() += 1;
        }
        if need.iter().any(|(&p, &n)| !self.saturated[p as usize] && self.count[p as usize] < n) {
            return false;
        }
        for &p in pos {
            if !self.saturated[p as usize] {
                self.count[p as usize] -= 1;
            }
        }
        true
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8),
    Remove(u8),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(
        prop_oneof![3 => any::<u8>().prop_map(Op::Insert), 2 => any::<u8>().prop_map(Op::Remove)],
        0..200,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every counter equals the model's after every operation; removal is
    /// refused exactly when the model refuses it, and then changes nothing.
    #[test]
    fn counters_match_the_model(m in 1u64..200, k in 1u32..8, ops in ops()) {
        let params = BloomParams::new(m, k).unwrap();
        let mut f = CountingBloomFilter::new(params).unwrap();
        let mut model = CounterModel::new(m as usize);
        for op in ops {
            match op {
                Op::Insert(key) => {
                    f.insert(&[key]);
                    model.insert(&params.positions(params.hash(&[key])));
                }
                Op::Remove(key) => {
                    let before = f.clone();
                    let ok = model.remove(&params.positions(params.hash(&[key])));
                    let got = f.remove(&[key]);
                    prop_assert_eq!(got.is_ok(), ok);
                    if !ok {
                        let refused = matches!(got, Err(CountingError::NotPresent { .. }));
                        prop_assert!(refused);
                        prop_assert_eq!(&f, &before);
                    }
                }
            }
            f.validate().unwrap();
        }
        for i in 0..m {
            prop_assert_eq!(f.counter(i), model.value(i as usize));
        }
    }

    /// Removing only keys that were inserted never causes a false negative,
    /// and the bit view equals the Bloom filter of the remaining multiset
    /// (a superset of it once some counter saturated).
    #[test]
    fn no_false_negatives_and_bit_view_is_the_multiset_filter(m in 1u64..400, k in 1u32..6, ops in ops()) {
        let params = BloomParams::new(m, k).unwrap();
        let mut f = CountingBloomFilter::new(params).unwrap();
        let mut multiset: HashMap<u8, u32> = HashMap::new();
        for op in ops {
            match op {
                Op::Insert(key) => {
                    f.insert(&[key]);
                    *multiset.entry(key).or_default() += 1;
                }
                Op::Remove(key) => {
                    if let Some(n) = multiset.get_mut(&key).filter(|n| **n > 0) {
                        f.remove(&[key]).unwrap();
                        *n -= 1;
                    }
                }
            }
            for (key, &n) in &multiset {
                prop_assert!(n == 0 || f.contains(&[*key]), "false negative for {}", key);
            }
        }
        let mut expect = BloomFilter::new(params).unwrap();
        for (key, &n) in &multiset {
            if n > 0 {
                expect.insert(&[*key]);
            }
        }
        let view = f.to_bloom_filter().unwrap();
        if f.count_saturated() == 0 {
            prop_assert_eq!(view, expect);
        } else {
            let mut both = view.clone();
            both.intersect_with(&expect).unwrap();
            prop_assert_eq!(both, expect);
        }
    }

    /// Union adds counters (saturating): it commutes, its bit view is the OR
    /// of the bit views, and it contains both operands' keys.
    #[test]
    fn union_laws(a in proptest::collection::vec(any::<u8>(), 0..60), b in proptest::collection::vec(any::<u8>(), 0..60)) {
        let params = BloomParams::new(300, 3).unwrap();
        let build = |keys: &[u8]| {
            let mut f = CountingBloomFilter::new(params).unwrap();
            keys.iter().for_each(|k| f.insert(&[*k]));
            f
        };
        let (fa, fb) = (build(&a), build(&b));
        let mut ab = fa.clone();
        ab.union_with(&fb).unwrap();
        let mut ba = fb.clone();
        ba.union_with(&fa).unwrap();
        prop_assert_eq!(&ab, &ba);
        let mut or = fa.to_bloom_filter().unwrap();
        or.union_with(&fb.to_bloom_filter().unwrap()).unwrap();
        prop_assert_eq!(ab.to_bloom_filter().unwrap(), or);
        for key in a.iter().chain(&b) {
            prop_assert!(ab.contains(&[*key]));
        }
        for i in 0..300 {
            prop_assert_eq!(ab.counter(i), (fa.counter(i) + fb.counter(i)).min(COUNTER_MAX));
        }
    }

    /// The counting sliced index answers exactly as a list of its counting
    /// filters does, and every column stays the bit view of its counters.
    #[test]
    fn sliced_index_matches_a_list_of_counting_filters(
        ops in proptest::collection::vec((0u8..6, 0u64..8, any::<u8>()), 0..150),
    ) {
        let params = BloomParams::new(257, 3).unwrap();
        let mut index = CountingSlicedIndex::new(params);
        let mut model: HashMap<u64, CountingBloomFilter> = HashMap::new();
        for (op, id, key) in ops {
            match op {
                0 => set_model::insert_set(&mut model, id, index.insert_set(id), || CountingBloomFilter::new(params).unwrap())?,
                1 => set_model::take_filter(&mut model, id, index.take_filter(id))?,
                2 | 3 => {
                    let got = index.insert_key(id, &[key]);
                    match model.get_mut(&id) {
                        Some(f) => { got.unwrap(); f.insert(&[key]); }
                        None => prop_assert_eq!(got, Err(Error::UnknownId(id).into())),
                    }
                }
                _ => {
                    let got = index.remove_key(id, &[key]);
                    match model.get_mut(&id) {
                        Some(f) => prop_assert_eq!(got, f.remove(&[key])),
                        None => prop_assert_eq!(got, Err(Error::UnknownId(id).into())),
                    }
                }
            }
            index.validate().unwrap();
        }
        let mut naive = NaiveIndex::new(params);
        for (&id, f) in &model {
            naive.insert_filter(id, &f.to_bloom_filter().unwrap()).unwrap();
        }
        for key in 0..=255u8 {
            let mut got = index.query(&[key]);
            got.sort_unstable();
            let mut want = naive.query(&[key]);
            want.sort_unstable();
            prop_assert_eq!(got, want);
        }
    }
}

#[test]
fn errors_are_typed() {
    let mut index = CountingSlicedIndex::new(BloomParams::new(100, 3).unwrap());
    let other = CountingBloomFilter::new(BloomParams::new(100, 4).unwrap()).unwrap();
    assert!(matches!(index.insert_filter(1, &other), Err(CountingError::Core(Error::ParamsMismatch { .. }))));
    let mut same = CountingBloomFilter::new(BloomParams::new(100, 3).unwrap()).unwrap();
    assert!(matches!(same.union_with(&other), Err(CountingError::Core(Error::ParamsMismatch { .. }))));
    index.insert_set(1).unwrap();
    assert_eq!(index.insert_set(1), Err(Error::DuplicateId(1).into()));
    assert!(matches!(index.remove_key(1, "absent"), Err(CountingError::NotPresent { .. })));
    index.insert_key(1, "x").unwrap();
    index.insert_key(1, "x").unwrap();
    index.remove_key(1, "x").unwrap();
    assert_eq!(index.query("x"), vec![1]);
    index.remove_key(1, "x").unwrap();
    assert!(index.query("x").is_empty());
    assert_eq!(index.index().count_ones(), 0);
    index.validate().unwrap();
}

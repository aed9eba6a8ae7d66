//! Differential property tests: `SlicedIndex` against `NaiveIndex` under
//! random operation sequences, plus ground truth for "no false negatives".

use std::collections::{BTreeMap, BTreeSet};

use bloomslice::kernels::Kernels;
use bloomslice::{BatchResults, BloomFilter, BloomParams, Error, NaiveIndex, SlicedConfig, SlicedIndex};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Insert { id: u64, keys: Vec<u32> },
    InsertMany { first: u64, count: u16 },
    Delete { id: u64 },
    Update { id: u64, keys: Vec<u32> },
    InsertKey { id: u64, key: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0u64..40;
    prop_oneof![
        4 => (id.clone(), prop::collection::vec(0u32..500, 0..20)).prop_map(|(id, keys)| Op::Insert { id, keys }),
        1 => (1000u64..3000, 1u16..700).prop_map(|(first, count)| Op::InsertMany { first, count }),
        3 => id.clone().prop_map(|id| Op::Delete { id }),
        1 => (1000u64..3000).prop_map(|id| Op::Delete { id }),
        2 => (id.clone(), prop::collection::vec(0u32..500, 0..20)).prop_map(|(id, keys)| Op::Update { id, keys }),
        3 => (id, 0u32..500).prop_map(|(id, key)| Op::InsertKey { id, key }),
    ]
}

fn filter(params: BloomParams, keys: impl IntoIterator<Item = u32>) -> BloomFilter {
    let mut f = BloomFilter::new(params).unwrap();
    for key in keys {
        f.insert(&key.to_le_bytes());
    }
    f
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

fn run(params: BloomParams, config: SlicedConfig, ops: &[Op]) {
    let mut sliced = SlicedIndex::with_config(params, config);
    let mut naive = NaiveIndex::new(params);
    // Ground truth: the keys each filter really holds.
    let mut truth: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
    for op in ops {
        let (a, b) = match op {
            Op::Insert { id, keys } => {
                let f = filter(params, keys.iter().copied());
                let r = sliced.insert_filter(*id, &f);
                if r.is_ok() {
                    truth.insert(*id, keys.iter().copied().collect());
                }
                (r, naive.insert_filter(*id, &f))
            }
            Op::InsertMany { first, count } => {
                let filters: Vec<_> = (0..u64::from(*count)).map(|i| filter(params, [(*first + i) as u32])).collect();
                let items: Vec<_> = filters.iter().enumerate().map(|(i, f)| (*first + i as u64, f)).collect();
                let r = sliced.insert_filters(&items);
                let mut rn = Ok(());
                if items.iter().any(|(id, _)| naive.get(*id).is_some()) {
                    rn = Err(Error::DuplicateId(0));
                } else {
                    for (id, f) in &items {
                        naive.insert_filter(*id, f).unwrap();
                        truth.insert(*id, [*id as u32].into());
                    }
                }
                // Which duplicate is reported may differ; compare success only.
                (r.map_err(|_| Error::DuplicateId(0)), rn)
            }
            Op::Delete { id } => {
                let r = sliced.delete_filter(*id);
                truth.remove(id);
                (r, naive.delete_filter(*id))
            }
            Op::Update { id, keys } => {
                let f = filter(params, keys.iter().copied());
                let r = sliced.update_filter(*id, &f);
                if r.is_ok() {
                    truth.get_mut(id).unwrap().extend(keys);
                }
                (r, naive.update_filter(*id, &f))
            }
            Op::InsertKey { id, key } => {
                let r = sliced.insert_key(*id, &key.to_le_bytes());
                if r.is_ok() {
                    truth.get_mut(id).unwrap().insert(*key);
                }
                (r, naive.insert_key(*id, &key.to_le_bytes()))
            }
        };
        assert_eq!(a, b, "{op:?}");
        sliced.validate().unwrap();
        assert_eq!(sliced.len(), naive.len());
        let keys: Vec<[u8; 4]> = (0u32..520).step_by(3).chain(2990..3010).map(u32::to_le_bytes).collect();
        let mut batch = BatchResults::new();
        sliced.query_batch(&keys, &mut batch);
        for (key, got) in keys.iter().zip(batch.iter()) {
            let want = sorted(naive.query(key));
            assert_eq!(sorted(got.to_vec()), want, "batch, key {key:?} after {op:?}");
            assert_eq!(sorted(sliced.query(key)), want, "single, key {key:?} after {op:?}");
            let k = u32::from_le_bytes(*key);
            for (id, held) in &truth {
                if held.contains(&k) {
                    assert!(want.contains(id), "false negative: key {k} in filter {id}");
                }
            }
        }
    }
    for (id, _) in naive.filters() {
        assert_eq!(&sliced.get_filter(*id).unwrap(), naive.get(*id).unwrap());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn sliced_matches_naive(
        m in 1u64..700,
        k in 1u32..9,
        seed in any::<u64>(),
        wide in any::<bool>(),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let params = BloomParams::new(m, k).unwrap().with_seed(seed);
        let config = SlicedConfig { max_shard_columns: if wide { 4096 } else { 512 }, prefetch_distance: 3 };
        run(params, config, &ops);
    }
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
        assert!(want.iter().eq(got.iter()), "{} differs from scalar", kernels.backend);
    }
}

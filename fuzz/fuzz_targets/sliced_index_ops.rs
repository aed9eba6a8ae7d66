//! Differential fuzzing of `SlicedIndex` against `NaiveIndex`: an arbitrary
//! sequence of operations is applied to both, answers are compared after
//! every step, and the sliced index's invariants are validated.
#![no_main]

use arbitrary::Arbitrary;
use bloomslice::kernels::Kernels;
use bloomslice::{BatchResults, BloomFilter, BloomParams, NaiveIndex, SlicedConfig, SlicedIndex};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    Insert { id: u8, keys: Vec<u16> },
    InsertWords { id: u8, words: Vec<u64> },
    InsertMany { first: u16, count: u16 },
    Delete { id: u16 },
    Update { id: u8, keys: Vec<u16> },
    InsertKey { id: u8, key: u16 },
    Get { id: u8 },
    Query { keys: Vec<u16> },
    SwitchKernels { which: u8 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    m: u16,
    k: u8,
    seed: u64,
    narrow_shards: bool,
    ops: Vec<Op>,
}

fn filter(params: BloomParams, keys: &[u16]) -> BloomFilter {
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

fuzz_target!(|input: Input| {
    let Ok(params) = BloomParams::new(u64::from(input.m % 1024), u32::from(input.k % 12)) else {
        return;
    };
    let params = params.with_seed(input.seed);
    let config = SlicedConfig { max_shard_columns: if input.narrow_shards { 512 } else { 2048 }, prefetch_distance: 2 };
    let mut sliced = SlicedIndex::with_config(params, config);
    let mut naive = NaiveIndex::new(params);
    let backends = Kernels::available();
    for op in input.ops.iter().take(64) {
        match op {
            Op::Insert { id, keys } => {
                let f = filter(params, keys);
                assert_eq!(sliced.insert_filter(u64::from(*id), &f), naive.insert_filter(u64::from(*id), &f));
            }
            Op::InsertWords { id, words } => {
                let a = sliced.insert_words(u64::from(*id), &params, words);
                let b = BloomFilter::from_words(params, words).and_then(|f| naive.insert_filter(u64::from(*id), &f));
                assert_eq!(a, b);
            }
            Op::InsertMany { first, count } => {
                let first = 1000 + u64::from(*first % 2000);
                let filters: Vec<_> = (0..u64::from(*count % 600)).map(|i| filter(params, &[i as u16])).collect();
                let items: Vec<_> = filters.iter().enumerate().map(|(i, f)| (first + i as u64, f)).collect();
                let clash = items.iter().any(|(id, _)| naive.get(*id).is_some());
                assert_eq!(sliced.insert_filters(&items).is_ok(), !clash);
                if !clash {
                    for (id, f) in &items {
                        naive.insert_filter(*id, f).unwrap();
                    }
                }
            }
            Op::Delete { id } => {
                let id = u64::from(*id % 3000);
                assert_eq!(sliced.delete_filter(id), naive.delete_filter(id));
            }
            Op::Update { id, keys } => {
                let f = filter(params, keys);
                assert_eq!(sliced.update_filter(u64::from(*id), &f), naive.update_filter(u64::from(*id), &f));
            }
            Op::InsertKey { id, key } => {
                let key = key.to_le_bytes();
                assert_eq!(sliced.insert_key(u64::from(*id), &key), naive.insert_key(u64::from(*id), &key));
            }
            Op::Get { id } => {
                let a = sliced.get_filter(u64::from(*id)).ok();
                assert_eq!(a.as_ref(), naive.get(u64::from(*id)));
            }
            Op::Query { keys } => {
                let keys: Vec<[u8; 2]> = keys.iter().map(|k| k.to_le_bytes()).collect();
                let mut batch = BatchResults::new();
                sliced.query_batch(&keys, &mut batch);
                assert_eq!(batch.len(), keys.len());
                for (key, got) in keys.iter().zip(batch.iter()) {
                    assert_eq!(sorted(got.to_vec()), sorted(naive.query(key)));
                }
            }
            Op::SwitchKernels { which } => {
                sliced.set_kernels(backends[usize::from(*which) % backends.len()]);
            }
        }
        sliced.validate().unwrap();
        assert_eq!(sliced.len(), naive.len());
        for key in (0u16..64).map(u16::to_le_bytes) {
            assert_eq!(sorted(sliced.query(&key)), sorted(naive.query(&key)));
        }
    }
});

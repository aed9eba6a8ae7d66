//! Differential fuzzing of the Bloofi tree and the paper's Flat-Bloofi
//! layout: an arbitrary sequence of inserts, deletes, updates, key inserts,
//! bulk builds and rebuilds is applied to `BloofiTree`, `FlatBloofiPaper`,
//! `SlicedIndex` and `NaiveIndex`; results and answers are compared after
//! every step and every structure's invariants are validated.
#![no_main]

use arbitrary::Arbitrary;
use bloomslice::kernels::Kernels;
use bloomslice::{
    BloofiConfig, BloofiTree, BloomFilter, BloomParams, BulkOrder, FlatBloofiPaper, Metric, NaiveIndex, SlicedConfig,
    SlicedIndex,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    Insert { id: u8, keys: Vec<u16> },
    InsertMany { first: u8, count: u8 },
    Delete { id: u8 },
    Update { id: u8, keys: Vec<u16> },
    InsertKey { id: u8, key: u16 },
    Query { keys: Vec<u16> },
    BulkBuild { order: u8 },
    Rebuild { order: u8 },
    SwitchKernels { which: u8 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    m: u16,
    k: u8,
    seed: u64,
    order: u8,
    metric: u8,
    heuristic: bool,
    ops: Vec<Op>,
}

const ORDERS: [BulkOrder; 4] = [BulkOrder::AsGiven, BulkOrder::PaperGreedy, BulkOrder::MinHashChain, BulkOrder::Auto];

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
    let Ok(params) = BloomParams::new(u64::from(input.m % 1024), u32::from(input.k % 8)) else {
        return;
    };
    let params = params.with_seed(input.seed);
    let config = BloofiConfig::with_order(2 + usize::from(input.order % 4))
        .metric(Metric::ALL[usize::from(input.metric % 3)])
        .all_ones_heuristic(input.heuristic);
    let mut tree = BloofiTree::new(params, config).unwrap();
    let mut flat = FlatBloofiPaper::new(params);
    let mut sliced = SlicedIndex::with_config(params, SlicedConfig { max_shard_columns: 512, prefetch_distance: 2 });
    let mut naive = NaiveIndex::new(params);
    let backends = Kernels::available();
    for op in input.ops.iter().take(64) {
        match op {
            Op::Insert { id, keys } => {
                let (id, f) = (u64::from(*id), filter(params, keys));
                let expect = naive.insert_filter(id, &f);
                assert_eq!(tree.insert_filter(id, &f), expect);
                assert_eq!(flat.insert_filter(id, &f), expect);
                assert_eq!(sliced.insert_filter(id, &f), expect);
            }
            Op::InsertMany { first, count } => {
                for i in 0..u64::from(*count % 80) {
                    let id = 256 + u64::from(*first) + i;
                    let f = filter(params, &[id as u16, i as u16]);
                    let expect = naive.insert_filter(id, &f);
                    assert_eq!(tree.insert_filter(id, &f), expect);
                    assert_eq!(flat.insert_filter(id, &f), expect);
                    assert_eq!(sliced.insert_filter(id, &f), expect);
                }
            }
            Op::Delete { id } => {
                // Half the ids name the InsertMany range.
                let id = if id % 2 == 0 { u64::from(*id) } else { 256 + u64::from(*id) };
                let expect = naive.delete_filter(id);
                assert_eq!(tree.delete_filter(id), expect);
                assert_eq!(flat.delete_filter(id), expect);
                assert_eq!(sliced.delete_filter(id), expect);
            }
            Op::Update { id, keys } => {
                let (id, f) = (u64::from(*id), filter(params, keys));
                let expect = naive.update_filter(id, &f);
                assert_eq!(tree.update_filter(id, &f), expect);
                assert_eq!(flat.update_filter(id, &f), expect);
                assert_eq!(sliced.update_filter(id, &f), expect);
            }
            Op::InsertKey { id, key } => {
                let (id, key) = (u64::from(*id), key.to_le_bytes());
                let expect = naive.insert_key(id, &key);
                assert_eq!(tree.insert_key(id, &key), expect);
                assert_eq!(flat.insert_key(id, &key), expect);
                assert_eq!(sliced.insert_key(id, &key), expect);
            }
            Op::Query { keys } => {
                for key in keys.iter().take(64).map(|k| k.to_le_bytes()) {
                    let expect = sorted(naive.query(&key));
                    let (ids, cost) = tree.query_with_cost(&key);
                    assert!(cost <= tree.node_count());
                    assert_eq!(sorted(ids), expect);
                    assert_eq!(sorted(flat.query(&key)), expect);
                    assert_eq!(sorted(sliced.query(&key)), expect);
                }
            }
            Op::BulkBuild { order } => {
                let items: Vec<(u64, &BloomFilter)> = naive.filters().iter().map(|(id, f)| (*id, f)).collect();
                let order = ORDERS[usize::from(*order % 4)];
                tree = BloofiTree::bulk_build(params, config, &items, order).unwrap();
            }
            Op::Rebuild { order } => tree.rebuild(ORDERS[usize::from(*order % 4)]),
            Op::SwitchKernels { which } => {
                let k = backends[usize::from(*which) % backends.len()];
                tree.set_kernels(k);
                sliced.set_kernels(k);
            }
        }
        tree.validate().unwrap();
        flat.validate().unwrap();
        sliced.validate().unwrap();
        assert_eq!(tree.len(), naive.len());
        assert_eq!(flat.len(), naive.len());
        for key in (0u16..64).map(u16::to_le_bytes) {
            let expect = sorted(naive.query(&key));
            assert_eq!(sorted(tree.query(&key)), expect);
            assert_eq!(sorted(flat.query(&key)), expect);
            assert_eq!(sorted(sliced.query(&key)), expect);
        }
    }
});

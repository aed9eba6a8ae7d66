//! Every index type against `NaiveIndex` through the shared differential
//! harness (`bloomslice::testing`): random op sequences (decoded from
//! proptest bytes by `arbitrary`, as the fuzz target decodes libFuzzer's),
//! compared after every step. The `filter_index_ops` fuzz target runs the
//! same harness on the same pairs.

use bloomslice::testing::{ops_from_bytes, run_differential};
use bloomslice::{
    BloofiConfig, BloofiTree, BloomParams, CountingSlicedIndex, FlatBloofiPaper, NaiveIndex, SlicedConfig, SlicedIndex,
};
use proptest::prelude::*;

fn params(m: u64, k: u32) -> BloomParams {
    BloomParams::new(m, k).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn sliced_equals_naive(m in 1u64..2000, k in 1u32..9, narrow: bool,
                           bytes in prop::collection::vec(any::<u8>(), 0..3000)) {
        let p = params(m, k);
        let config = SlicedConfig { max_shard_columns: if narrow { 512 } else { 2048 }, ..SlicedConfig::default() };
        run_differential(&mut SlicedIndex::with_config(p, config), &mut NaiveIndex::new(p), &ops_from_bytes(&bytes));
    }

    #[test]
    fn flat_paper_equals_naive(m in 1u64..2000, k in 1u32..9,
                               bytes in prop::collection::vec(any::<u8>(), 0..3000)) {
        let p = params(m, k);
        run_differential(&mut FlatBloofiPaper::new(p), &mut NaiveIndex::new(p), &ops_from_bytes(&bytes));
    }

    #[test]
    fn bloofi_tree_equals_naive(m in 1u64..2000, k in 1u32..9, order in 2usize..6,
                                bytes in prop::collection::vec(any::<u8>(), 0..3000)) {
        let p = params(m, k);
        let mut tree = BloofiTree::new(p, BloofiConfig::with_order(order)).unwrap();
        run_differential(&mut tree, &mut NaiveIndex::new(p), &ops_from_bytes(&bytes));
    }

    #[test]
    fn counting_equals_naive(m in 1u64..2000, k in 1u32..9,
                             bytes in prop::collection::vec(any::<u8>(), 0..3000)) {
        let p = params(m, k);
        run_differential(&mut CountingSlicedIndex::new(p), &mut NaiveIndex::new(p), &ops_from_bytes(&bytes));
    }
}

/// The harness refuses a pair that cannot agree (different seeds).
#[test]
#[should_panic(expected = "both indexes must share parameters")]
fn the_harness_rejects_indexes_with_different_parameters() {
    let (a, b) = (params(512, 3), params(512, 3).with_seed(1));
    run_differential(&mut SlicedIndex::new(a), &mut NaiveIndex::new(b), &[]);
}

/// The harness catches a real disagreement (so the properties above can
/// fail): a `NaiveIndex` that holds an extra filter answers differently.
#[test]
#[should_panic(expected = "len")]
fn the_harness_catches_indexes_that_disagree() {
    let p = params(512, 3);
    let mut b = NaiveIndex::new(p);
    b.insert_filter(200, &bloomslice::BloomFilter::new(p).unwrap()).unwrap();
    let ops = [bloomslice::testing::Op::InsertKey { id: 1, key: 7 }];
    run_differential(&mut SlicedIndex::new(p), &mut b, &ops);
}

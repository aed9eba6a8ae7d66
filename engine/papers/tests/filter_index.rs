//! The indexes of this crate against `NaiveIndex` through the core's
//! differential harness (`bloomslice::testing`): random op sequences
//! (decoded from proptest bytes by `arbitrary`, as the fuzz target decodes
//! libFuzzer's), compared after every step. The `filter_index_ops` fuzz
//! target runs the same harness on the same pairs.

use bloomslice::testing::{Op, ops_from_bytes, run_differential, run_differential_with};
use bloomslice::{BloomFilter, BloomParams, Error, HashScheme, NaiveIndex};
use bloomslice_papers::testing::maintain_bloofi;
use bloomslice_papers::{BloofiConfig, BloofiTree, CountingBloomFilter, CountingSlicedIndex, FlatBloofiPaper, Metric};
use proptest::prelude::*;

/// Op sequences decoded from arbitrary bytes, as the fuzz target decodes
/// libFuzzer's (shrinking shrinks the bytes).
fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(any::<u8>(), 0..1500).prop_map(|bytes| ops_from_bytes(&bytes))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn flat_paper_equals_naive(m in 1u64..2000, k in 1u32..9, ops in ops()) {
        let p = BloomParams::new(m, k).unwrap();
        run_differential(&mut FlatBloofiPaper::new(p), &mut NaiveIndex::new(p), &ops);
    }

    #[test]
    fn bloofi_tree_equals_naive(m in prop::sample::select(vec![64u64, 128, 200, 1000, 2048]), k in 1u32..5,
                                order in 2usize..5, metric in 0usize..3, heuristic: bool, ops in ops()) {
        // Small filters (64 or 128 bits) fill up, so all-ones nodes and the
        // Section 5.4 heuristic get exercised; larger ones keep nodes sparse.
        let p = BloomParams::new(m, k).unwrap();
        let config = BloofiConfig::with_order(order).metric(Metric::ALL[metric]).all_ones_heuristic(heuristic);
        let mut tree = BloofiTree::new(p, config).unwrap();
        run_differential_with(&mut tree, &mut NaiveIndex::new(p), &ops, maintain_bloofi);
    }

    #[test]
    fn counting_equals_naive(m in 1u64..2000, k in 1u32..9, ops in ops()) {
        let p = BloomParams::new(m, k).unwrap();
        run_differential(&mut CountingSlicedIndex::new(p), &mut NaiveIndex::new(p), &ops);
    }
}

/// A filter of the other hash scheme is refused with
/// `Error::ParamsMismatch`, as one of a different `m` or `k`.
#[test]
fn a_different_scheme_is_a_params_mismatch() {
    let params = BloomParams::new(1024, 5).unwrap();
    let old = params.with_scheme(HashScheme::Xxh3Double);
    let other = BloomFilter::new(old).unwrap();
    let mismatch = Error::ParamsMismatch { expected: params, found: old };
    assert_eq!(FlatBloofiPaper::new(params).insert_filter(1, &other), Err(mismatch.clone()));
    let mut tree = BloofiTree::new(params, BloofiConfig::default()).unwrap();
    assert_eq!(tree.insert_filter(1, &other), Err(mismatch.clone().into()));
    tree.insert_filter(1, &BloomFilter::new(params).unwrap()).unwrap();
    assert_eq!(tree.update_filter(1, &other), Err(mismatch.clone().into()));
    let mut counting = CountingBloomFilter::new(params).unwrap();
    assert_eq!(counting.union_with(&CountingBloomFilter::new(old).unwrap()), Err(mismatch.into()));
}

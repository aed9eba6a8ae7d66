//! Stable and importance-aware Bloom filters: typed errors, laws that hold
//! on every operation sequence (checked with proptest against an exact
//! model) and the Section III theory against measurement. A small version of
//! the Section IV-D experiment is in `bench/tests/stable_experiment.rs`; the
//! full-size Table I-style grid and the stream throughput are printed by
//! `cargo run --release -p bloomslice-bench --bin paper -- stable`.

use std::collections::HashSet;

use bloomslice::Error;
use bloomslice_papers::stable::theory;
use bloomslice_papers::{Policy, StableBloomFilter, StableError, StableParams};
use proptest::prelude::*;

const STABLE_POLICIES: [Policy; 4] = [Policy::Sbf, Policy::Ibf2c, Policy::IbfMc, Policy::IbfH];

fn small_params(cells: u64, hashes: u32, decrements: u32, max: u32) -> StableParams {
    StableParams::new(cells, hashes, decrements, max).unwrap().with_max_importance(50).unwrap()
}

#[test]
fn bad_parameters_are_typed_errors() {
    assert_eq!(StableParams::new(100, 3, 1, 0), Err(StableError::ZeroMax));
    assert_eq!(StableParams::new(100, 3, 1, 256), Err(StableError::MaxTooLarge { max: 256 }));
    assert_eq!(StableParams::new(100, 0, 1, 7), Err(StableError::ZeroHashes));
    assert_eq!(
        StableParams::new(100, 3, 101, 7),
        Err(StableError::DecrementsExceedCells { decrements: 101, cells: 100 })
    );
    assert_eq!(StableParams::new(0, 3, 0, 7), Err(Error::ZeroBits.into()));
    assert!(matches!(StableParams::new(100, 65, 1, 7), Err(StableError::Core(Error::TooManyHashes { .. }))));
    assert_eq!(StableParams::new(100, 3, 1, 7).unwrap().with_max_importance(0), Err(StableError::ZeroMaxImportance));
    // P = m and P = 0 are allowed.
    assert!(StableParams::new(100, 3, 100, 255).is_ok());
    assert!(StableParams::new(100, 3, 0, 1).is_ok());
}

#[test]
fn importance_out_of_range_is_refused_without_change() {
    let mut filter = StableBloomFilter::new(StableParams::paper(), Policy::IbfMc, 1);
    filter.observe(b"a", 10).unwrap();
    let before = filter.cells().to_vec();
    assert_eq!(filter.observe(b"b", 0), Err(StableError::ImportanceOutOfRange { importance: 0, max: 50 }));
    assert_eq!(filter.observe(b"b", 51), Err(StableError::ImportanceOutOfRange { importance: 51, max: 50 }));
    assert_eq!(filter.insert(b"b", 51), Err(StableError::ImportanceOutOfRange { importance: 51, max: 50 }));
    assert_eq!(filter.cells(), &before[..]);
}

#[test]
fn theory_matches_measured_zero_fraction() {
    // m = 2048, K = 3, P = 6, M = 7: stable after a few thousand items.
    let params = small_params(2048, 3, 6, 7);
    for policy in STABLE_POLICIES {
        let predicted = theory::stable_zero_fraction(&params, policy);
        let mut filter = StableBloomFilter::new(params, policy, 3);
        let mut sum = 0.0;
        let mut samples = 0;
        let mut false_positives = 0u32;
        for i in 0..60_000u64 {
            let reported = filter.observe(&i.to_le_bytes(), (i % 50) as u32 + 1).unwrap();
            if i >= 20_000 {
                false_positives += u32::from(reported);
                if i % 200 == 0 {
                    sum += filter.zero_fraction();
                    samples += 1;
                }
            }
        }
        let measured = sum / f64::from(samples);
        assert!((measured - predicted).abs() < 0.02, "{policy:?}: measured {measured}, predicted {predicted}");
        // Every key is new, so every positive is a false positive; the
        // measured rate stays under the stable bound (plus sampling noise).
        let fp = f64::from(false_positives) / 40_000.0;
        let bound = theory::false_positive_bound(&params, policy);
        assert!(fp < bound + 0.02, "{policy:?}: FP {fp} above bound {bound}");
    }
}

#[test]
fn paper_parameters_theory() {
    let params = StableParams::paper();
    let sbf = theory::stable_zero_fraction(&params, Policy::Sbf);
    assert!((sbf - theory::sbf_zero_fraction_closed_form(&params)).abs() < 1e-12);
    let mc = theory::stable_zero_fraction(&params, Policy::IbfMc);
    assert!(mc > sbf);
    assert!(theory::false_positive_bound(&params, Policy::IbfMc) < theory::false_positive_bound(&params, Policy::Sbf));
}

#[derive(Clone, Debug)]
enum Op {
    Observe(u16, u32),
    Insert(u16, u32),
    Query(u16),
}

fn op(max_importance: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u16..200, 1..=max_importance).prop_map(|(k, i)| Op::Observe(k, i)),
        (0u16..200, 1..=max_importance).prop_map(|(k, i)| Op::Insert(k, i)),
        (0u16..200).prop_map(Op::Query),
    ]
}

fn policy() -> impl Strategy<Value = Policy> {
    prop::sample::select(Policy::ALL.to_vec())
}

fn params() -> impl Strategy<Value = StableParams> {
    (1u64..400, 1u32..8, 1u32..=255, 1u32..30).prop_flat_map(|(m, k, max, imp)| {
        (0u32..=(m.min(20) as u32))
            .prop_map(move |p| StableParams::new(m, k, p, max).unwrap().with_max_importance(imp).unwrap())
    })
}

/// A filter's parameters, policy and seed, and the operations to apply.
#[derive(Clone, Debug)]
struct Run {
    params: StableParams,
    policy: Policy,
    seed: u64,
    ops: Vec<Op>,
}

impl Run {
    /// A new filter of the run's parameters, policy and seed.
    fn filter(&self) -> StableBloomFilter {
        StableBloomFilter::new(self.params, self.policy, self.seed)
    }
}

/// Runs with parameters from `params` and fewer than `max_ops` operations
/// whose importances fit them.
fn runs(params: impl Strategy<Value = StableParams>, max_ops: usize) -> impl Strategy<Value = Run> {
    (params, policy(), any::<u64>()).prop_flat_map(move |(params, policy, seed)| {
        prop::collection::vec(op(params.max_importance()), 0..max_ops).prop_map(move |ops| Run {
            params,
            policy,
            seed,
            ops,
        })
    })
}

fn apply(filter: &mut StableBloomFilter, op: &Op) -> Option<bool> {
    match *op {
        Op::Observe(key, imp) => Some(filter.observe(&key.to_le_bytes(), imp).unwrap()),
        Op::Insert(key, imp) => {
            filter.insert(&key.to_le_bytes(), imp).unwrap();
            None
        }
        Op::Query(key) => Some(filter.contains(&key.to_le_bytes())),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Cells stay in 0..=M, and a key is always present right after it was
    /// inserted (decrements come before the set).
    #[test]
    fn cells_in_range_and_fresh_key_present(run in runs(params(), 300)) {
        let mut filter = run.filter();
        for op in &run.ops {
            apply(&mut filter, op);
            prop_assert!(filter.validate().is_ok());
            if let Op::Observe(key, _) | Op::Insert(key, _) = *op {
                prop_assert!(filter.contains(&key.to_le_bytes()));
            }
        }
    }

    /// With P = 0 nothing is forgotten: against an exact set, there is never a
    /// false negative (every policy; BF never decrements anyway).
    #[test]
    fn no_false_negatives_without_decrements(
        run in runs((1u64..400, 1u32..8, 1u32..=255).prop_map(|(m, k, max)| small_params(m, k, 0, max)), 300),
    ) {
        let mut filter = run.filter();
        let mut model = HashSet::new();
        for op in &run.ops {
            let answer = apply(&mut filter, op);
            match *op {
                Op::Observe(key, _) => {
                    if !model.insert(key) { prop_assert_eq!(answer, Some(true)); }
                }
                Op::Insert(key, _) => { model.insert(key); }
                Op::Query(key) => if model.contains(&key) { prop_assert_eq!(answer, Some(true)); },
            }
        }
    }

    /// A run is reproducible given the seed.
    #[test]
    fn reproducible_given_the_seed(run in runs(params(), 200)) {
        let (mut a, mut b) = (run.filter(), run.filter());
        for op in &run.ops {
            prop_assert_eq!(apply(&mut a, op), apply(&mut b, op));
        }
        prop_assert_eq!(a.cells(), b.cells());
    }

    /// Pathwise nesting on the same stream and seed: SBF cells dominate
    /// IBF-2C's and IBF-MC's (they draw the same decrements and set lower or
    /// equal values), and a BF cell is set wherever an SBF cell is.
    #[test]
    fn sbf_dominates_importance_aware_filters(run in runs(params(), 300)) {
        let [mut bf, mut sbf, mut two, mut mc] =
            [Policy::Bf, Policy::Sbf, Policy::Ibf2c, Policy::IbfMc].map(|p| StableBloomFilter::new(run.params, p, run.seed));
        for op in &run.ops {
            let answers = [apply(&mut bf, op), apply(&mut sbf, op), apply(&mut two, op), apply(&mut mc, op)];
            if answers[1] == Some(true) { prop_assert_eq!(answers[0], Some(true)); }
            if answers[2] == Some(true) || answers[3] == Some(true) { prop_assert_eq!(answers[1], Some(true)); }
            for i in 0..sbf.cells().len() {
                prop_assert!(sbf.cells()[i] >= two.cells()[i] && sbf.cells()[i] >= mc.cells()[i]);
                prop_assert!(sbf.cells()[i] == 0 || bf.cells()[i] == 1);
            }
        }
    }
}

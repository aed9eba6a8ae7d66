//! Popularity-conscious hash counts: the Section 4.4 dynamic program against
//! brute force on tiny universes (proptest), the budget and bound laws, the
//! scheme in `BloomFilter` and `SlicedIndex` (no false negatives, the index
//! answers as the filters do), limited optimization and typed errors. A small
//! Section 5.1 run is in `bench/tests/popularity_experiment.rs`; the full
//! table is printed by
//! `cargo run --release -p bloomslice-bench --bin paper -- popularity`.

use bloomslice::{BloomFilter, BloomParams, Error, SlicedIndex};
use bloomslice_papers::popularity::optimize::{
    brute_force_ordered, dp_memory_plan, half_fill_fpr, integer_solution, integer_solution_with_block,
    limited_integer_solution, optimal_plus, real_solution, rounded_solution,
};
use bloomslice_papers::{PopularityError, PopularityScheme};
use proptest::prelude::*;
use std::ops::Range;

/// Zipf popularity `q'(i) ~ i^-alpha`, `i = 1..=n`, normalised.
fn zipf(n: usize, alpha: f64) -> Vec<f64> {
    let raw: Vec<f64> = (1..=n).map(|i| (i as f64).powf(-alpha)).collect();
    let s: f64 = raw.iter().sum();
    raw.into_iter().map(|x| x / s).collect()
}

fn hashes(p: &[f64], ks: &[u32]) -> f64 {
    let s: f64 = p.iter().sum();
    p.iter().zip(ks).map(|(p, &k)| p / s * f64::from(k)).sum()
}

/// Instances `(p, q, r, k_max, eps)` of the dynamic program: `len` items,
/// presences from `p`, popularities made by `q_of` from a draw in `0..1`
/// (0.01 added to the first), and `(r, k_max, eps)` from `rke`.
fn dps(
    len: Range<usize>,
    p: Range<f64>,
    q_of: fn(f64) -> f64,
    rke: (Range<f64>, Range<u32>, Range<f64>),
) -> impl Strategy<Value = (Vec<f64>, Vec<f64>, f64, u32, f64)> {
    (proptest::collection::vec((p, 0.0f64..1.0), len), rke).prop_map(move |(pq, (r, k_max, eps))| {
        let (p, mut q): (Vec<f64>, Vec<f64>) = pq.into_iter().map(|(p, q)| (p, q_of(q))).unzip();
        q[0] += 0.01;
        (p, q, r, k_max, eps)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// The dynamic program meets the budget, uses counts in [1, k_max], and
    /// is within (1 + eps/2) of the exact importance-ordered optimum
    /// (Theorem 2), hence within 2 + eps of the ranged integer optimum.
    #[test]
    fn dp_is_within_its_bound((p, q, r, k_max, eps) in dps(2..7, 0.01..1.0, |q| q, (2.0..9.0, 2..5, 0.05..1.0))) {
        let ks = integer_solution(&p, &q, r, k_max, eps).unwrap();
        prop_assert!(ks.iter().all(|&k| (1..=k_max).contains(&k)));
        prop_assert!(hashes(&p, &ks) <= r * std::f64::consts::LN_2 + 1e-9);
        let (_, best) = brute_force_ordered(&p, &q, r, k_max).unwrap();
        let got = half_fill_fpr(&q, &ks).unwrap();
        let qs: f64 = q.iter().sum();
        // Theorem 2's additive slack is (eps/2) (1/2)^k_max of the total q'.
        prop_assert!(got <= best + eps / 2.0 * 0.5f64.powi(k_max as i32) + 1e-12 * qs, "{} vs {}", got, best);
        prop_assert!(got <= (2.0 + eps) * best + 1e-12);
    }

    /// The checkpointed walk-back (any forced block size) returns exactly
    /// the full-table solution.
    #[test]
    fn checkpointed_dp_equals_full_table(
        (p, q, r, k_max, eps) in dps(1..60, 1e-3..1.0 + 1e-3, |q| q * q, (1.5..12.0, 2..8, 0.1..2.0)),
        block in 1usize..20,
    ) {
        let full = integer_solution_with_block(&p, &q, r, k_max, eps, Some(p.len() + 1));
        let blocked = integer_solution_with_block(&p, &q, r, k_max, eps, Some(block));
        prop_assert_eq!(&full, &blocked);
        prop_assert_eq!(&full, &integer_solution(&p, &q, r, k_max, eps));
    }

    /// Inserted keys are always found, through the filter and the index,
    /// and the index answers exactly as per-filter checks do.
    #[test]
    fn scheme_has_no_false_negatives(
        ks in proptest::collection::vec(1u32..12, 1..40),
        members in proptest::collection::vec((0usize..40, 0u64..3), 0..60),
    ) {
        let params = BloomParams::new(300, 4).unwrap();
        let keys: Vec<[u8; 8]> = (0..ks.len()).map(|i| (i as u64).to_le_bytes()).collect();
        let scheme = PopularityScheme::from_assignment(params, &keys, &ks).unwrap();
        let mut filters = vec![BloomFilter::new(params).unwrap(); 3];
        let mut index = SlicedIndex::new(params);
        for id in 0..3 {
            index.insert_filter(id, &filters[id as usize]).unwrap();
        }
        for &(i, id) in &members {
            let key = (i as u64).to_le_bytes();
            scheme.insert(&mut filters[id as usize], &key).unwrap();
            scheme.insert_into_index(&mut index, id, &key).unwrap();
        }
        index.validate().unwrap();
        for &(i, id) in &members {
            prop_assert!(scheme.contains(&filters[id as usize], &(i as u64).to_le_bytes()).unwrap());
        }
        let mut out = Vec::new();
        for i in 0..80u64 {
            let key = i.to_le_bytes();
            scheme.query_index(&index, &key, &mut out).unwrap();
            out.sort_unstable();
            let want: Vec<u64> = (0..3).filter(|&id| scheme.contains(&filters[id as usize], &key).unwrap()).collect();
            prop_assert_eq!(&out, &want);
        }
    }
}

#[test]
fn real_solution_matches_eq14_and_eq15() {
    // p = q': D = 0, every k_i = (m/n) ln 2, optimal+ = (1/2)^((m/n) ln 2).
    let p = vec![0.25; 4];
    let ks = real_solution(&p, &p, 8.0).unwrap();
    assert!(ks.iter().all(|k| (k - 8.0 * std::f64::consts::LN_2).abs() < 1e-12));
    assert!((optimal_plus(&p, &p, 8.0).unwrap() - 0.5f64.powf(8.0 * std::f64::consts::LN_2)).abs() < 1e-15);
    // The expected hash count of eq. (14) is exactly the budget (constraint 10).
    let q = [0.7, 0.2, 0.05, 0.05];
    let ks = real_solution(&p, &q, 8.0).unwrap();
    let mean: f64 = ks.iter().sum::<f64>() / 4.0;
    assert!((mean - 8.0 * std::f64::consts::LN_2).abs() < 1e-9);
    assert_eq!(
        rounded_solution(&p, &q, 8.0, 10).unwrap(),
        ks.iter().map(|k| k.round().clamp(1.0, 10.0) as u32).collect::<Vec<_>>()
    );
}

/// A problem beyond the old 2^31-bit table (N = 2 000, k_max = 10,
/// eps = 0.1: 1.7e9 bits) now runs checkpointed, equal to the full table,
/// and the memory plan stays bounded for N = 10 000.
#[test]
fn checkpointed_dp_on_a_larger_problem() {
    let plan = dp_memory_plan(10_000, 10, 0.1, None);
    assert!(plan.checkpoints > 0 && plan.bytes < 300 << 20, "{plan:?}");
    let n = 300;
    let p = vec![1.0; n];
    let q: Vec<f64> = (1..=n).map(|i| (i as f64).powf(-1.5)).collect();
    let auto = integer_solution_with_block(&p, &q, 8.0, 10, 0.5, Some(17)).unwrap();
    assert_eq!(auto, integer_solution(&p, &q, 8.0, 10, 0.5).unwrap());
}

#[test]
fn errors_are_typed() {
    assert_eq!(
        integer_solution(&[1.0], &[1.0, 2.0], 8.0, 10, 0.1),
        Err(PopularityError::LengthMismatch { p: 1, q: 2 })
    );
    assert!(matches!(integer_solution(&[], &[], 8.0, 10, 0.1), Err(PopularityError::InvalidPopularity(_))));
    assert!(matches!(integer_solution(&[-1.0], &[1.0], 8.0, 10, 0.1), Err(PopularityError::InvalidPopularity(_))));
    assert!(matches!(integer_solution(&[f64::NAN], &[1.0], 8.0, 10, 0.1), Err(PopularityError::InvalidPopularity(_))));
    assert_eq!(integer_solution(&[1.0], &[1.0], 8.0, 0, 0.1), Err(PopularityError::InvalidMaxHashes(0)));
    assert_eq!(integer_solution(&[1.0], &[1.0], 8.0, 65, 0.1), Err(PopularityError::InvalidMaxHashes(65)));
    assert_eq!(integer_solution(&[1.0], &[1.0], 8.0, 10, 0.0), Err(PopularityError::InvalidEpsilon(0.0)));
    assert!(matches!(integer_solution(&[1.0], &[1.0], 1.0, 10, 0.1), Err(PopularityError::InfeasibleBudget { .. })));
    assert!(matches!(
        integer_solution(&vec![1.0; 100_000], &vec![1.0; 100_000], 8.0, 20, 0.01),
        Err(PopularityError::ProblemTooLarge { .. })
    ));
    let mut scheme = PopularityScheme::new(BloomParams::new(100, 3).unwrap());
    assert_eq!(scheme.set("x", 0), Err(PopularityError::InvalidMaxHashes(0)));
    assert_eq!(scheme.set("x", 65), Err(PopularityError::InvalidMaxHashes(65)));
    let mut other = BloomFilter::new(BloomParams::new(100, 4).unwrap()).unwrap();
    assert!(matches!(scheme.insert(&mut other, "x"), Err(PopularityError::Core(Error::ParamsMismatch { .. }))));
    assert!(matches!(
        limited_integer_solution(&[1.0], &[1.0], 8.0, 10, 0.1, 11, 1, 1),
        Err(PopularityError::InvalidMaxHashes(11))
    ));
}

/// Limited optimization: with every key optimised it is the full dynamic
/// program; with few it keeps the budget and never does worse than the
/// standard filter on a skewed workload.
#[test]
fn limited_optimization() {
    let n = 2000;
    let p = vec![1.0; n];
    let q = zipf(n, 1.5);
    let full = integer_solution(&p, &q, 8.0, 10, 0.5).unwrap();
    let all = limited_integer_solution(&p, &q, 8.0, 10, 0.5, 5, n, 0).unwrap();
    let mut ks = vec![0; n];
    for (i, k) in all {
        ks[i] = k;
    }
    assert_eq!(ks, full);
    let few = limited_integer_solution(&p, &q, 8.0, 10, 0.5, 5, 100, 100).unwrap();
    assert_eq!(few.len(), 200);
    let mut ks = vec![5; n];
    for (i, k) in few {
        ks[i] = k;
    }
    assert!(hashes(&p, &ks) <= 8.0 * std::f64::consts::LN_2 + 1e-9);
    assert!(half_fill_fpr(&q, &ks).unwrap() < half_fill_fpr(&q, &vec![5; n]).unwrap());
    // A million keys: sort plus a 2000-key program.
    let big = 1_000_000;
    let p = vec![1.0; big];
    let q = zipf(big, 1.0);
    let few = limited_integer_solution(&p, &q, 8.0, 10, 1.0, 5, 1000, 1000).unwrap();
    assert_eq!(few.len(), 2000);
}

//! The measured false-positive rate of `BloomFilter` agrees with the formula
//! `(1 - (1 - 1/m)^(kn))^k` and with the summary-cache tables, inside a 99.9%
//! binomial interval, on 10^6 absent keys per cell.

use bloomslice::{BloomFilter, BloomParams, Prehashed, SlicedIndex};

/// z for a two-sided 99.9% interval.
const Z_999: f64 = 3.2905;

/// (m/n, k, value printed in the summary-cache table).
const CELLS: [(u64, u32, f64); 4] = [(4, 3, 0.147), (8, 4, 0.024), (10, 5, 0.00943), (16, 8, 0.000574)];

fn measure(ratio: u64, k: u32, n: u64, trials: u64) -> (f64, f64) {
    let params = BloomParams::new(ratio * n, k).unwrap().with_seed(0x5eed ^ ratio);
    let mut filter = BloomFilter::new(params).unwrap();
    for key in 0..n {
        filter.insert(&key.to_le_bytes());
    }
    let hits = (n..n + trials).filter(|key| filter.contains(&key.to_le_bytes())).count();
    (hits as f64 / trials as f64, params.expected_fpr(n))
}

#[test]
fn measured_fpr_is_inside_the_binomial_interval() {
    // n is large so that the filter's own fill varies little around its
    // mean; the interval is the sampling error of 10^6 absent keys.
    let (n, trials) = (100_000u64, 1_000_000u64);
    for (ratio, k, table) in CELLS {
        let (measured, expected) = measure(ratio, k, n, trials);
        let half_width = Z_999 * (expected * (1.0 - expected) / trials as f64).sqrt();
        assert!(
            (measured - expected).abs() <= half_width,
            "m/n={ratio} k={k}: measured {measured:.6}, formula {expected:.6} +- {half_width:.6}"
        );
        assert!((expected - table).abs() / table < 0.01, "formula {expected} vs table {table}");
    }
}

/// A test that would catch a broken hash: with k = 1 and a terrible hash
/// (all keys to one bit) the rate would be 0 or 1; here it must be 1 - e^{-1/8}-ish.
#[test]
fn prehashed_keys_behave_like_byte_keys() {
    let params = BloomParams::new(80_000, 4).unwrap();
    let mut filter = BloomFilter::new(params).unwrap();
    for key in 0..10_000u64 {
        filter.insert(&Prehashed(key.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    }
    let trials = 200_000u64;
    let hits = (10_000..10_000 + trials)
        .filter(|key| filter.contains(&Prehashed(key.wrapping_mul(0x9e37_79b9_7f4a_7c15))))
        .count();
    let expected = params.expected_fpr(10_000);
    let measured = hits as f64 / trials as f64;
    assert!((measured - expected).abs() < 0.1 * expected + 0.002, "{measured} vs {expected}");
}

/// The index's false-positive rate per filter is the filter's own.
#[test]
fn index_false_positives_match_filters() {
    let params = BloomParams::new(8 * 2000, 4).unwrap();
    let mut index = SlicedIndex::new(params);
    for id in 0..64u64 {
        let mut f = BloomFilter::new(params).unwrap();
        for key in 0..2000u64 {
            f.insert(&(id << 32 | key).to_le_bytes());
        }
        index.insert_filter(id, &f).unwrap();
    }
    let trials = 100_000u64;
    let matches: usize = (0..trials).map(|q| index.query(&(u64::MAX - q).to_le_bytes()).len()).sum();
    let measured = matches as f64 / (trials as f64 * 64.0);
    let expected = params.expected_fpr(2000);
    let half_width = Z_999 * (expected * (1.0 - expected) / (trials as f64 * 64.0)).sqrt();
    // Filters vary in fill, so allow the per-filter spread on top.
    assert!((measured - expected).abs() < 3.0 * half_width + 0.05 * expected, "{measured} vs {expected}");
}

//! The data of Section 7 of the Bloofi paper: which integers each filter
//! holds and which integers are searched.
//!
//! Two distributions (Section 7.1.2 and 7.2.7, and the authors' published
//! experiment driver, whose behaviour is described here in prose):
//!
//! - **nonrandom** (the default of Table 1): filter `i` holds the `n`
//!   integers `[i n, (i + 1) n)`, so no two filters share an element.
//!   Searched ("yes") values are drawn uniformly from `[0, N n)`.
//! - **random**: filter `i` is given a random range: both ends are drawn
//!   uniformly from `[0, 10^8)`, the second again until the range is at least
//!   `2 n` wide; then `n` distinct integers are drawn uniformly from that
//!   range. Ranges of different filters overlap, so a value may be in several
//!   filters. Searched values are drawn uniformly among the inserted values
//!   (a random filter, then a random one of its values; every filter holds
//!   exactly `n`).
//!
//! "No" searches use values in `[2^32, 2^33)`, outside every filter under
//! both distributions. Integers are hashed as their 8 little-endian bytes.
//!
//! Everything is a pure function of the seed, so runs can be repeated.
//! For the "after updates" (AU) variants a filter is first built from the
//! first half of its values ([`Dataset::half_filter`]) and later updated to
//! the whole set.

use std::collections::HashSet;

use bloomslice::{BloomFilter, BloomParams, KeyHash};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::workload::splitmix64;

/// Upper end (exclusive) of the random ranges.
const RANDOM_SPAN: u64 = 100_000_000;

/// First value of the "no" searches; every inserted value is below it.
const ABSENT_BASE: u64 = 1 << 32;

/// How the values of the filters are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Distribution {
    /// Filter `i` holds `[i n, (i + 1) n)` (no overlap).
    Nonrandom,
    /// Filter `i` holds `n` random values from a random range (overlaps).
    Random,
}

impl Distribution {
    /// Name used in the CSVs and plots.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Nonrandom => "nonrandom",
            Distribution::Random => "random",
        }
    }
}

/// The filters and searches of one experiment point.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Filter parameters (`BloomParams::for_capacity(n_exp, p)`).
    pub params: BloomParams,
    /// Number of filters `N`.
    pub filters: usize,
    /// Values per filter `n`.
    pub n: usize,
    /// The distribution.
    pub distribution: Distribution,
    /// Seed of the random ranges and searches.
    pub seed: u64,
}

impl Dataset {
    /// The values of filter `i` (`i` may be `>= N`: filters inserted by the
    /// maintenance runs continue the same pattern).
    pub fn values(&self, i: usize) -> Vec<u64> {
        let n = self.n as u64;
        match self.distribution {
            Distribution::Nonrandom => (i as u64 * n..(i as u64 + 1) * n).collect(),
            Distribution::Random => {
                let mut rng = SmallRng::seed_from_u64(splitmix64(self.seed ^ splitmix64(i as u64)));
                let start = rng.random_range(0..RANDOM_SPAN);
                let mut end = rng.random_range(0..RANDOM_SPAN);
                while start.abs_diff(end) < 2 * n {
                    end = rng.random_range(0..RANDOM_SPAN);
                }
                let (lo, hi) = (start.min(end), start.max(end));
                let mut seen = HashSet::with_capacity(self.n);
                let mut out = Vec::with_capacity(self.n);
                while out.len() < self.n {
                    let v = rng.random_range(lo..hi);
                    if seen.insert(v) {
                        out.push(v);
                    }
                }
                out
            }
        }
    }

    fn filter_of(&self, values: &[u64]) -> BloomFilter {
        let mut f = BloomFilter::new(self.params).expect("parameters were validated");
        for v in values {
            f.insert(&v.to_le_bytes());
        }
        f
    }

    /// Filter `i` with all its values.
    pub fn filter(&self, i: usize) -> BloomFilter {
        self.filter_of(&self.values(i))
    }

    /// Filter `i` with the first half of its values (AU variants).
    pub fn half_filter(&self, i: usize) -> BloomFilter {
        let values = self.values(i);
        self.filter_of(&values[..values.len() / 2])
    }

    /// All `N` filters.
    pub fn all_filters(&self) -> Vec<BloomFilter> {
        (0..self.filters).map(|i| self.filter(i)).collect()
    }

    /// The hash of a value as every engine sees it.
    pub fn hash(&self, value: u64) -> KeyHash {
        self.params.hash(&value.to_le_bytes())
    }

    /// `count` "yes" searches (values inserted in some filter) and `count`
    /// "no" searches, as hashes.
    pub fn searches(&self, count: usize) -> (Vec<KeyHash>, Vec<KeyHash>) {
        let mut rng = SmallRng::seed_from_u64(self.seed ^ 0x5ea7_c4e5);
        let total = (self.filters * self.n) as u64;
        let yes = (0..count)
            .map(|_| match self.distribution {
                Distribution::Nonrandom => self.hash(rng.random_range(0..total)),
                Distribution::Random => {
                    let i = rng.random_range(0..self.filters);
                    let values = self.values(i);
                    self.hash(values[rng.random_range(0..values.len())])
                }
            })
            .collect();
        let no = (0..count).map(|_| self.hash(ABSENT_BASE + rng.random_range(0..ABSENT_BASE))).collect();
        (yes, no)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(distribution: Distribution) -> Dataset {
        let params = BloomParams::for_capacity(1000, 0.01).unwrap();
        Dataset { params, filters: 20, n: 10, distribution, seed: 3 }
    }

    #[test]
    fn nonrandom_ranges_are_consecutive() {
        let d = dataset(Distribution::Nonrandom);
        assert_eq!(d.values(2), (20..30).collect::<Vec<_>>());
        assert!(d.half_filter(2).count_ones() < d.filter(2).count_ones());
    }

    #[test]
    fn random_values_are_distinct_in_a_wide_range_and_repeatable() {
        let d = dataset(Distribution::Random);
        let v = d.values(5);
        assert_eq!(v, d.values(5));
        assert_ne!(v, d.values(6));
        let set: HashSet<_> = v.iter().collect();
        assert_eq!(set.len(), 10);
        assert!(v.iter().all(|&x| x < RANDOM_SPAN));
    }

    #[test]
    fn yes_searches_hit_and_no_searches_miss() {
        for dist in [Distribution::Nonrandom, Distribution::Random] {
            let d = dataset(dist);
            let filters = d.all_filters();
            let (yes, no) = d.searches(50);
            assert!(yes.iter().all(|&h| filters.iter().any(|f| f.contains_hash(h))));
            assert_eq!(no.len(), 50);
        }
    }
}

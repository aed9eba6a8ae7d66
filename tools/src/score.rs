//! Multi-key scoring for `query --count/--threshold` and `query --seqs`:
//! how many of a query's keys each set may hold.
//!
//! **This module is a seam.** The library's scoring API
//! (`bloomslice::Threshold`, `bloomslice::Scores`,
//! `SlicedIndex::query_threshold_into`: bit-plane counters with pruning)
//! is being built on another branch. Until it lands, this module offers
//! exactly its surface, implemented with [`SlicedIndex::query_batch`] and
//! one counter per set; the commands call only this module. At the merge,
//! replace the body of this module with re-exports of, and calls to, the
//! library (`pub use bloomslice::{Scores, Threshold};` and
//! `index.query_threshold_into(keys, threshold, scratch, out)`), and keep
//! the tests below: they compare it with a naive count.

use bloomslice::{BatchResults, Key, SlicedIndex};
use hashbrown::HashMap;

/// Ids below this are counted in a dense vector; larger ones (callers may
/// pick any `u64` id) in a map. The CLI numbers sets from 0, so this covers
/// a million sets with at most 4 MiB of counters.
const DENSE_IDS: u64 = 1 << 20;

/// How many of a query's keys a set must hold to be reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold(Kind);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Count(u32),
    Fraction(f64),
}

impl Threshold {
    /// At least `n` keys.
    pub fn count(n: u32) -> Threshold {
        Threshold(Kind::Count(n))
    }

    /// At least the fraction `f` of the keys, `f` in `[0, 1]`.
    ///
    /// # Errors
    ///
    /// [`bloomslice::Error::Invalid`] for a fraction outside `[0, 1]` (or NaN).
    pub fn fraction(f: f64) -> bloomslice::Result<Threshold> {
        if !(0.0..=1.0).contains(&f) {
            return Err(bloomslice::Error::Invalid(format!("threshold {f} is not a fraction in [0, 1]")));
        }
        Ok(Threshold(Kind::Fraction(f)))
    }

    /// The least count that passes for a query of `keys` keys:
    /// `ceil(f * keys)` for a fraction (a product within 1e-9 of an integer
    /// counts as that integer, so 0.8 of 150 keys is 120, not 121), or the
    /// count itself.
    pub fn min_count(&self, keys: usize) -> u32 {
        match self.0 {
            Kind::Count(n) => n,
            Kind::Fraction(f) => {
                let exact = f * keys as f64;
                let rounded = exact.round();
                let c = if (exact - rounded).abs() < 1e-9 { rounded } else { exact.ceil() };
                c.min(f64::from(u32::MAX)) as u32
            }
        }
    }
}

/// Reusable scratch space for scoring (no allocation per query once warm).
#[derive(Debug, Default)]
pub struct Scores {
    results: BatchResults,
    dense: Vec<u32>,
    sparse: HashMap<u64, u32>,
    /// Ids whose count is not zero, in order of first hit.
    touched: Vec<u64>,
}

impl Scores {
    /// Empty scratch space.
    pub fn new() -> Scores {
        Scores::default()
    }

    fn count_of(&self, id: u64) -> u32 {
        if id < DENSE_IDS {
            self.dense.get(id as usize).copied().unwrap_or(0)
        } else {
            self.sparse.get(&id).copied().unwrap_or(0)
        }
    }

    fn reset(&mut self) {
        for &id in &self.touched {
            if id < DENSE_IDS {
                self.dense[id as usize] = 0;
            }
        }
        self.sparse.clear();
        self.touched.clear();
    }
}

/// Counts, for every set, how many of `keys` it may contain, into `scratch`.
pub fn score_into<K: Key>(index: &SlicedIndex, keys: &[K], scratch: &mut Scores) {
    scratch.reset();
    index.query_batch(keys, &mut scratch.results);
    let Scores { results, dense, sparse, touched } = scratch;
    for ids in results.iter() {
        for &id in ids {
            let slot = if id < DENSE_IDS {
                let i = id as usize;
                if i >= dense.len() {
                    dense.resize(i + 1, 0);
                }
                &mut dense[i]
            } else {
                sparse.entry(id).or_insert(0)
            };
            if *slot == 0 {
                touched.push(id);
            }
            *slot += 1;
        }
    }
}

/// The sets that may hold at least `threshold.min_count(keys.len())` of
/// `keys`, as `(id, count)` in ascending id order, into `out` (cleared
/// first).
pub fn query_threshold_into<K: Key>(
    index: &SlicedIndex,
    keys: &[K],
    threshold: Threshold,
    scratch: &mut Scores,
    out: &mut Vec<(u64, u32)>,
) {
    out.clear();
    score_into(index, keys, scratch);
    let min = threshold.min_count(keys.len());
    if min == 0 {
        // Every set passes, those without a hit too.
        out.extend(index.ids().map(|id| (id, scratch.count_of(id))));
    } else {
        out.extend(scratch.touched.iter().map(|&id| (id, scratch.count_of(id))).filter(|&(_, c)| c >= min));
    }
    out.sort_unstable_by_key(|&(id, _)| id);
}

/// [`query_threshold_into`] into a new vector.
#[cfg_attr(not(test), expect(dead_code, reason = "the library API's convenience form, kept for the seam"))]
pub fn query_threshold<K: Key>(index: &SlicedIndex, keys: &[K], threshold: Threshold) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    query_threshold_into(index, keys, threshold, &mut Scores::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomslice::{BloomFilter, BloomParams};

    fn index(ids: &[u64]) -> SlicedIndex {
        let p = BloomParams::new(2048, 3).unwrap();
        let mut index = SlicedIndex::new(p);
        for (n, &id) in ids.iter().enumerate() {
            let mut f = BloomFilter::new(p).unwrap();
            // Set n holds keys 0 .. 10 (n + 1).
            for key in 0..10 * (n as u64 + 1) {
                f.insert(&key.to_le_bytes());
            }
            index.insert_filter(id, &f).unwrap();
        }
        index
    }

    /// The reference: each set's filter asked for each key.
    fn naive(index: &SlicedIndex, keys: &[[u8; 8]], min: u32) -> Vec<(u64, u32)> {
        let mut ids: Vec<u64> = index.ids().collect();
        ids.sort_unstable();
        ids.into_iter()
            .map(|id| {
                let f = index.get_filter(id).unwrap();
                (id, keys.iter().filter(|k| f.contains(*k)).count() as u32)
            })
            .filter(|&(_, c)| c >= min)
            .collect()
    }

    #[test]
    fn fractions_round_up_and_are_checked() {
        let t = Threshold::fraction(0.8).unwrap();
        assert_eq!(t.min_count(150), 120);
        assert_eq!(t.min_count(151), 121);
        assert_eq!(t.min_count(0), 0);
        assert_eq!(Threshold::fraction(1.0).unwrap().min_count(7), 7);
        assert_eq!(Threshold::fraction(0.0).unwrap().min_count(7), 0);
        assert_eq!(Threshold::fraction(0.1).unwrap().min_count(3), 1);
        assert_eq!(Threshold::count(5).min_count(2), 5);
        for bad in [-0.1, 1.5, f64::NAN] {
            assert!(Threshold::fraction(bad).is_err());
        }
    }

    #[test]
    fn counts_equal_the_naive_count_for_dense_and_sparse_ids() {
        let index = index(&[0, 3, 7, DENSE_IDS + 5, u64::MAX]);
        let keys: Vec<[u8; 8]> = (0..120u64).chain(0..5).map(u64::to_le_bytes).collect();
        let mut scratch = Scores::new();
        let mut out = Vec::new();
        for min in [0, 1, 10, 30, 60, 125, 126] {
            query_threshold_into(&index, &keys, Threshold::count(min), &mut scratch, &mut out);
            assert_eq!(out, naive(&index, &keys, min), "min {min}");
        }
        // Scratch reuse leaves no stale counts.
        query_threshold_into(&index, &keys[..3], Threshold::count(1), &mut scratch, &mut out);
        assert_eq!(out, naive(&index, &keys[..3], 1));
        assert_eq!(query_threshold(&index, &keys, Threshold::fraction(0.5).unwrap()), naive(&index, &keys, 63));
        let none: [[u8; 8]; 0] = [];
        assert!(query_threshold(&index, &none, Threshold::count(1)).is_empty());
    }
}

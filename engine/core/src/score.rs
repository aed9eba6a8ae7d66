//! Multi-key scoring: which filters hold at least a given share of a
//! *set* of keys (a DNA read's k-mers, a document's terms)?
//!
//! A query of `Q` keys is scored against every filter of a
//! [`SlicedIndex`](crate::sliced::SlicedIndex): the *count* of a filter is how many
//! of the `Q` keys it may contain. A key repeated in the query counts once
//! per occurrence (the keys are a multiset, as the k-mers of a read are).
//! Counts are exact: they equal, for every filter, the number of keys whose
//! `k` probe bits are all set in it, as a naive per-filter test would find.
//!
//! - [`SlicedIndex::score_into`](crate::sliced::SlicedIndex::score_into) fills a
//!   reusable [`Scores`] with every non-zero count.
//! - [`SlicedIndex::query_threshold`](crate::sliced::SlicedIndex::query_threshold)
//!   (and its allocation-free `_into` form) returns the filters whose count
//!   reaches a [`Threshold`], with their counts.
//! - [`ConcurrentIndex`](crate::concurrent::ConcurrentIndex) offers the same on its
//!   current state, and
//!   [`QueryPool::query_threshold_batch`](crate::pool::QueryPool::query_threshold_batch)
//!   scores many queries at once, split across threads.
//!
//! # How it works
//!
//! The counts are kept *vertically*, as in the positional population count
//! of Muła and Lemire: `B = ceil(log2(Q + 1))` bit-planes with one bit per
//! filter column, plane `j` holding bit `j` of every column's counter. Keys
//! are taken a few at a time (kernel `count_runs`: about 21 row runs, so 3
//! keys of `k` = 7, at most 8 keys; one at a time in exact pruned passes
//! over long rows): for each 512-column
//! chunk, each key's `k` row runs are ANDed (with the early exit of a plain
//! query), the group's results are summed in registers by carry-save adders
//! (Harley-Seal), and the sum (two digits for 3 keys, at most four) is
//! added to the planes in one pass of full adders, continuing up the planes
//! only while a carry is left. A
//! chunk where every key's AND is zero adds nothing. For `Q = 1000` and
//! `N = 10 000` filters the
//! planes are 10 x 1280 bytes and stay in L1. The threshold test runs across
//! the planes with SIMD masks (kernel `count_at_least`), and counts are
//! extracted only for the columns that pass.
//!
//! **Prefetch.** Rows are read from memory, so what a key costs is set by
//! how well the next keys' rows stream in. Each `count_runs` call is handed
//! the row runs of the keys that follow it (the next group, or the
//! key a prefetch distance ahead) and prefetches them one chunk per chunk
//! it scores (into L2, or into L1 on Intel CPUs, where that measured
//! faster: [`crate::kernels::LookAhead`]): spread over the call's own
//! walk, they arrive while it computes. Issued as one burst before each
//! group instead, the same prefetches make scoring slower than a plain
//! batched query of the same keys; spread, scoring is faster than that
//! query at `N = 10 000` (`bench/RESULTS.md`, section "Scoring"). Where a
//! row run is a few lines
//! (`N = 1 000`: two), a key costs less than the call that scores it, so
//! one `count_runs` call takes every key up to the next pruning check,
//! each group prefetching the next as it walks. Groups are small because
//! every run a walk reads side by side is a stream the memory system must
//! keep in flight: groups of eight keys (56 runs) scored markedly slower
//! at `N = 10 000` than groups of three on a machine with AVX-512
//! (`bench/RESULTS.md`, section "Scoring").
//!
//! **Hashing.** A key's probe positions are computed when a pass first
//! reaches it (in blocks of eight keys), not for the whole query up front: a
//! pruned query whose chunks all die early never hashes the rest.
//!
//! **Pruning.** A threshold query tracks which 512-column chunks can still
//! pass: after `i` keys a column needs at least `min_count - (Q - i)` hits
//! to reach `min_count`. From a first check on, and then every
//! [`PRUNE_INTERVAL`] keys, the planes are compared with it; a chunk where
//! no column meets it is dead, and later keys do not read that chunk of
//! their rows at all. The first check is not at the first key where the
//! bound is positive (`Q - min_count + 1`: there a chunk dies only if all
//! of its 512 columns missed every key, which almost never happens in a
//! dense index) but where, from the index's bit density, a chunk of
//! filters that hold none of the keys is dead with probability 0.95: with
//! `k` = 7 at density 0.5 and threshold 0.8, after key 24 of a 100-key
//! query (checks after keys 21 and 29 found its chunks dead only at 29).
//! A check skips the later ones where no chunk can die yet: one key raises
//! the bound by one and a count by at most one, so a chunk whose best
//! column is `s` above the bound lives at least `s` more keys. When at most
//! eight chunks are live (a query one filter holds most of, after the
//! others died) the check finds their best counts and the next check is
//! the first where one of them could fail: a 1 000-key query drawn from
//! one filter (95% of its keys; `bench/examples/drawnprobe.rs`, `N = 1 000`) is
//! checked 5 times instead of 99, each check a pass over the planes and a
//! split kernel call (31% fewer instructions, `bench/RESULTS.md`, section "Scoring"). A column that
//! passes in the end met every bound on the way, so its chunk was never
//! dead and its count is exact: pruning never changes the answer. With a
//! threshold of 0.8 and filters that hold few of the keys, everything dies
//! after about a fifth of the keys.
//!
//! **Screening.** In a dense index (rows about half ones, as in filters at
//! capacity) most of that fifth is spent reading rows of filters that will
//! die. A pruned query there first *screens*: it scores with only the first
//! `r` of each key's `k` rows (`r` = 2 when rows are half ones). The AND of
//! fewer rows has more ones, so these counts are upper bounds of the exact
//! ones and pruning on them never kills a column that can pass; a key
//! costs `r` runs instead of `k`. Once the chunks that die have died, the
//! chunks left (those of the filters that hold many of the keys) are
//! scored again from the first key with all `k` rows, with exact pruning,
//! and only those counts are reported. When the screen is used (from the
//! index's bit density, the query length and the threshold; at least eight
//! chunks) is decided by `SlicedIndex`'s cost estimate, documented there.
//!
//! Keys are scored in the order given. Reordering them (keys whose rows are
//! already in cache, or the most selective keys, first) has not been tried;
//! it belongs here only if it measures faster.

use crate::error::{Error, Result};

/// Pruned scoring compares the counters with the pass bound every this many
/// keys (skipping the checks where no chunk can die yet). Each check costs
/// one pass over the planes (a few lines per 512 columns); a dead chunk is
/// noticed at most this many keys late.
pub const PRUNE_INTERVAL: usize = 8;

/// The least count a filter needs to be reported by a threshold query:
/// an absolute count, or a fraction of the query's keys; and whether the
/// query prunes chunks (the default, see [`Threshold::unpruned`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    kind: Kind,
    prune: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Count(u32),
    Fraction(f64),
}

impl Threshold {
    /// At least `min_count` keys of the query. A count above the query's
    /// number of keys is allowed; no filter reaches it.
    pub fn count(min_count: u32) -> Threshold {
        Threshold { kind: Kind::Count(min_count), prune: true }
    }

    /// At least the fraction `f` of the query's keys (see
    /// [`Threshold::min_count`]).
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] if `f` is NaN or outside `[0, 1]`.
    pub fn fraction(f: f64) -> Result<Threshold> {
        if !(0.0..=1.0).contains(&f) {
            return Err(Error::Invalid(format!("threshold fraction {f} is not a number in [0, 1]")));
        }
        Ok(Threshold { kind: Kind::Fraction(f), prune: true })
    }

    /// The same threshold, answered without pruning: every key reads its
    /// rows in every chunk. The answer is the same; this exists to measure
    /// what pruning saves and to test that it changes nothing.
    pub fn unpruned(self) -> Threshold {
        Threshold { prune: false, ..self }
    }

    /// Whether queries with this threshold prune chunks.
    pub(crate) fn prunes(&self) -> bool {
        self.prune
    }

    /// The least count for a query of `keys` keys. For a fraction `f`, the
    /// smallest whole `c` with `c >= f * keys`, where a product within a
    /// relative 1e-9 of a whole number counts as that number (so that
    /// `0.8 * 100` gives 80, not 81, although `0.8` is not exact in binary).
    /// Never more than `keys` for a fraction.
    pub fn min_count(&self, keys: usize) -> u32 {
        match self.kind {
            Kind::Count(c) => c,
            Kind::Fraction(f) => {
                let exact = f * keys as f64;
                let nearest = exact.round();
                let c = if (exact - nearest).abs() <= 1e-9 * nearest.max(1.0) { nearest } else { exact.ceil() };
                // In [0, keys] since f is in [0, 1]; the casts saturate.
                (c as u64).min(keys as u64).min(u64::from(u32::MAX)) as u32
            }
        }
    }
}

/// The counts of one scored query, in a reusable buffer.
///
/// Keep one per thread and pass it to every query: once its buffers have
/// grown to the index and query size, scoring allocates nothing.
#[derive(Default, Clone, Debug)]
pub struct Scores {
    /// Keys in the last scored query.
    pub(crate) keys: usize,
    /// `(id, count)` of every filter with a non-zero count, ascending id.
    pub(crate) entries: Vec<(u64, u32)>,
    /// Working buffers of the scoring loop.
    pub(crate) scratch: Scratch,
}

/// Buffers the scoring loop reuses between queries.
#[derive(Default, Clone, Debug)]
pub(crate) struct Scratch {
    /// `k` probe positions per key.
    pub(crate) positions: Vec<u32>,
    /// Every shard's counter planes, one shard after the other.
    pub(crate) planes: Vec<u64>,
    /// Every shard's live-chunk bitmap, one shard after the other.
    pub(crate) live: Vec<u64>,
    /// One shard's comparison result.
    pub(crate) mask: Vec<u64>,
    /// Rows worth prefetching, per shard (0 once the shard is dead).
    pub(crate) prefetch_rows: Vec<usize>,
    /// Word of each shard's rows where prefetching starts (its first live
    /// chunk).
    pub(crate) prefetch_from: Vec<usize>,
    /// Leading positions of a group of keys and of its look-ahead, gathered
    /// back to back where they do not lie so in `positions`.
    pub(crate) gathered: Vec<u32>,
}

/// Grows `v`'s capacity to at least `n` (a no-op once it holds that many).
pub(crate) fn reserve_total<T>(v: &mut Vec<T>, n: usize) {
    if v.capacity() < n {
        v.reserve(n - v.len());
    }
}

impl Scores {
    /// An empty score buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys (`Q`) of the last scored query.
    pub fn keys(&self) -> usize {
        self.keys
    }

    /// The count of filter `id` in the last scored query: how many of its
    /// keys the filter may contain. 0 for an id the index does not hold.
    pub fn get(&self, id: u64) -> u32 {
        self.entries.binary_search_by_key(&id, |&(i, _)| i).map_or(0, |at| self.entries[at].1)
    }

    /// Every filter with a count above 0, as `(id, count)`, ascending id.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.entries.iter().copied()
    }

    /// Number of filters with a count above 0.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no filter has a count above 0.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The answers of a batch of threshold queries (see
/// [`QueryPool::query_threshold_batch`](crate::pool::QueryPool::query_threshold_batch)),
/// in a reusable buffer: query `i`'s passing filters as `(id, count)`,
/// ascending id.
#[derive(Default, Clone, Debug)]
pub struct ThresholdResults {
    pub(crate) hits: Vec<(u64, u32)>,
    pub(crate) ends: Vec<usize>,
}

batch_answers!(ThresholdResults, hits: [(u64, u32)], "query",
    /// The passing filters of query `i`, `(id, count)` by ascending id.
);

impl ThresholdResults {
    pub(crate) fn clear(&mut self) {
        self.hits.clear();
        self.ends.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_round_robustly() {
        let t = Threshold::fraction(0.8).unwrap();
        assert_eq!(t.min_count(100), 80);
        assert_eq!(t.min_count(1000), 800);
        assert_eq!(t.min_count(101), 81);
        assert_eq!(t.min_count(0), 0);
        assert_eq!(Threshold::fraction(0.7).unwrap().min_count(10), 7);
        assert_eq!(Threshold::fraction(0.1).unwrap().min_count(30), 3);
        assert_eq!(Threshold::fraction(1.0 / 3.0).unwrap().min_count(3), 1);
        assert_eq!(Threshold::fraction(1.0 / 3.0).unwrap().min_count(4), 2);
        assert_eq!(Threshold::fraction(1.0).unwrap().min_count(77), 77);
        assert_eq!(Threshold::fraction(0.0).unwrap().min_count(77), 0);
        assert_eq!(Threshold::count(5).min_count(3), 5);
        for bad in [f64::NAN, -0.01, 1.01, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(Threshold::fraction(bad), Err(Error::Invalid(_))), "{bad}");
        }
    }

    #[test]
    fn fraction_min_count_is_the_least_count_reaching_the_fraction() {
        // Against exact rational arithmetic: f = a / b, c = ceil(a * q / b).
        for b in 1..=20u64 {
            for a in 0..=b {
                let t = Threshold::fraction(a as f64 / b as f64).unwrap();
                for q in 0..300u64 {
                    assert_eq!(u64::from(t.min_count(q as usize)), (a * q).div_ceil(b), "{a}/{b} of {q}");
                }
            }
        }
    }

    #[test]
    fn scores_lookup() {
        let s = Scores { keys: 9, entries: vec![(2, 1), (5, 9), (70, 3)], scratch: Scratch::default() };
        assert_eq!(s.keys(), 9);
        assert_eq!((s.get(5), s.get(70), s.get(3), s.get(u64::MAX)), (9, 3, 0, 0));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(2, 1), (5, 9), (70, 3)]);
        assert_eq!((s.len(), s.is_empty()), (3, false));
        assert!(Scores::new().is_empty());
    }
}

//! A [`SetIndex`]'s queries: one key, batches, scores and thresholds
//! across its parts, and the allocation-free paths the
//! [`QueryPool`](crate::pool::QueryPool) runs on its snapshots.
//!
//! [`SetIndex::query_batch`] and [`SetIndex::query_threshold`] take their
//! per-part buffers on every call; the pool's tasks call the same logic
//! (the pool's [`Served`] contract, implemented here) with a
//! [`CollectionScratch`] (working buffers) that each worker, and each job
//! for its helping caller, keeps, so a warm pool batch on a set index
//! allocates nothing. A set index with one part holding sets answers
//! through that part's [`SlicedIndex`] directly.

use super::SetIndex;
use crate::hash::{Key, KeyHash};
use crate::pool::{Served, ServedSealed};
use crate::score::{Scores, Threshold, reserve_total};
use crate::sliced::{BatchResults, SlicedIndex};

impl SetIndex {
    /// Whether the parts' rows are few enough (at most
    /// [`RESIDENT_ROWS_BYTES`]) to stay cached between queries, so that a
    /// query reads them without prefetching (see the module documentation).
    pub(crate) fn rows_resident(&self) -> bool {
        self.tuning.part_prefetch.resident(self.parts.iter().map(|part| part.index.rows_bytes()).sum())
    }

    /// Part `index`'s ids for `hash` appended to `out`, prefetching unless
    /// `resident` ([`SetIndex::rows_resident`]).
    #[inline]
    pub(super) fn part_append(index: &SlicedIndex, hash: KeyHash, out: &mut Vec<u64>, resident: bool) {
        if resident {
            index.query_hash_append_resident(hash, out);
        } else {
            index.query_hash_append_prefetching(hash, out);
        }
    }

    /// Parts that hold at least one filter, in part order.
    pub(super) fn live_parts(&self) -> impl Iterator<Item = (usize, &SlicedIndex)> + '_ {
        self.parts.iter().enumerate().filter(|(_, part)| !part.index.is_empty()).map(|(i, part)| (i, &part.index))
    }

    /// The one part holding filters, if exactly one does.
    pub(super) fn single_part(&self) -> Option<&SlicedIndex> {
        let mut live = self.live_parts();
        let first = live.next()?;
        live.next().is_none().then_some(first.1)
    }

    /// Ids of the sets that may contain `key`, each once (see the module
    /// documentation for the order).
    pub fn query<K: Key + ?Sized>(&self, key: &K) -> Vec<u64> {
        let mut out = Vec::new();
        self.query_into(key, &mut out);
        out
    }

    /// [`SetIndex::query`] into a caller buffer that is cleared first.
    /// Allocates nothing once `out` has grown, as the first queries make it:
    /// to the largest answer plus the few slots (at most 24) the kernels
    /// write past an answer's end.
    pub fn query_into<K: Key + ?Sized>(&self, key: &K, out: &mut Vec<u64>) {
        self.query_hash_into(self.hash(key), out);
    }

    /// [`SetIndex::query_into`] by the key's hash.
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        out.clear();
        let resident = self.rows_resident();
        for (_, index) in self.live_parts() {
            Self::part_append(index, hash, out, resident);
        }
        if self.grown > 0 {
            out.sort_unstable();
            out.dedup();
        }
    }

    /// Queries a batch of keys, each hashed once: answer `i` of `results`
    /// is the sets that may contain key `i`, each once. A collection of one
    /// part answers through that part's batch; with more parts the keys are
    /// taken one by one, every part appending a key's ids to one buffer: a
    /// batch per part merged afterwards executed more instructions and ran
    /// slower on a skewed collection of 8 parts (example
    /// `collection_batch`).
    pub fn query_batch<K: Key>(&self, keys: &[K], results: &mut BatchResults) {
        let hashes: Vec<KeyHash> = keys.iter().map(|key| self.hash(key)).collect();
        self.query_batch_hashes(&hashes, results);
    }

    /// [`SetIndex::query_batch`] for keys already hashed.
    pub fn query_batch_hashes(&self, hashes: &[KeyHash], results: &mut BatchResults) {
        if let Some(index) = self.single_part() {
            index.query_batch_hashes(hashes, results);
            return;
        }
        let mut ids = Vec::new();
        self.append_batch_per_key(hashes, results, &mut ids);
    }

    /// A batch over several parts, key by key: each part appends the key's
    /// ids to `ids`, as [`SetIndex::query_hash_into`] does for one key
    /// (see [`SetIndex::query_batch`] for why).
    pub(crate) fn append_batch_per_key(&self, hashes: &[KeyHash], results: &mut BatchResults, ids: &mut Vec<u64>) {
        results.clear();
        let resident = self.rows_resident();
        for &hash in hashes {
            ids.clear();
            for (_, index) in self.live_parts() {
                Self::part_append(index, hash, ids, resident);
            }
            if self.grown > 0 {
                ids.sort_unstable();
                ids.dedup();
            }
            results.push_answer(ids);
        }
    }

    /// Scores the query `keys` against every set: afterwards `scores`
    /// holds, for every set, how many of the keys the union of its filters
    /// may contain (a key repeated in `keys` counts once per occurrence),
    /// ascending id, non-zero counts only, as [`SlicedIndex::score_into`].
    pub fn score_into<K: Key>(&self, keys: &[K], scores: &mut Scores) {
        if let Some(index) = self.single_part() {
            index.score_into(keys, scores);
            return;
        }
        let hashes: Vec<KeyHash> = keys.iter().map(|key| self.hash(key)).collect();
        let mut entries = Vec::new();
        let mut part_scores = Scores::new();
        for (_, index) in self.live_parts() {
            index.score_into(&hashes, &mut part_scores);
            entries.extend(part_scores.iter().filter(|&(id, _)| !self.is_grown(id)));
        }
        let mut scratch = CollectionScratch::default();
        self.grown_counts_with(&hashes, &mut scratch);
        entries.extend(scratch.grown.iter().copied().filter(|&(_, count)| count > 0));
        entries.sort_unstable();
        scores.keys = keys.len();
        scores.entries = entries;
    }

    threshold_queries! {
        /// The sets whose count for the query `keys` reaches `threshold`, as
        /// `(id, count)` by ascending id (a `min_count` of 0 returns every
        /// set), counts as in [`SetIndex::score_into`]. Sets with one filter
        /// are scored, pruned, by their part
        /// ([`SlicedIndex::query_threshold_into`]); sets with several filters
        /// are counted key by key.
        fn query_threshold;

        /// [`SetIndex::query_threshold`] into `out` (cleared first), with
        /// `scratch` as working memory (its scores afterwards are unspecified).
        /// With one part, allocates nothing once both are warm; with several,
        /// the merge across parts takes buffers of its own (the pool keeps
        /// them warm: [`crate::QueryPool`]).
        fn query_threshold_into(&self, keys, threshold, scratch, out) {
            self.query_threshold_with(keys, threshold, scratch, &mut CollectionScratch::default(), out);
        }
    }

    pub(super) fn is_grown(&self, id: u64) -> bool {
        self.grown > 0 && self.sets.get(&id).is_some_and(|slots| slots.len() > 1)
    }
}

impl ServedSealed for SetIndex {}

/// The pool's tasks on a collection: its batch and threshold queries with
/// the caller's scratch (scores for each part's scoring, and the
/// collection's own buffers).
impl Served for SetIndex {
    type Scratch = (Scores, CollectionScratch);

    /// Every filter of every part (a grown set's filters each count).
    fn filters(&self) -> usize {
        self.parts.iter().map(|part| part.index.len()).sum()
    }

    #[inline]
    fn key_hash<K: Key + ?Sized>(&self, key: &K) -> KeyHash {
        self.hash(key)
    }

    #[inline]
    fn query_batch_with<K: Key>(&self, keys: &[K], out: &mut BatchResults, (_, s): &mut Self::Scratch) {
        SetIndex::query_batch_with(self, keys, out, s);
    }

    #[inline]
    fn query_threshold_with<K: Key>(
        &self,
        keys: &[K],
        threshold: Threshold,
        (scores, s): &mut Self::Scratch,
        out: &mut Vec<(u64, u32)>,
    ) {
        SetIndex::query_threshold_with(self, keys, threshold, scores, s, out);
    }

    fn reserve(&self, max_keys: usize, threshold: bool, (scores, s): &mut Self::Scratch, out: &mut Vec<(u64, u32)>) {
        self.reserve_scratch(max_keys, s, threshold.then_some((scores, out)));
    }
}

/// Working buffers of a collection's batch and threshold queries, kept by
/// whoever runs them, so a warm query allocates nothing. Public only as
/// part of the pool's [`Served`] contract.
#[doc(hidden)]
#[derive(Clone, Debug, Default)]
pub struct CollectionScratch {
    /// The keys of the running query, hashed once for every part.
    hashes: Vec<KeyHash>,
    /// One key's ids, merged across parts.
    ids: Vec<u64>,
    /// One part's passing `(id, count)`.
    part_out: Vec<(u64, u32)>,
    /// `(id, count)` of every grown set, ascending id.
    pub(super) grown: Vec<(u64, u32)>,
    /// Parts holding a filter of a grown set.
    grown_parts: Vec<usize>,
}

impl SetIndex {
    /// [`SetIndex::query_batch`] with the caller's scratch.
    pub(crate) fn query_batch_with<K: Key>(&self, keys: &[K], results: &mut BatchResults, s: &mut CollectionScratch) {
        if let Some(index) = self.single_part() {
            index.query_batch(keys, results);
            return;
        }
        let mut hashes = core::mem::take(&mut s.hashes);
        hashes.clear();
        hashes.extend(keys.iter().map(|key| self.hash(key)));
        self.query_batch_hashes_with(&hashes, results, s);
        s.hashes = hashes;
    }

    /// [`SetIndex::query_batch_hashes`] with the caller's scratch.
    pub(crate) fn query_batch_hashes_with(
        &self,
        hashes: &[KeyHash],
        results: &mut BatchResults,
        s: &mut CollectionScratch,
    ) {
        if let Some(index) = self.single_part() {
            index.query_batch_hashes(hashes, results);
            return;
        }
        self.append_batch_per_key(hashes, results, &mut s.ids);
    }

    /// [`SetIndex::query_threshold`] into `out` (cleared first), with the
    /// caller's scratch: `scores` for each part's scoring, `s` for the rest.
    pub(crate) fn query_threshold_with<K: Key>(
        &self,
        keys: &[K],
        threshold: Threshold,
        scores: &mut Scores,
        s: &mut CollectionScratch,
        out: &mut Vec<(u64, u32)>,
    ) {
        if let Some(index) = self.single_part() {
            index.query_threshold_into(keys, threshold, scores, out);
            return;
        }
        out.clear();
        let min_count = threshold.min_count(keys.len());
        if min_count as usize > keys.len() {
            return;
        }
        let mut hashes = core::mem::take(&mut s.hashes);
        hashes.clear();
        hashes.extend(keys.iter().map(|key| self.hash(key)));
        for (_, index) in self.live_parts() {
            index.query_threshold_into(&hashes, threshold, scores, &mut s.part_out);
            out.extend(s.part_out.iter().copied().filter(|&(id, _)| !self.is_grown(id)));
        }
        self.grown_counts_with(&hashes, s);
        out.extend(s.grown.iter().copied().filter(|&(_, count)| count >= min_count));
        out.sort_unstable();
        s.hashes = hashes;
    }

    /// Leaves in `s.grown` the `(id, count)` of every grown set, ascending
    /// id: the keys any of its filters may hold, each key counted once per
    /// set.
    pub(crate) fn grown_counts_with(&self, hashes: &[KeyHash], s: &mut CollectionScratch) {
        let CollectionScratch { ids, grown, grown_parts, .. } = s;
        grown.clear();
        if self.grown == 0 {
            return;
        }
        grown_parts.clear();
        for (&id, slots) in &self.sets {
            if slots.len() > 1 {
                grown.push((id, 0));
                grown_parts.extend(slots.iter().map(|slot| slot.part));
            }
        }
        grown.sort_unstable();
        grown_parts.sort_unstable();
        grown_parts.dedup();
        // Key by key, as batches (`append_batch_per_key`): one key's ids
        // from every part holding a grown set's filter, each set once.
        let resident = self.rows_resident();
        for &hash in hashes {
            ids.clear();
            for &part in grown_parts.iter() {
                Self::part_append(&self.parts[part].index, hash, ids, resident);
            }
            ids.retain(|id| grown.binary_search_by_key(id, |&(g, _)| g).is_ok());
            ids.sort_unstable();
            ids.dedup();
            for id in ids.iter() {
                if let Ok(at) = grown.binary_search_by_key(id, |&(g, _)| g) {
                    grown[at].1 += 1;
                }
            }
        }
    }

    /// Grows `s` (and, for threshold queries, `scores` and `out`) to what a
    /// query of up to `keys` keys on this collection needs, so that which
    /// thread runs which task of a pool batch does not decide whether it
    /// allocates: bounds from the collection (sets, filters, parts), not
    /// from the keys' answers.
    pub(crate) fn reserve_scratch(
        &self,
        keys: usize,
        s: &mut CollectionScratch,
        threshold: Option<(&mut Scores, &mut Vec<(u64, u32)>)>,
    ) {
        if self.single_part().is_some() {
            if let (Some(index), Some((scores, out))) = (self.single_part(), threshold) {
                index.reserve_scores(keys, scores, out);
            }
            return;
        }
        let filters: usize = self.parts.iter().map(|part| part.index.len()).sum();
        reserve_total(&mut s.hashes, keys);
        reserve_total(&mut s.ids, filters);
        if let Some((scores, out)) = threshold {
            for (_, index) in self.live_parts() {
                index.reserve_scores(keys, scores, &mut s.part_out);
            }
            reserve_total(out, self.len());
            reserve_total(&mut s.grown, self.grown);
            reserve_total(&mut s.grown_parts, self.parts.len());
        }
    }
}

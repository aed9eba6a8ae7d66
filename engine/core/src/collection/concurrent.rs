//! A [`SetIndex`] shared by concurrent readers and writers
//! (a [`ConcurrentIndex`] of a [`SetIndex`]), and
//! the allocation-free query paths the [`QueryPool`](crate::pool::QueryPool)
//! runs on a collection's snapshots.
//!
//! # Design note: one generic wrapper, two copies of the collection
//!
//! [`ConcurrentIndex`] is generic over the state it keeps in two copies
//! (default [`SlicedIndex`](crate::sliced::SlicedIndex), so code naming `ConcurrentIndex` alone is
//! unchanged); a collection is one more such state, with its own writes
//! ([`SetOp`]). The left-right machinery (one atomic load per
//! reader, one swap per write, the standby edited in place and the missed
//! writes replayed) is shared as it is, so a reader of a collection never
//! waits for a writer and sees one published state, as with a sliced
//! index. A separate concurrent set-index type would have repeated that
//! machinery; the generic one costs the sliced path nothing (its
//! monomorphised code is the code it was).
//!
//! **What a write copies.** A write edits the standby copy in place: the
//! rows and id map of the one part it touches, and the collection's set
//! map. The two copies share nothing once each has been written, so a
//! write never copies a part. A copy is cloned only when the standby must
//! be rebuilt (after a panic inside a write, a failed replay, a write that
//! failed half-way, or a reader that kept the standby past
//! [`DRAIN_PATIENCE`](crate::concurrent::DRAIN_PATIENCE)); the clone
//! shares every part's shards (`Arc`) and copies only the set map, and
//! later writes copy only the shards they touch.
//!
//! **Writes that fail half-way.** A failed write to a [`SlicedIndex`](crate::sliced::SlicedIndex)
//! changes nothing, so it is not replayed. A collection's write can fail
//! after a change (a new, empty part; keys added before a larger filter
//! could not be had); any failure but [`Error::UnknownId`] and
//! [`Error::DuplicateId`] (checked before anything changes) marks the
//! standby untrusted, and the next write rebuilds it from the published
//! copy, so the copies never diverge.
//!
//! # Queries through the pool
//!
//! [`SetIndex::query_batch`] and [`SetIndex::query_threshold`] allocate
//! their per-part buffers on every call; the pool's tasks call the same
//! logic (the pool's [`Served`] contract, implemented here) with a
//! `CollectionScratch` (working buffers) that each worker, and each job for
//! its helping caller, keeps, so a warm pool batch on a collection
//! allocates nothing. A collection with one
//! part holding sets answers through that part's [`SlicedIndex`](crate::sliced::SlicedIndex) directly.

use super::SetIndex;
use crate::concurrent::{ConcurrentIndex, Replica, sealed::Sealed};
use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};
use crate::pool::{Served, ServedSealed};
use crate::score::{Scores, Threshold, reserve_total};
use crate::sliced::BatchResults;

/// One write to a [`ConcurrentIndex`] of a [`SetIndex`]; see [`ConcurrentIndex::apply`].
/// Keys are carried as their hashes (under the collection's seed), so a
/// write can be replayed on the other copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetOp {
    /// [`SetIndex::insert_set`].
    InsertSet {
        /// New set id.
        id: u64,
        /// The set's keys, hashed.
        hashes: Vec<KeyHash>,
    },
    /// [`SetIndex::remove_set`].
    RemoveSet {
        /// Set id.
        id: u64,
    },
    /// [`SetIndex::add_keys`] (the set may gain a filter in a larger
    /// part).
    AddKeys {
        /// Set id.
        id: u64,
        /// The keys added, hashed.
        hashes: Vec<KeyHash>,
    },
    /// Replaces set `id`'s keys ([`SetIndex::replace_set`]: re-placed by
    /// size, the old filters put back if a step fails). Fails with
    /// [`Error::UnknownId`] (changing nothing) when there is no set `id`.
    ReplaceSet {
        /// Set id.
        id: u64,
        /// The set's new keys, hashed.
        hashes: Vec<KeyHash>,
    },
}

impl Sealed for SetIndex {
    type Fixed = u64;

    fn fixed(&self) -> u64 {
        self.seed
    }

    /// Each live part's tables in part order, within one budget.
    fn warm_query_tables(&self, budget: usize) -> usize {
        self.live_parts().fold(0, |done, (_, index)| done + index.warm_query_tables(budget - done))
    }
}

impl Replica for SetIndex {
    type Op = SetOp;

    fn apply_op(&mut self, op: &SetOp) -> Result<()> {
        match op {
            SetOp::InsertSet { id, hashes } => self.insert_set(*id, hashes),
            SetOp::RemoveSet { id } => self.remove_set(*id),
            SetOp::AddKeys { id, hashes } => self.add_keys(*id, hashes),
            SetOp::ReplaceSet { id, hashes } => self.replace_set(*id, hashes),
        }
    }

    /// Unknown and duplicate ids are checked before anything changes.
    fn failed_op_changed_nothing(error: &Error) -> bool {
        matches!(error, Error::UnknownId(_) | Error::DuplicateId(_))
    }
}

/// A [`SetIndex`] shared by concurrent readers and writers (see the
/// [module documentation](self)).
///
/// ```
/// use bloomslice::{BatchResults, ConcurrentIndex, LayoutConfig, ReadIndex, SetIndex};
///
/// let small: Vec<String> = (0..20).map(|i| format!("small-{i}")).collect();
/// let large: Vec<String> = (0..5_000).map(|i| format!("large-{i}")).collect();
/// let collection = SetIndex::build(&[(1, small), (9, large)], 0.01, LayoutConfig::default())?;
/// let shared = ConcurrentIndex::new(collection);
/// shared.insert_set(4, &["pear", "plum"])?; // &self: callable while others query
/// shared.add_keys(1, &["apple"])?;
/// assert!(shared.query("pear").contains(&4));
/// let mut results = BatchResults::new();
/// shared.query_batch(&["apple", "large-3"], &mut results);
/// assert!(results.get(0).unwrap().contains(&1));
/// assert!(results.get(1).unwrap().contains(&9));
/// # Ok::<(), bloomslice::Error>(())
/// ```
impl ConcurrentIndex<SetIndex> {
    /// The seed every key is hashed with (the collection's).
    pub fn seed(&self) -> u64 {
        *self.fixed()
    }

    /// `keys` hashed as the collection hashes them.
    fn hashes<K: Key>(&self, keys: &[K]) -> Vec<KeyHash> {
        let seed = self.seed();
        keys.iter().map(|key| key.key_hash(seed)).collect()
    }

    /// [`SetIndex::insert_set`], concurrently with queries.
    ///
    /// # Errors
    ///
    /// As [`SetIndex::insert_set`]; nothing is published then.
    pub fn insert_set<K: Key>(&self, id: u64, keys: &[K]) -> Result<()> {
        self.apply_one(SetOp::InsertSet { id, hashes: self.hashes(keys) })
    }

    /// [`SetIndex::remove_set`], concurrently with queries.
    ///
    /// # Errors
    ///
    /// As [`SetIndex::remove_set`].
    pub fn remove_set(&self, id: u64) -> Result<()> {
        self.apply_one(SetOp::RemoveSet { id })
    }

    /// [`SetIndex::add_keys`], concurrently with queries: readers see
    /// all of the keys or none, and the set's new filter with them.
    ///
    /// # Errors
    ///
    /// As [`SetIndex::add_keys`].
    pub fn add_keys<K: Key>(&self, id: u64, keys: &[K]) -> Result<()> {
        self.apply_one(SetOp::AddKeys { id, hashes: self.hashes(keys) })
    }

    /// Replaces set `id`'s keys with `keys` ([`SetOp::ReplaceSet`]):
    /// readers see the old set or the new one, never neither.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`], or as [`SetIndex::insert_set`].
    pub fn replace_set<K: Key>(&self, id: u64, keys: &[K]) -> Result<()> {
        self.apply_one(SetOp::ReplaceSet { id, hashes: self.hashes(keys) })
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

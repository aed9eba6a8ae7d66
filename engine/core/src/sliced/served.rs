//! The pool's contract ([`Served`]) for a [`SlicedIndex`]: a task runs the
//! index's own batch and threshold queries; threshold tasks keep their
//! [`Scores`] between queries.

use super::{BatchResults, SlicedIndex};
use crate::hash::{Key, KeyHash};
use crate::pool::{Served, ServedSealed};
use crate::score::{Scores, Threshold};

impl ServedSealed for SlicedIndex {}

impl Served for SlicedIndex {
    type Scratch = Scores;

    fn filters(&self) -> usize {
        self.len()
    }

    #[inline]
    fn key_hash<K: Key + ?Sized>(&self, key: &K) -> KeyHash {
        self.params().hash(key)
    }

    #[inline]
    fn query_batch_with<K: Key>(&self, keys: &[K], out: &mut BatchResults, _: &mut Scores) {
        self.query_batch(keys, out);
    }

    #[inline]
    fn query_threshold_with<K: Key>(
        &self,
        keys: &[K],
        threshold: Threshold,
        scores: &mut Scores,
        out: &mut Vec<(u64, u32)>,
    ) {
        self.query_threshold_into(keys, threshold, scores, out);
    }

    /// Key tasks need no scratch.
    fn reserve(&self, max_keys: usize, threshold: bool, scores: &mut Scores, out: &mut Vec<(u64, u32)>) {
        if threshold {
            self.reserve_scores(max_keys, scores, out);
        }
    }
}

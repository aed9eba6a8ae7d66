//! The pool's contract ([`Served`]) for a [`LevelIndex`]: a task runs the
//! index's own batch and threshold queries, its keys hashed into the
//! task's scratch.

use super::LevelIndex;
use crate::batch::BatchResults;
use crate::hash::{Key, KeyHash};
use crate::pool::{Served, ServedSealed};
use crate::score::Threshold;

impl ServedSealed for LevelIndex {}

impl Served for LevelIndex {
    /// The running task's keys, hashed.
    type Scratch = Vec<KeyHash>;

    /// The sets (a key reads far fewer filters in levels: the pool's work
    /// estimate errs towards splitting).
    fn filters(&self) -> usize {
        self.len()
    }

    #[inline]
    fn key_hash<K: Key + ?Sized>(&self, key: &K) -> KeyHash {
        key.key_hash(self.seed)
    }

    fn query_batch_with<K: Key>(&self, keys: &[K], out: &mut BatchResults, hashes: &mut Vec<KeyHash>) {
        hashes.clear();
        hashes.extend(keys.iter().map(|key| key.key_hash(self.seed)));
        self.query_batch_hashes_into(hashes, out);
    }

    fn query_threshold_with<K: Key>(
        &self,
        keys: &[K],
        threshold: Threshold,
        _: &mut Vec<KeyHash>,
        out: &mut Vec<(u64, u32)>,
    ) {
        self.query_threshold_into(keys, threshold, out);
    }

    fn reserve(&self, max_keys: usize, _threshold: bool, hashes: &mut Vec<KeyHash>, _: &mut Vec<(u64, u32)>) {
        hashes.reserve(max_keys);
    }
}

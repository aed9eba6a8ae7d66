//! Hooks of [`SlicedIndex`] for the Bloom filter variants (counting,
//! dynamic and popularity-conscious filters): rewriting chosen bits of a
//! column exactly, replacing a whole column, and querying with a per-key
//! number of hash functions.
//!
//! A child module of `sliced`, so it works on the shards directly and keeps
//! the `ones` statistics and the copy-on-write sharing (`writable`, which copies a shared or mapped shard
//! fallibly before the first change)
//! right, as every other write of the index does.

use super::SlicedIndex;
use crate::error::{Error, Result};
use crate::filter::BloomFilter;
use crate::hash::{Key, KeyHash};

impl SlicedIndex {
    /// Sets bit `p` of column `id` to `bit(p)` for every `p` in `positions`
    /// (the other bits of the column are left alone).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged.
    pub(crate) fn set_column_bits(
        &mut self,
        id: u64,
        positions: &[u32],
        mut bit: impl FnMut(u32) -> bool,
    ) -> Result<()> {
        let slot = self.slot(id)?;
        let m = self.params.m();
        let s = super::writable(&mut self.shards, slot.shard as usize)?;
        let (word, mask) = (slot.col as usize / 64, 1u64 << (slot.col % 64));
        for &p in positions {
            if u64::from(p) >= m {
                continue;
            }
            let w = &mut s.rows[p as usize * s.wpr + word];
            let was = *w & mask != 0;
            let now = bit(p);
            if was != now {
                *w ^= mask;
                if now {
                    s.ones += 1;
                } else {
                    s.ones -= 1;
                }
            }
        }
        Ok(())
    }

    /// Replaces the bits of column `id` by `filter` exactly.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::UnknownId`]; the index is unchanged.
    pub(crate) fn replace_column(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        if *filter.params() != self.params {
            return Err(Error::ParamsMismatch { expected: self.params, found: *filter.params() });
        }
        let slot = self.slot(id)?;
        let m = self.params.m() as usize;
        let s = super::writable(&mut self.shards, slot.shard as usize)?;
        s.clear_column(m, slot.col as usize);
        s.or_column(slot.col as usize, filter);
        Ok(())
    }

    /// Ids of the filters whose bits are set at all of `positions` (each
    /// must be `< m`), into `out` (cleared first), in index order.
    pub(crate) fn query_positions_into(&self, positions: &[u32], out: &mut Vec<u64>) {
        out.clear();
        self.query_positions(positions, out);
    }

    /// Ids of the filters that may contain `key` when the key is probed with
    /// its own number of hash functions `k` instead of the parameters' k:
    /// the first `k` positions of its double-hashing sequence (the
    /// popularity-conscious scheme; see [`crate::popularity`]). `k` is
    /// clamped to `1..=MAX_HASHES`.
    pub fn query_with_hashes<K: Key + ?Sized>(&self, key: &K, k: u32, out: &mut Vec<u64>) {
        self.query_hash_with_hashes(self.params.hash(key), k, out);
    }

    /// [`SlicedIndex::query_with_hashes`] by the key's hash.
    pub fn query_hash_with_hashes(&self, hash: KeyHash, k: u32, out: &mut Vec<u64>) {
        let pos = self.params.probes_n(hash, k as usize);
        self.query_positions_into(&pos, out);
    }

    /// Sets the bits of the first `k` probe positions of `hash` in column
    /// `id` (inserting a key with its own hash count).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged.
    pub fn insert_key_hash_with_hashes(&mut self, id: u64, hash: KeyHash, k: u32) -> Result<()> {
        let pos = self.params.probes_n(hash, k as usize);
        self.set_column_bits(id, &pos, |_| true)
    }
}

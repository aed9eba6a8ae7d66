//! The hooks of the core for Bloom filter variants: what a structure built
//! on [`SlicedIndex`] (the counting, dynamic and popularity-conscious
//! indexes of the `bloomslice-papers` crate) needs beyond the ordinary
//! write and query methods. Each keeps the index's invariants (the per-shard
//! count of set bits, copy-on-write sharing of shards with clones and
//! mapped files) as every other write does, and leaves the index unchanged
//! when it fails.
//!
//! - [`SlicedIndex::set_column_bits`]: rewrite chosen bits of one filter's
//!   column exactly (a counting filter's bit view after a remove);
//! - [`SlicedIndex::replace_column`]: replace one filter's column whole;
//! - [`SlicedIndex::query_with_hashes`],
//!   [`SlicedIndex::insert_key_hash_with_hashes`]: query and insert a key
//!   with its own number of hash functions (popularity-conscious filters);
//! - [`BatchResults::map_sort_dedup`]: turn column ids of a batch answer
//!   into the ids of the sets that own the columns.

use super::{BatchResults, SlicedIndex};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::filter::BloomFilter;
use crate::hash::{Key, KeyHash};

/// Hooks for filter variants (see the [module documentation](self)).
impl SlicedIndex {
    /// Sets bit `p` of the column of filter `id` to `bit(p)` for every `p`
    /// of `positions`, leaving the column's other bits alone. Positions
    /// `>= m` are skipped; `bit` is called once per position `< m`, in
    /// order. A shared or mapped shard is copied before its first change.
    ///
    /// ```
    /// use bloomslice::{BloomFilter, BloomParams, SlicedIndex};
    ///
    /// let params = BloomParams::new(1024, 3)?;
    /// let mut index = SlicedIndex::new(params);
    /// index.insert_filter(1, &BloomFilter::new(params)?)?;
    /// let probes = params.probes(params.hash("apple"));
    /// index.set_column_bits(1, &probes, |_| true)?;
    /// assert_eq!(index.query("apple"), vec![1]);
    /// index.set_column_bits(1, &probes, |_| false)?;
    /// assert!(index.query("apple").is_empty());
    /// # Ok::<(), bloomslice::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`], or [`Error::CapacityOverflow`] if a shared
    /// shard cannot be copied; the index is unchanged.
    pub fn set_column_bits(&mut self, id: u64, positions: &[u32], mut bit: impl FnMut(u32) -> bool) -> Result<()> {
        let slot = self.slot(id)?;
        let m = self.params.m();
        let s = super::writable(&mut self.shards, slot.shard as usize)?;
        for &p in positions {
            if u64::from(p) >= m {
                continue;
            }
            let (word, mask) = s.bit_at(p as usize, slot.col as usize);
            let w = &mut s.rows[word];
            let was = *w & mask != 0;
            let now = bit(p);
            if was != now {
                *w ^= mask;
                if now {
                    s.ones += 1;
                    s.logs.note_set(slot.col as usize, p as usize);
                } else {
                    s.ones -= 1;
                }
            }
        }
        Ok(())
    }

    /// Replaces the column of filter `id` by the bits of `filter` exactly
    /// (unlike [`SlicedIndex::update_filter`], which ORs them in).
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`], [`Error::UnknownId`], or
    /// [`Error::CapacityOverflow`] if a shared shard cannot be copied; the
    /// index is unchanged.
    pub fn replace_column(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        let slot = self.slot(id)?;
        let m = self.params.m() as usize;
        let s = super::writable(&mut self.shards, slot.shard as usize)?;
        s.clear_column(m, slot.col as usize);
        s.fill_empty_column(slot.col as usize, filter);
        Ok(())
    }

    /// Ids of the filters that may contain `key` when the key is probed with
    /// its own number of hash functions `k` instead of the parameters' k:
    /// the first `k` positions of its probe sequence (the
    /// popularity-conscious scheme of `bloomslice-papers`). `k` is clamped
    /// to `1..=MAX_HASHES`.
    pub fn query_with_hashes<K: Key + ?Sized>(&self, key: &K, k: u32, out: &mut Vec<u64>) {
        self.query_hash_with_hashes(self.params.hash(key), k, out);
    }

    /// [`SlicedIndex::query_with_hashes`] by the key's hash.
    pub fn query_hash_with_hashes(&self, hash: KeyHash, k: u32, out: &mut Vec<u64>) {
        let pos = self.params.probes_n(hash, k as usize);
        out.clear();
        self.query_positions(&pos, out);
    }

    /// Sets the bits of the first `k` probe positions of `hash` in the
    /// column of filter `id` (inserting a key with its own hash count;
    /// `k` clamped to `1..=MAX_HASHES`).
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::set_column_bits`]; the index is unchanged.
    pub fn insert_key_hash_with_hashes(&mut self, id: u64, hash: KeyHash, k: u32) -> Result<()> {
        let pos = self.params.probes_n(hash, k as usize);
        self.set_column_bits(id, &pos, |_| true)
    }
}

/// Hook for filter variants (see the [module documentation](self)).
impl BatchResults {
    /// Replaces every id of every answer by `map(id)`, then sorts each
    /// answer ascending and removes duplicates, in place and without
    /// allocating: turns the column ids of a batch answer into the ids of
    /// the sets that own the columns (a dynamic set has a column per
    /// member).
    pub fn map_sort_dedup(&mut self, mut map: impl FnMut(u64) -> u64) {
        for id in &mut self.ids {
            *id = map(*id);
        }
        let (mut write, mut start) = (0, 0);
        for e in 0..self.ends.len() {
            let end = self.ends[e];
            self.ids[start..end].sort_unstable();
            let begin = write;
            for r in start..end {
                let v = self.ids[r];
                if write == begin || self.ids[write - 1] != v {
                    self.ids[write] = v;
                    write += 1;
                }
            }
            self.ends[e] = write;
            start = end;
        }
        self.ids.truncate(write);
    }
}

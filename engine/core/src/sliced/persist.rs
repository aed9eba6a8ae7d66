//! The bridge between [`SlicedIndex`]'s private layout and the index file
//! format of [`crate::persist`]: the persistence layer sees shards as
//! `(columns, ones, rows)` and the id map as `(id, shard, column)` triples,
//! and gets an index back only through the checks of
//! [`SlicedIndex::from_parts`].

use std::sync::Arc;

use bloomslice_kernels::{Kernels, arch::all::for_each_set_bit};
use hashbrown::HashMap;

use super::logs::ColumnLogs;
use super::{MAX_SHARD_COLUMNS, SHARD_COLUMN_STEP, Shard, SlicedConfig, SlicedIndex, Slot, narrow};
use crate::error::{Error, Result};
use crate::kmer::KmerLength;
use crate::params::BloomParams;
use crate::storage::Words;

/// One shard as the file format sees it.
pub(crate) struct ShardParts {
    /// Columns (a width of [`narrow::is_shard_width`]).
    pub(crate) columns: usize,
    /// Set bits in `rows` (as recorded; checked by `validate`).
    pub(crate) ones: u64,
    /// [`narrow::shard_words`]`(m, columns)` words, row-major, zero-padded
    /// to a cache line.
    pub(crate) rows: Words,
}

/// Where one set lives: `(id, shard, column)`.
pub(crate) type ColumnEntry = (u64, u32, u32);

impl SlicedIndex {
    /// `(columns, ones, rows)` of every shard, in shard order.
    pub(crate) fn shard_views(&self) -> impl ExactSizeIterator<Item = (usize, u64, &Words)> + '_ {
        self.shards.iter().map(|s| (s.cols, s.ones, &s.rows))
    }

    /// Every used column as `(id, shard, column)`, in `(shard, column)` order.
    pub(crate) fn column_entries(&self) -> Vec<ColumnEntry> {
        let mut out = Vec::with_capacity(self.slots.len());
        for (si, s) in self.shards.iter().enumerate() {
            for_each_set_bit(&s.used, |c| out.push((s.owners[c], si as u32, c as u32)));
        }
        out
    }

    /// `(id, set bits)` of every filter, in `(shard, column)` order: one
    /// pass over the set bits of the rows, where [`SlicedIndex::filter_cloned`]
    /// per filter would read every row once per filter (tools use this for
    /// fill ratios and false-positive estimates).
    pub fn ones_per_filter(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.slots.len());
        for s in &self.shards {
            let counts = narrow::ones_per_column(&s.rows, s.cols);
            for_each_set_bit(&s.used, |c| out.push((s.owners[c], counts[c])));
        }
        out
    }

    /// Whether any shard's rows are a window of a mapped file.
    pub(crate) fn is_mapped(&self) -> bool {
        self.shards.iter().any(|s| s.rows.is_mapped())
    }

    /// Rebuilds an index from checked parts. `entries` must be in strictly
    /// increasing `(shard, column)` order (the order
    /// [`SlicedIndex::column_entries`] gives), which also rules out two sets
    /// in one column.
    ///
    /// # Errors
    ///
    /// [`Error::CorruptFile`] for a bad shard width, a config out of range,
    /// a column outside its shard, entries out of order or a repeated id.
    pub(crate) fn from_parts(
        params: BloomParams,
        config: SlicedConfig,
        parts: Vec<ShardParts>,
        entries: &[ColumnEntry],
    ) -> Result<SlicedIndex> {
        let bad = |msg: String| Err(Error::CorruptFile(msg));
        let max = config.max_shard_columns;
        if !(SHARD_COLUMN_STEP..=MAX_SHARD_COLUMNS).contains(&max) || !max.is_multiple_of(SHARD_COLUMN_STEP) {
            return bad(format!("max shard columns {max} is not a multiple of 512 in 512..=32768"));
        }
        if config.prefetch_distance > 64 {
            return bad(format!("prefetch distance {} is above 64", config.prefetch_distance));
        }
        let m = params.m() as usize;
        let mut shards = Vec::new();
        shards.try_reserve_exact(parts.len()).map_err(|_| Error::CapacityOverflow("shard list"))?;
        for (si, p) in parts.into_iter().enumerate() {
            let columns = p.columns;
            if !narrow::is_shard_width(columns, max) {
                return bad(format!(
                    "shard {si}: {columns} columns is neither a power of two up to 256 nor a multiple of 512 up to {max}"
                ));
            }
            if Some(p.rows.len()) != narrow::shard_words(m, columns) {
                return bad(format!("shard {si}: {} row words for m = {m} and {columns} columns", p.rows.len()));
            }
            let wpr = columns.div_ceil(64);
            let logs = ColumnLogs::new(m, p.rows.len());
            shards.push(Shard {
                cols: columns,
                wpr,
                rows: p.rows,
                owners: vec![0; columns],
                used: vec![0; wpr],
                n_used: 0,
                ones: p.ones,
                logs,
            });
        }
        let mut slots = HashMap::new();
        slots.try_reserve(entries.len()).map_err(|_| Error::CapacityOverflow("id map"))?;
        let mut previous: Option<(u32, u32)> = None;
        for &(id, shard, col) in entries {
            if previous.is_some_and(|p| p >= (shard, col)) {
                return bad(format!("id map entry for set {id} is out of (shard, column) order"));
            }
            previous = Some((shard, col));
            let Some(s) = shards.get_mut(shard as usize) else {
                return bad(format!("set {id} is in shard {shard} of {}", entries.len()));
            };
            let c = col as usize;
            if c >= s.columns() {
                return bad(format!("set {id} is in column {col} of a {}-column shard", s.columns()));
            }
            if slots.insert(id, Slot { shard, col }).is_some() {
                return bad(format!("set id {id} appears twice in the id map"));
            }
            s.used[c / 64] |= 1 << (c % 64);
            s.owners[c] = id;
            s.n_used += 1;
        }
        Ok(SlicedIndex {
            params,
            config,
            kernels: Kernels::detect(),
            shards: shards.into_iter().map(Arc::new).collect(),
            slots,
            kmer_length: None,
        })
    }

    /// The k-mer length when this is a sequence index: its keys are the
    /// canonical k-mers of [`crate::kmer`] and queries must use the same
    /// length. `None` for an index of other keys. Saved in the index file.
    pub fn kmer_length(&self) -> Option<KmerLength> {
        self.kmer_length
    }

    /// Records (or clears) the k-mer length of a sequence index. The
    /// filters are not touched: this labels what their keys are.
    pub fn set_kmer_length(&mut self, k: Option<KmerLength>) {
        self.kmer_length = k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::BloomFilter;

    fn sample() -> SlicedIndex {
        let p = BloomParams::new(300, 3).unwrap();
        let mut index = SlicedIndex::new(p);
        for id in 0..40u64 {
            let mut f = BloomFilter::new(p).unwrap();
            f.insert(&id.to_le_bytes());
            index.insert_filter(id * 7, &f).unwrap();
        }
        index.remove_set(14).unwrap();
        index
    }

    fn rebuild(index: &SlicedIndex, entries: &[ColumnEntry]) -> Result<SlicedIndex> {
        let parts =
            index.shard_views().map(|(columns, ones, rows)| ShardParts { columns, ones, rows: rows.clone() }).collect();
        SlicedIndex::from_parts(*index.params(), *index.config(), parts, entries)
    }

    #[test]
    fn parts_round_trip() {
        let index = sample();
        let entries = index.column_entries();
        let back = rebuild(&index, &entries).unwrap();
        back.validate().unwrap();
        assert_eq!(back.column_entries(), entries);
        for key in 0..40u64 {
            assert_eq!(back.query(&key.to_le_bytes()), index.query(&key.to_le_bytes()));
        }
    }

    #[test]
    fn ones_per_filter_matches_filter_cloned() {
        let index = sample();
        let ones = index.ones_per_filter();
        assert_eq!(ones.len(), index.len());
        for (id, n) in ones {
            assert_eq!(n, index.filter_cloned(id).unwrap().count_ones(), "{id}");
        }
    }

    #[test]
    fn bad_entries_are_errors() {
        let index = sample();
        let mut entries = index.column_entries();
        entries.swap(0, 1);
        assert!(matches!(rebuild(&index, &entries), Err(Error::CorruptFile(_))));
        let mut entries = index.column_entries();
        entries[1].0 = entries[0].0;
        assert!(matches!(rebuild(&index, &entries), Err(Error::CorruptFile(_))));
        let mut entries = index.column_entries();
        entries.last_mut().unwrap().2 = 512;
        assert!(matches!(rebuild(&index, &entries), Err(Error::CorruptFile(_))));
        let mut entries = index.column_entries();
        entries.last_mut().unwrap().1 = 3;
        assert!(matches!(rebuild(&index, &entries), Err(Error::CorruptFile(_))));
    }
}

//! [`SlicedIndex`]: the bit-sliced (Flat-Bloofi style) index of many filters.
//!
//! Row `r` holds bit `r` of every filter. A query ANDs the `k` rows of its
//! probe positions and reports the set bits, so one 512-bit operation tests
//! 512 filters.
//!
//! # Layout
//!
//! Columns (filters) live in *shards*. A shard of `w` columns stores its `m`
//! rows row-major: row `r` is bits `[r * w, (r + 1) * w)` of the shard's
//! 64-byte aligned words. `w` is 1, 2, 4, 8, 16 or 32 (*sub-word*: several
//! rows per word), 64, 128 or 256 (*word-packed*: rows of 1, 2 or 4 words)
//! or a multiple of [`SHARD_COLUMN_STEP`] up to
//! [`SlicedConfig::max_shard_columns`] (*line-packed*: whole cache lines per
//! row); see [`narrow`] for the storage rule. A query reads `k` contiguous
//! runs per shard. A new index's first shard is the narrowest that holds
//! what is inserted; the index grows by filling free columns, then by
//! widening a shard (doubling up to 512 columns, then by 512 columns), then
//! by adding a shard; deleted columns are cleared and reused, and a shard
//! that a delete empties is released. A column filled from empty with few
//! bits keeps the rows of its bits (`sliced/logs.rs`), so clearing it touches
//! those rows only.
//!
//! Unused columns are all zero in every row, so queries never need the
//! used-column bitmap.
//!
//! # Queries
//!
//! Row runs are ANDed in 512-bit chunks with an early exit per chunk (see
//! `bloomslice_kernels::arch::all::and_rows`): in a sparse index most chunks
//! die after two rows and the rest of their memory is never read. Batches
//! hash every key first, then walk (key, shard) items, prefetching the row
//! runs of the item `D` ahead into the second-level cache while ANDing the
//! current one; how many rows of a run are prefetched follows the index's
//! measured bit density, so a sparse index does not prefetch rows the early
//! exit would skip. Matching columns become ids through
//! `Kernels::append_mapped_bits`, which does not branch per word. A single
//! key prefetches its runs shard by shard and, in shards of short runs,
//! ANDs them and writes the ids a line at a time in one kernel
//! (`Kernels::and_runs_mapped`), with no buffer in between.
//!
//! An index that is one narrow shard (up to 256 filters) whose rows stay
//! cached (at most [`RESIDENT_ROWS_BYTES`],
//! as [`PartPrefetch`] decides) is read
//! key by key without prefetching, single keys and batches alike: each
//! key's probe positions are computed as its AND reads the rows, so an
//! absent key stops after the few rows that clear it. Its threshold
//! queries count key by key too and stop once no filter can pass.

use core::mem::MaybeUninit;
use std::sync::Arc;

use bloomslice_kernels::{
    Backend, Kernels, WORDS_PER_LINE, arch::all::for_each_set_bit, prefetch_line, prefetch_line_l2,
};
use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::filter::BloomFilter;
use crate::hash::{Key, KeyHash};
use crate::params::BloomParams;
use crate::storage::Words;
use logs::ColumnLogs;

mod logs;
mod persist;
pub(crate) use persist::{ColumnEntry, ShardParts};
pub mod hooks;
pub mod narrow;
mod query;
mod score;
mod served;
mod sets;
mod shard;
mod write;

pub use crate::batch::BatchResults;

use shard::{Reach, Shard, TRANSPOSE_MIN_GROUP};

pub use narrow::{is_shard_width, rows_bytes_for, shard_columns_for, shard_words};

/// Shards of at least this many columns grow in steps of it: one 512-bit
/// chunk (a cache line) per row, the unit the kernels and the early exit
/// work in. Narrower shards double up to it ([`shard_columns_for`]).
pub const SHARD_COLUMN_STEP: usize = 512;

/// Row runs of at most this many cache lines are prefetched for all `k`
/// rows (see `Shard::rows_worth_prefetching`).
const PREFETCH_WHOLE_RUN_LINES: usize = 4;

/// Prefetches the run of `LINES` lines at position `p` of rows `wpr`
/// words wide starting at `base`: addresses only (a prefetch never
/// faults), for a position under `m`.
#[inline(always)]
fn prefetch_run<const LINES: usize>(base: *const u64, wpr: usize, p: u32) {
    let run = base.wrapping_add(p as usize * wpr);
    for line in 0..LINES {
        prefetch_line(run.wrapping_add(line * WORDS_PER_LINE));
    }
}

/// How many rows ahead `Shard::clear_column` prefetches its strided walk
/// (with conditional writes); the fastest of 0, 4, 8, 16, 32 and 64 rows
/// for a delete at N = 100 000 (measured: see `bench/RESULTS.md`, section "Query").
const CLEAR_PREFETCH_ROWS: usize = 16;

/// Upper bound on [`SlicedConfig::max_shard_columns`]: a query keeps one
/// row run's AND result (at most this many bits) in a stack buffer.
pub const MAX_SHARD_COLUMNS: usize = 32_768;

const MAX_SHARD_WORDS: usize = MAX_SHARD_COLUMNS / 64;

/// Rows (bytes, over every part) up to which a collection's queries read
/// its parts without prefetching (see the [`collection`](crate::collection) module documentation).
pub const RESIDENT_ROWS_BYTES: usize = 4 << 20;

/// Whether a collection's queries prefetch its parts' rows (a setting of
/// each index: [`SlicedConfig::part_prefetch`],
/// [`SetIndex::set_part_prefetch`](crate::SetIndex::set_part_prefetch)). Never changes a result, only speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PartPrefetch {
    /// Prefetch when the parts' rows total more than
    /// [`RESIDENT_ROWS_BYTES`] (the default).
    #[default]
    Auto,
    /// Always prefetch each part's rows before reading them.
    Always,
    /// Never prefetch; read every part's rows as in cache.
    Never,
}

impl PartPrefetch {
    /// The lowercase name of the mode (what [`PartPrefetch::from_name`] reads).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PartPrefetch::Auto => "auto",
            PartPrefetch::Always => "always",
            PartPrefetch::Never => "never",
        }
    }

    /// Parses `auto`, `always` or `never` (any case, surrounding spaces
    /// ignored).
    #[must_use]
    pub fn from_name(name: &str) -> Option<PartPrefetch> {
        [PartPrefetch::Auto, PartPrefetch::Always, PartPrefetch::Never]
            .into_iter()
            .find(|mode| mode.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether rows of `bytes` in total are read without prefetching in
    /// this mode.
    #[inline]
    pub(crate) fn resident(self, bytes: usize) -> bool {
        match self {
            PartPrefetch::Always => false,
            PartPrefetch::Never => true,
            PartPrefetch::Auto => bytes <= RESIDENT_ROWS_BYTES,
        }
    }
}

/// Tuning knobs of a [`SlicedIndex`]. The defaults were chosen by
/// measurement with the `paper` benchmark (see `bench/RESULTS.md`, section "Query").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlicedConfig {
    /// Widest shard, in columns; rounded up to a multiple of
    /// [`SHARD_COLUMN_STEP`] and capped at [`MAX_SHARD_COLUMNS`]. Wider
    /// shards mean fewer, longer row runs per query; narrower ones mean less
    /// copying when a shard is widened. Default 16 384: faster than 4096 on
    /// `full` N = 10 000, `paper` N = 10 000 and `large` (measured: see
    /// `bench/RESULTS.md`, section "Query").
    pub max_shard_columns: usize,
    /// How far ahead queries prefetch whole row runs into the second-level
    /// cache: in [`SlicedIndex::query_batch`], work items (one key in one
    /// shard); for a single key, shards; in scoring, keys. The next item's
    /// first lines are prefetched into the first-level cache as well.
    /// Default 4.
    pub prefetch_distance: usize,
    /// The cache level that scoring's look-ahead prefetches fill (see
    /// [`LookAhead`](crate::kernels::LookAhead)). Default: the choice
    /// measured faster on this CPU ([`LookAhead::detect`](crate::kernels::LookAhead::detect)).
    /// Only speed depends on it; index files do not record it.
    pub look_ahead: crate::kernels::LookAhead,
    /// Whether queries of an index of one narrow shard read it without
    /// prefetching when its rows are few (see
    /// [`PartPrefetch`]). Default
    /// [`PartPrefetch::Auto`]. Only
    /// speed depends on it; index files do not record it.
    pub part_prefetch: PartPrefetch,
}

impl Default for SlicedConfig {
    fn default() -> Self {
        SlicedConfig {
            max_shard_columns: 16_384,
            prefetch_distance: 4,
            look_ahead: crate::kernels::LookAhead::default(),
            part_prefetch: PartPrefetch::default(),
        }
    }
}

impl SlicedConfig {
    fn normalized(self) -> Self {
        let cols = self.max_shard_columns.clamp(SHARD_COLUMN_STEP, MAX_SHARD_COLUMNS);
        SlicedConfig {
            max_shard_columns: cols.next_multiple_of(SHARD_COLUMN_STEP),
            prefetch_distance: self.prefetch_distance.min(64),
            ..self
        }
    }
}

/// Where a filter's column lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    shard: u32,
    col: u32,
}

/// Bit-sliced index of Bloom filters that share one [`BloomParams`].
///
/// ```
/// use bloomslice::{BloomFilter, BloomParams, SlicedIndex};
///
/// let params = BloomParams::for_capacity(1_000, 0.01)?;
/// let mut index = SlicedIndex::new(params);
/// let mut fruit = BloomFilter::new(params)?;
/// fruit.insert("apple");
/// index.insert_filter(7, &fruit)?;
/// index.insert_key(7, "pear")?;
/// assert_eq!(index.query("apple"), vec![7]);
/// assert_eq!(index.query("pear"), vec![7]);
/// assert!(index.query("granite").is_empty() || index.query("granite") == vec![7]);
/// # Ok::<(), bloomslice::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SlicedIndex {
    params: BloomParams,
    config: SlicedConfig,
    kernels: &'static Kernels,
    /// Shards behind `Arc`: cloning an index shares them, and a write
    /// copies only the shard it touches (fallibly, before changing anything).
    shards: Vec<Arc<Shard>>,
    slots: HashMap<u64, Slot>,
    /// The k-mer length of a sequence index (see [`crate::kmer`]), saved
    /// in the file header.
    kmer_length: Option<crate::kmer::KmerLength>,
}

id_verbs!(SlicedIndex, slots, ids);
key_verbs!(SlicedIndex: crate::error::Error, query);

impl SlicedIndex {
    /// An empty index with the default configuration and the detected kernels.
    pub fn new(params: BloomParams) -> Self {
        Self::with_config(params, SlicedConfig::default())
    }

    /// An empty index with the given configuration.
    pub fn with_config(params: BloomParams, config: SlicedConfig) -> Self {
        SlicedIndex {
            params,
            config: config.normalized(),
            kernels: Kernels::detect(),
            shards: Vec::new(),
            slots: HashMap::new(),
            kmer_length: None,
        }
    }

    /// The parameters every filter of this index shares.
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// The configuration (normalised).
    pub fn config(&self) -> &SlicedConfig {
        &self.config
    }

    /// The kernel table queries use.
    pub fn kernels(&self) -> &'static Kernels {
        self.kernels
    }

    /// Uses another kernel table (for example [`Kernels::scalar`] to measure
    /// the scalar fallback). Answers do not change.
    pub fn set_kernels(&mut self, kernels: &'static Kernels) {
        self.kernels = kernels;
    }

    /// Sets [`SlicedConfig::look_ahead`]. Answers do not change.
    pub fn set_look_ahead(&mut self, look_ahead: crate::kernels::LookAhead) {
        self.config.look_ahead = look_ahead;
    }

    /// Sets [`SlicedConfig::part_prefetch`]. Answers do not change.
    pub fn set_part_prefetch(&mut self, mode: PartPrefetch) {
        self.config.part_prefetch = mode;
    }

    /// Columns allocated over all shards (used or free).
    pub fn columns(&self) -> usize {
        self.shards.iter().map(|s| s.columns()).sum()
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Set bits over all rows (all filters).
    pub fn count_ones(&self) -> u64 {
        self.shards.iter().map(|s| s.ones).sum()
    }

    /// Exact bytes of heap and inline memory this index holds: row storage,
    /// column maps, the shard list and the id map. Shards shared with a
    /// clone of this index are counted in full by each.
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.shards.capacity() * core::mem::size_of::<Arc<Shard>>()
            + self
                .shards
                .iter()
                .map(|s| {
                    core::mem::size_of::<Shard>()
                        + s.rows.allocated_bytes()
                        + s.owners.capacity() * 8
                        + s.used.capacity() * 8
                        + s.logs.bytes()
                })
                .sum::<usize>()
            + self.slots.allocation_size()
    }

    /// Bytes of row storage over all shards (the bulk of
    /// [`SlicedIndex::memory_bytes`] and of an index file): each shard's
    /// [`shard_words`] words.
    pub fn rows_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.rows.len() * 8).sum()
    }

    /// Bytes of this index's rows that sit on transparent huge pages now
    /// (owned rows of at least [`crate::storage::HUGE_PAGE_BYTES`] are
    /// advised to; see [`crate::storage::huge_page_bytes_of`] for how the
    /// figure is taken). Reads `/proc/self/smaps`: for reports, not queries.
    pub fn huge_page_bytes(&self) -> usize {
        let ranges: Vec<(usize, usize)> = self.shards.iter().map(|s| s.rows.byte_range()).collect();
        crate::storage::huge_page_bytes_of(&ranges)
    }

    /// Reads one word of every cache line of what every query reads
    /// besides its rows: each shard's used-column bitmap, then each shard's
    /// column-to-id table, in shard order, stopping at `budget` bytes.
    /// Returns the bytes covered.
    ///
    /// A [`ConcurrentIndex`](crate::ConcurrentIndex) calls it on the copy it
    /// is about to publish: readers move to that copy at once, and its
    /// tables, last read by them a publish ago, have since left their
    /// caches, so that their first queries on it would wait for memory.
    /// Read by the writer, they come from its caches instead (measured:
    /// `bench/RESULTS.md`, section "Latency").
    pub(crate) fn warm_query_tables(&self, budget: usize) -> usize {
        let mut left = budget;
        let mut sum = 0u64;
        let tables = self.shards.iter().map(|s| &s.used[..]).chain(self.shards.iter().map(|s| &s.owners[..]));
        for table in tables {
            let words = table.len().min(left / 8);
            sum = table[..words].iter().step_by(WORDS_PER_LINE).fold(sum, |a, &w| a.wrapping_add(w));
            left -= words * 8;
            if words < table.len() {
                break;
            }
        }
        core::hint::black_box(sum);
        budget - left
    }

    /// Bytes of rows one query must read (all `k` runs of every shard),
    /// before early exit.
    pub fn bytes_per_query(&self) -> usize {
        self.shards.iter().map(|s| s.row_bytes()).sum::<usize>() * self.params.k() as usize
    }

    fn slot(&self, id: u64) -> Result<Slot> {
        self.slots.get(&id).copied().ok_or(Error::UnknownId(id))
    }

    /// The filter stored under `id`, rebuilt from its column.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`], or [`Error::CapacityOverflow`] if the filter
    /// cannot be allocated.
    pub fn filter_cloned(&self, id: u64) -> Result<BloomFilter> {
        let slot = self.slot(id)?;
        let s = &self.shards[slot.shard as usize];
        let mut filter = BloomFilter::new(self.params)?;
        let out = filter.words_mut();
        for r in 0..self.params.m() as usize {
            let (word, bit) = s.bit_at(r, slot.col as usize);
            out[r / 64] |= u64::from(s.rows[word] & bit != 0) << (r % 64);
        }
        Ok(filter)
    }

    /// Checks every internal invariant; tests and fuzzers call it after each
    /// operation. Costs a full scan of the rows.
    ///
    /// # Errors
    ///
    /// A description of the first broken invariant.
    pub fn validate(&self) -> crate::error::Result<()> {
        let m = self.params.m() as usize;
        let mut used_total = 0;
        for (si, s) in self.shards.iter().enumerate() {
            if !is_shard_width(s.cols, self.config.max_shard_columns) || s.wpr != s.cols.div_ceil(64) {
                return Err(invalid!("shard {si}: bad width {} columns ({} words)", s.cols, s.wpr));
            }
            if Some(s.rows.len()) != shard_words(m, s.cols) || s.owners.len() != s.columns() || s.used.len() != s.wpr {
                return Err(invalid!("shard {si}: buffer sizes disagree with width"));
            }
            if s.sub_word() && s.used[0] >> s.cols != 0 {
                return Err(invalid!("shard {si}: used bitmap has columns past the width"));
            }
            if !(s.rows.as_ptr() as usize).is_multiple_of(64) {
                return Err(invalid!("shard {si}: rows not 64-byte aligned"));
            }
            let n_used = s.used.iter().map(|w| w.count_ones() as usize).sum::<usize>();
            if n_used != s.n_used {
                return Err(invalid!("shard {si}: n_used {} but bitmap has {n_used}", s.n_used));
            }
            used_total += n_used;
            let ones = s.rows.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
            if ones != s.ones {
                return Err(invalid!("shard {si}: ones {} but rows hold {ones}", s.ones));
            }
            if s.line_packed() {
                for r in 0..m {
                    for (w, &used) in s.rows[r * s.wpr..][..s.wpr].iter().zip(&s.used) {
                        if w & !used != 0 {
                            return Err(invalid!("shard {si}: row {r} has bits in unused columns"));
                        }
                    }
                }
            } else if let Some(r) = narrow::first_stray_row(s, m) {
                return Err(invalid!("shard {si}: row {r} has bits in unused columns or padding"));
            }
            let mut bad = None;
            for_each_set_bit(&s.used, |c| {
                let expect = Slot { shard: si as u32, col: c as u32 };
                if self.slots.get(&s.owners[c]) != Some(&expect) {
                    bad = Some(c);
                }
            });
            if let Some(c) = bad {
                return Err(invalid!("shard {si}: column {c} owner {} not mapped back", s.owners[c]));
            }
            s.logs
                .check(
                    m,
                    |c| s.used[c / 64] >> (c % 64) & 1 == 1,
                    |r, c| {
                        let (word, bit) = s.bit_at(r, c);
                        s.rows[word] & bit != 0
                    },
                )
                .map_err(|e| invalid!("shard {si}: {e}"))?;
        }
        if used_total != self.slots.len() {
            return Err(invalid!("{used_total} used columns but {} ids", self.slots.len()));
        }
        Ok(())
    }
}

/// Shard `si` of `shards`, writable (see [`SlicedIndex::shard_mut`]); a
/// free function so that callers can keep borrowing the index's other
/// fields.
fn writable(shards: &mut [Arc<Shard>], si: usize) -> Result<&mut Shard> {
    let arc = &mut shards[si];
    if Arc::get_mut(arc).is_none() {
        *arc = Arc::new(arc.try_clone()?);
    }
    let shard = Arc::get_mut(arc).ok_or(Error::CapacityOverflow("shard still shared after copying"))?;
    shard.rows.make_owned()?;
    Ok(shard)
}

#[cfg(test)]
mod tests {
    index_test_module!(2000, 4);

    fn listed(index: &SlicedIndex) -> usize {
        index.shards.iter().map(|s| s.logs.listed()).sum()
    }

    /// Every write that sets bits keeps the column logs right (`validate`
    /// checks that each logged column's bits are listed), through widening,
    /// shard copies and every hook; deletes then leave no bit behind.
    #[test]
    fn column_logs_follow_every_write() {
        let p = params();
        let mut index = SlicedIndex::new(p);
        for id in 0..600u64 {
            index.insert_filter(id, &filter([id])).unwrap();
        }
        index.validate().unwrap();
        assert!(listed(&index) >= 600 * 3, "one-key columns are logged through widening");
        let shared = index.clone();
        for id in (0..600u64).step_by(5) {
            index.update_filter(id, &filter([id + 1000, id + 2000])).unwrap();
            index.insert_key_hash(id + 1, p.hash(&(id + 3000).to_le_bytes())).unwrap();
            let probes = p.probes(p.hash(&(id + 4000).to_le_bytes()));
            index.set_column_bits(id + 2, &probes, |_| true).unwrap();
            index.set_column_bits(id + 2, &probes[..2], |_| false).unwrap();
            index.insert_key_hash_with_hashes(id + 3, p.hash(&(id + 5000).to_le_bytes()), 6).unwrap();
            index.replace_column(id + 4, &filter([id + 6000])).unwrap();
            index.validate().unwrap();
        }
        // A column too dense for a log, and one whose log passes its cap.
        index.replace_column(7, &filter(0..100)).unwrap();
        for key in 0..30u64 {
            index.insert_key_hash(8, p.hash(&(key + 7000).to_le_bytes())).unwrap();
        }
        index.validate().unwrap();
        shared.validate().unwrap();
        assert_eq!(shared.query(&5u64.to_le_bytes()), vec![5], "the clone shares nothing written since");
        for id in 0..600u64 {
            index.remove_set(id).unwrap();
            if id % 97 == 0 {
                index.validate().unwrap();
            }
        }
        index.insert_filter(1, &BloomFilter::new(p).unwrap()).unwrap();
        assert_eq!(listed(&index), 0);
        for key in (0..8000u64).step_by(7) {
            assert!(index.query(&key.to_le_bytes()).is_empty(), "key {key}: a deleted column left a bit");
        }
        index.validate().unwrap();
    }

    #[test]
    fn insert_query_delete_reuse() {
        let mut index = SlicedIndex::new(params());
        for id in 0..1500u64 {
            index.insert_filter(id * 3, &filter([id])).unwrap();
        }
        index.validate().unwrap();
        assert_eq!(index.len(), 1500);
        assert_eq!(index.columns(), 1536);
        for id in 0..1500u64 {
            assert!(index.query(&id.to_le_bytes()).contains(&(id * 3)));
        }
        for id in (0..1500u64).step_by(2) {
            index.remove_set(id * 3).unwrap();
        }
        index.validate().unwrap();
        assert_eq!(index.columns(), 1536, "freed columns are kept for reuse");
        index.insert_filter(1, &filter([7])).unwrap();
        assert_eq!(index.columns(), 1536);
        assert!(index.query(&7u64.to_le_bytes()).contains(&1));
        index.validate().unwrap();
    }

    /// The writer's warm-up before a publish covers every shard's used
    /// bitmap and column ids, and stops at its budget.
    #[test]
    fn warming_covers_every_query_table_within_its_budget() {
        let cfg = SlicedConfig { max_shard_columns: 512, ..SlicedConfig::default() };
        let mut index = SlicedIndex::with_config(params(), cfg);
        assert_eq!(index.warm_query_tables(usize::MAX), 0);
        for id in 0..1200u64 {
            index.insert_filter(id, &filter([id])).unwrap();
        }
        assert_eq!(index.shard_count(), 3);
        let tables: usize = index.shards.iter().map(|s| (s.used.len() + s.owners.len()) * 8).sum();
        assert_eq!(index.warm_query_tables(usize::MAX), tables);
        assert_eq!(index.warm_query_tables(tables), tables);
        assert_eq!(index.warm_query_tables(1000), 1000);
        assert_eq!(index.warm_query_tables(7), 0);
    }

    #[test]
    fn empty_shards_are_released() {
        let cfg = SlicedConfig { max_shard_columns: 512, ..SlicedConfig::default() };
        let mut index = SlicedIndex::with_config(params(), cfg);
        for id in 0..1200u64 {
            index.insert_filter(id, &filter([id])).unwrap();
        }
        assert_eq!(index.shard_count(), 3);
        for id in 0..512u64 {
            index.remove_set(id).unwrap();
        }
        index.validate().unwrap();
        assert_eq!(index.shard_count(), 2);
        for id in 512..1200u64 {
            assert!(index.query(&id.to_le_bytes()).contains(&id), "{id}");
        }
        for id in 512..1200u64 {
            index.remove_set(id).unwrap();
        }
        assert_eq!(index.shard_count(), 0);
        assert!(index.is_empty());
        index.validate().unwrap();
    }

    #[test]
    fn errors_leave_the_index_unchanged() {
        let mut index = SlicedIndex::new(params());
        index.insert_filter(1, &filter([1])).unwrap();
        let before = index.filter_cloned(1).unwrap();
        crate::testing::assert_write_errors(&mut index, 1, 2);
        let seeded = BloomFilter::new(params().with_seed(9)).unwrap();
        assert!(matches!(index.insert_filter(3, &seeded), Err(Error::ParamsMismatch { .. })));
        assert_eq!(index.insert_filters(&[(5, &filter([5])), (5, &filter([6]))]), Err(Error::DuplicateId(5)));
        assert!(matches!(index.insert_words(4, &params(), &[0; 3]), Err(Error::WordCountMismatch { .. })));
        assert_eq!(index.len(), 1);
        assert_eq!(index.filter_cloned(1).unwrap(), before);
        index.validate().unwrap();
    }

    #[test]
    fn get_update_and_insert_key_round_trip() {
        let mut index = SlicedIndex::new(params());
        let f = filter(0..50);
        index.insert_filter(9, &f).unwrap();
        assert_eq!(index.filter_cloned(9).unwrap(), f);
        let g = filter(50..80);
        index.update_filter(9, &g).unwrap();
        let mut fg = f.clone();
        fg.union_with(&g).unwrap();
        assert_eq!(index.filter_cloned(9).unwrap(), fg);
        index.insert_key(9, "late").unwrap();
        fg.insert("late");
        assert_eq!(index.filter_cloned(9).unwrap(), fg);
        assert_eq!(index.count_ones(), fg.count_ones());
        index.validate().unwrap();
    }

    #[test]
    fn batch_equals_single_queries_for_every_backend() {
        let mut index = SlicedIndex::new(params());
        for id in 0..700u64 {
            index.insert_filter(id, &filter(id * 10..id * 10 + 10)).unwrap();
        }
        let keys: Vec<[u8; 8]> = (0..9000u64).map(|k| k.to_le_bytes()).collect();
        for kernels in Kernels::available() {
            index.set_kernels(kernels);
            let mut results = BatchResults::new();
            index.query_batch(&keys, &mut results);
            assert_eq!(results.len(), keys.len());
            for (key, got) in keys.iter().zip(results.iter()) {
                assert_eq!(got, index.query(key), "{}", kernels.backend());
            }
            let mut empty = BatchResults::new();
            index.query_batch::<[u8; 8]>(&[], &mut empty);
            assert!(empty.is_empty());
        }
    }

    #[test]
    fn memory_is_within_bound() {
        let p = BloomParams::for_capacity(10_000, 0.01).unwrap();
        let mut index = SlicedIndex::new(p);
        let f = BloomFilter::new(p).unwrap();
        for id in 0..1000 {
            index.insert_filter(id, &f).unwrap();
        }
        let rows = p.m() as f64 * 1024.0 / 8.0;
        let id_map = index.slots.allocation_size() as f64;
        assert!((index.memory_bytes() as f64) <= 1.05 * rows + id_map, "{}", index.memory_bytes());
    }

    #[test]
    fn transpose64_matches_naive() {
        let mut a = [0u64; 64];
        let mut x = 0x1234_5678_9abc_def1u64;
        for w in &mut a {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *w = x;
        }
        let mut t = a;
        shard::transpose64(&mut t);
        for (r, row) in t.iter().enumerate() {
            for (c, col) in a.iter().enumerate() {
                assert_eq!(row >> c & 1, col >> r & 1, "({r}, {c})");
            }
        }
    }

    #[test]
    fn bulk_insert_equals_one_by_one() {
        let p = BloomParams::new(700, 3).unwrap();
        let filters: Vec<BloomFilter> =
            (0..300u64).map(|i| crate::filter::filter_of_u64_keys(p, i * 5..i * 5 + 20)).collect();
        let mut one = SlicedIndex::new(p);
        let mut bulk = SlicedIndex::new(p);
        one.insert_filter(1000, &filters[0]).unwrap();
        bulk.insert_filter(1000, &filters[0]).unwrap();
        for (i, f) in filters.iter().enumerate() {
            one.insert_filter(i as u64, f).unwrap();
        }
        let items: Vec<_> = filters.iter().enumerate().map(|(i, f)| (i as u64, f)).collect();
        bulk.insert_filters(&items).unwrap();
        bulk.validate().unwrap();
        for (i, f) in filters.iter().enumerate() {
            assert_eq!(&bulk.filter_cloned(i as u64).unwrap(), f);
        }
        assert_eq!(one.count_ones(), bulk.count_ones());
    }

    #[test]
    fn prefetch_policy_follows_density() {
        // Short runs: every row.
        let mut s = Shard::new(1000, 512).unwrap();
        assert_eq!(s.rows_worth_prefetching(1000, 7), 7);
        // Long runs: the expected rows read per chunk, plus one.
        let mut s4 = Shard::new(1000, 4096).unwrap();
        assert_eq!(s4.rows_worth_prefetching(1000, 7), 2);
        s4.ones = 1000 * 4096 / 2;
        assert_eq!(s4.rows_worth_prefetching(1000, 7), 7);
        s4.ones = 1000 * 4096 / 140;
        assert_eq!(s4.rows_worth_prefetching(1000, 7), 3);
        s.ones = 1;
        assert_eq!(s.rows_worth_prefetching(1000, 7), 7);
    }
}

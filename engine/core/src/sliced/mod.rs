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
//! cached (at most [`RESIDENT_ROWS_BYTES`](crate::collection::RESIDENT_ROWS_BYTES),
//! as [`PartPrefetch`](crate::collection::PartPrefetch) decides) is read
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
mod score;
mod served;

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
}

impl Default for SlicedConfig {
    fn default() -> Self {
        SlicedConfig { max_shard_columns: 16_384, prefetch_distance: 4 }
    }
}

impl SlicedConfig {
    fn normalized(self) -> Self {
        let cols = self.max_shard_columns.clamp(SHARD_COLUMN_STEP, MAX_SHARD_COLUMNS);
        SlicedConfig {
            max_shard_columns: cols.next_multiple_of(SHARD_COLUMN_STEP),
            prefetch_distance: self.prefetch_distance.min(64),
        }
    }
}

/// Where a filter's column lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    shard: u32,
    col: u32,
}

/// Not `Clone`: shards are shared behind `Arc`, and a shard is copied only
/// by [`SlicedIndex::shard_mut`], fallibly.
#[derive(Debug)]
struct Shard {
    /// Columns: a width of [`is_shard_width`].
    cols: usize,
    /// Words per row of a word- or line-packed shard (`cols / 64`); 1 for a
    /// sub-word shard (`cols < 64`, several rows per word). Also the length
    /// of `used`.
    wpr: usize,
    /// [`shard_words`]`(m, cols)` words: row `r` is bits
    /// `[r * cols, (r + 1) * cols)`, then zero padding to a cache line.
    rows: Words,
    /// Local column -> filter id (meaningful where `used` is set).
    owners: Vec<u64>,
    /// Used-column bitmap, `wpr` words.
    used: Vec<u64>,
    n_used: usize,
    /// Set bits in `rows`, for the prefetch policy and fill statistics.
    ones: u64,
    /// The rows of the bits of columns filled from empty with few bits
    /// (see [`logs`]): such a column is cleared at those rows only.
    logs: ColumnLogs,
}

impl Shard {
    fn new(m: usize, columns: usize) -> Result<Shard> {
        let wpr = columns.div_ceil(64);
        let len = shard_words(m, columns).ok_or(Error::CapacityOverflow("shard size"))?;
        Ok(Shard {
            cols: columns,
            wpr,
            rows: Words::zeroed(len)?,
            owners: vec![0; columns],
            used: vec![0; wpr],
            n_used: 0,
            ones: 0,
            logs: ColumnLogs::new(m, len),
        })
    }

    /// Fills the empty column `col` with the bits of `filter`, keeping the
    /// rows of its bits in a log when they are few (see [`logs`]).
    fn fill_empty_column(&mut self, col: usize, filter: &BloomFilter) -> u64 {
        debug_assert!(!self.logs.has(col), "an empty column has no log");
        let log = self.logs.start(filter.count_ones() as usize);
        self.or_column_logged(col, filter, log)
    }

    fn columns(&self) -> usize {
        self.cols
    }

    /// Whether rows are narrower than a word (several rows per word).
    #[inline]
    fn sub_word(&self) -> bool {
        self.cols < 64
    }

    /// Whether rows are whole cache lines (the kernels' 512-bit chunks).
    #[inline]
    fn line_packed(&self) -> bool {
        self.wpr.is_multiple_of(WORDS_PER_LINE) && !self.sub_word()
    }

    /// 512-column chunks per row: 0 for a shard narrower than a line.
    #[inline]
    fn chunks(&self) -> usize {
        if self.line_packed() { self.wpr / WORDS_PER_LINE } else { 0 }
    }

    /// The word holding bit (row `r`, column `col`) and that bit's mask.
    #[inline]
    fn bit_at(&self, r: usize, col: usize) -> (usize, u64) {
        let b = r * self.cols + col;
        (b / 64, 1u64 << (b % 64))
    }

    /// Bytes of one row (the bytes of a run a query reads).
    fn row_bytes(&self) -> usize {
        self.cols.div_ceil(8)
    }

    /// A copy that shares a mapped window's map (rows are copied only when
    /// they are owned).
    fn try_clone(&self) -> Result<Shard> {
        let mut owners = Vec::new();
        owners.try_reserve_exact(self.owners.len()).map_err(|_| Error::CapacityOverflow("shard owners"))?;
        owners.extend_from_slice(&self.owners);
        Ok(Shard {
            cols: self.cols,
            wpr: self.wpr,
            rows: self.rows.try_clone()?,
            owners,
            used: self.used.clone(),
            n_used: self.n_used,
            ones: self.ones,
            logs: self.logs.clone(),
        })
    }

    fn first_free(&self) -> Option<usize> {
        self.used
            .iter()
            .enumerate()
            .find(|(_, w)| **w != !0)
            .map(|(i, w)| i * 64 + w.trailing_ones() as usize)
            .filter(|&c| c < self.cols)
    }

    /// A copy of this shard widened to `columns` columns.
    fn widened(&self, m: usize, columns: usize) -> Result<Shard> {
        let mut wide = Shard::new(m, columns)?;
        if self.sub_word() {
            narrow::widen_sub_word(&self.rows, self.cols, &mut wide.rows, columns, m);
        } else {
            for r in 0..m {
                wide.rows[r * wide.wpr..][..self.wpr].copy_from_slice(&self.rows[r * self.wpr..][..self.wpr]);
            }
        }
        wide.owners[..self.columns()].copy_from_slice(&self.owners);
        wide.used[..self.wpr].copy_from_slice(&self.used);
        wide.n_used = self.n_used;
        wide.ones = self.ones;
        wide.logs = self.logs.widened(wide.rows.len());
        Ok(wide)
    }

    /// Sets the bits of `filter` in column `col`; returns the bits newly
    /// set (listed in the column's log if it has one).
    fn or_column(&mut self, col: usize, filter: &BloomFilter) -> u64 {
        let log = self.logs.take(col);
        self.or_column_logged(col, filter, log)
    }

    /// [`Shard::or_column`] with the column's log taken out: the rows of
    /// the bits newly set are added to it, and it is put back.
    fn or_column_logged(&mut self, col: usize, filter: &BloomFilter, mut log: Option<Vec<u32>>) -> u64 {
        let mut new = 0;
        let cols = self.cols;
        let rows = &mut self.rows;
        for_each_set_bit(filter.words(), |r| {
            let b = r * cols + col;
            let (w, bit) = (&mut rows[b / 64], 1u64 << (b % 64));
            if *w & bit == 0 {
                new += 1;
                *w |= bit;
                if let Some(log) = &mut log {
                    log.push(r as u32);
                }
            }
        });
        self.ones += new;
        if let Some(log) = log {
            self.logs.put(col, log);
        }
        new
    }

    /// ORs up to 64 filters into the 64 columns of row word `word` (filter
    /// `j` of `group` goes to column `64 * word + j`), one 64x64 bit
    /// transpose per 64 rows. Word- and line-packed shards only (`m` rows).
    fn or_word_group(&mut self, m: usize, word: usize, group: &[Option<&BloomFilter>; 64], filter_words: usize) {
        debug_assert!(!self.sub_word());
        let mut block = [0u64; 64];
        let mut new = 0u64;
        for i in 0..filter_words {
            for (b, f) in block.iter_mut().zip(group) {
                *b = f.map_or(0, |f| f.words()[i]);
            }
            transpose64(&mut block);
            for (r, &bits) in block.iter().enumerate().take(m.saturating_sub(i * 64)) {
                let w = &mut self.rows[(i * 64 + r) * self.wpr + word];
                new += u64::from((bits & !*w).count_ones());
                *w |= bits;
            }
        }
        self.ones += new;
    }

    /// Clears column `col` in every row: the rows of its log if it has one,
    /// else all `m`. The column is left without a log.
    fn clear_column(&mut self, m: usize, col: usize) {
        let mut cleared = 0;
        if let Some(log) = self.logs.take(col) {
            for r in log {
                let (word, bit) = self.bit_at(r as usize, col);
                let w = &mut self.rows[word];
                cleared += u64::from(*w & bit != 0);
                *w &= !bit;
            }
            self.ones = self.ones.saturating_sub(cleared);
            return;
        }
        let cols = self.cols;
        let base = self.rows.as_ptr();
        for r in 0..m {
            // The column is one bit in each of m rows, `cols` bits apart:
            // a long strided walk, so fetch ahead of it.
            prefetch_line(base.wrapping_add(((r + CLEAR_PREFETCH_ROWS) * cols + col) / 64));
            let b = r * cols + col;
            let (w, bit) = (&mut self.rows[b / 64], 1u64 << (b % 64));
            // Write only words that change: most rows of a sparse filter
            // lack the bit, and an unwritten line is never written back.
            if *w & bit != 0 {
                cleared += 1;
                *w &= !bit;
            }
        }
        // Saturating: an index mapped from a file with deferred checks
        // carries the file's bit count until it is verified.
        self.ones = self.ones.saturating_sub(cleared);
    }

    /// Prefetches the first `rows` row runs of one key in this shard, from
    /// word `from` of each run on (scoring skips dead chunks; queries pass
    /// 0): `Far` is issued [`SlicedConfig::prefetch_distance`] work items
    /// ahead and brings the rest of each long run into the second-level
    /// cache (`prefetcht1`); `Near` is issued one item ahead and brings one
    /// line of each long run into the first-level cache. Short runs are
    /// prefetched whole into the first-level cache at the far distance only.
    ///
    /// Measured on `full` N = 10 000 (1 280-byte runs; `bench/RESULTS.md`, section "Query"):
    /// whole runs into the first-level cache queue behind its few miss
    /// buffers and were slower than first lines alone, while whole runs
    /// into the second-level cache, far ahead, let all `k` runs stream.
    #[inline]
    fn prefetch(&self, positions: &[u32], rows: usize, from: usize, reach: Reach) {
        let base = self.rows.as_ptr();
        if self.sub_word() {
            if reach == Reach::Far {
                for &p in &positions[..rows] {
                    prefetch_line(base.wrapping_add(p as usize * self.cols / 64));
                }
            }
            return;
        }
        let short = self.short_runs();
        let (from, to) = match (short, reach) {
            (true, Reach::Near) => return,
            (true, Reach::Far) => (0, self.wpr),
            (false, Reach::Far) => (from, self.wpr),
            (false, Reach::Near) => (from, (from + WORDS_PER_LINE).min(self.wpr)),
        };
        if !short && reach == Reach::Far {
            self.prefetch_across_runs(positions, rows, from, to);
            return;
        }
        for &p in &positions[..rows] {
            // Addresses only: a prefetch never faults, and every position
            // is `< m` so the run lies inside `rows` anyway.
            let run = base.wrapping_add(p as usize * self.wpr);
            let mut line = from;
            while line < to {
                prefetch_line(run.wrapping_add(line));
                line += WORDS_PER_LINE;
            }
        }
    }

    /// Prefetches words `from..to` of the first `rows` runs at `positions`
    /// into the second-level cache, line by line across the runs, in the
    /// order the AND reads them: the first chunk's lines are the first
    /// requested, so the AND can start while the later lines are still in
    /// flight (run by run, the first chunk waited for the last run's first
    /// line, behind all the other runs' lines). Two cheaper loops measured
    /// slower on `full` N = 10 000 (batched 580-640 ns a key against
    /// 480-576): four lines of a run per step, and run starts computed once
    /// and padded to four. Out of line, so that the short-run prefetch
    /// stays inlined in the batch loop (inlining both cost 2.4% more
    /// instructions at N = 1 000).
    #[inline(never)]
    fn prefetch_across_runs(&self, positions: &[u32], rows: usize, from: usize, to: usize) {
        let base = self.rows.as_ptr();
        let mut line = from;
        while line < to {
            for &p in &positions[..rows] {
                // Addresses only: a prefetch never faults, and every
                // position is `< m` so the run lies inside `rows`.
                prefetch_line_l2(base.wrapping_add(p as usize * self.wpr + line));
            }
            line += WORDS_PER_LINE;
        }
    }

    /// Whether this shard's row runs are short enough (at most
    /// [`PREFETCH_WHOLE_RUN_LINES`] lines) to be prefetched whole into the
    /// first-level cache.
    #[inline]
    fn short_runs(&self) -> bool {
        self.wpr / WORDS_PER_LINE <= PREFETCH_WHOLE_RUN_LINES
    }

    /// The share of this shard's row bits that are set (`m` rows).
    #[inline]
    fn density(&self, m: usize) -> f64 {
        self.ones as f64 / (m as f64 * self.columns() as f64)
    }

    /// Of the `rows` rows a batch prefetches far ahead in this shard, how
    /// many to issue before an item's AND; the rest go between its AND and
    /// its extraction (`SlicedIndex::run_batch`). A third when a key is
    /// expected to match at least one column here (a dense shard: there is
    /// an extraction to overlap with), all of them otherwise.
    fn far_first_rows(&self, rows: usize, m: usize, k: usize) -> usize {
        let matches = self.density(m).powi(k as i32) * self.n_used as f64;
        if matches >= 1.0 { rows.div_ceil(3) } else { rows }
    }

    /// How many of a query's `k` rows are worth prefetching in this shard.
    ///
    /// The early exit reads, per 512-bit chunk, `1 + sum_i P(chunk alive
    /// after i rows)` rows on average, from the shard's bit density. A
    /// present key also keeps its owner's chunk alive through all `k` rows,
    /// so one row more is prefetched; and short runs (at most
    /// [`PREFETCH_WHOLE_RUN_LINES`] lines) are prefetched whole, since the
    /// extra lines are few and half of a typical workload's keys need them.
    /// On `paper` N = 1000 (2-line runs) prefetching all rows was faster
    /// than the density estimate alone; on `paper` N = 10 000 (20-line runs)
    /// the estimate plus one row was best (measured: see `bench/RESULTS.md`, section "Query").
    fn rows_worth_prefetching(&self, m: usize, k: usize) -> usize {
        if self.short_runs() {
            return k;
        }
        let density = self.density(m);
        let mut expected = 1.0;
        let mut all_rows = density;
        for _ in 1..k {
            // P(a 512-column chunk still has a bit after ANDing i rows).
            expected += 1.0 - (1.0 - all_rows).powi(SHARD_COLUMN_STEP as i32);
            all_rows *= density;
        }
        ((expected - 0.05).ceil() as usize + 1).clamp(1, k)
    }
}

/// Which cache a row prefetch aims at (see `SlicedIndex::prefetch`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Whole runs into the second-level cache, far ahead.
    Far,
    /// First lines into the first-level cache, one key ahead.
    Near,
}

/// Groups smaller than this are written column by column: a transpose
/// costs about as much as scattering a few filters' bits.
const TRANSPOSE_MIN_GROUP: usize = 4;

/// Transposes a 64x64 bit matrix in place: afterwards bit `c` of `a[r]` is
/// what bit `r` of `a[c]` was. Six rounds of block swaps (Hacker's Delight
/// 7-3, least-significant-bit first).
fn transpose64(a: &mut [u64; 64]) {
    let mut j = 32;
    let mut mask: u64 = 0x0000_0000_ffff_ffff;
    while j != 0 {
        let mut k = 0;
        while k < 64 {
            let t = ((a[k] >> j) ^ a[k + j]) & mask;
            a[k] ^= t << j;
            a[k + j] ^= t;
            k = (k + j + 1) & !j;
        }
        j >>= 1;
        mask ^= mask << j;
    }
}

pub use crate::batch::BatchResults;

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

    /// Makes sure at least `additional` free columns exist, allocating
    /// shards (or widening one) as needed. All-or-nothing.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] if memory cannot be had; the index is unchanged.
    pub fn reserve(&mut self, additional: usize) -> Result<()> {
        let m = self.params.m() as usize;
        let free: usize = self.shards.iter().map(|s| s.columns() - s.n_used).sum();
        let mut needed = additional.saturating_sub(free);
        if needed == 0 {
            return Ok(());
        }
        self.slots.try_reserve(additional).map_err(|_| Error::CapacityOverflow("id map"))?;
        let max = self.config.max_shard_columns;
        // Widen the first shard that is not at full width (doubling up to
        // 512 columns, then by 512), then add shards.
        let mut widened = None;
        if let Some((i, s)) = self.shards.iter().enumerate().find(|(_, s)| s.columns() < max) {
            let cols = shard_columns_for(s.columns() + needed).min(max);
            needed = needed.saturating_sub(cols - s.columns());
            widened = Some((i, s.widened(m, cols)?));
        }
        let mut fresh = Vec::new();
        while needed > 0 {
            let cols = shard_columns_for(needed).min(max);
            fresh.push(Shard::new(m, cols)?);
            needed = needed.saturating_sub(cols);
        }
        self.shards.try_reserve(fresh.len()).map_err(|_| Error::CapacityOverflow("shard list"))?;
        if let Some((i, s)) = widened {
            self.shards[i] = Arc::new(s);
        }
        self.shards.extend(fresh.into_iter().map(Arc::new));
        Ok(())
    }

    /// Takes a free column (reserving one first if needed).
    fn take_column(&mut self, id: u64) -> Result<Slot> {
        self.reserve(1)?;
        let (shard, col) = self
            .shards
            .iter()
            .enumerate()
            .find(|(_, s)| s.n_used < s.columns())
            .and_then(|(i, s)| Some((i, s.first_free()?)))
            .ok_or(Error::CapacityOverflow("no free column after reserve"))?;
        let s = self.shard_mut(shard)?;
        s.used[col / 64] |= 1 << (col % 64);
        s.owners[col] = id;
        s.n_used += 1;
        let slot = Slot { shard: shard as u32, col: col as u32 };
        self.slots.insert(id, slot);
        Ok(slot)
    }

    /// Shard `si`, writable: a shard shared with a clone of this index (or
    /// with a reader's snapshot) is copied first, and rows that are a window
    /// of a mapped file are copied into memory. This is the one fallible
    /// step of every write, taken before the write changes anything.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] when the copy cannot be allocated; the
    /// index is unchanged then.
    fn shard_mut(&mut self, si: usize) -> Result<&mut Shard> {
        writable(&mut self.shards, si)
    }

    /// Adds a filter under a new id.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`], [`Error::DuplicateId`], or
    /// [`Error::CapacityOverflow`]; the index is unchanged after an error.
    pub fn insert_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        if self.slots.contains_key(&id) {
            return Err(Error::DuplicateId(id));
        }
        let slot = self.take_column(id)?;
        // `take_column` made the shard unique and owned.
        self.shard_mut(slot.shard as usize)?.fill_empty_column(slot.col as usize, filter);
        Ok(())
    }

    /// Adds a filter given as raw words (see [`BloomFilter::from_words`]).
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::from_words`] and [`SlicedIndex::insert_filter`].
    pub fn insert_words(&mut self, id: u64, params: &BloomParams, words: &[u64]) -> Result<()> {
        self.params.check_same(params)?;
        let filter = BloomFilter::from_words(*params, words)?;
        self.insert_filter(id, &filter)
    }

    /// Adds many filters at once: all or nothing.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::insert_filter`], also for an id repeated inside
    /// `filters`; the index is unchanged after an error.
    pub fn insert_filters(&mut self, filters: &[(u64, &BloomFilter)]) -> Result<()> {
        let mut seen = hashbrown::HashSet::with_capacity(filters.len());
        for (id, f) in filters {
            self.params.check_same(f.params())?;
            if self.slots.contains_key(id) || !seen.insert(*id) {
                return Err(Error::DuplicateId(*id));
            }
        }
        self.reserve(filters.len())?;
        // Copy every shared or mapped shard first (the only fallible step
        // left), so that nothing below can fail half-way.
        for si in 0..self.shards.len() {
            self.shard_mut(si)?;
        }
        // Take every column first, then write 64 columns of one row word at
        // a time through a 64x64 bit transpose: each row word is written once
        // per group instead of once per filter (64x less row traffic).
        let mut placed = Vec::with_capacity(filters.len());
        for (id, f) in filters {
            placed.push((self.take_column(*id)?, *f));
        }
        placed.sort_unstable_by_key(|(slot, _)| (slot.shard, slot.col));
        let m = self.params.m() as usize;
        let mut group: [Option<&BloomFilter>; 64] = [None; 64];
        for run in placed.chunk_by(|(a, _), (b, _)| a.shard == b.shard && a.col / 64 == b.col / 64) {
            let (first, _) = run[0];
            let shard = writable(&mut self.shards, first.shard as usize)?;
            if run.len() < TRANSPOSE_MIN_GROUP || shard.sub_word() {
                for (slot, f) in run {
                    shard.fill_empty_column(slot.col as usize, f);
                }
                continue;
            }
            group.fill(None);
            for (slot, f) in run {
                group[slot.col as usize % 64] = Some(*f);
            }
            shard.or_word_group(m, first.col as usize / 64, &group, self.params.words());
        }
        Ok(())
    }

    /// Removes a filter; its column is cleared and reused later, and a shard
    /// left empty is released.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged.
    pub fn delete_filter(&mut self, id: u64) -> Result<()> {
        let slot = self.slot(id)?;
        let m = self.params.m() as usize;
        let (si, col) = (slot.shard as usize, slot.col as usize);
        let s = writable(&mut self.shards, si)?;
        s.clear_column(m, col);
        s.used[col / 64] &= !(1 << (col % 64));
        s.n_used -= 1;
        self.slots.remove(&id);
        if s.n_used == 0 {
            self.shards.swap_remove(si);
            if let Some(moved) = self.shards.get(si) {
                // The former last shard now sits at `si`: re-point its ids.
                for_each_set_bit(&moved.used, |c| {
                    if let Some(slot) = self.slots.get_mut(&moved.owners[c]) {
                        slot.shard = si as u32;
                    }
                });
            }
        }
        Ok(())
    }

    /// ORs `filter` into the filter `id` (adds its keys).
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::UnknownId`]; the index is unchanged.
    pub fn update_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        let slot = self.slot(id)?;
        self.shard_mut(slot.shard as usize)?.or_column(slot.col as usize, filter);
        Ok(())
    }

    /// Inserts one key, by its hash, into filter `id`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged.
    pub fn insert_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<()> {
        let slot = self.slot(id)?;
        let pos = self.params.probes(hash);
        let s = writable(&mut self.shards, slot.shard as usize)?;
        for &p in &pos {
            let (word, bit) = s.bit_at(p as usize, slot.col as usize);
            let w = &mut s.rows[word];
            if *w & bit == 0 {
                *w |= bit;
                s.ones += 1;
                s.logs.note_set(slot.col as usize, p as usize);
            }
        }
        Ok(())
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

    /// Like [`SlicedIndex::query`], into a caller buffer that is cleared
    /// first. Allocates nothing once `out` has grown, as the first queries
    /// make it: to the largest answer plus the few slots (at most 24) the
    /// kernels write past an answer's end.
    pub fn query_into<K: Key + ?Sized>(&self, key: &K, out: &mut Vec<u64>) {
        self.query_hash_into(self.params.hash(key), out);
    }

    /// [`SlicedIndex::query_into`] by the key's hash.
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        out.clear();
        self.query_hash_append(hash, out);
    }

    /// [`SlicedIndex::query_hash_into`] without clearing `out`: the
    /// matching ids are appended. An index of one narrow shard whose rows
    /// stay cached (at most [`RESIDENT_ROWS_BYTES`](crate::collection::RESIDENT_ROWS_BYTES),
    /// as [`PartPrefetch`](crate::collection::PartPrefetch) decides) is read
    /// as a resident collection's parts are
    /// ([`Self::query_hash_append_resident`]); any other is prefetched.
    pub(crate) fn query_hash_append(&self, hash: KeyHash, out: &mut Vec<u64>) {
        if let [shard] = &self.shards[..]
            && shard.wpr < WORDS_PER_LINE
            && crate::collection::PartPrefetch::resident(shard.rows.len() * 8)
        {
            narrow::query_narrow_probing(shard, &self.params, hash, out);
            return;
        }
        self.query_hash_append_prefetching(hash, out);
    }

    /// [`Self::query_hash_append`] with the key's runs prefetched ahead
    /// whatever the index's size ([`Self::query_positions`]): a collection
    /// too large to stay cached queries its parts so, narrow ones too.
    #[inline(always)]
    pub(crate) fn query_hash_append_prefetching(&self, hash: KeyHash, out: &mut Vec<u64>) {
        let mut buf = [MaybeUninit::uninit(); crate::params::MAX_HASHES as usize];
        if let [shard] = &self.shards[..]
            && shard.wpr >= WORDS_PER_LINE
            && shard.short_runs()
        {
            // One shard of short runs (the common index of up to 2 048
            // filters): each run is prefetched whole as its position is
            // computed, then one kernel call ANDs the runs and writes the
            // ids. Measured on `full` N = 1 000 (`bench/RESULTS.md`, section
            // "Latency"): the general loop below spent about 150
            // instructions a key on its prefetch policy, and without any
            // prefetch distinct keys took longer. Short runs are 1 to
            // `PREFETCH_WHOLE_RUN_LINES` lines: one position loop per
            // count, its lines unrolled (a test a line cost 3 instructions
            // a run).
            let (base, wpr) = (shard.rows.as_ptr(), shard.wpr);
            let positions = match wpr.div_ceil(WORDS_PER_LINE) {
                1 => self.params.probes_in_then(hash, &mut buf, |p| prefetch_run::<1>(base, wpr, p)),
                2 => self.params.probes_in_then(hash, &mut buf, |p| prefetch_run::<2>(base, wpr, p)),
                3 => self.params.probes_in_then(hash, &mut buf, |p| prefetch_run::<3>(base, wpr, p)),
                _ => self.params.probes_in_then(hash, &mut buf, |p| prefetch_run::<4>(base, wpr, p)),
            };
            self.kernels.and_runs_mapped(&shard.rows, wpr, positions, &shard.used, &shard.owners, out);
            return;
        }
        self.query_hash_append_general(hash, out);
    }

    /// [`Self::query_hash_append_prefetching`] for an index of several
    /// shards or long runs: out of line, so that the single-shard path
    /// above keeps a small stack frame.
    #[inline(never)]
    fn query_hash_append_general(&self, hash: KeyHash, out: &mut Vec<u64>) {
        let mut buf = [MaybeUninit::uninit(); crate::params::MAX_HASHES as usize];
        let pos = self.params.probes_in(hash, &mut buf);
        self.query_positions(pos, out);
    }

    /// [`Self::query_hash_append`] without prefetching: for callers whose
    /// rows are cache-resident (a small collection's parts), where a
    /// prefetch only costs instructions.
    #[inline]
    pub(crate) fn query_hash_append_resident(&self, hash: KeyHash, out: &mut Vec<u64>) {
        if let [shard] = &self.shards[..]
            && shard.wpr < WORDS_PER_LINE
        {
            narrow::query_narrow_probing(shard, &self.params, hash, out);
            return;
        }
        let mut buf = [MaybeUninit::uninit(); crate::params::MAX_HASHES as usize];
        let positions = self.params.probes_in(hash, &mut buf);
        for shard in self.shards.iter() {
            if shard.wpr >= WORDS_PER_LINE && shard.short_runs() {
                self.kernels.and_runs_mapped(&shard.rows, shard.wpr, positions, &shard.used, &shard.owners, out);
            } else {
                self.query_shard(shard, positions, out);
            }
        }
    }

    /// ANDs the rows at `positions` in every shard and appends matching ids.
    ///
    /// A key queried alone has no neighbour to overlap with, so its row
    /// runs are requested ahead shard by shard: the first
    /// [`SlicedConfig::prefetch_distance`] shards (at least one) before the
    /// AND starts, then one more as each shard is done. The runs of a shard
    /// then stream in parallel instead of one line per run at a time.
    #[inline]
    fn query_positions(&self, positions: &[u32], out: &mut Vec<u64>) {
        let m = self.params.m() as usize;
        let d = self.config.prefetch_distance.max(1);
        let ahead = |s: usize| {
            if let Some(shard) = self.shards.get(s) {
                shard.prefetch(positions, shard.rows_worth_prefetching(m, positions.len()), 0, Reach::Far);
            }
        };
        for s in 0..d {
            ahead(s);
        }
        for (s, shard) in self.shards.iter().enumerate() {
            ahead(s + d);
            if shard.wpr >= WORDS_PER_LINE && shard.short_runs() {
                // The AND and its ids in one pass (narrow shards have their
                // own code, in `query_shard`), a line at a time (no
                // buffer of the AND); bits of unused columns are dropped by
                // the `used` mask, as in `query_shard_then`. Measured on
                // `full` (`bench/RESULTS.md`, section "Latency"): 11% fewer
                // instructions a key at N = 1 000 (2-line runs), 1.6% more at
                // N = 10 000 (20-line runs), which keeps the two passes.
                self.kernels.and_runs_mapped(&shard.rows, shard.wpr, positions, &shard.used, &shard.owners, out);
            } else {
                self.query_shard(shard, positions, out);
            }
        }
    }

    /// ANDs the rows at `positions` in one shard and appends matching ids.
    #[inline]
    fn query_shard(&self, shard: &Shard, positions: &[u32], out: &mut Vec<u64>) {
        self.query_shard_then(shard, positions, out, || ());
    }

    /// [`Self::query_shard`], calling `between` after the AND and before the
    /// matching columns are turned into ids: a batch issues part of a later
    /// item's prefetch there, while the core has no loads of its own in
    /// flight (see [`Self::run_batch`]).
    #[inline]
    fn query_shard_then(&self, shard: &Shard, positions: &[u32], out: &mut Vec<u64>, between: impl FnOnce()) {
        // Shards narrower than a cache line (`wpr` < 8) have their own
        // scalar code, out of line so that this path is as before.
        if shard.wpr < WORDS_PER_LINE {
            between();
            narrow::query_narrow(shard, positions, out);
            return;
        }
        // Uninitialised on purpose: zeroing 4 KiB per query would cost as
        // much as a small query; only the `wpr` words used are initialised.
        #[repr(align(64))]
        struct Acc([MaybeUninit<u64>; MAX_SHARD_WORDS]);
        let mut acc = Acc([MaybeUninit::uninit(); MAX_SHARD_WORDS]);
        let acc = &mut acc.0[..shard.wpr];
        for w in acc.iter_mut() {
            w.write(0);
        }
        // SAFETY: every element of `acc` was initialised just above, and
        // `MaybeUninit<u64>` has the layout of `u64`.
        let acc = unsafe { &mut *(acc as *mut [MaybeUninit<u64>] as *mut [u64]) };
        let any = self.kernels.and_runs(&shard.rows, shard.wpr, positions, acc);
        between();
        if any {
            // `owners[c]` for every set bit `c` of `acc & used`, in order:
            // the hot tail of every query (a full index reports about 1% of
            // its columns), branching on counts rather than on the data.
            // Bits of unused columns are dropped: a valid index keeps them
            // clear, but rows mapped from a file whose checksums are not
            // verified yet (`Verify::Deferred`) may not, and a query must
            // never name an id the index does not hold.
            self.kernels.append_mapped_bits(acc, &shard.used, &shard.owners, out);
        }
    }

    /// Queries a batch of keys. Hashes the whole batch first, then walks
    /// the (key, shard) items in order, prefetching the row runs of the
    /// item `D` ahead ([`SlicedConfig::prefetch_distance`]) while ANDing
    /// this one. Results replace the contents of
    /// `results`; once its buffers are warm, a batch allocates nothing.
    pub fn query_batch<K: Key>(&self, keys: &[K], results: &mut BatchResults) {
        // One cache-resident narrow shard: key by key, each key's positions
        // computed as its AND reads them (see `query_hash_append`).
        if let [shard] = &self.shards[..]
            && shard.wpr < WORDS_PER_LINE
            && crate::collection::PartPrefetch::resident(shard.rows.len() * 8)
        {
            results.clear();
            results.ends.reserve(keys.len());
            for key in keys {
                narrow::query_narrow_probing(shard, &self.params, self.params.hash(key), &mut results.ids);
                results.ends.push(results.ids.len());
            }
            return;
        }
        let k = self.params.k() as usize;
        results.positions.resize(keys.len() * k, 0);
        for (key, pos) in keys.iter().zip(results.positions.chunks_exact_mut(k)) {
            self.params.positions_into(self.params.hash(key), pos);
        }
        self.run_batch(results);
    }

    /// [`SlicedIndex::query_batch`] for keys already hashed.
    pub fn query_batch_hashes(&self, hashes: &[KeyHash], results: &mut BatchResults) {
        self.query_batch(hashes, results);
    }

    /// Walks the (key, shard) items of a hashed batch, prefetching the row
    /// runs of item `t + D` far ahead and the first lines of item `t + 1`
    /// near. With the AVX-512 kernels the far prefetch of a dense shard is
    /// issued in two parts: its first rows (a third) before item `t`'s AND,
    /// the rest between that AND and the extraction of its ids, when the
    /// core has no demand loads of its own in flight; issued all before the
    /// AND, the prefetches queue behind the AND's misses and the memory
    /// idles during the extraction. Measured on `full` N = 1 000 and
    /// 10 000 (`bench/RESULTS.md`, section "Query"): 5-7% faster with AVX-512, 2-5% slower
    /// with AVX2, whose longer AND already spreads the prefetches out, so
    /// the other kernels issue it whole.
    fn run_batch(&self, results: &mut BatchResults) {
        results.clear();
        let k = self.params.k() as usize;
        let m = self.params.m() as usize;
        let BatchResults { ids, ends, positions, prefetch_rows, prefetch_first } = results;
        prefetch_rows.clear();
        prefetch_rows.extend(self.shards.iter().map(|s| s.rows_worth_prefetching(m, k)));
        prefetch_first.clear();
        let split = self.kernels.backend() == Backend::Avx512;
        prefetch_first.extend(
            self.shards
                .iter()
                .zip(prefetch_rows.iter())
                .map(|(s, &rows)| if split { s.far_first_rows(rows, m, k) } else { rows }),
        );
        let n = positions.len() / k;
        ends.reserve(n);
        // Work item `t` is key `t / shards` in shard `t % shards`: an index
        // wider than one shard is prefetched a shard at a time, so the
        // distance holds about the same bytes in flight at any width.
        let shards = self.shards.len();
        let items = n * shards;
        let d = self.config.prefetch_distance;
        // Rows `lo..hi` of item `t`'s first `prefetch_rows` (clamped).
        let ahead = |t: usize, reach: Reach, lo: usize, hi: usize| {
            let (i, s) = (t / shards, t % shards);
            let hi = hi.min(prefetch_rows[s]);
            if lo < hi {
                self.shards[s].prefetch(&positions[i * k + lo..][..hi - lo], hi - lo, 0, reach);
            }
        };
        for t in 0..d.min(items) {
            ahead(t, Reach::Far, 0, k);
        }
        if d > 0 && items > 0 {
            ahead(0, Reach::Near, 0, k);
        }
        for i in 0..n {
            let key = &positions[i * k..][..k];
            for (s, shard) in self.shards.iter().enumerate() {
                let t = i * shards + s;
                let far = (d > 0 && t + d < items).then(|| prefetch_first[(t + d) % shards]);
                if let Some(cut) = far {
                    ahead(t + d, Reach::Far, 0, cut);
                }
                if d > 0 && t + 1 < items {
                    ahead(t + 1, Reach::Near, 0, k);
                }
                match far {
                    Some(cut) if split => self.query_shard_then(shard, key, ids, || ahead(t + d, Reach::Far, cut, k)),
                    _ => self.query_shard(shard, key, ids),
                }
            }
            ends.push(ids.len());
        }
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
            index.delete_filter(id).unwrap();
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
            index.delete_filter(id * 3).unwrap();
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
            index.delete_filter(id).unwrap();
        }
        index.validate().unwrap();
        assert_eq!(index.shard_count(), 2);
        for id in 512..1200u64 {
            assert!(index.query(&id.to_le_bytes()).contains(&id), "{id}");
        }
        for id in 512..1200u64 {
            index.delete_filter(id).unwrap();
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
        transpose64(&mut t);
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

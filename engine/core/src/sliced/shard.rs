//! A shard: up to [`MAX_SHARD_COLUMNS`] filters' columns, stored
//! transposed (row `r` holds bit `r` of every column, 64-byte aligned), with
//! its writes (fill, OR and clear a column), its row prefetches and the
//! 64x64 bit transpose that bulk inserts go through.

use super::*;

/// Not `Clone`: shards are shared behind `Arc`, and a shard is copied only
/// by [`SlicedIndex::shard_mut`], fallibly.
#[derive(Debug)]
pub(super) struct Shard {
    /// Columns: a width of [`is_shard_width`].
    pub(super) cols: usize,
    /// Words per row of a word- or line-packed shard (`cols / 64`); 1 for a
    /// sub-word shard (`cols < 64`, several rows per word). Also the length
    /// of `used`.
    pub(super) wpr: usize,
    /// [`shard_words`]`(m, cols)` words: row `r` is bits
    /// `[r * cols, (r + 1) * cols)`, then zero padding to a cache line.
    pub(super) rows: Words,
    /// Local column -> filter id (meaningful where `used` is set).
    pub(super) owners: Vec<u64>,
    /// Used-column bitmap, `wpr` words.
    pub(super) used: Vec<u64>,
    pub(super) n_used: usize,
    /// Set bits in `rows`, for the prefetch policy and fill statistics.
    pub(super) ones: u64,
    /// The rows of the bits of columns filled from empty with few bits
    /// (see [`logs`]): such a column is cleared at those rows only.
    pub(super) logs: ColumnLogs,
}

impl Shard {
    pub(super) fn new(m: usize, columns: usize) -> Result<Shard> {
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
    pub(super) fn fill_empty_column(&mut self, col: usize, filter: &BloomFilter) -> u64 {
        debug_assert!(!self.logs.has(col), "an empty column has no log");
        let log = self.logs.start(filter.count_ones() as usize);
        self.or_column_logged(col, filter, log)
    }

    pub(super) fn columns(&self) -> usize {
        self.cols
    }

    /// Whether rows are narrower than a word (several rows per word).
    #[inline]
    pub(super) fn sub_word(&self) -> bool {
        self.cols < 64
    }

    /// Whether rows are whole cache lines (the kernels' 512-bit chunks).
    #[inline]
    pub(super) fn line_packed(&self) -> bool {
        self.wpr.is_multiple_of(WORDS_PER_LINE) && !self.sub_word()
    }

    /// 512-column chunks per row: 0 for a shard narrower than a line.
    #[inline]
    pub(super) fn chunks(&self) -> usize {
        if self.line_packed() { self.wpr / WORDS_PER_LINE } else { 0 }
    }

    /// The word holding bit (row `r`, column `col`) and that bit's mask.
    #[inline]
    pub(super) fn bit_at(&self, r: usize, col: usize) -> (usize, u64) {
        let b = r * self.cols + col;
        (b / 64, 1u64 << (b % 64))
    }

    /// Bytes of one row (the bytes of a run a query reads).
    pub(super) fn row_bytes(&self) -> usize {
        self.cols.div_ceil(8)
    }

    /// A copy that shares a mapped window's map (rows are copied only when
    /// they are owned).
    pub(super) fn try_clone(&self) -> Result<Shard> {
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

    pub(super) fn first_free(&self) -> Option<usize> {
        self.used
            .iter()
            .enumerate()
            .find(|(_, w)| **w != !0)
            .map(|(i, w)| i * 64 + w.trailing_ones() as usize)
            .filter(|&c| c < self.cols)
    }

    /// A copy of this shard widened to `columns` columns.
    pub(super) fn widened(&self, m: usize, columns: usize) -> Result<Shard> {
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
    pub(super) fn or_column(&mut self, col: usize, filter: &BloomFilter) -> u64 {
        let log = self.logs.take(col);
        self.or_column_logged(col, filter, log)
    }

    /// [`Shard::or_column`] with the column's log taken out: the rows of
    /// the bits newly set are added to it, and it is put back.
    pub(super) fn or_column_logged(&mut self, col: usize, filter: &BloomFilter, mut log: Option<Vec<u32>>) -> u64 {
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
    pub(super) fn or_word_group(
        &mut self,
        m: usize,
        word: usize,
        group: &[Option<&BloomFilter>; 64],
        filter_words: usize,
    ) {
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
    pub(super) fn clear_column(&mut self, m: usize, col: usize) {
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
    pub(super) fn prefetch(&self, positions: &[u32], rows: usize, from: usize, reach: Reach) {
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
    /// line, behind all the other runs' lines). Two loops of fewer
    /// instructions measured slower on batched `full` N = 10 000: four
    /// lines of a run per step, and run starts computed once and padded to
    /// four. Out of line, so that the short-run prefetch
    /// stays inlined in the batch loop (inlining both cost 2.4% more
    /// instructions at N = 1 000).
    #[inline(never)]
    pub(super) fn prefetch_across_runs(&self, positions: &[u32], rows: usize, from: usize, to: usize) {
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
    pub(super) fn short_runs(&self) -> bool {
        self.wpr / WORDS_PER_LINE <= PREFETCH_WHOLE_RUN_LINES
    }

    /// The share of this shard's row bits that are set (`m` rows).
    #[inline]
    pub(super) fn density(&self, m: usize) -> f64 {
        self.ones as f64 / (m as f64 * self.columns() as f64)
    }

    /// Of the `rows` rows a batch prefetches far ahead in this shard, how
    /// many to issue before an item's AND; the rest go between its AND and
    /// its extraction (`SlicedIndex::run_batch`). A third when a key is
    /// expected to match at least one column here (a dense shard: there is
    /// an extraction to overlap with), all of them otherwise.
    pub(super) fn far_first_rows(&self, rows: usize, m: usize, k: usize) -> usize {
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
    pub(super) fn rows_worth_prefetching(&self, m: usize, k: usize) -> usize {
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
pub(super) enum Reach {
    /// Whole runs into the second-level cache, far ahead.
    Far,
    /// First lines into the first-level cache, one key ahead.
    Near,
}

/// Groups smaller than this are written column by column: a transpose
/// costs about as much as scattering a few filters' bits.
pub(super) const TRANSPOSE_MIN_GROUP: usize = 4;

/// Transposes a 64x64 bit matrix in place: afterwards bit `c` of `a[r]` is
/// what bit `r` of `a[c]` was. Six rounds of block swaps (Hacker's Delight
/// 7-3, least-significant-bit first).
pub(super) fn transpose64(a: &mut [u64; 64]) {
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

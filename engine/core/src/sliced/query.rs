//! A [`SlicedIndex`]'s queries: one key (its runs ANDed shard by shard,
//! prefetched ahead unless the rows stay cached), and batches (every key
//! hashed first, rows prefetched a few keys ahead), with the reusable
//! [`BatchResults`] they answer into.

use super::*;

impl SlicedIndex {
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
    /// stay cached (at most [`RESIDENT_ROWS_BYTES`],
    /// as [`PartPrefetch`] decides) is read
    /// as a resident collection's parts are
    /// ([`Self::query_hash_append_resident`]); any other is prefetched.
    pub(crate) fn query_hash_append(&self, hash: KeyHash, out: &mut Vec<u64>) {
        if let [shard] = &self.shards[..]
            && shard.wpr < WORDS_PER_LINE
            && self.config.part_prefetch.resident(shard.rows.len() * 8)
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
    pub(super) fn query_hash_append_general(&self, hash: KeyHash, out: &mut Vec<u64>) {
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
    pub(super) fn query_positions(&self, positions: &[u32], out: &mut Vec<u64>) {
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
    pub(super) fn query_shard(&self, shard: &Shard, positions: &[u32], out: &mut Vec<u64>) {
        self.query_shard_then(shard, positions, out, || ());
    }

    /// [`Self::query_shard`], calling `between` after the AND and before the
    /// matching columns are turned into ids: a batch issues part of a later
    /// item's prefetch there, while the core has no loads of its own in
    /// flight (see [`Self::run_batch`]).
    #[inline]
    pub(super) fn query_shard_then(
        &self,
        shard: &Shard,
        positions: &[u32],
        out: &mut Vec<u64>,
        between: impl FnOnce(),
    ) {
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
            && self.config.part_prefetch.resident(shard.rows.len() * 8)
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
    /// 10 000: faster with AVX-512, slower with AVX2, whose longer AND
    /// already spreads the prefetches out, so the other kernels issue it
    /// whole.
    pub(super) fn run_batch(&self, results: &mut BatchResults) {
        results.clear();
        let k = self.params.k() as usize;
        let m = self.params.m() as usize;
        let BatchResults { ids, ends, positions, prefetch_rows, prefetch_first, .. } = results;
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
}

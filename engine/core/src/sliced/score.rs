//! Multi-key scoring on a [`SlicedIndex`]: bit-sliced counters per shard,
//! threshold tests across the planes, and chunk pruning. The algorithm and
//! its guarantees are described in [`crate::score`]. Shards narrower than a
//! cache line have no 512-column chunk: they are counted apart, key by key
//! (`narrow::count_narrow`), and take no part in the planes or the pruning.

use bloomslice_kernels::{SCORE_GROUP_MAX, WORDS_PER_LINE, score_group_keys};

use super::{Reach, Shard, SlicedIndex, narrow};
use crate::hash::Key;
use crate::score::{PRUNE_INTERVAL, Scores, Scratch, reserve_total};

/// What a scoring pass reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Report {
    /// Every column with a non-zero count.
    NonZero,
    /// Columns whose count is at least `min_count`; with `prune`, chunks
    /// that can no longer reach it stop being read.
    AtLeast { min_count: u32, prune: bool },
}

/// The scratch buffers a scoring pass borrows apart: planes, live-chunk
/// bitmap, comparison mask, rows to prefetch and where, gathered positions.
type ScratchParts<'a> =
    (&'a mut [u64], &'a mut [u64], &'a mut Vec<u64>, &'a mut [usize], &'a mut [usize], &'a mut [u32]);

/// Keys whose probe positions [`Probes`] computes at once (at least): a
/// call of the hashing closure per block, not per key. Eight hashed 5%
/// fewer instructions than 16 for a 100-key query that dies after about 29
/// keys (`scoreprobe` under callgrind, `bench/RESULTS.md`, section "Scoring").
const PROBE_BLOCK: usize = 8;

/// The probe positions of a query's keys (`k` per key), computed as the
/// scoring passes reach them: a pruned query whose filters all fail early
/// never hashes the keys it does not read (at `multi` N = 1 000 a random
/// 1 000-key query dies after about 210 keys).
struct Probes<'a> {
    /// Hashes per key.
    k: usize,
    /// Keys in the query.
    q: usize,
    /// `q * k` positions, those of the first `done` keys computed.
    buf: &'a mut [u32],
    /// Keys whose positions are in `buf`.
    done: usize,
    /// Writes the positions of a range of keys (`k` per key) into a slice
    /// of the same length.
    fill: &'a mut dyn FnMut(core::ops::Range<usize>, &mut [u32]),
}

impl Probes<'_> {
    /// The positions of the first `keys` keys or more (at most `q`).
    #[inline]
    fn upto(&mut self, keys: usize) -> &[u32] {
        if keys > self.done {
            let to = keys.max(self.done + PROBE_BLOCK).min(self.q);
            (self.fill)(self.done..to, &mut self.buf[self.done * self.k..to * self.k]);
            self.done = to;
        }
        &self.buf[..self.done * self.k]
    }
}

/// Pruned scoring screens with fewer rows only in an index of at least this
/// many 512-column chunks: with fewer, the chunk a positive query keeps is
/// too large a share of the index to score twice (measured on `multi`
/// N = 1 000, two chunks: `bench/RESULTS.md`, section "Scoring").
const SCREEN_MIN_CHUNKS: usize = 8;

/// The densest AND of a screen's rows (`p^r` for bit density `p`). With
/// keys summed by carry-save adders ([`score_group_keys`]), a dense sum no
/// longer costs a pass over the planes per key: on `multi` N = 10 000
/// (`p` = 0.5) `r` = 2 (cap 0.25) screens faster than `r` = 3 (cap 0.125),
/// and `r` = 1 (cap 0.5) no faster than `r` = 2.
const SCREEN_MAX_DENSITY: f64 = 0.25;

/// How a scoring pass prunes chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prune {
    /// Never: every live chunk is read for every key.
    No,
    /// On exact counts, to the end of the query.
    Exact,
    /// On upper bounds of the counts (fewer rows than `k`), stopping at the
    /// first check after `stop` keys.
    Screen {
        /// Keys after which the screen ends.
        stop: usize,
    },
}

/// Words of a shard's rows in each bit-plane of a scoring pass: its row
/// width for a line-packed shard, 0 for a shard narrower than a cache line
/// (counted apart).
fn plane_words(s: &Shard) -> usize {
    if s.chunks() > 0 { s.wpr } else { 0 }
}

/// Bit-planes needed to count up to `keys` without wrapping (at least one).
fn planes_for(keys: usize) -> usize {
    (usize::BITS - keys.leading_zeros()).max(1) as usize
}

impl SlicedIndex {
    /// Scores the query `keys` against every filter: afterwards `scores`
    /// holds, for every filter, how many of the keys it may contain (a key
    /// repeated in `keys` counts once per occurrence). See [`crate::score`].
    /// Keys already hashed are [`KeyHash`](crate::hash::KeyHash)es (any [`Key`]). Once
    /// `scores` is warm, allocates nothing.
    pub fn score_into<K: Key>(&self, keys: &[K], scores: &mut Scores) {
        self.score_keys(keys, Report::NonZero, scores);
    }

    threshold_queries! {
        /// The filters whose count for the query `keys` reaches `threshold`, as
        /// `(id, count)` by ascending id (a `min_count` of 0 returns every
        /// filter). Scoring is pruned (see [`crate::score`]) unless `threshold`
        /// is [`Threshold::unpruned`](crate::Threshold::unpruned), which never
        /// changes the answer.
        fn query_threshold;

        /// [`SlicedIndex::query_threshold`] into `out` (cleared first), with
        /// `scratch` as working memory (its scores afterwards are unspecified).
        /// Once both are warm, allocates nothing.
        fn query_threshold_into(&self, keys, threshold, scratch, out) {
            out.clear();
            let min_count = threshold.min_count(keys.len());
            if min_count as usize > keys.len() {
                // No filter can reach it; nothing to read.
                scratch.keys = keys.len();
                scratch.entries.clear();
                return;
            }
            self.score_keys(keys, Report::AtLeast { min_count, prune: threshold.prunes() }, scratch);
            core::mem::swap(out, &mut scratch.entries);
        }
    }

    /// Grows `scores` and `out` to what a threshold query of up to `q`
    /// keys needs on this index ([`SlicedIndex::query_threshold_into`]
    /// swaps the two, so both hold every filter), so a thread whose buffers
    /// were reserved for a batch allocates nothing whichever of its queries
    /// it scores.
    pub(crate) fn reserve_scores(&self, q: usize, scores: &mut Scores, out: &mut Vec<(u64, u32)>) {
        let k = self.params.k() as usize;
        let Scratch { positions, planes, live, mask, prefetch_rows, prefetch_from, gathered } = &mut scores.scratch;
        let words: usize = self.shards.iter().map(|s| plane_words(s)).sum();
        reserve_total(positions, q * k);
        reserve_total(planes, words * planes_for(q));
        reserve_total(live, self.shards.iter().map(|s| s.chunks().div_ceil(64)).sum());
        reserve_total(mask, self.shards.iter().map(|s| s.wpr).max().unwrap_or(0));
        reserve_total(prefetch_rows, self.shards.len());
        reserve_total(prefetch_from, self.shards.len());
        reserve_total(gathered, 2 * gathered_len(k, self.config.prefetch_distance));
        reserve_total(&mut scores.entries, self.len());
        reserve_total(out, self.len());
    }

    /// Scores `keys` (hashed as the passes reach them, [`Probes`]) and
    /// leaves the reported `(id, count)` pairs in `scores.entries`,
    /// ascending id.
    fn score_keys<K: Key>(&self, keys: &[K], report: Report, scores: &mut Scores) {
        // One narrow shard (a small index, most parts of a collection):
        // key by key, each key's positions computed as its AND reads them,
        // stopping once no column can pass.
        if let [shard] = &self.shards[..]
            && shard.wpr < WORDS_PER_LINE
        {
            scores.keys = keys.len();
            let entries = &mut scores.entries;
            entries.clear();
            match report {
                Report::NonZero => narrow::score_narrow_probing(shard, &self.params, keys, None, |c| c > 0, entries),
                Report::AtLeast { min_count, prune } => {
                    let prune_below = (prune && min_count > 0).then_some(min_count);
                    narrow::score_narrow_probing(shard, &self.params, keys, prune_below, |c| c >= min_count, entries);
                }
            }
            if !entries.is_sorted_by_key(|&(id, _)| id) {
                entries.sort_unstable_by_key(|&(id, _)| id);
            }
            return;
        }
        let k = self.params.k() as usize;
        let mut fill = |range: core::ops::Range<usize>, out: &mut [u32]| {
            for (key, pos) in keys[range].iter().zip(out.chunks_exact_mut(k)) {
                self.params.positions_into(self.params.hash(key), pos);
            }
        };
        self.score_positions(keys.len(), &mut fill, report, scores);
    }

    /// Scores the `q` keys whose positions `fill` writes (see [`Probes`])
    /// and leaves the reported `(id, count)` pairs in `scores.entries`,
    /// ascending id.
    fn score_positions(
        &self,
        q: usize,
        fill: &mut dyn FnMut(core::ops::Range<usize>, &mut [u32]),
        report: Report,
        scores: &mut Scores,
    ) {
        let k = self.params.k() as usize;
        let m = self.params.m() as usize;
        let Scores { keys, entries, scratch } = scores;
        *keys = q;
        entries.clear();
        let Scratch { positions, planes, live, mask, prefetch_rows, prefetch_from, gathered } = scratch;
        positions.resize(q * k, 0);
        let mut probes = Probes { k, q, buf: &mut positions[..q * k], done: 0, fill };
        let n_planes = planes_for(q);
        let total_words: usize = self.shards.iter().map(|s| plane_words(s)).sum();
        planes.clear();
        planes.resize(total_words * n_planes, 0);
        let live_words = |s: &Shard| s.chunks().div_ceil(64);
        live.clear();
        for s in &self.shards {
            let chunks = s.chunks();
            live.extend((0..live_words(s)).map(|w| {
                let left = chunks - 64 * w;
                if left >= 64 { !0 } else { (1u64 << left) - 1 }
            }));
        }
        prefetch_rows.clear();
        prefetch_rows
            .extend(self.shards.iter().map(|s| if s.chunks() > 0 { s.rows_worth_prefetching(m, k) } else { 0 }));
        prefetch_from.clear();
        prefetch_from.resize(self.shards.len(), 0);
        gathered.resize(2 * gathered_len(k, self.config.prefetch_distance), 0);
        macro_rules! scratch_parts {
            () => {
                (
                    &mut planes[..],
                    &mut live[..],
                    &mut *mask,
                    &mut prefetch_rows[..],
                    &mut prefetch_from[..],
                    &mut gathered[..],
                )
            };
        }
        let (min_count, prune) = match report {
            Report::NonZero => (0, false),
            Report::AtLeast { min_count, prune } => (min_count, prune && min_count > 0),
        };
        match (prune, self.screen_rows(q, min_count)) {
            (true, Some((r, stop))) => {
                // Screen: upper bounds of the counts from `r` of the `k`
                // rows kill most chunks for a fraction of the bytes; then
                // the exact counts of the chunks left, from all `k` rows.
                for (rows, s) in prefetch_rows.iter_mut().zip(&self.shards) {
                    if s.chunks() > 0 {
                        *rows = s.rows_worth_prefetching(m, r);
                    }
                }
                let any =
                    self.count_pass(&mut probes, r, min_count, Prune::Screen { stop }, n_planes, scratch_parts!());
                planes.fill(0);
                if any {
                    for (rows, s) in prefetch_rows.iter_mut().zip(&self.shards) {
                        if *rows != 0 {
                            *rows = s.rows_worth_prefetching(m, k);
                        }
                    }
                    self.count_pass(&mut probes, k, min_count, Prune::Exact, n_planes, scratch_parts!());
                }
            }
            _ => {
                self.count_pass(
                    &mut probes,
                    k,
                    min_count,
                    if prune { Prune::Exact } else { Prune::No },
                    n_planes,
                    scratch_parts!(),
                );
            }
        }
        // Report: the passing (or non-zero) columns of every shard.
        let mut plane_at = 0;
        for s in &self.shards {
            if s.chunks() == 0 {
                let positions = probes.upto(q);
                match report {
                    Report::NonZero => narrow::count_narrow(s, positions, k, |c| c > 0, entries),
                    Report::AtLeast { .. } => narrow::count_narrow(s, positions, k, |c| c >= min_count, entries),
                }
                continue;
            }
            let pw = s.wpr * n_planes;
            let shard_planes = &planes[plane_at..plane_at + pw];
            mask.clear();
            mask.resize(s.wpr, 0);
            let any = match report {
                Report::NonZero => {
                    for j in 0..n_planes {
                        for (o, &p) in mask.iter_mut().zip(&shard_planes[j * s.wpr..(j + 1) * s.wpr]) {
                            *o |= p;
                        }
                    }
                    true
                }
                Report::AtLeast { .. } => self.kernels.count_at_least(shard_planes, min_count, mask),
            };
            if any {
                push_counts(s, shard_planes, n_planes, mask, entries);
            }
            plane_at += pw;
        }
        // Columns are reported in shard and column order; ids inserted in
        // ascending order are already sorted, so this is usually one pass.
        if !entries.is_sorted_by_key(|&(id, _)| id) {
            entries.sort_unstable_by_key(|&(id, _)| id);
        }
    }

    /// One pass of scoring over the `q` keys whose positions are in
    /// `positions` (`k` per key), ANDing the first `rows` of each key's
    /// runs into the planes and, unless `Prune::No`, killing chunks on the
    /// way (from the chunks live on entry). Returns whether any chunk is
    /// still live. A `Prune::Screen` pass ends at its first check after its
    /// `stop` keys that kills no chunk (the chunks that die have died).
    fn count_pass(
        &self,
        probes: &mut Probes<'_>,
        rows: usize,
        min_count: u32,
        prune: Prune,
        n_planes: usize,
        (planes, live, mask, prefetch_rows, prefetch_from, gathered): ScratchParts<'_>,
    ) -> bool {
        let (k, q) = (probes.k, probes.q);
        let live_chunks = |live: &[u64]| live.iter().map(|w| w.count_ones()).sum::<u32>();
        let mut last = live_chunks(live);
        let live_words = |s: &Shard| s.chunks().div_ceil(64);
        // Unpruned and screening passes over long runs score a group of
        // keys per kernel call (`score_group_keys`: 3 keys of 7 runs, 8 of
        // 2): the kernel sums a group in registers with carry-save adders
        // before touching the planes, and the group's look-ahead (the next
        // group) streams in over its walk. Exact
        // pruned passes over long runs score a key at a time, so that
        // chunks die as soon as a check allows (grouped, they measured no
        // faster). Over short runs a key is a few lines and the call's own
        // cost dominates, so a call takes every key up to the next check
        // (the kernel prefetches each group's successor as it walks, and
        // during its last group the next call's first) (`bench/RESULTS.md`, section "Scoring").
        let d = self.config.prefetch_distance;
        let short = self.shards.iter().all(|s| s.short_runs());
        let grouped = rows < k || prune == Prune::No || short;
        let group_keys = if grouped { score_group_keys(rows) } else { 1 };
        // Keys per call: a group, or (short runs, positions back to back so
        // that no copy is needed) every key up to the next check.
        let span = if short && rows == k { q } else { group_keys };
        // Far (L2) prefetch: the first keys (a group, or `d` keys) in one
        // burst here; after that each kernel call is handed the runs of the
        // keys up to `lead` keys past its own (the next group, or the key
        // `d` ahead) and prefetches them chunk by chunk as it walks (see
        // `count_runs`): spread over the walk, not issued in a burst before
        // it, they arrive while the call computes.
        let lead = if grouped { group_keys } else { d };
        let mut far_next = if d > 0 { lead.min(q) } else { 0 };
        let positions = probes.upto(far_next);
        for j in 0..far_next {
            self.prefetch_scoring(key_runs(positions, k, rows, j), prefetch_rows, prefetch_from, Reach::Far);
        }
        // The first check is due once a column can fail (after
        // `q - min_count + 1` keys, when the bound below is 1) or, in an
        // exact pass, once a chunk of columns that hold none of the keys is
        // likely dead ([`first_exact_check`]); then every `PRUNE_INTERVAL`
        // keys where a chunk can die ([`next_check_after`]). Groups end at
        // the checks.
        let can_fail = q + 1 - (min_count as usize).min(q);
        let first_check = match prune {
            Prune::No => q,
            Prune::Exact => first_exact_check(q, can_fail, self.density().powi(rows as i32)),
            Prune::Screen { .. } => can_fail,
        };
        let mut check_at = first_check;
        // Room for a group's and a look-ahead's leading positions
        // (`gathered_len`), warm after the first query: a pair of arrays
        // for the largest `k` here cost a 4 KiB memset per pass, a visible
        // share of a pruned 100-key query at `N = 1 000`.
        let (group_positions, ahead_positions) = gathered.split_at_mut(gathered.len() / 2);
        let mut i = 0;
        while i < q {
            let end = (i + span).min(q).min(check_at.max(i + 1));
            // Keys `far_next..ahead_end` go to this call's look-ahead: at
            // most a group or one key, never the call's own keys (a call of
            // several groups prefetches its own later groups as it walks).
            let ahead_end = if d > 0 { (end + lead).min(q).max(far_next) } else { far_next };
            let ahead_keys = far_next.max(end).min(ahead_end)..ahead_end;
            far_next = ahead_end;
            let positions = probes.upto(ahead_end.max(end));
            if d > 0 && end < q {
                for j in end..(end + group_keys).min(q) {
                    self.prefetch_scoring(key_runs(positions, k, rows, j), prefetch_rows, prefetch_from, Reach::Near);
                }
            }
            let group = leading_runs(positions, k, i..end, rows, group_positions);
            let (mut plane_at, mut live_at) = (0, 0);
            for (s, &ahead_rows) in self.shards.iter().zip(prefetch_rows.iter()) {
                let (lw, pw) = (live_words(s), plane_words(s) * n_planes);
                let shard_live = &live[live_at..live_at + lw];
                if shard_live.iter().any(|&w| w != 0) {
                    // The look-ahead keys' first `ahead_rows` runs here,
                    // prefetched by the kernel as it walks: short runs too
                    // (measured faster than prefetching them whole into
                    // the first-level cache before the call).
                    let per_key = ahead_rows.min(rows);
                    let ahead = leading_runs(positions, k, ahead_keys.clone(), per_key, ahead_positions);
                    self.kernels.count_runs(
                        &s.rows,
                        s.wpr,
                        group,
                        end - i,
                        s.wpr,
                        shard_live,
                        &mut planes[plane_at..plane_at + pw],
                        ahead,
                        self.config.look_ahead,
                    );
                }
                plane_at += pw;
                live_at += lw;
            }
            i = end;
            let remaining = q - i;
            if prune != Prune::No && i >= check_at && remaining > 0 {
                // A column can still pass only with `min_count - remaining`
                // hits already.
                let need = min_count - remaining as u32;
                let Some(least_best) =
                    self.prune_chunks(need, n_planes, planes, live, mask, prefetch_rows, prefetch_from)
                else {
                    return false;
                };
                check_at = next_check_after(first_check, i, need, least_best);
                if let Prune::Screen { stop } = prune {
                    let now = live_chunks(live);
                    if i >= stop && now == last {
                        return true;
                    }
                    last = now;
                }
            }
        }
        live.iter().any(|&w| w != 0)
    }

    /// Whether to screen a pruned threshold query with fewer rows first:
    /// `Some((r, stop))` to score with `r` of the `k` rows until `stop` keys
    /// (or until every chunk is dead), then again from the first key with
    /// all `k` rows on the chunks left.
    ///
    /// Counts from `r` rows are upper bounds of the exact ones (the AND of
    /// fewer rows has more ones), so pruning on them never kills a column
    /// that can pass, and a key costs `r` runs instead of `k`. With the
    /// index's bit density `p`, a column that holds none of the keys hits
    /// a key with probability `h = p^r`, and dies after `M / (1 - h)` keys
    /// on average (`M = Q - min_count + 1` misses), with a standard
    /// deviation of `sqrt(M h) / (1 - h)`; its 512-column chunk dies with
    /// the last of its columns, about 3.5 deviations later. `r` minimises
    /// the runs read until then, `r` x that point, among the `r` whose AND
    /// is at most [`SCREEN_MAX_DENSITY`] dense (denser sums cost more in
    /// counter-plane updates than the runs they save).
    /// The screen pays when the runs it saves on every chunk outweigh
    /// scoring again the chunks that survive (a query whose keys one filter
    /// holds keeps that filter's chunk): it is used only when the index has
    /// at least [`SCREEN_MIN_CHUNKS`] chunks, the screen ends in the first
    /// half of the query, and it reads at most 0.7 times the runs the exact
    /// pass reads until its own chunks die.
    fn screen_rows(&self, q: usize, min_count: u32) -> Option<(usize, usize)> {
        let k = self.params.k() as usize;
        let chunks: usize = self.shards.iter().map(|s| s.chunks()).sum();
        if min_count == 0 || k < 2 || chunks < SCREEN_MIN_CHUNKS {
            return None;
        }
        let density = self.density();
        let misses = (q - min_count as usize + 1) as f64;
        let chunk_dies = |rows: usize| {
            let h = density.powi(rows as i32).min(0.999);
            (misses + 3.5 * (misses * h).sqrt()) / (1.0 - h)
        };
        let exact = k as f64 * chunk_dies(k).min(q as f64);
        (1..k)
            .filter(|&r| density.powi(r as i32) <= SCREEN_MAX_DENSITY)
            .map(|r| (r, chunk_dies(r)))
            .filter(|&(r, keys)| keys <= q as f64 / 2.0 && r as f64 * keys <= 0.7 * exact)
            .min_by(|a, b| (a.0 as f64 * a.1).total_cmp(&(b.0 as f64 * b.1)))
            .map(|(r, keys)| (r, keys.ceil() as usize))
    }

    /// The share of set bits in the index's rows (0 when it is empty).
    fn density(&self) -> f64 {
        let bits = self.params.m() as f64 * self.shards.iter().map(|s| s.columns() as f64).sum::<f64>();
        let ones = self.shards.iter().map(|s| s.ones as f64).sum::<f64>();
        if bits > 0.0 { ones / bits } else { 0.0 }
    }

    /// Clears the live bit of every chunk where no column has `need` hits
    /// yet, stops prefetching shards that died and moves the prefetch of the
    /// others to their first live chunk. Returns `None` when no chunk of any
    /// shard is live, else a lower bound of the least, over the live chunks,
    /// of a chunk's best count (the highest count of its used columns): the
    /// exact least when at most [`BEST_COUNT_CHUNKS`] chunks are live, else
    /// `need` (every live chunk has a column at `need`). The counts can be
    /// upper bounds (a screen's): the same holds of them.
    #[expect(clippy::too_many_arguments, reason = "the scratch buffers of one scoring pass, borrowed apart")]
    fn prune_chunks(
        &self,
        need: u32,
        n_planes: usize,
        planes: &[u64],
        live: &mut [u64],
        mask: &mut Vec<u64>,
        prefetch_rows: &mut [usize],
        prefetch_from: &mut [usize],
    ) -> Option<u32> {
        let (mut plane_at, mut live_at) = (0, 0);
        let mut live_chunks = 0;
        for ((s, rows), from) in self.shards.iter().zip(prefetch_rows.iter_mut()).zip(prefetch_from.iter_mut()) {
            let chunks = s.chunks();
            let (lw, pw) = (chunks.div_ceil(64), plane_words(s) * n_planes);
            let shard_live = &mut live[live_at..live_at + lw];
            if shard_live.iter().any(|&w| w != 0) {
                mask.clear();
                mask.resize(s.wpr, 0);
                self.kernels.count_at_least(&planes[plane_at..plane_at + pw], need, mask);
                for c in 0..chunks {
                    let alive = mask[c * WORDS_PER_LINE..(c + 1) * WORDS_PER_LINE]
                        .iter()
                        .zip(&s.used[c * WORDS_PER_LINE..(c + 1) * WORDS_PER_LINE])
                        .any(|(&m, &u)| m & u != 0);
                    if !alive {
                        shard_live[c / 64] &= !(1u64 << (c % 64));
                    }
                }
            }
            match shard_live.iter().position(|&w| w != 0) {
                None => *rows = 0,
                Some(w) => {
                    live_chunks += shard_live.iter().map(|w| w.count_ones() as usize).sum::<usize>();
                    *from = (64 * w + shard_live[w].trailing_zeros() as usize) * WORDS_PER_LINE;
                }
            }
            plane_at += pw;
            live_at += lw;
        }
        if live_chunks == 0 {
            return None;
        }
        if live_chunks > BEST_COUNT_CHUNKS {
            return Some(need);
        }
        let (mut plane_at, mut live_at) = (0, 0);
        let mut least_best = u32::MAX;
        for s in &self.shards {
            let chunks = s.chunks();
            let (lw, pw) = (chunks.div_ceil(64), plane_words(s) * n_planes);
            for c in (0..chunks).filter(|c| (live[live_at + c / 64] >> (c % 64)) & 1 == 1) {
                let start = c * WORDS_PER_LINE;
                let mut used = [0u64; WORDS_PER_LINE];
                used.copy_from_slice(&s.used[start..start + WORDS_PER_LINE]);
                least_best = least_best.min(best_count(&planes[plane_at..plane_at + pw], s.wpr, n_planes, start, used));
            }
            plane_at += pw;
            live_at += lw;
        }
        Some(least_best)
    }

    /// The plain query's prefetch (`Shard::prefetch`) of every shard, from
    /// its first live chunk; dead shards (`rows` 0) not at all.
    #[inline]
    fn prefetch_scoring(&self, positions: &[u32], rows: &[usize], from: &[usize], reach: Reach) {
        for ((shard, &n), &from) in self.shards.iter().zip(rows).zip(from) {
            shard.prefetch(positions, n, from, reach);
        }
    }
}

/// Keys past the first key a column can fail at that [`first_exact_check`]
/// looks for the first check; a later estimate falls back to that first
/// key (checks every [`PRUNE_INTERVAL`] keys from there find the chunks
/// dead soon enough).
const FIRST_CHECK_REACH: usize = 1024;

/// Chance, at most, that a 512-column chunk of columns that hold none of
/// the keys is still live at [`first_exact_check`].
const CHUNK_SURVIVAL: f64 = 0.05;

/// The first key count after which an exact pruned pass checks its
/// chunks: the least `n` from `can_fail` (`q - min_count + 1`, where a
/// column first can fail) up at which a chunk of 512 columns that hold
/// none of the query's keys, each hit by a key with probability `hit`
/// (the AND of `k` rows of density `p`: `p^k`), is dead with probability
/// at least `1 -` [`CHUNK_SURVIVAL`]; `can_fail` when no `n < q` is within
/// [`FIRST_CHECK_REACH`] keys of `can_fail` (so the estimate costs at most
/// that many steps per pass, whatever the query's length).
///
/// Such a column is live after `n` keys while it has at least
/// `x = n - can_fail + 1` hits, with probability at most
/// `C(n, x) hit^x` (a union bound, close for small `hit`); a chunk, while
/// any of its columns is. At `can_fail` itself a chunk is live unless all
/// of its 512 columns missed every key: with threshold 0.8 and `k` = 7 at
/// density 0.5 (`hit` 1/128), a 100-key query's chunks live on past
/// `can_fail` = 21, and by 24 only 2% of them do (`bench/RESULTS.md`, section "Scoring").
/// Checking first there, instead of at 21 and then 29, scores five keys
/// fewer before they die.
fn first_exact_check(q: usize, can_fail: usize, hit: f64) -> usize {
    let columns = (WORDS_PER_LINE * 64) as f64;
    if !(hit > 0.0 && hit < 1.0) {
        return can_fail;
    }
    // `live`: C(n, x) hit^x for `x = n - can_fail + 1`, from n = can_fail
    // (x = 1) up, each step multiplying by (n + 1) / (x + 1) * hit.
    let (mut n, mut x, mut live) = (can_fail, 1usize, can_fail as f64 * hit);
    while n < q.min(can_fail + FIRST_CHECK_REACH) {
        if columns * live <= CHUNK_SURVIVAL {
            return n;
        }
        live *= (n + 1) as f64 / (x + 1) as f64 * hit;
        n += 1;
        x += 1;
    }
    can_fail
}

/// The key count at which a pruned pass checks its chunks next, after a
/// check at `done` keys that left live only chunks whose best column has at
/// least `least_best >= need` hits (`need`: what a column needed at this
/// check). Checks fall every [`PRUNE_INTERVAL`] keys from the first
/// (`first`); this skips those where no chunk can die yet. A chunk dies
/// once its best column can no longer reach `min_count`: one more key
/// raises `need` by one and a best count by at most one, so no chunk can
/// die before `least_best - need + 1` more keys (all misses for its best
/// column). A skipped check would have cost a pass over the planes and a
/// split kernel call, and killed nothing: the rows read stay the same. A
/// query one filter holds most of (its chunk far above the bound) is
/// checked a few times instead of every [`PRUNE_INTERVAL`] keys.
fn next_check_after(first: usize, done: usize, need: u32, least_best: u32) -> usize {
    debug_assert!(least_best >= need && done >= first, "a live chunk has a column at the bound");
    let earliest = done + (least_best - need) as usize + 1;
    first + (earliest - first).div_ceil(PRUNE_INTERVAL) * PRUNE_INTERVAL
}

/// Live chunks up to which a pruning check finds the least best count of
/// the live chunks exactly (to skip the checks that cannot kill a chunk,
/// [`next_check_after`]). The search costs about a pass over a chunk's
/// planes per chunk: worth it when few chunks are left (those of the
/// filters that hold many of the keys), not when most of a large index is
/// still live (a random query before its chunks die).
const BEST_COUNT_CHUNKS: usize = 8;

/// The highest count among the columns `candidates` marks in the chunk of
/// words `start..start + 8` of each of the `n_planes` planes (`width`
/// words apart): bit by bit from the top plane, keeping the candidates
/// that have the bit whenever any does. 0 when no column is marked.
fn best_count(
    planes: &[u64],
    width: usize,
    n_planes: usize,
    start: usize,
    mut candidates: [u64; WORDS_PER_LINE],
) -> u32 {
    let mut best = 0;
    for j in (0..n_planes).rev() {
        let plane = &planes[j * width + start..j * width + start + WORDS_PER_LINE];
        let mut with = [0u64; WORDS_PER_LINE];
        for ((w, &c), &p) in with.iter_mut().zip(&candidates).zip(plane) {
            *w = c & p;
        }
        if with.iter().any(|&w| w != 0) {
            best |= 1 << j;
            candidates = with;
        }
    }
    best
}

/// Positions [`leading_runs`] may gather for a group of keys or for a
/// look-ahead (at most [`SCORE_GROUP_MAX`] or `prefetch_distance` keys of
/// `k`).
fn gathered_len(k: usize, prefetch_distance: usize) -> usize {
    SCORE_GROUP_MAX.max(prefetch_distance) * k
}

/// The first `rows` of the `k` positions of key `i`.
fn key_runs(positions: &[u32], k: usize, rows: usize, i: usize) -> &[u32] {
    &positions[i * k..][..rows]
}

/// The first `per_key` of the `k` positions of each key of `keys`, back to
/// back: a slice of `positions` where they already lie so (one key, or
/// whole keys), else gathered into `buf` (`keys.len() * per_key` long at
/// least).
fn leading_runs<'a>(
    positions: &'a [u32],
    k: usize,
    keys: core::ops::Range<usize>,
    per_key: usize,
    buf: &'a mut [u32],
) -> &'a [u32] {
    if keys.is_empty() || per_key == 0 {
        return &[];
    }
    if keys.len() == 1 || per_key == k {
        return &positions[keys.start * k..(keys.end - 1) * k + per_key];
    }
    for (j, chunk) in keys.clone().zip(buf.chunks_exact_mut(per_key)) {
        chunk.copy_from_slice(&positions[j * k..][..per_key]);
    }
    &buf[..keys.len() * per_key]
}

/// Appends `(owner, count)` for every used column of `s` whose bit is set
/// in `mask`, the count read bit by bit from the planes.
fn push_counts(s: &Shard, planes: &[u64], n_planes: usize, mask: &[u64], out: &mut Vec<(u64, u32)>) {
    for (w, (&bits, &used)) in mask.iter().zip(&s.used).enumerate() {
        let mut bits = bits & used;
        while bits != 0 {
            let b = bits.trailing_zeros();
            let count = (0..n_planes).fold(0u32, |acc, j| acc | ((((planes[j * s.wpr + w] >> b) & 1) as u32) << j));
            out.push((s.owners[w * 64 + b as usize], count));
            bits &= bits - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BloomFilter, BloomParams, SlicedConfig, Threshold};
    use bloomslice_kernels::Kernels;

    #[test]
    fn planes_hold_the_query_length() {
        assert_eq!(planes_for(0), 1);
        assert_eq!(planes_for(1), 1);
        assert_eq!(planes_for(2), 2);
        assert_eq!(planes_for(3), 2);
        assert_eq!(planes_for(4), 3);
        assert_eq!(planes_for(1000), 10);
        assert_eq!(planes_for(1023), 10);
        assert_eq!(planes_for(1024), 11);
    }

    /// The union bound of a 512-column chunk living on, `C(n, x) hit^x`
    /// with `x = n - can_fail + 1`, computed directly.
    fn chunk_live_bound(n: usize, can_fail: usize, hit: f64) -> f64 {
        let x = n - can_fail + 1;
        let choose = (0..x).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
        512.0 * choose * hit.powi(x as i32)
    }

    #[test]
    fn first_exact_check_is_where_chunks_of_non_members_die() {
        // k = 7 at density 0.5, threshold 0.8 of 100 keys.
        assert_eq!(first_exact_check(100, 21, 1.0 / 128.0), 24);
        for (q, can_fail, hit) in [(100, 21, 1.0 / 128.0), (1000, 201, 1.0 / 128.0), (100, 91, 0.01), (50, 3, 0.001)] {
            let n = first_exact_check(q, can_fail, hit);
            assert!((can_fail..q).contains(&n), "{q} {can_fail} {hit}: {n}");
            assert!(chunk_live_bound(n, can_fail, hit) <= CHUNK_SURVIVAL, "{q} {can_fail} {hit}: {n}");
            if n > can_fail {
                assert!(chunk_live_bound(n - 1, can_fail, hit) > CHUNK_SURVIVAL, "{q} {can_fail} {hit}: {n}");
            }
        }
        // No estimate (empty, full or dense index, or no key to spare):
        // the first key a column can fail at.
        assert_eq!(first_exact_check(100, 21, 0.0), 21);
        assert_eq!(first_exact_check(100, 21, 1.0), 21);
        assert_eq!(first_exact_check(30, 21, 0.25), 21);
        assert_eq!(first_exact_check(21, 21, 1.0 / 128.0), 21);
        // A dense index and a long query: no estimate within reach.
        assert_eq!(first_exact_check(1_000_000, 200_001, 0.5), 200_001);
    }

    #[test]
    fn best_count_is_the_highest_marked_count() {
        // Planes of 3 chunks (24 words) with counters of up to 6 bits;
        // column c of the middle chunk counts (c * 37 + 11) % 64.
        let (width, n_planes, start) = (24, 6, 8);
        let count = |c: usize| ((c * 37 + 11) % 64) as u32;
        let mut planes = vec![0u64; width * n_planes];
        for c in 0..512 {
            for j in 0..n_planes {
                if (count(c) >> j) & 1 == 1 {
                    planes[j * width + start + c / 64] |= 1 << (c % 64);
                }
            }
        }
        // Noise outside the chunk must not matter.
        for j in 0..n_planes {
            planes[j * width] = !0;
            planes[j * width + 23] = !0;
        }
        let marked = |pick: &dyn Fn(usize) -> bool| {
            let mut m = [0u64; WORDS_PER_LINE];
            for c in (0..512).filter(|&c| pick(c)) {
                m[c / 64] |= 1 << (c % 64);
            }
            m
        };
        let picks: [&dyn Fn(usize) -> bool; 5] = [&|_| true, &|c| c % 3 == 0, &|c| c < 5, &|c| c == 300, &|_| false];
        for pick in picks {
            let want = (0..512).filter(|&c| pick(c)).map(count).max().unwrap_or(0);
            assert_eq!(best_count(&planes, width, n_planes, start, marked(pick)), want);
        }
    }

    #[test]
    fn checks_skip_only_grid_points_where_no_chunk_can_die() {
        for first in [1usize, 21, 24, 205] {
            for done in (first..first + 80).step_by(PRUNE_INTERVAL) {
                for need in [1u32, 5, 80] {
                    for slack in 0..40u32 {
                        let next = next_check_after(first, done, need, need + slack);
                        // On the grid, past `done`, not before a chunk can
                        // die, and the first such grid point.
                        assert_eq!((next - first) % PRUNE_INTERVAL, 0);
                        assert!(next > done);
                        let earliest = done + slack as usize + 1;
                        assert!(next >= earliest);
                        assert!(next < earliest + PRUNE_INTERVAL);
                    }
                }
            }
        }
        // A chunk at the bound: the next grid point, as without skipping.
        assert_eq!(next_check_after(24, 24, 5, 5), 32);
        // One filter far above it: seven grid points skipped.
        assert_eq!(next_check_after(24, 24, 5, 60), 80);
    }

    /// Several shards (512 columns each), ids out of column order, and
    /// every backend: counts and threshold answers equal a naive count.
    #[test]
    fn counts_match_naive_over_shards_and_backends() {
        let p = BloomParams::new(3000, 3).unwrap();
        let mut index = SlicedIndex::with_config(p, SlicedConfig { max_shard_columns: 512, ..SlicedConfig::default() });
        let mut filters = Vec::new();
        for f in 0..1300u64 {
            let mut filter = BloomFilter::new(p).unwrap();
            for key in (f % 37)..(f % 37) + 40 {
                filter.insert(&key.to_le_bytes());
            }
            let id = (f * 7919) % 100_003;
            index.insert_filter(id, &filter).unwrap();
            filters.push((id, filter));
        }
        let keys: Vec<[u8; 8]> = (0..60u64).chain([3, 3, 5]).map(|k| k.to_le_bytes()).collect();
        let mut naive: Vec<(u64, u32)> = filters
            .iter()
            .map(|(id, f)| (*id, keys.iter().filter(|k| f.contains(&k[..])).count() as u32))
            .filter(|&(_, c)| c > 0)
            .collect();
        naive.sort_unstable();
        for kernels in Kernels::available() {
            index.set_kernels(kernels);
            let mut scores = Scores::new();
            index.score_into(&keys, &mut scores);
            assert_eq!(scores.iter().collect::<Vec<_>>(), naive, "{}", kernels.backend());
            for min in [0u32, 1, 20, 40, 41, 43, 63, 64] {
                let want: Vec<(u64, u32)> = if min == 0 {
                    let mut all: Vec<_> = filters.iter().map(|(id, _)| (*id, scores.get(*id))).collect();
                    all.sort_unstable();
                    all
                } else {
                    naive.iter().copied().filter(|&(_, c)| c >= min).collect()
                };
                assert_eq!(
                    index.query_threshold(&keys, Threshold::count(min)),
                    want,
                    "{} min {min}",
                    kernels.backend()
                );
                let mut out = Vec::new();
                index.query_threshold_into(&keys, Threshold::count(min).unpruned(), &mut Scores::new(), &mut out);
                assert_eq!(out, want, "{} unpruned min {min}", kernels.backend());
            }
        }
    }
    /// A dense index of many chunks, where pruned threshold queries screen
    /// with fewer rows first: answers equal a naive count for queries one
    /// filter (or a group of filters) holds, random queries, and thresholds
    /// around the screen's bound, on every backend. A shard of 4 096
    /// columns has long runs (eight lines), so the screen scores groups of
    /// keys per kernel call; the last shard's runs are short.
    #[test]
    fn screened_pruning_matches_naive() {
        let p = BloomParams::new(512, 7).unwrap();
        let mut index =
            SlicedIndex::with_config(p, SlicedConfig { max_shard_columns: 4096, ..SlicedConfig::default() });
        let mut filters = Vec::new();
        // Filter f holds keys f * 50 .. f * 50 + 51 (neighbours share one):
        // about half its bits set, as in a full index.
        for f in 0..4200u64 {
            let mut filter = BloomFilter::new(p).unwrap();
            for key in f * 50..f * 50 + 51 {
                filter.insert(&key.to_le_bytes());
            }
            index.insert_filter(f * 3 + 1, &filter).unwrap();
            filters.push((f * 3 + 1, filter));
        }
        let q = 100;
        assert!(index.screen_rows(q, 80).is_some(), "the screen must be on for this test to mean anything");
        let drawn = |f: u64, random_from: u64| -> Vec<[u8; 8]> {
            (f * 50..f * 50 + 90)
                .filter(|k| k % 50 != 49)
                .take(85)
                .chain(random_from..random_from + 15)
                .map(|k| k.to_le_bytes())
                .collect()
        };
        let queries: Vec<Vec<[u8; 8]>> = vec![
            drawn(17, 1 << 40),
            drawn(2500, 1 << 41),
            drawn(4199, 1 << 42),
            (0..q as u64).map(|i| ((1u64 << 43) + i * 7919).to_le_bytes()).collect(),
            (0..q as u64).map(|i| (i * 50).to_le_bytes()).collect(),
        ];
        for kernels in Kernels::available() {
            index.set_kernels(kernels);
            for keys in &queries {
                assert_eq!(keys.len(), q);
                for min in [60u32, 79, 80, 81, 90] {
                    let mut want: Vec<(u64, u32)> = filters
                        .iter()
                        .map(|(id, f)| (*id, keys.iter().filter(|k| f.contains(&k[..])).count() as u32))
                        .filter(|&(_, c)| c >= min)
                        .collect();
                    want.sort_unstable();
                    let got = index.query_threshold(keys, Threshold::count(min));
                    assert_eq!(got, want, "{} min {min}", kernels.backend());
                }
            }
        }
    }
}

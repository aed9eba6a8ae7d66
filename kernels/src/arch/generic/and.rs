//! The AND of row runs with an early exit: [`and_rows`] (runs given as
//! slices) and [`and_runs`] (runs named by position in a shard's rows),
//! plus the two pieces scoring reuses: [`Runs`], one key's run pointers
//! computed once per call, and [`and_lines`], the AND of one line of every
//! run that stops as soon as the line is zero. Scalar reference:
//! `arch::all`'s `and_rows` and `and_runs`.

use super::line::Line;
use crate::WORDS_PER_LINE;
use crate::arch::all;

/// See [`all::and_rows`].
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn and_rows<L: Line>(rows: &[&[u64]], out: &mut [u64]) -> bool {
    let n = out.len();
    for row in rows {
        assert!(row.len() >= n, "row run shorter than the output");
    }
    let Some((first, rest)) = rows.split_first() else {
        return all::and_of_no_rows(out);
    };
    let full = n - n % WORDS_PER_LINE;
    let out_ptr = out.as_mut_ptr();
    // SAFETY: `L`'s features are available (this function's contract).
    let mut any = unsafe { L::zero() };
    let mut start = 0;
    while start < full {
        // SAFETY: `start + 8 <= full <= n`, every row holds at least `n`
        // words (asserted above) and so does `out`, so each load and the
        // store touch in-bounds words; `L`'s features are available.
        unsafe {
            let mut acc = L::load(first.as_ptr().add(start));
            for row in rest {
                if acc.is_zero() {
                    break;
                }
                acc = acc.and(L::load(row.as_ptr().add(start)));
            }
            acc.store(out_ptr.add(start));
            any = any.or(acc);
        }
        start += WORDS_PER_LINE;
    }
    // SAFETY: `L`'s features are available.
    let mut any_set = !unsafe { any.is_zero() };
    if full < n {
        let chunk = &mut out[full..];
        chunk.copy_from_slice(&first[full..n]);
        for row in rest {
            if chunk.iter().all(|&w| w == 0) {
                break;
            }
            for (o, &w) in chunk.iter_mut().zip(&row[full..n]) {
                *o &= w;
            }
        }
        any_set |= chunk.iter().any(|&w| w != 0);
    }
    any_set
}

/// Runs of at most this many words (four lines) are ANDed by [`and_runs`]
/// position by position, with an exit test per run.
pub(super) const SHORT_RUN_WORDS: usize = 4 * WORDS_PER_LINE;

/// Row runs whose start pointers [`and_runs`] and the single-key path of
/// [`count_runs`](super::count::count_runs) keep on the stack; longer
/// position lists (more hashes than any real filter uses) take a
/// position-indexed loop for the rest. (Its groups of keys compute run
/// addresses from positions: see `count_group_digits` in `count`.)
const HOISTED_RUNS: usize = 32;

/// The row runs of one query key: start pointers for the first
/// [`HOISTED_RUNS`] positions, computed once per call rather than once per
/// chunk and run.
pub(super) struct Runs<'a> {
    base: *const u64,
    stride: usize,
    ptrs: [*const u64; HOISTED_RUNS],
    hoisted: usize,
    extra: &'a [u32],
}

impl<'a> Runs<'a> {
    /// No runs of `rows`, `stride` words apart, yet: [`Runs::set`] names
    /// them. Kernels build a `Runs` once and set it in place, never moving
    /// one after `set`: a copy of a table just written pointer by pointer
    /// is read back as vectors, and each such read stalls on store
    /// forwarding, a large share of the scoring kernel's time on short runs
    /// (`bench/RESULTS.md`, section "Scoring").
    #[inline(always)]
    pub(super) fn empty(rows: &[u64], stride: usize) -> Self {
        let base = rows.as_ptr();
        Runs { base, stride, ptrs: [base; HOISTED_RUNS], hoisted: 0, extra: &[] }
    }

    /// Makes these the runs at `positions` (not empty, for
    /// [`Runs::and_chunk`]); the caller has checked that each run fits in
    /// the rows.
    #[inline(always)]
    pub(super) fn set(&mut self, positions: &'a [u32]) {
        let hoisted = positions.len().min(HOISTED_RUNS);
        for (ptr, &p) in self.ptrs.iter_mut().zip(&positions[..hoisted]) {
            *ptr = self.base.wrapping_add(p as usize * self.stride);
        }
        self.hoisted = hoisted;
        self.extra = &positions[hoisted..];
    }

    /// The AND of the 512-bit chunk at word `start` of every run, or zero
    /// as soon as it is known to be zero ([`and_lines`]).
    ///
    /// # Safety
    ///
    /// At least one run; `start + 8` words must lie inside every run; `L`'s
    /// features must be available.
    #[inline(always)]
    pub(super) unsafe fn and_chunk<L: Line>(&self, start: usize) -> L {
        let runs = &self.ptrs[..self.hoisted];
        // SAFETY: each pointer is the start of a run that holds words
        // `start..start + 8` (this function's contract); `L`'s features
        // are available.
        unsafe {
            let mut acc = and_lines::<L>(runs.len(), |i| runs[i].add(start));
            for &p in self.extra {
                if acc.is_zero() {
                    break;
                }
                acc = acc.and(L::load(self.base.add(p as usize * self.stride + start)));
            }
            acc
        }
    }
}

/// The AND of the lines at `line(0)..line(n)` (`n` at least 1), or zero as
/// soon as it is known to be zero. After the first two lines, lines are
/// combined two at a time ([`Line::and3`], one `vpternlogq` on AVX-512)
/// and the early exit is tested before each pair: on long runs (1 280
/// bytes at N = 10 000) a test and loop step per run cost more than the
/// rare run it spares (`bench/RESULTS.md`, section "Kernels").
///
/// # Safety
///
/// `line(i)` must be valid for reading eight words for every `i < n`, and
/// `L`'s features must be available.
#[inline(always)]
pub(super) unsafe fn and_lines<L: Line>(n: usize, line: impl Fn(usize) -> *const u64) -> L {
    // SAFETY: every line read is one of `line(0)..line(n)` (this
    // function's contract); `L`'s features are available.
    unsafe {
        let mut acc = L::load(line(0));
        if n < 2 {
            return acc;
        }
        // The first two lines unconditionally: in a sparse index most
        // chunks still have a bit after one run and none after two.
        acc = acc.and(L::load(line(1)));
        let mut i = 2;
        while i + 1 < n {
            if acc.is_zero() {
                return acc;
            }
            acc = acc.and3(L::load(line(i)), L::load(line(i + 1)));
            i += 2;
        }
        if i + 1 == n && !acc.is_zero() {
            acc = acc.and(L::load(line(i)));
        }
        acc
    }
}

/// See [`all::and_runs`].
///
/// Walks the output one 512-bit chunk at a time, ANDing that chunk of
/// every run ([`Runs::and_chunk`]), so all `k` runs stream in parallel.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn and_runs<L: Line>(rows: &[u64], stride: usize, positions: &[u32], out: &mut [u64]) -> bool {
    let n = out.len();
    // Runs start at `p * stride`, so every run fits when the last one does:
    // one check instead of one per position.
    if let Some(last) = all::max_position(positions) {
        assert!(all::run_fits(rows.len(), stride, last, n), "row run past the end of the rows");
    }
    if positions.is_empty() {
        return all::and_of_no_rows(out);
    }
    let full = n - n % WORDS_PER_LINE;
    let out_ptr = out.as_mut_ptr();
    // SAFETY: `L`'s features are available (this function's contract).
    let mut any = unsafe { L::zero() };
    let mut start = 0;
    if full <= SHORT_RUN_WORDS {
        // Short runs (a few lines, mostly in cache by now): setting up
        // `Runs` costs more than it saves, and in a sparse index the
        // per-run exit after the second run is what matters.
        let base = rows.as_ptr();
        while start < full {
            // SAFETY: for every position `p`, `p * stride + n <= rows.len()`
            // (asserted above) and `start + 8 <= full <= n`, so each load
            // is in bounds of `rows` and the store of `out`; `L`'s features
            // are available.
            unsafe {
                let mut acc = L::load(base.add(positions[0] as usize * stride + start));
                for &p in &positions[1..] {
                    if acc.is_zero() {
                        break;
                    }
                    acc = acc.and(L::load(base.add(p as usize * stride + start)));
                }
                acc.store(out_ptr.add(start));
                any = any.or(acc);
            }
            start += WORDS_PER_LINE;
        }
    } else {
        let mut runs = Runs::empty(rows, stride);
        runs.set(positions);
        while start < full {
            // SAFETY: every run holds `n` words (asserted above) and
            // `start + 8 <= full <= n`, so the chunk lies inside every run
            // and the store inside `out`; there is at least one run; `L`'s
            // features are available.
            unsafe {
                let acc: L = runs.and_chunk(start);
                acc.store(out_ptr.add(start));
                any = any.or(acc);
            }
            start += WORDS_PER_LINE;
        }
    }
    // SAFETY: `L`'s features are available.
    let mut any_set = !unsafe { any.is_zero() };
    if full < n {
        let at = |p: u32| p as usize * stride;
        let (&first, rest) = positions.split_first().expect("positions is not empty");
        let chunk = &mut out[full..];
        chunk.copy_from_slice(&rows[at(first) + full..at(first) + n]);
        for &p in rest {
            if chunk.iter().all(|&w| w == 0) {
                break;
            }
            for (o, &w) in chunk.iter_mut().zip(&rows[at(p) + full..at(p) + n]) {
                *o &= w;
            }
        }
        any_set |= chunk.iter().any(|&w| w != 0);
    }
    any_set
}

//! Scoring: the AND of each key's row runs added to bit-sliced counters,
//! [`count_runs`], with its look-ahead prefetches ([`prefetch_chunk`]) and
//! the one-chunk step the SIMD backends use for a last, partial chunk
//! ([`count_chunk`]).

use super::and::{max_position, run_fits};
use crate::{LookAhead, WORDS_PER_LINE};

/// Adds the AND of each key's row runs to bit-sliced counters: steps of a
/// multi-key score.
///
/// The counters are `planes.len() / width` bit-planes of `width` words
/// each: plane `j` is `planes[j * width..(j + 1) * width]` and holds bit `j`
/// of every column's counter (column `c` is bit `c % 64` of word `c / 64`).
/// `positions` holds `keys` keys' runs, `positions.len() / keys` each, key
/// after key. For every 512-bit chunk `c` of the width (eight words; the
/// last chunk may be shorter) whose bit `c` of `live` is set, each key's
/// runs are ANDed exactly as [`and_runs`](super::and_runs) does (run `i` is
/// `rows[positions[i] * stride..]`, early exit once the chunk is zero), and
/// the result is added, one per set bit, to the counters of the chunk's
/// columns: a ripple carry from plane 0 upwards that stops as soon as the
/// carry is zero. A carry out of the top plane is dropped (the counters
/// wrap modulo `2^planes`); callers keep enough planes for the number of
/// keys they add. Chunks whose `live` bit is clear are neither read nor
/// changed. A key of no runs (empty `positions`) ANDs to all ones (every
/// column gains one).
///
/// `ahead` names runs a later call will read (positions into the same
/// `rows` and `stride`, any number of keys): their live chunks are
/// prefetched into the cache `into` names (by default
/// [`LookAhead::detect`]: L1 on Intel, L2 elsewhere), a hint with no
/// visible effect.
/// The SIMD backends spread these prefetches over the chunk walk, a chunk
/// of every `ahead` run per live chunk scored, so that the next call's runs
/// stream in while this call computes instead of in a burst before it
/// (`bench/RESULTS.md`, section "Scoring"); a call of more keys than
/// they sum at once spreads `ahead` over its last group's walk and
/// prefetches each later group of its own keys during the walk of the
/// group before. This reference issues them all first. A position
/// of `ahead` is never read, so it need not lie inside `rows`.
///
/// Returns whether any key's AND had a set bit in a live chunk.
///
/// # Panics
///
/// Panics if `keys` is 0 or does not divide `positions.len()`, if
/// `planes.len()` is not a non-zero multiple of `width` (for `width > 0`),
/// if `live` has fewer than `width.div_ceil(8)` bits, or if a run reaches
/// past the end of `rows`.
#[expect(clippy::too_many_arguments, reason = "one kernel signature shared by every backend")]
pub fn count_runs(
    rows: &[u64],
    stride: usize,
    positions: &[u32],
    keys: usize,
    width: usize,
    live: &[u64],
    planes: &mut [u64],
    ahead: &[u32],
    into: LookAhead,
) -> bool {
    check_count_args(rows.len(), stride, (positions.len(), max_position(positions)), keys, width, live, planes.len());
    let mut start = 0;
    while start < width {
        let chunk = start / WORDS_PER_LINE;
        if (live[chunk / 64] >> (chunk % 64)) & 1 == 1 {
            prefetch_chunk(rows.as_ptr(), stride, ahead, start, into);
        }
        start += WORDS_PER_LINE;
    }
    let per_key = positions.len() / keys;
    let mut any = false;
    let mut start = 0;
    while start < width {
        let end = (start + WORDS_PER_LINE).min(width);
        let chunk = start / WORDS_PER_LINE;
        if (live[chunk / 64] >> (chunk % 64)) & 1 == 1 {
            for key in 0..keys {
                let at = key * per_key;
                any |= count_chunk(rows, stride, &positions[at..at + per_key], width, start..end, planes);
            }
        }
        start = end;
    }
    any
}

/// Prefetches into the cache `into` names the line at word `start` of the
/// run at every position of `ahead` (`rows` words apart from `base`): the
/// look-ahead of [`count_runs`]. Addresses only, so any position is safe.
#[inline(always)]
pub(crate) fn prefetch_chunk(base: *const u64, stride: usize, ahead: &[u32], start: usize, into: LookAhead) {
    let line = |p: u32| base.wrapping_add((p as usize).wrapping_mul(stride).wrapping_add(start));
    match into {
        LookAhead::L1 => ahead.iter().for_each(|&p| crate::prefetch_line(line(p))),
        LookAhead::L2 => ahead.iter().for_each(|&p| crate::prefetch_line_l2(line(p))),
    }
}

/// [`count_runs`] on the words `span` (at most one chunk) of every plane;
/// returns whether the AND had a set bit. The SIMD backends use it for the
/// last, partial chunk. Arguments are checked by the caller.
#[inline]
pub(crate) fn count_chunk(
    rows: &[u64],
    stride: usize,
    positions: &[u32],
    width: usize,
    span: core::ops::Range<usize>,
    planes: &mut [u64],
) -> bool {
    let (start, end) = (span.start, span.end);
    let mut acc = [!0u64; WORDS_PER_LINE];
    let acc = &mut acc[..end - start];
    for (i, &p) in positions.iter().enumerate() {
        if i > 0 && acc.iter().all(|&w| w == 0) {
            break;
        }
        let run = &rows[p as usize * stride + start..p as usize * stride + end];
        for (a, &w) in acc.iter_mut().zip(run) {
            *a &= w;
        }
    }
    if acc.iter().all(|&w| w == 0) {
        return false;
    }
    let carry = acc;
    for j in 0..planes.len() / width {
        let plane = &mut planes[j * width + start..j * width + end];
        for (p, c) in plane.iter_mut().zip(carry.iter_mut()) {
            let sum = *p ^ *c;
            *c &= *p;
            *p = sum;
        }
        if carry.iter().all(|&w| w == 0) {
            break;
        }
    }
    true
}

/// The argument checks shared by every backend's [`count_runs`]: `positions`
/// is the number of positions, `last` their maximum ([`max_position`]).
#[inline]
pub(crate) fn check_count_args(
    rows_len: usize,
    stride: usize,
    (positions, last): (usize, Option<u32>),
    keys: usize,
    width: usize,
    live: &[u64],
    planes_len: usize,
) {
    if width > 0 {
        assert!(
            planes_len >= width && planes_len.is_multiple_of(width),
            "count_runs: planes are not whole planes of width words"
        );
    }
    assert!(live.len() * 64 >= width.div_ceil(WORDS_PER_LINE), "count_runs: live mask too short");
    assert!(
        keys == 1 || (keys > 0 && positions.is_multiple_of(keys)),
        "count_runs: positions are not `keys` equal runs"
    );
    // Runs start at `p * stride`, so every run fits when the last one
    // does: a maximum and one check, not one per position.
    if let Some(last) = last {
        assert!(run_fits(rows_len, stride, last, width), "row run past the end of the rows");
    }
}

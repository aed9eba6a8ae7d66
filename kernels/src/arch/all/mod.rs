//! Scalar reference kernels: the definition of record for every kernel.
//!
//! These are deliberately plain: one `u64` at a time, the same chunking and
//! early-exit rules the SIMD backends follow. Every other backend is tested
//! bit for bit against them.

use crate::{LookAhead, WORDS_PER_LINE};

/// ANDs the row runs in `rows` word by word into `out` and reports whether
/// any bit of `out` is set.
///
/// The work is done in 512-bit chunks (8 words). Inside a chunk, once the
/// running AND is all zero the remaining rows are not read for that chunk:
/// the rows of a sparse index are mostly zero, so most chunks die after the
/// first two rows and their memory is never touched. Only the first
/// `out.len()` words of each row are used. With no rows at all, `out` is
/// filled with ones (the identity of AND).
///
/// # Panics
///
/// Panics if a row is shorter than `out`.
pub fn and_rows(rows: &[&[u64]], out: &mut [u64]) -> bool {
    for row in rows {
        assert!(row.len() >= out.len(), "row run shorter than the output");
    }
    and_chunked(rows.len(), |i, start, end| &rows[i][start..end], out)
}

/// [`and_rows`] over row runs named by position: run `i` is
/// `rows[positions[i] * stride..][..out.len()]`. This is the form the sliced
/// index uses (row `p` of a shard starts at word `p * stride`); it spares the
/// caller building a table of slices for every query.
///
/// # Panics
///
/// Panics if a run reaches past the end of `rows`.
pub fn and_runs(rows: &[u64], stride: usize, positions: &[u32], out: &mut [u64]) -> bool {
    for &p in positions {
        assert!(run_fits(rows.len(), stride, p, out.len()), "row run past the end of the rows");
    }
    and_chunked(
        positions.len(),
        |i, start, end| {
            let at = positions[i] as usize * stride;
            &rows[at + start..at + end]
        },
        out,
    )
}

/// The loop of [`and_rows`] and [`and_runs`] over `count` runs, words
/// `start..end` of run `i` being `run(i, start, end)`.
#[inline(always)]
fn and_chunked<'a>(count: usize, run: impl Fn(usize, usize, usize) -> &'a [u64], out: &mut [u64]) -> bool {
    if count == 0 {
        return and_of_no_rows(out);
    }
    let n = out.len();
    let mut any = 0u64;
    let mut start = 0;
    while start < n {
        let end = (start + WORDS_PER_LINE).min(n);
        let chunk = &mut out[start..end];
        chunk.copy_from_slice(run(0, start, end));
        for i in 1..count {
            if chunk.iter().all(|&w| w == 0) {
                break;
            }
            for (o, &w) in chunk.iter_mut().zip(run(i, start, end)) {
                *o &= w;
            }
        }
        any |= chunk.iter().fold(0, |acc, &w| acc | w);
        start = end;
    }
    any != 0
}

/// The AND of no rows, all ones (the identity of AND), into `out`; returns
/// whether `out` has a bit.
#[inline(always)]
pub(crate) fn and_of_no_rows(out: &mut [u64]) -> bool {
    out.fill(!0);
    !out.is_empty()
}

/// Whether the run of `len` words at row `position` (stride `stride`) lies
/// inside `rows_len` words, without overflow.
#[inline]
pub(crate) fn run_fits(rows_len: usize, stride: usize, position: u32, len: usize) -> bool {
    (position as usize).checked_mul(stride).and_then(|s| s.checked_add(len)).is_some_and(|end| end <= rows_len)
}

/// Calls `f` with the index of every set bit of `words`, in increasing order
/// (bit `j` of word `i` has index `64 * i + j`).
#[inline]
pub fn for_each_set_bit(words: &[u64], mut f: impl FnMut(usize)) {
    for (i, &word) in words.iter().enumerate() {
        let mut w = word;
        while w != 0 {
            f(i * 64 + w.trailing_zeros() as usize);
            w &= w - 1;
        }
    }
}

/// Appends `table[i]` to `out` for every set bit `i` of `words AND mask`,
/// in increasing order of `i` (bit `j` of word `w` has index `64 * w + j`):
/// the ids of the columns a query matched, `mask` keeping only columns in
/// use. An identity `table` yields the bit indexes themselves.
///
/// # Panics
///
/// Panics if `mask` and `words` differ in length or `table` has fewer than
/// `64 * words.len()` entries (one for every bit of `words`).
pub fn append_mapped_bits(words: &[u64], mask: &[u64], table: &[u64], out: &mut Vec<u64>) {
    check_mapped_bits(words, mask, table);
    for (i, (&w, &m)) in words.iter().zip(mask).enumerate() {
        let mut x = w & m;
        while x != 0 {
            out.push(table[i * 64 + x.trailing_zeros() as usize]);
            x &= x - 1;
        }
    }
}

/// The argument checks of [`append_mapped_bits`], shared with its SIMD
/// version.
#[inline]
pub(crate) fn check_mapped_bits(words: &[u64], mask: &[u64], table: &[u64]) {
    assert_eq!(words.len(), mask.len(), "append_mapped_bits: words and mask differ in length");
    assert!(table.len() / 64 >= words.len(), "append_mapped_bits: table shorter than 64 entries per word");
}

/// ORs `src` into `dst` word by word and returns how many bits of `dst`
/// changed from 0 to 1.
///
/// # Panics
///
/// Panics if the slices differ in length.
pub fn or_into(dst: &mut [u64], src: &[u64]) -> u64 {
    assert_eq!(dst.len(), src.len(), "or_into: length mismatch");
    let mut new_bits = 0u64;
    for (d, &s) in dst.iter_mut().zip(src) {
        new_bits += u64::from((s & !*d).count_ones());
        *d |= s;
    }
    new_bits
}

/// Number of set bits in `words`.
pub fn popcount(words: &[u64]) -> u64 {
    words.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// Number of set bits in `a AND b`.
///
/// # Panics
///
/// Panics if the slices differ in length.
pub fn and_popcount(a: &[u64], b: &[u64]) -> u64 {
    assert_eq!(a.len(), b.len(), "and_popcount: length mismatch");
    a.iter().zip(b).map(|(x, y)| u64::from((x & y).count_ones())).sum()
}

/// Number of set bits in `a OR b`.
///
/// # Panics
///
/// Panics if the slices differ in length.
pub fn or_popcount(a: &[u64], b: &[u64]) -> u64 {
    assert_eq!(a.len(), b.len(), "or_popcount: length mismatch");
    a.iter().zip(b).map(|(x, y)| u64::from((x | y).count_ones())).sum()
}

/// Number of set bits in `a XOR b` (the Hamming distance).
///
/// # Panics
///
/// Panics if the slices differ in length.
pub fn xor_popcount(a: &[u64], b: &[u64]) -> u64 {
    assert_eq!(a.len(), b.len(), "xor_popcount: length mismatch");
    a.iter().zip(b).map(|(x, y)| u64::from((x ^ y).count_ones())).sum()
}

/// Adds the AND of each key's row runs to bit-sliced counters: steps of a
/// multi-key score.
///
/// The counters are `planes.len() / width` bit-planes of `width` words
/// each: plane `j` is `planes[j * width..(j + 1) * width]` and holds bit `j`
/// of every column's counter (column `c` is bit `c % 64` of word `c / 64`).
/// `positions` holds `keys` keys' runs, `positions.len() / keys` each, key
/// after key. For every 512-bit chunk `c` of the width (eight words; the
/// last chunk may be shorter) whose bit `c` of `live` is set, each key's
/// runs are ANDed exactly as [`and_runs`] does (run `i` is
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
/// prefetched into the cache [`LookAhead::detect`] chooses (L1 on Intel,
/// L2 elsewhere), a hint with no visible effect.
/// The SIMD backends spread these prefetches over the chunk walk, a chunk
/// of every `ahead` run per live chunk scored, so that the next call's runs
/// stream in while this call computes instead of in a burst before it
/// (measured in `bench/RESULTS.md`: grouped scoring of 1 000-key queries
/// on 1 250-byte runs became 1.6-1.9x faster); a call of more keys than
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
) -> bool {
    check_count_args(rows.len(), stride, (positions.len(), max_position(positions)), keys, width, live, planes.len());
    let into = LookAhead::detect();
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

/// The largest of `positions`, `None` if there are none. Inlined into each
/// caller so that the SIMD backends compute it with their vector maximum
/// (compiled here, for the baseline target, it was a branchy scalar loop:
/// 5% of pruned scoring's time at `N = 1 000`, `bench/RESULTS.md`).
#[inline(always)]
pub(crate) fn max_position(positions: &[u32]) -> Option<u32> {
    (!positions.is_empty()).then(|| positions.iter().fold(0, |m, &p| m.max(p)))
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

/// Compares bit-sliced counters with a threshold: sets bit `c` of `out`
/// exactly when column `c`'s counter is at least `threshold`, and returns
/// whether any bit of `out` is set.
///
/// The counters are the planes of [`count_runs`], `out.len()` words per
/// plane (`planes.len() / out.len()` planes). The comparison runs from the
/// top plane down with a "greater" and an "equal so far" mask, so it costs
/// one pass over the planes whatever the threshold. A threshold of 0 sets
/// every bit; a threshold of `2^planes` or more sets none.
///
/// # Panics
///
/// Panics if `planes.len()` is not a non-zero multiple of `out.len()` (for
/// a non-empty `out`).
pub fn count_at_least(planes: &[u64], threshold: u32, out: &mut [u64]) -> bool {
    if at_least_planes(planes.len(), threshold, out).is_none() {
        return false;
    }
    let width = out.len();
    let mut any = 0;
    for (i, o) in out.iter_mut().enumerate() {
        *o = at_least_word(planes, width, i, threshold);
        any |= *o;
    }
    any != 0
}

/// The argument check and the trivial answers of every backend's
/// [`count_at_least`]: `None` when the answer is known without reading the
/// planes (`out` is empty, or `threshold` needs more planes than there are:
/// `out` is then cleared), otherwise the number of planes.
///
/// # Panics
///
/// Panics if `planes_len` is not a non-zero multiple of `out.len()` (for a
/// non-empty `out`).
#[inline]
pub(crate) fn at_least_planes(planes_len: usize, threshold: u32, out: &mut [u64]) -> Option<usize> {
    let width = out.len();
    if width == 0 {
        return None;
    }
    assert!(
        planes_len >= width && planes_len.is_multiple_of(width),
        "count_at_least: planes are not whole planes of out.len() words"
    );
    let n_planes = planes_len / width;
    if n_planes < 32 && threshold >> n_planes != 0 {
        out.fill(0);
        return None;
    }
    Some(n_planes)
}

/// Word `i` of [`count_at_least`]'s answer (the threshold is known to fit
/// in the planes, or the planes number 32 or more).
#[inline]
pub(crate) fn at_least_word(planes: &[u64], width: usize, i: usize, threshold: u32) -> u64 {
    let (mut greater, mut equal) = (0u64, !0u64);
    for j in (0..planes.len() / width).rev() {
        let p = planes[j * width + i];
        if j < 32 && (threshold >> j) & 1 == 1 {
            equal &= p;
        } else {
            greater |= equal & p;
            equal &= !p;
        }
    }
    greater | equal
}

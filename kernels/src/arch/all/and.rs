//! The AND of row runs with an early exit, one `u64` at a time:
//! [`and_rows`] (runs given as slices) and [`and_runs`] (runs named by
//! position), plus the run checks every backend shares ([`run_fits`],
//! [`max_position`]).

use crate::WORDS_PER_LINE;

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

/// [`and_runs`] of `mask.len()` words, then
/// [`append_mapped_bits`](super::append_mapped_bits) of the result with
/// `mask` and `table`, 512 bits at a time with no buffer in between: one
/// key's query of one shard, all at once. The answer is appended to `out`
/// exactly as the two kernels in a row would append it.
///
/// # Panics
///
/// Panics if a run reaches past the end of `rows` or `table` has fewer
/// than `64 * mask.len()` entries.
pub fn and_runs_mapped(
    rows: &[u64],
    stride: usize,
    positions: &[u32],
    mask: &[u64],
    table: &[u64],
    out: &mut Vec<u64>,
) {
    let n = mask.len();
    for &p in positions {
        assert!(run_fits(rows.len(), stride, p, n), "row run past the end of the rows");
    }
    assert!(table.len() / 64 >= n, "and_runs_mapped: table shorter than 64 entries per mask word");
    let mut chunk = [0u64; WORDS_PER_LINE];
    let mut start = 0;
    while start < n {
        let end = (start + WORDS_PER_LINE).min(n);
        let words = &mut chunk[..end - start];
        and_chunked(
            positions.len(),
            |i, s, e| {
                let at = positions[i] as usize * stride + start;
                &rows[at + s..at + e]
            },
            words,
        );
        super::append_mapped_bits(words, &mask[start..end], &table[start * 64..], out);
        start = end;
    }
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

/// The largest of `positions`, `None` if there are none. Inlined into each
/// caller so that the SIMD backends compute it with their vector maximum
/// (compiled here, for the baseline target, it was a branchy scalar loop
/// that showed in pruned scoring's profile at `N = 1 000`:
/// `bench/RESULTS.md`, section "Scoring").
#[inline(always)]
pub(crate) fn max_position(positions: &[u32]) -> Option<u32> {
    (!positions.is_empty()).then(|| positions.iter().fold(0, |m, &p| m.max(p)))
}

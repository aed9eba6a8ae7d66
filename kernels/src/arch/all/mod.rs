//! Scalar reference kernels: the definition of record for every kernel.
//!
//! These are deliberately plain: one `u64` at a time, the same chunking and
//! early-exit rules the SIMD backends follow. Every other backend is tested
//! bit for bit against them.

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
    let n = out.len();
    for row in rows {
        assert!(row.len() >= n, "row run shorter than the output");
    }
    let Some((first, rest)) = rows.split_first() else {
        out.fill(!0);
        return !out.is_empty();
    };
    let mut any = 0u64;
    let mut start = 0;
    while start < n {
        let end = (start + WORDS_PER_LINE).min(n);
        let chunk = &mut out[start..end];
        chunk.copy_from_slice(&first[start..end]);
        for row in rest {
            if chunk.iter().all(|&w| w == 0) {
                break;
            }
            for (o, &w) in chunk.iter_mut().zip(&row[start..end]) {
                *o &= w;
            }
        }
        any |= chunk.iter().fold(0, |acc, &w| acc | w);
        start = end;
    }
    any != 0
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
    let n = out.len();
    for &p in positions {
        assert!(run_fits(rows.len(), stride, p, n), "row run past the end of the rows");
    }
    let Some((&first, rest)) = positions.split_first() else {
        out.fill(!0);
        return !out.is_empty();
    };
    let mut any = 0u64;
    let mut start = 0;
    while start < n {
        let end = (start + WORDS_PER_LINE).min(n);
        let chunk = &mut out[start..end];
        let at = |p: u32| p as usize * stride;
        chunk.copy_from_slice(&rows[at(first) + start..at(first) + end]);
        for &p in rest {
            if chunk.iter().all(|&w| w == 0) {
                break;
            }
            for (o, &w) in chunk.iter_mut().zip(&rows[at(p) + start..at(p) + end]) {
                *o &= w;
            }
        }
        any |= chunk.iter().fold(0, |acc, &w| acc | w);
        start = end;
    }
    any != 0
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

/// Appends `offset + index` for every set bit of `words` to `out`, in
/// increasing order.
pub fn append_set_bits(words: &[u64], offset: u32, out: &mut Vec<u32>) {
    for_each_set_bit(words, |i| out.push(offset + i as u32));
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

/// Adds bit `i` of `words` to `counters[i]` for every `i < counters.len()`
/// (saturating), the step of a multi-key threshold query that counts how
/// many of a query's keys each filter matches.
///
/// # Panics
///
/// Panics if `words` holds fewer than `counters.len()` bits.
pub fn accumulate_bits(words: &[u64], counters: &mut [u16]) {
    assert!(words.len() * 64 >= counters.len(), "accumulate_bits: too few words");
    for (i, c) in counters.iter_mut().enumerate() {
        *c = c.saturating_add(((words[i / 64] >> (i % 64)) & 1) as u16);
    }
}

//! Narrow shards: the storage rule of shard widths and the scalar code of
//! the shards narrower than a cache line.
//!
//! A shard of `w` columns stores row `r` as bits `[r * w, (r + 1) * w)` of
//! its word array, for every width:
//!
//! - **sub-word** (`w` = 1, 2, 4, 8, 16 or 32): `64 / w` rows share a word
//!   and a row never straddles two (`w` divides 64); a 1-column shard is a
//!   plain Bloom filter. A key's `k` probe rows are `k` masked shifts and
//!   ANDs of a few bits (`and_sub_word`);
//! - **word-packed** (`w` = 64, 128 or 256): rows of 1, 2 or 4 words; a
//!   power of two, so a row never straddles a cache line. A query ANDs a
//!   row as a fixed-size array of words (`query_word_packed`): the kernels
//!   take runs shorter than a line (their tail, word by word through
//!   slices) and answer alike, but cost more instructions on a run of a
//!   few words (`query_batch_1000_keys` under callgrind, see
//!   `bench/RESULTS.md`, section "Query");
//! - **line-packed** (a multiple of [`SHARD_COLUMN_STEP`]): whole cache
//!   lines per row, the layout the kernels' 512-bit chunks and early exit
//!   are built for.
//!
//! A shard's rows take `ceil(m * w / 64)` words, rounded up to a whole cache
//! line ([`shard_words`]); the padding is zero. An index grows its first
//! shard from the narrowest width that holds its sets, doubling up to 512
//! columns, then in steps of 512 ([`shard_columns_for`]).
//!
//! Scoring (`score_into`, `query_threshold`) counts the columns of every
//! shard narrower than a cache line here, key by key, in plain counters
//! (`count_narrow`): such a shard has no 512-column chunk for the
//! bit-sliced counters and their pruning to work on, and is at most 256
//! columns, so a key costs a few words.

use bloomslice_kernels::WORDS_PER_LINE;
use bloomslice_kernels::arch::all::for_each_set_bit;

use super::{SHARD_COLUMN_STEP, Shard};
use crate::hash::{Key, KeyHash};
use crate::params::BloomParams;

/// Widest shard whose rows are stored below a cache line (4 words).
pub const MAX_NARROW_COLUMNS: usize = 256;

/// The width a shard takes to hold `columns` columns: the least power of
/// two (at least 1) up to [`SHARD_COLUMN_STEP`], then the least multiple of
/// [`SHARD_COLUMN_STEP`].
///
/// ```
/// use bloomslice::sliced::shard_columns_for;
///
/// assert_eq!(shard_columns_for(0), 1);
/// assert_eq!(shard_columns_for(2), 2);
/// assert_eq!(shard_columns_for(3), 4);
/// assert_eq!(shard_columns_for(100), 128);
/// assert_eq!(shard_columns_for(513), 1024);
/// ```
pub fn shard_columns_for(columns: usize) -> usize {
    if columns <= SHARD_COLUMN_STEP {
        columns.max(1).next_power_of_two()
    } else {
        columns.next_multiple_of(SHARD_COLUMN_STEP)
    }
}

/// Whether `columns` is a shard width: a power of two up to
/// [`MAX_NARROW_COLUMNS`], or a multiple of [`SHARD_COLUMN_STEP`] up to
/// `max` (the index's widest shard).
pub fn is_shard_width(columns: usize, max: usize) -> bool {
    (columns.is_power_of_two() && columns <= MAX_NARROW_COLUMNS)
        || (columns > 0 && columns.is_multiple_of(SHARD_COLUMN_STEP) && columns <= max)
}

/// Words of row storage of a shard of `columns` columns and `m` rows:
/// `ceil(m * columns / 64)`, rounded up to a whole cache line (8 words).
/// `None` on overflow.
pub fn shard_words(m: usize, columns: usize) -> Option<usize> {
    let bits = m.checked_mul(columns)?;
    bits.div_ceil(64).checked_next_multiple_of(WORDS_PER_LINE)
}

/// Bytes of row storage of an index of `m`-bit filters holding `sets`
/// filters inserted into an empty index with widest shard `max_columns`
/// (a multiple of [`SHARD_COLUMN_STEP`]): full shards of `max_columns`
/// columns, then one of [`shard_columns_for`] the rest, each taking
/// [`shard_words`] words. `None` on overflow.
///
/// ```
/// use bloomslice::sliced::rows_bytes_for;
///
/// // Two sets of 1 000-bit filters: a 2-column shard, 2 000 bits, padded
/// // to whole cache lines.
/// assert_eq!(rows_bytes_for(1000, 2, 16_384), Some(256));
/// assert_eq!(rows_bytes_for(1000, 512, 16_384), Some(64_000));
/// ```
pub fn rows_bytes_for(m: u64, sets: u64, max_columns: usize) -> Option<u64> {
    let max = max_columns.max(SHARD_COLUMN_STEP);
    let m = usize::try_from(m).ok()?;
    let full = sets / max as u64;
    let rest = (sets % max as u64) as usize;
    let full_bytes = (shard_words(m, max)? as u64).checked_mul(8)?.checked_mul(full)?;
    let rest_bytes = if rest > 0 { (shard_words(m, shard_columns_for(rest))? as u64).checked_mul(8)? } else { 0 };
    full_bytes.checked_add(rest_bytes)
}

/// The mask of a sub-word row's `columns` bits.
#[inline]
fn row_mask(columns: usize) -> u64 {
    if columns >= 64 { !0 } else { (1u64 << columns) - 1 }
}

/// Row `r` of a sub-word shard (`columns < 64`): its bits, column `c` at bit `c`.
#[inline]
pub(super) fn sub_word_row(rows: &[u64], columns: usize, r: usize) -> u64 {
    let b = r * columns;
    (rows[b / 64] >> (b % 64)) & row_mask(columns)
}

/// The AND of a sub-word shard's rows at `positions` (column `c` at bit
/// `c`), stopping once it is zero. No positions: every column.
#[inline]
pub(super) fn and_sub_word(rows: &[u64], columns: usize, positions: &[u32]) -> u64 {
    let mut acc = row_mask(columns);
    for &p in positions {
        acc &= sub_word_row(rows, columns, p as usize);
        if acc == 0 {
            break;
        }
    }
    acc
}

/// Appends the owners of the used columns of a sub-word shard whose rows
/// at `positions` all have the column's bit.
#[inline]
pub(super) fn query_sub_word(shard: &Shard, positions: &[u32], out: &mut Vec<u64>) {
    let mut bits = and_sub_word(&shard.rows, shard.cols, positions) & shard.used[0];
    while bits != 0 {
        out.push(shard.owners[bits.trailing_zeros() as usize]);
        bits &= bits - 1;
    }
}

/// Appends the owners of the used columns of a shard narrower than a cache
/// line whose rows at `positions` all have the column's bit.
#[inline(never)]
pub(super) fn query_narrow(shard: &Shard, positions: &[u32], out: &mut Vec<u64>) {
    match shard.wpr {
        _ if shard.cols < 64 => query_sub_word(shard, positions, out),
        1 => query_word_packed::<1>(shard, positions, out),
        2 => query_word_packed::<2>(shard, positions, out),
        _ => query_word_packed::<4>(shard, positions, out),
    }
}

/// [`query_narrow`] computing `hash`'s probe positions in `params` as the
/// AND reads them, so a key whose AND goes to zero after a few rows (most
/// absent keys) computes only those positions. For a part of one narrow
/// shard queried without prefetching (a cache-resident collection).
#[inline]
pub(super) fn query_narrow_probing(shard: &Shard, params: &BloomParams, hash: KeyHash, out: &mut Vec<u64>) {
    if shard.cols < 64 {
        let (rows, columns) = (&shard.rows[..], shard.cols);
        let mut acc = row_mask(columns) & shard.used[0];
        params.try_each_probe(hash, |p| {
            acc &= sub_word_row(rows, columns, p as usize);
            acc != 0
        });
        let mut bits = acc;
        while bits != 0 {
            out.push(shard.owners[bits.trailing_zeros() as usize]);
            bits &= bits - 1;
        }
        return;
    }
    match shard.wpr {
        1 => probing_word_packed::<1>(shard, params, hash, out),
        2 => probing_word_packed::<2>(shard, params, hash, out),
        _ => probing_word_packed::<4>(shard, params, hash, out),
    }
}

/// [`query_word_packed`] with the positions computed as the AND reads them
/// (see [`query_narrow_probing`]).
#[inline]
fn probing_word_packed<const N: usize>(shard: &Shard, params: &BloomParams, hash: KeyHash, out: &mut Vec<u64>) {
    query_used(shard, &and_probing::<N>(shard, params, hash), out);
}

/// Appends the owners of the used columns of a word-packed shard (rows of
/// `N` = 1, 2 or 4 words) whose rows at `positions` all have the column's
/// bit. Fixed-size rows: the AND of a row is `N` words in registers with
/// one test for the early exit, where the kernels' tail for runs shorter
/// than a line works word by word through slices.
#[inline]
pub(super) fn query_word_packed<const N: usize>(shard: &Shard, positions: &[u32], out: &mut Vec<u64>) {
    let rows = &shard.rows[..];
    let row = |p: u32| -> [u64; N] {
        let at = p as usize * N;
        rows[at..at + N].try_into().expect("a row of N words")
    };
    let Some((&first, rest)) = positions.split_first() else {
        return query_used(shard, &[!0; N], out);
    };
    let mut acc = row(first);
    for &p in rest {
        if acc.iter().all(|&w| w == 0) {
            return;
        }
        let r = row(p);
        for (a, w) in acc.iter_mut().zip(r) {
            *a &= w;
        }
    }
    query_used(shard, &acc, out);
}

/// Appends the owners of the used columns whose bit `acc` has.
#[inline]
fn query_used(shard: &Shard, acc: &[u64], out: &mut Vec<u64>) {
    for (w, (&a, &used)) in acc.iter().zip(&shard.used).enumerate() {
        let mut bits = a & used;
        while bits != 0 {
            out.push(shard.owners[w * 64 + bits.trailing_zeros() as usize]);
            bits &= bits - 1;
        }
    }
}

/// The AND of the rows at `positions` of a shard narrower than a cache line
/// (any width up to [`MAX_NARROW_COLUMNS`]) into `acc` (its first
/// `shard.wpr` words; column `c` at bit `c % 64` of word `c / 64`).
/// Returns whether any bit is set.
fn and_narrow(shard: &Shard, positions: &[u32], acc: &mut [u64; MAX_NARROW_COLUMNS / 64]) -> bool {
    if shard.cols < 64 {
        acc[0] = and_sub_word(&shard.rows, shard.cols, positions);
        return acc[0] != 0;
    }
    let wpr = shard.wpr;
    acc[..wpr].fill(!0);
    for &p in positions {
        let row = &shard.rows[p as usize * wpr..][..wpr];
        let mut any = 0;
        for (a, &w) in acc.iter_mut().zip(row) {
            *a &= w;
            any |= *a;
        }
        if any == 0 {
            return false;
        }
    }
    acc[..wpr].iter().any(|&w| w != 0)
}

/// Scores `keys` against an index that is one shard narrower than a cache
/// line, key by key: each key's AND computes its probe positions as it
/// reads the rows (see [`query_narrow_probing`]), and each column its AND
/// keeps gains one. Appends `(owner, count)` for the used columns whose
/// count passes `keep`, in column order. With `prune_below = Some(c)`, the
/// scoring stops as soon as no column can reach `c` any more (its best
/// count plus the keys left is below `c`), appending nothing: no column
/// would pass a `keep` of at least `c`.
pub(super) fn score_narrow_probing<K: Key>(
    shard: &Shard,
    params: &BloomParams,
    keys: &[K],
    prune_below: Option<u32>,
    keep: impl Fn(u32) -> bool,
    out: &mut Vec<(u64, u32)>,
) {
    let mut counts = [0u32; MAX_NARROW_COLUMNS];
    let done = if shard.cols < 64 {
        let (rows, columns) = (&shard.rows[..], shard.cols);
        let mask = row_mask(columns) & shard.used[0];
        count_keys(params, keys, prune_below, &mut counts, |hash| {
            let mut acc = mask;
            params.try_each_probe(hash, |p| {
                acc &= sub_word_row(rows, columns, p as usize);
                acc != 0
            });
            [acc]
        })
    } else {
        match shard.wpr {
            1 => count_keys(params, keys, prune_below, &mut counts, |hash| and_probing::<1>(shard, params, hash)),
            2 => count_keys(params, keys, prune_below, &mut counts, |hash| and_probing::<2>(shard, params, hash)),
            _ => count_keys(params, keys, prune_below, &mut counts, |hash| and_probing::<4>(shard, params, hash)),
        }
    };
    if !done {
        return;
    }
    for_each_set_bit(&shard.used, |c| {
        if keep(counts[c]) {
            out.push((shard.owners[c], counts[c]));
        }
    });
}

/// Adds one to `counts[c]` for every bit `c` of `and(hash)` of each key;
/// returns `false` if it stopped early, once no count could reach
/// `prune_below`.
#[inline(always)]
fn count_keys<K: Key, const N: usize>(
    params: &BloomParams,
    keys: &[K],
    prune_below: Option<u32>,
    counts: &mut [u32; MAX_NARROW_COLUMNS],
    and: impl Fn(KeyHash) -> [u64; N],
) -> bool {
    let q = keys.len();
    let mut best = 0u32;
    for (i, key) in keys.iter().enumerate() {
        if let Some(min_count) = prune_below
            && (best as usize).saturating_add(q - i) < min_count as usize
        {
            return false;
        }
        let acc = and(params.hash(key));
        for (w, &a) in acc.iter().enumerate() {
            let mut bits = a;
            while bits != 0 {
                let c = w * 64 + bits.trailing_zeros() as usize;
                counts[c] += 1;
                best = best.max(counts[c]);
                bits &= bits - 1;
            }
        }
    }
    true
}

/// The AND of a word-packed shard's rows (`N` words each, starting from
/// its used columns) at `hash`'s probe positions, computed as they are
/// read (see [`query_narrow_probing`]).
#[inline(always)]
fn and_probing<const N: usize>(shard: &Shard, params: &BloomParams, hash: KeyHash) -> [u64; N] {
    let rows = &shard.rows[..];
    let mut acc: [u64; N] = shard.used[..N].try_into().expect("N used words");
    params.try_each_probe(hash, |p| {
        let at = p as usize * N;
        let row: [u64; N] = rows[at..at + N].try_into().expect("a row of N words");
        let mut any = 0;
        for (a, w) in acc.iter_mut().zip(row) {
            *a &= w;
            any |= *a;
        }
        any != 0
    });
    acc
}

/// Counts, for every used column of a shard narrower than a cache line,
/// how many of the `q` keys whose `k` positions each are in `positions`
/// have all their rows set there, and appends `(owner, count)` for the
/// columns whose count passes `keep`.
pub(super) fn count_narrow(
    shard: &Shard,
    positions: &[u32],
    k: usize,
    keep: impl Fn(u32) -> bool,
    out: &mut Vec<(u64, u32)>,
) {
    let mut counts = [0u32; MAX_NARROW_COLUMNS];
    let mut acc = [0u64; MAX_NARROW_COLUMNS / 64];
    for key in positions.chunks_exact(k) {
        if and_narrow(shard, key, &mut acc) {
            for (w, (&a, &used)) in acc.iter().zip(&shard.used).enumerate() {
                let mut bits = a & used;
                while bits != 0 {
                    counts[w * 64 + bits.trailing_zeros() as usize] += 1;
                    bits &= bits - 1;
                }
            }
        }
    }
    for_each_set_bit(&shard.used, |c| {
        if keep(counts[c]) {
            out.push((shard.owners[c], counts[c]));
        }
    });
}

/// Copies the rows of a sub-word shard (`from_cols < 64`) into the zeroed
/// rows of a wider shard, column `c` staying column `c`.
pub(super) fn widen_sub_word(from: &[u64], from_cols: usize, to: &mut [u64], to_cols: usize, m: usize) {
    for r in 0..m {
        let bits = sub_word_row(from, from_cols, r);
        if bits != 0 {
            let b = r * to_cols;
            to[b / 64] |= bits << (b % 64);
        }
    }
}

/// Per-column set bits of a shard of any width, counted over the bits of
/// its rows (bit `b` is column `b % columns`).
pub(super) fn ones_per_column(rows: &[u64], columns: usize) -> Vec<u64> {
    let mut counts = vec![0u64; columns];
    if columns.is_multiple_of(64) {
        let wpr = columns / 64;
        for row in rows.chunks_exact(wpr) {
            for_each_set_bit(row, |c| counts[c] += 1);
        }
    } else {
        for_each_set_bit(rows, |b| counts[b % columns] += 1);
    }
    counts
}

/// Checks a narrow shard's rows: no bit in an unused column of rows
/// `0..m`, and no bit past row `m` (the padding to a whole cache line).
/// Returns the row of the first bad bit (`m` for the padding).
pub(super) fn first_stray_row(shard: &Shard, m: usize) -> Option<usize> {
    let cols = shard.cols;
    if cols < 64 {
        let used = shard.used[0];
        if let Some(r) = (0..m).find(|&r| sub_word_row(&shard.rows, cols, r) & !used != 0) {
            return Some(r);
        }
        let end = m * cols;
        let tail = if end.is_multiple_of(64) { 0 } else { shard.rows[end / 64] >> (end % 64) };
        if tail != 0 || shard.rows[end.div_ceil(64)..].iter().any(|&w| w != 0) {
            return Some(m);
        }
        return None;
    }
    let wpr = shard.wpr;
    for r in 0..m {
        if shard.rows[r * wpr..][..wpr].iter().zip(&shard.used).any(|(w, &used)| w & !used != 0) {
            return Some(r);
        }
    }
    shard.rows[m * wpr..].iter().any(|&w| w != 0).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_and_words() {
        let widths: Vec<usize> = (0..=2000).map(shard_columns_for).collect();
        for (n, &w) in widths.iter().enumerate() {
            assert!(w >= n && is_shard_width(w, 16_384), "{n}: {w}");
        }
        assert_eq!(shard_columns_for(1), 1);
        assert_eq!(shard_columns_for(33), 64);
        assert_eq!(shard_columns_for(257), 512);
        assert_eq!(shard_columns_for(1025), 1536);
        for bad in [0, 3, 48, 384, 513, 1000] {
            assert!(!is_shard_width(bad, 16_384), "{bad}");
        }
        assert!(!is_shard_width(1024, 512));
        assert_eq!(shard_words(1000, 1), Some(16));
        assert_eq!(shard_words(1000, 2), Some(32));
        assert_eq!(shard_words(1000, 64), Some(1000));
        assert_eq!(shard_words(1001, 64), Some(1008));
        assert_eq!(shard_words(3, 512), Some(24));
        assert_eq!(shard_words(usize::MAX, 2), None);
    }

    #[test]
    fn sub_word_rows_and_and() {
        // 4 columns: row r is nibble r.
        let rows = [0xfedc_ba98_7654_3210u64, 0x0f];
        assert_eq!(sub_word_row(&rows, 4, 0), 0);
        assert_eq!(sub_word_row(&rows, 4, 3), 3);
        assert_eq!(sub_word_row(&rows, 4, 15), 0xf);
        assert_eq!(sub_word_row(&rows, 4, 16), 0xf);
        assert_eq!(and_sub_word(&rows, 4, &[15, 7, 16]), 7);
        assert_eq!(and_sub_word(&rows, 4, &[1, 2]), 0);
        assert_eq!(and_sub_word(&rows, 4, &[]), 0xf);
        assert_eq!(and_sub_word(&rows, 32, &[1]), 0xfedc_ba98);
        assert_eq!(and_sub_word(&rows, 1, &[4, 9]), 1);
        assert_eq!(and_sub_word(&rows, 1, &[4, 5]), 0);
    }

    #[test]
    fn widen_keeps_columns() {
        let m = 100;
        let mut from = vec![0u64; shard_words(m, 8).unwrap()];
        for r in 0..m {
            let b = r * 8;
            from[b / 64] |= ((r as u64 * 37) & 0xff) << (b % 64);
        }
        for to_cols in [16, 32, 64, 128, 512] {
            let mut to = vec![0u64; shard_words(m, to_cols).unwrap()];
            widen_sub_word(&from, 8, &mut to, to_cols, m);
            for r in 0..m {
                let b = r * to_cols;
                assert_eq!((to[b / 64] >> (b % 64)) & 0xff, (r as u64 * 37) & 0xff, "{to_cols} {r}");
            }
            assert_eq!(ones_per_column(&to, to_cols)[..8], ones_per_column(&from, 8)[..]);
        }
    }
}

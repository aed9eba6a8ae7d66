//! Extraction of set bits: [`for_each_set_bit`] (bit indexes, for
//! callers) and the kernel [`append_mapped_bits`] (table entries of the
//! set bits of `words AND mask`).

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

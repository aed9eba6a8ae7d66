//! Population counts: [`popcount`] of one slice and [`and_popcount`],
//! [`or_popcount`] and [`xor_popcount`] of two.

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

//! OR of one row into another, counting the bits it sets: [`or_into`].

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

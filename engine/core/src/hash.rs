//! Hashing keys into probe positions.
//!
//! A key is hashed once into a [`KeyHash`] `(h1, h2)`; the `k` probe positions
//! (by the parameters' [`crate::params::HashScheme`], for the default
//! `fastrange(h1 + i h2 + i(i-1)/2 h3, m)`) are then computed once per key
//! and reused for every filter of an index, which is what makes bit-slicing
//! work.

/// The two 64-bit words a key's probe positions are derived from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyHash {
    /// Start of the probe sequence.
    pub h1: u64,
    /// Step of the probe sequence (always odd).
    pub h2: u64,
}

impl KeyHash {
    /// The hash of a key whose 64-bit hash the caller computed itself.
    ///
    /// `h2` is derived from `h` with a strong 64-bit mixer, so a good `h` is
    /// all that is needed.
    #[inline]
    pub fn from_u64(h: u64) -> Self {
        KeyHash { h1: h, h2: mix64(h) | 1 }
    }

    /// Seeded xxh3-64 of `bytes`.
    #[inline]
    pub fn from_bytes(bytes: &[u8], seed: u64) -> Self {
        KeyHash::from_u64(xxhash_rust::xxh3::xxh3_64_with_seed(bytes, seed))
    }
}

/// The finaliser of SplitMix64 / Murmur3 with a fixed offset: a bijective
/// mix with full avalanche.
#[inline]
fn mix64(x: u64) -> u64 {
    let mut z = x ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Maps `x` to `[0, m)` with one multiplication (Lemire's fastrange), using
/// the high bits of `x`.
#[inline]
pub(crate) fn fastrange(x: u64, m: u64) -> u32 {
    ((u128::from(x) * u128::from(m)) >> 64) as u32
}

/// Something that can be looked up in a filter: byte strings, or a 64-bit
/// hash the caller already computed ([`Prehashed`]).
pub trait Key {
    /// The key's hash under `seed`.
    fn key_hash(&self, seed: u64) -> KeyHash;
}

/// A key the caller has already hashed to 64 bits. The seed is not applied:
/// the caller's hash is used as is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prehashed(pub u64);

impl Key for Prehashed {
    #[inline]
    fn key_hash(&self, _seed: u64) -> KeyHash {
        KeyHash::from_u64(self.0)
    }
}

impl Key for KeyHash {
    #[inline]
    fn key_hash(&self, _seed: u64) -> KeyHash {
        *self
    }
}

/// `Key` for byte strings: the hash of their bytes.
macro_rules! byte_keys {
    ($($ty:ty),*) => {$(
        impl Key for $ty {
            #[inline]
            fn key_hash(&self, seed: u64) -> KeyHash {
                KeyHash::from_bytes(<$ty as AsRef<[u8]>>::as_ref(self), seed)
            }
        }
    )*};
}

byte_keys!([u8], str, Vec<u8>, String);

impl<const N: usize> Key for [u8; N] {
    #[inline]
    fn key_hash(&self, seed: u64) -> KeyHash {
        KeyHash::from_bytes(self, seed)
    }
}

impl<K: Key + ?Sized> Key for &K {
    #[inline]
    fn key_hash(&self, seed: u64) -> KeyHash {
        (**self).key_hash(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastrange_stays_in_range() {
        for m in [1u64, 2, 7, 100_992, u64::from(u32::MAX)] {
            for x in [0u64, 1, u64::MAX, u64::MAX / 2, 0x1234_5678_9abc_def0] {
                assert!(u64::from(fastrange(x, m)) < m);
            }
        }
    }

    #[test]
    fn seed_changes_byte_hashes_but_not_prehashed() {
        assert_ne!(b"abc".key_hash(1), b"abc".key_hash(2));
        assert_eq!(Prehashed(5).key_hash(1), Prehashed(5).key_hash(2));
        assert_eq!("abc".key_hash(3), b"abc"[..].key_hash(3));
        assert_eq!(KeyHash::from_u64(9).h2 & 1, 1);
    }
}

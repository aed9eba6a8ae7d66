//! [`BloomFilter`]: one filter of `m` bits in cache-line aligned words.

use bloomslice_kernels::Kernels;

use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};
use crate::params::BloomParams;
use crate::storage::Words;

/// A Bloom filter: `m` bits, `k` hash functions, stored in 64-byte aligned
/// words padded to whole cache lines (the padding bits are always zero).
#[derive(Clone)]
pub struct BloomFilter {
    params: BloomParams,
    words: Words,
}

debug_summary!(BloomFilter, |s| params: s.params, ones: s.count_ones());

impl PartialEq for BloomFilter {
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params && self.words() == other.words()
    }
}

impl Eq for BloomFilter {}

impl BloomFilter {
    /// An empty filter.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] if the words cannot be allocated.
    pub fn new(params: BloomParams) -> Result<Self> {
        Ok(BloomFilter { params, words: Words::zeroed(params.padded_words())? })
    }

    /// A filter from raw words, as exported by [`BloomFilter::words`] (bit
    /// `i` of the filter is bit `i % 64` of word `i / 64`).
    ///
    /// # Errors
    ///
    /// [`Error::WordCountMismatch`] unless `words.len() == params.words()`,
    /// [`Error::PaddingBitsSet`] if a bit at a position `>= m` is set.
    pub fn from_words(params: BloomParams, words: &[u64]) -> Result<Self> {
        if words.len() != params.words() {
            return Err(Error::WordCountMismatch { expected: params.words(), found: words.len() });
        }
        let tail_bits = params.m() % 64;
        if tail_bits != 0 && words[words.len() - 1] >> tail_bits != 0 {
            return Err(Error::PaddingBitsSet { m: params.m() });
        }
        let mut filter = BloomFilter::new(params)?;
        filter.words[..words.len()].copy_from_slice(words);
        Ok(filter)
    }

    /// The parameters.
    #[inline]
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// The raw words, `params.words()` of them (without cache-line padding).
    #[inline]
    pub fn words(&self) -> &[u64] {
        &self.words[..self.params.words()]
    }

    /// Inserts a key.
    #[inline]
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(self.params.hash(key));
    }

    /// Inserts a key by its hash.
    pub fn insert_hash(&mut self, hash: KeyHash) {
        let pos = self.params.probes(hash);
        self.insert_positions(&pos);
    }

    /// Inserts a key by its hash with its own hash count: sets the first `k`
    /// positions of its probe sequence (the sequence of
    /// [`BloomParams::positions_into`], cut or continued past the parameters'
    /// `k`; `k` is clamped to `1..=MAX_HASHES`), as the popularity-conscious
    /// filters do.
    pub fn insert_hash_with_hashes(&mut self, hash: KeyHash, k: u32) {
        let pos = self.params.probes_n(hash, k as usize);
        self.insert_positions(&pos);
    }

    /// Whether the first `k` positions of `hash`'s probe sequence are all set
    /// (the query of [`BloomFilter::insert_hash_with_hashes`]).
    pub fn contains_hash_with_hashes(&self, hash: KeyHash, k: u32) -> bool {
        let pos = self.params.probes_n(hash, k as usize);
        self.contains_positions(&pos)
    }

    /// Sets the bits at `positions`, each `< m` as [`BloomParams::probes`]
    /// and [`BloomParams::probes_n`] give them: a hook for structures that
    /// compute probe positions once and use them on several filters (a
    /// Bloofi tree's path of nodes, a dynamic filter's members).
    ///
    /// # Panics
    ///
    /// Debug builds panic on a position `>= m`; release builds may set a
    /// bit past `m`, which breaks the filter's invariant.
    #[inline]
    pub fn insert_positions(&mut self, positions: &[u32]) {
        for &p in positions {
            debug_assert!(u64::from(p) < self.params.m(), "probe position {p} >= m");
            self.words[p as usize / 64] |= 1 << (p % 64);
        }
    }

    /// Whether the key may be in the set (no false negatives).
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.params.hash(key))
    }

    /// [`BloomFilter::contains`] by the key's hash.
    pub fn contains_hash(&self, hash: KeyHash) -> bool {
        let pos = self.params.probes(hash);
        self.contains_positions(&pos)
    }

    /// Whether every bit at `positions` is set.
    #[inline]
    pub fn contains_positions(&self, positions: &[u32]) -> bool {
        positions.iter().all(|&p| self.words.get(p as usize / 64).is_some_and(|w| w >> (p % 64) & 1 == 1))
    }

    /// Whether bit `i` is set (false for `i >= m`).
    #[inline]
    pub fn bit(&self, i: u64) -> bool {
        i < self.params.m() && self.words[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    /// ORs `other` into `self` (set union) and returns how many bits were newly set.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`]; `self` is unchanged.
    pub fn union_with(&mut self, other: &BloomFilter) -> Result<u64> {
        self.params.check_same(&other.params)?;
        Ok(Kernels::detect().or_into(&mut self.words, &other.words))
    }

    /// ANDs `other` into `self` (intersection of the bit sets).
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`]; `self` is unchanged.
    pub fn intersect_with(&mut self, other: &BloomFilter) -> Result<()> {
        self.params.check_same(&other.params)?;
        for (a, b) in self.words.iter_mut().zip(other.words.iter()) {
            *a &= b;
        }
        Ok(())
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u64 {
        Kernels::detect().popcount(&self.words)
    }

    /// Fraction of bits set.
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.params.m() as f64
    }

    /// Whether no bit is set.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Hamming distance to `other` (bits that differ).
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`].
    pub fn hamming(&self, other: &BloomFilter) -> Result<u64> {
        self.params.check_same(&other.params)?;
        Ok(Kernels::detect().xor_popcount(&self.words, &other.words))
    }

    /// Clears every bit.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// Bytes of memory the filter holds.
    pub fn memory_bytes(&self) -> usize {
        self.words.allocated_bytes() + core::mem::size_of::<Self>()
    }

    /// The filter's words, mutable: a hook for structures that build a
    /// filter word by word (an index rebuilding a filter from its column, a
    /// Bloofi node ORing its children, a counting filter's bit view). Bit
    /// `i` is bit `i % 64` of word `i / 64`; the slice may be longer than
    /// [`BloomFilter::words`] (padding to the kernels' alignment). The
    /// caller must leave every bit at a position `>= m` clear, as in
    /// [`BloomFilter::from_words`].
    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }
}

/// A filter holding the little-endian bytes of each of `keys` (the tests of
/// the index types build their filters with it; public as
/// `bloomslice::testing::filter_of_u64_keys`).
///
/// # Panics
///
/// If `params` cannot make a filter (tests pass valid ones).
#[cfg(any(test, feature = "testing"))]
pub fn filter_of_u64_keys(params: BloomParams, keys: impl IntoIterator<Item = u64>) -> BloomFilter {
    let mut f = BloomFilter::new(params).expect("test parameters");
    for key in keys {
        f.insert(&key.to_le_bytes());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> BloomParams {
        BloomParams::new(1000, 5).unwrap()
    }

    #[test]
    fn inserted_keys_are_found() {
        let mut f = BloomFilter::new(params()).unwrap();
        for i in 0u32..100 {
            f.insert(&i.to_le_bytes());
        }
        for i in 0u32..100 {
            assert!(f.contains(&i.to_le_bytes()));
        }
        assert!(f.count_ones() <= 500 && f.count_ones() > 300);
    }

    #[test]
    fn raw_words_round_trip_and_errors() {
        let mut f = BloomFilter::new(params()).unwrap();
        f.insert("x");
        let g = BloomFilter::from_words(params(), f.words()).unwrap();
        assert_eq!(f, g);
        assert_eq!(f.words().len(), 16);
        assert!(matches!(
            BloomFilter::from_words(params(), &[0; 15]),
            Err(Error::WordCountMismatch { expected: 16, found: 15 })
        ));
        let mut bad = vec![0u64; 16];
        bad[15] = 1 << 40; // bit 1000: beyond m
        assert_eq!(BloomFilter::from_words(params(), &bad), Err(Error::PaddingBitsSet { m: 1000 }));
        bad[15] = 1 << 39; // bit 999: fine
        assert!(BloomFilter::from_words(params(), &bad).is_ok());
    }

    #[test]
    fn union_and_intersection() {
        let mut a = BloomFilter::new(params()).unwrap();
        let mut b = BloomFilter::new(params()).unwrap();
        a.insert("a");
        b.insert("b");
        let mut u = a.clone();
        let new = u.union_with(&b).unwrap();
        assert_eq!(u.count_ones(), a.count_ones() + new);
        assert!(u.contains("a") && u.contains("b"));
        let mut i = u.clone();
        i.intersect_with(&a).unwrap();
        assert_eq!(i, a);
        let other = BloomFilter::new(BloomParams::new(1000, 4).unwrap()).unwrap();
        assert!(matches!(u.union_with(&other), Err(Error::ParamsMismatch { .. })));
        assert!(matches!(u.intersect_with(&other), Err(Error::ParamsMismatch { .. })));
        assert_eq!(u, {
            let mut x = a.clone();
            x.union_with(&b).unwrap();
            x
        });
    }
}

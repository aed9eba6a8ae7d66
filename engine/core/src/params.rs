//! Filter parameters: length `m`, hash count `k`, hash scheme and seed.
//!
//! All filters that are compared, combined or indexed together must share one
//! [`BloomParams`]; every operation that mixes filters checks it.

use core::mem::MaybeUninit;

use crate::error::{Error, Result};
use crate::hash::{KeyHash, fastrange};

/// Largest supported number of hash functions.
///
/// The optimal k for a false-positive rate p is `-ln p / ln 2`, so 64 covers
/// p down to about 5e-20; anything larger is a mistake, and a query keeps its
/// k probe positions in a fixed stack array of this size.
pub const MAX_HASHES: u32 = 64;

/// Largest supported filter length in bits (2^32 - 512: 512 MiB per filter).
///
/// Probe positions are stored as `u32`, which halves the per-key state of a
/// batch, and filters are padded to whole 512-bit cache lines.
pub const MAX_BITS: u64 = (1 << 32) - 512;

/// How keys become probe positions. Part of the parameters and of the file
/// format: filters built with different schemes cannot be combined
/// ([`Error::ParamsMismatch`], as for a different `m` or `k`).
///
/// Both schemes start from the same [`KeyHash`] `(h1, h2)`: seeded xxh3-64 of
/// the key bytes (or the caller's own 64-bit hash) gives `h1`, and `h2` is a
/// mix of `h1`, forced odd. They differ in how the `k` probes follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum HashScheme {
    /// Probe `i` is `fastrange(h1 + i * h2, m)` (Kirsch-Mitzenmacher double
    /// hashing). The scheme of every file written before format minor 1.
    ///
    /// Known excess: `fastrange` keeps the high bits, so probe `i` lands at
    /// `floor(m * frac(a + i b))` with `a = h1 / 2^64`, `b = h2 / 2^64`. When
    /// `b` is within about `1 / (d m)` of a fraction with a small denominator
    /// `d`, probes `i` and `i + d` share a position, and two keys with close
    /// `(a, b)` share most of their probes. Both are rare when `k / m` is
    /// small but not otherwise: at `m/n = 8, k = 10` with `m = 400` the
    /// measured false-positive rate is well above the formula of
    /// [`BloomParams::expected_fpr`] (the figures are in `bench/RESULTS.md`,
    /// section "Query", "Hash schemes";
    /// `engine/core/tests/false_positives.rs` checks that the excess is
    /// there).
    Xxh3Double,
    /// Probe `i` is `fastrange(h1 + i * h2 + (i (i - 1) / 2) * h3, m)` with
    /// `h3 = h2` rotated by 32 bits, computed incrementally (`x += y`,
    /// `y += h3`): triple hashing in the sense of Dillinger and Manolios, in
    /// fixed point. The quadratic term breaks the arithmetic progression of
    /// double hashing, so neither repeated probes nor shared probe sets
    /// exceed what independent probes give, at one addition per probe more.
    /// The default for new filters and indexes (file format minor 1).
    #[default]
    Xxh3Triple,
}

impl HashScheme {
    /// Every scheme this build knows, oldest first.
    pub const ALL: [HashScheme; 2] = [HashScheme::Xxh3Double, HashScheme::Xxh3Triple];
}

/// The probe positions of one key (each `< m`), in probe order: a fixed
/// stack buffer of [`MAX_HASHES`] positions and the count in use, so that
/// computing them allocates nothing. Dereferences to `&[u32]`.
///
/// Only the first `len` slots are ever written: zeroing all 64 (256 bytes)
/// for a key of `k = 7` cost 17 stores per key, a tenth of a whole
/// single-key query at N = 1 000 (measured with `benches/iai_full.rs`).
#[derive(Clone, Copy)]
pub struct Probes {
    /// `positions[..len]` is initialised; the rest is not.
    positions: [MaybeUninit<u32>; MAX_HASHES as usize],
    len: usize,
}

impl core::ops::Deref for Probes {
    type Target = [u32];
    #[inline]
    fn deref(&self) -> &[u32] {
        // SAFETY: `len <= MAX_HASHES` and `positions[..len]` was written by
        // `BloomParams::probes_n`, the only constructor; `MaybeUninit<u32>`
        // has the layout of `u32`.
        unsafe { core::slice::from_raw_parts(self.positions.as_ptr().cast::<u32>(), self.len) }
    }
}

impl core::fmt::Debug for Probes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a Probes {
    type Item = &'a u32;
    type IntoIter = core::slice::Iter<'a, u32>;
    #[inline]
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Parameters shared by every filter of an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BloomParams {
    m: u64,
    k: u32,
    scheme: HashScheme,
    seed: u64,
}

impl core::fmt::Display for BloomParams {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "m={} k={} scheme={:?} seed={:#x}", self.m, self.k, self.scheme, self.seed)
    }
}

impl BloomParams {
    /// `Ok` if `found` equals these parameters, else
    /// [`Error::ParamsMismatch`] (what every structure checks before it
    /// accepts a filter made elsewhere).
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] with these parameters as `expected`.
    pub fn check_same(&self, found: &BloomParams) -> Result<()> {
        if self == found { Ok(()) } else { Err(Error::ParamsMismatch { expected: *self, found: *found }) }
    }

    /// Parameters with `m` bits and `k` hash functions, the default scheme
    /// ([`HashScheme::Xxh3Triple`]) and seed 0.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroBits`], [`Error::ZeroHashes`], [`Error::TooManyBits`] or
    /// [`Error::TooManyHashes`].
    pub fn new(m: u64, k: u32) -> Result<Self> {
        if m == 0 {
            return Err(Error::ZeroBits);
        }
        if k == 0 {
            return Err(Error::ZeroHashes);
        }
        if m > MAX_BITS {
            return Err(Error::TooManyBits { m, max: MAX_BITS });
        }
        if k > MAX_HASHES {
            return Err(Error::TooManyHashes { k: u64::from(k), max: MAX_HASHES });
        }
        Ok(BloomParams { m, k, scheme: HashScheme::default(), seed: 0 })
    }

    /// Parameters for `n_exp` expected keys at false-positive rate `p`, by the
    /// Bloofi paper's rule: `k = ceil(-ln p / ln 2)` and
    /// `m = ceil(k * n_exp / ln 2)`, rounded up to a whole number of 64-bit
    /// words as the paper's Java bit sets are (so `n_exp = 10 000`,
    /// `p = 0.01` gives `k = 7`, `m = 100 992`).
    ///
    /// # Errors
    ///
    /// [`Error::ZeroCapacity`], [`Error::InvalidFalsePositiveRate`] (p not in
    /// the open interval (0, 1), or NaN), and the errors of [`BloomParams::new`]
    /// when the result is too large.
    pub fn for_capacity(n_exp: u64, p: f64) -> Result<Self> {
        if n_exp == 0 {
            return Err(Error::ZeroCapacity);
        }
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::InvalidFalsePositiveRate(p));
        }
        let k = (-p.ln() / core::f64::consts::LN_2).ceil();
        if k > f64::from(MAX_HASHES) {
            return Err(Error::TooManyHashes { k: k as u64, max: MAX_HASHES });
        }
        let k = (k as u32).max(1);
        let m = (f64::from(k) * n_exp as f64 / core::f64::consts::LN_2).ceil();
        if !m.is_finite() || m > MAX_BITS as f64 {
            return Err(Error::TooManyBits { m: if m.is_finite() { m as u64 } else { u64::MAX }, max: MAX_BITS });
        }
        let m = (m as u64).div_ceil(64) * 64;
        BloomParams::new(m, k)
    }

    setters! {
        /// The same parameters with another hash scheme. Filters of different
        /// schemes set different bits for the same key, so they never combine.
        with_scheme(scheme: HashScheme) => scheme;
        /// The same parameters with another hash seed.
        with_seed(seed: u64) => seed;
    }

    /// Filter length in bits.
    #[inline]
    pub fn m(&self) -> u64 {
        self.m
    }

    /// Number of hash functions (probes per key).
    #[inline]
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The hash scheme.
    #[inline]
    pub fn scheme(&self) -> HashScheme {
        self.scheme
    }

    /// The hash seed.
    #[inline]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Number of meaningful 64-bit words in a filter: `ceil(m / 64)`. This
    /// is the length of [`crate::BloomFilter::words`] and of raw imports.
    #[inline]
    pub fn words(&self) -> usize {
        self.m.div_ceil(64) as usize
    }

    /// Words a filter occupies in memory: [`Self::words`] padded to whole
    /// 64-byte cache lines.
    #[inline]
    pub fn padded_words(&self) -> usize {
        self.words().div_ceil(8) * 8
    }

    /// Expected false-positive rate of one filter holding `n` distinct keys:
    /// `(1 - (1 - 1/m)^(k n))^k`, the exact form of the summary-cache math.
    pub fn expected_fpr(&self, n: u64) -> f64 {
        let m = self.m as f64;
        let kn = f64::from(self.k) * n as f64;
        // (1 - 1/m)^(kn) computed as exp(kn * ln(1 - 1/m)) without losing
        // precision for large m.
        let zero = (kn * (-1.0 / m).ln_1p()).exp();
        (1.0 - zero).powi(self.k as i32)
    }

    /// Hashes a key into the two words probe positions are derived from.
    #[inline]
    pub fn hash<K: crate::hash::Key + ?Sized>(&self, key: &K) -> KeyHash {
        key.key_hash(self.seed)
    }

    /// Writes the `k` probe positions of `hash` into `out[..k]`.
    ///
    /// # Panics
    ///
    /// Panics if `out` is shorter than `k`.
    #[inline]
    pub fn positions_into(&self, hash: KeyHash, out: &mut [u32]) {
        self.probe_sequence(hash, &mut out[..self.k as usize]);
    }

    /// The first `out.len()` positions of `hash`'s probe sequence (the
    /// sequence of [`BloomParams::positions_into`], cut or continued past
    /// `k`): the popularity-conscious filters probe a per-key number of
    /// positions of it.
    ///
    /// This is the one place probe positions are computed: filters, every
    /// index type and the popularity-conscious filters all come here.
    #[inline]
    pub(crate) fn probe_sequence(&self, hash: KeyHash, out: &mut [u32]) {
        self.for_each_probe(hash, out.len(), |i, p| out[i] = p);
    }

    /// Calls `put(i, position)` for the first `count` positions of `hash`'s
    /// probe sequence, in order: the arithmetic of
    /// [`BloomParams::probe_sequence`], for any destination.
    #[inline(always)]
    fn for_each_probe(&self, hash: KeyHash, count: usize, mut put: impl FnMut(usize, u32)) {
        let mut x = hash.h1;
        match self.scheme {
            HashScheme::Xxh3Double => {
                for i in 0..count {
                    put(i, fastrange(x, self.m));
                    x = x.wrapping_add(hash.h2);
                }
            }
            HashScheme::Xxh3Triple => {
                let mut y = hash.h2;
                let z = hash.h2.rotate_left(32);
                for i in 0..count {
                    put(i, fastrange(x, self.m));
                    x = x.wrapping_add(y);
                    y = y.wrapping_add(z);
                }
            }
        }
    }

    /// Calls `put(position)` for `hash`'s `k` probe positions in order,
    /// stopping after the first call that returns `false`: a query that
    /// can end early (an AND gone to zero) computes only the positions it
    /// reads.
    #[inline(always)]
    pub(crate) fn try_each_probe(&self, hash: KeyHash, mut put: impl FnMut(u32) -> bool) {
        let mut x = hash.h1;
        match self.scheme {
            HashScheme::Xxh3Double => {
                for _ in 0..self.k {
                    if !put(fastrange(x, self.m)) {
                        return;
                    }
                    x = x.wrapping_add(hash.h2);
                }
            }
            HashScheme::Xxh3Triple => {
                let mut y = hash.h2;
                let z = hash.h2.rotate_left(32);
                for _ in 0..self.k {
                    if !put(fastrange(x, self.m)) {
                        return;
                    }
                    x = x.wrapping_add(y);
                    y = y.wrapping_add(z);
                }
            }
        }
    }

    /// The `k` probe positions of `hash`, in probe order, on the stack.
    #[inline]
    pub fn probes(&self, hash: KeyHash) -> Probes {
        self.probes_n(hash, self.k as usize)
    }

    /// The first `count` positions of `hash`'s probe sequence, `count`
    /// clamped to `1..=MAX_HASHES`: [`BloomParams::probes`] for a key with
    /// its own number of hash functions (the first `k` of them are the
    /// same positions whatever `count` is).
    #[inline]
    pub fn probes_n(&self, hash: KeyHash, count: usize) -> Probes {
        let len = count.clamp(1, MAX_HASHES as usize);
        let mut probes = Probes { positions: [MaybeUninit::uninit(); MAX_HASHES as usize], len };
        let slots = &mut probes.positions[..len];
        self.for_each_probe(hash, len, |i, p| {
            slots[i].write(p);
        });
        probes
    }

    /// The `k` probe positions of `hash` written into `buf`, returned as
    /// the initialised prefix: [`BloomParams::probes`] for a caller that
    /// keeps the buffer in its own frame. Returning a [`Probes`] by value
    /// moved its 264 bytes with a `memcpy` call on every query (52
    /// instructions per key, measured with `benches/iai_full.rs`).
    #[inline]
    pub(crate) fn probes_in<'b>(
        &self,
        hash: KeyHash,
        buf: &'b mut [MaybeUninit<u32>; MAX_HASHES as usize],
    ) -> &'b [u32] {
        self.probes_in_then(hash, buf, |_| ())
    }

    /// [`BloomParams::probes_in`], calling `then(position)` as each
    /// position is written: a single key's query issues the prefetch of a
    /// row run in the same loop that computes its position.
    #[inline(always)]
    pub(crate) fn probes_in_then<'b>(
        &self,
        hash: KeyHash,
        buf: &'b mut [MaybeUninit<u32>; MAX_HASHES as usize],
        mut then: impl FnMut(u32),
    ) -> &'b [u32] {
        // `k <= MAX_HASHES` (checked by `new`).
        let slots = &mut buf[..self.k as usize];
        self.for_each_probe(hash, slots.len(), |i, p| {
            slots[i].write(p);
            then(p);
        });
        // SAFETY: every element of `slots` was written just above, and
        // `MaybeUninit<u32>` has the layout of `u32`.
        unsafe { &*(slots as *const [MaybeUninit<u32>] as *const [u32]) }
    }

    /// The `k` probe positions of `hash`, in probe order.
    pub fn positions(&self, hash: KeyHash) -> Vec<u32> {
        let mut out = vec![0; self.k as usize];
        self.positions_into(hash, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bloofi_rule_gives_the_papers_defaults() {
        let p = BloomParams::for_capacity(10_000, 0.01).unwrap();
        assert_eq!((p.m(), p.k()), (100_992, 7));
        // Section 7, Fig. 9: k goes from 24 to 4 as p goes from 1e-7 to 0.5.
        assert_eq!(BloomParams::for_capacity(10_000, 1e-7).unwrap().k(), 24);
        assert_eq!(BloomParams::for_capacity(10_000, 0.5).unwrap().k(), 1);
    }

    #[test]
    fn invalid_parameters_are_typed_errors() {
        assert_eq!(BloomParams::new(0, 3), Err(Error::ZeroBits));
        assert_eq!(BloomParams::new(64, 0), Err(Error::ZeroHashes));
        assert!(matches!(BloomParams::new(64, 65), Err(Error::TooManyHashes { .. })));
        assert!(matches!(BloomParams::new(u64::MAX, 3), Err(Error::TooManyBits { .. })));
        assert_eq!(BloomParams::for_capacity(0, 0.01), Err(Error::ZeroCapacity));
        for p in [0.0, 1.0, -0.5, 2.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(BloomParams::for_capacity(10, p), Err(Error::InvalidFalsePositiveRate(_))));
        }
        assert!(matches!(BloomParams::for_capacity(u64::MAX, 0.01), Err(Error::TooManyBits { .. })));
        assert!(matches!(BloomParams::for_capacity(10, 1e-300), Err(Error::TooManyHashes { .. })));
    }

    /// The formula agrees with the summary-cache tables (Tables 3 to 5) to
    /// the three significant digits they print.
    #[test]
    fn expected_fpr_matches_summary_cache_tables() {
        let cells = [
            (4u64, 3u32, 0.147),
            (8, 4, 0.024),
            (10, 5, 0.00943),
            (16, 8, 0.000574),
            (20, 13, 6.79e-05),
            (32, 24, 2.17e-07),
        ];
        let n = 100_000;
        for (ratio, k, table) in cells {
            let fpr = BloomParams::new(ratio * n, k).unwrap().expected_fpr(n);
            let rel = (fpr - table).abs() / table;
            assert!(rel < 0.01, "m/n={ratio} k={k}: {fpr} vs table {table}");
        }
    }

    /// The probe positions of each scheme are pinned: a change here changes
    /// which bits files of that scheme hold.
    #[test]
    fn scheme_positions_are_pinned() {
        let h = KeyHash { h1: 0x0123_4567_89ab_cdef, h2: 0xfedc_ba98_7654_3211 };
        let p = BloomParams::new(1000, 6).unwrap();
        let double = p.with_scheme(HashScheme::Xxh3Double).positions(h);
        let triple = p.with_scheme(HashScheme::Xxh3Triple).positions(h);
        let naive = |i: u64, c: u64| fastrange(h.h1.wrapping_add(i.wrapping_mul(h.h2)).wrapping_add(c), 1000);
        let h3 = h.h2.rotate_left(32);
        for i in 0..6u64 {
            assert_eq!(double[i as usize], naive(i, 0));
            assert_eq!(triple[i as usize], naive(i, (i * i.saturating_sub(1) / 2).wrapping_mul(h3)));
        }
        assert_eq!(double[..2], triple[..2], "the first two probes are shared");
        assert_ne!(double, triple);
    }

    #[test]
    fn default_scheme_is_triple_and_seed_and_scheme_are_kept() {
        let p = BloomParams::new(64, 3).unwrap();
        assert_eq!(p.scheme(), HashScheme::Xxh3Triple);
        assert_eq!(BloomParams::for_capacity(100, 0.01).unwrap().scheme(), HashScheme::Xxh3Triple);
        let q = p.with_scheme(HashScheme::Xxh3Double).with_seed(9);
        assert_eq!((q.scheme(), q.seed(), q.m(), q.k()), (HashScheme::Xxh3Double, 9, 64, 3));
        assert_ne!(p, q.with_seed(0), "the scheme is part of the parameters");
        assert!(q.to_string().contains("Xxh3Double"));
    }

    proptest::proptest! {
        /// Law: a key's first `c` probes are a prefix of its first `d > c`
        /// probes under every scheme (per-key hash counts rely on it), and
        /// all are below `m`.
        #[test]
        fn probe_sequences_are_prefixes(h1: u64, h2: u64, m in 1u64..100_000, c in 1usize..20, extra in 0usize..20) {
            for scheme in HashScheme::ALL {
                let p = BloomParams::new(m, 3).unwrap().with_scheme(scheme);
                let h = KeyHash { h1, h2: h2 | 1 };
                let short = p.probes_n(h, c);
                let long = p.probes_n(h, c + extra);
                proptest::prop_assert_eq!(&short[..], &long[..c]);
                proptest::prop_assert!(long.iter().all(|&x| u64::from(x) < m));
            }
        }
    }

    #[test]
    fn positions_are_in_range_and_deterministic() {
        let p = BloomParams::new(1000, 7).unwrap().with_seed(42);
        for key in 0u64..1000 {
            let a = p.positions(p.hash(&key.to_le_bytes()[..]));
            assert!(a.iter().all(|&x| u64::from(x) < 1000));
            assert_eq!(a, p.positions(p.hash(&key.to_le_bytes()[..])));
        }
    }
}

//! Canonical k-mers of DNA sequences: the keys of a sequence index.
//!
//! Sequence search (`bloomslice build --seqs`, `query --seqs`) indexes
//! every k-mer (substring of length `k`) of a set's sequences, and scores a
//! read by how many of its k-mers each set may hold. This module turns a
//! sequence into those keys without allocating.
//!
//! # The key of a k-mer (a contract: Python and C users compute the same)
//!
//! 1. **2-bit code.** Bases are encoded `A = 0`, `C = 1`, `G = 2`,
//!    `T = 3` (lowercase `acgt` too). A k-mer's code is the `u64` whose
//!    `2k` low bits hold its bases, the **first base in the most
//!    significant used bits**: `ACG` is `0b00_01_10 = 6`. Codes of one `k`
//!    therefore sort like the k-mers' strings (`A < C < G < T`). `k` is
//!    `1..=32` ([`MAX_KMER_LENGTH`]), so every code fits in a `u64`.
//! 2. **Canonical.** A k-mer and its reverse complement (read backwards,
//!    `A <-> T`, `C <-> G`) are the same stretch of double-stranded DNA;
//!    the *canonical* code is the smaller of the two codes, so a read
//!    matches its source whichever strand it was sequenced from.
//! 3. **Key.** The index key is the 8 little-endian bytes of the canonical
//!    code ([`key`]: `code.to_le_bytes()`), hashed by the index's
//!    [`crate::params::BloomParams`] like any other key.
//!
//! Any other byte (`N`, IUPAC codes, `U`, gaps) is not a base: the k-mers
//! whose window contains it are skipped, and [`CanonicalKmers::skipped`]
//! counts them. A sequence of length `L >= k` has `L - k + 1` windows; each
//! is either yielded or skipped.
//!
//! ```
//! use bloomslice::kmer::{self, KmerLength};
//!
//! let k = KmerLength::new(3)?;
//! // ACG and its reverse complement CGT: ACG (6) is smaller.
//! assert_eq!(kmer::encode(b"ACG"), Some(6));
//! assert_eq!(kmer::reverse_complement(6, k), kmer::encode(b"CGT").unwrap());
//! let mut kmers = kmer::canonical_kmers(b"ACGTNacg", k);
//! let codes: Vec<u64> = kmers.by_ref().collect();
//! // ACG, CGT (canonical ACG), then 3 windows hold the N, then acg.
//! assert_eq!(codes, [6, 6, 6]);
//! assert_eq!(kmers.skipped(), 3);
//! # Ok::<(), bloomslice::Error>(())
//! ```

use crate::error::{Error, Result};

/// The longest k-mer: 32 bases of 2 bits fill a `u64` code.
pub const MAX_KMER_LENGTH: usize = 32;

/// Not a base in [`BASE_CODES`].
const NOT_A_BASE: u8 = 4;

/// The 2-bit code of every byte (`A C G T`, either case), or [`NOT_A_BASE`].
const BASE_CODES: [u8; 256] = {
    let mut t = [NOT_A_BASE; 256];
    t[b'A' as usize] = 0;
    t[b'a' as usize] = 0;
    t[b'C' as usize] = 1;
    t[b'c' as usize] = 1;
    t[b'G' as usize] = 2;
    t[b'g' as usize] = 2;
    t[b'T' as usize] = 3;
    t[b't' as usize] = 3;
    t
};

/// A checked k-mer length, `1..=32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KmerLength(u8);

impl KmerLength {
    /// `k`, checked.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKmerLength`] unless `1 <= k <= 32`.
    pub fn new(k: usize) -> Result<Self> {
        if (1..=MAX_KMER_LENGTH).contains(&k) {
            Ok(KmerLength(k as u8))
        } else {
            Err(Error::InvalidKmerLength { k, max: MAX_KMER_LENGTH })
        }
    }

    /// The length in bases.
    pub fn get(self) -> usize {
        usize::from(self.0)
    }

    /// The mask of a code's `2k` used bits.
    fn mask(self) -> u64 {
        u64::MAX >> (64 - 2 * u32::from(self.0))
    }
}

impl std::fmt::Display for KmerLength {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The 2-bit code of one base (`A C G T`, either case), or `None`.
#[inline]
pub fn encode_base(b: u8) -> Option<u8> {
    let c = BASE_CODES[usize::from(b)];
    (c != NOT_A_BASE).then_some(c)
}

/// The 2-bit code of a k-mer given as bases (not canonicalised), or `None`
/// if it holds a byte that is not a base or its length is not `1..=32`.
pub fn encode(kmer: &[u8]) -> Option<u64> {
    if !(1..=MAX_KMER_LENGTH).contains(&kmer.len()) {
        return None;
    }
    kmer.iter().try_fold(0u64, |code, &b| Some(code << 2 | u64::from(encode_base(b)?)))
}

/// The bases (uppercase) of the `k`-mer `code`; bits above `2k` are ignored.
pub fn decode(code: u64, k: KmerLength) -> Vec<u8> {
    (0..k.get()).rev().map(|i| b"ACGT"[(code >> (2 * i) & 3) as usize]).collect()
}

/// The code of the reverse complement of the `k`-mer `code`.
#[inline]
pub fn reverse_complement(code: u64, k: KmerLength) -> u64 {
    // Complement every base (3 - c = c ^ 3), reverse the 2-bit groups of
    // the whole word (reverse the bits, then swap the two bits of each
    // group back), then move the k groups down from the top.
    let x = !code;
    let x = x.reverse_bits();
    let x = (x >> 1 & 0x5555_5555_5555_5555) | (x & 0x5555_5555_5555_5555) << 1;
    x >> (64 - 2 * k.get())
}

/// The canonical code: the smaller of `code` and its reverse complement.
#[inline]
pub fn canonical(code: u64, k: KmerLength) -> u64 {
    let code = code & k.mask();
    code.min(reverse_complement(code, k))
}

/// The index key of a (canonical) code: its 8 little-endian bytes.
#[inline]
pub fn key(code: u64) -> [u8; 8] {
    code.to_le_bytes()
}

/// The canonical codes of every k-mer of `seq`, in order (see
/// [`CanonicalKmers`]).
pub fn canonical_kmers(seq: &[u8], k: KmerLength) -> CanonicalKmers<'_> {
    CanonicalKmers::new(seq, k)
}

/// A rolling iterator over the canonical k-mer codes of a sequence.
///
/// The forward code and the reverse-complement code are rolled together,
/// one base at a time (`O(1)` per k-mer, no allocation). A byte that is not
/// a base resets both; the windows that contain it are counted in
/// [`CanonicalKmers::skipped`] instead of yielded.
#[derive(Clone, Debug)]
pub struct CanonicalKmers<'a> {
    seq: &'a [u8],
    pos: usize,
    k: usize,
    mask: u64,
    /// Where a base enters the reverse complement: `2(k - 1)`.
    shift: u32,
    forward: u64,
    reverse: u64,
    /// Bases since the last byte that was not a base (counted up to `k`).
    run: usize,
    skipped: u64,
}

impl<'a> CanonicalKmers<'a> {
    /// The k-mers of `seq`.
    pub fn new(seq: &'a [u8], k: KmerLength) -> Self {
        CanonicalKmers {
            seq,
            pos: 0,
            k: k.get(),
            mask: k.mask(),
            shift: 2 * (k.get() as u32 - 1),
            forward: 0,
            reverse: 0,
            run: 0,
            skipped: 0,
        }
    }

    /// Windows skipped so far because they hold a byte that is not a base.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Windows of the whole sequence: `len - k + 1`, or 0 when shorter than `k`.
    pub fn windows(&self) -> u64 {
        (self.seq.len() + 1).saturating_sub(self.k) as u64
    }
}

impl Iterator for CanonicalKmers<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        while let Some(&b) = self.seq.get(self.pos) {
            self.pos += 1;
            let c = BASE_CODES[usize::from(b)];
            if c == NOT_A_BASE {
                self.run = 0;
            } else {
                let c = u64::from(c);
                self.forward = (self.forward << 2 | c) & self.mask;
                self.reverse = self.reverse >> 2 | (3 - c) << self.shift;
                self.run = (self.run + 1).min(self.k);
            }
            // A window ends at every position from k - 1 on.
            if self.pos >= self.k {
                if self.run == self.k {
                    return Some(self.forward.min(self.reverse));
                }
                self.skipped += 1;
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let first_end = self.pos.max(self.k - 1);
        (0, Some(self.seq.len().saturating_sub(first_end)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kl(k: usize) -> KmerLength {
        KmerLength::new(k).unwrap()
    }

    fn revcomp(seq: &[u8]) -> Vec<u8> {
        seq.iter()
            .rev()
            .map(|&b| match b {
                b'A' | b'a' => b'T',
                b'C' | b'c' => b'G',
                b'G' | b'g' => b'C',
                b'T' | b't' => b'A',
                other => other,
            })
            .collect()
    }

    /// The reference: every window on its own, compared as strings.
    fn naive(seq: &[u8], k: usize) -> (Vec<u64>, u64) {
        let (mut out, mut skipped) = (Vec::new(), 0);
        for w in seq.windows(k) {
            if w.iter().all(|&b| encode_base(b).is_some()) {
                let up = w.to_ascii_uppercase();
                let rc = revcomp(&up);
                out.push(encode(up.min(rc).as_slice()).unwrap());
            } else {
                skipped += 1;
            }
        }
        (out, skipped)
    }

    #[test]
    fn lengths_are_checked() {
        assert!(KmerLength::new(0).is_err());
        assert_eq!(KmerLength::new(33).unwrap_err(), Error::InvalidKmerLength { k: 33, max: 32 });
        assert_eq!(kl(32).get(), 32);
        assert_eq!(kl(32).mask(), u64::MAX);
        assert_eq!(kl(1).mask(), 3);
    }

    #[test]
    fn codes_follow_the_documented_encoding() {
        assert_eq!(encode(b"A"), Some(0));
        assert_eq!(encode(b"T"), Some(3));
        assert_eq!(encode(b"ACGT"), Some(0b00_01_10_11));
        assert_eq!(encode(b"acgt"), Some(0b00_01_10_11));
        assert_eq!(encode(b"ACNT"), None);
        assert_eq!(encode(b""), None);
        assert_eq!(encode(&[b'T'; 33]), None);
        assert_eq!(encode(&[b'T'; 32]), Some(u64::MAX));
        assert_eq!(key(6), [6, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(reverse_complement(encode(b"AAC").unwrap(), kl(3)), encode(b"GTT").unwrap());
        assert_eq!(canonical(encode(b"TTT").unwrap(), kl(3)), encode(b"AAA").unwrap());
    }

    #[test]
    fn short_sequences_and_skips() {
        let mut it = canonical_kmers(b"AC", kl(3));
        assert_eq!(it.next(), None);
        assert_eq!((it.skipped(), it.windows()), (0, 0));
        let mut it = canonical_kmers(b"NNNNN", kl(2));
        assert_eq!(it.by_ref().count(), 0);
        assert_eq!((it.skipped(), it.windows()), (4, 4));
        let mut it = canonical_kmers(b"ACGTACGTAC", kl(32));
        assert_eq!(it.by_ref().count(), 0);
        assert_eq!(it.skipped(), 0);
    }

    fn dna() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(b"ACGTacgtNnRx-".to_vec()), 0..200)
    }

    fn clean_dna() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(b"ACGT".to_vec()), 1..=32)
    }

    proptest! {
        #[test]
        fn rolling_equals_the_naive_windows(seq in dna(), k in 1usize..=32) {
            let mut it = canonical_kmers(&seq, kl(k));
            let hi = it.size_hint().1.unwrap();
            let got: Vec<u64> = it.by_ref().collect();
            let (want, skipped) = naive(&seq, k);
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(it.skipped(), skipped);
            prop_assert_eq!(got.len() as u64 + skipped, it.windows());
            prop_assert!(got.len() <= hi);
        }

        #[test]
        fn a_sequence_and_its_reverse_complement_have_the_same_canonical_kmers(seq in dna(), k in 1usize..=32) {
            let forward: Vec<u64> = canonical_kmers(&seq, kl(k)).collect();
            let mut backward: Vec<u64> = canonical_kmers(&revcomp(&seq), kl(k)).collect();
            backward.reverse();
            prop_assert_eq!(forward, backward);
        }

        #[test]
        fn encoding_round_trips(kmer in clean_dna()) {
            let k = kl(kmer.len());
            let code = encode(&kmer).unwrap();
            prop_assert_eq!(decode(code, k), kmer.clone());
            prop_assert_eq!(decode(reverse_complement(code, k), k), revcomp(&kmer));
            prop_assert_eq!(reverse_complement(reverse_complement(code, k), k), code);
            let c = canonical(code, k);
            prop_assert!(c <= code && c == canonical(reverse_complement(code, k), k));
        }
    }
}

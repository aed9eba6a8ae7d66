//! The vector trait every SIMD algorithm is written over: [`Line`], eight
//! `u64` words (one 64-byte cache line, one 512-bit chunk) held in a
//! backend's registers, and [`ONES`], the line of all ones.
//!
//! A backend implements `Line` with its own registers and gets every
//! algorithm of `arch::generic` for it; the trait's default methods
//! (`and3`, `xor3`, `maj`) are there for backends without a three-input
//! logic instruction, and `accumulate_popcount` for those that count bits
//! per lane.

use crate::WORDS_PER_LINE;

/// Eight `u64` words held in SIMD registers.
///
/// # Safety
///
/// Implementors promise that every method is sound to call, given its own
/// documented pointer requirements, whenever the CPU features named by the
/// implementing backend are available. Callers of the methods (the generic
/// functions below) must only run them where those features are present:
/// that is the whole contract behind every `unsafe` in this module.
pub(crate) unsafe trait Line: Copy {
    /// True when the backend counts a line's bits in about as many
    /// instructions as a carry-save adder costs (AVX-512 VPOPCNTDQ per
    /// lane; NEON's `cnt` per byte, widened into an accumulator), so the
    /// Harley-Seal carry-save tree would only add work.
    const NATIVE_POPCOUNT: bool;

    /// Loads eight words from `ptr`, which need not be aligned.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reading eight `u64`s, and the backend's CPU
    /// features must be available.
    unsafe fn load(ptr: *const u64) -> Self;

    /// Stores the eight words to `ptr`, which need not be aligned.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for writing eight `u64`s, and the backend's CPU
    /// features must be available.
    unsafe fn store(self, ptr: *mut u64);

    /// All bits clear.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn zero() -> Self;

    /// `self & other`.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn and(self, other: Self) -> Self;

    /// `self & b & c`. One instruction where the backend has a three-input
    /// logic operation (`vpternlogq` on AVX-512).
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    #[inline(always)]
    unsafe fn and3(self, b: Self, c: Self) -> Self {
        // SAFETY: forwarded from this method's contract.
        unsafe { self.and(b).and(c) }
    }

    /// `self | other`.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn or(self, other: Self) -> Self;

    /// `self ^ b ^ c`: the sum bit of a full adder. One instruction where
    /// the backend has a three-input logic operation.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    #[inline(always)]
    unsafe fn xor3(self, b: Self, c: Self) -> Self {
        // SAFETY: forwarded from this method's contract.
        unsafe { self.xor(b).xor(c) }
    }

    /// The majority of `self`, `b` and `c`: the carry bit of a full adder.
    /// One instruction where the backend has a three-input logic operation.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    #[inline(always)]
    unsafe fn maj(self, b: Self, c: Self) -> Self {
        // SAFETY: forwarded from this method's contract.
        unsafe { self.and(b).or(c.and(self.or(b))) }
    }

    /// `self ^ other`.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn xor(self, other: Self) -> Self;

    /// `self & !other`.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn and_not(self, other: Self) -> Self;

    /// Bit `i` set when lane (word) `i` has any bit set.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn nonzero_lanes(self) -> u8;

    /// Whether all 512 bits are clear.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn is_zero(self) -> bool;

    /// The number of set bits of each 64-bit lane, as a `u64` in that lane.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn lane_popcounts(self) -> Self;

    /// `acc` plus the number of set bits of `self`, counted in some lanes
    /// of `acc`: only the sum of the result's lanes is defined, and it is
    /// that of `acc` plus the popcount of `self` (no lane overflows below
    /// `2^55` lines). The default adds [`Line::lane_popcounts`] lane by
    /// lane; a backend that counts bits per byte (NEON) sums the bytes of
    /// all its registers first and widens once.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    #[inline(always)]
    unsafe fn accumulate_popcount(self, acc: Self) -> Self {
        // SAFETY: forwarded from this method's contract.
        unsafe { acc.add_lanes(self.lane_popcounts()) }
    }

    /// Lane-wise wrapping `u64` addition.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn add_lanes(self, other: Self) -> Self;

    /// The sum of the eight `u64` lanes.
    ///
    /// # Safety
    ///
    /// The backend's CPU features must be available.
    unsafe fn sum_lanes(self) -> u64;

    /// Appends `table[512 * g + 64 * j + b]` for every set bit `b` of lane
    /// `j` of line `g`, in order of `g`, `j`, then `b`: the ids of the `G`
    /// lines of a single key's answer (all of a short run's lines, or one
    /// line of a long run). The default walks the non-zero words of all
    /// the lines in one loop ([`append_lines`](super::extract::append_lines));
    /// a backend with vector bit scans may locate them all at once.
    ///
    /// # Safety
    ///
    /// `table` must be valid for reading `512 * G` entries, and the
    /// backend's CPU features must be available.
    #[inline(always)]
    unsafe fn append_mapped_lines<const G: usize>(lines: [Self; G], table: *const u64, out: &mut Vec<u64>) {
        // SAFETY: forwarded from this method's contract.
        unsafe { super::extract::append_lines(lines, table, out) }
    }
}

/// A line of ones, the AND of no rows.
pub(super) static ONES: [u64; WORDS_PER_LINE] = [!0; WORDS_PER_LINE];

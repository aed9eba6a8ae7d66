//! AVX2 kernels (`core::arch`), for x86-64 CPUs that report AVX2, POPCNT and
//! BMI1 at run time.
//!
//! [`Avx2`] is the capability token: it can only be built where the CPU has
//! those features, and its methods are then safe to call. Each method enters
//! one `#[target_feature]` function that instantiates the shared algorithm of
//! `arch::generic` with `Line256x2` (a 512-bit line held as two
//! `__m256i`), so the whole loop is compiled for AVX2.
//!
//! - `and_rows`: two 256-bit loads per row and line; the running AND of a
//!   line is tested with `vptest` (`_mm256_testz_si256`) before the next row
//!   is read, so a line that is already zero stops costing memory traffic.
//! - `append_mapped_bits`: a bitmap of non-zero words (one compare per
//!   line) and one popcount pass; set bits of the non-zero words are
//!   walked with `tzcnt` and `blsr`, their table entries written without
//!   a branch per bit.
//! - popcounts and `or_into`'s count of new bits: Harley-Seal carry-save adders over eight lines, with the
//!   `vpshufb` nibble lookup and `vpsadbw` for the per-lane counts.
//! - `count_runs` and `count_at_least` (multi-key scoring): the bit-sliced
//!   counter planes are updated and compared two registers per line.

use core::arch::x86_64::*;

use crate::arch::generic;
use crate::table::{Backend, Kernels};

/// Proof that the running CPU supports AVX2, POPCNT and BMI1.
///
/// POPCNT and BMI1 (`tzcnt`) are present on every AVX2 CPU shipped, but they
/// are separate CPUID bits, so [`Avx2::new`] checks them too, and every
/// kernel here is compiled with all three.
///
/// Obtained from [`Avx2::new`]; every method is a kernel with the contract
/// of the function of the same name in [`crate::arch::all`].
#[derive(Clone, Copy, Debug)]
pub struct Avx2 {
    _private: (),
}

x86_backend! {
    token: Avx2,
    line: Line256x2,
    features: "avx2,popcnt,bmi1",
    detect: ["avx2", "popcnt", "bmi1"],
    backend: Backend::Avx2,
    table: AVX2_TABLE,
}

/// `Line` methods that apply one two-operand AVX2 operation to both halves
/// (`a` the half of `self`, `b` that of `other`).
macro_rules! lanewise {
    ($($method:ident => |$a:ident, $b:ident| $body:expr,)*) => {$(
        #[inline(always)]
        unsafe fn $method(self, other: Self) -> Self {
            // SAFETY: AVX2 is available (the method's contract).
            self.map2(other, |$a, $b| unsafe { $body })
        }
    )*};
}

/// A 512-bit line as two AVX2 registers.
#[derive(Clone, Copy)]
pub(crate) struct Line256x2 {
    lo: __m256i,
    hi: __m256i,
}

impl Line256x2 {
    /// Both halves through `op`.
    #[inline(always)]
    fn map2(self, other: Self, op: impl Fn(__m256i, __m256i) -> __m256i) -> Self {
        Line256x2 { lo: op(self.lo, other.lo), hi: op(self.hi, other.hi) }
    }
}

/// Per-64-bit-lane popcount of one register: the `vpshufb` nibble lookup
/// gives per-byte counts, `vpsadbw` against zero sums each group of eight
/// bytes into its `u64` lane.
///
/// # Safety
///
/// The CPU must support AVX2.
#[inline(always)]
unsafe fn lane_popcounts_256(v: __m256i) -> __m256i {
    // SAFETY: AVX2 is available (this function's contract).
    unsafe {
        #[rustfmt::skip]
        let nibble_counts = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
        );
        let low_nibbles = _mm256_set1_epi8(0x0f);
        let lo = _mm256_and_si256(v, low_nibbles);
        let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low_nibbles);
        let bytes = _mm256_add_epi8(_mm256_shuffle_epi8(nibble_counts, lo), _mm256_shuffle_epi8(nibble_counts, hi));
        _mm256_sad_epu8(bytes, _mm256_setzero_si256())
    }
}

// SAFETY: every method only uses AVX2 intrinsics (and the pointer accesses
// its own contract allows), so it is sound wherever AVX2 is available.
unsafe impl generic::Line for Line256x2 {
    const NATIVE_POPCOUNT: bool = false;

    #[inline(always)]
    unsafe fn load(ptr: *const u64) -> Self {
        // SAFETY: `ptr` is readable for eight words and AVX2 is available
        // (the method's contract); the loads are unaligned.
        unsafe { Line256x2 { lo: _mm256_loadu_si256(ptr.cast()), hi: _mm256_loadu_si256(ptr.add(4).cast()) } }
    }

    #[inline(always)]
    unsafe fn store(self, ptr: *mut u64) {
        // SAFETY: `ptr` is writable for eight words and AVX2 is available
        // (the method's contract); the stores are unaligned.
        unsafe {
            _mm256_storeu_si256(ptr.cast(), self.lo);
            _mm256_storeu_si256(ptr.add(4).cast(), self.hi);
        }
    }

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: AVX2 is available (the method's contract).
        let z = unsafe { _mm256_setzero_si256() };
        Line256x2 { lo: z, hi: z }
    }

    lanewise! {
        and => |a, b| _mm256_and_si256(a, b),
        or => |a, b| _mm256_or_si256(a, b),
        xor => |a, b| _mm256_xor_si256(a, b),
        // `_mm256_andnot_si256(a, b)` is `!a & b`.
        and_not => |a, b| _mm256_andnot_si256(b, a),
    }

    #[inline(always)]
    unsafe fn nonzero_lanes(self) -> u8 {
        // `vpcmpeqq` against zero, then one sign bit per lane
        // (`vmovmskpd`): the zero lanes, inverted.
        // SAFETY: AVX2 is available (the method's contract).
        unsafe {
            let zero = _mm256_setzero_si256();
            let lo = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(self.lo, zero)));
            let hi = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(self.hi, zero)));
            !((lo | (hi << 4)) as u8)
        }
    }

    #[inline(always)]
    unsafe fn is_zero(self) -> bool {
        // SAFETY: AVX2 is available (the method's contract).
        unsafe {
            let both = _mm256_or_si256(self.lo, self.hi);
            _mm256_testz_si256(both, both) == 1
        }
    }

    #[inline(always)]
    unsafe fn lane_popcounts(self) -> Self {
        // SAFETY: AVX2 is available (the method's contract).
        unsafe { Line256x2 { lo: lane_popcounts_256(self.lo), hi: lane_popcounts_256(self.hi) } }
    }

    #[inline(always)]
    unsafe fn add_lanes(self, other: Self) -> Self {
        // SAFETY: AVX2 is available (the method's contract).
        self.map2(other, |a, b| unsafe { _mm256_add_epi64(a, b) })
    }

    #[inline(always)]
    unsafe fn sum_lanes(self) -> u64 {
        // SAFETY: AVX2 is available (the method's contract).
        unsafe {
            let four = _mm256_add_epi64(self.lo, self.hi);
            let two = _mm_add_epi64(_mm256_castsi256_si128(four), _mm256_extracti128_si256::<1>(four));
            let one = _mm_add_epi64(two, _mm_unpackhi_epi64(two, two));
            _mm_cvtsi128_si64(one) as u64
        }
    }
}

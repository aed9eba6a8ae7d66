//! AVX-512 kernels (`core::arch`, AVX-512 F + BW + VPOPCNTDQ).
//!
//! Every backend test, property test and exhaustive test runs it against
//! the scalar reference on a CPU that has the features; CI requires it
//! there, so such a CPU fails rather than skips those tests (see
//! [`crate::dispatch::backend_required`]). Dispatch selects it only on a
//! CPU that reports all three features; `BLOOMSLICE_KERNELS=avx2` rules it
//! out (to measure the AVX2 tier on the same machine).
//!
//! The shape is the AVX2 one: [`Avx512`] is the capability token, each
//! method enters a `#[target_feature]` function that instantiates
//! `arch::generic` with `Line512` (one `__m512i` per 64-byte
//! line). Differences that matter:
//!
//! - `is_zero` is `vptestmq` into a mask register.
//! - `and3` (two runs at once in `and_runs`) is one `vpternlogq`.
//! - popcounts use `vpopcntq` per lane directly, no Harley-Seal tree
//!   (`Line::NATIVE_POPCOUNT`).
//! - `count_runs` (multi-key scoring) keeps a whole 512-column chunk of
//!   the AND and of each carry in one register; its carry-save adders
//!   (`xor3`, `maj`) are one `vpternlogq` each.

use core::arch::x86_64::*;

use crate::arch::generic;
use crate::table::{Backend, Kernels};

/// Proof that the running CPU supports AVX-512 F, BW and VPOPCNTDQ (plus
/// POPCNT and BMI1, used by the scalar tails and the set-bit walk).
///
/// Obtained from [`Avx512::new`]; every method is a kernel with the contract
/// of the function of the same name in [`crate::arch::all`].
#[derive(Clone, Copy, Debug)]
pub struct Avx512 {
    _private: (),
}

x86_backend! {
    token: Avx512,
    line: Line512,
    features: "avx512f,avx512bw,avx512vpopcntdq,popcnt,bmi1",
    detect: ["avx512f", "avx512bw", "avx512vpopcntdq", "popcnt", "bmi1"],
    backend: Backend::Avx512,
    table: AVX512_TABLE,
}

/// A 512-bit line in one AVX-512 register.
#[derive(Clone, Copy)]
pub(crate) struct Line512(__m512i);

// SAFETY: every method only uses AVX-512 F and VPOPCNTDQ intrinsics (and the
// pointer accesses its own contract allows), so it is sound wherever the
// token's features are available.
unsafe impl generic::Line for Line512 {
    const NATIVE_POPCOUNT: bool = true;

    #[inline(always)]
    unsafe fn load(ptr: *const u64) -> Self {
        // SAFETY: `ptr` is readable for eight words and AVX-512 F is
        // available (the method's contract); the load is unaligned.
        Line512(unsafe { _mm512_loadu_si512(ptr.cast()) })
    }

    #[inline(always)]
    unsafe fn store(self, ptr: *mut u64) {
        // SAFETY: `ptr` is writable for eight words and AVX-512 F is
        // available (the method's contract); the store is unaligned.
        unsafe { _mm512_storeu_si512(ptr.cast(), self.0) }
    }

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: AVX-512 F is available (the method's contract).
        Line512(unsafe { _mm512_setzero_si512() })
    }

    #[inline(always)]
    unsafe fn and(self, other: Self) -> Self {
        // SAFETY: AVX-512 F is available (the method's contract).
        Line512(unsafe { _mm512_and_si512(self.0, other.0) })
    }

    #[inline(always)]
    unsafe fn and3(self, b: Self, c: Self) -> Self {
        // Truth table 0x80: the result bit is set only where all three
        // inputs are (bit 7 of the table indexes a = b = c = 1).
        // SAFETY: AVX-512 F is available (the method's contract).
        Line512(unsafe { _mm512_ternarylogic_epi64::<0x80>(self.0, b.0, c.0) })
    }

    #[inline(always)]
    unsafe fn xor3(self, b: Self, c: Self) -> Self {
        // Truth table 0x96: set where an odd number of the inputs are.
        // SAFETY: AVX-512 F is available (the method's contract).
        Line512(unsafe { _mm512_ternarylogic_epi64::<0x96>(self.0, b.0, c.0) })
    }

    #[inline(always)]
    unsafe fn maj(self, b: Self, c: Self) -> Self {
        // Truth table 0xe8: set where at least two of the inputs are.
        // SAFETY: AVX-512 F is available (the method's contract).
        Line512(unsafe { _mm512_ternarylogic_epi64::<0xe8>(self.0, b.0, c.0) })
    }

    #[inline(always)]
    unsafe fn or(self, other: Self) -> Self {
        // SAFETY: AVX-512 F is available (the method's contract).
        Line512(unsafe { _mm512_or_si512(self.0, other.0) })
    }

    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        // SAFETY: AVX-512 F is available (the method's contract).
        Line512(unsafe { _mm512_xor_si512(self.0, other.0) })
    }

    #[inline(always)]
    unsafe fn and_not(self, other: Self) -> Self {
        // `_mm512_andnot_si512(a, b)` is `!a & b`.
        // SAFETY: AVX-512 F is available (the method's contract).
        Line512(unsafe { _mm512_andnot_si512(other.0, self.0) })
    }

    #[inline(always)]
    unsafe fn nonzero_lanes(self) -> u8 {
        // SAFETY: AVX-512 F is available (the method's contract).
        unsafe { _mm512_test_epi64_mask(self.0, self.0) }
    }

    #[inline(always)]
    unsafe fn is_zero(self) -> bool {
        // One mask bit per lane that has any bit set.
        // SAFETY: AVX-512 F is available (the method's contract).
        unsafe { _mm512_test_epi64_mask(self.0, self.0) == 0 }
    }

    #[inline(always)]
    unsafe fn lane_popcounts(self) -> Self {
        // SAFETY: AVX-512 VPOPCNTDQ is available (the method's contract).
        Line512(unsafe { _mm512_popcnt_epi64(self.0) })
    }

    #[inline(always)]
    unsafe fn add_lanes(self, other: Self) -> Self {
        // SAFETY: AVX-512 F is available (the method's contract).
        Line512(unsafe { _mm512_add_epi64(self.0, other.0) })
    }

    #[inline(always)]
    unsafe fn sum_lanes(self) -> u64 {
        // SAFETY: AVX-512 F is available (the method's contract).
        unsafe { _mm512_reduce_add_epi64(self.0) as u64 }
    }
}

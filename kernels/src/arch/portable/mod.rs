//! Portable SIMD kernels written with `wide`, always available.
//!
//! The vector width is fixed at compile time by `wide`: on plain x86-64 a
//! [`wide::u64x8`] is four SSE2 registers, on aarch64 four NEON registers,
//! and with `-C target-cpu=native` on an AVX2 or AVX-512 machine it widens
//! to match. No run-time detection is involved, so this is the fallback on
//! every non-x86 target and a second, independent SIMD implementation on
//! x86-64 (tested like the others against [`crate::arch::all`]).
//!
//! The algorithms are those of `arch::generic`. One detail differs from
//! the `core::arch` backends because baseline SSE2 lacks the instruction:
//! the per-lane popcount is the classic SWAR bit-twiddling sequence (no
//! `pshufb`).

use wide::u64x8;

use crate::arch::generic;
use crate::table::{Backend, Kernels};

/// The portable table (always available).
pub fn kernels() -> &'static Kernels {
    &PORTABLE
}

/// The table and one public function per kernel, over the list of kernel
/// signatures.
macro_rules! portable_kernels {
    ({} $($name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {
        static PORTABLE: Kernels = Kernels {
            backend: Backend::Portable,
            $($name,)*
        };

        $(
            #[doc = concat!("See [`crate::arch::all::", stringify!($name), "`].")]
            #[allow(clippy::too_many_arguments, reason = "the kernel's own signature (`count_runs` has nine)")]
            pub fn $name($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: `WideLine` needs no CPU feature beyond the
                // compile-time target, so the generic function's only
                // requirement is met everywhere.
                unsafe { generic::$name::<WideLine>($($arg),*) }
            }
        )*
    };
}

with_kernel_signatures! { portable_kernels! {} }

/// A 512-bit line as one `wide::u64x8`.
#[derive(Clone, Copy)]
struct WideLine(u64x8);

// SAFETY: every method is plain `wide` code (no run-time CPU requirement)
// plus the unaligned pointer accesses its own contract allows.
unsafe impl generic::Line for WideLine {
    const NATIVE_POPCOUNT: bool = false;

    #[inline(always)]
    unsafe fn load(ptr: *const u64) -> Self {
        // SAFETY: `ptr` is readable for eight words (the method's contract);
        // `read_unaligned` has no alignment requirement.
        WideLine(u64x8::new(unsafe { ptr.cast::<[u64; 8]>().read_unaligned() }))
    }

    #[inline(always)]
    unsafe fn store(self, ptr: *mut u64) {
        // SAFETY: `ptr` is writable for eight words (the method's contract);
        // `write_unaligned` has no alignment requirement.
        unsafe { ptr.cast::<[u64; 8]>().write_unaligned(self.0.to_array()) }
    }

    #[inline(always)]
    unsafe fn zero() -> Self {
        WideLine(u64x8::ZERO)
    }

    #[inline(always)]
    unsafe fn and(self, other: Self) -> Self {
        WideLine(self.0 & other.0)
    }

    #[inline(always)]
    unsafe fn or(self, other: Self) -> Self {
        WideLine(self.0 | other.0)
    }

    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        WideLine(self.0 ^ other.0)
    }

    #[inline(always)]
    unsafe fn and_not(self, other: Self) -> Self {
        WideLine(self.0 & !other.0)
    }

    #[inline(always)]
    unsafe fn nonzero_lanes(self) -> u8 {
        self.0.to_array().iter().enumerate().fold(0, |acc, (i, &w)| acc | (u8::from(w != 0) << i))
    }

    #[inline(always)]
    unsafe fn is_zero(self) -> bool {
        self.0.to_array().iter().fold(0, |acc, &w| acc | w) == 0
    }

    #[inline(always)]
    unsafe fn lane_popcounts(self) -> Self {
        // SWAR popcount per lane (Hacker's Delight 5-1) without the final
        // multiply, which SSE2 lacks for 64-bit lanes: after the nibble step
        // every byte holds at most 8, so shifted adds sum the bytes.
        let m1 = u64x8::splat(0x5555_5555_5555_5555);
        let m2 = u64x8::splat(0x3333_3333_3333_3333);
        let m4 = u64x8::splat(0x0f0f_0f0f_0f0f_0f0f);
        let mut x = self.0;
        x = x - (x.unbounded_shr_scalar(1) & m1);
        x = (x & m2) + (x.unbounded_shr_scalar(2) & m2);
        x = (x + x.unbounded_shr_scalar(4)) & m4;
        x = x + x.unbounded_shr_scalar(8);
        x = x + x.unbounded_shr_scalar(16);
        x = x + x.unbounded_shr_scalar(32);
        WideLine(x & u64x8::splat(0x7f))
    }

    #[inline(always)]
    unsafe fn add_lanes(self, other: Self) -> Self {
        WideLine(self.0 + other.0)
    }

    #[inline(always)]
    unsafe fn sum_lanes(self) -> u64 {
        self.0.reduce_add()
    }
}

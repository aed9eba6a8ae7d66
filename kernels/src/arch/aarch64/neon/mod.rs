//! NEON kernels (`core::arch::aarch64`), the aarch64 default.
//!
//! [`Neon`] is the capability token, in the shape of the x86-64 ones: every
//! method is a kernel that instantiates the shared algorithm of
//! `arch::generic` with `NeonLine` (a 512-bit line held as four
//! `uint64x2_t`). NEON is part of the aarch64 baseline, so this module is
//! compiled whenever the target enables `neon` (the default for every
//! aarch64 Linux, macOS and Windows target), the token always exists there
//! and no run-time check is made. No optional feature (SHA3's `eor3` and
//! `bcax`, SVE) is used, so none is detected: the scoring kernel's full
//! adders take the majority with `bsl` instead (below).
//!
//! Where the NEON instructions differ from the portable tier's:
//!
//! - loads and stores: four `ld1`/`st1` per line, which the compiler
//!   pairs into `ldp`/`stp`.
//! - `is_zero` (the early exit of the AND family): three `orr`, one
//!   pairwise `umaxp` and a move to a general register.
//! - popcounts (and `or_into`'s count of new bits, and the count of set
//!   bits before an extraction): `cnt` per byte, the four registers' byte
//!   counts added (at most 32 a byte), then widened pairwise with `uaddlp`
//!   and accumulated with `uadalp`: ten instructions a line, so no
//!   Harley-Seal tree (`Line::NATIVE_POPCOUNT`), against shifts, masks
//!   and adds per 64-bit lane in the portable tier.
//! - the bitmap of non-zero words (extraction): `cmtst` per register,
//!   narrowed with `uzp1`, weighted and summed with `addv`.
//! - the carry of a full adder (scoring's carry-save counters):
//!   majority(a, b, c) is `c` where `a` and `b` differ and `a` where they
//!   agree, one `eor` and one `bsl` per register instead of four logic
//!   operations.
//!
//! Every backend test, property test and exhaustive test runs it against
//! the scalar reference on aarch64 (under `qemu-aarch64` in CI, which
//! requires it there: a skip fails, see
//! [`crate::dispatch::backend_required`]).

use core::arch::aarch64::*;

use crate::arch::generic;
use crate::table::{Backend, Kernels};

/// Proof that the running CPU supports NEON: always true on the aarch64
/// targets this module is compiled for.
///
/// Obtained from [`Neon::new`]; every method is a kernel with the contract
/// of the function of the same name in [`crate::arch::all`].
#[derive(Clone, Copy, Debug)]
pub struct Neon {
    _private: (),
}

impl Neon {
    /// Returns the token. NEON is part of this target's baseline (the
    /// module is compiled only when the target enables `neon`), so this is
    /// always `Some`; an `Option` like the x86-64 tokens' `new`, so callers
    /// treat every backend alike.
    #[inline]
    #[must_use]
    pub fn new() -> Option<Neon> {
        Some(Neon { _private: () })
    }
}

/// The NEON table, always available on the targets this module is
/// compiled for (an `Option` like the x86-64 backends' `kernels()`).
#[must_use]
pub fn kernels() -> Option<&'static Kernels> {
    Neon::new().map(|_| &NEON_TABLE)
}

/// The token's kernel methods, the table and the entry points, over the
/// list of kernel signatures.
macro_rules! neon_kernels {
    ({} $($name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {
        impl Neon {
            $(
                #[doc = concat!("See [`crate::arch::all::", stringify!($name), "`].")]
                #[allow(clippy::too_many_arguments, reason = "the kernel's own arguments, plus the receiver")]
                #[inline]
                pub fn $name(self, $($arg: $ty),*) $(-> $ret)? {
                    entry::$name($($arg),*)
                }
            )*
        }

        /// The table: plain entry points, since NEON needs no run-time
        /// check on the targets this module is compiled for.
        static NEON_TABLE: Kernels = Kernels {
            backend: Backend::Neon,
            $($name: entry::$name,)*
        };

        /// The entry points: `arch::generic` instantiated with
        /// [`NeonLine`], compiled (like all code of this target) with NEON.
        mod entry {
            use super::*;

            $(
                #[allow(clippy::too_many_arguments, reason = "the kernel's own signature (`count_runs` has nine)")]
                pub(super) fn $name($($arg: $ty),*) $(-> $ret)? {
                    // SAFETY: `NeonLine` needs NEON, which the target
                    // enables (this module is compiled only then).
                    unsafe { generic::$name::<NeonLine>($($arg),*) }
                }
            )*
        }
    };
}

with_kernel_signatures! { neon_kernels! {} }

/// A 512-bit line as four NEON registers, words 0-1, 2-3, 4-5 and 6-7.
#[derive(Clone, Copy)]
pub(crate) struct NeonLine(uint64x2x4_t);

impl NeonLine {
    /// The four registers through `op`, pairwise with `other`'s.
    #[inline(always)]
    fn map2(self, other: Self, op: impl Fn(uint64x2_t, uint64x2_t) -> uint64x2_t) -> Self {
        let (a, b) = (self.0, other.0);
        NeonLine(uint64x2x4_t(op(a.0, b.0), op(a.1, b.1), op(a.2, b.2), op(a.3, b.3)))
    }

    /// The four registers through `op`.
    #[inline(always)]
    fn map(self, op: impl Fn(uint64x2_t) -> uint64x2_t) -> Self {
        let a = self.0;
        NeonLine(uint64x2x4_t(op(a.0), op(a.1), op(a.2), op(a.3)))
    }
}

/// `Line` methods that apply one two-operand NEON operation to each of
/// the four registers (`a` the register of `self`, `b` that of `other`).
macro_rules! lanewise {
    ($($(#[$doc:meta])* $method:ident => |$a:ident, $b:ident| $body:expr,)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        unsafe fn $method(self, other: Self) -> Self {
            // SAFETY: NEON is available (the method's contract).
            self.map2(other, |$a, $b| unsafe { $body })
        }
    )*};
}

/// The weight of each word's bit in [`generic::Line::nonzero_lanes`]'s
/// mask, one `u16` lane per word.
static LANE_BITS: [u16; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

// SAFETY: every method only uses NEON intrinsics (and the pointer accesses
// its own contract allows); NEON is enabled for the whole target this
// module is compiled for.
unsafe impl generic::Line for NeonLine {
    const NATIVE_POPCOUNT: bool = true;

    #[inline(always)]
    unsafe fn load(ptr: *const u64) -> Self {
        // SAFETY: `ptr` is readable for eight words (the method's
        // contract); `ld1` has no alignment requirement. Four loads rather
        // than one of four registers (`vld1q_u64_x4`) leave the register
        // allocator free (the compiler pairs them into `ldp`).
        unsafe {
            NeonLine(uint64x2x4_t(vld1q_u64(ptr), vld1q_u64(ptr.add(2)), vld1q_u64(ptr.add(4)), vld1q_u64(ptr.add(6))))
        }
    }

    #[inline(always)]
    unsafe fn store(self, ptr: *mut u64) {
        // Four stores: one `st1` of four registers needs them consecutive,
        // which cost three register moves a line in `and_runs`.
        let a = self.0;
        // SAFETY: `ptr` is writable for eight words (the method's
        // contract); `st1` has no alignment requirement.
        unsafe {
            vst1q_u64(ptr, a.0);
            vst1q_u64(ptr.add(2), a.1);
            vst1q_u64(ptr.add(4), a.2);
            vst1q_u64(ptr.add(6), a.3);
        }
    }

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: NEON is available (the method's contract).
        let z = unsafe { vdupq_n_u64(0) };
        NeonLine(uint64x2x4_t(z, z, z, z))
    }

    lanewise! {
        and => |a, b| vandq_u64(a, b),
        or => |a, b| vorrq_u64(a, b),
        xor => |a, b| veorq_u64(a, b),
        // `bic a, b` is `a & !b`.
        and_not => |a, b| vbicq_u64(a, b),
        add_lanes => |a, b| vaddq_u64(a, b),
    }

    #[inline(always)]
    unsafe fn maj(self, b: Self, c: Self) -> Self {
        // Where `self` and `b` agree the majority is their common bit,
        // where they differ it is `c`: `bsl` selects `c` under the mask
        // `self ^ b`, `self` elsewhere.
        // SAFETY: NEON is available (the method's contract).
        unsafe {
            let (d, c, a) = (self.xor(b).0, c.0, self.0);
            NeonLine(uint64x2x4_t(
                vbslq_u64(d.0, c.0, a.0),
                vbslq_u64(d.1, c.1, a.1),
                vbslq_u64(d.2, c.2, a.2),
                vbslq_u64(d.3, c.3, a.3),
            ))
        }
    }

    #[inline(always)]
    unsafe fn nonzero_lanes(self) -> u8 {
        // `cmtst` gives all ones in each non-zero word; two rounds of
        // `uzp1` keep the low 16 bits of each, one `u16` lane per word, in
        // word order; each lane keeps its own bit of `LANE_BITS` and `addv`
        // sums them into the mask.
        // SAFETY: NEON is available (the method's contract), and
        // `LANE_BITS` holds the eight `u16`s that `ld1` reads.
        unsafe {
            let t = self.map(|a| vtstq_u64(a, a)).0;
            let low = vuzp1q_u32(vreinterpretq_u32_u64(t.0), vreinterpretq_u32_u64(t.1));
            let high = vuzp1q_u32(vreinterpretq_u32_u64(t.2), vreinterpretq_u32_u64(t.3));
            let words = vuzp1q_u16(vreinterpretq_u16_u32(low), vreinterpretq_u16_u32(high));
            let bits = vld1q_u16(LANE_BITS.as_ptr());
            vaddvq_u16(vandq_u16(words, bits)) as u8
        }
    }

    #[inline(always)]
    unsafe fn is_zero(self) -> bool {
        // The OR of the four registers, then `umaxp` folds its four `u32`
        // lanes into the low 64 bits, which are zero only if all were.
        let a = self.0;
        // SAFETY: NEON is available (the method's contract).
        unsafe {
            let any = vreinterpretq_u32_u64(vorrq_u64(vorrq_u64(a.0, a.1), vorrq_u64(a.2, a.3)));
            vgetq_lane_u64::<0>(vreinterpretq_u64_u32(vpmaxq_u32(any, any))) == 0
        }
    }

    #[inline(always)]
    unsafe fn lane_popcounts(self) -> Self {
        // `cnt` per byte, then `uaddlp` three times (bytes to `u16` to
        // `u32` to `u64`): each word's count in its own lane.
        // SAFETY: NEON is available (the method's contract).
        self.map(|a| unsafe { vpaddlq_u32(vpaddlq_u16(vpaddlq_u8(vcntq_u8(vreinterpretq_u8_u64(a))))) })
    }

    #[inline(always)]
    unsafe fn accumulate_popcount(self, acc: Self) -> Self {
        // `cnt` per byte; the four registers' byte counts added (at most
        // 32 a byte, no overflow); widened pairwise twice with `uaddlp`
        // and accumulated into `acc`'s first register with `uadalp`.
        let (a, acc) = (self.0, acc.0);
        // SAFETY: NEON is available (the method's contract).
        unsafe {
            let bytes = |v: uint64x2_t| vcntq_u8(vreinterpretq_u8_u64(v));
            let sum = vaddq_u8(vaddq_u8(bytes(a.0), bytes(a.1)), vaddq_u8(bytes(a.2), bytes(a.3)));
            let words = vpaddlq_u16(vpaddlq_u8(sum));
            NeonLine(uint64x2x4_t(vpadalq_u32(acc.0, words), acc.1, acc.2, acc.3))
        }
    }

    #[inline(always)]
    unsafe fn sum_lanes(self) -> u64 {
        let a = self.0;
        // SAFETY: NEON is available (the method's contract).
        unsafe { vaddvq_u64(vaddq_u64(vaddq_u64(a.0, a.1), vaddq_u64(a.2, a.3))) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::generic::Line;

    #[test]
    fn token_methods_match_the_reference() {
        token_matches_reference!(Neon::new().expect("NEON is part of the aarch64 baseline"));
        assert_eq!(kernels().map(Kernels::backend), Some(Backend::Neon));
    }

    /// The line operations the kernels' tests reach only through whole
    /// kernels, one word pattern at a time: a wrong lane order or weight
    /// shows here by name.
    #[test]
    fn line_operations_match_word_models() {
        let words: [u64; 8] = [0, 1, !0, 0x8000_0000_0000_0000, 0, 0x0000_0001_0000_0000, 0xff00, 0];
        let other: [u64; 8] = [!0, 3, 0x0f0f, 0, 5, 0x0000_0001_0000_0000, 0x0ff0, 0];
        let third: [u64; 8] = [0x5555, 2, 0xffff_0000, !0, 7, 0, 0xf0f0, !0];
        // SAFETY: NEON is available (this module is compiled only where
        // it is); every pointer names eight words.
        unsafe {
            let (x, y, z) =
                (NeonLine::load(words.as_ptr()), NeonLine::load(other.as_ptr()), NeonLine::load(third.as_ptr()));
            let mut out = [0u64; 8];
            x.maj(y, z).store(out.as_mut_ptr());
            for i in 0..8 {
                let (a, b, c) = (words[i], other[i], third[i]);
                assert_eq!(out[i], (a & b) | (a & c) | (b & c), "maj word {i}");
            }
            x.and_not(y).store(out.as_mut_ptr());
            assert!(out.iter().zip(words.iter().zip(&other)).all(|(&o, (&a, &b))| o == a & !b));
            let expected_mask = words.iter().enumerate().fold(0u8, |m, (i, &w)| m | (u8::from(w != 0) << i));
            assert_eq!(x.nonzero_lanes(), expected_mask);
            assert_eq!(y.nonzero_lanes(), 0b0111_0111);
            assert!(!x.is_zero());
            assert!(NeonLine::zero().is_zero());
            // A single bit in any word, in any half of a register, is seen.
            for bit in 0..512 {
                let mut one = [0u64; 8];
                one[bit / 64] = 1 << (bit % 64);
                let line = NeonLine::load(one.as_ptr());
                assert!(!line.is_zero(), "bit {bit}");
                assert_eq!(line.nonzero_lanes(), 1 << (bit / 64), "bit {bit}");
            }
            x.lane_popcounts().store(out.as_mut_ptr());
            assert_eq!(out, words.map(|w| u64::from(w.count_ones())));
            let total: u64 = words.iter().chain(&other).map(|w| u64::from(w.count_ones())).sum();
            let acc = y.accumulate_popcount(x.accumulate_popcount(NeonLine::zero()));
            assert_eq!(acc.sum_lanes(), total);
            assert_eq!(x.lane_popcounts().add_lanes(y.lane_popcounts()).sum_lanes(), total);
            let full = NeonLine::load([!0u64; 8].as_ptr());
            let mut acc = NeonLine::zero();
            for _ in 0..1000 {
                acc = full.accumulate_popcount(acc);
            }
            assert_eq!(acc.sum_lanes(), 512_000);
        }
    }
}

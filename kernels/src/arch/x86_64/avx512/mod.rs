//! AVX-512 kernels (`core::arch`, AVX-512 F + BW + CD + VPOPCNTDQ).
//!
//! Every backend test, property test and exhaustive test runs it against
//! the scalar reference on a CPU that has the features; CI requires it
//! there, so such a CPU fails rather than skips those tests (see
//! [`crate::dispatch::backend_required`]). Dispatch selects it only on a
//! CPU that reports all its features; `BLOOMSLICE_KERNELS=avx2` rules it
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
//! - a single key's ids (`Line::append_mapped_lines`) are located with
//!   `vplzcntq` (CD) and compressed with `vpcompressd`, the lanes spread by
//!   BMI2 `pdep`, instead of one word at a time.

use core::arch::x86_64::*;

use crate::arch::generic;
use crate::table::{Backend, Kernels};

/// Proof that the running CPU supports AVX-512 F, BW, CD and VPOPCNTDQ
/// (plus POPCNT and BMI1, used by the scalar tails and the set-bit walk,
/// and BMI2, whose `pdep` spreads a single key's id masks).
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
    features: "avx512f,avx512bw,avx512cd,avx512vpopcntdq,popcnt,bmi1,bmi2",
    detect: ["avx512f", "avx512bw", "avx512cd", "avx512vpopcntdq", "popcnt", "bmi1", "bmi2"],
    backend: Backend::Avx512,
    table: AVX512_TABLE,
}

/// A 512-bit line in one AVX-512 register.
#[derive(Clone, Copy)]
pub(crate) struct Line512(__m512i);

// SAFETY: every method only uses AVX-512 F, CD and VPOPCNTDQ and BMI2
// intrinsics (and the pointer accesses its own contract allows), so it is
// sound wherever the token's features are available.
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

    /// Every word's two lowest set bits located at once: `w & (w - 1)`
    /// drops a word's lowest bit, so while no word holds three bits, a
    /// word's lowest bit is `w ^ rest` and its other bit is `rest`, and
    /// `vplzcntq` turns each into its index in the table. The 16 indexes
    /// of a line, interleaved lowest first, are compressed to the present
    /// ones (`vpcompressd`, into a register: Zen 4 compresses to memory
    /// slowly), narrowed to 16 bits and stored after the previous lines';
    /// then the table is read at each in one scalar pass for all the lines,
    /// of a fixed number of writes first ([`write_mapped`]; a vector gather
    /// was slower on Zen 4 and Zen 5, and so was a loop a line on distinct
    /// keys; `bench/RESULTS.md`, section "Latency"). A line
    /// with a word of three or more bits takes the default's word walk,
    /// after the ids of the lines before it are written.
    #[inline(always)]
    unsafe fn append_mapped_lines<const G: usize>(lines: [Self; G], table: *const u64, out: &mut Vec<u64>) {
        const { assert!(G <= 4, "a short run has at most four lines") };
        // Table indexes of the lines' ids not yet written: 16 a line at
        // most. Every entry is always an index inside the `512 * G` entries
        // of `table` (zero, or an index stored below), as `write_mapped`
        // reads some past the count. Aligned, so that the first two lines'
        // 32-byte stores stay in one cache line.
        #[repr(align(64))]
        struct Pending([u16; 64]);
        let mut pending = Pending([0; 64]);
        let at = &mut pending.0;
        let mut count = 0;
        // SAFETY: AVX-512 F and CD and BMI2 are available (the method's
        // contract); `table` holds `512 * G` entries (the same), and the
        // table reads and output writes are justified below.
        unsafe {
            let ones = _mm512_set1_epi64(-1);
            for (g, line) in lines.into_iter().enumerate() {
                let w = line.0;
                let present = _mm512_test_epi64_mask(w, w);
                if present == 0 {
                    continue;
                }
                let rest = _mm512_and_si512(w, _mm512_add_epi64(w, ones));
                let third = _mm512_and_si512(rest, _mm512_add_epi64(rest, ones));
                if _mm512_test_epi64_mask(third, third) != 0 {
                    write_mapped::<G>(at, count, table, out);
                    count = 0;
                    generic::append_lines([line], table.add(g * 512), out);
                    continue;
                }
                let second = _mm512_test_epi64_mask(rest, rest);
                // A bit's index in the table is `512 * g + 64 * j + 63 -
                // lzcnt` for bit `63 - lzcnt` of word `j` of line `g`.
                let last = _mm512_add_epi64(
                    _mm512_setr_epi64(63, 127, 191, 255, 319, 383, 447, 511),
                    _mm512_set1_epi64(g as i64 * 512),
                );
                let lowest = _mm512_sub_epi64(last, _mm512_lzcnt_epi64(_mm512_xor_si512(w, rest)));
                let next = _mm512_sub_epi64(last, _mm512_lzcnt_epi64(rest));
                // Low halves (the indexes are under 2 048), interleaved:
                // word j's lowest bit at 2j, its other one at 2j + 1.
                let order = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
                let both = _mm512_permutex2var_epi32(lowest, order, next);
                let keep = _pdep_u32(u32::from(present), 0x5555) | _pdep_u32(u32::from(second), 0xaaaa);
                let kept = _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(keep as u16, both));
                // SAFETY: `count <= 16 * g`, so the 16 slots stored are
                // inside `at` (`16 * G <= 64`).
                _mm256_storeu_si256(at.as_mut_ptr().add(count).cast(), kept);
                count += keep.count_ones() as usize;
            }
            write_mapped::<G>(at, count, table, out);
        }
    }
}

/// Slots of a single key's answer written per line whether or not they
/// hold ids ([`write_mapped`]). A loop of exactly as many writes as ids
/// mispredicted its exit on nearly every distinct key. A key of `full`
/// N = 1 000 names about 8.5 ids in its two lines; 6 a line measured
/// faster than 5 or 8, and than the loop, on keys the branch predictor
/// cannot learn, at a small cost on a repeated key (`bench/RESULTS.md`,
/// section "Latency").
const FIXED_IDS_PER_LINE: usize = 6;

/// Appends `table[at[i]]` for each `i < count`, in order. The first
/// `FIXED_IDS_PER_LINE * G` slots are written whatever `count` is (those
/// past `count` stay past the length), then the rest one by one.
///
/// # Safety
///
/// `count <= at.len()`, and every entry of `at` (not only the first
/// `count`) must be inside `table`'s readable entries.
#[inline(always)]
unsafe fn write_mapped<const G: usize>(at: &[u16; 64], count: usize, table: *const u64, out: &mut Vec<u64>) {
    let fixed = const { FIXED_IDS_PER_LINE * G };
    out.reserve(count.max(fixed));
    let len = out.len();
    // SAFETY: `max(count, fixed)` slots past `len` were reserved; the
    // first `max(count, fixed)` are written below (those past `count` stay
    // past the length), each with a table entry at an index of `at`, all
    // of which this function's contract makes readable; `fixed <= 24 <
    // at.len()` and `count <= at.len()`; then the first `count` are inside
    // the length.
    unsafe {
        let dst = out.as_mut_ptr().add(len);
        for (i, &b) in at[..fixed].iter().enumerate() {
            dst.add(i).write(*table.add(usize::from(b)));
        }
        // A `while`: the iterator form of this loop measured slower on a
        // repeated key.
        let mut i = fixed;
        while i < count {
            dst.add(i).write(*table.add(usize::from(at[i])));
            i += 1;
        }
        out.set_len(len + count);
    }
}

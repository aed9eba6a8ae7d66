//! Population counts over lines: [`popcount`] of one slice and
//! [`and_popcount`], [`or_popcount`] and [`xor_popcount`] of two, all
//! through one loop, [`popcount_lines`]: the backend's lane popcount where
//! it is native, else a Harley-Seal tree of carry-save adders. The lines
//! come from a [`LineSource`], so a kernel that also writes (`or_into`)
//! shares the tree. Scalar reference: `arch::all`'s popcounts.

use super::line::Line;
use crate::WORDS_PER_LINE;
use crate::arch::all;

/// A carry-save adder over lines: adds three one-bit inputs per bit position
/// and returns `(carry, sum)`, the building block of Harley-Seal.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
unsafe fn carry_save_add<L: Line>(a: L, b: L, c: L) -> (L, L) {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        let u = a.xor(b);
        (a.and(b).or(u.and(c)), u.xor(c))
    }
}

/// A stream of lines fed to [`popcount_lines`].
///
/// A trait with `#[inline(always)]` methods rather than a closure: a closure
/// is a separate function that LLVM may decline to inline (it did, for
/// `or_into`), and then its intrinsics are compiled without the backend's
/// features, one call per vector operation.
pub(super) trait LineSource<L: Line> {
    /// Line `i` of the stream. Called exactly once per index, in increasing
    /// order, so it may have side effects (as `or_into`'s
    /// `OrIntoSource` does).
    ///
    /// # Safety
    ///
    /// `L`'s CPU features must be available and `i` below the number of
    /// lines the source was built for.
    unsafe fn line(&mut self, i: usize) -> L;
}

/// The lines of one slice.
struct WordsSource {
    words: *const u64,
}

impl<L: Line> LineSource<L> for WordsSource {
    #[inline(always)]
    unsafe fn line(&mut self, i: usize) -> L {
        // SAFETY: line `i` is in bounds and `L`'s features are available
        // (the method's contract).
        unsafe { L::load(self.words.add(i * WORDS_PER_LINE)) }
    }
}

/// A bitwise operation on two operands, on lines and on scalar words.
trait BinaryOp {
    /// The operation on lines.
    ///
    /// # Safety
    ///
    /// `L`'s CPU features must be available.
    unsafe fn lines<L: Line>(a: L, b: L) -> L;

    /// The reference kernel, used for the tail words.
    fn popcount_reference(a: &[u64], b: &[u64]) -> u64;
}

/// Declares each operation's type and its [`BinaryOp`] impl: the `Line`
/// method and the scalar reference kernel of its popcount.
macro_rules! binary_ops {
    ($($(#[$doc:meta])* $op:ident => $method:ident, $reference:ident;)*) => {$(
        $(#[$doc])*
        struct $op;

        impl BinaryOp for $op {
            #[inline(always)]
            unsafe fn lines<L: Line>(a: L, b: L) -> L {
                // SAFETY: forwarded from the method's contract.
                unsafe { a.$method(b) }
            }

            fn popcount_reference(a: &[u64], b: &[u64]) -> u64 {
                all::$reference(a, b)
            }
        }
    )*};
}

binary_ops! {
    /// `a & b`.
    And => and, and_popcount;
    /// `a | b`.
    Or => or, or_popcount;
    /// `a ^ b`.
    Xor => xor, xor_popcount;
}

/// The lines of `a OP b`.
struct BinarySource<Op> {
    a: *const u64,
    b: *const u64,
    op: core::marker::PhantomData<Op>,
}

impl<L: Line, Op: BinaryOp> LineSource<L> for BinarySource<Op> {
    #[inline(always)]
    unsafe fn line(&mut self, i: usize) -> L {
        // SAFETY: line `i` is in bounds of both operands and `L`'s features
        // are available (the method's contract).
        unsafe { Op::lines(L::load(self.a.add(i * WORDS_PER_LINE)), L::load(self.b.add(i * WORDS_PER_LINE))) }
    }
}

/// Population count of the `lines` lines of `source`.
///
/// Without a native lane popcount this is Harley-Seal (Muła, Kurz and
/// Lemire, "Faster population counts using AVX2 instructions"): eight lines
/// are folded through a tree of carry-save adders into `ones`, `twos`,
/// `fours` and one `eights` line, and only the `eights` line is popcounted
/// per step, so the expensive lane popcount runs once per 64 words.
///
/// # Safety
///
/// `L`'s CPU features must be available, and `source` must hold at least
/// `lines` lines.
#[inline(always)]
pub(super) unsafe fn popcount_lines<L: Line>(lines: usize, mut source: impl LineSource<L>) -> u64 {
    // SAFETY: `L`'s features are available (this function's contract) and
    // the source is only asked for lines below `lines`.
    unsafe {
        let mut total = L::zero();
        let mut i = 0;
        if L::NATIVE_POPCOUNT {
            while i < lines {
                total = source.line(i).accumulate_popcount(total);
                i += 1;
            }
            return total.sum_lanes();
        }
        let mut ones = L::zero();
        let mut twos = L::zero();
        let mut fours = L::zero();
        while i + 8 <= lines {
            let (twos_a, o) = carry_save_add(ones, source.line(i), source.line(i + 1));
            let (twos_b, o) = carry_save_add(o, source.line(i + 2), source.line(i + 3));
            let (fours_a, t) = carry_save_add(twos, twos_a, twos_b);
            let (twos_a, o) = carry_save_add(o, source.line(i + 4), source.line(i + 5));
            let (twos_b, o) = carry_save_add(o, source.line(i + 6), source.line(i + 7));
            let (fours_b, t) = carry_save_add(t, twos_a, twos_b);
            let (eights, f) = carry_save_add(fours, fours_a, fours_b);
            ones = o;
            twos = t;
            fours = f;
            total = total.add_lanes(eights.lane_popcounts());
            i += 8;
        }
        let mut count = 8 * total.sum_lanes()
            + 4 * fours.lane_popcounts().sum_lanes()
            + 2 * twos.lane_popcounts().sum_lanes()
            + ones.lane_popcounts().sum_lanes();
        let mut rest = L::zero();
        while i < lines {
            rest = rest.add_lanes(source.line(i).lane_popcounts());
            i += 1;
        }
        count += rest.sum_lanes();
        count
    }
}

/// See [`all::popcount`].
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn popcount<L: Line>(words: &[u64]) -> u64 {
    let lines = words.len() / WORDS_PER_LINE;
    // SAFETY: `L`'s features are available and `words` holds `lines` lines.
    let vector = unsafe { popcount_lines::<L>(lines, WordsSource { words: words.as_ptr() }) };
    vector + all::popcount(&words[lines * WORDS_PER_LINE..])
}

/// Shared body of the two-operand popcounts.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
unsafe fn binary_popcount<L: Line, Op: BinaryOp>(a: &[u64], b: &[u64]) -> u64 {
    // The callers assert equal lengths with their own message; the loads
    // below rely on it, so check again (free after inlining).
    assert_eq!(a.len(), b.len());
    let lines = a.len() / WORDS_PER_LINE;
    let source = BinarySource::<Op> { a: a.as_ptr(), b: b.as_ptr(), op: core::marker::PhantomData };
    // SAFETY: `L`'s features are available and both operands hold `lines`
    // lines.
    let vector = unsafe { popcount_lines::<L>(lines, source) };
    let tail = lines * WORDS_PER_LINE;
    vector + Op::popcount_reference(&a[tail..], &b[tail..])
}

/// See [`all::and_popcount`].
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn and_popcount<L: Line>(a: &[u64], b: &[u64]) -> u64 {
    assert_eq!(a.len(), b.len(), "and_popcount: length mismatch");
    // SAFETY: forwarded from this function's contract.
    unsafe { binary_popcount::<L, And>(a, b) }
}

/// See [`all::or_popcount`].
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn or_popcount<L: Line>(a: &[u64], b: &[u64]) -> u64 {
    assert_eq!(a.len(), b.len(), "or_popcount: length mismatch");
    // SAFETY: forwarded from this function's contract.
    unsafe { binary_popcount::<L, Or>(a, b) }
}

/// See [`all::xor_popcount`].
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn xor_popcount<L: Line>(a: &[u64], b: &[u64]) -> u64 {
    assert_eq!(a.len(), b.len(), "xor_popcount: length mismatch");
    // SAFETY: forwarded from this function's contract.
    unsafe { binary_popcount::<L, Xor>(a, b) }
}

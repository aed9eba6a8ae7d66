//! The SIMD algorithms, written once over a 512-bit [`Line`] of eight words.
//!
//! Every SIMD backend (AVX2, AVX-512, portable `wide`) implements [`Line`]
//! with its own registers (two `__m256i`, one `__m512i`, one `wide::u64x8`)
//! and instantiates these functions inside its own `#[target_feature]`
//! functions. Everything here is `#[inline(always)]` so that the line
//! operations are inlined into a function compiled with the backend's
//! features (the same trick as memchr's `arch/generic`); called from anywhere
//! else they would still be correct but slow.
//!
//! A line is the unit of the engine's layout (one cache line, one 512-bit
//! chunk of [`crate::arch::all::and_rows`]), so the chunked early exit of
//! `and_rows` maps onto one `is_zero` test per line and row. Words past the
//! last full line (fewer than eight) are handled with scalar code that
//! follows the reference exactly.

use crate::arch::all;
use crate::{LookAhead, WORDS_PER_LINE};

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
    /// True when the backend has a per-lane hardware popcount that is as
    /// cheap as a bitwise operation (AVX-512 VPOPCNTDQ), so the Harley-Seal
    /// carry-save tree would only add work.
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
}

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
trait LineSource<L: Line> {
    /// Line `i` of the stream. Called exactly once per index, in increasing
    /// order, so it may have side effects (as [`OrIntoSource`] does).
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

/// ORs `src` into `dst` line by line, yielding each line's newly set bits
/// (`src & !dst`).
struct OrIntoSource {
    dst: *mut u64,
    src: *const u64,
}

impl<L: Line> LineSource<L> for OrIntoSource {
    #[inline(always)]
    unsafe fn line(&mut self, i: usize) -> L {
        // SAFETY: line `i` is in bounds of both slices, which cannot overlap
        // (`dst` comes from a `&mut`), and `L`'s features are available
        // (the method's contract).
        unsafe {
            let dst = self.dst.add(i * WORDS_PER_LINE);
            let d = L::load(dst);
            let s = L::load(self.src.add(i * WORDS_PER_LINE));
            d.or(s).store(dst);
            s.and_not(d)
        }
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
unsafe fn popcount_lines<L: Line>(lines: usize, mut source: impl LineSource<L>) -> u64 {
    // SAFETY: `L`'s features are available (this function's contract) and
    // the source is only asked for lines below `lines`.
    unsafe {
        let mut total = L::zero();
        let mut i = 0;
        if L::NATIVE_POPCOUNT {
            while i < lines {
                total = total.add_lanes(source.line(i).lane_popcounts());
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

/// See [`all::and_rows`].
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn and_rows<L: Line>(rows: &[&[u64]], out: &mut [u64]) -> bool {
    let n = out.len();
    for row in rows {
        assert!(row.len() >= n, "row run shorter than the output");
    }
    let Some((first, rest)) = rows.split_first() else {
        return all::and_of_no_rows(out);
    };
    let full = n - n % WORDS_PER_LINE;
    let out_ptr = out.as_mut_ptr();
    // SAFETY: `L`'s features are available (this function's contract).
    let mut any = unsafe { L::zero() };
    let mut start = 0;
    while start < full {
        // SAFETY: `start + 8 <= full <= n`, every row holds at least `n`
        // words (asserted above) and so does `out`, so each load and the
        // store touch in-bounds words; `L`'s features are available.
        unsafe {
            let mut acc = L::load(first.as_ptr().add(start));
            for row in rest {
                if acc.is_zero() {
                    break;
                }
                acc = acc.and(L::load(row.as_ptr().add(start)));
            }
            acc.store(out_ptr.add(start));
            any = any.or(acc);
        }
        start += WORDS_PER_LINE;
    }
    // SAFETY: `L`'s features are available.
    let mut any_set = !unsafe { any.is_zero() };
    if full < n {
        let chunk = &mut out[full..];
        chunk.copy_from_slice(&first[full..n]);
        for row in rest {
            if chunk.iter().all(|&w| w == 0) {
                break;
            }
            for (o, &w) in chunk.iter_mut().zip(&row[full..n]) {
                *o &= w;
            }
        }
        any_set |= chunk.iter().any(|&w| w != 0);
    }
    any_set
}

/// Runs of at most this many words (four lines) are ANDed by [`and_runs`]
/// position by position, with an exit test per run.
const SHORT_RUN_WORDS: usize = 4 * WORDS_PER_LINE;

/// Row runs whose start pointers [`and_runs`] and [`count_runs`]'s single
/// key path keep on the stack; longer position lists (more hashes than
/// any real filter uses) take a position-indexed loop for the rest. (Its
/// groups of keys compute run addresses from positions: see
/// [`count_group`].)
const HOISTED_RUNS: usize = 32;

/// The row runs of one query key: start pointers for the first
/// [`HOISTED_RUNS`] positions, computed once per call rather than once per
/// chunk and run.
struct Runs<'a> {
    base: *const u64,
    stride: usize,
    ptrs: [*const u64; HOISTED_RUNS],
    hoisted: usize,
    extra: &'a [u32],
}

impl<'a> Runs<'a> {
    /// No runs of `rows`, `stride` words apart, yet: [`Runs::set`] names
    /// them. Kernels build a `Runs` once and set it in place, never moving
    /// one after `set`: a copy of a table just written pointer by pointer
    /// is read back as vectors, and each such read stalls on store
    /// forwarding (40% of the scoring kernel's time on short runs, measured
    /// in `bench/RESULTS.md`).
    #[inline(always)]
    fn empty(rows: &[u64], stride: usize) -> Self {
        let base = rows.as_ptr();
        Runs { base, stride, ptrs: [base; HOISTED_RUNS], hoisted: 0, extra: &[] }
    }

    /// Makes these the runs at `positions` (not empty, for
    /// [`Runs::and_chunk`]); the caller has checked that each run fits in
    /// the rows.
    #[inline(always)]
    fn set(&mut self, positions: &'a [u32]) {
        let hoisted = positions.len().min(HOISTED_RUNS);
        for (ptr, &p) in self.ptrs.iter_mut().zip(&positions[..hoisted]) {
            *ptr = self.base.wrapping_add(p as usize * self.stride);
        }
        self.hoisted = hoisted;
        self.extra = &positions[hoisted..];
    }

    /// The AND of the 512-bit chunk at word `start` of every run, or zero
    /// as soon as it is known to be zero ([`and_lines`]).
    ///
    /// # Safety
    ///
    /// At least one run; `start + 8` words must lie inside every run; `L`'s
    /// features must be available.
    #[inline(always)]
    unsafe fn and_chunk<L: Line>(&self, start: usize) -> L {
        let runs = &self.ptrs[..self.hoisted];
        // SAFETY: each pointer is the start of a run that holds words
        // `start..start + 8` (this function's contract); `L`'s features
        // are available.
        unsafe {
            let mut acc = and_lines::<L>(runs.len(), |i| runs[i].add(start));
            for &p in self.extra {
                if acc.is_zero() {
                    break;
                }
                acc = acc.and(L::load(self.base.add(p as usize * self.stride + start)));
            }
            acc
        }
    }
}

/// The AND of the lines at `line(0)..line(n)` (`n` at least 1), or zero as
/// soon as it is known to be zero. After the first two lines, lines are
/// combined two at a time ([`Line::and3`], one `vpternlogq` on AVX-512)
/// and the early exit is tested before each pair: on long runs (1 280
/// bytes at N = 10 000) a test and loop step per run cost more than the
/// rare run it spares (measured in `bench/RESULTS.md`).
///
/// # Safety
///
/// `line(i)` must be valid for reading eight words for every `i < n`, and
/// `L`'s features must be available.
#[inline(always)]
unsafe fn and_lines<L: Line>(n: usize, line: impl Fn(usize) -> *const u64) -> L {
    // SAFETY: every line read is one of `line(0)..line(n)` (this
    // function's contract); `L`'s features are available.
    unsafe {
        let mut acc = L::load(line(0));
        if n < 2 {
            return acc;
        }
        // The first two lines unconditionally: in a sparse index most
        // chunks still have a bit after one run and none after two.
        acc = acc.and(L::load(line(1)));
        let mut i = 2;
        while i + 1 < n {
            if acc.is_zero() {
                return acc;
            }
            acc = acc.and3(L::load(line(i)), L::load(line(i + 1)));
            i += 2;
        }
        if i + 1 == n && !acc.is_zero() {
            acc = acc.and(L::load(line(i)));
        }
        acc
    }
}

/// See [`all::and_runs`].
///
/// Walks the output one 512-bit chunk at a time, ANDing that chunk of
/// every run ([`Runs::and_chunk`]), so all `k` runs stream in parallel.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn and_runs<L: Line>(rows: &[u64], stride: usize, positions: &[u32], out: &mut [u64]) -> bool {
    let n = out.len();
    // Runs start at `p * stride`, so every run fits when the last one does:
    // one check instead of one per position.
    if let Some(last) = all::max_position(positions) {
        assert!(all::run_fits(rows.len(), stride, last, n), "row run past the end of the rows");
    }
    if positions.is_empty() {
        return all::and_of_no_rows(out);
    }
    let full = n - n % WORDS_PER_LINE;
    let out_ptr = out.as_mut_ptr();
    // SAFETY: `L`'s features are available (this function's contract).
    let mut any = unsafe { L::zero() };
    let mut start = 0;
    if full <= SHORT_RUN_WORDS {
        // Short runs (a few lines, mostly in cache by now): setting up
        // `Runs` costs more than it saves, and in a sparse index the
        // per-run exit after the second run is what matters.
        let base = rows.as_ptr();
        while start < full {
            // SAFETY: for every position `p`, `p * stride + n <= rows.len()`
            // (asserted above) and `start + 8 <= full <= n`, so each load
            // is in bounds of `rows` and the store of `out`; `L`'s features
            // are available.
            unsafe {
                let mut acc = L::load(base.add(positions[0] as usize * stride + start));
                for &p in &positions[1..] {
                    if acc.is_zero() {
                        break;
                    }
                    acc = acc.and(L::load(base.add(p as usize * stride + start)));
                }
                acc.store(out_ptr.add(start));
                any = any.or(acc);
            }
            start += WORDS_PER_LINE;
        }
    } else {
        let mut runs = Runs::empty(rows, stride);
        runs.set(positions);
        while start < full {
            // SAFETY: every run holds `n` words (asserted above) and
            // `start + 8 <= full <= n`, so the chunk lies inside every run
            // and the store inside `out`; there is at least one run; `L`'s
            // features are available.
            unsafe {
                let acc: L = runs.and_chunk(start);
                acc.store(out_ptr.add(start));
                any = any.or(acc);
            }
            start += WORDS_PER_LINE;
        }
    }
    // SAFETY: `L`'s features are available.
    let mut any_set = !unsafe { any.is_zero() };
    if full < n {
        let at = |p: u32| p as usize * stride;
        let (&first, rest) = positions.split_first().expect("positions is not empty");
        let chunk = &mut out[full..];
        chunk.copy_from_slice(&rows[at(first) + full..at(first) + n]);
        for &p in rest {
            if chunk.iter().all(|&w| w == 0) {
                break;
            }
            for (o, &w) in chunk.iter_mut().zip(&rows[at(p) + full..at(p) + n]) {
                *o &= w;
            }
        }
        any_set |= chunk.iter().any(|&w| w != 0);
    }
    any_set
}

/// Set bits written per non-zero word by [`append_mapped_bits`] without a
/// loop. A query's answer in a full index has about one set bit in every
/// two words, so most non-zero words hold one or two; two unconditional
/// writes beat four by 5-10% (`bench/examples/row_variants.rs`,
/// `bench/RESULTS.md`).
const UNROLLED_BITS: usize = 2;

/// See [`all::append_mapped_bits`]. Built to branch on counts, not on the
/// data: a query's answer has about one set bit in every few words, and a
/// branch per word (or per bit) mispredicts about once per non-zero word,
/// each miss also discarding the out-of-order work that was overlapping
/// the next query's row loads (measured: `bench/RESULTS.md`).
///
/// Per group of up to 64 words: one pass over its lines (`words AND mask`)
/// counts the bits and builds a bitmap of the non-zero words
/// ([`Line::nonzero_lanes`]); then each non-zero word, found through the
/// bitmap, writes the table entries of its lowest [`UNROLLED_BITS`] bits
/// unconditionally into reserved capacity and advances by its real count
/// (a word with more bits finishes in a loop). The table is read straight
/// into the output: no buffer of bit indexes, no second pass. A write past
/// a word's last bit reads the table at the word's first bit (`tzcnt` of
/// zero is 64, taken modulo 64), always in bounds. The reservation may
/// leave up to [`UNROLLED_BITS`] slots of extra capacity.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn append_mapped_bits<L: Line>(words: &[u64], mask: &[u64], table: &[u64], out: &mut Vec<u64>) {
    const GROUP_WORDS: usize = 64;
    all::check_mapped_bits(words, mask, table);
    for (g, (group, group_mask)) in words.chunks(GROUP_WORDS).zip(mask.chunks(GROUP_WORDS)).enumerate() {
        let full = group.len() - group.len() % WORDS_PER_LINE;
        let mut nonzero = 0u64;
        // SAFETY: `L`'s features are available (this function's contract).
        let mut counts = unsafe { L::zero() };
        let mut start = 0;
        while start < full {
            // SAFETY: `start + 8 <= full <= group.len() == group_mask.len()`;
            // `L`'s features are available.
            unsafe {
                let line = L::load(group.as_ptr().add(start)).and(L::load(group_mask.as_ptr().add(start)));
                nonzero |= u64::from(line.nonzero_lanes()) << start;
                counts = counts.add_lanes(line.lane_popcounts());
            }
            start += WORDS_PER_LINE;
        }
        // SAFETY: `L`'s features are available.
        let mut hits = unsafe { counts.sum_lanes() } as usize;
        for j in full..group.len() {
            let w = group[j] & group_mask[j];
            nonzero |= u64::from(w != 0) << j;
            hits += w.count_ones() as usize;
        }
        if hits == 0 {
            continue;
        }
        out.reserve(hits + UNROLLED_BITS);
        let len = out.len();
        let dst = out.spare_capacity_mut().as_mut_ptr().cast::<u64>();
        // The table entries of this group's bits: `check_mapped_bits`
        // guarantees 64 entries for every word of `words`.
        let group_table = &table[g * GROUP_WORDS * 64..][..group.len() * 64];
        let mut written = 0;
        while nonzero != 0 {
            let j = nonzero.trailing_zeros() as usize;
            nonzero &= nonzero - 1;
            // SAFETY: `nonzero` only has bits `j < group.len()`, and
            // `group_mask` has the length of `group`.
            let mut w = unsafe { *group.get_unchecked(j) & *group_mask.get_unchecked(j) };
            let count = w.count_ones() as usize;
            // SAFETY: `j < group.len()` and `group_table` holds 64
            // entries per word of `group`.
            let at = unsafe { group_table.as_ptr().add(j * 64) };
            // SAFETY: `written + count <= hits` (the counts sum to `hits`)
            // and `hits + UNROLLED_BITS` slots were reserved, so every
            // write below, unconditional or in the loop, is inside the
            // spare capacity; slots past `written + count` are overwritten
            // by the next word or left past the final length. Every table
            // read is at `at + (0..64)`, inside the word's 64 entries.
            unsafe {
                for u in 0..UNROLLED_BITS {
                    dst.add(written + u).write(*at.add(w.trailing_zeros() as usize % 64));
                    w &= w.wrapping_sub(1);
                }
                let mut extra = written + UNROLLED_BITS;
                while w != 0 {
                    dst.add(extra).write(*at.add(w.trailing_zeros() as usize));
                    w &= w - 1;
                    extra += 1;
                }
            }
            written += count;
        }
        // SAFETY: the first `written` (= `hits`) spare slots were written
        // above, each word's entries in order at its own range.
        unsafe { out.set_len(len + written) };
    }
}

/// See [`all::or_into`]. The newly set bits of each line (`src & !dst`) are
/// counted through the same Harley-Seal tree as the popcounts, fed by a
/// closure that also stores `dst | src`.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn or_into<L: Line>(dst: &mut [u64], src: &[u64]) -> u64 {
    assert_eq!(dst.len(), src.len(), "or_into: length mismatch");
    let lines = dst.len() / WORDS_PER_LINE;
    let source = OrIntoSource { dst: dst.as_mut_ptr(), src: src.as_ptr() };
    // SAFETY: `L`'s features are available and both slices hold `lines`
    // lines.
    let vector = unsafe { popcount_lines::<L>(lines, source) };
    let tail = lines * WORDS_PER_LINE;
    vector + all::or_into(&mut dst[tail..], &src[tail..])
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

/// See [`all::count_runs`]. One key ([`count_one_key`]) adds its AND to the
/// planes by ripple carry (one load, two bit operations and a store per
/// plane, until the carry line is zero). More keys are taken
/// [`crate::score_group_keys`] at a time (3 of 7 runs each; at most
/// [`crate::SCORE_GROUP_MAX`]): for each live full line, each key's runs are
/// ANDed in registers with the early exit of `and_runs`, the ANDs summed in
/// registers with carry-save adders (Harley-Seal: a full adder per pair of
/// keys, two `vpternlogq` on AVX-512), and that sum (in as many digits as
/// the group can reach: two for 3 keys, four for 8) added to the planes in
/// one pass of full adders: a dense sum, whose carry never dies
/// within a line, then costs one pass over the planes per group instead of
/// one per key. Each group's walk prefetches the next group's runs, a
/// chunk of each per live chunk it scores; the last group's walk, the
/// caller's `ahead`. The last, partial chunk goes through the scalar
/// reference.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
#[expect(clippy::too_many_arguments, reason = "the kernel's signature, shared by every backend")]
pub(crate) unsafe fn count_runs<L: Line>(
    rows: &[u64],
    stride: usize,
    positions: &[u32],
    keys: usize,
    width: usize,
    live: &[u64],
    planes: &mut [u64],
    ahead: &[u32],
) -> bool {
    let last = all::max_position(positions);
    all::check_count_args(rows.len(), stride, (positions.len(), last), keys, width, live, planes.len());
    if width == 0 {
        return false;
    }
    let into = LookAhead::detect();
    if keys == 1 {
        // SAFETY: forwarded from this function's contract; the arguments
        // are checked.
        return unsafe { count_one_key::<L>(rows, stride, positions, width, live, planes, (ahead, into)) };
    }
    let per_key = positions.len() / keys;
    let n_planes = planes.len() / width;
    let full = width - width % WORDS_PER_LINE;
    let planes_ptr = planes.as_mut_ptr();
    let mut any = false;
    let mut first = 0;
    let group_keys = crate::score_group_keys(per_key);
    while first < keys {
        let group = (keys - first).min(group_keys);
        // Each group's walk prefetches the next group's runs; the last
        // group's, the caller's look-ahead.
        let next = (first + group)..(first + group + group_keys).min(keys);
        let ahead = if next.is_empty() { ahead } else { &positions[next.start * per_key..next.end * per_key] };
        // SAFETY: every run fits in `rows` (checked above); the planes
        // pointer covers `n_planes * width` words; `L`'s features are
        // available (this function's contract). `ahead` is only prefetched.
        any |= unsafe {
            count_group::<L>(
                (&positions[first * per_key..(first + group) * per_key], per_key, group),
                (full, width, n_planes),
                live,
                planes_ptr,
                (rows, stride, ahead, into),
            )
        };
        first += group;
    }
    if full < width {
        let chunk = full / WORDS_PER_LINE;
        if (live[chunk / 64] >> (chunk % 64)) & 1 == 1 {
            all::prefetch_chunk(rows.as_ptr(), stride, ahead, full, into);
            for key in 0..keys {
                let at = key * per_key;
                any |= all::count_chunk(rows, stride, &positions[at..at + per_key], width, full..width, planes);
            }
        }
    }
    any
}

/// [`count_runs`] of one key (checked arguments, `width > 0`): its AND
/// rippled into the planes chunk by chunk.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
unsafe fn count_one_key<L: Line>(
    rows: &[u64],
    stride: usize,
    positions: &[u32],
    width: usize,
    live: &[u64],
    planes: &mut [u64],
    (ahead, into): (&[u32], LookAhead),
) -> bool {
    let n_planes = planes.len() / width;
    let full = width - width % WORDS_PER_LINE;
    let mut runs = Runs::empty(rows, stride);
    if !positions.is_empty() {
        runs.set(positions);
    }
    let base = rows.as_ptr();
    let planes_ptr = planes.as_mut_ptr();
    let mut hit = false;
    let mut start = 0;
    while start < full {
        let chunk = start / WORDS_PER_LINE;
        if (live[chunk / 64] >> (chunk % 64)) & 1 == 0 {
            start += WORDS_PER_LINE;
            continue;
        }
        all::prefetch_chunk(base, stride, ahead, start, into);
        // SAFETY: for every position `p`, `p * stride + width <= rows.len()`
        // (checked by the caller) and `start + 8 <= full <= width`, so each
        // row load is in bounds; plane `j` spans words
        // `j * width..(j + 1) * width` of `planes` for `j < n_planes`; `L`'s
        // features are available (this function's contract).
        unsafe {
            let acc = if positions.is_empty() { L::load(ONES.as_ptr()) } else { runs.and_chunk(start) };
            if !acc.is_zero() {
                hit = true;
                ripple::<L>(planes_ptr, (width, start), 0..n_planes, acc);
            }
        }
        start += WORDS_PER_LINE;
    }
    if full < width {
        let chunk = full / WORDS_PER_LINE;
        if (live[chunk / 64] >> (chunk % 64)) & 1 == 1 {
            all::prefetch_chunk(base, stride, ahead, full, into);
            hit |= all::count_chunk(rows, stride, positions, width, full..width, planes);
        }
    }
    hit
}

/// [`count_runs`] for one group of `keys` keys (1 to
/// [`crate::SCORE_GROUP_MAX`]), `k` positions each in `positions` (keys of
/// no positions AND to all ones), on the live full chunks below `full`;
/// returns whether any key's AND had a set bit. The group's sum is kept in
/// as many digits as it can need ([`count_group_digits`]: 2 for up to 3
/// keys, 3 for up to 7, 4 for 8), so a group of 3 (7 runs a key) adds two
/// digits to the planes with full adders, not four.
///
/// # Safety
///
/// As [`count_group_digits`].
#[inline(always)]
unsafe fn count_group<L: Line>(
    group: (&[u32], usize, usize),
    shape: (usize, usize, usize),
    live: &[u64],
    planes: *mut u64,
    source: (&[u64], usize, &[u32], LookAhead),
) -> bool {
    // SAFETY: forwarded from this function's contract (`count_runs` calls
    // it with groups of 1 to `SCORE_GROUP_MAX` keys); each instance's sum
    // of `keys` ones fits its digits (`keys < 2^D`).
    unsafe {
        match group.2 {
            0..=3 => count_group_digits::<L, 2>(group, shape, live, planes, source),
            4..=7 => count_group_digits::<L, 3>(group, shape, live, planes, source),
            _ => count_group_digits::<L, 4>(group, shape, live, planes, source),
        }
    }
}

/// [`count_group`] with the group's sum in `D` digits (`keys < 2^D`, at
/// most [`crate::SCORE_GROUP_MAX`]). At each live chunk it first
/// prefetches that chunk of the runs at `ahead` (positions in `rows`,
/// `stride` words apart; addresses only, never read).
///
/// Each run's address is computed from its position at every chunk rather
/// than read from a table of pointers built per group: at `N = 1 000` (two
/// chunks a run) the table's stores, and the copies the compiler made of
/// it, stalled on store forwarding; without them the kernel takes a third
/// less time, and on long runs the multiply is hidden under the loads
/// (`bench/examples/kprobe.rs`, `bench/RESULTS.md`).
///
/// # Safety
///
/// `1 <= keys < 2^D`; `positions` holds `keys * k` positions (`k` per key);
/// every run holds at least `full` words; `planes` is valid for reading
/// and writing `n_planes * width` words, `full <= width`; `live` has a bit
/// for every chunk below `full`; `L`'s features are available.
#[inline(always)]
unsafe fn count_group_digits<L: Line, const D: usize>(
    (positions, k, keys): (&[u32], usize, usize),
    (full, width, n_planes): (usize, usize, usize),
    live: &[u64],
    planes: *mut u64,
    (rows, stride, ahead, into): (&[u64], usize, &[u32], LookAhead),
) -> bool {
    debug_assert_eq!(positions.len(), keys * k);
    debug_assert!(keys >= 1 && keys < 1 << D);
    let base = rows.as_ptr();
    // SAFETY: as in the function's contract; every load and store below is
    // of a chunk `start..start + 8` with `start + 8 <= full <= width`, and
    // `key_and` is called with keys `g, g + 1 < keys`.
    unsafe {
        let zero = L::zero();
        let mut any = zero;
        let mut start = 0;
        while start < full {
            let chunk = start / WORDS_PER_LINE;
            if (live[chunk / 64] >> (chunk % 64)) & 1 == 0 {
                start += WORDS_PER_LINE;
                continue;
            }
            all::prefetch_chunk(base, stride, ahead, start, into);
            // The group's sum, digit `i` of weight `2^i`, by carry-save
            // adders: the first pair with a half adder into empty digits,
            // each later pair into digit 0 with a full adder (a lone last
            // key with a half adder), whose carry ripples up the digits in
            // registers.
            let mut d = [zero; D];
            let x = key_and::<L>(base, stride, (positions, k, 0), start);
            let y = if keys > 1 { key_and::<L>(base, stride, (positions, k, 1), start) } else { zero };
            let mut seen = x.or(y);
            d[0] = x.xor(y);
            d[1] = x.and(y);
            let mut g = 2;
            while g < keys {
                let x = key_and::<L>(base, stride, (positions, k, g), start);
                let mut carry = if g + 1 < keys {
                    let y = key_and::<L>(base, stride, (positions, k, g + 1), start);
                    seen = seen.or(x).or(y);
                    let carry = d[0].maj(x, y);
                    d[0] = d[0].xor3(x, y);
                    carry
                } else {
                    seen = seen.or(x);
                    let carry = d[0].and(x);
                    d[0] = d[0].xor(x);
                    carry
                };
                for digit in &mut d[1..D - 1] {
                    let next = digit.and(carry);
                    *digit = digit.xor(carry);
                    carry = next;
                }
                d[D - 1] = d[D - 1].xor(carry);
                g += 2;
            }
            if !seen.is_zero() {
                any = any.or(seen);
                // Add the digits to the planes (plane 0 with a half adder,
                // the others with full adders), then the carry alone until
                // it dies (digits beyond the planes drop out: counters are
                // modulo 2^n_planes, as the reference's ripple).
                let mut carry = zero;
                for (j, &digit) in d.iter().enumerate().take(n_planes) {
                    let at = planes.add(j * width + start);
                    let plane = L::load(at);
                    if j == 0 {
                        plane.xor(digit).store(at);
                        carry = plane.and(digit);
                    } else {
                        plane.xor3(digit, carry).store(at);
                        carry = plane.maj(digit, carry);
                    }
                }
                ripple::<L>(planes, (width, start), D..n_planes, carry);
            }
            start += WORDS_PER_LINE;
        }
        !any.is_zero()
    }
}

/// Adds the line `carry` at word `start` of the planes `from.start`,
/// `from.start + 1`, ... below `from.end` (each `width` words after the
/// one before, from `planes`) by ripple carry, until the carry is zero.
/// The carry dies after a plane or two, but where varies chunk by chunk,
/// so a test per plane mispredicts often; testing after every second
/// plane keeps the branch mostly not-taken.
///
/// # Safety
///
/// Words `start..start + 8` of every plane `j` in `from` (at
/// `planes + j * width`) are valid for reading and writing; `L`'s
/// features are available.
#[inline(always)]
unsafe fn ripple<L: Line>(
    planes: *mut u64,
    (width, start): (usize, usize),
    from: core::ops::Range<usize>,
    mut carry: L,
) {
    // SAFETY: every line read and written is word `start` of a plane in
    // `from` (this function's contract).
    unsafe {
        let mut j = from.start;
        while j < from.end {
            let at = planes.add(j * width + start);
            let plane = L::load(at);
            plane.xor(carry).store(at);
            carry = carry.and(plane);
            j += 1;
            if (j - from.start).is_multiple_of(2) && carry.is_zero() {
                break;
            }
        }
    }
}

/// The AND of the runs of key `key` (`k` positions each in `positions`;
/// all ones when `k` is 0) at word `start` of rows at `base`, `stride`
/// words apart ([`and_lines`]).
///
/// # Safety
///
/// `positions` holds at least `(key + 1) * k` positions; each run holds
/// words `start..start + 8`; `L`'s features are available.
#[inline(always)]
unsafe fn key_and<L: Line>(
    base: *const u64,
    stride: usize,
    (positions, k, key): (&[u32], usize, usize),
    start: usize,
) -> L {
    // SAFETY: positions `key * k..(key + 1) * k` exist (this function's
    // contract), so `runs` has `k` entries and `i < k`; each names a run
    // holding words `start..start + 8`; `L`'s features are available.
    unsafe {
        if k == 0 {
            L::load(ONES.as_ptr())
        } else {
            let runs = positions.get_unchecked(key * k..(key + 1) * k);
            and_lines::<L>(k, |i| base.add(*runs.get_unchecked(i) as usize * stride + start))
        }
    }
}

/// A line of ones, the AND of no rows.
static ONES: [u64; WORDS_PER_LINE] = [!0; WORDS_PER_LINE];

/// See [`all::count_at_least`]: the same top-down comparison, one line of
/// every plane at a time.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn count_at_least<L: Line>(planes: &[u64], threshold: u32, out: &mut [u64]) -> bool {
    let Some(n_planes) = all::at_least_planes(planes.len(), threshold, out) else {
        return false;
    };
    let width = out.len();
    let full = width - width % WORDS_PER_LINE;
    let (planes_ptr, out_ptr) = (planes.as_ptr(), out.as_mut_ptr());
    // SAFETY: `L`'s features are available (this function's contract).
    let (mut any, ones) = unsafe { (L::zero(), L::load(ONES.as_ptr())) };
    let mut start = 0;
    while start < full {
        // SAFETY: `start + 8 <= full <= width`, so line `start` of every
        // plane `j < n_planes` and of `out` is in bounds; `L`'s features
        // are available.
        unsafe {
            let (mut greater, mut equal) = (L::zero(), ones);
            for j in (0..n_planes).rev() {
                let p = L::load(planes_ptr.add(j * width + start));
                if j < 32 && (threshold >> j) & 1 == 1 {
                    equal = equal.and(p);
                } else {
                    greater = greater.or(equal.and(p));
                    equal = equal.and_not(p);
                }
            }
            let result = greater.or(equal);
            result.store(out_ptr.add(start));
            any = any.or(result);
        }
        start += WORDS_PER_LINE;
    }
    // SAFETY: `L`'s features are available.
    let mut any_set = !unsafe { any.is_zero() };
    for (i, o) in out.iter_mut().enumerate().skip(full) {
        *o = all::at_least_word(planes, width, i, threshold);
        any_set |= *o != 0;
    }
    any_set
}

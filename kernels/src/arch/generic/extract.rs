//! Extraction of set bits: [`append_mapped_bits`] appends the table entry
//! (a column id) of every set bit of `words AND mask`, written without a
//! branch per bit. Scalar reference: `arch::all::append_mapped_bits`.

use super::and::{Runs, SHORT_RUN_WORDS};
use super::line::Line;
use crate::WORDS_PER_LINE;
use crate::arch::all;

/// Set bits written per non-zero word by [`append_mapped_bits`] without a
/// loop. A query's answer in a full index has about one set bit in every
/// two words, so most non-zero words hold one or two; two unconditional
/// writes were faster than four (`bench/examples/row_variants.rs`;
/// `bench/RESULTS.md`, section "Kernels").
const UNROLLED_BITS: usize = 2;

/// Writes the table entry `at[b]` of every set bit `b` of `w`, lowest
/// first, to `dst[0..w.count_ones()]`: the first [`UNROLLED_BITS`] writes
/// unconditionally (a write past the word's last set bit reads `at[0]`:
/// `tzcnt` of zero is 64, taken modulo 64), the rest in a loop. The
/// bit-writing step of [`append_mapped_bits`] and [`and_runs_mapped`].
///
/// # Safety
///
/// `dst` must be valid for writes of `max(w.count_ones(), UNROLLED_BITS)`
/// words and `at` for reads of 64.
#[inline(always)]
unsafe fn write_mapped_word(dst: *mut u64, at: *const u64, mut w: u64) {
    // SAFETY: every write is at `dst + (0..max(count, UNROLLED_BITS))` and
    // every read at `at + (0..64)` (`trailing_zeros` of a non-zero word is
    // below 64), as this function's contract allows.
    unsafe {
        for u in 0..UNROLLED_BITS {
            dst.add(u).write(*at.add(w.trailing_zeros() as usize % 64));
            w &= w.wrapping_sub(1);
        }
        let mut extra = UNROLLED_BITS;
        while w != 0 {
            dst.add(extra).write(*at.add(w.trailing_zeros() as usize));
            w &= w - 1;
            extra += 1;
        }
    }
}

/// See [`all::append_mapped_bits`]. Built to branch on counts, not on the
/// data: a query's answer has about one set bit in every few words, and a
/// branch per word (or per bit) mispredicts about once per non-zero word,
/// each miss also discarding the out-of-order work that was overlapping
/// the next query's row loads (`bench/RESULTS.md`, section "Kernels").
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
                counts = line.accumulate_popcount(counts);
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
            let w = unsafe { *group.get_unchecked(j) & *group_mask.get_unchecked(j) };
            let count = w.count_ones() as usize;
            // SAFETY: `j < group.len()` and `group_table` holds 64
            // entries per word of `group`.
            let at = unsafe { group_table.as_ptr().add(j * 64) };
            // SAFETY: `written + count <= hits` (the counts sum to `hits`)
            // and `hits + UNROLLED_BITS` slots were reserved, so every
            // write, unconditional or in the loop, is inside the spare
            // capacity; slots past `written + count` are overwritten by the
            // next word or left past the final length. Every table read is
            // at `at + (0..64)`, inside the word's 64 entries.
            unsafe { write_mapped_word(dst.add(written), at, w) };
            written += count;
        }
        // SAFETY: the first `written` (= `hits`) spare slots were written
        // above, each word's entries in order at its own range.
        unsafe { out.set_len(len + written) };
    }
}

/// See [`all::and_runs_mapped`]: [`and_runs`](super::and_runs) and
/// [`append_mapped_bits`] fused for one key. Each 512-bit chunk is ANDed
/// over the runs (short runs with no early exit: their lines are all
/// requested before the call), masked, and, when a lane is left, its ids
/// are written at once from the register's lanes: no output buffer of the
/// AND, no counting pass over the key's words, no per-group bookkeeping. A
/// single key's query is mostly this fixed cost (a key of `full` N = 1 000
/// reads 2 chunks and names about 9 ids), which the batched path spreads
/// over many keys.
///
/// # Safety
///
/// `L`'s CPU features must be available.
#[inline(always)]
pub(crate) unsafe fn and_runs_mapped<L: Line>(
    rows: &[u64],
    stride: usize,
    positions: &[u32],
    mask: &[u64],
    table: &[u64],
    out: &mut Vec<u64>,
) {
    let n = mask.len();
    if positions.is_empty() || u32::try_from(stride).is_err() {
        // The AND of no runs (all ones), or rows over 2^32 words apart:
        // not queries the engine makes.
        return all::and_runs_mapped(rows, stride, positions, mask, table, out);
    }
    assert!(table.len() / 64 >= n, "and_runs_mapped: table shorter than 64 entries per mask word");
    // A run fits when `p * stride <= room`: a position and the stride are
    // under 2^32, so the product cannot overflow 64 bits.
    let Some(room) = rows.len().checked_sub(n) else {
        panic!("row run past the end of the rows");
    };
    let fits = |p: u32| u64::from(p) * stride as u64 <= room as u64;
    let full = n - n % WORDS_PER_LINE;
    if (WORDS_PER_LINE..=SHORT_RUN_WORDS).contains(&full) {
        // SAFETY: `short_runs_mapped` checks every position with `fits`
        // before its run's first load, and `fits(p)` is `p * stride + n <=
        // rows.len()`, so every run's first `full <= n` words are in
        // bounds of `rows`; `mask` has `n` words and `table` 64 entries
        // for each (asserted above); there is at least one position; `L`'s
        // features are available.
        unsafe {
            let (base, mask, table) = (rows.as_ptr(), mask.as_ptr(), table.as_ptr());
            match full / WORDS_PER_LINE {
                1 => short_runs_mapped::<L, 1>(base, stride, positions, fits, mask, table, out),
                2 => short_runs_mapped::<L, 2>(base, stride, positions, fits, mask, table, out),
                3 => short_runs_mapped::<L, 3>(base, stride, positions, fits, mask, table, out),
                _ => short_runs_mapped::<L, 4>(base, stride, positions, fits, mask, table, out),
            }
        }
    } else {
        // Every run checked before any is read: one comparison a run (a
        // division of the room by the stride first cost more, its latency).
        assert!(positions.iter().all(|&p| fits(p)), "row run past the end of the rows");
    }
    if full > SHORT_RUN_WORDS {
        let mut runs = Runs::empty(rows, stride);
        runs.set(positions);
        let mut start = 0;
        while start < full {
            // SAFETY: every run holds `n` words (asserted above) and
            // `start + 8 <= full <= n`, so the chunk lies inside every run
            // and inside `mask`; there is at least one run; `L`'s features
            // are available; `table` holds 64 entries per word of `mask`.
            unsafe {
                let acc: L = runs.and_chunk(start);
                L::append_mapped_lines(
                    [acc.and(L::load(mask.as_ptr().add(start)))],
                    table.as_ptr().add(start * 64),
                    out,
                );
            }
            start += WORDS_PER_LINE;
        }
    }
    for j in full..n {
        let mut w = mask[j];
        for &p in positions {
            w &= rows[p as usize * stride + j];
        }
        while w != 0 {
            out.push(table[j * 64 + w.trailing_zeros() as usize]);
            w &= w - 1;
        }
    }
}

/// The lines of short runs (`G` lines each, at most four) ANDed over the
/// runs at `positions` in one pass, and their ids appended: each position
/// is read and multiplied once, and every line of every run is loaded in
/// the pass, with no early exit (so one key's loads are all issued
/// together, with no branch on what they hold).
///
/// # Safety
///
/// `positions` is not empty; for each position `p` for which `fits(p)`,
/// `base + p * stride` is valid for reading `8 * G` words (a run is read
/// only after `fits` accepts it; a position it rejects panics); `mask` is
/// valid for reading `8 * G` words and `table` for `512 * G`; `L`'s
/// features are available.
#[inline(always)]
unsafe fn short_runs_mapped<L: Line, const G: usize>(
    base: *const u64,
    stride: usize,
    positions: &[u32],
    fits: impl Fn(u32) -> bool,
    mask: *const u64,
    table: *const u64,
    out: &mut Vec<u64>,
) {
    // SAFETY: every load is at `run(p) + 8 * g` for a position `p` that
    // `fits` accepted and `g < G`, or at `mask + 8 * g`, and every table block at
    // `table + 512 * g`: inside what this function's contract makes valid;
    // `L`'s features are available.
    unsafe {
        let run = |p: u32| {
            assert!(fits(p), "row run past the end of the rows");
            base.add(p as usize * stride)
        };
        let first = run(positions[0]);
        let mut acc: [L; G] = core::array::from_fn(|g| L::load(first.add(g * WORDS_PER_LINE)));
        // No early exit: every run is read, two at a time. A test for an
        // all-zero AND saved no memory (a single key's short runs are
        // requested whole before this call, or cached), and without it
        // both distinct and repeated keys ran faster with AVX-512 (AVX2
        // unchanged).
        let mut pairs = positions[1..].chunks_exact(2);
        for pair in pairs.by_ref() {
            let (a, b) = (run(pair[0]), run(pair[1]));
            for (g, acc) in acc.iter_mut().enumerate() {
                *acc = acc.and3(L::load(a.add(g * WORDS_PER_LINE)), L::load(b.add(g * WORDS_PER_LINE)));
            }
        }
        if let [p] = pairs.remainder() {
            let a = run(*p);
            for (g, acc) in acc.iter_mut().enumerate() {
                *acc = acc.and(L::load(a.add(g * WORDS_PER_LINE)));
            }
        }
        let masked: [L; G] = core::array::from_fn(|g| acc[g].and(L::load(mask.add(g * WORDS_PER_LINE))));
        L::append_mapped_lines(masked, table, out);
    }
}

/// Appends `table[512 * g + 64 * j + b]` for every set bit `b` of lane `j`
/// of line `g` of `lines`, in order, as [`append_mapped_bits`] writes a
/// group: one walk over the non-zero words of all the lines (a walk a line
/// mispredicted its exit once a line more on distinct keys).
///
/// # Safety
///
/// `table` must be valid for reading `512 * G` entries; `L`'s features
/// must be available.
#[inline(always)]
pub(crate) unsafe fn append_lines<L: Line, const G: usize>(lines: [L; G], table: *const u64, out: &mut Vec<u64>) {
    const { assert!(G <= 4, "a short run has at most four lines") };
    let mut nonzero = 0u32;
    let mut bits = 0;
    let mut stored = [[0u64; WORDS_PER_LINE]; G];
    for (g, (line, words)) in lines.into_iter().zip(&mut stored).enumerate() {
        // SAFETY: `words` holds the eight words of a line; `L`'s features
        // are available (this function's contract).
        unsafe {
            nonzero |= u32::from(line.nonzero_lanes()) << (g * WORDS_PER_LINE);
            line.store(words.as_mut_ptr());
            // The slots to reserve: with a native population count all
            // the lines', in a few instructions; otherwise each word's as
            // it is reached (a vector count without the instruction cost
            // more than a check per non-zero word, of which a single
            // key's line has few).
            if L::NATIVE_POPCOUNT {
                bits += line.lane_popcounts().sum_lanes() as usize;
            }
        }
    }
    if nonzero == 0 {
        return;
    }
    if L::NATIVE_POPCOUNT {
        out.reserve(bits + UNROLLED_BITS);
    }
    let words = stored.as_flattened();
    let mut len = out.len();
    while nonzero != 0 {
        let j = nonzero.trailing_zeros() as usize;
        nonzero &= nonzero - 1;
        let w = words[j];
        let count = w.count_ones() as usize;
        if !L::NATIVE_POPCOUNT {
            out.reserve(count + UNROLLED_BITS);
        }
        let dst = out.as_mut_ptr();
        // SAFETY: `j < 8 * G`, and `table` holds 64 entries for each of
        // the lines' words (this function's contract); every write is
        // at `len + (0..count + UNROLLED_BITS)`, inside the capacity
        // reserved above (for the lines, or for this word), as in
        // `append_mapped_bits`; every table read is at `at + (0..64)`.
        unsafe { write_mapped_word(dst.add(len), table.add(j * 64), w) };
        len += count;
        // SAFETY: the slots up to `len` were written above.
        unsafe { out.set_len(len) };
    }
}

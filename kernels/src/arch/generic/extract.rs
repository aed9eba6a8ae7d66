//! Extraction of set bits: [`append_mapped_bits`] appends the table entry
//! (a column id) of every set bit of `words AND mask`, written without a
//! branch per bit. Scalar reference: `arch::all::append_mapped_bits`.

use super::line::Line;
use crate::WORDS_PER_LINE;
use crate::arch::all;

/// Set bits written per non-zero word by [`append_mapped_bits`] without a
/// loop. A query's answer in a full index has about one set bit in every
/// two words, so most non-zero words hold one or two; two unconditional
/// writes were faster than four (`bench/examples/row_variants.rs`;
/// `bench/RESULTS.md`, section "Kernels").
const UNROLLED_BITS: usize = 2;

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

//! OR of one row into another, counting the bits it sets: [`or_into`].
//! The count goes through the popcount loop of `popcount`
//! ([`popcount_lines`]), fed by a source that stores `dst | src` as it
//! yields each line's new bits. Scalar reference: `arch::all::or_into`.

use super::line::Line;
use super::popcount::{LineSource, popcount_lines};
use crate::WORDS_PER_LINE;
use crate::arch::all;

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

/// See [`all::or_into`]. The newly set bits of each line (`src & !dst`) are
/// counted through the same loop as the popcounts ([`popcount_lines`]),
/// fed by an [`OrIntoSource`], which also stores `dst | src`.
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

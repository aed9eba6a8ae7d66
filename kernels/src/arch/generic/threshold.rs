//! The threshold of bit-sliced counters: [`count_at_least`] sets the bit
//! of every column whose counter (in the planes that `count` adds to) is at
//! least a threshold, in one top-down pass over the planes. Scalar
//! reference: `arch::all::count_at_least`.

use super::line::{Line, ONES};
use crate::WORDS_PER_LINE;
use crate::arch::all;

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

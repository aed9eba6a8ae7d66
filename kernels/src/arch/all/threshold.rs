//! The threshold of bit-sliced counters: [`count_at_least`] sets the bit
//! of every column whose counter is at least a threshold.

/// Compares bit-sliced counters with a threshold: sets bit `c` of `out`
/// exactly when column `c`'s counter is at least `threshold`, and returns
/// whether any bit of `out` is set.
///
/// The counters are the planes of [`count_runs`](super::count_runs), `out.len()` words per
/// plane (`planes.len() / out.len()` planes). The comparison runs from the
/// top plane down with a "greater" and an "equal so far" mask, so it costs
/// one pass over the planes whatever the threshold. A threshold of 0 sets
/// every bit; a threshold of `2^planes` or more sets none.
///
/// # Panics
///
/// Panics if `planes.len()` is not a non-zero multiple of `out.len()` (for
/// a non-empty `out`).
pub fn count_at_least(planes: &[u64], threshold: u32, out: &mut [u64]) -> bool {
    if at_least_planes(planes.len(), threshold, out).is_none() {
        return false;
    }
    let width = out.len();
    let mut any = 0;
    for (i, o) in out.iter_mut().enumerate() {
        *o = at_least_word(planes, width, i, threshold);
        any |= *o;
    }
    any != 0
}

/// The argument check and the trivial answers of every backend's
/// [`count_at_least`]: `None` when the answer is known without reading the
/// planes (`out` is empty, or `threshold` needs more planes than there are:
/// `out` is then cleared), otherwise the number of planes.
///
/// # Panics
///
/// Panics if `planes_len` is not a non-zero multiple of `out.len()` (for a
/// non-empty `out`).
#[inline]
pub(crate) fn at_least_planes(planes_len: usize, threshold: u32, out: &mut [u64]) -> Option<usize> {
    let width = out.len();
    if width == 0 {
        return None;
    }
    assert!(
        planes_len >= width && planes_len.is_multiple_of(width),
        "count_at_least: planes are not whole planes of out.len() words"
    );
    let n_planes = planes_len / width;
    if n_planes < 32 && threshold >> n_planes != 0 {
        out.fill(0);
        return None;
    }
    Some(n_planes)
}

/// Word `i` of [`count_at_least`]'s answer (the threshold is known to fit
/// in the planes, or the planes number 32 or more).
#[inline]
pub(crate) fn at_least_word(planes: &[u64], width: usize, i: usize, threshold: u32) -> u64 {
    let (mut greater, mut equal) = (0u64, !0u64);
    for j in (0..planes.len() / width).rev() {
        let p = planes[j * width + i];
        if j < 32 && (threshold >> j) & 1 == 1 {
            equal &= p;
        } else {
            greater |= equal & p;
            equal &= !p;
        }
    }
    greater | equal
}

//! Scoring: the AND of each key's row runs added to bit-sliced counters,
//! [`count_runs`]. One key ripples its AND into the counter planes
//! ([`ripple`]); a group of keys is first summed in registers with
//! carry-save adders ([`count_group_digits`]), then added to the planes in
//! one pass. Each walk prefetches the runs that the next group (or the
//! next call) reads. Scalar reference: `arch::all::count_runs`; the
//! comparison of the counters with a threshold is in `threshold`.

use super::and::{Runs, and_lines};
use super::line::{Line, ONES};
use crate::arch::all;
use crate::{LookAhead, WORDS_PER_LINE};

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
    into: LookAhead,
) -> bool {
    let last = all::max_position(positions);
    all::check_count_args(rows.len(), stride, (positions.len(), last), keys, width, live, planes.len());
    if width == 0 {
        return false;
    }
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
/// it, stalled on store forwarding, which cost more than the multiplies
/// that replace them; on long runs the multiply is hidden under the loads
/// (`bench/examples/kprobe.rs`; `bench/RESULTS.md`, section "Scoring").
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

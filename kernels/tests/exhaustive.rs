//! Every SIMD backend, called directly (not through `Kernels::detect`),
//! against the scalar reference of record on every length from 0 to
//! `MAX_WORDS` words and every start offset inside a 64-byte line, with
//! guard words on both sides of every slice.
//!
//! Backends the CPU cannot run print "skipped" and pass, unless
//! `BLOOMSLICE_REQUIRE_BACKENDS` names them (then they fail).

#[macro_use]
mod common;

use bloomslice_kernels::arch::all;
use bloomslice_kernels::{Kernels, LookAhead};
use common::{Arena, Pattern, Rng};

/// Longest input tried, in words.
const MAX_WORDS: usize = 300;
/// Start offsets tried, in words from a 64-byte boundary.
const OFFSETS: usize = 8;
/// Most rows given to `and_rows`.
const MAX_ROWS: usize = 8;

/// Row sets for `and_rows`, each of `rows` rows of `MAX_WORDS + 2` words.
fn row_sets(rows: usize, rng: &mut Rng) -> Vec<Vec<Vec<u64>>> {
    let n = MAX_WORDS + 2;
    let dense = |rng: &mut Rng| rng.next_u64() | rng.next_u64() | rng.next_u64();
    let mut sets = Vec::new();
    // Dense rows where chunk `c` is killed by row `die(c)`, or by none when
    // `die(c) == rows`: the early exit fires after every possible row.
    let die = |c: usize| (c * 5 + 3) % (rows + 1);
    sets.push((0..rows).map(|r| (0..n).map(|i| if die(i / 8) == r { 0 } else { dense(rng) }).collect()).collect());
    // Same, but the killing row leaves a single bit alive in some chunks.
    sets.push(
        (0..rows)
            .map(|r| {
                (0..n)
                    .map(|i| match (die(i / 8) == r, i % 8 == (i / 8) % 8) {
                        (true, true) => !0,
                        (true, false) => 0,
                        (false, _) => !0,
                    })
                    .collect()
            })
            .collect(),
    );
    for pattern in Pattern::ALL {
        sets.push((0..rows).map(|_| pattern.words(n, rng)).collect());
    }
    // Ones everywhere but the first row empty: every chunk dies at once.
    sets.push((0..rows).map(|r| if r == 0 { vec![0; n] } else { vec![!0; n] }).collect());
    sets
}

/// `and_rows` for every row count, length, offset and row set.
fn check_and_rows(k: &Kernels) {
    let mut rng = Rng::new(1);
    for rows in 0..=MAX_ROWS {
        for set in row_sets(rows, &mut rng) {
            for offset in 0..OFFSETS {
                // Rows start at different offsets from each other and the
                // output, and some are longer than the output.
                let arenas: Vec<Arena> =
                    set.iter().enumerate().map(|(r, row)| Arena::new(row, (offset + 3 * r) % OFFSETS)).collect();
                let garbage = vec![0x5a5a_5a5a_5a5a_5a5a; MAX_WORDS];
                let mut out = Arena::new(&garbage, offset);
                let mut expected = garbage.clone();
                for len in 0..=MAX_WORDS {
                    let inputs: Vec<&[u64]> = arenas.iter().enumerate().map(|(r, a)| a.prefix(len + r % 3)).collect();
                    let got_any = k.and_rows(&inputs, &mut out.words_mut()[..len]);
                    let want_any = all::and_rows(&inputs, &mut expected[..len]);
                    let case = format_args!("and_rows rows={rows} len={len} offset={offset}");
                    assert_same_output(k, (got_any, &out), (want_any, &expected[..len]), case);
                }
            }
        }
    }
}

/// Asserts that a backend's answer (its return value and the first
/// `want.1.len()` words of `out`) is the reference's, and that it wrote
/// nothing outside `out`'s slice.
#[track_caller]
fn assert_same_output(k: &Kernels, got: (bool, &Arena), want: (bool, &[u64]), case: std::fmt::Arguments<'_>) {
    let (got_any, out) = got;
    assert_eq!((got_any, &out.words()[..want.1.len()]), want, "{} {case}", k.backend());
    out.check_guards();
}

/// `and_runs` against the scalar `and_runs` and against `and_rows` on the
/// same runs as slices, for every row count, length (the stride is the
/// length plus a little), offset and row set.
fn check_and_runs(k: &Kernels) {
    for_each_run_set(&mut Rng::new(3), |rows, positions, offset, arena| {
        let stride = RUN_STRIDE;
        let garbage = vec![0x5a5a_5a5a_5a5a_5a5a; MAX_WORDS];
        let mut out = Arena::new(&garbage, (offset + 5) % OFFSETS);
        let mut expected = garbage.clone();
        let mut via_rows = garbage.clone();
        for len in 0..=MAX_WORDS {
            let got_any = k.and_runs(arena.words(), stride, positions, &mut out.words_mut()[..len]);
            let want_any = all::and_runs(arena.words(), stride, positions, &mut expected[..len]);
            let slices: Vec<&[u64]> = positions.iter().map(|&p| &arena.words()[p as usize * stride..][..len]).collect();
            let rows_any = all::and_rows(&slices, &mut via_rows[..len]);
            let case = format_args!("and_runs rows={rows} len={len} offset={offset}");
            assert_same_output(k, (got_any, &out), (want_any, &expected[..len]), case);
            assert_eq!((want_any, &expected[..len]), (rows_any, &via_rows[..len]), "reference disagrees");
        }
    });
}

/// Words between the starts of two runs of [`for_each_run_set`]: a row of
/// [`row_sets`].
const RUN_STRIDE: usize = MAX_WORDS + 2;

/// Calls `check(rows, positions, offset, arena)` for every row count up to
/// `MAX_ROWS`, every row set [`row_sets`] draws from `rng` for it and every
/// offset: `arena` holds every row of the set back to back, twice
/// (positions may repeat a row), placed at `offset`, and `positions` picks
/// `rows` of them.
fn for_each_run_set(rng: &mut Rng, mut check: impl FnMut(usize, &[u32], usize, &Arena)) {
    for rows in 0..=MAX_ROWS {
        for set in row_sets(rows.max(1), rng) {
            let flat: Vec<u64> = set.iter().chain(set.iter()).flatten().copied().collect();
            let positions: Vec<u32> = (0..rows).map(|r| ((r * 7 + 3) % (2 * set.len())) as u32).collect();
            for offset in 0..OFFSETS {
                check(rows, &positions, offset, &Arena::new(&flat, offset));
            }
        }
    }
}

/// `and_runs` over word-packed rows (the narrow shards of the sliced
/// index): runs of 1, 2 or 4 words laid back to back (the stride is the
/// run length), the last run ending at the end of the rows, rows dense
/// and sparse, every position count up to 9 and past it.
fn check_and_runs_word_packed(k: &Kernels) {
    let mut rng = Rng::new(11);
    for len in [1usize, 2, 4] {
        for dense in [false, true] {
            let rows = 50;
            let flat: Vec<u64> = (0..rows * len)
                .map(|_| if dense { !(1u64 << (rng.next_u64() % 64)) } else { rng.next_u64() & rng.next_u64() })
                .collect();
            for count in (0..=9).chain([31, 33]) {
                let mut positions: Vec<u32> = (0..count).map(|_| (rng.next_u64() % rows as u64) as u32).collect();
                if let Some(p) = positions.last_mut() {
                    *p = rows as u32 - 1;
                }
                let (mut got, mut want) = (vec![3u64; len], vec![5u64; len]);
                let got_any = k.and_runs(&flat, len, &positions, &mut got);
                let want_any = all::and_runs(&flat, len, &positions, &mut want);
                let case = format_args!("and_runs len={len} dense={dense} count={count}");
                assert_eq!((got_any, &got), (want_any, &want), "{} {case}", k.backend());
            }
        }
    }
}

/// `and_runs_mapped` against the scalar reference and against `and_runs`
/// followed by `append_mapped_bits`: every row set, length and offset of
/// `check_and_runs`, masked by all ones and by a pattern, through a table
/// that is not the identity, appending after earlier ids.
fn check_and_runs_mapped(k: &Kernels) {
    let table: Vec<u64> = (0..64 * MAX_WORDS as u64).map(|c| c.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 3).collect();
    let ones = vec![u64::MAX; MAX_WORDS];
    let pattern: Vec<u64> = (0..MAX_WORDS as u64).map(|i| i.wrapping_mul(0xd6e8_feb8_6659_fd93) | 1).collect();
    for_each_run_set(&mut Rng::new(5), |rows, positions, offset, arena| {
        let stride = RUN_STRIDE;
        for len in 0..=MAX_WORDS {
            for mask in [&ones[..len], &pattern[..len]] {
                let mut got = vec![7, 1, 3];
                let mut want = got.clone();
                let mut via_two = got.clone();
                k.and_runs_mapped(arena.words(), stride, positions, mask, &table, &mut got);
                all::and_runs_mapped(arena.words(), stride, positions, mask, &table, &mut want);
                let mut and = vec![0; len];
                all::and_runs(arena.words(), stride, positions, &mut and);
                all::append_mapped_bits(&and, mask, &table, &mut via_two);
                let case = format!("and_runs_mapped rows={rows} len={len} offset={offset}");
                assert_eq!(got, want, "{} {case}", k.backend());
                assert_eq!(want, via_two, "reference disagrees with and_runs + append_mapped_bits: {case}");
            }
        }
    });
}

/// `and_runs_mapped` on answers of a few bits a word, as a single key's
/// answer mostly is: words of at most one, two (the AVX-512 bit scan's
/// case) or three bits (its fallback), at random places, over runs of 1 to
/// 44 words (short runs of one to four lines, long runs, scalar tails),
/// through a table that is not the identity, after earlier ids.
fn check_and_runs_mapped_sparse(k: &Kernels) {
    let mut rng = Rng::new(11);
    let table: Vec<u64> = (0..64 * 44u64).map(|c| c.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 3).collect();
    for case in 0..6_000usize {
        let len = 1 + case % 44;
        let most = 1 + case / 44 % 3;
        let row: Vec<u64> = (0..len)
            .map(|_| (0..rng.next_u64() % (most as u64 + 1)).fold(0u64, |w, _| w | 1 << (rng.next_u64() % 64)))
            .collect();
        // The sparse row, then a row of ones: ANDed in either order.
        let rows: Vec<u64> = row.iter().copied().chain(std::iter::repeat_n(!0, len)).collect();
        for positions in [&[0u32][..], &[1, 0], &[1, 0, 1]] {
            let mut got = vec![9, 8];
            let mut want = got.clone();
            k.and_runs_mapped(&rows, len, positions, &vec![!0; len], &table, &mut got);
            all::and_runs_mapped(&rows, len, positions, &vec![!0; len], &table, &mut want);
            assert_eq!(got, want, "{} sparse and_runs_mapped len={len} most={most} case={case}", k.backend());
        }
    }
}

/// `and_runs` with more positions than the kernels keep run pointers for
/// on the stack (32), on rows dense enough that no chunk exits early, so
/// the positions past the hoisted ones are ANDed too.
fn check_and_runs_many_positions(k: &Kernels) {
    let mut rng = Rng::new(5);
    let stride = 40;
    let rows = 70;
    // Rows of mostly ones, each with a few zero bits, so the AND of many
    // rows keeps bits and each row changes the answer.
    let flat: Vec<u64> = (0..rows * stride).map(|_| !(1u64 << (rng.next_u64() % 64))).collect();
    for count in [31, 32, 33, 34, 40, 64, 65] {
        let positions: Vec<u32> = (0..count).map(|i| ((i * 13 + 5) % rows) as u32).collect();
        for len in [0, 7, 8, 16, 33, 40] {
            let (mut got, mut want) = (vec![3u64; len], vec![5u64; len]);
            let got_any = k.and_runs(&flat, stride, &positions, &mut got);
            let want_any = all::and_runs(&flat, stride, &positions, &mut want);
            assert_eq!((got_any, &got), (want_any, &want), "{} and_runs count={count} len={len}", k.backend());
        }
    }
}

/// Calls `check(a, b, label)` on every pattern pair, length and offset,
/// with `a` and `b` at different offsets.
fn sweep_pairs(mut check: impl FnMut(&[u64], &[u64], &str)) {
    let mut rng = Rng::new(2);
    for (pa, pb) in Pattern::ALL.into_iter().zip(Pattern::ALL.into_iter().cycle().skip(2)) {
        let a = pa.words(MAX_WORDS, &mut rng);
        let b = pb.words(MAX_WORDS, &mut rng);
        for offset in 0..OFFSETS {
            let arena_a = Arena::new(&a, offset);
            let arena_b = Arena::new(&b, (offset + 5) % OFFSETS);
            for len in 0..=MAX_WORDS {
                let label = format!("{pa:?}/{pb:?} len={len} offset={offset}");
                check(arena_a.prefix(len), arena_b.prefix(len), &label);
            }
        }
    }
}

fn check_popcounts(k: &Kernels) {
    sweep_pairs(|a, b, label| {
        assert_eq!(k.popcount(a), all::popcount(a), "{} popcount {label}", k.backend());
        assert_eq!(k.and_popcount(a, b), all::and_popcount(a, b), "{} and {label}", k.backend());
        assert_eq!(k.or_popcount(a, b), all::or_popcount(a, b), "{} or {label}", k.backend());
        assert_eq!(k.xor_popcount(a, b), all::xor_popcount(a, b), "{} xor {label}", k.backend());
    });
}

fn check_or_into(k: &Kernels) {
    sweep_pairs(|a, b, label| {
        let mut dst = Arena::new(a, (a.as_ptr() as usize / 8) % OFFSETS);
        let mut expected = a.to_vec();
        let got = k.or_into(dst.words_mut(), b);
        let want = all::or_into(&mut expected, b);
        assert_eq!((got, dst.words()), (want, &expected[..]), "{} or_into {label}", k.backend());
        dst.check_guards();
    });
}

/// `append_mapped_bits` against the scalar reference, masked by the other
/// operand and by all ones, through a table that is not the identity.
fn check_append_mapped_bits(k: &Kernels) {
    sweep_pairs(|a, b, label| {
        let table: Vec<u64> =
            (0..64 * a.len() as u64 + 5).map(|c| c.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 3).collect();
        let ones = vec![u64::MAX; a.len()];
        for mask in [b, &ones[..]] {
            let mut got = vec![7, 1, 3];
            let mut want = got.clone();
            k.append_mapped_bits(a, mask, &table, &mut got);
            all::append_mapped_bits(a, mask, &table, &mut want);
            assert_eq!(got, want, "{} append_mapped_bits {label}", k.backend());
        }
    });
}

/// `count_runs` against the scalar reference: every width up to
/// `MAX_WORDS`, every offset of rows and planes, every row set, keys added
/// in calls of 1 to 20 (groups of the carry-save path, each prefetching
/// the next: with 0 to 7 runs a key, groups of 8, 8, 8, 4 and 3 keys, so
/// sums of four, three and two digits, and shorter last groups) against
/// one at a time, one to three planes (so
/// carries ripple out of the top plane and wrap), and
/// live masks that skip no chunk, every other chunk, or all of them. The
/// same planes are then compared with `count_at_least` at every threshold
/// they can hold and one beyond.
fn check_count_runs(k: &Kernels) {
    let mut rng = Rng::new(5);
    for rows in [0, 1, 2, 5, 7] {
        for (s, set) in row_sets(rows.max(1), &mut rng).into_iter().enumerate() {
            let stride = MAX_WORDS + 2;
            let flat: Vec<u64> = set.iter().chain(set.iter()).flatten().copied().collect();
            // Keys: different subsets of the rows, repeated so counters
            // climb past the planes' range.
            let keys: Vec<Vec<u32>> =
                (0..20).map(|q| (0..rows).map(|r| ((r * 7 + q * 3 + 1) % (2 * set.len())) as u32).collect()).collect();
            let offset = s % OFFSETS;
            let arena = Arena::new(&flat, offset);
            for n_planes in 1..=3 {
                for width in 0..=MAX_WORDS {
                    let live_patterns: [u64; 3] = [!0, 0x5555_5555_5555_5555, 0];
                    let live = [live_patterns[(width + n_planes) % 3]; 1];
                    let init: Vec<u64> = (0..width * n_planes).map(|_| rng.next_u64()).collect();
                    let mut planes = Arena::new(&init, (offset + width) % OFFSETS);
                    let mut want = init.clone();
                    // The backend adds the keys in calls of 1 to 20 (its
                    // carry-save path), the reference one key at a time.
                    let group = 1 + (width + n_planes) % 20;
                    let (mut got_any, mut want_any) = (false, false);
                    for (i, keys) in keys.chunks(group).enumerate() {
                        let flat_keys: Vec<u32> = keys.concat();
                        let into = [LookAhead::L1, LookAhead::L2][(i + width) % 2];
                        got_any |= k.count_runs(
                            arena.words(),
                            stride,
                            &flat_keys,
                            keys.len(),
                            width,
                            &live,
                            planes.words_mut(),
                            // A hint only: in-range, past-the-end and
                            // wrapping positions must leave the result alone.
                            &[0, rows as u32, u32::MAX],
                            into,
                        );
                        for key in keys {
                            want_any |=
                                all::count_runs(arena.words(), stride, key, 1, width, &live, &mut want, &[], into);
                        }
                    }
                    assert_eq!(got_any, want_any, "{} count_runs any rows={rows} set={s} width={width}", k.backend());
                    assert_eq!(
                        planes.words(),
                        &want[..],
                        "{} count_runs rows={rows} set={s} planes={n_planes} width={width}",
                        k.backend()
                    );
                    planes.check_guards();
                    let garbage = vec![0x5a5a_5a5a_5a5a_5a5a; width];
                    for threshold in 0..=(1u32 << n_planes) {
                        let mut out = Arena::new(&garbage, (offset + 3) % OFFSETS);
                        let mut expected = garbage.clone();
                        let got_any = k.count_at_least(planes.words(), threshold, out.words_mut());
                        let want_any = all::count_at_least(&want, threshold, &mut expected);
                        assert_eq!(
                            (got_any, out.words()),
                            (want_any, &expected[..]),
                            "{} count_at_least planes={n_planes} width={width} threshold={threshold}",
                            k.backend()
                        );
                        out.check_guards();
                    }
                }
            }
        }
    }
}

/// `count_at_least` against a per-column model of the scalar reference
/// with more planes than fit in a `u32` threshold's bits and thresholds
/// at the edges.
#[test]
fn count_at_least_reference_matches_model() {
    let mut rng = Rng::new(8);
    for n_planes in [1, 2, 7, 31, 32, 33] {
        let width = 3;
        let planes: Vec<u64> = (0..width * n_planes).map(|_| rng.next_u64() & rng.next_u64()).collect();
        for threshold in [0, 1, 2, 63, 64, 127, 128, 1 << 30, u32::MAX] {
            let mut out = vec![0; width];
            let any = all::count_at_least(&planes, threshold, &mut out);
            for c in 0..width * 64 {
                let value: u128 =
                    (0..n_planes).map(|j| u128::from((planes[j * width + c / 64] >> (c % 64)) & 1) << j).sum();
                let bit = (out[c / 64] >> (c % 64)) & 1 == 1;
                assert_eq!(bit, value >= u128::from(threshold), "planes={n_planes} threshold={threshold} column={c}");
            }
            assert_eq!(any, out.iter().any(|&w| w != 0));
        }
    }
}

/// One module of tests per backend, one test per kernel. `$kernels` is an
/// expression giving that backend's own `Option<&'static Kernels>`.
macro_rules! backend_tests {
    ($name:ident, $kernels:expr) => {
        backend_tests!($name, $kernels, [
            and_rows: check_and_rows,
            and_runs: check_and_runs check_and_runs_many_positions check_and_runs_word_packed,
            popcounts: check_popcounts,
            or_into: check_or_into,
            append_mapped_bits: check_append_mapped_bits,
            and_runs_mapped: check_and_runs_mapped check_and_runs_mapped_sparse,
            count_runs: check_count_runs,
        ]);
    };
    ($name:ident, $kernels:expr, [$($test:ident: $($check:ident)+,)*]) => {
        mod $name {
            use super::*;

            $(
                #[test]
                fn $test() {
                    if let Some(k) = common::backend_or_skip(stringify!($name), $kernels) {
                        $($check(k);)+
                    }
                }
            )*
        }
    };
}

for_each_simd_backend!(backend_tests);

/// The NEON table, or `None` when the target does not enable NEON (then
/// the tests of `for_each_simd_backend!` skip, and fail if `BLOOMSLICE_REQUIRE_BACKENDS` names
/// `neon`, as CI does for its aarch64 run).
#[cfg(target_arch = "aarch64")]
fn neon_kernels() -> Option<&'static Kernels> {
    Kernels::for_backend(bloomslice_kernels::Backend::Neon)
}

/// The table each backend module hands out is labelled with that backend.
#[test]
fn tables_are_labelled() {
    use bloomslice_kernels::Backend;
    assert_eq!(bloomslice_kernels::arch::portable::kernels().backend(), Backend::Portable);
    #[cfg(target_arch = "x86_64")]
    {
        use bloomslice_kernels::arch::x86_64::{avx2, avx512};
        assert_eq!(avx2::kernels().map(|k| k.backend()), avx2::Avx2::new().map(|_| Backend::Avx2));
        assert_eq!(avx512::kernels().map(|k| k.backend()), avx512::Avx512::new().map(|_| Backend::Avx512));
    }
    #[cfg(target_arch = "aarch64")]
    assert_eq!(neon_kernels().map(|k| k.backend()), Some(Backend::Neon), "NEON is part of the aarch64 baseline");
    #[cfg(not(target_arch = "aarch64"))]
    assert!(Kernels::for_backend(Backend::Neon).is_none(), "NEON exists only on aarch64");
}

/// A run that ends exactly at the end of the rows is read; one word past
/// it panics, on every backend as in the reference, whatever the stride
/// (zero included), the run length (under, at and over a line), the place
/// of the bad position among the others, and whether the AND dies before
/// that run (rows of zeros: a kernel with an early exit must not skip the
/// check).
#[test]
fn runs_past_the_end_panic() {
    let table: Vec<u64> = (0..64 * 40).collect();
    for k in Kernels::available() {
        for fill in [!0u64, 0] {
            for (stride, n) in [(0usize, 8usize), (8, 8), (16, 16), (3, 5), (24, 17), (40, 40), (32, 32)] {
                let rows = vec![fill; 3 * stride.max(1) + n];
                let last = (rows.len() - n).checked_div(stride).map_or(7, |l| l as u32);
                let mask = vec![!0u64; n];
                for at in 0..6 {
                    let mut positions = vec![0u32, 1, 2, 1, 0, 2];
                    positions[at] = last;
                    let (mut got, mut want) = (Vec::new(), Vec::new());
                    k.and_runs_mapped(&rows, stride, &positions, &mask, &table, &mut got);
                    all::and_runs_mapped(&rows, stride, &positions, &mask, &table, &mut want);
                    assert_eq!(got, want, "{} stride {stride} n {n}", k.backend());
                    if stride > 0 {
                        positions[at] = last + 1;
                        let case = format!("{} fill {fill:x} stride {stride} n {n} bad position {at}", k.backend());
                        assert!(
                            panics(&|| k.and_runs_mapped(&rows, stride, &positions, &mask, &table, &mut Vec::new())),
                            "{case}"
                        );
                        assert!(panics(&|| _ = k.and_runs(&rows, stride, &positions, &mut vec![0; n])), "{case}");
                    }
                }
                let short = &rows[..n - 1];
                assert_panics(k, &|| k.and_runs_mapped(short, stride, &[0], &mask, &table, &mut Vec::new()));
            }
        }
    }
}

/// Whether `f` panics.
fn panics(f: &dyn Fn()) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err()
}

/// Asserts that `f` panics on backend `k` (a failure names the backend
/// and, through `#[track_caller]`, the line of the case).
#[track_caller]
fn assert_panics(k: &Kernels, f: &dyn Fn()) {
    assert!(panics(f), "{}", k.backend());
}

/// Mismatched lengths panic like the reference.
#[test]
fn length_mismatches_panic() {
    for k in Kernels::available() {
        let (a, b) = (vec![1u64; 9], vec![1u64; 10]);
        assert_panics(k, &|| _ = k.and_popcount(&a, &b));
        assert_panics(k, &|| _ = k.or_popcount(&a, &b));
        assert_panics(k, &|| _ = k.xor_popcount(&a, &b));
        assert_panics(k, &|| _ = k.or_into(&mut a.clone(), &b));
        assert_panics(k, &|| _ = k.and_rows(&[&a], &mut [0; 10]));
        assert_panics(k, &|| _ = k.count_runs(&a, 1, &[0], 1, 2, &[!0], &mut [0; 3], &[], LookAhead::L1));
        assert_panics(k, &|| _ = k.count_runs(&a, 8, &[1], 1, 2, &[!0], &mut [0; 4], &[], LookAhead::L1));
        assert_panics(k, &|| _ = k.count_runs(&a, 1, &[0], 1, 9 * 64, &[!0], &mut [0; 9 * 64], &[], LookAhead::L1));
        assert_panics(k, &|| _ = k.count_runs(&a, 1, &[0], 0, 2, &[!0], &mut [0; 2], &[], LookAhead::L1));
        assert_panics(k, &|| _ = k.count_runs(&a, 1, &[0, 1, 2], 2, 2, &[!0], &mut [0; 2], &[], LookAhead::L1));
        assert_panics(k, &|| _ = k.count_at_least(&[0; 5], 1, &mut [0; 2]));
    }
}

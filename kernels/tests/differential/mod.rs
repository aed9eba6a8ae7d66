//! The differential logic of the fuzz target `kernels`
//! (`fuzz/fuzz_targets/kernels.rs`, which includes this file), shared with
//! the proptest `kernels/tests/fuzz_logic.rs`, which runs it where
//! libFuzzer cannot (on aarch64 under `qemu-aarch64` in CI): every backend
//! this CPU can run (`Kernels::available()`: scalar, portable, NEON on
//! aarch64, AVX2 and AVX-512 where present) against the scalar reference
//! of record, `arch::all`, on arbitrary words, lengths, start offsets
//! (alignments) and row counts. Any difference panics.

use bloomslice_kernels::arch::all;
use bloomslice_kernels::{Kernels, LookAhead};

/// Longest output, in words (64 lines, plus a partial one).
pub const MAX_LEN: usize = 515;
/// Start offsets range over this many words, so every alignment inside a
/// cache line (and well beyond) is reached.
pub const MAX_START: usize = 64;
/// Most rows given to `and_rows`.
pub const MAX_ROWS: usize = 8;

/// One differential case, decoded by the fuzzer (`arbitrary`, with
/// `--cfg fuzzing`) or drawn by the proptest `kernels/tests/fuzz_logic.rs`
/// (whose crate allows the `fuzzing` cfg name, unknown to this package).
#[cfg_attr(fuzzing, derive(arbitrary::Arbitrary))]
#[derive(Debug)]
pub struct Input {
    /// Raw material for every operand, cycled (and rotated) when short.
    pub words: Vec<u64>,
    /// Output length in words, reduced modulo `MAX_LEN + 1`.
    pub len: u16,
    /// Start offset in the pool of each row, then of operands `a` and `b`.
    pub starts: [u8; MAX_ROWS + 2],
    /// Extra words past `len` on each row (rows may be longer than `out`).
    pub extra: [u8; MAX_ROWS],
    /// Number of rows, reduced modulo `MAX_ROWS + 1`.
    pub rows: u8,
    /// Bit `c % 64` zeroes line `c` of row `c % rows`, so lines die at
    /// every possible row and `and_rows` takes its early exit.
    pub kill: u64,
    /// Bit `c % 64` makes `a` sparse on line `c` (ANDed with `b`), giving
    /// zero lines to skip in `append_mapped_bits`.
    pub sparse: u64,
    /// Seed of the table `append_mapped_bits` reads ids from (entry `c`
    /// is `offset + c`, reversed when the low bit is set).
    pub offset: u64,
    /// Seed of the initial `count_runs` counter planes.
    pub counter_seed: u16,
    /// Number of counter planes, reduced to 1..=4 (few, so counters wrap).
    pub planes: u8,
    /// Which 512-column chunks `count_runs` may touch (bit `c % 64`).
    pub live: u64,
    /// Keys for `count_runs`: each byte's bits pick which rows the key
    /// ANDs (a key with no bits ANDs no rows and counts every column).
    pub keys: Vec<u8>,
    /// Thresholds for `count_at_least`.
    pub thresholds: [u8; 3],
}

/// The operand pool: `words` cycled (and rotated) to a fixed length.
pub fn pool(words: &[u64]) -> Vec<u64> {
    let n = MAX_LEN + MAX_START + 256;
    if words.is_empty() {
        return vec![0; n];
    }
    (0..n).map(|i| words[i % words.len()].rotate_left(7 * (i / words.len()) as u32)).collect()
}

/// Every kernel of `k` against the scalar reference on `input` (with
/// its `pool`); any difference panics.
pub fn check(k: &Kernels, input: &Input, pool: &[u64]) {
    let len = input.len as usize % (MAX_LEN + 1);
    let rows = input.rows as usize % (MAX_ROWS + 1);
    let name = k.backend().name();

    // and_rows: each row is a slice of its own copy of the pool, at its own
    // start, with the chosen lines zeroed.
    let row_bufs: Vec<(Vec<u64>, usize, usize)> = (0..rows)
        .map(|r| {
            let start = input.starts[r] as usize % MAX_START;
            let mut buf = pool.to_vec();
            for c in 0..len.div_ceil(8) {
                if input.kill >> (c % 64) & 1 == 1 && c % rows == r {
                    let lo = start + 8 * c;
                    buf[lo..(lo + 8).min(start + len)].fill(0);
                }
            }
            (buf, start, len + input.extra[r] as usize % 4)
        })
        .collect();
    let row_refs: Vec<&[u64]> = row_bufs.iter().map(|(buf, start, n)| &buf[*start..*start + *n]).collect();
    let out_start = input.starts[0] as usize % 8;
    let mut got = vec![0x5a5a_5a5a_5a5a_5a5a; len + 16];
    let mut want = got.clone();
    let got_any = k.and_rows(&row_refs, &mut got[out_start..out_start + len]);
    let want_any = all::and_rows(&row_refs, &mut want[out_start..out_start + len]);
    assert_eq!((got_any, &got), (want_any, &want), "{name}: and_rows");

    // and_runs: the same rows, copied back to back at a stride into one
    // buffer and named by position (repeats allowed).
    let stride = len + 4;
    let mut flat = vec![0u64; stride * rows.max(1)];
    for (r, row) in row_refs.iter().enumerate() {
        flat[r * stride..r * stride + len].copy_from_slice(&row[..len]);
    }
    let positions: Vec<u32> = (0..rows).map(|r| u32::from(input.starts[r].is_multiple_of(2)) * r as u32).collect();
    let mut got = vec![0x5a5a_5a5a_5a5a_5a5a; len + 16];
    let mut want = got.clone();
    let got_any = k.and_runs(&flat, stride, &positions, &mut got[out_start..out_start + len]);
    let want_any = all::and_runs(&flat, stride, &positions, &mut want[out_start..out_start + len]);
    assert_eq!((got_any, &got), (want_any, &want), "{name}: and_runs");

    // Two operands at independent starts; `a` made sparse line by line.
    let a_start = input.starts[MAX_ROWS] as usize % MAX_START;
    let b_start = input.starts[MAX_ROWS + 1] as usize % MAX_START;
    let b = &pool[b_start..b_start + len];
    let mut a_buf = pool.to_vec();
    for (i, w) in a_buf[a_start..a_start + len].iter_mut().enumerate() {
        if input.sparse >> (i / 8 % 64) & 1 == 1 {
            *w &= b[i] & b[(i + 1) % len];
        }
    }
    let a = &a_buf[a_start..a_start + len];

    assert_eq!(k.popcount(a), all::popcount(a), "{name}: popcount");
    assert_eq!(k.and_popcount(a, b), all::and_popcount(a, b), "{name}: and_popcount");
    assert_eq!(k.or_popcount(a, b), all::or_popcount(a, b), "{name}: or_popcount");
    assert_eq!(k.xor_popcount(a, b), all::xor_popcount(a, b), "{name}: xor_popcount");

    let mut got = a_buf.clone();
    let mut want = a_buf.clone();
    let got_new = k.or_into(&mut got[a_start..a_start + len], b);
    let want_new = all::or_into(&mut want[a_start..a_start + len], b);
    assert_eq!((got_new, &got), (want_new, &want), "{name}: or_into");

    // append_mapped_bits: `a` masked by `b`, then by all ones, through a
    // table with a few spare entries past the last bit.
    let mut table: Vec<u64> = (0..64 * len as u64 + 3).map(|c| input.offset.wrapping_add(c)).collect();
    if input.offset & 1 == 1 {
        table.reverse();
    }
    let ones = vec![u64::MAX; len];
    for mask in [b, &ones[..]] {
        let mut got = vec![1, 2, 3];
        let mut want = got.clone();
        k.append_mapped_bits(a, mask, &table, &mut got);
        all::append_mapped_bits(a, mask, &table, &mut want);
        assert_eq!(got, want, "{name}: append_mapped_bits");
    }

    // and_runs_mapped: the runs of `and_runs` (killed lines make chunks
    // die at every row, so each early-exit test is reached), masked by `b`
    // and by all ones, through the same table, after earlier ids.
    for mask in [b, &ones[..]] {
        let mut got = vec![4, 5];
        let mut want = got.clone();
        k.and_runs_mapped(&flat, stride, &positions, mask, &table, &mut got);
        all::and_runs_mapped(&flat, stride, &positions, mask, &table, &mut want);
        assert_eq!(got, want, "{name}: and_runs_mapped");
    }

    // count_runs: up to 24 keys over the rows of `and_runs`, into planes
    // seeded from the input at an arbitrary offset; then count_at_least on
    // the result. Guard words around the planes catch stray writes.
    let n_planes = 1 + input.planes as usize % 4;
    let live = vec![input.live; len.div_ceil(8).div_ceil(64).max(1)];
    let lo = input.counter_seed as usize % 9;
    let init: Vec<u64> = (0..lo + n_planes * len + 9)
        .map(|i| u64::from(input.counter_seed).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(i as u32))
        .collect();
    let mut got = init.clone();
    let mut want = init;
    // The backend takes consecutive keys of as many runs in groups of up
    // to `group` (its carry-save path), the reference one key at a time.
    let group = 1 + input.planes as usize / 4 % 12;
    let keys: Vec<Vec<u32>> =
        input.keys.iter().take(24).map(|&key| (0..rows as u32).filter(|r| key >> r & 1 == 1).collect()).collect();
    let (mut got_any, mut want_any) = (false, false);
    let mut first = 0;
    while first < keys.len() {
        let mut end = first + 1;
        while end < keys.len() && end - first < group && keys[end].len() == keys[first].len() {
            end += 1;
        }
        let flat_keys = keys[first..end].concat();
        // The look-ahead (the next keys' runs, any positions) is only a
        // prefetch hint: it must not change the counts.
        // Either cache level, alternating by group.
        let ahead = keys[end..].concat();
        let into = [LookAhead::L1, LookAhead::L2][first % 2];
        let planes = &mut got[lo..lo + n_planes * len];
        got_any |= k.count_runs(&flat, stride, &flat_keys, end - first, len, &live, planes, &ahead, into);
        for key in &keys[first..end] {
            want_any |=
                all::count_runs(&flat, stride, key, 1, len, &live, &mut want[lo..lo + n_planes * len], &[], into);
        }
        first = end;
    }
    assert_eq!(got_any, want_any, "{name}: count_runs any");
    assert_eq!(got, want, "{name}: count_runs");
    for &threshold in &input.thresholds {
        let threshold = u32::from(threshold) % (2 << n_planes);
        let mut got_out = vec![0x5a5a_5a5a_5a5a_5a5a; len + 16];
        let mut want_out = got_out.clone();
        let planes = &want[lo..lo + n_planes * len];
        let got_any = k.count_at_least(planes, threshold, &mut got_out[out_start..out_start + len]);
        let want_any = all::count_at_least(planes, threshold, &mut want_out[out_start..out_start + len]);
        assert_eq!((got_any, &got_out), (want_any, &want_out), "{name}: count_at_least");
    }
}

/// [`check`] on every backend this CPU can run.
pub fn check_all(input: &Input) {
    let pool = pool(&input.words);
    for k in Kernels::available() {
        check(k, input, &pool);
    }
}

//! Single-key latency against the memory floor, all in one run: on the
//! index of `benches/iai_full.rs` (random half-full filters, `full` shape)
//! it times, in alternating rounds,
//!
//! - `chase`: one dependent random line load in a buffer of the index's
//!   size (huge pages asked for, as the index's rows are): the memory's
//!   round trip;
//! - `chase runs`: the same chase, but each step loads `k` random runs of
//!   as many lines as the index's runs (all independent of each other;
//!   runs of more than 4 lines are first prefetched whole, line by line
//!   across the runs, as the engine does) and the next step depends on all
//!   of them: the least time a key's row reads can take here;
//! - `l1`: one of four keys repeated with `query_into` (its rows stay in
//!   the first-level cache: the code alone);
//! - `l2`: one of 256 keys at random with `query_into` (their rows stay in
//!   the second-level cache, but the branches on a key's answer cannot be
//!   learnt: the code as distinct keys run it);
//! - `single`: distinct random keys with `query_into`, one after the other;
//! - `batched`: the same keys through `query_batch` (1 024 keys a call),
//!   per key;
//!
//! and prints `single / (chase + l1)` (the floor a single key is held to:
//! one round trip plus the code), `single / (chase + l2)` (the same with
//! the code as distinct keys run it) and `single / batched`. `chase` and
//! `single` are each timed after an untimed pass over their buffer, so
//! both are measured in the same, warm, state (on a CPU whose last-level
//! cache holds one of them but not both, a cold start would add a miss a
//! line to whichever ran second). It also says how many of the index's row
//! bytes sit on transparent huge pages.
//!
//! With a second argument `R > 0` it only runs `R` passes of the
//! repeated-key loop inside `measured`, for instruction counts:
//!
//! ```text
//! cargo run --release -p bloomslice-bench --example keyprobe -- 1000 [ROUNDS]
//! valgrind --tool=callgrind --toggle-collect='*keyprobe*measured*' \
//!     target/release/examples/keyprobe 1000 1    # Ir / 100 000 = per key
//! ```

use std::hint::black_box;
use std::time::Instant;

use bloomslice::{BatchResults, SlicedConfig, SlicedIndex};
use bloomslice_bench::args::positional;
use bloomslice_bench::roofline::{chase_buffer, read_key_runs};
use bloomslice_bench::workload::{assert_query_into_matches_batch, random_full_index, xorshift64};

/// Keys of the timed loops (and of a `measured` pass).
const KEYS: usize = 100_000;

/// Keys of the `l2` loop: their rows (14 lines a key at N = 1 000) stay in
/// a 1 MB second-level cache.
const WARM_KEYS: usize = 256;

/// `passes` passes of [`KEYS`] queries of one of four keys (rows in L1):
/// the loop whose instructions callgrind counts.
#[inline(never)]
fn measured(index: &SlicedIndex, keys: &[[u8; 8]], out: &mut Vec<u64>, passes: usize) -> usize {
    let mut found = 0;
    for _ in 0..passes {
        for i in 0..KEYS {
            index.query_into(black_box(&keys[i % 4]), out);
            found += out.len();
        }
    }
    found
}

fn main() {
    let filters = positional("keyprobe", 1, 1000, |n| n > 0, "a filter count (a positive integer)");
    let count_passes = positional("keyprobe", 2, 0, |_| true, "a pass count (an integer)");
    let (index, _, _, keys) = random_full_index(filters, KEYS, 11, SlicedConfig::default());
    assert_query_into_matches_batch(&index, &keys);
    let mut out = Vec::new();
    let mut batch = BatchResults::new();
    if count_passes > 0 {
        let found = measured(&index, &keys, &mut out, count_passes);
        println!("{count_passes} passes of {KEYS} repeated keys ({found} ids)");
        return;
    }

    // The chase buffer: as many lines as the index holds bytes.
    let lines = (index.memory_bytes() / 64).max(2);
    // The chase's order is fixed, so runs compare.
    let (buf, start) = chase_buffer(lines, &mut 0x9e37_79b9_7f4a_7c15u64);
    let words: &[u64] = &buf;

    // A key's runs: k runs of the index's run length (one shard).
    let k = index.params().k() as usize;
    let run_lines = (index.bytes_per_query() / k / 64).clamp(1, lines / 2);
    println!(
        "{filters} filters, {} kernels, index {:.1} MB ({:.1} MB of rows on huge pages), chase buffer {:.1} MB ({:.1} MB on huge pages); ns per key",
        index.kernels().backend(),
        index.memory_bytes() as f64 / 1e6,
        index.huge_page_bytes() as f64 / 1e6,
        (lines * 64) as f64 / 1e6,
        bloomslice::storage::huge_page_bytes_in(words.as_ptr().cast(), lines * 64) as f64 / 1e6,
    );
    let per_key = |start: Instant, n: usize| start.elapsed().as_nanos() as f64 / n as f64;
    // The order of the `l2` loop: one of `WARM_KEYS` keys at random.
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let warm_order: Vec<usize> = (0..KEYS).map(|_| xorshift64(&mut s) as usize % WARM_KEYS).collect();
    let mut at = start;
    for round in 0..positional("keyprobe", 3, 5, |n| n > 0, "a round count (a positive integer)") {
        // Each buffer is timed warm, after an untimed pass over all of it:
        // the chase buffer and the index together may not fit the
        // last-level cache (13 + 13 MB at N = 1 000 in Zen 5's 32 MB), and
        // a timed loop that began cold would pay a first miss per line.
        for _ in 0..lines {
            at = words[at * 8] as usize;
        }
        let steps = 1_000_000.min(lines * 4);
        let start = Instant::now();
        for _ in 0..steps {
            at = words[at * 8] as usize;
        }
        let chase = per_key(start, steps);
        black_box(at);

        let steps = 200_000;
        let start = Instant::now();
        let mut x = at as u64 | 1;
        for _ in 0..steps {
            let acc = read_key_runs(words, k, run_lines, x);
            x = xorshift64(&mut (x ^ acc)) | 1;
        }
        let chase_runs = per_key(start, steps);
        black_box(x);

        let start = Instant::now();
        for i in 0..KEYS {
            index.query_into(black_box(&keys[i % 4]), &mut out);
            black_box(&out);
        }
        let l1 = per_key(start, KEYS);

        for &i in &warm_order[..KEYS / 10] {
            index.query_into(black_box(&keys[i]), &mut out);
        }
        let start = Instant::now();
        for &i in &warm_order {
            index.query_into(black_box(&keys[i]), &mut out);
            black_box(&out);
        }
        let l2 = per_key(start, KEYS);

        for key in &keys {
            index.query_into(black_box(key), &mut out);
        }
        let start = Instant::now();
        for key in &keys {
            index.query_into(black_box(key), &mut out);
            black_box(&out);
        }
        let single = per_key(start, KEYS);

        let start = Instant::now();
        for chunk in keys.chunks(1024) {
            index.query_batch(black_box(chunk), &mut batch);
            black_box(&batch);
        }
        let batched = per_key(start, KEYS);
        println!(
            "round {round}: chase {chase:.1}, chase runs {chase_runs:.1}, l1 {l1:.1}, l2 {l2:.1}, single {single:.1}, batched {batched:.1}; single / (chase + l1) {:.2}, single / (chase + l2) {:.2}, single / (chase runs + l1) {:.2}, single / batched {:.2}",
            single / (chase + l1),
            single / (chase + l2),
            single / (chase_runs + l1),
            single / batched
        );
    }
}

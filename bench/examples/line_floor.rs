//! Exploration helper: what this machine's memory gives one core for the
//! access that scoring makes, with no engine at all. For a buffer of the
//! chosen size (huge pages asked for, as the index's rows are) it times:
//!
//! - a pointer chase through every line in random order (one load in
//!   flight: the latency of a line);
//! - independent loads of random lines (as many in flight as the core
//!   allows: the floor per line of a random row run of one line);
//! - independent loads of random pairs of adjacent lines (a run of two
//!   lines, as `multi` N = 1 000 reads);
//! - a sequential read of the whole buffer (every word, XOR-reduced: the
//!   hardware prefetchers at their best, the most bytes a second one core
//!   reads from where the buffer lives).
//!
//! Scoring at `N = 1 000` reads 14 lines a key (7 runs of 2); divided by
//! the pair figure x 7 this gives the least time a key can take here. At
//! `N = 10 000` a key reads 7 runs of 1 280 bytes (8 960 bytes): the
//! sequential figure gives the time those bytes take at the core's best
//! streaming rate.
//!
//! ```text
//! cargo run --release -p bloomslice-bench --example line_floor -- [MIB]
//! ```

use std::hint::black_box;
use std::time::Instant;

use bloomslice_bench::args::positional;
use bloomslice_bench::roofline::chase_buffer;
use bloomslice_bench::workload::xorshift64;

/// Random line indexes per timed pass.
const LOADS: usize = 1 << 22;

fn main() {
    let mib = positional("line_floor", 1, 12, |n| n > 0, "a buffer size in MiB (a positive integer)");
    let lines = (mib << 20) / 64;
    // A random cyclic order of all lines, fixed so runs compare; each
    // line's first word names the next line of the chase.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let (buf, chase_start) = chase_buffer(lines, &mut seed);
    let picks: Vec<usize> = (0..LOADS).map(|_| xorshift64(&mut seed) as usize % (lines - 1)).collect();
    let words: &[u64] = &buf;
    for round in 0..3 {
        let chase_steps = 1_000_000.min(lines);
        let start = Instant::now();
        let mut at = chase_start;
        for _ in 0..chase_steps {
            at = words[at * 8] as usize;
        }
        let chase = start.elapsed().as_nanos() as f64 / chase_steps as f64;
        black_box(at);

        let start = Instant::now();
        let mut acc = 0u64;
        for &line in &picks {
            acc ^= words[line * 8 + 1];
        }
        let single = start.elapsed().as_nanos() as f64 / LOADS as f64;
        black_box(acc);

        let start = Instant::now();
        let mut acc = 0u64;
        for &line in &picks {
            acc ^= words[line * 8 + 1] ^ words[line * 8 + 9];
        }
        let pair = start.elapsed().as_nanos() as f64 / LOADS as f64;
        black_box(acc);

        let start = Instant::now();
        let mut lanes = [0u64; 8];
        for line in words.chunks_exact(8) {
            for (a, &w) in lanes.iter_mut().zip(line) {
                *a ^= w;
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        black_box(lanes);
        let per_byte = seconds * 1e9 / (words.len() * 8) as f64;
        println!(
            "{mib} MiB, round {round}: chase {chase:.1} ns per line; independent loads {single:.2} ns per line, {pair:.2} ns per 2-line run ({:.1} ns per 7 runs); sequential {:.1} GB/s ({:.0} ns per 8 960 bytes)",
            7.0 * pair,
            1.0 / per_byte,
            8960.0 * per_byte
        );
    }
}

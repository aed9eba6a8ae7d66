//! Exploration helper for single-key latency: how much of a `query_into`
//! is the code and how much the memory round trip of its `k` row runs. On
//! the index of `benches/iai_full.rs` (random half-full filters, `full`
//! shape) it times, per key: distinct keys one after the other (what
//! `paper query` reports as "single key"); one of four keys repeated (its
//! rows stay in the first-level cache: the code alone); and distinct keys
//! where each key depends on the previous answer (no overlap between
//! queries at all). Answers are checked against `query_batch` first.
//!
//! ```text
//! cargo run --release -p bloomslice-bench --example latprobe -- 1000
//! ```

use std::hint::black_box;
use std::time::Instant;

use bloomslice::SlicedConfig;
use bloomslice_bench::args::positional;
use bloomslice_bench::workload::{assert_query_into_matches_batch, random_full_index};

fn main() {
    let filters = positional("latprobe", 1, 1000, |n| n > 0, "a filter count (a positive integer)");
    let (index, _, _, keys) = random_full_index(filters, 100_000, 11, SlicedConfig::default());
    assert_query_into_matches_batch(&index, &keys);
    let mut out = Vec::new();
    let per_key = |start: Instant| start.elapsed().as_nanos() as f64 / keys.len() as f64;
    println!("{filters} filters, {} kernels, ns per key:", index.kernels().backend());
    for round in 0..3 {
        let start = Instant::now();
        for key in &keys {
            index.query_into(black_box(key), &mut out);
            black_box(&out);
        }
        let distinct = per_key(start);
        let start = Instant::now();
        for i in 0..keys.len() {
            index.query_into(black_box(&keys[i % 4]), &mut out);
            black_box(&out);
        }
        let same = per_key(start);
        let start = Instant::now();
        let mut j = 0;
        for _ in 0..keys.len() {
            index.query_into(&keys[j], &mut out);
            j = (j + 1 + out.len() % 2) % keys.len();
        }
        let chain = per_key(start);
        println!(
            "round {round}: distinct keys {distinct:.1}, one of four keys repeated {same:.1}, each key chosen by the last answer {chain:.1}"
        );
    }
}

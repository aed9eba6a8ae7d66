//! Exploration helper for multi-key scoring: the index of
//! `benches/iai_full.rs` (random half-full filters, `full` shape), its
//! 10 000 query keys cut into threshold queries (`query_threshold_into`,
//! threshold 0.8), timed (best of the repeats) or counted under callgrind.
//!
//! ```text
//! cargo build --release -p bloomslice-bench --example scoreprobe
//! target/release/examples/scoreprobe 1000 auto 100 score 20
//! valgrind --tool=callgrind --toggle-collect='*scoreprobe::measure*' \
//!     target/release/examples/scoreprobe 1000 avx2 100 pruned 1
//! ```
//!
//! Arguments: filters, backend (`scalar`, `avx2`, `avx512`, `auto`), keys
//! per query, mode (`score` unpruned or `pruned`), repeats, and optionally
//! `SlicedConfig::prefetch_distance`. Every repeat must give the first
//! pass's answer.

use std::hint::black_box;
use std::time::Instant;

use bloomslice::kernels::{Backend, Kernels};
use bloomslice::{Scores, SlicedConfig, SlicedIndex, Threshold};
use bloomslice_bench::multi::score_queries;
use bloomslice_bench::workload::random_full_index;

/// Query keys, cut into queries of the chosen length.
const KEYS: usize = 10_000;

/// Scores every query; returns the number of (id, count) pairs reported.
#[inline(never)]
fn measure(
    index: &SlicedIndex,
    queries: &[&[[u8; 8]]],
    threshold: Threshold,
    scores: &mut Scores,
    out: &mut Vec<(u64, u32)>,
) -> usize {
    score_queries(index, queries, threshold, scores, out)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: &str| args.get(i).map_or(default, String::as_str).to_owned();
    let filters: usize = arg(1, "1000").parse().expect("filters");
    let backend = arg(2, "auto");
    let per_query: usize = arg(3, "100").parse().expect("keys per query");
    let pruned = match arg(4, "score").as_str() {
        "score" => false,
        "pruned" => true,
        other => panic!("mode {other}: expected score or pruned"),
    };
    let repeats: usize = arg(5, "1").parse().expect("repeats");
    let mut config = SlicedConfig::default();
    if let Some(d) = args.get(6) {
        config.prefetch_distance = d.parse().expect("prefetch distance");
    }
    let (mut index, _, _, keys) = random_full_index(filters, KEYS, 11, config);
    if backend != "auto" {
        index.set_kernels(Kernels::for_backend(Backend::from_name(&backend).expect("backend")).expect("available"));
    }
    let queries: Vec<&[[u8; 8]]> = keys.chunks_exact(per_query).collect();
    let threshold = Threshold::fraction(0.8).expect("a valid fraction");
    let threshold = if pruned { threshold } else { threshold.unpruned() };
    let (mut scores, mut out) = (Scores::new(), Vec::new());
    let first = measure(&index, &queries, threshold, &mut scores, &mut out);
    let mut best = f64::MAX;
    for _ in 0..repeats {
        let start = Instant::now();
        let got = measure(black_box(&index), black_box(&queries), threshold, &mut scores, &mut out);
        best = best.min(start.elapsed().as_secs_f64());
        assert_eq!(got, first, "a repeat gave another answer");
    }
    println!(
        "{filters} filters, {} kernels, {per_query}-key queries, {}: {first} reported, {:.1} ns per key",
        index.kernels().backend(),
        if pruned { "pruned" } else { "unpruned" },
        best * 1e9 / (queries.len() * per_query) as f64
    );
}

//! Exploration helper for multi-key scoring off the `multi` workload's
//! shape: random filters of a chosen bit density (rounded to a power of two), `m` and `k`, random
//! 100-key threshold queries (0.8), and the four routes of `multi`
//! (`per-key-count`, `batched`, `score`, `score-pruned`), timed in rounds
//! (every route once per round, best of the rounds) after their answers
//! are checked against each other.
//!
//! ```text
//! cargo build --release -p bloomslice-bench --example score_sweep
//! target/release/examples/score_sweep FILTERS M K [DENSITY] [ROUNDS] [QUERIES] [KEYS]
//! ```
//!
//! Prints one line: ns per key of each route and the ratios that the
//! scoring targets name (`per-key-count / score`, `per-key-count /
//! score-pruned`, `score / batched`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bloomslice::{BatchResults, BloomFilter, BloomParams, KeyHash, Scores, SlicedIndex, Threshold};
use bloomslice_bench::multi::per_key_count;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Prints `message` as the one-line error and exits with status 2.
fn fail(message: &str) -> ! {
    eprintln!("score_sweep: {message}");
    std::process::exit(2)
}

/// Argument `i` (or `default`) parsed, or a one-line error naming it.
fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: &str, name: &str) -> T {
    let text = args.get(i).map_or(default, String::as_str);
    text.parse().unwrap_or_else(|_| fail(&format!("{name}: cannot read {text:?}")))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let filters: usize = arg(&args, 1, "1000", "filters");
    let m: u64 = arg(&args, 2, "95851", "m");
    let k: u32 = arg(&args, 3, "7", "k");
    let density: f64 = arg(&args, 4, "0.5", "density");
    let rounds: usize = arg(&args, 5, "5", "rounds");
    let n_queries: usize = arg(&args, 6, "200", "queries");
    let q: usize = arg(&args, 7, "100", "keys per query");
    let p = match BloomParams::new(m, k) {
        Ok(p) if filters > 0 && q > 0 && n_queries > 0 && density > 0.0 && density < 1.0 => p,
        Ok(_) => fail("filters, queries and keys must be positive and the density in (0, 1)"),
        Err(e) => fail(&format!("m {m}, k {k}: {e}")),
    };
    let mut rng = SmallRng::seed_from_u64(7);
    let words = p.words();
    let ands = (-density.log2()).round().max(1.0) as u32;
    let built: Vec<BloomFilter> = (0..filters)
        .map(|_| {
            // Density 2^-j: the AND of j random words.
            let mut w: Vec<u64> =
                (0..words).map(|_| (0..ands).fold(!0u64, |acc, _| acc & rng.random::<u64>())).collect();
            if !m.is_multiple_of(64) {
                w[words - 1] &= (1u64 << (m % 64)) - 1;
            }
            BloomFilter::from_words(p, &w).expect("words of the right length")
        })
        .collect();
    let mut index = SlicedIndex::new(p);
    let refs: Vec<(u64, &BloomFilter)> = built.iter().enumerate().map(|(i, f)| (i as u64, f)).collect();
    index.insert_filters(&refs).expect("insert");
    let queries: Vec<Vec<KeyHash>> =
        (0..n_queries).map(|_| (0..q).map(|_| p.hash(&rng.random::<u64>().to_le_bytes())).collect()).collect();
    let threshold = Threshold::fraction(0.8).expect("a valid fraction");
    let min_count = threshold.min_count(q);
    let (mut results, mut counts, mut out, mut scores) =
        (BatchResults::new(), HashMap::<u64, u32>::new(), Vec::new(), Scores::new());
    let mut per_key = |hashes: &[KeyHash], results: &mut BatchResults, out: &mut Vec<(u64, u32)>| {
        per_key_count(&index, hashes, min_count, results, &mut counts, out);
        out.len()
    };
    for hashes in &queries {
        per_key(hashes, &mut results, &mut out);
        let want = out.clone();
        index.query_threshold_into(hashes, threshold.unpruned(), &mut scores, &mut out);
        assert_eq!(out, want, "score disagrees with per-key-count");
        index.query_threshold_into(hashes, threshold, &mut scores, &mut out);
        assert_eq!(out, want, "score-pruned disagrees with per-key-count");
    }
    let pass = |f: &mut dyn FnMut(&[KeyHash]) -> usize| {
        let start = Instant::now();
        let n: usize = queries.iter().map(|h| f(h)).sum();
        std::hint::black_box(n);
        start.elapsed()
    };
    let mut best = [Duration::MAX; 4];
    for _ in 0..rounds {
        best[0] = best[0].min(pass(&mut |h| per_key(h, &mut results, &mut out)));
        best[1] = best[1].min(pass(&mut |h| {
            index.query_batch_hashes(h, &mut results);
            results.total_matches()
        }));
        best[2] = best[2].min(pass(&mut |h| {
            index.query_threshold_into(h, threshold.unpruned(), &mut scores, &mut out);
            out.len()
        }));
        best[3] = best[3].min(pass(&mut |h| {
            index.query_threshold_into(h, threshold, &mut scores, &mut out);
            out.len()
        }));
    }
    let ns = |d: Duration| d.as_nanos() as f64 / (n_queries * q) as f64;
    let [pk, b, s, pr] = best.map(ns);
    println!(
        "N {filters} m {m} k {k} d {density} {} q {q}: per-key-count {pk:.0} batched {b:.0} score {s:.1} pruned {pr:.1} ns/key | pk/score {:.2} pk/pruned {:.1} score/batched {:.2}",
        index.kernels().backend(),
        pk / s,
        pk / pr,
        s / b
    );
}

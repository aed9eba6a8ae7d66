//! Exploration helper for pruned scoring on *drawn* queries: queries most of
//! whose keys one filter holds (95% of them, the rest random), as a read
//! from a sample in the index is. Such a query keeps its filter's chunk live
//! to the end, so pruning saves only the other chunks' rows and the checks
//! cost what they cost. The index is that of `scoreprobe` (random
//! half-full filters, `full` shape). Every query is scored unpruned and
//! pruned at threshold 0.8; both must give the same answers, then both are
//! timed (best of the repeats), or counted under callgrind:
//!
//! ```text
//! cargo build --release -p bloomslice-bench --example drawnprobe
//! target/release/examples/drawnprobe 1000 100 50 200
//! BLOOMSLICE_KERNELS=avx2 valgrind --tool=callgrind \
//!     --toggle-collect='*drawnprobe::measure_pruned*' \
//!     target/release/examples/drawnprobe 1000 1000 1 20
//! ```
//!
//! Arguments: filters, keys per query, repeats, queries (default 200), and
//! the percentage of a query's keys its filter holds (default 95; near 80,
//! the threshold, a query's filter stays close to the pruning bound; 0
//! gives `multi`'s *random* queries, of keys no filter was built with).
//!
//! Each pruned pass follows an unpruned one, which reads every key's rows
//! and so leaves few of the pruned pass's rows in the second-level cache:
//! its timings are taken cold, as `multi`'s are (its engines run in turn).
//! `scoreprobe` repeats pruned passes back to back, and at `N = 1 000` its
//! 100 random queries read 2.1 MB of rows (24 keys each), about what a
//! 2 MiB second-level cache holds, so its pruned figures there are warm and
//! lower than this example's (`HELD` 0) or `multi`'s (`bench/RESULTS.md`,
//! section "Scoring").

use std::hint::black_box;
use std::time::Instant;

use bloomslice::{BloomFilter, KeyHash, Scores, SlicedConfig, SlicedIndex, Threshold};
use bloomslice_bench::multi::score_queries;
use bloomslice_bench::workload::{params, random_full_filters};

/// Defines `$name`: [`score_queries`] at the threshold `$threshold`
/// derives from the given one `$given`, a symbol of its own for
/// callgrind's toggle (the two below have the same signature).
macro_rules! measure {
    ($(#[$doc:meta])* $name:ident, |$given:ident| $threshold:expr) => {
        $(#[$doc])*
        #[inline(never)]
        fn $name(
            index: &SlicedIndex,
            queries: &[Vec<KeyHash>],
            $given: Threshold,
            scores: &mut Scores,
            out: &mut Vec<(u64, u32)>,
        ) -> usize {
            score_queries(index, queries, $threshold, scores, out)
        }
    };
}

measure!(
    /// [`score_queries`] unpruned.
    measure_unpruned,
    |threshold| threshold.unpruned()
);
measure!(
    /// [`score_queries`] pruned.
    measure_pruned,
    |threshold| threshold
);

/// The integer argument `i`, at least `least` (or `default`), or a
/// one-line error.
fn arg(args: &[String], i: usize, name: &str, least: usize, default: Option<usize>) -> usize {
    match (args.get(i), default) {
        (None, Some(d)) => d,
        (Some(s), _) => match s.parse() {
            Ok(n) if n >= least => n,
            _ if least == 0 => fail(&format!("{name} must be a non-negative integer, not {s:?}")),
            _ => fail(&format!("{name} must be a positive integer, not {s:?}")),
        },
        (None, None) => fail(&format!("missing {name}; usage: drawnprobe FILTERS KEYS REPEATS [QUERIES] [HELD]")),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("drawnprobe: {message}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let filters = arg(&args, 1, "FILTERS", 1, None);
    let per_query = arg(&args, 2, "KEYS", 1, None);
    let repeats = arg(&args, 3, "REPEATS", 1, None);
    let n_queries = arg(&args, 4, "QUERIES", 1, Some(200));
    let held_percent = arg(&args, 5, "HELD", 0, Some(95));
    if held_percent > 100 {
        fail(&format!("HELD is a percentage, not {held_percent}"));
    }
    let p = params();
    let (built, _, _) = random_full_filters(filters, 10, 11);
    let mut index = SlicedIndex::with_config(p, SlicedConfig::default());
    index.reserve(built.len()).expect("memory for the index");
    let refs: Vec<(u64, &BloomFilter)> = built.iter().enumerate().map(|(i, f)| (i as u64, f)).collect();
    index.insert_filters(&refs).expect("filters of the index's parameters");
    // xorshift64: fixed, so that runs compare.
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let held = per_query * held_percent / 100;
    let queries: Vec<Vec<KeyHash>> = (0..n_queries)
        .map(|_| {
            let filter = &built[(next() % filters as u64) as usize];
            // Key `i` is one the filter holds while `held * (i + 1) /
            // per_query` grows: the random keys spread evenly through the
            // query, as `multi`'s replaced keys are.
            (0..per_query)
                .map(|i| {
                    if held * (i + 1) / per_query > held * i / per_query {
                        loop {
                            let key = next().to_le_bytes();
                            if filter.contains(&key) {
                                break p.hash(&key);
                            }
                        }
                    } else {
                        p.hash(&next().to_le_bytes())
                    }
                })
                .collect()
        })
        .collect();
    let threshold = Threshold::fraction(0.8).expect("a valid fraction");
    let (mut scores, mut out) = (Scores::new(), Vec::new());
    let unpruned = measure_unpruned(&index, &queries, threshold, &mut scores, &mut out);
    let pruned = measure_pruned(&index, &queries, threshold, &mut scores, &mut out);
    assert_eq!(unpruned, pruned, "pruning changed the answers");
    let keys = (n_queries * per_query) as f64;
    let (mut best_unpruned, mut best_pruned) = (f64::MAX, f64::MAX);
    for _ in 0..repeats {
        let start = Instant::now();
        let got = measure_unpruned(black_box(&index), black_box(&queries), threshold, &mut scores, &mut out);
        best_unpruned = best_unpruned.min(start.elapsed().as_secs_f64() * 1e9 / keys);
        assert_eq!(got, unpruned, "a repeat gave another answer");
        let start = Instant::now();
        let got = measure_pruned(black_box(&index), black_box(&queries), threshold, &mut scores, &mut out);
        best_pruned = best_pruned.min(start.elapsed().as_secs_f64() * 1e9 / keys);
        assert_eq!(got, pruned, "a repeat gave another answer");
    }
    println!(
        "{filters} filters, {} kernels, {n_queries} drawn {per_query}-key queries ({held_percent}% held): {unpruned} reported; \
         unpruned {best_unpruned:.1}, pruned {best_pruned:.1} ns per key (pruned / unpruned {:.2})",
        index.kernels().backend(),
        best_pruned / best_unpruned
    );
}

//! The flat collection against the levels: build time, memory against the
//! per-set optimum, false sets per absent key, and single-key time with
//! present and absent keys timed apart.
//!
//! - `levelprobe lists DIR` (default `/var/lib/dpkg/info`): one set per
//!   `DIR/*.list`. Present keys are drawn as `paper query --workload
//!   skewed` draws them (a set, then one of its keys: on the package lists
//!   often a directory held by hundreds of sets) and, apart, every distinct
//!   key once (as the HIBF harness in `bench/peers/hibf` asks).
//! - `levelprobe synthetic N`: `N` sets of log-normal sizes shaped like the
//!   package lists (`paper query --workload skewed`'s), distinct keys.
//!
//! `cargo run --release -p bloomslice-bench --example levelprobe -- synthetic 1000000`

use std::time::Instant;

use bloomslice::{KeyHash, LayoutConfig, LevelConfig, LevelIndex, SetIndex};
use bloomslice_bench::skewed::{Sizes, SkewedArgs, list_sets, make_queries, synthetic_sets};

/// Best of 3 passes, ns per key, and the ids answered per key.
fn time(hashes: &[KeyHash], mut query: impl FnMut(KeyHash, &mut Vec<u64>)) -> (f64, f64) {
    let mut out = Vec::new();
    let mut best = f64::INFINITY;
    let mut answers = 0usize;
    for _ in 0..3 {
        answers = 0;
        let start = Instant::now();
        for &h in hashes {
            query(h, &mut out);
            answers += out.len();
        }
        best = best.min(start.elapsed().as_secs_f64() * 1e9 / hashes.len().max(1) as f64);
    }
    (best, answers as f64 / hashes.len().max(1) as f64)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sets = match args.first().map(String::as_str) {
        Some("synthetic") => {
            let n: usize = args.get(1).ok_or("synthetic needs N")?.parse()?;
            let shape = SkewedArgs {
                sizes: Sizes::Lognormal,
                median: 18.0,
                p90: 200.0,
                max_size: 50_576,
                set_size: 10_000,
                lists: None,
                fp: 0.01,
                rounds: 1,
                score_queries: 0,
                score_keys: 100,
            };
            synthetic_sets(&shape, n, 42)
        }
        Some("lists") | None => list_sets(args.get(1).map_or("/var/lib/dpkg/info", String::as_str).as_ref())?,
        Some(other) => return Err(format!("unknown source {other}: lists DIR or synthetic N").into()),
    };
    let keys = sets.total_keys();
    let optimum = keys as f64 * 100f64.log2() / core::f64::consts::LN_2 / 8.0;
    println!("{}: {keys} keys, per-set optimum {:.0} bytes at p = 1%", sets.name, optimum);
    let small = keys <= 5_000_000;
    let mut owners = std::collections::HashMap::new();
    if small {
        for (id, keys) in &sets.sets {
            for &h in keys {
                owners.entry(h).or_insert_with(Vec::new).push(*id);
            }
        }
    }
    let queries = make_queries(&sets, &owners, 200_000, 42);
    let (present, absent): (Vec<_>, Vec<_>) = queries.iter().partition(|q| !q.owners.is_empty());
    let present: Vec<KeyHash> = present.iter().map(|q| q.hash).collect();
    let absent: Vec<KeyHash> = absent.iter().map(|q| q.hash).collect();
    // Every distinct key once, as the HIBF harness asks (package lists).
    let distinct: Vec<KeyHash> = owners.keys().copied().collect();

    let start = Instant::now();
    let flat = SetIndex::build(&sets.sets, 0.01, LayoutConfig::default())?;
    let flat_build = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut config = LevelConfig::default();
    if let Ok(columns) = std::env::var("LEVEL_COLUMNS") {
        config.top_columns = columns.parse()?;
    }
    if let Ok(leaf) = std::env::var("LEVEL_LEAF_SETS") {
        config.leaf_sets = leaf.parse()?;
    }
    let levels = LevelIndex::build(&sets.sets, 0.01, config)?;
    let levels_build = start.elapsed().as_secs_f64();
    println!(
        "levels: depth {}, top {:?}, rows {} B; flat: {} parts, rows {} B",
        levels.depth(),
        levels.top_shape(),
        levels.rows_bytes(),
        flat.parts().filter(|p| !p.is_empty()).count(),
        flat.parts().map(|p| p.rows_bytes()).sum::<usize>()
    );
    println!(
        "{:>8} {:>9} {:>12} {:>7} {:>12} {:>12} {:>12} {:>12}",
        "engine", "build s", "memory B", "x opt", "false/absent", "absent ns", "present ns", "distinct ns"
    );
    let row = |name: &str, build: f64, memory: usize, query: &dyn Fn(KeyHash, &mut Vec<u64>)| {
        let (absent_ns, false_sets) = time(&absent, query);
        let (present_ns, _) = time(&present, query);
        let (distinct_ns, _) = time(&distinct, query);
        println!(
            "{name:>8} {build:9.2} {memory:12} {:7.2} {false_sets:12.4} {absent_ns:12.1} {present_ns:12.1} {distinct_ns:12.1}",
            memory as f64 / optimum
        );
    };
    row("flat", flat_build, flat.memory_bytes(), &|h, out| flat.query_hash_into(h, out));
    row("levels", levels_build, levels.memory_bytes(), &|h, out| levels.query_hash_into(h, out));
    Ok(())
}

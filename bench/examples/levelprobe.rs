//! Single-key time of the flat collection and the levels on the package
//! lists (or any directory of list files), with the answer sizes: present
//! keys drawn as `paper query --workload skewed` draws them (a set, then
//! one of its keys), every distinct key once (as the HIBF harness in
//! `bench/peers/hibf` asks), and absent keys, timed apart.
//!
//! `cargo run --release -p bloomslice-bench --example levelprobe -- /var/lib/dpkg/info`

use std::time::Instant;

use bloomslice::{KeyHash, LayoutConfig, LevelConfig, LevelIndex, SetIndex};
use bloomslice_bench::skewed::{list_sets, make_queries};

fn time(name: &str, hashes: &[KeyHash], mut query: impl FnMut(KeyHash, &mut Vec<u64>)) -> f64 {
    let mut out = Vec::new();
    let mut best = f64::INFINITY;
    let mut answers = 0usize;
    for _ in 0..5 {
        let start = Instant::now();
        for &h in hashes {
            query(h, &mut out);
            answers += out.len();
        }
        best = best.min(start.elapsed().as_secs_f64() * 1e9 / hashes.len() as f64);
    }
    println!("{name:>28}: {best:8.1} ns/key, {:.2} ids/key", answers as f64 / 5.0 / hashes.len() as f64);
    best
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "/var/lib/dpkg/info".into());
    let sets = list_sets(dir.as_ref())?;
    let mut owners = std::collections::HashMap::new();
    for (id, keys) in &sets.sets {
        for &h in keys {
            owners.entry(h).or_insert_with(Vec::new).push(*id);
        }
    }
    let queries = make_queries(&sets, &owners, 200_000, 42);
    let (present, absent): (Vec<_>, Vec<_>) = queries.iter().partition(|q| !q.owners.is_empty());
    let present: Vec<KeyHash> = present.iter().map(|q| q.hash).collect();
    let absent: Vec<KeyHash> = absent.iter().map(|q| q.hash).collect();
    // Every distinct key once, as the HIBF harness asks (bench/peers/hibf).
    let distinct: Vec<KeyHash> = owners.keys().copied().collect();
    let flat = SetIndex::build(&sets.sets, 0.01, LayoutConfig::default())?;
    let levels = LevelIndex::build(&sets.sets, 0.01, LevelConfig::default())?;
    println!("levels: depth {}, top {:?}, rows {} B", levels.depth(), levels.top_shape(), levels.rows_bytes());
    for (kind, hashes) in [("present (drawn by set)", &present), ("distinct keys", &distinct), ("absent", &absent)] {
        time(&format!("flat {kind}"), hashes, |h, out| flat.query_hash_into(h, out));
        time(&format!("levels {kind}"), hashes, |h, out| levels.query_hash_into(h, out));
    }
    Ok(())
}

//! The Rust side of the C ABI and Python speed comparison (`bench/RESULTS.md`,
//! section "Bindings"): builds the `full` workload index (m =
//! 100 992, k = 7, 10 000 keys per filter) with N filters, saves it and its
//! query hashes to a directory for the C and Python benchmarks, and times the
//! library's `query_batch` on them as [`Prehashed`] keys (batches of 1024, as
//! `paper` does; converting a caller hash is part of the work, as in C and
//! Python), best of R passes.
//!
//! `cargo run --release -p bloomslice-capi --example capi-bench -- DIR [N] [QUERIES] [R]`
//! prints `rust_ns_per_key <ns> matches <total>`; when `DIR/full.bsi` exists
//! it is reused.

use std::path::PathBuf;

use bloomslice::persist;
use bloomslice::{BatchResults, BloomFilter, Loaded, Prehashed, SetNames, SlicedIndex};
use bloomslice_bench::engines;
use bloomslice_bench::workload::{self, WorkloadKind, WorkloadSpec, key_hash};

fn arg(i: usize, default: usize) -> usize {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).ok_or("usage: capi-bench DIR [N] [QUERIES] [REPEAT]")?);
    let (filters, queries, repeat) = (arg(2, 1000), arg(3, 100_000), arg(4, 7));
    std::fs::create_dir_all(&dir)?;
    let spec = WorkloadSpec::new(WorkloadKind::Full, queries, 42).with_filters(filters);
    let params = workload::params();
    let index_path = dir.join("full.bsi");
    if !index_path.exists() {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let built = engines::build_filters(&spec, params, threads)?;
        let mut index = SlicedIndex::new(params);
        let items: Vec<(u64, &BloomFilter)> = built.iter().map(|(id, f)| (*id, f)).collect();
        index.insert_filters(&items)?;
        let mut names = SetNames::new();
        for (id, _) in &built {
            names.insert(*id, format!("filter-{id}"))?;
        }
        persist::save(&index_path, &index, &names)?;
    }
    // The caller hashes of the query keys: what `Prehashed` / the C and
    // Python hash entry points take.
    let hashes: Vec<u64> = spec.queries().iter().map(|q| key_hash(&params, q.key).h1).collect();
    let bytes: Vec<u8> = hashes.iter().flat_map(|h| h.to_le_bytes()).collect();
    std::fs::write(dir.join("queries.u64"), bytes)?;

    let loaded = Loaded::<SlicedIndex>::load(&index_path)?;
    let keys: Vec<Prehashed> = hashes.iter().map(|&h| Prehashed(h)).collect();
    let mut results = BatchResults::new();
    let (best, matches) = engines::best_of(repeat, || {
        let mut total = 0;
        for chunk in keys.chunks(1024) {
            loaded.index.query_batch(chunk, &mut results);
            total += results.total_matches();
        }
        total
    });
    println!("rust_ns_per_key {:.2} matches {matches}", best.as_secs_f64() * 1e9 / queries as f64);

    // Throughput of 1 and of 2 threads sharing the index (each thread runs
    // 5 passes), alternated so both see the same machine load; best of R.
    let pass = || {
        let mut results = BatchResults::new();
        for _ in 0..5 {
            for chunk in keys.chunks(1024) {
                loaded.index.query_batch(chunk, &mut results);
            }
        }
    };
    let (mut one, mut two) = (0f64, 0f64);
    for _ in 0..repeat {
        for threads in [1usize, 2] {
            let start = std::time::Instant::now();
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(pass);
                }
            });
            let rate = (threads * 5 * queries) as f64 / start.elapsed().as_secs_f64();
            if threads == 1 {
                one = one.max(rate);
            } else {
                two = two.max(rate);
            }
        }
    }
    println!(
        "rust_threads_speedup {:.2} (1 thread {:.2} M keys/s, 2 threads {:.2} M keys/s)",
        two / one,
        one / 1e6,
        two / 1e6
    );
    Ok(())
}

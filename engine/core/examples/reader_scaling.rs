//! Readers of a `ConcurrentIndex` on 1 and 2 threads: single-key queries
//! through `snapshot()` (an `Arc` clone: one shared reference count per
//! query) against the query methods (an arc-swap guard in a per-thread
//! slot). Checks both routes give the same answers, then times them.
//!
//! `cargo run --release -p bloomslice --example reader_scaling`

use std::time::Instant;

use bloomslice::ReadIndex;
use bloomslice::{BloomFilter, BloomParams, ConcurrentIndex, SlicedIndex};

const QUERIES: u64 = 2_000_000;

fn main() -> Result<(), bloomslice::Error> {
    let params = BloomParams::for_capacity(1_000, 0.01)?;
    let mut index = SlicedIndex::new(params);
    for id in 0..64u64 {
        let mut f = BloomFilter::new(params)?;
        for k in 0..1_000u64 {
            f.insert(&(id * 1_000 + k).to_le_bytes());
        }
        index.insert_filter(id, &f)?;
    }
    let shared = ConcurrentIndex::new(index);
    let mut a = Vec::new();
    for k in 0..10_000u64 {
        let key = (k * 7).to_le_bytes();
        shared.query_into(&key, &mut a);
        assert_eq!(a, shared.snapshot().query(&key), "routes disagree on key {k}");
    }
    let run = |threads: u64, guard: bool| -> f64 {
        let start = Instant::now();
        std::thread::scope(|s| {
            for t in 0..threads {
                let shared = &shared;
                s.spawn(move || {
                    let mut out = Vec::new();
                    let mut hits = 0usize;
                    for q in 0..QUERIES {
                        let key = (q * 31 + t).to_le_bytes();
                        if guard {
                            shared.query_into(&key, &mut out);
                        } else {
                            shared.snapshot().query_into(&key, &mut out);
                        }
                        hits += out.len();
                    }
                    std::hint::black_box(hits);
                });
            }
        });
        // Aggregate throughput: queries per second over all threads.
        (threads * QUERIES) as f64 / start.elapsed().as_secs_f64()
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| c.lines().find(|l| l.starts_with("model name")).map(|l| l.to_owned()))
        .unwrap_or_default();
    println!("{cpu}; 64 filters, m = {}, k = {}, {QUERIES} single-key queries per thread", params.m(), params.k());
    println!("{:<10} {:>16} {:>16} {:>8}", "route", "1 thread (q/s)", "2 threads (q/s)", "scaling");
    for (name, guard) in [("snapshot", false), ("guard", true)] {
        let best = |threads| (0..3).map(|_| run(threads, guard)).fold(0.0, f64::max);
        let (one, two) = (best(1), best(2));
        println!("{name:<10} {one:>16.0} {two:>16.0} {:>7.2}x", two / one);
    }
    Ok(())
}

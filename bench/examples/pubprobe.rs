//! The cost of one publish on a shared `ConcurrentIndex` with no readers:
//! on `full` N filters (random half-full, as `paper latency` builds), a
//! writer adds 64 small sets (64 keys each, about 450 bits), adds 64 keys
//! to each, then removes them; each phase is timed per call (the call
//! writes both copies: the op, and the previous op replayed on the other
//! copy) and checked before the next (the sets' keys are found under
//! their ids after the adds, and not after the removes).
//!
//! ```text
//! cargo run --release -p bloomslice-bench --example pubprobe -- 10000 [ROUNDS]
//! ```

use std::time::Instant;

use bloomslice::ReadIndex;
use bloomslice::{BloomFilter, ConcurrentIndex, SlicedConfig};
use bloomslice_bench::workload::{params, random_full_index};

const SETS: u64 = 64;

/// Key `i` of writer set `j`.
fn key(j: u64, i: u64) -> [u8; 8] {
    ((1u64 << 56) + j * 1024 + i).to_le_bytes()
}

/// Set `j`'s keys `from..from + 64`.
fn version(j: u64, from: u64) -> BloomFilter {
    let mut f = BloomFilter::new(params()).expect("valid parameters");
    (from..from + 64).for_each(|i| f.insert(&key(j, i)));
    f
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let rounds: usize = args.next().map_or(Ok(3), |a| a.parse())?;
    if n == 0 || rounds == 0 {
        return Err("N and ROUNDS must be positive".into());
    }
    let (index, _, _, _) = random_full_index(n as usize, 1024, 42, SlicedConfig::default());
    let shared = ConcurrentIndex::new(index);
    // The first writes give each copy its own shards: a one-off copy.
    for _ in 0..2 {
        shared.insert_filter(n, &version(0, 0))?;
        shared.remove_set(n)?;
    }
    println!("publish on full N = {n}, {SETS} sets of 64 keys, us per call (both copies written)");
    let mut out = Vec::new();
    for round in 0..rounds as u64 {
        let mut us = [0f64; 3];
        for j in 0..SETS {
            let v = version(j, 0);
            let t = Instant::now();
            shared.insert_filter(n + j, &v)?;
            us[0] += t.elapsed().as_secs_f64() * 1e6;
        }
        for j in 0..SETS {
            let v = version(j, 64 + round);
            let t = Instant::now();
            shared.update_filter(n + j, &v)?;
            us[1] += t.elapsed().as_secs_f64() * 1e6;
        }
        for j in 0..SETS {
            for i in [0, 63, 64 + round] {
                shared.query_into(&key(j, i), &mut out);
                if !out.contains(&(n + j)) {
                    return Err(format!("set {}: key {i} not found after the adds", n + j).into());
                }
            }
        }
        for j in 0..SETS {
            let t = Instant::now();
            shared.remove_set(n + j)?;
            us[2] += t.elapsed().as_secs_f64() * 1e6;
        }
        for j in 0..SETS {
            shared.query_into(&key(j, 0), &mut out);
            if out.iter().any(|&id| id >= n) {
                return Err(format!("set {}: still found after the removes", n + j).into());
            }
        }
        let per = SETS as f64;
        println!("round {round}: insert {:.1}, update {:.1}, delete {:.1}", us[0] / per, us[1] / per, us[2] / per);
    }
    Ok(())
}

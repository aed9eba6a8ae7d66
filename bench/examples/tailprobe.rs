//! Where a single key's tail comes from: one thread queries distinct random
//! keys inline on a `ConcurrentIndex` (`full` N filters, no writer, nothing
//! else running in the process), each query preceded by a register-only
//! busy loop timed the same way (`spin`, as long as a median query), and
//! every (start, duration) is kept. It prints fine percentiles of both and
//! describes the queries slower than 3x the median: how many, how long,
//! whether the spin beside them was slow too (an interruption of the
//! thread, not the query's own memory), and when they happen within each
//! millisecond and within each 4 ms (a periodic cause such as the kernel's
//! timer tick, `CONFIG_HZ` = 250, clusters in one slot). Answers are checked
//! against the batched query on every key first.
//!
//! ```text
//! cargo run --release -p bloomslice-bench --example tailprobe -- 10000 [QUERIES]
//! ```

use std::collections::BTreeMap;
use std::time::Instant;

use bloomslice::ReadIndex;
use bloomslice::{BatchResults, ConcurrentIndex, SlicedConfig};
use bloomslice_bench::latency::spin;
use bloomslice_bench::workload::random_full_index;

/// The `q` quantile of the durations in `v`.
fn quantile(v: &[(u64, u64)], q: f64) -> u64 {
    let mut d: Vec<u64> = v.iter().map(|x| x.1).collect();
    d.sort_unstable();
    d[((d.len() - 1) as f64 * q) as usize]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let total: usize = args.next().map_or(Ok(2_000_000), |a| a.parse())?;
    if n == 0 || total < 10_000 {
        return Err("N must be positive and QUERIES at least 10 000".into());
    }
    let (index, _, _, keys) = random_full_index(n, 65_536, 42, SlicedConfig::default());
    let shared = ConcurrentIndex::new(index);
    let mut out = Vec::new();
    let mut batch = BatchResults::new();
    shared.query_batch(&keys, &mut batch);
    for (i, key) in keys.iter().enumerate() {
        shared.query_into(key, &mut out);
        if batch.get(i) != Some(&out[..]) {
            return Err(format!("key {i}: the single and batched answers differ").into());
        }
    }
    // The spin as long as a median query.
    let mut x = 12_345u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as usize % keys.len()
    };
    let mut alone: Vec<(u64, u64)> = (0..20_000)
        .map(|_| {
            let key = &keys[next()];
            let t = Instant::now();
            shared.query_into(key, &mut out);
            (0, t.elapsed().as_nanos() as u64)
        })
        .collect();
    let target = quantile(&alone, 0.5).max(1);
    alone.clear();
    let t = Instant::now();
    spin(1_000_000);
    let iters = (1_000_000 * target / (t.elapsed().as_nanos() as u64).max(1)).max(1);
    let (mut q, mut s) = (Vec::with_capacity(total), Vec::with_capacity(total));
    let t0 = Instant::now();
    for _ in 0..total {
        let key = &keys[next()];
        let a = Instant::now();
        spin(iters);
        let b = Instant::now();
        shared.query_into(std::hint::black_box(key), &mut out);
        let c = Instant::now();
        s.push(((a - t0).as_nanos() as u64, (b - a).as_nanos() as u64));
        q.push(((b - t0).as_nanos() as u64, (c - b).as_nanos() as u64));
    }
    println!("full N = {n}, {total} queries, one thread, ns");
    for (name, v) in [("query", &q), ("spin", &s)] {
        let p: Vec<String> = [0.5, 0.9, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999]
            .iter()
            .map(|&f| format!("p{} {}", f * 100.0, quantile(v, f)))
            .collect();
        println!("{name}: {}", p.join(", "));
    }
    let (qt, st) = (3 * quantile(&q, 0.5), 3 * quantile(&s, 0.5));
    let slow: Vec<usize> = (0..total).filter(|&i| q[i].1 > qt).collect();
    let slow_spins = s.iter().filter(|x| x.1 > st).count();
    let pct = |c: usize| c as f64 * 100.0 / total as f64;
    println!("queries over 3x p50 ({qt} ns): {} ({:.3}%)", slow.len(), pct(slow.len()));
    println!("spins over 3x p50 ({st} ns): {slow_spins} ({:.3}%)", pct(slow_spins));
    let beside = slow.iter().filter(|&&i| s[i].1 > st || s.get(i + 1).is_some_and(|x| x.1 > st)).count();
    println!("slow queries with a slow spin just before or after: {beside}");
    let mut by_length = BTreeMap::new();
    for &i in &slow {
        *by_length.entry(q[i].1 / 1000).or_insert(0u32) += 1;
    }
    println!("slow queries by length (us: count): {by_length:?}");
    let mut per_ms = [0u32; 10];
    let mut per_4ms = [0u32; 8];
    for &i in &slow {
        per_ms[((q[i].0 % 1_000_000) / 100_000) as usize] += 1;
        per_4ms[((q[i].0 % 4_000_000) / 500_000) as usize] += 1;
    }
    println!("slow queries by 0.1 ms slot of each ms: {per_ms:?}");
    println!("slow queries by 0.5 ms slot of each 4 ms: {per_4ms:?}");
    Ok(())
}

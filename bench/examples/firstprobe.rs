//! What the first queries after a publish cost: one reader (pinned to core
//! 0) queries distinct random keys inline on a `ConcurrentIndex` (`full` N
//! filters) while a writer (pinned to core 1) wakes 1 000 times a second
//! and, by phase, does nothing (`wake`), publishes with no op (`empty`:
//! the copies swap, nothing is written), or inserts and deletes a 64-key
//! set in turn (`write`). Two more phases have no writer: the reader
//! itself moves between two plain copies of the index every millisecond
//! (`switch`: as a `ConcurrentIndex`'s readers move, with no one warming
//! the copy moved to), and the same with 20 untimed queries of fixed keys
//! on the copy right after each move (`switchwarm`: they bring in its
//! tables, not the next keys' rows).
//!
//! Each query is filed by how many queries the reader ran since the last
//! publish (or move): 1st, 2nd, 3rd, 4th to 8th, and the rest; `ids` is
//! the mean answer's length. The time a cache line takes between cores 0
//! and 1 is printed before and after: it says where the machine placed the
//! two threads (sharing a core, on one die, or on two). Answers of the
//! base sets are checked against a batched query first; during the run
//! every answer must hold the base answer's ids.
//!
//! ```text
//! cargo run --release -p bloomslice-bench --example firstprobe -- 10000 [SECONDS]
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use bloomslice::ReadIndex;
use bloomslice::{BatchResults, BloomFilter, ConcurrentIndex, SlicedConfig};
use bloomslice_bench::latency::Pacer;
use bloomslice_bench::workload::random_full_index;

/// The writer's action at each wake-up.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Wake,
    Empty,
    Write,
    /// No writer: the reader itself moves between two plain copies of the
    /// index every millisecond (no `ConcurrentIndex`, no other thread).
    Switch,
    /// `Switch`, with [`WARM_KEYS`] untimed queries of fixed keys on the
    /// copy moved to, right after each move: they bring in what every
    /// query reads (the copy's used-column bitmap and column ids), not the
    /// next keys' rows.
    SwitchWarm,
}

/// Untimed queries after each move of [`Phase::SwitchWarm`].
const WARM_KEYS: usize = 20;

/// One cache line's trip between cores 0 and 1, ns: two pinned threads
/// pass a counter back and forth 1 000 000 times. Where the machine
/// places the two virtual CPUs (one die or two) sets how far the writer's
/// caches are from the reader's.
fn transfer_ns(pin: &(impl Fn(usize) + Sync)) -> f64 {
    const TRIPS: u64 = 1_000_000;
    let flag = AtomicU64::new(0);
    let t = std::thread::scope(|scope| {
        scope.spawn(|| {
            pin(1);
            for i in (1..2 * TRIPS).step_by(2) {
                while flag.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
                flag.store(i + 1, Ordering::Release);
            }
        });
        pin(0);
        let t = Instant::now();
        for i in (0..2 * TRIPS).step_by(2) {
            flag.store(i + 1, Ordering::Release);
            while flag.load(Ordering::Acquire) != i + 2 {
                std::hint::spin_loop();
            }
        }
        t.elapsed()
    });
    t.as_nanos() as f64 / (2 * TRIPS) as f64
}

/// Sorted latencies' `q` quantile.
fn quantile(v: &mut [u64], q: f64) -> u64 {
    v.sort_unstable();
    v.get(((v.len().max(1) - 1) as f64 * q) as usize).copied().unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let seconds: f64 = args.next().map_or(Ok(3.0), |a| a.parse())?;
    if n == 0 || !(seconds > 0.0 && seconds.is_finite()) {
        return Err("N must be positive and SECONDS a positive number".into());
    }
    let (index, filters, _, keys) = random_full_index(n, 65_536, 42, SlicedConfig::default());
    let params = *filters[0].params();
    let mut copies = [index.clone(), index.clone()];
    for c in &mut copies {
        c.insert_filter(n as u64 + 1, &BloomFilter::new(*index.params())?)?;
        c.remove_set(n as u64 + 1)?;
    }
    println!(
        "rows on huge pages (MB): index {:.1}, copies {:.1} / {:.1}",
        index.huge_page_bytes() as f64 / 1e6,
        copies[0].huge_page_bytes() as f64 / 1e6,
        copies[1].huge_page_bytes() as f64 / 1e6
    );
    let shared = ConcurrentIndex::new(index);
    let mut batch = BatchResults::new();
    shared.query_batch(&keys, &mut batch);
    let expected: Vec<Vec<u64>> = (0..keys.len()).map(|i| batch.get(i).unwrap_or(&[]).to_vec()).collect();
    let mut set = BloomFilter::new(params)?;
    for i in 0..64u64 {
        set.insert(&(u64::MAX - i).to_le_bytes());
    }
    // Give each copy its own shards before timing.
    let extra = n as u64 + 1;
    for _ in 0..2 {
        shared.insert_filter(extra, &set)?;
        shared.remove_set(extra)?;
    }
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let pin = |i: usize| {
        if let Some(&c) = cores.get(i % cores.len().max(1)) {
            core_affinity::set_for_current(c);
        }
    };
    println!("firstprobe: full N = {n}, writer at 1 000/s, {seconds} s a phase; ns per query by rank after a publish");
    println!("a line between cores 0 and 1: {:.1} ns", transfer_ns(&pin));
    println!(
        "{:<10} {:>9} {:>26} {:>26} {:>26} {:>26} {:>26} {:>6}",
        "phase", "publishes", "1st p50/p90/p99", "2nd", "3rd", "4th-8th", "rest", "ids"
    );
    for phase in [Phase::Wake, Phase::Empty, Phase::Write, Phase::Switch, Phase::SwitchWarm].repeat(2) {
        let stop = AtomicBool::new(false);
        let published = AtomicU64::new(0);
        let mut ranks: [Vec<u64>; 5] = Default::default();
        let mut failure = None;
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| -> Result<u64, bloomslice::Error> {
                pin(1);
                let mut pacer = Pacer::new(1_000);
                let mut present = false;
                let mut made = 0;
                while pacer.next(&stop) {
                    match phase {
                        Phase::Wake | Phase::Switch | Phase::SwitchWarm => continue,
                        Phase::Empty => {
                            shared.apply(Vec::new());
                        }
                        Phase::Write => {
                            if present {
                                shared.remove_set(extra)?
                            } else {
                                shared.insert_filter(extra, &set)?
                            }
                            present = !present;
                        }
                    }
                    made += 1;
                    published.fetch_add(1, Ordering::Release);
                }
                if present {
                    shared.remove_set(extra)?;
                }
                Ok(made)
            });
            pin(0);
            let mut out = Vec::new();
            let mut answers = 0usize;
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let (mut seen, mut rank) = (published.load(Ordering::Acquire), 0usize);
            let t0 = Instant::now();
            while t0.elapsed().as_secs_f64() < seconds {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = x as usize % keys.len();
                let switching = matches!(phase, Phase::Switch | Phase::SwitchWarm);
                let now = if switching { t0.elapsed().as_millis() as u64 } else { published.load(Ordering::Acquire) };
                if now != seen {
                    (seen, rank) = (now, 0);
                    if phase == Phase::SwitchWarm {
                        for key in &keys[..WARM_KEYS] {
                            copies[(now % 2) as usize].query_into(key, &mut out);
                        }
                    }
                }
                let t = Instant::now();
                if switching {
                    copies[(now % 2) as usize].query_into(std::hint::black_box(&keys[i]), &mut out);
                } else {
                    shared.query_into(std::hint::black_box(&keys[i]), &mut out);
                }
                let ns = t.elapsed().as_nanos() as u64;
                if !expected[i].iter().all(|id| out.contains(id)) {
                    failure = Some(format!("key {i}: a base id is missing from the answer"));
                    break;
                }
                rank += 1;
                answers += out.len();
                ranks[match rank {
                    1 => 0,
                    2 => 1,
                    3 => 2,
                    4..=8 => 3,
                    _ => 4,
                }]
                .push(ns);
            }
            stop.store(true, Ordering::Relaxed);
            let total: usize = ranks.iter().map(Vec::len).sum();
            let ids = answers as f64 / total.max(1) as f64;
            match writer.join() {
                Ok(Ok(made)) => {
                    let cell = |v: &mut Vec<u64>| {
                        let (a, b, c) = (quantile(v, 0.5), quantile(v, 0.9), quantile(v, 0.99));
                        format!("{}: {a}/{b}/{c}", v.len())
                    };
                    let cells: Vec<String> = ranks.iter_mut().map(cell).collect();
                    println!(
                        "{:<10} {:>9} {:>26} {:>26} {:>26} {:>26} {:>26} {:>6.1}",
                        format!("{phase:?}").to_lowercase(),
                        made,
                        cells[0],
                        cells[1],
                        cells[2],
                        cells[3],
                        cells[4],
                        ids
                    );
                }
                Ok(Err(e)) => failure = Some(format!("writer: {e}")),
                Err(_) => failure = Some("the writer panicked".into()),
            }
        });
        if let Some(f) = failure {
            return Err(f.into());
        }
    }
    println!("a line between cores 0 and 1: {:.1} ns", transfer_ns(&pin));
    Ok(())
}

//! `paper latency`: single-key latency as a service sees it. `T` reader
//! threads query one key at a time, inline, on a shared
//! [`ConcurrentIndex`] (`full` shape: random half-full filters, half of the
//! keys present), while one writer thread adds, updates and removes sets
//! at a fixed rate. Every query's latency goes into an HdrHistogram; so
//! do two controls taken in the same loop (control, control, query, ...),
//! so the machine's own scheduling and timer noise is measured under the
//! same load as the queries: `empty`, the timer around nothing (the
//! timer's own cost and jitter), and `spin`, the timer around a register-only
//! busy loop calibrated to the queries' median time without the writer (a
//! window as long as a query, so it is hit by interrupts and preemption as
//! often as a query is: on a shared machine that sets the tail), and
//! with `--memory-control`, `lines`, the timer around the memory reads of
//! one key with no engine ([`read_key_runs`]: `k` runs of the index's run
//! length at random places of a buffer as large as the index, on huge
//! pages as the index's rows are): the memory's own spread, which a
//! query's tail cannot be below. One phase per writer rate (0 = no
//! writer), then the same phases through [`QueryPool`] single-key
//! submissions (`submit` and `wait`, workers answering) for comparison.
//!
//! Inline readers run pinned to cores `0..T` and the writer to the next
//! core unless `--no-pin`. With the writer, each query is also counted as
//! *during* a publish (the writer's call was running when it started or
//! ended, or ran whole inside it) or *between* publishes, and each publish
//! is timed by its op (insert, update, delete): what the writer costs the
//! readers, and when.
//!
//! # What the readers check
//!
//! The writer only touches its own sets (ids from `N` on, [`VOLATILE`] of
//! them); the `N` base sets never change. So for every query, timed or
//! not, the base ids of the answer must be exactly those of the static
//! index (checked as count, sum and XOR of ids, cheap enough to do on
//! every query), and each of the writer's ids in an answer must be a set
//! whose every version could hold the key: each writer set draws its keys
//! from its own universe, and the filter of the whole universe must
//! contain the key (a version is a subset of it, bit by bit). The static
//! answers are themselves checked against the naive index (a list of the
//! filters) on a sample of keys before anything is timed. One key in 16
//! comes from a writer set's universe, so the writer's sets do appear in
//! answers. Any wrong answer fails the run.
//!
//! ```text
//! paper latency --filters 10000 --rates 0,100,1000 --seconds 3
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bloomslice::ReadIndex;
use bloomslice::storage::Words;
use bloomslice::{
    BatchResults, BloomFilter, ConcurrentIndex, KeyHash, PoolConfig, PoolResults, QueryPool, SlicedConfig, Workers,
};
use hdrhistogram::Histogram;
use rayon::prelude::*;
use serde::Serialize;

use crate::experiment::BenchError;
use crate::roofline::read_key_runs;
use crate::workload::{params, random_full_index, xorshift64};

/// Sets the writer adds, updates and removes (ids `N..N + VOLATILE`).
pub const VOLATILE: usize = 64;

/// Keys in each writer set's universe; a version holds a window of
/// [`VERSION_KEYS`] of them.
const UNIVERSE_KEYS: u64 = 256;

/// Keys per version of a writer set.
const VERSION_KEYS: u64 = 64;

/// Keys the static answers are checked against the naive index on.
const NAIVE_SAMPLE: usize = 2_000;

/// Command-line options of `paper latency`.
#[derive(clap::Args, Clone, Debug)]
pub struct LatencyArgs {
    /// Base sets (filters) in the index.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub filters: u64,
    /// Reader threads [default: cores - 1, at least 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub readers: Option<u32>,
    /// Writer publishes per second, comma separated; 0 is a phase without
    /// the writer.
    #[arg(long, value_delimiter = ',', default_value = "0,100,1000")]
    pub rates: Vec<u32>,
    /// Seconds each phase is recorded for.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Distinct query keys (half present in a base set).
    #[arg(long, default_value_t = 65_536, value_parser = clap::value_parser!(u64).range(64..=10_000_000))]
    pub keys: u64,
    /// Seed of the filters, keys and writer.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Skip the `QueryPool` phases.
    #[arg(long)]
    pub no_pool: bool,
    /// Also time the `lines` control (one key's row reads with no engine)
    /// in the readers' loop. Its reads share the caches with the queries',
    /// so queries run slower beside it: off by default.
    #[arg(long)]
    pub memory_control: bool,
    /// Leave the threads unpinned. By default the inline readers run on
    /// cores `0..T` and the writer on the next core, as a latency-sensitive
    /// service places its threads; the pool phases never pin their readers
    /// (the pool pins its own workers).
    #[arg(long)]
    pub no_pin: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON rows to this file.
    #[arg(long)]
    pub json_out: Option<std::path::PathBuf>,
}

/// Percentiles of one histogram, in nanoseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Percentiles {
    /// Samples recorded.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest sample.
    pub max: u64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Self {
        Percentiles {
            count: h.len(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// Publish times by op, ns.
#[derive(Clone, Debug, Serialize)]
pub struct PublishOps {
    /// Adding a set (`insert_filter`).
    pub insert: Percentiles,
    /// Adding keys to a set (`update_filter`).
    pub update: Percentiles,
    /// Removing a set (`remove_set`).
    pub delete: Percentiles,
}

/// One phase of the run.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyRow {
    /// `inline` (readers call `ConcurrentIndex::query_into`) or `pool`
    /// (readers submit one key to a `QueryPool` and wait).
    pub mode: String,
    /// Reader threads.
    pub readers: usize,
    /// Pool workers (0 for `inline`).
    pub workers: usize,
    /// Whether the readers and the writer were pinned to cores.
    pub pinned: bool,
    /// Base sets.
    pub filters: usize,
    /// Publishes per second asked of the writer (0: no writer).
    pub rate: u32,
    /// Publishes the writer made per second.
    pub published_per_s: f64,
    /// Queries per second made by all readers together, in loops that also
    /// time the controls and check every answer.
    pub queries_per_s: f64,
    /// Queries per second the readers would make doing nothing else:
    /// readers x 1e9 / the mean query latency.
    pub busy_queries_per_s: f64,
    /// Query latency, ns (one timer's overhead included, as in `control`).
    pub query: Percentiles,
    /// The timer around an empty query, ns.
    pub control: Percentiles,
    /// The timer around a busy loop as long as a median query, ns.
    pub spin: Percentiles,
    /// The timer around one key's row reads with no engine (`k` random
    /// runs of the index's run length in a buffer of its size), ns; only
    /// with `--memory-control`.
    pub lines: Option<Percentiles>,
    /// Time of one publish (the writer's call), ns.
    pub publish: Option<Percentiles>,
    /// Publish time by the writer's op, ns (with the writer).
    pub publish_by_op: Option<PublishOps>,
    /// Latency of the queries that overlapped a publish (the writer's
    /// call was running when the query started or ended, or ran whole
    /// within it), ns (with the writer).
    pub query_during_publish: Option<Percentiles>,
    /// Latency of the other queries, ns (with the writer).
    pub query_between_publishes: Option<Percentiles>,
    /// Of those between publishes, the first query after a publish ended
    /// (the first to read the copy the writer just published), ns (with
    /// the writer).
    pub query_first_after_publish: Option<Percentiles>,
    /// Answers naming one of the writer's sets (checked against its universe).
    pub writer_ids_seen: u64,
    /// CPU model.
    pub cpu: String,
    /// Kernel backend.
    pub kernels: String,
}

/// The expected base answer of a key: count, sum and XOR of its base ids.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Digest {
    count: u64,
    sum: u64,
    xor: u64,
}

impl Digest {
    fn add(&mut self, id: u64) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(id);
        self.xor ^= id;
    }
}

/// What every reader shares.
struct World {
    shared: ConcurrentIndex,
    keys: Vec<[u8; 8]>,
    hashes: Vec<KeyHash>,
    expected: Vec<Digest>,
    /// Filter of each writer set's whole universe.
    universes: Vec<BloomFilter>,
    base: u64,
    /// Iterations of [`spin`] that take about a median query.
    spin_iters: u64,
    /// The buffer of the `lines` control: as many bytes as the index (when
    /// asked for).
    lines: Option<Words>,
    /// Odd while the writer's call runs; bumped before and after it, so a
    /// reader that reads it around a query knows whether they overlapped.
    publishing: AtomicU64,
    /// Lines of one run of the index, and runs of one key.
    run_lines: usize,
    runs: usize,
}

impl World {
    /// Checks one answer; returns how many of the writer's ids it named.
    fn check(&self, i: usize, answer: &[u64]) -> Result<u64, BenchError> {
        let mut got = Digest::default();
        let mut writer = 0;
        for &id in answer {
            if id < self.base {
                got.add(id);
            } else {
                let j = (id - self.base) as usize;
                if j >= VOLATILE || !self.universes[j].contains_hash(self.hashes[i]) {
                    return Err(BenchError(format!("key {i}: id {id} was never a set that could hold it")));
                }
                writer += 1;
            }
        }
        if got != self.expected[i] {
            return Err(BenchError(format!("key {i}: base ids {got:?}, expected {:?}", self.expected[i])));
        }
        Ok(writer)
    }
}

/// A register-only busy loop of `iters` steps (no memory traffic): the
/// `spin` control, also used by the `tailprobe` example.
#[inline(never)]
pub fn spin(iters: u64) -> u64 {
    let mut x = std::hint::black_box(1u64);
    for _ in 0..iters {
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(7);
    }
    std::hint::black_box(x)
}

/// Key `i` of writer set `j`'s universe.
fn universe_key(j: usize, i: u64) -> [u8; 8] {
    ((1u64 << 56) + j as u64 * UNIVERSE_KEYS + i).to_le_bytes()
}

/// A version of writer set `j`: a window of its universe.
fn version(j: usize, start: u64) -> BloomFilter {
    let p = params();
    let mut f = BloomFilter::new(p).expect("valid parameters");
    for i in 0..VERSION_KEYS {
        f.insert(&universe_key(j, (start + i) % UNIVERSE_KEYS));
    }
    f
}

/// Builds the index, keys and expected answers (not timed).
fn build(args: &LatencyArgs, log: &mut dyn FnMut(&str)) -> Result<World, BenchError> {
    let n = args.filters as usize;
    log(&format!("building {n} random half-full filters (full shape)"));
    let (index, built, _, mut keys) = random_full_index(n, args.keys as usize, args.seed, SlicedConfig::default());
    let p = *index.params();
    // One key in 16 from a writer set's universe.
    let mut s = args.seed | 1;
    for (i, key) in keys.iter_mut().enumerate() {
        if i % 16 == 15 {
            *key = universe_key(xorshift64(&mut s) as usize % VOLATILE, xorshift64(&mut s) % UNIVERSE_KEYS);
        }
    }
    let hashes: Vec<KeyHash> = keys.iter().map(|k| p.hash(k)).collect();
    let mut results = BatchResults::new();
    index.query_batch(&keys, &mut results);
    let expected: Vec<Digest> = results
        .iter()
        .map(|ids| {
            let mut d = Digest::default();
            ids.iter().for_each(|&id| d.add(id));
            d
        })
        .collect();
    log(&format!("checking {NAIVE_SAMPLE} static answers against the naive index"));
    let step = (keys.len() / NAIVE_SAMPLE).max(1);
    let bad = (0..keys.len()).step_by(step).collect::<Vec<_>>().into_par_iter().find_any(|&i| {
        let mut d = Digest::default();
        built.iter().enumerate().filter(|(_, f)| f.contains_hash(hashes[i])).for_each(|(id, _)| d.add(id as u64));
        d != expected[i]
    });
    if let Some(i) = bad {
        return Err(BenchError(format!("key {i}: the index and the naive index disagree")));
    }
    drop(built);
    let universes = (0..VOLATILE)
        .map(|j| {
            let mut f = BloomFilter::new(p).expect("valid parameters");
            (0..UNIVERSE_KEYS).for_each(|i| f.insert(&universe_key(j, i)));
            f
        })
        .collect();
    // The `lines` control's buffer and shape: the index's size and runs.
    let runs = (p.k() as usize).min(64);
    let line_count = (index.memory_bytes() / 64).max(2);
    let run_lines = (index.bytes_per_query() / runs.max(1) / 64).clamp(1, line_count / 2);
    let lines = if args.memory_control {
        let mut lines = Words::zeroed(line_count * 8).map_err(|e| BenchError(format!("lines control: {e}")))?;
        let mut s = args.seed | 1;
        lines.iter_mut().for_each(|w| *w = xorshift64(&mut s));
        Some(lines)
    } else {
        None
    };
    let shared = ConcurrentIndex::new(index);
    // The first writes give each copy its own shards (a full copy of the
    // shard written): a one-off cost that is not a publish's.
    log("warming the writer (first writes copy the shards)");
    let warm = version(0, 0);
    for _ in 0..2 {
        shared.insert_filter(n as u64, &warm).map_err(|e| BenchError(e.to_string()))?;
        shared.remove_set(n as u64).map_err(|e| BenchError(e.to_string()))?;
    }
    // The spin control: as long as a median query here, alone.
    let mut out = Vec::new();
    let mut times: Vec<u64> = (0..20_000)
        .map(|i| {
            let t = Instant::now();
            shared.query_into(&keys[(i * 7919) % keys.len()], &mut out);
            t.elapsed().as_nanos() as u64
        })
        .collect();
    times.sort_unstable();
    let target = times[times.len() / 2].max(1);
    let mut spin_iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..100 {
            spin(spin_iters);
        }
        if t.elapsed().as_nanos() as u64 / 100 >= target || spin_iters > 1 << 30 {
            break;
        }
        spin_iters *= 2;
    }
    let t = Instant::now();
    for _ in 0..100 {
        spin(spin_iters);
    }
    let per = (t.elapsed().as_nanos() as u64 / 100).max(1);
    spin_iters = (spin_iters * target / per).max(1);
    log(&format!("median query alone {target} ns; spin control of {spin_iters} steps"));
    Ok(World {
        shared,
        keys,
        hashes,
        expected,
        universes,
        base: n as u64,
        spin_iters,
        lines,
        publishing: AtomicU64::new(0),
        run_lines,
        runs,
    })
}

/// The writer: one publish every `1 / rate` seconds until `stop`, cycling
/// add, update and remove over its sets. Returns its publish histograms
/// (all, then insert, update and delete) and how many publishes it made.
fn writer(world: &World, rate: u32, seed: u64, stop: &AtomicBool) -> Result<(Publishes, u64), BenchError> {
    let mut h = [histogram()?, histogram()?, histogram()?, histogram()?];
    let mut pacer = Pacer::new(rate);
    let mut present = [false; VOLATILE];
    let mut updated = [false; VOLATILE];
    let mut s = seed | 1;
    let mut op = 0usize;
    while pacer.next(stop) {
        let j = op % VOLATILE;
        op += 1;
        let id = world.base + j as u64;
        let v = version(j, xorshift64(&mut s) % UNIVERSE_KEYS);
        world.publishing.fetch_add(1, Ordering::SeqCst);
        let t = Instant::now();
        let (result, kind) = match (present[j], updated[j]) {
            (false, _) => (world.shared.insert_filter(id, &v), 1),
            (true, false) => (world.shared.update_filter(id, &v), 2),
            (true, true) => (world.shared.remove_set(id), 3),
        };
        let ns = t.elapsed().as_nanos() as u64;
        world.publishing.fetch_add(1, Ordering::SeqCst);
        result.map_err(|e| BenchError(format!("writer, set {id}: {e}")))?;
        (present[j], updated[j]) = match (present[j], updated[j]) {
            (false, _) => (true, false),
            (true, false) => (true, true),
            (true, true) => (false, false),
        };
        for i in [0, kind] {
            h[i].record(ns.max(1)).map_err(|e| BenchError(e.to_string()))?;
        }
    }
    let published = h[0].len();
    // Leave no writer set behind for the next phase's static checks to
    // trip over: they only accept ids of the writer's universe anyway,
    // but a clean start makes phases comparable.
    for (j, &p) in present.iter().enumerate() {
        if p {
            world.shared.remove_set(world.base + j as u64).map_err(|e| BenchError(e.to_string()))?;
        }
    }
    Ok((h, published))
}

/// A writer's fixed-rate schedule: [`Pacer::next`] sleeps until the next
/// slot. A late slot moves the schedule: it never bursts to catch up.
pub struct Pacer {
    interval: Duration,
    next_at: Instant,
}

impl Pacer {
    /// `rate` slots a second, the first now.
    pub fn new(rate: u32) -> Self {
        Pacer { interval: Duration::from_secs_f64(1.0 / f64::from(rate.max(1))), next_at: Instant::now() }
    }

    /// Waits for the next slot; `false` (at once or after the sleep) once
    /// `stop` is set.
    pub fn next(&mut self, stop: &AtomicBool) -> bool {
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = Instant::now();
            if now < self.next_at {
                std::thread::sleep(self.next_at - now);
                continue;
            }
            self.next_at = self.next_at.max(now - self.interval) + self.interval;
            return true;
        }
    }
}

fn histogram() -> Result<Histogram<u64>, BenchError> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).map_err(|e| BenchError(e.to_string()))
}

/// The writer's publish times: all, then insert, update and delete.
type Publishes = [Histogram<u64>; 4];

/// What one reader measured.
struct ReaderOut {
    query: Histogram<u64>,
    control: Histogram<u64>,
    spin: Histogram<u64>,
    lines: Histogram<u64>,
    /// Queries that overlapped a publish, and the others.
    during: Histogram<u64>,
    between: Histogram<u64>,
    /// The first query between publishes after each publish (a subset of
    /// `between`).
    first: Histogram<u64>,
    queries: u64,
    writer_ids: u64,
}

/// One reader: control, query, control, query, ... on random keys until
/// `stop`, checking every answer.
fn reader(
    world: &World,
    pool: Option<&QueryPool>,
    seed: u64,
    stop: &AtomicBool,
    started: &AtomicU64,
) -> Result<ReaderOut, BenchError> {
    let (mut query, mut control, mut spun, mut read) = (histogram()?, histogram()?, histogram()?, histogram()?);
    let (mut during, mut between, mut first) = (histogram()?, histogram()?, histogram()?);
    // The writer's publish counter as seen after the previous query.
    let mut seen = world.publishing.load(Ordering::SeqCst);
    let mut out = Vec::with_capacity(4096);
    let mut results = PoolResults::new();
    let mut s = seed | 1;
    let (mut queries, mut writer_ids) = (0u64, 0u64);
    let n = world.keys.len();
    // Warm-up: buffers, the arc-swap slot, the pool's workers.
    for i in 0..256.min(n) {
        world.shared.query_into(&world.keys[i], &mut out);
        if let Some(pool) = pool {
            results = pool
                .submit(&world.shared, &world.keys[i..=i], results)
                .wait()
                .map_err(|e| BenchError(e.to_string()))?;
        }
    }
    started.fetch_add(1, Ordering::SeqCst);
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..64 {
            let i = xorshift64(&mut s) as usize % n;
            let key = &world.keys[i];
            let t = Instant::now();
            std::hint::black_box(key);
            let c = t.elapsed().as_nanos() as u64;
            let t = Instant::now();
            spin(world.spin_iters);
            let sp = t.elapsed().as_nanos() as u64;
            let t = Instant::now();
            if let Some(lines) = &world.lines {
                std::hint::black_box(read_key_runs(lines, world.runs, world.run_lines, xorshift64(&mut s)));
            }
            let rd = t.elapsed().as_nanos() as u64;
            let before = world.publishing.load(Ordering::SeqCst);
            let t = Instant::now();
            let ns = match pool {
                None => {
                    world.shared.query_into(std::hint::black_box(key), &mut out);
                    t.elapsed().as_nanos() as u64
                }
                Some(pool) => {
                    results = pool
                        .submit(&world.shared, core::slice::from_ref(key), results)
                        .wait()
                        .map_err(|e| BenchError(e.to_string()))?;
                    let ns = t.elapsed().as_nanos() as u64;
                    out.clear();
                    out.extend_from_slice(results.get(0).unwrap_or(&[]));
                    ns
                }
            };
            let after = world.publishing.load(Ordering::SeqCst);
            let overlapped = before % 2 == 1 || after != before;
            (if overlapped { &mut during } else { &mut between })
                .record(ns.max(1))
                .map_err(|e| BenchError(e.to_string()))?;
            if !overlapped && before != seen {
                first.record(ns.max(1)).map_err(|e| BenchError(e.to_string()))?;
            }
            seen = after;
            control.record(c.max(1)).map_err(|e| BenchError(e.to_string()))?;
            spun.record(sp.max(1)).map_err(|e| BenchError(e.to_string()))?;
            if world.lines.is_some() {
                read.record(rd.max(1)).map_err(|e| BenchError(e.to_string()))?;
            }
            query.record(ns.max(1)).map_err(|e| BenchError(e.to_string()))?;
            writer_ids += world.check(i, &out)?;
            queries += 1;
        }
    }
    Ok(ReaderOut { query, control, spin: spun, lines: read, during, between, first, queries, writer_ids })
}

/// The cores the threads of a phase are pinned to (reader `r` on
/// `cores[r % len]`, the writer after the readers), or none.
fn pinned(pool: Option<&QueryPool>, args: &LatencyArgs) -> Vec<core_affinity::CoreId> {
    if pool.is_some() || args.no_pin {
        return Vec::new();
    }
    core_affinity::get_core_ids().unwrap_or_default()
}

/// One phase: `readers` readers (inline, or through `pool`) for `seconds`,
/// with the writer at `rate` publishes per second (0: none).
fn phase(
    world: &World,
    pool: Option<&QueryPool>,
    readers: usize,
    rate: u32,
    args: &LatencyArgs,
) -> Result<(ReaderOut, Option<Publishes>, f64), BenchError> {
    let stop = AtomicBool::new(false);
    let started = AtomicU64::new(0);
    let cores = pinned(pool, args);
    let pin = |i: usize| {
        if !cores.is_empty() {
            core_affinity::set_for_current(cores[i % cores.len()]);
        }
    };
    let (outs, wrote, elapsed) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..readers)
            .map(|r| {
                let (stop, started) = (&stop, &started);
                scope.spawn(move || {
                    pin(r);
                    reader(world, pool, args.seed ^ ((r as u64 + 1) * 0x9e37_79b9), stop, started)
                })
            })
            .collect();
        while started.load(Ordering::SeqCst) < readers as u64 && !handles.iter().any(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let writer_handle = (rate > 0).then(|| {
            scope.spawn(|| {
                pin(readers);
                writer(world, rate, args.seed ^ 0x5eed, &stop)
            })
        });
        // This thread wakes rarely: frequent wake-ups here landed on a
        // reader's core often enough to raise its p99.9.
        let t = Instant::now();
        while t.elapsed().as_secs_f64() < args.seconds && !handles.iter().any(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_secs_f64((args.seconds - t.elapsed().as_secs_f64()).clamp(0.0, 0.1)));
        }
        stop.store(true, Ordering::SeqCst);
        let elapsed = t.elapsed().as_secs_f64();
        let outs: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        let wrote = writer_handle.map(|h| h.join());
        (outs, wrote, elapsed)
    });
    let mut total = ReaderOut {
        query: histogram()?,
        control: histogram()?,
        spin: histogram()?,
        lines: histogram()?,
        during: histogram()?,
        between: histogram()?,
        first: histogram()?,
        queries: 0,
        writer_ids: 0,
    };
    for out in outs {
        let out = out.map_err(|_| BenchError("a reader panicked".into()))??;
        total.query.add(&out.query).map_err(|e| BenchError(e.to_string()))?;
        total.control.add(&out.control).map_err(|e| BenchError(e.to_string()))?;
        total.spin.add(&out.spin).map_err(|e| BenchError(e.to_string()))?;
        total.lines.add(&out.lines).map_err(|e| BenchError(e.to_string()))?;
        total.during.add(&out.during).map_err(|e| BenchError(e.to_string()))?;
        total.between.add(&out.between).map_err(|e| BenchError(e.to_string()))?;
        total.first.add(&out.first).map_err(|e| BenchError(e.to_string()))?;
        total.queries += out.queries;
        total.writer_ids += out.writer_ids;
    }
    let (publish, published) = match wrote {
        None => (None, 0),
        Some(w) => {
            let (h, n) = w.map_err(|_| BenchError("the writer panicked".into()))??;
            (Some(h), n)
        }
    };
    Ok((total, publish, published as f64 / elapsed))
}

/// Runs every phase: inline readers, then pool submissions, each without
/// and with the writer at each rate.
pub fn run(args: &LatencyArgs, log: &mut dyn FnMut(&str)) -> Result<Vec<LatencyRow>, BenchError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let readers = args.readers.map_or((cores.saturating_sub(1)).max(1), |r| r as usize);
    let world = build(args, log)?;
    let kernels = world.shared.read(|ix| ix.kernels().backend().name().to_string());
    let cpu = crate::sysinfo::cpu_model();
    let pool = if args.no_pool {
        None
    } else {
        let config = PoolConfig { workers: Workers::Count(readers), ..PoolConfig::default() };
        Some(Arc::new(QueryPool::new(config).map_err(|e| BenchError(format!("pool: {e}")))?))
    };
    let mut rows = Vec::new();
    let modes: Vec<Option<&QueryPool>> = std::iter::once(None).chain(pool.as_deref().map(Some)).collect();
    for mode in modes {
        for &rate in &args.rates {
            let name = if mode.is_some() { "pool" } else { "inline" };
            log(&format!("{name}, {readers} readers, writer at {rate} publishes/s, {:.1} s", args.seconds));
            let (out, publish, published_per_s) = phase(&world, mode, readers, rate, args)?;
            rows.push(LatencyRow {
                mode: name.into(),
                readers,
                workers: if mode.is_some() { readers } else { 0 },
                pinned: !pinned(mode, args).is_empty(),
                filters: args.filters as usize,
                rate,
                published_per_s,
                queries_per_s: out.queries as f64 / args.seconds,
                busy_queries_per_s: readers as f64 * 1e9 / out.query.mean().max(1.0),
                query: Percentiles::of(&out.query),
                control: Percentiles::of(&out.control),
                spin: Percentiles::of(&out.spin),
                lines: world.lines.is_some().then(|| Percentiles::of(&out.lines)),
                publish: publish.as_ref().map(|h| Percentiles::of(&h[0])),
                publish_by_op: publish.as_ref().map(|h| PublishOps {
                    insert: Percentiles::of(&h[1]),
                    update: Percentiles::of(&h[2]),
                    delete: Percentiles::of(&h[3]),
                }),
                query_during_publish: publish.is_some().then(|| Percentiles::of(&out.during)),
                query_between_publishes: publish.is_some().then(|| Percentiles::of(&out.between)),
                query_first_after_publish: publish.is_some().then(|| Percentiles::of(&out.first)),
                writer_ids_seen: out.writer_ids,
                cpu: cpu.clone(),
                kernels: kernels.clone(),
            });
        }
    }
    Ok(rows)
}

/// The rows as a table (microseconds).
pub fn table(rows: &[LatencyRow]) -> String {
    let mut s = String::new();
    if let Some(r) = rows.first() {
        s += &format!(
            "single-key latency, full N = {}, {} readers, {} kernels, {}\n\
             (us; query: the timer around one query; empty: the timer around nothing; spin: the timer around a \
             busy loop as long as a median query; lines (--memory-control): the timer around one key's row reads \
             with no engine; all in one loop)\n",
            r.filters, r.readers, r.kernels, r.cpu
        );
    }
    s += &format!(
        "{:<7} {:>6} {:>7} {:>9} {:>9} {:>30} {:>13} {:>20} {:>20}\n",
        "mode",
        "rate/s",
        "made/s",
        "q/s loop",
        "q/s busy",
        "query p50/p90/p99/p99.9/max",
        "empty p50/p99.9",
        "spin p50/p99/p99.9",
        "lines p50/p99/p99.9"
    );
    let us = |ns: u64| ns as f64 / 1e3;
    for r in rows {
        let (q, c, sp, l) = (&r.query, &r.control, &r.spin, &r.lines);
        s += &format!(
            "{:<7} {:>6} {:>7.0} {:>9.0} {:>9.0} {:>30} {:>13} {:>20} {:>20}\n",
            r.mode,
            r.rate,
            r.published_per_s,
            r.queries_per_s,
            r.busy_queries_per_s,
            format!("{:.2}/{:.2}/{:.2}/{:.2}/{:.0}", us(q.p50), us(q.p90), us(q.p99), us(q.p999), us(q.max)),
            format!("{:.3}/{:.3}", us(c.p50), us(c.p999)),
            format!("{:.2}/{:.2}/{:.2}", us(sp.p50), us(sp.p99), us(sp.p999)),
            l.as_ref().map_or("-".into(), |l| format!("{:.2}/{:.2}/{:.2}", us(l.p50), us(l.p99), us(l.p999))),
        );
    }
    for r in rows {
        if let Some(p) = &r.publish {
            s += &format!(
                "publish ({} at {}/s): p50 {:.1} us, p99 {:.1} us, max {:.1} us; writer sets seen in {} answers\n",
                r.mode,
                r.rate,
                us(p.p50),
                us(p.p99),
                us(p.max),
                r.writer_ids_seen
            );
        }
        if let Some(ops) = &r.publish_by_op {
            let pub_us = |p: &Percentiles| format!("{}: p50 {:.1}, p99 {:.1}", p.count, us(p.p50), us(p.p99));
            s += &format!(
                "  by op (count: us): insert {}; update {}; delete {}\n",
                pub_us(&ops.insert),
                pub_us(&ops.update),
                pub_us(&ops.delete)
            );
        }
        if let (Some(d), Some(b)) = (&r.query_during_publish, &r.query_between_publishes) {
            let q = |p: &Percentiles| {
                format!("{}: {:.2}/{:.2}/{:.2}/{:.2}", p.count, us(p.p50), us(p.p90), us(p.p99), us(p.p999))
            };
            s += &format!("  queries p50/p90/p99/p99.9 (count: us): during a publish {}; between {}\n", q(d), q(b));
            if let Some(f) = &r.query_first_after_publish {
                s += &format!("  first query after each publish (of those between): {}\n", q(f));
            }
        }
    }
    s
}

/// `paper latency`: runs, prints, writes the JSON if asked.
pub fn main(args: &LatencyArgs) -> std::process::ExitCode {
    use std::process::ExitCode;
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        eprintln!("error: --seconds must be a positive number");
        return ExitCode::from(2);
    }
    let mut log = |line: &str| eprintln!("[latency] {line}");
    crate::report::finish_rows(run(args, &mut log), args.json_out.as_deref(), args.json, table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> LatencyArgs {
        LatencyArgs {
            filters: 300,
            readers: Some(1),
            rates: vec![0, 2000],
            seconds: 0.2,
            keys: 4096,
            seed: 3,
            no_pool: false,
            memory_control: true,
            no_pin: false,
            json: false,
            json_out: None,
        }
    }

    #[test]
    fn a_short_run_checks_answers_and_fills_every_row() {
        let rows = run(&tiny(), &mut |_| {}).unwrap();
        assert_eq!(rows.len(), 4);
        for r in &rows {
            assert!(r.query.count > 0 && r.control.count == r.query.count, "{r:?}");
            assert_eq!(r.lines.as_ref().map(|l| l.count), Some(r.query.count), "{r:?}");
            assert!(r.query.p50 <= r.query.p999 && r.query.p999 <= r.query.max);
        }
        assert!(rows[1].publish.as_ref().is_some_and(|p| p.count > 10), "the writer published");
        assert!(rows.iter().map(|r| r.writer_ids_seen).sum::<u64>() > 0, "writer sets were seen");
        assert!(table(&rows).contains("inline"));
        let plain = run(&LatencyArgs { memory_control: false, rates: vec![0], no_pool: true, ..tiny() }, &mut |_| {});
        assert!(plain.unwrap().iter().all(|r| r.lines.is_none()), "no memory control unless asked");
    }

    #[test]
    fn a_wrong_answer_is_caught() {
        let world = build(&LatencyArgs { filters: 200, keys: 256, ..tiny() }, &mut |_| {}).unwrap();
        let mut out = Vec::new();
        world.shared.query_into(&world.keys[0], &mut out);
        world.check(0, &out).unwrap();
        out.push(world.base + VOLATILE as u64);
        assert!(world.check(0, &out).is_err(), "an id that never existed");
        out.pop();
        out.push(if out.contains(&0) { 1 } else { 0 });
        assert!(world.check(0, &out).is_err(), "a base id too many");
    }
}

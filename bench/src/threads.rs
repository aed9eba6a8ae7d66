//! `paper query --threads T[,T...]`: multi-threaded query throughput and
//! latency with [`QueryPool`], against `rayon` (`par_chunks` over the same
//! `query_batch_hashes`) and the single-threaded `query_batch`, all from one
//! run, plus the write cost that chose [`ConcurrentIndex`]'s mechanism.
//!
//! Every engine's answers are checked against the single-threaded
//! `SlicedIndex::query_batch_hashes` on every query before it is timed.
//!
//! ```text
//! paper query --workload full --filters 10000 --threads 1,2 --batch 64,100000
//! paper query --workload full --filters 1000 --threads 2 --batch 64 --latency-only
//! ```
//!
//! Rows: `direct` is `SlicedIndex::query_batch_hashes` on the calling
//! thread; `pool` the [`QueryPool`] with pinned workers, `unpinned` the same
//! without pinning; `rayon` `par_chunks` over `query_batch_hashes` with the
//! pool's split. `split rule` compares splitting a batch by keys and by
//! shards (rayon, merge included). Latency is from submit to result of
//! blocking submissions paced one every `--latency-interval-us`. The
//! `write cost` rows compare [`ConcurrentIndex`] with plain copy-on-write.
//! The figures are in `bench/RESULTS.md`, section "Threads".

use std::time::{Duration, Instant};

use bloomslice::{
    BatchResults, BloomFilter, ConcurrentIndex, KeyHash, PoolConfig, PoolResults, QueryPool, SlicedConfig, SlicedIndex,
    Workers,
};
use hdrhistogram::Histogram;
use rayon::prelude::*;

use crate::engines;
use crate::experiment::BenchError;
use crate::workload::{WorkloadSpec, key_hash};

/// Command-line options of the threads run (flattened into `paper query`).
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct ThreadArgs {
    /// Query workers, comma separated (e.g. `1,2`): runs the multi-threaded
    /// throughput and latency table instead of the engine table. `--batch`
    /// then takes a comma-separated list of batch sizes.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<Vec<u32>>,
    /// Seconds each throughput figure is measured for (best pass reported).
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// Seconds each latency histogram is recorded for.
    #[arg(long, default_value_t = 1.0)]
    pub latency_seconds: f64,
    /// Microseconds between latency submissions (the steady load).
    #[arg(long, default_value_t = 50)]
    pub latency_interval_us: u64,
    /// Skip the throughput table (latency and write cost only).
    #[arg(long)]
    pub latency_only: bool,
    /// `PoolConfig::idle_spin` in microseconds [default: the pool's].
    #[arg(long)]
    pub idle_spin_us: Option<u64>,
    /// `PoolConfig::wait_spin` in microseconds [default: the pool's].
    #[arg(long)]
    pub wait_spin_us: Option<u64>,
    /// `PoolConfig::caller_help_work` (keys x filters) [default: the pool's].
    #[arg(long)]
    pub caller_help_work: Option<usize>,
    /// `PoolConfig::tasks_per_worker` [default: the pool's].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub tasks_per_worker: Option<u32>,
}

/// Everything the threads run needs.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadOptions {
    /// The workload.
    pub spec: WorkloadSpec,
    /// Configuration of the sliced index.
    pub config: SlicedConfig,
    /// Worker counts.
    pub threads: Vec<usize>,
    /// Batch sizes (keys per submission).
    pub batches: Vec<usize>,
    /// Threads for building the filters.
    pub build_threads: usize,
    /// The command-line options.
    pub args: ThreadArgs,
}

/// Runs the threads experiment and returns the report text.
///
/// # Errors
///
/// A wrong answer, an engine error, or a pool that cannot start.
pub fn run_threads(opts: &ThreadOptions, log: &mut dyn FnMut(&str)) -> Result<String, BenchError> {
    let spec = opts.spec;
    let p = spec.params;
    log(&format!(
        "workload {} N={} x {} keys, {} queries",
        spec.kind, spec.filters, spec.keys_per_filter, spec.queries
    ));
    let hashes: Vec<KeyHash> = spec.queries().iter().map(|q| key_hash(&p, q.key)).collect();
    let filters = engines::build_filters(&spec, p, opts.build_threads)?;
    let naive = engines::naive_index(p, filters)?;
    let index = engines::sliced_index(&naive, opts.config)?;
    // For the split-rule rows: the filters dealt into one sub-index per
    // worker, as a split by shards would give each task.
    let split_workers = opts.threads.iter().copied().max().unwrap_or(1);
    let mut subs = Vec::new();
    if !opts.args.latency_only && split_workers > 1 {
        let filters = naive.filters();
        for part in filters.chunks(filters.len().div_ceil(split_workers).max(1)) {
            let mut sub = SlicedIndex::with_config(p, opts.config);
            let refs: Vec<(u64, &BloomFilter)> = part.iter().map(|(id, f)| (*id, f)).collect();
            sub.insert_filters(&refs)?;
            subs.push(sub);
        }
    }
    drop(naive);
    log(&format!("sliced index: {} shards, {} MB", index.shard_count(), index.memory_bytes() >> 20));

    let mut reference = BatchResults::new();
    index.query_batch_hashes(&hashes, &mut reference);
    let expected: Vec<&[u64]> = reference.iter().collect();
    let shared = ConcurrentIndex::new(index.clone());
    let mut out = String::new();
    let defaults = PoolConfig::default();
    let config = |workers: usize, pin: bool| PoolConfig {
        workers: Workers::Count(workers),
        pin,
        idle_spin: opts.args.idle_spin_us.map_or(defaults.idle_spin, Duration::from_micros),
        wait_spin: opts.args.wait_spin_us.map_or(defaults.wait_spin, Duration::from_micros),
        caller_help_work: opts.args.caller_help_work.unwrap_or(defaults.caller_help_work),
        tasks_per_worker: opts.args.tasks_per_worker.map_or(defaults.tasks_per_worker, |t| t as usize),
        ..defaults.clone()
    };
    let pinned =
        |workers: usize, pin: bool| QueryPool::new(config(workers, pin)).map_err(|e| BenchError(format!("pool: {e}")));

    if !opts.args.latency_only {
        out += &format!(
            "throughput, {} N={}, {} queries (Mkeys/s, best pass of {:.1} s)\n",
            spec.kind, spec.filters, spec.queries, opts.args.seconds
        );
        out += &format!(
            "{:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>12} {:>10}\n",
            "batch", "workers", "direct", "pool", "unpinned", "rayon", "pool/1w", "pool/rayon"
        );
        for &batch in &opts.batches {
            let mut direct = BatchResults::new();
            let direct_rate =
                rate(opts.args.seconds, hashes.len(), || engines::batch_pass(&index, &hashes, batch, &mut direct));
            let mut one_worker = None;
            for &workers in &opts.threads {
                let pool = pinned(workers, true)?;
                // Rayon gets the same split as the pool: its task count.
                let tasks = pool.tasks_for(batch);
                let mut results = PoolResults::new();
                check("pool", batch, workers, &hashes, &expected, |chunk, got| {
                    pool.query_batch(&shared, chunk, &mut results).expect("no task panics");
                    got.extend(results.iter().map(<[u64]>::to_vec));
                })?;
                let mut time_pool = |pool: &QueryPool| {
                    rate(opts.args.seconds, hashes.len(), || {
                        hashes
                            .chunks(batch)
                            .map(|chunk| {
                                pool.query_batch(&shared, chunk, &mut results).expect("no task panics");
                                results.total_matches()
                            })
                            .sum()
                    })
                };
                let pool_rate = time_pool(&pool);
                drop(pool);
                // The same pool unpinned: on a loaded machine a pinned worker
                // cannot leave a busy core, so both are shown.
                let unpinned_rate = time_pool(&pinned(workers, false)?);
                let rayon_pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(workers)
                    .build()
                    .map_err(|e| BenchError(format!("rayon: {e}")))?;
                let chunk_len = batch.div_ceil(tasks).max(1);
                let mut parts: Vec<BatchResults> = (0..tasks).map(|_| BatchResults::new()).collect();
                let rayon_batch = |chunk: &[KeyHash], parts: &mut Vec<BatchResults>| {
                    rayon_pool.install(|| {
                        chunk.par_chunks(chunk_len).zip(parts.par_iter_mut()).for_each(|(keys, r)| {
                            index.query_batch_hashes(keys, r);
                        });
                    });
                    chunk.len().div_ceil(chunk_len)
                };
                check("rayon", batch, workers, &hashes, &expected, |chunk, got| {
                    let used = rayon_batch(chunk, &mut parts);
                    got.extend(parts[..used].iter().flat_map(|r| r.iter().map(<[u64]>::to_vec)));
                })?;
                let rayon_rate = rate(opts.args.seconds, hashes.len(), || {
                    hashes
                        .chunks(batch)
                        .map(|chunk| {
                            let used = rayon_batch(chunk, &mut parts);
                            parts[..used].iter().map(BatchResults::total_matches).sum::<usize>()
                        })
                        .sum()
                });
                let base = *one_worker.get_or_insert(pool_rate);
                out += &format!(
                    "{batch:>8} {workers:>8} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>11.2}x {:>9.2}x\n",
                    direct_rate / 1e6,
                    pool_rate / 1e6,
                    unpinned_rate / 1e6,
                    rayon_rate / 1e6,
                    pool_rate / base,
                    pool_rate / rayon_rate
                );
                log(&format!("batch {batch}, {workers} workers done"));
            }
        }
        out += "(pool: pinned workers; pool/1w: pinned pool against the first --threads value; direct: SlicedIndex::query_batch on the calling thread)\n\n";
        if !subs.is_empty() {
            out += &split_rule(&subs, &index, &hashes, &expected, &opts.batches, opts.args.seconds)?;
        }
    }

    out += &format!(
        "latency from submit to result, {} N={}, one submission every {} us for {:.1} s (us)\n",
        spec.kind, spec.filters, opts.args.latency_interval_us, opts.args.latency_seconds
    );
    out += &format!(
        "{:>8} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "workers", "pinned", "keys", "count", "p50", "p99", "p99.9", "max"
    );
    let workers = opts.threads.iter().copied().max().unwrap_or(2);
    for pin in [true, false] {
        let pool = pinned(workers, pin)?;
        for keys in [1usize, 64] {
            let h = latency(&pool, &shared, &hashes, keys, &opts.args)?;
            let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
            out += &format!(
                "{workers:>8} {:>8} {keys:>8} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9.2}\n",
                if pin && !pool.status().pin_refused {
                    "yes"
                } else if pin {
                    "refused"
                } else {
                    "no"
                },
                h.len(),
                us(0.5),
                us(0.99),
                us(0.999),
                h.max() as f64 / 1000.0
            );
        }
    }
    out += "\n";
    out += &write_cost(&index, &shared, log)?;
    Ok(out)
}

/// Keys per second of `pass` (which covers `keys` keys): the best pass
/// within `seconds` (at least two passes).
fn rate(seconds: f64, keys: usize, mut pass: impl FnMut() -> usize) -> f64 {
    let budget = Duration::from_secs_f64(seconds.max(0.0));
    let best = engines::fastest_pass(2, usize::MAX, budget, || engines::timed(|| std::hint::black_box(pass())).1);
    keys as f64 / best.as_secs_f64()
}

/// Checks `run`'s answers for every query, in batches of `batch`.
fn check(
    engine: &str,
    batch: usize,
    workers: usize,
    hashes: &[KeyHash],
    expected: &[&[u64]],
    mut run: impl FnMut(&[KeyHash], &mut Vec<Vec<u64>>),
) -> Result<(), BenchError> {
    let mut got = Vec::with_capacity(hashes.len());
    for chunk in hashes.chunks(batch) {
        run(chunk, &mut got);
    }
    if got.len() != expected.len() {
        return Err(BenchError(format!(
            "{engine} ({workers} workers, batch {batch}): {} answers for {} keys",
            got.len(),
            expected.len()
        )));
    }
    if let Some(i) = got.iter().zip(expected).position(|(a, b)| a.as_slice() != *b) {
        return Err(BenchError(format!("{engine} ({workers} workers, batch {batch}): wrong answer for query {i}")));
    }
    Ok(())
}

/// Submit-to-result latency of `keys`-key batches sent at a steady pace.
fn latency(
    pool: &QueryPool,
    shared: &ConcurrentIndex,
    hashes: &[KeyHash],
    keys: usize,
    args: &ThreadArgs,
) -> Result<Histogram<u64>, BenchError> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).map_err(|e| BenchError(e.to_string()))?;
    let mut results = PoolResults::new();
    let interval = Duration::from_micros(args.latency_interval_us);
    let budget = Duration::from_secs_f64(args.latency_seconds.max(0.0));
    let chunks: Vec<&[KeyHash]> = hashes.chunks(keys).filter(|c| c.len() == keys).collect();
    if chunks.is_empty() {
        return Err(BenchError(format!("need at least {keys} queries for the latency run")));
    }
    // Warm-up: buffers and workers.
    for chunk in chunks.iter().take(100) {
        pool.query_batch(shared, chunk, &mut results).map_err(|e| BenchError(e.to_string()))?;
    }
    let start = Instant::now();
    let mut next = start;
    for chunk in chunks.iter().cycle() {
        if start.elapsed() > budget {
            break;
        }
        // Yield rather than spin while pacing: the workers may need this core.
        while Instant::now() < next {
            std::thread::yield_now();
        }
        next += interval;
        let t = Instant::now();
        pool.query_batch(shared, chunk, &mut results).map_err(|e| BenchError(e.to_string()))?;
        let ns = t.elapsed().as_nanos() as u64;
        h.record(ns.max(1)).map_err(|e| BenchError(e.to_string()))?;
        next = next.max(Instant::now());
    }
    Ok(h)
}

/// What one write costs under each mechanism: the left-right copies of
/// [`ConcurrentIndex`] (no reader holding the standby), and plain
/// copy-on-write (clone the index while a reader holds it, write, drop).
fn write_cost(index: &SlicedIndex, shared: &ConcurrentIndex, log: &mut dyn FnMut(&str)) -> Result<String, BenchError> {
    let p = *index.params();
    let mut filter = BloomFilter::new(p)?;
    for key in 0..1000u64 {
        filter.insert(&key.to_le_bytes());
    }
    let ids: Vec<u64> = index.ids().take(8).collect();
    if ids.is_empty() {
        return Ok(String::new());
    }
    log("write cost");
    let key = |i: usize| KeyHash::from_u64((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    // Warm-up: the first write to each copy unshares its shards once.
    shared.insert_key(ids[0], &key(0))?;
    shared.insert_key(ids[0], &key(1))?;
    let mut out = format!(
        "write cost per write, {} shards of up to {} columns, {} MB (ms; left-right = ConcurrentIndex, \
         copy-on-write = clone the index while a reader holds it, then write):\n",
        index.shard_count(),
        index.config().max_shard_columns,
        index.memory_bytes() >> 20
    );
    for (what, update) in [("insert_key", false), ("update_filter", true)] {
        let writes = 8;
        let start = Instant::now();
        for i in 0..writes {
            if update {
                shared.update_filter(ids[i % ids.len()], &filter)?;
            } else {
                shared.insert_key(ids[i % ids.len()], &key(i + 2))?;
            }
        }
        let left_right = start.elapsed() / writes as u32;
        let reader = shared.snapshot();
        let cow_writes = 3;
        let start = Instant::now();
        for i in 0..cow_writes {
            let mut copy = (*reader).clone();
            if update {
                copy.update_filter(ids[i % ids.len()], &filter)?;
            } else {
                copy.insert_key_hash(ids[i % ids.len()], key(i + 100))?;
            }
            std::hint::black_box(&copy);
        }
        let cow = start.elapsed() / cow_writes as u32;
        out += &format!(
            "  {what:<14} left-right {:>10.3}   copy-on-write {:>10.3}\n",
            left_right.as_secs_f64() * 1e3,
            cow.as_secs_f64() * 1e3
        );
    }
    Ok(out)
}

/// `paper query --threads ...`: runs [`run_threads`] with the common query
/// options and prints the report (the entry point `paper.rs` calls).
pub fn main(
    opts: &crate::experiment::QueryOptions,
    batches: &[u32],
    args: &ThreadArgs,
    log: &mut dyn FnMut(&str),
) -> std::process::ExitCode {
    let threads = args.threads.clone().unwrap_or_default().into_iter().map(|t| t as usize).collect();
    let opts = ThreadOptions {
        spec: opts.spec,
        config: opts.config,
        threads,
        batches: batches.iter().map(|&b| b as usize).collect(),
        build_threads: opts.threads,
        args: args.clone(),
    };
    match run_threads(&opts, log) {
        Ok(report) => {
            print!("{report}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The split rule, measured: `rayon` over the same workers, splitting each
/// batch by keys (each task: a key range against the whole index) or by
/// shards (each task: every key against one sub-index of `1 / W` of the
/// filters, then a merge of every key's ids), merge included.
fn split_rule(
    subs: &[SlicedIndex],
    index: &SlicedIndex,
    hashes: &[KeyHash],
    expected: &[&[u64]],
    batches: &[usize],
    seconds: f64,
) -> Result<String, BenchError> {
    let workers = subs.len();
    let rayon_pool =
        rayon::ThreadPoolBuilder::new().num_threads(workers).build().map_err(|e| BenchError(format!("rayon: {e}")))?;
    let mut out = format!(
        "split rule, rayon with {workers} threads (Mkeys/s)\n{:>8} {:>10} {:>10} {:>12}\n",
        "batch", "by keys", "by shards", "keys/shards"
    );
    let mut parts: Vec<BatchResults> = (0..workers).map(|_| BatchResults::new()).collect();
    let mut merged_ids: Vec<u64> = Vec::new();
    let mut merged_ends: Vec<usize> = Vec::new();
    for &batch in batches {
        let by_keys = |chunk: &[KeyHash], parts: &mut Vec<BatchResults>| {
            let len = chunk.len().div_ceil(workers).max(1);
            rayon_pool.install(|| {
                chunk.par_chunks(len).zip(parts.par_iter_mut()).for_each(|(keys, r)| index.query_batch_hashes(keys, r));
            });
            parts.iter().take(chunk.len().div_ceil(len)).map(BatchResults::total_matches).sum::<usize>()
        };
        let by_shards =
            |chunk: &[KeyHash], parts: &mut Vec<BatchResults>, ids: &mut Vec<u64>, ends: &mut Vec<usize>| {
                rayon_pool.install(|| {
                    subs.par_iter().zip(parts.par_iter_mut()).for_each(|(sub, r)| sub.query_batch_hashes(chunk, r));
                });
                ids.clear();
                ends.clear();
                for i in 0..chunk.len() {
                    for part in parts.iter() {
                        ids.extend_from_slice(part.get(i).unwrap_or_default());
                    }
                    ends.push(ids.len());
                }
                ids.len()
            };
        // Check the shard split's answers (as sets) before timing it.
        let mut start = 0;
        for chunk in hashes.chunks(batch) {
            by_shards(chunk, &mut parts, &mut merged_ids, &mut merged_ends);
            let mut from = 0;
            for (i, &end) in merged_ends.iter().enumerate() {
                let mut got = merged_ids[from..end].to_vec();
                let mut want = expected[start + i].to_vec();
                got.sort_unstable();
                want.sort_unstable();
                if got != want {
                    return Err(BenchError(format!("split by shards: wrong answer for query {}", start + i)));
                }
                from = end;
            }
            start += chunk.len();
        }
        let keys_rate = rate(seconds, hashes.len(), || hashes.chunks(batch).map(|c| by_keys(c, &mut parts)).sum());
        let shards_rate = rate(seconds, hashes.len(), || {
            hashes.chunks(batch).map(|c| by_shards(c, &mut parts, &mut merged_ids, &mut merged_ends)).sum()
        });
        out += &format!(
            "{batch:>8} {:>10.3} {:>10.3} {:>11.2}x\n",
            keys_rate / 1e6,
            shards_rate / 1e6,
            keys_rate / shards_rate
        );
    }
    out += "\n";
    Ok(out)
}

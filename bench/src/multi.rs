//! `paper query --workload multi`: multi-key threshold queries.
//!
//! Filters are those of `full` (10 000 random keys each, `m = 100 992`,
//! `k = 7`). Two query shapes are run: 1 000 queries of 100 keys and 100
//! queries of 1 000 keys, threshold 0.8 of each query's keys. Half of the
//! queries are *drawn*: the keys of one random filter, with 5% of them
//! replaced by random absent keys (so that filter passes with about 95%);
//! the other half are *random* absent keys (no filter passes). Both halves
//! are shuffled together and also timed apart.
//!
//! Engines, each checked against the naive answer on every query it is
//! timed on before it is timed (a wrong answer stops the run):
//!
//! - `naive`: per filter, count the query's keys it contains
//!   (`BloomFilter::contains_positions`); timed on a sample of queries.
//! - `per-key-count`: `query_batch_hashes` of the query's keys, then a
//!   `std::collections::HashMap` from id to count (the CLI's route before
//!   scoring existed).
//! - `batched`: the same `query_batch_hashes` without any counting: not an
//!   answer to the threshold query, but the floor the scoring is measured
//!   against ("score per key vs plain batched per key"). Checked against
//!   the reference's per-key match counts.
//! - `score`: bit-sliced counters, no pruning
//!   (`SlicedIndex::query_threshold_into` with `Threshold::unpruned`).
//! - `score-pruned`: with chunk pruning (`SlicedIndex::query_threshold_into`).
//! - `pool-score-pruned` with 1 and 2 workers:
//!   `QueryPool::query_threshold_batch` over all queries of the shape.
//!
//! The naive answer is computed once, filter-major on every build thread,
//! as per-key id lists ([`Reference::compute`]) summed into exact counts per
//! query.

use std::collections::HashMap;
use std::time::Duration;

use bloomslice::kernels::Kernels;
use bloomslice::{
    BatchResults, BloomFilter, ConcurrentIndex, KeyHash, PoolConfig, QueryPool, Scores, SlicedConfig, SlicedIndex,
    Threshold, ThresholdResults, Workers,
};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::engines::{best_of, build_filters, timed};
use crate::experiment::{BenchError, EngineInfo, Provenance, RowSubject};
use crate::reference::Reference;
use crate::workload::{WorkloadKind, WorkloadSpec, key_hash, params};

/// The threshold of every query, as a fraction of its keys.
pub const THRESHOLD: f64 = 0.8;

/// Share of a drawn query's keys replaced by random absent keys.
pub const REPLACED: f64 = 0.05;

/// Filter checks (queries x keys x filters) the naive engine is timed on
/// per shape; it runs on the first queries up to this much work (at least
/// four).
pub const NAIVE_WORK: usize = 40_000_000;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiOptions {
    /// Number of filters.
    pub filters: usize,
    /// Seed of the filters' keys and of the queries.
    pub seed: u64,
    /// Sliced index configuration.
    pub config: SlicedConfig,
    /// Timed passes per engine (best reported).
    pub repeat: usize,
    /// Threads for building filters and the reference.
    pub threads: usize,
    /// Query shapes: (queries, keys per query).
    pub shapes: Vec<(usize, usize)>,
}

impl MultiOptions {
    /// The workload's shapes: 1 000 x 100 keys and 100 x 1 000 keys.
    pub const SHAPES: [(usize, usize); 2] = [(1000, 100), (100, 1000)];
}

/// Which queries of a shape a row covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryClass {
    /// Every query, drawn and random shuffled together.
    Mixed,
    /// Queries drawn from one filter's keys.
    Drawn,
    /// Queries of random absent keys.
    Random,
}

/// One row of the multi table (one JSON object).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MultiRow {
    /// The engine and the workload (always `multi`).
    #[serde(flatten)]
    pub subject: RowSubject,
    /// Keys per query.
    pub keys_per_query: usize,
    /// Threshold as a fraction of the query's keys.
    pub threshold: f64,
    /// Which queries.
    pub query_class: QueryClass,
    /// The timed queries and their mean time.
    #[serde(flatten)]
    pub timing: MultiTiming,
    /// `per-key-count` time over this engine's time, same shape and class.
    pub ratio_vs_per_key_count: Option<f64>,
    /// This engine's time over `batched`'s, same shape and class.
    pub ratio_vs_batched: Option<f64>,
    /// Queries whose answers were checked before timing.
    pub answers_checked: usize,
    /// Threads that answered the queries.
    pub threads: usize,
    /// The kernels and the bytes the sliced index holds.
    #[serde(flatten)]
    pub engine: EngineInfo,
    /// Workload seed and CPU.
    #[serde(flatten)]
    pub origin: Provenance,
}

/// What a [`MultiRow`] timed: the queries and the mean time per query and
/// per key.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MultiTiming {
    /// Queries the timing covers.
    pub timed_queries: usize,
    /// Mean time per query.
    pub ns_per_query: f64,
    /// Mean time per key (`ns_per_query / keys_per_query`).
    pub ns_per_key: f64,
    /// Queries per second.
    pub queries_per_sec: f64,
}

/// The queries of one shape: keys (hashed), class and the naive answer.
struct Shape {
    hashes: Vec<Vec<KeyHash>>,
    class: Vec<QueryClass>,
    /// Exact answers: `(id, count)` with count >= the threshold, ascending id.
    answers: Vec<Vec<(u64, u32)>>,
    /// Matches of each query's keys in a plain per-key query, summed.
    key_matches: Vec<usize>,
}

/// Builds the `full` filters, the sliced index and the query shapes, checks
/// and times every engine, and returns the rows.
///
/// # Errors
///
/// A [`BenchError`] when an engine gives a wrong answer or memory runs out.
pub fn run_multi(opts: &MultiOptions, log: &mut dyn FnMut(&str)) -> Result<Vec<MultiRow>, BenchError> {
    let spec = WorkloadSpec::new(WorkloadKind::Multi, 0, opts.seed).with_filters(opts.filters);
    let p = params();
    log(&format!("building {} full filters ({} keys each)", spec.filters, spec.keys_per_filter));
    let filters = build_filters(&spec, p, opts.threads)?;
    let mut index = SlicedIndex::with_config(p, opts.config);
    index.reserve(filters.len())?;
    let refs: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
    index.insert_filters(&refs)?;
    let cpu = crate::sysinfo::cpu_model();
    let backend = index.kernels().backend().name().to_owned();
    let mut rows = Vec::new();
    for &(n_queries, q) in &opts.shapes {
        let shape = make_shape(&spec, &filters, n_queries, q, opts.threads, log);
        let min_count = Threshold::fraction(THRESHOLD)?.min_count(q);
        log(&format!(
            "{n_queries} queries of {q} keys: {} drawn queries pass, min count {min_count}",
            shape.answers.iter().filter(|a| !a.is_empty()).count()
        ));
        let base = |engine: &str, class: QueryClass, timed: usize, time: Duration, threads: usize| MultiRow {
            subject: RowSubject::new(engine, &spec),
            keys_per_query: q,
            threshold: THRESHOLD,
            query_class: class,
            timing: MultiTiming {
                timed_queries: timed,
                ns_per_query: time.as_nanos() as f64 / timed.max(1) as f64,
                ns_per_key: time.as_nanos() as f64 / (timed.max(1) * q.max(1)) as f64,
                queries_per_sec: timed as f64 / time.as_secs_f64().max(1e-12),
            },
            ratio_vs_per_key_count: None,
            ratio_vs_batched: None,
            answers_checked: timed,
            threads,
            engine: EngineInfo {
                backend: if engine == "naive" { "-".to_owned() } else { backend.clone() },
                memory_bytes: index.memory_bytes(),
            },
            origin: Provenance { seed: opts.seed, cpu: cpu.clone() },
        };
        let mut shape_rows = Vec::new();

        // naive: a sample of the mixed queries.
        let naive_n = (NAIVE_WORK / (spec.filters * q).max(1)).clamp(4, n_queries);
        let sample: Vec<usize> = (0..naive_n).collect();
        for &i in &sample {
            let got = naive_answer(&filters, &shape.hashes[i], p, min_count);
            check("naive", i, &got, &shape.answers[i])?;
        }
        let (time, _) = best_of(opts.repeat, || {
            sample.iter().map(|&i| naive_answer(&filters, &shape.hashes[i], p, min_count).len()).sum()
        });
        shape_rows.push(base("naive", QueryClass::Mixed, naive_n, time, 1));

        for class in [QueryClass::Mixed, QueryClass::Drawn, QueryClass::Random] {
            let chosen: Vec<usize> =
                (0..n_queries).filter(|&i| class == QueryClass::Mixed || shape.class[i] == class).collect();
            let mut results = BatchResults::new();
            let mut counts: HashMap<u64, u32> = HashMap::new();
            let mut out = Vec::new();
            let mut scratch = Scores::new();

            // per-key-count
            for &i in &chosen {
                per_key_count(&index, &shape.hashes[i], min_count, &mut results, &mut counts, &mut out);
                check("per-key-count", i, &out, &shape.answers[i])?;
            }
            // batched (no counting): checked by per-key match counts.
            for &i in &chosen {
                index.query_batch_hashes(&shape.hashes[i], &mut results);
                if results.total_matches() != shape.key_matches[i] {
                    return Err(BenchError(format!(
                        "batched: query {i} has {} matches, the reference {}",
                        results.total_matches(),
                        shape.key_matches[i]
                    )));
                }
            }
            // score and score-pruned
            let threshold = Threshold::count(min_count);
            for &i in &chosen {
                index.query_threshold_into(&shape.hashes[i], threshold.unpruned(), &mut scratch, &mut out);
                check("score", i, &out, &shape.answers[i])?;
                index.query_threshold_into(&shape.hashes[i], threshold, &mut scratch, &mut out);
                check("score-pruned", i, &out, &shape.answers[i])?;
            }
            // Timed in rounds, every engine once per round, best of the
            // rounds: on a shared machine the engines then see the same
            // background load and their ratios stay meaningful.
            let mut best = [Duration::MAX; 4];
            for _ in 0..opts.repeat.max(1) {
                best[0] = best[0].min(timed_pass(&chosen, |i| {
                    per_key_count(&index, &shape.hashes[i], min_count, &mut results, &mut counts, &mut out);
                    out.len()
                }));
                best[1] = best[1].min(timed_pass(&chosen, |i| {
                    index.query_batch_hashes(&shape.hashes[i], &mut results);
                    results.total_matches()
                }));
                best[2] = best[2].min(timed_pass(&chosen, |i| {
                    index.query_threshold_into(&shape.hashes[i], threshold.unpruned(), &mut scratch, &mut out);
                    out.len()
                }));
                best[3] = best[3].min(timed_pass(&chosen, |i| {
                    index.query_threshold_into(&shape.hashes[i], threshold, &mut scratch, &mut out);
                    out.len()
                }));
            }
            let [per_key, batched, score, pruned] = best;
            let n = chosen.len();
            for (engine, time) in
                [("per-key-count", per_key), ("batched", batched), ("score", score), ("score-pruned", pruned)]
            {
                let mut row = base(engine, class, n, time, 1);
                row.ratio_vs_per_key_count = Some(per_key.as_secs_f64() / time.as_secs_f64().max(1e-12));
                row.ratio_vs_batched = Some(time.as_secs_f64() / batched.as_secs_f64().max(1e-12));
                shape_rows.push(row);
            }
            if class == QueryClass::Mixed {
                log(&format!(
                    "{q} keys: per-key-count {:.0} ns/key, batched {:.0}, score {:.0}, score-pruned {:.0}",
                    per_key.as_nanos() as f64 / (n * q) as f64,
                    batched.as_nanos() as f64 / (n * q) as f64,
                    score.as_nanos() as f64 / (n * q) as f64,
                    pruned.as_nanos() as f64 / (n * q) as f64,
                ));
                // The pool: all mixed queries in one batch, 1 and 2 workers.
                let per_key_mixed = per_key;
                let concurrent = ConcurrentIndex::new(index.clone());
                let queries: Vec<&[KeyHash]> = shape.hashes.iter().map(Vec::as_slice).collect();
                let mut pools = Vec::new();
                for workers in [1, 2] {
                    let pool = QueryPool::new(PoolConfig { workers: Workers::Count(workers), ..PoolConfig::default() })
                        .map_err(|e| BenchError(format!("pool: {e}")))?;
                    let mut pool_results = ThresholdResults::new();
                    pool.query_threshold_batch(&concurrent, &queries, threshold, &mut pool_results)
                        .map_err(|e| BenchError(format!("pool: {e}")))?;
                    for (i, got) in pool_results.iter().enumerate() {
                        check("pool-score-pruned", i, got, &shape.answers[i])?;
                    }
                    pools.push((workers, pool, pool_results, Duration::MAX));
                }
                // Rounds, as above, alternating 1 and 2 workers.
                for _ in 0..opts.repeat.max(1) {
                    for (_, pool, pool_results, best) in &mut pools {
                        let (_, time) = timed(|| {
                            pool.query_threshold_batch(&concurrent, &queries, threshold, pool_results)
                                .expect("the checked batch succeeds again");
                            std::hint::black_box(pool_results.iter().map(<[_]>::len).sum::<usize>())
                        });
                        *best = (*best).min(time);
                    }
                }
                for (workers, _, _, time) in pools {
                    let mut row = base("pool-score-pruned", class, n_queries, time, workers);
                    row.ratio_vs_per_key_count = Some(per_key_mixed.as_secs_f64() / time.as_secs_f64().max(1e-12));
                    row.ratio_vs_batched = Some(time.as_secs_f64() / batched.as_secs_f64().max(1e-12));
                    shape_rows.push(row);
                }
            }
        }
        rows.extend(shape_rows);
    }
    Ok(rows)
}

/// The queries of one shape and their naive answers.
fn make_shape(
    spec: &WorkloadSpec,
    filters: &[(u64, BloomFilter)],
    n_queries: usize,
    q: usize,
    threads: usize,
    log: &mut dyn FnMut(&str),
) -> Shape {
    let p = params();
    let k = p.k() as usize;
    let mut rng = SmallRng::seed_from_u64(spec.seed ^ 0x6d75_6c74_6900 ^ (q as u64) << 32);
    let mut queries: Vec<(Vec<u64>, QueryClass)> = Vec::with_capacity(n_queries);
    for i in 0..n_queries {
        if i < n_queries / 2 {
            let f = rng.random_range(0..spec.filters);
            let keys = (0..q)
                .map(|_| {
                    if rng.random_bool(REPLACED) {
                        rng.random::<u64>() | 1 << 63
                    } else {
                        spec.key(f, rng.random_range(0..spec.keys_per_filter))
                    }
                })
                .collect();
            queries.push((keys, QueryClass::Drawn));
        } else {
            queries.push(((0..q).map(|_| rng.random::<u64>() | 1 << 63).collect(), QueryClass::Random));
        }
    }
    queries.shuffle(&mut rng);
    let hashes: Vec<Vec<KeyHash>> =
        queries.iter().map(|(keys, _)| keys.iter().map(|&key| key_hash(&p, key)).collect()).collect();
    log(&format!("naive answers for {n_queries} x {q} keys over {} filters", filters.len()));
    let mut positions = vec![0u32; n_queries * q * k];
    for (hash, pos) in hashes.iter().flatten().zip(positions.chunks_exact_mut(k)) {
        p.positions_into(*hash, pos);
    }
    let reference = Reference::compute(filters, &positions, k, threads);
    let min_count = Threshold::fraction(THRESHOLD).expect("a valid fraction").min_count(q);
    let mut answers = Vec::with_capacity(n_queries);
    let mut key_matches = Vec::with_capacity(n_queries);
    let mut counts = vec![0u32; filters.len()];
    for query in 0..n_queries {
        counts.fill(0);
        let mut matches = 0;
        for key in query * q..(query + 1) * q {
            for &id in reference.get(key) {
                counts[id as usize] += 1;
                matches += 1;
            }
        }
        key_matches.push(matches);
        answers
            .push(counts.iter().enumerate().filter(|&(_, &c)| c >= min_count).map(|(id, &c)| (id as u64, c)).collect());
    }
    Shape { hashes, class: queries.iter().map(|(_, c)| *c).collect(), answers, key_matches }
}

/// Times one pass of `query` over the queries `chosen` (it returns a match
/// count, summed and kept observable).
fn timed_pass(chosen: &[usize], mut query: impl FnMut(usize) -> usize) -> Duration {
    timed(|| std::hint::black_box(chosen.iter().map(|&i| query(i)).sum::<usize>())).1
}

/// The `naive` engine: every filter tests every key of the query.
fn naive_answer(
    filters: &[(u64, BloomFilter)],
    hashes: &[KeyHash],
    p: bloomslice::BloomParams,
    min_count: u32,
) -> Vec<(u64, u32)> {
    let k = p.k() as usize;
    let mut positions = vec![0u32; hashes.len() * k];
    for (hash, pos) in hashes.iter().zip(positions.chunks_exact_mut(k)) {
        p.positions_into(*hash, pos);
    }
    let mut out = Vec::new();
    for (id, f) in filters {
        let count = positions.chunks_exact(k).filter(|pos| f.contains_positions(pos)).count() as u32;
        if count >= min_count {
            out.push((*id, count));
        }
    }
    out
}

/// The `per-key-count` engine: a plain batch query, then a hash map of
/// counts; leaves the ids counted at least `min_count` times, with their
/// counts, in `out` by ascending id. Also timed by
/// `examples/score_sweep.rs`.
pub fn per_key_count(
    index: &SlicedIndex,
    hashes: &[KeyHash],
    min_count: u32,
    results: &mut BatchResults,
    counts: &mut HashMap<u64, u32>,
    out: &mut Vec<(u64, u32)>,
) {
    index.query_batch_hashes(hashes, results);
    counts.clear();
    for ids in results.iter() {
        for &id in ids {
            *counts.entry(id).or_insert(0) += 1;
        }
    }
    out.clear();
    out.extend(counts.iter().filter(|&(_, &c)| c >= min_count).map(|(&id, &c)| (id, c)));
    out.sort_unstable();
}

/// Runs `query_threshold_into` on every query of `queries` in turn; returns
/// the number of `(id, count)` pairs reported. The timed loop of the
/// scoring probes (`examples/scoreprobe.rs`, `examples/drawnprobe.rs`).
pub fn score_queries<Q: AsRef<[K]>, K: bloomslice::Key>(
    index: &SlicedIndex,
    queries: &[Q],
    threshold: Threshold,
    scores: &mut Scores,
    out: &mut Vec<(u64, u32)>,
) -> usize {
    let mut reported = 0;
    for query in queries {
        index.query_threshold_into(query.as_ref(), threshold, scores, out);
        reported += out.len();
    }
    reported
}

fn check(engine: &str, query: usize, got: &[(u64, u32)], want: &[(u64, u32)]) -> Result<(), BenchError> {
    if got == want {
        Ok(())
    } else {
        Err(BenchError(format!("{engine}: query {query} answered {got:?}, the naive answer is {want:?}")))
    }
}

/// The rows as a table, with the run's context.
pub fn table(rows: &[MultiRow]) -> String {
    use core::fmt::Write as _;
    let mut o = String::new();
    if let Some(r) = rows.first() {
        let backend = rows.iter().map(|r| r.engine.backend.as_str()).find(|b| *b != "-").unwrap_or("-");
        let _ = writeln!(
            o,
            "multi: N = {}, m = {}, k = {}, threshold {}, cpu {}, kernels {} (available: {})",
            r.subject.filters,
            r.subject.m,
            r.subject.k,
            r.threshold,
            r.origin.cpu,
            backend,
            Kernels::available().iter().map(|k| k.backend().name()).collect::<Vec<_>>().join(", ")
        );
    }
    let _ = writeln!(
        o,
        "{:<18} {:>5} {:>7} {:>3} {:>12} {:>10} {:>11} {:>10} {:>8}",
        "engine", "keys", "class", "thr", "ns/query", "ns/key", "vs per-key", "vs batched", "checked"
    );
    for r in rows {
        let class = match r.query_class {
            QueryClass::Mixed => "mixed",
            QueryClass::Drawn => "drawn",
            QueryClass::Random => "random",
        };
        let _ = writeln!(
            o,
            "{:<18} {:>5} {:>7} {:>3} {:>12.0} {:>10.1} {:>11} {:>10} {:>8}",
            r.subject.engine,
            r.keys_per_query,
            class,
            r.threads,
            r.timing.ns_per_query,
            r.timing.ns_per_key,
            r.ratio_vs_per_key_count.map_or("-".to_owned(), |x| format!("{x:.2}x")),
            r.ratio_vs_batched.map_or("-".to_owned(), |x| format!("{x:.2}x")),
            r.answers_checked
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small run end to end: every engine passes its check (a wrong
    /// answer is an error) and the rows carry their timings and ratios.
    #[test]
    fn small_run_checks_every_engine() {
        let opts = MultiOptions {
            filters: 40,
            seed: 3,
            config: SlicedConfig::default(),
            repeat: 1,
            threads: 2,
            shapes: vec![(6, 50), (4, 120)],
        };
        let rows = run_multi(&opts, &mut |_| {}).unwrap();
        // Per shape: naive, 3 classes x 4 engines, 2 pool rows.
        assert_eq!(rows.len(), 2 * (1 + 12 + 2));
        for r in &rows {
            assert_eq!(r.threshold, THRESHOLD);
            assert!(r.timing.ns_per_query > 0.0, "{r:?}");
            if r.subject.engine != "naive" {
                assert!(r.ratio_vs_per_key_count.is_some());
            }
        }
        assert!(table(&rows).contains("score-pruned"));
        let json = serde_json::to_string(&rows).unwrap();
        assert!(json.contains("\"keys_per_query\":120") && json.contains("ratio_vs_per_key_count"));
    }
}

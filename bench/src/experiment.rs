//! The `paper query` experiment: build every engine for one workload, check
//! its answers, time it, and hold it against the roofline measured in the
//! same run.
//!
//! Order of work: hash every query once; build our filters, then the naive
//! index (which copies them), the `fastbloom` filters and the sliced index
//! (from the naive filters); compute the reference answers filter-major
//! ([`crate::reference`]); measure the roofline; then, per engine, a
//! checking pass over every query it will be timed on followed by the timed
//! passes. A wrong answer stops the run with an error.

use std::time::Duration;

use bloomslice::kernels::Kernels;
use bloomslice::{BatchResults, BloomParams, KeyHash, SlicedConfig, SlicedIndex};

use crate::engines::{self, EngineKind};
use crate::reference::{FpStats, Mismatch, Reference, fp_probability};
use crate::roofline::Roofline;
use crate::workload::{Query, WorkloadSpec, key_hash};

/// Largest `--filters` accepted (beyond it the engines alone need more than
/// 30 GiB).
pub const MAX_FILTERS: usize = 1_000_000;

/// Largest `--queries` accepted.
pub const MAX_QUERIES: usize = 100_000_000;

/// Filter checks (queries x filters) the naive engines are timed on when
/// `--naive-queries` is not given: about ten seconds each on the
/// development machine. The naive engines then run on the first
/// `NAIVE_WORK / N` queries (at least 1000).
pub const NAIVE_WORK: usize = 200_000_000;

/// Standard deviations allowed between fastbloom's and our false-positive
/// counts.
pub const FP_SIGMAS: f64 = 4.0;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryOptions {
    /// The workload.
    pub spec: WorkloadSpec,
    /// Configuration of the sliced index.
    pub config: SlicedConfig,
    /// Engines to run (report order is fixed).
    pub engines: Vec<EngineKind>,
    /// Keys per `query_batch_hashes` call for the batched rows.
    pub batch: usize,
    /// Timed passes per sliced engine (the best is reported).
    pub repeat: usize,
    /// Queries the naive engines are checked and timed on (`None`: from
    /// [`NAIVE_WORK`]).
    pub naive_queries: Option<usize>,
    /// Threads for building filters and reference answers (queries are
    /// always timed on one thread).
    pub threads: usize,
}

/// An error that stops the experiment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchError(pub String);

impl core::fmt::Display for BenchError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

impl From<bloomslice::Error> for BenchError {
    fn from(e: bloomslice::Error) -> Self {
        BenchError(format!("engine error: {e}"))
    }
}

impl From<Mismatch> for BenchError {
    fn from(e: Mismatch) -> Self {
        BenchError(format!("answer check failed: {e}"))
    }
}

/// How an engine's answers were checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckKind {
    /// Exactly the naive id set on every timed query.
    Exact,
    /// No false negatives, and a false-positive count within
    /// [`FP_SIGMAS`] standard deviations of ours.
    NoFalseNegativesFpWithin4Sigma,
}

/// What a result row measured: the engine and the workload it ran on. The
/// first fields of [`Row`] and of [`MultiRow`](crate::multi::MultiRow),
/// flattened into their JSON objects.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RowSubject {
    /// Engine name.
    pub engine: String,
    /// Workload name.
    pub workload: String,
    /// Number of filters.
    pub filters: usize,
    /// Keys inserted per filter.
    pub keys_per_filter: usize,
    /// Filter length in bits.
    pub m: u64,
    /// Hash functions.
    pub k: u32,
}

impl RowSubject {
    /// `engine` on the workload `spec`.
    pub fn new(engine: &str, spec: &WorkloadSpec) -> Self {
        RowSubject {
            engine: engine.to_owned(),
            workload: spec.kind.name().to_owned(),
            filters: spec.filters,
            keys_per_filter: spec.keys_per_filter,
            m: spec.params.m(),
            k: spec.params.k(),
        }
    }
}

/// One line of the result table (one JSON object).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Row {
    /// The engine and the workload.
    #[serde(flatten)]
    pub subject: RowSubject,
    /// Whether queries went through `query_batch_hashes`.
    pub batched: bool,
    /// Mean time per query.
    pub ns_per_query: f64,
    /// Queries per second (single thread).
    pub queries_per_sec: f64,
    /// `naive-fastbloom` time over this engine's time (`None` when
    /// `naive-fastbloom` did not run).
    pub ratio_vs_naive_fastbloom: Option<f64>,
    /// Queries whose answers were checked before timing.
    pub answers_checked: usize,
    /// The engine's time against the roofline.
    #[serde(flatten)]
    pub roofline: RooflineFit,
    /// Queries the timing covers.
    pub timed_queries: usize,
    /// Whether only a sample of the query set was timed (naive engines at large N).
    pub sampled_queries: bool,
    /// How the answers were checked.
    pub check: CheckKind,
    /// The engine's kernels and memory.
    #[serde(flatten)]
    pub engine: EngineInfo,
    /// Keys per batch (batched rows).
    pub batch_size: Option<usize>,
    /// `SlicedConfig::max_shard_columns` (normalised).
    pub max_shard_columns: usize,
    /// `SlicedConfig::prefetch_distance`.
    pub prefetch_distance: usize,
    /// Workload seed and CPU.
    #[serde(flatten)]
    pub origin: Provenance,
}

/// What a query must read, its roofline time (see [`crate::roofline`]) and
/// the measured time's fraction of it.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct RooflineFit {
    /// Roofline time over measured time.
    pub roofline_fraction: f64,
    /// Roofline time per query.
    pub roofline_ns: f64,
    /// Bytes of rows a query must touch (for naive engines an upper bound:
    /// `k` cache lines per filter).
    pub bytes_per_query: u64,
    /// Contiguous runs a query reads (`k` per shard; `k` per filter for naive).
    pub runs_per_query: u64,
    /// Sliced only: bytes a query is expected to read once the per-chunk
    /// early exit is accounted for (from the index's bit density).
    pub est_bytes_read: Option<f64>,
    /// Sliced only: `roofline_fraction` with `est_bytes_read` in place of
    /// `bytes_per_query`.
    pub roofline_fraction_early_exit: Option<f64>,
    /// Sliced only: `runs_per_query` x the measured time of one random run
    /// of the index's mean run length, over the measured time (a roofline
    /// for runs of exactly this length rather than for a stream).
    pub run_roofline_fraction: Option<f64>,
}

impl RooflineFit {
    /// A query reading `bytes` in `runs` runs in `ns_per_query` (sliced-only fields left out).
    fn new(roofline: &Roofline, bytes: u64, runs: u64, ns_per_query: f64) -> Self {
        let roofline_ns = roofline.query_ns(bytes as f64, runs as f64);
        let roofline_fraction = roofline_ns / ns_per_query;
        RooflineFit { roofline_fraction, roofline_ns, bytes_per_query: bytes, runs_per_query: runs, ..Self::default() }
    }
}

/// The kernels an engine ran on and the memory it held (in [`Row`] and
/// [`MultiRow`](crate::multi::MultiRow)).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct EngineInfo {
    /// Kernel backend (sliced engines) or `-`.
    pub backend: String,
    /// Bytes the engine holds.
    pub memory_bytes: usize,
}

/// Where a row was measured (the last fields of [`Row`] and
/// [`MultiRow`](crate::multi::MultiRow)).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Provenance {
    /// Workload seed.
    pub seed: u64,
    /// CPU model.
    pub cpu: String,
}

/// Everything about a run besides the rows.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    /// CPU model.
    pub cpu: String,
    /// Backend of the dispatched kernels.
    pub backend: String,
    /// Backends this CPU can run.
    pub available_backends: Vec<String>,
    /// The workload.
    pub spec: WorkloadSpec,
    /// The filter parameters.
    pub params: BloomParams,
    /// Sliced configuration as normalised by the index.
    pub config: SlicedConfig,
    /// Shards of the sliced index (0 if no sliced engine ran).
    pub shard_count: usize,
    /// Columns of the sliced index.
    pub columns: usize,
    /// Mean fill ratio (ones / m) of our filters.
    pub mean_fill: f64,
    /// Keys per batch.
    pub batch: usize,
    /// Timed passes per sliced engine.
    pub repeat: usize,
    /// Build threads.
    pub threads: usize,
    /// Queries the naive engines ran on.
    pub naive_queries: usize,
    /// Build and preparation times, by step.
    pub builds: Vec<(String, Duration)>,
    /// Memory held by each engine.
    pub memory: Vec<(String, usize)>,
    /// The measured roofline.
    pub roofline: Roofline,
    /// False-positive statistics (ours, fastbloom's) on the naive sample,
    /// when `naive-fastbloom` ran.
    pub fp: Option<(FpStats, FpStats)>,
}

/// The result of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Context.
    pub info: RunInfo,
    /// One row per engine and mode.
    pub rows: Vec<Row>,
}

/// Checks the options before anything expensive happens.
///
/// # Errors
///
/// A one-line description of the first bad option.
pub fn validate(opts: &QueryOptions) -> Result<(), BenchError> {
    let s = &opts.spec;
    if !(1..=MAX_FILTERS).contains(&s.filters) {
        return Err(BenchError(format!("--filters must be between 1 and {MAX_FILTERS}, got {}", s.filters)));
    }
    if !(2..=MAX_QUERIES).contains(&s.queries) {
        return Err(BenchError(format!("--queries must be between 2 and {MAX_QUERIES}, got {}", s.queries)));
    }
    if opts.engines.is_empty() {
        return Err(BenchError("--engines must name at least one engine".into()));
    }
    if opts.batch == 0 || opts.repeat == 0 || opts.threads == 0 || opts.naive_queries == Some(0) {
        return Err(BenchError("--batch, --repeat, --build-threads and --naive-queries must be at least 1".into()));
    }
    let p = s.params;
    let filter_bytes = (p.padded_words() * 8) as f64 * s.filters as f64;
    let copies = 1.0
        + f64::from(u8::from(opts.engines.contains(&EngineKind::NaiveFastbloom)))
        + 2.0 * f64::from(u8::from(opts.engines.iter().any(|e| e.is_sliced())));
    let needed = filter_bytes * copies + s.queries as f64 * 200.0;
    if let Some(avail) = crate::sysinfo::mem_available_bytes()
        && needed > 0.9 * avail as f64
    {
        return Err(BenchError(format!(
            "this run needs about {:.1} GiB but only {:.1} GiB is available; use fewer --filters or --engines",
            needed / f64::from(1u32 << 30),
            avail as f64 / f64::from(1u32 << 30)
        )));
    }
    Ok(())
}

/// Runs the experiment; progress lines go to `log`.
///
/// # Errors
///
/// Bad options ([`validate`]), an engine error, or a wrong answer.
pub fn run_query(opts: &QueryOptions, log: &mut dyn FnMut(&str)) -> Result<Report, BenchError> {
    validate(opts)?;
    let spec = opts.spec;
    let p = spec.params;
    let k = p.k() as usize;
    let n = spec.filters;
    let mut engines = opts.engines.clone();
    engines.sort_unstable();
    engines.dedup();
    let cpu = crate::sysinfo::cpu_model();
    let detected = Kernels::detect().backend().name().to_owned();
    let mut builds = Vec::new();
    let mut memory = Vec::new();

    log(&format!(
        "workload {} N={} x {} keys, {} queries, seed {}",
        spec.kind, n, spec.keys_per_filter, spec.queries, spec.seed
    ));
    let (queries, hashes, positions) = build(&mut builds, "queries (generate + hash once)", || {
        let queries = spec.queries();
        let hashes: Vec<KeyHash> = queries.iter().map(|q| key_hash(&p, q.key)).collect();
        let mut positions = vec![0u32; hashes.len() * k];
        for (h, pos) in hashes.iter().zip(positions.chunks_exact_mut(k)) {
            p.positions_into(*h, pos);
        }
        (queries, hashes, positions)
    });

    let filters = build(&mut builds, "naive: our filters", || engines::build_filters(&spec, p, opts.threads))?;
    let naive = build(&mut builds, "naive: NaiveIndex::insert_filter (clones)", || engines::naive_index(p, filters))?;
    memory.push(("naive".to_owned(), naive.memory_bytes()));
    let our_fp: Vec<f64> = naive.filters().iter().map(|(_, f)| fp_probability(f.count_ones(), p.m(), p.k())).collect();
    let mean_fill = naive.filters().iter().map(|(_, f)| f.fill_ratio()).sum::<f64>() / n as f64;
    log(&format!("built {n} filters (mean fill {mean_fill:.4})"));

    let fastbloom = if engines.contains(&EngineKind::NaiveFastbloom) {
        let fb = build(&mut builds, "naive-fastbloom: filters", || engines::build_fastbloom(&spec, p, opts.threads));
        memory.push(("naive-fastbloom".to_owned(), fb.memory_bytes()));
        Some(fb)
    } else {
        None
    };

    let mut sliced = if engines.iter().any(|e| e.is_sliced()) {
        let index =
            build(&mut builds, "sliced: SlicedIndex from the filters", || engines::sliced_index(&naive, opts.config))?;
        memory.push(("sliced".to_owned(), index.memory_bytes()));
        Some(index)
    } else {
        None
    };

    let reference = build(&mut builds, "reference answers (filter-major naive)", || {
        Reference::compute(naive.filters(), &positions, k, opts.threads)
    });
    log(&format!("reference answers: {} matches over {} queries", reference.total_matches(), reference.len()));

    let roofline_bytes = sliced.as_ref().map_or(naive.memory_bytes(), SlicedIndex::memory_bytes);
    let mean_run = sliced.as_ref().map_or(64, |s| s.bytes_per_query() / (k * s.shard_count()).max(1));
    let roofline = Roofline::measure(roofline_bytes, mean_run);
    log(&format!(
        "roofline: random 128-byte read {:.2} ns, sequential {:.2} GB/s",
        roofline.ns_per_random_read, roofline.seq_gb_per_s
    ));

    let naive_queries = opts.naive_queries.unwrap_or((NAIVE_WORK / n).max(1000)).min(spec.queries);
    let config = sliced.as_ref().map_or(SlicedConfig::default(), |s| *s.config());
    let row = |engine: &str, batched: bool, time: Duration, timed_queries: usize| Row {
        subject: RowSubject::new(engine, &spec),
        batched,
        ns_per_query: time.as_nanos() as f64 / timed_queries as f64,
        queries_per_sec: timed_queries as f64 / time.as_secs_f64(),
        ratio_vs_naive_fastbloom: None,
        answers_checked: timed_queries,
        roofline: RooflineFit::default(),
        timed_queries,
        sampled_queries: timed_queries < spec.queries,
        check: CheckKind::Exact,
        engine: EngineInfo { backend: "-".to_owned(), memory_bytes: 0 },
        batch_size: None,
        max_shard_columns: config.max_shard_columns,
        prefetch_distance: config.prefetch_distance,
        origin: Provenance { seed: spec.seed, cpu: cpu.clone() },
    };
    let naive_roofline =
        |r: &mut Row| r.roofline = RooflineFit::new(&roofline, (k * 64 * n) as u64, (k * n) as u64, r.ns_per_query);

    let mut rows = Vec::new();
    let mut fp = None;
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for engine in engines {
        log(&format!("checking and timing {}", engine.name()));
        match engine {
            EngineKind::Naive => {
                let sample = &hashes[..naive_queries];
                for (q, h) in sample.iter().enumerate() {
                    naive.query_hash_into(*h, &mut out);
                    reference.check("naive", q, queries[q].key, &out, &mut scratch)?;
                }
                let (time, _) =
                    engines::best_of(1, || engines::single_pass(sample, &mut out, |h, o| naive.query_hash_into(h, o)));
                let mut r = row("naive", false, time, naive_queries);
                naive_roofline(&mut r);
                r.engine.memory_bytes = naive.memory_bytes();
                rows.push(r);
            }
            EngineKind::NaiveFastbloom => {
                let fb = fastbloom.as_ref().expect("built above");
                let sample = &hashes[..naive_queries];
                let ours = (0..naive_queries).map(|q| reference.get(q));
                fp = Some(fastbloom_check(&queries[..naive_queries], ours, &our_fp, fb, sample)?);
                let (time, _) =
                    engines::best_of(1, || engines::single_pass(sample, &mut out, |h, o| fb.query_hash_into(h.h1, o)));
                let mut r = row("naive-fastbloom", false, time, naive_queries);
                naive_roofline(&mut r);
                r.check = CheckKind::NoFalseNegativesFpWithin4Sigma;
                r.engine.memory_bytes = fb.memory_bytes();
                rows.push(r);
            }
            EngineKind::SlicedScalar | EngineKind::Sliced => {
                let index = sliced.as_mut().expect("built above");
                index.set_kernels(engine.kernels());
                let index = &*index;
                let name = engine.name();
                check_sliced(index, &queries, &hashes, &reference, opts.batch, name)?;
                let (single, matches) = engines::best_of(opts.repeat, || {
                    engines::single_pass(&hashes, &mut out, |h, o| index.query_hash_into(h, o))
                });
                let mut results = BatchResults::new();
                let (batched, batch_matches) =
                    engines::best_of(opts.repeat, || engines::batch_pass(index, &hashes, opts.batch, &mut results));
                if matches != reference.total_matches() || batch_matches != reference.total_matches() {
                    return Err(BenchError(format!(
                        "{name}: timed passes found {matches} / {batch_matches} matches, reference {}",
                        reference.total_matches()
                    )));
                }
                for (is_batched, time) in [(false, single), (true, batched)] {
                    let mut r = row(name, is_batched, time, spec.queries);
                    sliced_roofline(&mut r, index, &roofline);
                    r.engine.backend = engine.kernels().backend().name().to_owned();
                    r.engine.memory_bytes = index.memory_bytes();
                    r.batch_size = is_batched.then_some(opts.batch);
                    rows.push(r);
                }
            }
        }
    }
    if let Some(fb_ns) = rows.iter().find(|r| r.subject.engine == "naive-fastbloom").map(|r| r.ns_per_query) {
        for r in &mut rows {
            r.ratio_vs_naive_fastbloom = Some(fb_ns / r.ns_per_query);
        }
    }
    let info = RunInfo {
        cpu,
        backend: detected,
        available_backends: Kernels::available().iter().map(|k| k.backend().name().to_owned()).collect(),
        spec,
        params: p,
        config,
        shard_count: sliced.as_ref().map_or(0, SlicedIndex::shard_count),
        columns: sliced.as_ref().map_or(0, SlicedIndex::columns),
        mean_fill,
        batch: opts.batch,
        repeat: opts.repeat,
        threads: opts.threads,
        naive_queries,
        builds,
        memory,
        roofline,
        fp,
    };
    Ok(Report { info, rows })
}

/// Checks a sliced engine on every query, one key at a time and batched.
/// Runs `f`, records its wall time as the build step `name` and returns its
/// value.
fn build<T>(builds: &mut Vec<(String, Duration)>, name: &str, f: impl FnOnce() -> T) -> T {
    let (value, time) = engines::timed(f);
    builds.push((name.to_owned(), time));
    value
}

fn check_sliced(
    index: &SlicedIndex,
    queries: &[Query],
    hashes: &[KeyHash],
    reference: &Reference,
    batch: usize,
    name: &str,
) -> Result<(), BenchError> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for (q, h) in hashes.iter().enumerate() {
        index.query_hash_into(*h, &mut out);
        reference.check(name, q, queries[q].key, &out, &mut scratch)?;
    }
    let mut results = BatchResults::new();
    let batched = format!("{name} (batched)");
    for (c, chunk) in hashes.chunks(batch).enumerate() {
        index.query_batch_hashes(chunk, &mut results);
        if results.len() != chunk.len() {
            return Err(BenchError(format!("{batched}: {} results for {} keys", results.len(), chunk.len())));
        }
        for (i, got) in results.iter().enumerate() {
            let q = c * batch + i;
            reference.check(&batched, q, queries[q].key, got, &mut scratch)?;
        }
    }
    Ok(())
}

/// Checks `fb`'s answers to `queries` (hashed as `hashes`) against ours
/// (`ours[q]`, from filters whose false-positive probabilities are
/// `our_fp[id]`): no false negatives, and false positives statistically
/// close to ours (it hashes differently, so ids cannot be compared one by
/// one). Returns (ours, theirs).
///
/// # Errors
///
/// [`BenchError`] naming what failed.
pub fn fastbloom_check<'a>(
    queries: &[Query],
    ours: impl IntoIterator<Item = &'a [u64]>,
    our_fp: &[f64],
    fb: &engines::FastbloomIndex,
    hashes: &[KeyHash],
) -> Result<(FpStats, FpStats), BenchError> {
    let mut out = Vec::new();
    let mut answers = Vec::with_capacity(hashes.len());
    for h in hashes {
        fb.query_hash_into(h.h1, &mut out);
        answers.push(out.clone());
    }
    let ours = FpStats::collect(queries, ours, our_fp);
    let theirs = FpStats::collect(queries, answers.iter().map(Vec::as_slice), &fb.fp_probabilities());
    check_fastbloom(&ours, &theirs)?;
    Ok((ours, theirs))
}

/// The fastbloom check: no false negatives, false positives close to ours.
fn check_fastbloom(ours: &FpStats, theirs: &FpStats) -> Result<(), BenchError> {
    if theirs.false_negatives > 0 {
        return Err(BenchError(format!(
            "answer check failed: naive-fastbloom missed the owner of {} present keys",
            theirs.false_negatives
        )));
    }
    if !theirs.close_to(ours, FP_SIGMAS) {
        return Err(BenchError(format!(
            "answer check failed: naive-fastbloom has {} false positives, ours {} (sigma of the difference {:.1})",
            theirs.false_positives,
            ours.false_positives,
            (ours.variance + theirs.variance).sqrt()
        )));
    }
    Ok(())
}

/// Expected rows of a `k`-row run read per 512-bit chunk under the early
/// exit, for row bit density `density`: row `i + 1` is read only while the
/// AND of the first `i` rows still has a bit in the chunk.
pub fn expected_rows_read(density: f64, k: u32) -> f64 {
    let mut rows = 1.0;
    let mut all = density;
    for _ in 1..k {
        rows += 1.0 - (1.0 - all).powi(bloomslice::sliced::SHARD_COLUMN_STEP as i32);
        all *= density;
    }
    rows
}

fn sliced_roofline(r: &mut Row, index: &SlicedIndex, roofline: &Roofline) {
    let p = index.params();
    let runs = u64::from(p.k()) * index.shard_count() as u64;
    let f = RooflineFit::new(roofline, index.bytes_per_query() as u64, runs, r.ns_per_query);
    let density = index.count_ones() as f64 / (p.m() as f64 * index.columns() as f64);
    let est = f.bytes_per_query as f64 * expected_rows_read(density, p.k()) / f64::from(p.k());
    r.roofline = RooflineFit {
        est_bytes_read: Some(est),
        roofline_fraction_early_exit: Some(roofline.query_ns(est, runs as f64) / r.ns_per_query),
        run_roofline_fraction: Some(runs as f64 * roofline.ns_per_random_run / r.ns_per_query),
        ..f
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::WorkloadKind;

    fn opts(kind: WorkloadKind, filters: usize) -> QueryOptions {
        QueryOptions {
            spec: WorkloadSpec::new(kind, 100, 1).with_filters(filters),
            config: SlicedConfig::default(),
            engines: EngineKind::ALL.to_vec(),
            batch: 64,
            repeat: 1,
            naive_queries: None,
            threads: 2,
        }
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(validate(&opts(WorkloadKind::Paper, 0)).is_err());
        assert!(validate(&opts(WorkloadKind::Paper, MAX_FILTERS + 1)).is_err());
        let mut o = opts(WorkloadKind::Paper, 10);
        assert!(validate(&o).is_ok());
        o.engines.clear();
        assert!(validate(&o).is_err());
        let o = QueryOptions { batch: 0, ..opts(WorkloadKind::Paper, 10) };
        assert!(validate(&o).is_err());
    }

    #[test]
    fn a_small_run_checks_and_reports_every_engine() {
        let mut o = opts(WorkloadKind::Full, 30);
        o.spec.keys_per_filter = 500;
        o.spec.queries = 400;
        let report = run_query(&o, &mut |_| {}).unwrap();
        let names: Vec<(&str, bool)> = report.rows.iter().map(|r| (r.subject.engine.as_str(), r.batched)).collect();
        assert_eq!(
            names,
            [
                ("naive", false),
                ("naive-fastbloom", false),
                ("sliced-scalar", false),
                ("sliced-scalar", true),
                ("sliced", false),
                ("sliced", true)
            ]
        );
        for r in &report.rows {
            assert_eq!(r.answers_checked, 400);
            assert!(r.ns_per_query > 0.0 && r.roofline.roofline_fraction > 0.0);
            assert!(r.ratio_vs_naive_fastbloom.is_some());
        }
        let json: serde_json::Value = serde_json::from_str(&crate::report::json(&report).unwrap()).unwrap();
        for field in ["engine", "workload", "filters", "keys_per_filter", "m", "k", "batched", "ns_per_query"] {
            assert!(json[0].get(field).is_some(), "{field}");
        }
        assert!(crate::report::table(&report).contains("sliced-scalar"));
    }

    #[test]
    fn early_exit_estimate_has_the_right_limits() {
        assert!((expected_rows_read(1.0, 7) - 7.0).abs() < 1e-9);
        assert!((expected_rows_read(0.0, 7) - 1.0).abs() < 1e-9);
        let sparse = expected_rows_read(0.007, 7);
        assert!(sparse > 1.9 && sparse < 2.2, "{sparse}");
    }

    #[test]
    fn fastbloom_check_rejects_false_negatives() {
        let ours = FpStats { queries: 10, false_positives: 5, expected: 5.0, variance: 5.0, ..FpStats::default() };
        assert!(check_fastbloom(&ours, &ours).is_ok());
        assert!(check_fastbloom(&ours, &FpStats { false_negatives: 1, ..ours }).is_err());
        assert!(check_fastbloom(&ours, &FpStats { false_positives: 500, ..ours }).is_err());
    }
}

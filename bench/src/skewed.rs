//! `paper query --workload skewed`: collections of sets of skewed sizes
//! (shaped like Debian package file lists), answered by one `m` sized for the largest set, by a
//! [`SetIndex`] with its default layout and by a collection with one part
//! per power of two, with the naive list of per-set filters as the oracle.
//!
//! # Set sizes (`--sizes`)
//!
//! - `lognormal` (default): `N` = 730 sets (`--filters`) whose sizes are
//!   drawn from a log-normal distribution with median 18 (`--median`) and
//!   `sigma = ln(p90 / median) / 1.2816`, so that the 90th percentile is
//!   200 (`--p90`; `sigma` = 1.88, which puts the 99th percentile near
//!   1 420), rounded to whole keys, at least 1 and capped at 50 576
//!   (`--max-size`); the largest drawn set is then set to `--max-size`.
//!   That is the spread of this machine's Debian package file lists
//!   (`/var/lib/dpkg/info/*.list`: 730 sets, median 18 paths, 90th
//!   percentile 200, 99th 1 574, largest 50 576): their body is close to
//!   log-normal, but their largest list lies far beyond a log-normal's tail
//!   at `N` = 730 (about 5 000 keys), an outlier holding 40% of all keys,
//!   which the pinned largest set reproduces.
//! - `equal`: `N` = 1 000 sets of 10 000 keys (`--set-size`), the keys of
//!   the `full` workload (set `i`'s `j`-th key is `full`'s key `(i, j)`),
//!   so that the collection (one part, `m` = 100 992 at 1%) is compared with
//!   a `SlicedIndex` of the same filters.
//! - `one-huge`: one set of `--max-size` keys among `N - 1` sets of 1 to 4
//!   keys (an extreme of the layout).
//! - `tiny`: `N` sets of 1 to 4 keys (the other extreme).
//! - `--lists DIR`: one set per `DIR/*.list` file, each line a key (for the
//!   package lists, `--lists /var/lib/dpkg/info`).
//!
//! Synthetic keys are distinct across sets (a bijective mix of a serial
//! number, top bit clear); absent query keys have the top bit set.
//!
//! # Queries
//!
//! `--queries` keys (100 000), half present, half absent, shuffled. A
//! present key is drawn by choosing a *set* uniformly, then one of its keys
//! uniformly: drawing keys uniformly over all keys would query the largest
//! set 40% of the time and the 365 sets below the median almost never, and
//! the small sets are what the layout moves into narrow parts. Absent keys
//! are random 8-byte keys with the top bit set, held by no set.
//!
//! Threshold scoring: 1 000 queries of 100 keys at threshold 0.8 of each
//! query's keys; half drawn from one set chosen uniformly (keys drawn with
//! replacement, so a small set's keys repeat, 5% replaced by absent keys),
//! half random absent keys.
//!
//! # Engines and oracles
//!
//! - `one-m`: a [`SlicedIndex`] whose `m` is `for_capacity(largest, p)`;
//! - `collection`: [`SetIndex::build`] with [`LayoutConfig::default`];
//! - `collection-pow2`: a collection with one part per power of two: sets
//!   grouped by `ceil(log2 size)` and inserted class by class (ascending),
//!   the largest set of a class first, so that
//!   [`SetIndex::insert_set`] gives each class a part sized for its
//!   largest set (a class whose largest set fits the previous class's part,
//!   its `m` being rounded up to whole words, joins that part);
//! - `levels`: [`LevelIndex::build`] with [`LevelConfig::default`]; its
//!   oracle is its paths ([`LevelIndex::paths`]: the filters a key must
//!   pass, level by level, for each set), tested one by one;
//! - `naive`: the list of per-set filters, each of the `m` the default
//!   collection gave its set, tested one by one.
//!
//! The engines have different filters (one `m` against per-set `m`), so they
//! cannot give identical answers: each is checked, before it is timed,
//! *exactly* against a naive list of its own filters (built from the same
//! keys with the parameters the engine gave each set: one `m` for `one-m`,
//! [`SetIndex::filters`] for the collections), on every single-key and
//! batched query and on every threshold query; and all against the ground
//! truth: no false negatives (every present key finds every set holding
//! it) and a measured false-positive rate reported beside the target.
//! A wrong answer stops the run.
//!
//! # Measurements
//!
//! Per engine: memory ([`SetIndex::memory_bytes`] /
//! [`SlicedIndex::memory_bytes`]) against the per-set optimum
//! (`n_i * log2(1/p) / ln 2` bits summed over the sets), parts and row runs
//! per key (`k` for each part holding sets), the false-positive rate on the
//! absent queries, the per-set false-positive rate with every key of the
//! other sets as absent keys (mean and max over the sets, when the sets
//! hold at most 2 000 000 keys in all), and the time per key of batched
//! (`--batch` keys a call) and single-key queries and of threshold scoring.
//! Timings take `--rounds` rounds; each round runs every engine once, in an
//! order rotated from round to round, and the best and worst round are
//! reported (the spread shows how noisy the machine was). The naive list
//! is timed on single keys only, on the first `2e8 / N` queries (at least
//! 1 000).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bloomslice::collection::levels::PathStep;
use bloomslice::kernels::Kernels;
use bloomslice::{
    BatchResults, BloomFilter, BloomParams, Key, KeyHash, LayoutConfig, LevelConfig, LevelIndex, ReadIndex, SetIndex,
    SlicedIndex, Threshold,
};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::experiment::BenchError;
use crate::workload::splitmix64;

/// Top bit of a synthetic key: set on absent keys only.
const ABSENT_BIT: u64 = 1 << 63;

/// z of the 90th percentile of the standard normal.
const Z90: f64 = 1.281_551_565_545;

/// Per-set false-positive rates over every key of the other sets are
/// measured when the sets hold at most this many keys in all.
const ALL_KEYS_LIMIT: usize = 2_000_000;

/// The threshold of the scoring queries, as a fraction of their keys.
const THRESHOLD: f64 = 0.8;

/// Share of a drawn scoring query's keys replaced by absent keys.
const REPLACED: f64 = 0.05;

/// How the set sizes are chosen (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sizes {
    /// Log-normal sizes shaped like the package lists, the largest pinned.
    Lognormal,
    /// Every set of `--set-size` keys (the `full` workload's keys).
    Equal,
    /// One set of `--max-size` keys among sets of 1 to 4 keys.
    OneHuge,
    /// Sets of 1 to 4 keys.
    Tiny,
}

/// The arguments of the `skewed` workload (flattened into `paper query`).
#[derive(clap::Args, Clone, Debug)]
pub struct SkewedArgs {
    /// skewed: how the set sizes are chosen.
    #[arg(long, value_enum, default_value_t = Sizes::Lognormal)]
    pub sizes: Sizes,
    /// skewed: median set size of `--sizes lognormal`.
    #[arg(long, default_value_t = 18.0)]
    pub median: f64,
    /// skewed: 90th percentile of `--sizes lognormal`.
    #[arg(long, default_value_t = 200.0)]
    pub p90: f64,
    /// skewed: the largest set (`lognormal`, `one-huge`).
    #[arg(long, default_value_t = 50_576)]
    pub max_size: u64,
    /// skewed: keys per set of `--sizes equal`.
    #[arg(long, default_value_t = 10_000)]
    pub set_size: usize,
    /// skewed: one set per `DIR/*.list` file, each line a key (overrides --sizes).
    #[arg(long)]
    pub lists: Option<PathBuf>,
    /// skewed: target false-positive rate of every set.
    #[arg(long, default_value_t = 0.01)]
    pub fp: f64,
    /// skewed: timing rounds (each runs every engine once, order rotated).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// skewed: threshold-scoring queries (half drawn from a set), 0 to skip.
    #[arg(long, default_value_t = 1_000)]
    pub score_queries: usize,
    /// skewed: keys per threshold-scoring query.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub score_keys: u64,
}

/// Everything a `skewed` run needs besides [`SkewedArgs`].
#[derive(Clone, Debug)]
pub struct SkewedRun {
    /// The workload's arguments.
    pub args: SkewedArgs,
    /// Number of sets (`None`: 730, or 1 000 for `equal`).
    pub sets: Option<usize>,
    /// Single-key queries, half present.
    pub queries: usize,
    /// Keys per batched call.
    pub batch: usize,
    /// Seed of sizes, keys and queries.
    pub seed: u64,
}

/// The sets of a run: `(id, distinct key hashes)`, ids `0..N`.
#[derive(Clone, Debug)]
pub struct Sets {
    /// What the sets are (for the report).
    pub name: String,
    /// The sets.
    pub sets: Vec<(u64, Vec<KeyHash>)>,
}

impl Sets {
    /// Number of keys over all sets.
    pub fn total_keys(&self) -> usize {
        self.sets.iter().map(|(_, keys)| keys.len()).sum()
    }

    /// The sets' sizes, sorted.
    pub fn sorted_sizes(&self) -> Vec<usize> {
        let mut sizes: Vec<usize> = self.sets.iter().map(|(_, keys)| keys.len()).collect();
        sizes.sort_unstable();
        sizes
    }

    /// The largest set's size.
    pub fn largest(&self) -> usize {
        self.sets.iter().map(|(_, keys)| keys.len()).max().unwrap_or(0)
    }
}

/// The hash of a synthetic key (its 8 little-endian bytes, seed 0, as the
/// collection and the one-`m` index hash it).
fn hash_u64(key: u64) -> KeyHash {
    key.to_le_bytes().key_hash(0)
}

/// Sizes for `N` sets by `--sizes` (not `--lists`).
pub fn synthetic_sizes(args: &SkewedArgs, n: usize, seed: u64) -> Vec<usize> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5123_5eed);
    let max = args.max_size.max(1) as usize;
    match args.sizes {
        Sizes::Lognormal => {
            let mu = args.median.max(1.0).ln();
            let sigma = (args.p90.max(args.median) / args.median.max(1.0)).ln() / Z90;
            let mut sizes: Vec<usize> = (0..n)
                .map(|_| {
                    // Box-Muller: one standard normal from two uniforms.
                    let (u, v): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random());
                    let z = (-2.0 * u.ln()).sqrt() * (core::f64::consts::TAU * v).cos();
                    ((mu + sigma * z).exp().round() as usize).clamp(1, max)
                })
                .collect();
            if let Some(largest) = sizes.iter_mut().max() {
                *largest = max;
            }
            sizes
        }
        Sizes::Equal => vec![args.set_size; n],
        Sizes::OneHuge => {
            let mut sizes: Vec<usize> = (0..n).map(|_| rng.random_range(1..=4)).collect();
            if let Some(first) = sizes.first_mut() {
                *first = max;
            }
            sizes
        }
        Sizes::Tiny => (0..n).map(|_| rng.random_range(1..=4)).collect(),
    }
}

/// The synthetic sets: set `i` holds the keys of serial numbers
/// `offset_i..offset_i + size_i`, each mixed with the seed as `full` mixes
/// its keys (so `equal` sets are `full`'s filters).
pub fn synthetic_sets(args: &SkewedArgs, n: usize, seed: u64) -> Sets {
    let sizes = synthetic_sizes(args, n, seed);
    let mut offset = 0u64;
    let salt = splitmix64(seed);
    let sets = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let keys = (offset..offset + size as u64).map(|s| hash_u64(splitmix64(s ^ salt) & !ABSENT_BIT)).collect();
            offset += size as u64;
            (i as u64, keys)
        })
        .collect();
    let name = match args.sizes {
        Sizes::Lognormal => {
            format!("lognormal(median {}, p90 {}, largest {}), N = {n}", args.median, args.p90, args.max_size)
        }
        Sizes::Equal => format!("equal ({} keys, full's keys), N = {n}", args.set_size),
        Sizes::OneHuge => format!("one-huge ({} keys among sets of 1-4), N = {n}", args.max_size),
        Sizes::Tiny => format!("tiny (1-4 keys), N = {n}"),
    };
    Sets { name, sets }
}

/// One set per `dir/*.list` file (sorted by name), each distinct non-empty
/// line a key.
///
/// # Errors
///
/// A directory or file that cannot be read, or no `.list` file.
pub fn list_sets(dir: &Path) -> Result<Sets, BenchError> {
    let read = |e: std::io::Error| BenchError(format!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "list"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(BenchError(format!("{}: no .list file", dir.display())));
    }
    let mut sets = Vec::with_capacity(files.len());
    for (i, file) in files.iter().enumerate() {
        let bytes = std::fs::read(file).map_err(|e| BenchError(format!("{}: {e}", file.display())))?;
        let mut keys: Vec<KeyHash> =
            bytes.split(|&b| b == b'\n').filter(|line| !line.is_empty()).map(|line| line.key_hash(0)).collect();
        keys.sort_unstable_by_key(|h| (h.h1, h.h2));
        keys.dedup();
        sets.push((i as u64, keys));
    }
    Ok(Sets { name: format!("{}/*.list, N = {}", dir.display(), files.len()), sets })
}

/// A single-key query: its hash and the sets holding it.
#[derive(Clone, Debug)]
pub struct Query {
    /// The key's hash.
    pub hash: KeyHash,
    /// The sets holding the key (empty for an absent key).
    pub owners: Vec<u64>,
}

/// Which sets hold each key, over all sets.
fn owners_of(sets: &Sets) -> HashMap<KeyHash, Vec<u64>> {
    let mut owners: HashMap<KeyHash, Vec<u64>> = HashMap::with_capacity(sets.total_keys());
    for (id, keys) in &sets.sets {
        for &h in keys {
            owners.entry(h).or_default().push(*id);
        }
    }
    owners
}

/// A random absent key: 8 bytes with the top bit set, held by no set
/// (synthetic keys have the top bit clear; `owners`, when given, is
/// checked too, for sets read from files).
fn absent_key(rng: &mut SmallRng, owners: &HashMap<KeyHash, Vec<u64>>) -> KeyHash {
    loop {
        let h = hash_u64(rng.random::<u64>() | ABSENT_BIT);
        if !owners.contains_key(&h) {
            return h;
        }
    }
}

/// `count` queries, half present (a set chosen uniformly, then one of its
/// keys), half absent, shuffled. `owners` may be empty for synthetic sets
/// (whose keys are distinct).
pub fn make_queries(sets: &Sets, owners: &HashMap<KeyHash, Vec<u64>>, count: usize, seed: u64) -> Vec<Query> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed_0f9e_e1e5);
    let nonempty: Vec<&(u64, Vec<KeyHash>)> = sets.sets.iter().filter(|(_, k)| !k.is_empty()).collect();
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        if i < count / 2 && !nonempty.is_empty() {
            let (id, keys) = nonempty[rng.random_range(0..nonempty.len())];
            let hash = keys[rng.random_range(0..keys.len())];
            // Without the map (large synthetic sets) the key's set is its only holder.
            let holders = owners.get(&hash).cloned().unwrap_or_else(|| vec![*id]);
            out.push(Query { hash, owners: holders });
        } else {
            out.push(Query { hash: absent_key(&mut rng, owners), owners: Vec::new() });
        }
    }
    out.shuffle(&mut rng);
    out
}

/// A threshold-scoring query: its keys and the set it was drawn from.
#[derive(Clone, Debug)]
pub struct ScoreQuery {
    /// The keys' hashes.
    pub keys: Vec<KeyHash>,
    /// The set the keys were drawn from (`None`: random absent keys).
    pub drawn_from: Option<u64>,
}

/// `count` scoring queries of `len` keys (see the module documentation).
pub fn make_score_queries(
    sets: &Sets,
    owners: &HashMap<KeyHash, Vec<u64>>,
    count: usize,
    len: usize,
    seed: u64,
) -> Vec<ScoreQuery> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5c0e_0f9e_e1e5);
    let nonempty: Vec<&(u64, Vec<KeyHash>)> = sets.sets.iter().filter(|(_, k)| !k.is_empty()).collect();
    let mut out: Vec<ScoreQuery> = (0..count)
        .map(|i| {
            if i < count / 2 && !nonempty.is_empty() {
                let (id, keys) = nonempty[rng.random_range(0..nonempty.len())];
                let keys = (0..len)
                    .map(|_| {
                        if rng.random_bool(REPLACED) {
                            absent_key(&mut rng, owners)
                        } else {
                            keys[rng.random_range(0..keys.len())]
                        }
                    })
                    .collect();
                ScoreQuery { keys, drawn_from: Some(*id) }
            } else {
                ScoreQuery { keys: (0..len).map(|_| absent_key(&mut rng, owners)).collect(), drawn_from: None }
            }
        })
        .collect();
    out.shuffle(&mut rng);
    out
}

/// A list of per-set filters tested one by one: the oracle of an engine
/// (its own filters) and the `naive` engine.
#[derive(Clone, Debug)]
pub struct FilterList {
    filters: Vec<(u64, BloomFilter)>,
}

impl FilterList {
    /// Set `id`'s filter with `params_of(id)`, holding the set's keys.
    ///
    /// # Errors
    ///
    /// The engine's error if a filter cannot be allocated.
    pub fn build(sets: &Sets, mut params_of: impl FnMut(u64) -> BloomParams) -> Result<Self, BenchError> {
        let mut filters = Vec::with_capacity(sets.sets.len());
        for (id, keys) in &sets.sets {
            let mut filter = BloomFilter::new(params_of(*id))?;
            for &h in keys {
                filter.insert_hash(h);
            }
            filters.push((*id, filter));
        }
        Ok(FilterList { filters })
    }

    /// The ids of the filters that may hold the key, ascending, into `out`
    /// (cleared first).
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        out.clear();
        out.extend(self.filters.iter().filter(|(_, f)| f.contains_hash(hash)).map(|(id, _)| *id));
        out.sort_unstable();
    }

    /// `(id, count)` of the sets holding at least `min_count` of `keys`
    /// (each occurrence counts), ascending id.
    pub fn threshold(&self, keys: &[KeyHash], min_count: u32) -> Vec<(u64, u32)> {
        let mut out: Vec<(u64, u32)> = self
            .filters
            .iter()
            .map(|(id, f)| (*id, keys.iter().filter(|&&h| f.contains_hash(h)).count() as u32))
            .filter(|&(_, c)| c >= min_count)
            .collect();
        out.sort_unstable();
        out
    }

    /// Bytes of the filters' words and the list.
    pub fn memory_bytes(&self) -> usize {
        self.filters.capacity() * core::mem::size_of::<(u64, BloomFilter)>()
            + self.filters.iter().map(|(_, f)| f.memory_bytes()).sum::<usize>()
    }
}

/// An engine's oracle: its own filters, tested one by one.
enum Oracle {
    /// One filter a set.
    List(FilterList),
    /// A path of filters a set ([`LevelIndex::paths`]).
    Paths(Vec<(u64, Vec<PathStep>)>),
}

impl Oracle {
    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        match self {
            Oracle::List(list) => list.query_hash_into(hash, out),
            Oracle::Paths(paths) => {
                out.clear();
                out.extend(paths.iter().filter(|(_, p)| p.iter().all(|s| s.passes(hash))).map(|(id, _)| *id));
            }
        }
    }

    fn threshold(&self, keys: &[KeyHash], min_count: u32) -> Vec<(u64, u32)> {
        match self {
            Oracle::List(list) => list.threshold(keys, min_count),
            Oracle::Paths(paths) => paths
                .iter()
                .map(|(id, p)| (*id, keys.iter().filter(|&&h| p.iter().all(|s| s.passes(h))).count() as u32))
                .filter(|&(_, c)| c >= min_count)
                .collect(),
        }
    }
}

/// One engine under test.
enum Engine {
    OneM(SlicedIndex),
    SetIndex(SetIndex),
    Levels(LevelIndex),
    Naive(FilterList),
}

impl Engine {
    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        match self {
            Engine::OneM(index) => index.query_hash_into(hash, out),
            Engine::SetIndex(c) => c.query_hash_into(hash, out),
            Engine::Levels(l) => l.query_hash_into(hash, out),
            Engine::Naive(list) => list.query_hash_into(hash, out),
        }
    }

    /// Batched answers; `None` for the naive list (single keys only).
    fn query_batch(&self, hashes: &[KeyHash], results: &mut BatchResults) -> bool {
        match self {
            Engine::OneM(index) => index.query_batch_hashes(hashes, results),
            Engine::SetIndex(c) => c.query_batch_hashes(hashes, results),
            Engine::Levels(l) => l.query_batch_hashes(hashes, results),
            Engine::Naive(_) => return false,
        }
        true
    }

    fn threshold(&self, keys: &[KeyHash], threshold: Threshold) -> Option<Vec<(u64, u32)>> {
        match self {
            Engine::OneM(index) => Some(index.query_threshold(keys, threshold)),
            Engine::SetIndex(c) => Some(c.query_threshold(keys, threshold)),
            Engine::Levels(l) => Some(ReadIndex::query_threshold(l, keys, threshold)),
            Engine::Naive(_) => None,
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            Engine::OneM(index) => index.memory_bytes(),
            Engine::SetIndex(c) => c.memory_bytes(),
            Engine::Levels(l) => l.memory_bytes(),
            Engine::Naive(list) => list.memory_bytes(),
        }
    }

    /// Parts holding sets, and `(m, sets)` of each.
    fn parts(&self) -> Vec<(u64, usize)> {
        match self {
            Engine::OneM(index) => vec![(index.params().m(), index.len())],
            Engine::SetIndex(c) => {
                c.parts().filter(|part| !part.is_empty()).map(|part| (part.params().m(), part.len())).collect()
            }
            Engine::Levels(l) => l.top_shape().into_iter().collect(),
            Engine::Naive(_) => Vec::new(),
        }
    }
}

/// One engine's row of the report.
#[derive(Clone, Debug, Serialize)]
pub struct SkewedRow {
    /// The sets (sizes or lists).
    pub workload: String,
    /// The engine's name.
    pub engine: String,
    /// The kernels of the sliced engines.
    pub kernels: String,
    /// The CPU model.
    pub cpu: String,
    /// Number of sets.
    pub sets: usize,
    /// Keys over all sets.
    pub keys: usize,
    /// Target false-positive rate.
    pub p: f64,
    /// Parts holding sets (0 for the naive list).
    pub parts: usize,
    /// `(m, sets)` of each part.
    pub part_shapes: Vec<(u64, usize)>,
    /// Row runs a key reads: `k` per part (the naive list: one filter per set).
    pub row_runs: usize,
    /// Bytes the engine holds.
    pub memory_bytes: usize,
    /// Bytes of the per-set optimum (`n_i * log2(1/p) / ln 2` bits each).
    pub optimum_bytes: f64,
    /// `memory_bytes / optimum_bytes`.
    pub memory_vs_optimum: f64,
    /// Answers checked against the engine's own filter list, single keys.
    pub checked_queries: usize,
    /// False negatives found (always 0, or the run stops).
    pub false_negatives: usize,
    /// False-positive rate over the absent queries and all sets.
    pub fp_absent: f64,
    /// Per-set false-positive rate with every key of the other sets as
    /// absent keys: mean over the sets (`None` when not measured).
    pub fp_set_mean: Option<f64>,
    /// The same: largest over the sets.
    pub fp_set_max: Option<f64>,
    /// Batched queries, ns per key: best round.
    pub batch_ns_best: Option<f64>,
    /// Batched queries, ns per key: worst round.
    pub batch_ns_worst: Option<f64>,
    /// Single-key queries, ns per key: best round.
    pub single_ns_best: f64,
    /// Single-key queries, ns per key: worst round.
    pub single_ns_worst: f64,
    /// Threshold scoring, ns per query key: best round.
    pub score_ns_best: Option<f64>,
    /// Threshold scoring, ns per query key: worst round.
    pub score_ns_worst: Option<f64>,
}

/// The per-set optimum in bits.
fn optimum_bits(sets: &Sets, p: f64) -> f64 {
    sets.total_keys() as f64 * (1.0 / p).log2() / core::f64::consts::LN_2
}

/// The collection with one part per power of two (see the module
/// documentation).
fn pow2_collection(sets: &Sets, p: f64) -> Result<SetIndex, BenchError> {
    let class = |n: usize| usize::BITS - n.max(1).saturating_sub(1).leading_zeros();
    let mut order: Vec<&(u64, Vec<KeyHash>)> = sets.sets.iter().collect();
    // Ascending class, the largest set of each class first.
    order.sort_by_key(|(id, keys)| (class(keys.len()), core::cmp::Reverse(keys.len()), *id));
    let mut collection = SetIndex::new(p)?;
    crate::tuning::set_index(&mut collection);
    for (id, keys) in order {
        collection.insert_set(*id, keys)?;
    }
    Ok(collection)
}

/// Runs the workload and returns one row per engine.
///
/// # Errors
///
/// A wrong answer (against the engine's own filters or the ground truth),
/// or an engine error.
pub fn run(run: &SkewedRun, log: &mut dyn FnMut(&str)) -> Result<Vec<SkewedRow>, BenchError> {
    let args = &run.args;
    let p = args.fp;
    let sets = match &args.lists {
        Some(dir) => list_sets(dir)?,
        None => {
            let n = run.sets.unwrap_or(if args.sizes == Sizes::Equal { 1_000 } else { 730 });
            synthetic_sets(args, n, run.seed)
        }
    };
    let sizes = sets.sorted_sizes();
    let quantile = |q: f64| sizes.get(((sizes.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0);
    log(&format!(
        "sets: {}; {} keys; sizes median {}, p90 {}, p99 {}, largest {}",
        sets.name,
        sets.total_keys(),
        quantile(0.5),
        quantile(0.9),
        quantile(0.99),
        sets.largest()
    ));
    // Which sets hold each key: needed for the package lists (sets share
    // paths) and for the per-set rates; synthetic keys are held by their
    // set only, so very large synthetic collections skip the map.
    let owners =
        if args.lists.is_some() || sets.total_keys() <= ALL_KEYS_LIMIT { owners_of(&sets) } else { HashMap::new() };
    let queries = make_queries(&sets, &owners, run.queries, run.seed);
    let hashes: Vec<KeyHash> = queries.iter().map(|q| q.hash).collect();
    let absent = queries.iter().filter(|q| q.owners.is_empty()).count();

    // Engines and their oracles (their own filters).
    let one_params = BloomParams::for_capacity(sets.largest().max(1) as u64, p)?;
    let (one_list, _) = crate::engines::timed(|| FilterList::build(&sets, |_| one_params));
    let one_list = one_list?;
    let mut one_m = SlicedIndex::new(one_params);
    {
        let refs: Vec<(u64, &BloomFilter)> = one_list.filters.iter().map(|(id, f)| (*id, f)).collect();
        one_m.insert_filters(&refs)?;
    }
    let (collection, build_time) = crate::engines::timed(|| SetIndex::build(&sets.sets, p, LayoutConfig::default()));
    let mut collection = collection?;
    crate::tuning::set_index(&mut collection);
    log(&format!("default layout (built in {:.1} ms):\n{}", build_time.as_secs_f64() * 1e3, collection.layout()));
    let own_filters =
        |c: &SetIndex| FilterList::build(&sets, |id| c.filters(id).expect("every set is in the collection")[0].params);
    let collection_list = own_filters(&collection)?;
    let pow2 = pow2_collection(&sets, p)?;
    let pow2_list = own_filters(&pow2)?;
    let (levels, build_time) = crate::engines::timed(|| LevelIndex::build(&sets.sets, p, LevelConfig::default()));
    let levels = levels?;
    log(&format!(
        "levels (built in {:.1} ms): depth {}, top columns {:?}, rows {} bytes",
        build_time.as_secs_f64() * 1e3,
        levels.depth(),
        levels.top_columns(),
        levels.rows_bytes()
    ));
    let levels_paths = Oracle::Paths(levels.paths()?);
    let naive = Engine::Naive(collection_list.clone());
    let (one_list, collection_list, pow2_list) =
        (Oracle::List(one_list), Oracle::List(collection_list), Oracle::List(pow2_list));
    let engines: Vec<(&str, Engine, &Oracle)> = vec![
        ("one-m", Engine::OneM(one_m), &one_list),
        ("collection", Engine::SetIndex(collection), &collection_list),
        ("collection-pow2", Engine::SetIndex(pow2), &pow2_list),
        ("levels", Engine::Levels(levels), &levels_paths),
        ("naive", naive, &collection_list),
    ];

    // Checks: every single-key and batched answer against the engine's own
    // filters; no false negatives; the false-positive rates.
    let mut fp_absent = Vec::new();
    let mut oracle_answers: Vec<Vec<Vec<u64>>> = Vec::new();
    for (name, engine, oracle) in &engines {
        let (mut got, mut want, mut batch) = (Vec::new(), Vec::new(), BatchResults::new());
        let mut answers = Vec::with_capacity(queries.len());
        let mut false_hits = 0usize;
        let batched = engine.query_batch(&hashes, &mut batch);
        for (i, q) in queries.iter().enumerate() {
            oracle.query_hash_into(q.hash, &mut want);
            engine.query_hash_into(q.hash, &mut got);
            got.sort_unstable();
            if got != want {
                return Err(BenchError(format!("{name}: query {i}: {got:?}, its own filters say {want:?}")));
            }
            if batched {
                let mut from_batch = batch.get(i).unwrap_or(&[]).to_vec();
                from_batch.sort_unstable();
                if from_batch != want {
                    return Err(BenchError(format!("{name}: batched query {i}: {from_batch:?}, want {want:?}")));
                }
            }
            if let Some(missing) = q.owners.iter().find(|id| want.binary_search(id).is_err()) {
                return Err(BenchError(format!("{name}: false negative: set {missing}, query {i}")));
            }
            if q.owners.is_empty() {
                false_hits += want.len();
            }
            answers.push(want.clone());
        }
        fp_absent.push(false_hits as f64 / (absent.max(1) * sets.sets.len().max(1)) as f64);
        oracle_answers.push(answers);
        log(&format!("{name}: {} queries checked, no false negative", queries.len()));
    }

    // Per-set rates with every key of the other sets as absent keys.
    let per_set: Vec<Option<(f64, f64)>> = engines
        .iter()
        .map(|(name, engine, _)| {
            if owners.is_empty() || owners.len() > ALL_KEYS_LIMIT || sets.sets.len() < 2 {
                return Ok(None);
            }
            let mut hits = vec![0u64; sets.sets.len()];
            let mut out = Vec::new();
            for (h, holders) in &owners {
                engine.query_hash_into(*h, &mut out);
                for id in &out {
                    if !holders.contains(id) {
                        hits[*id as usize] += 1;
                    }
                }
                if let Some(missing) = holders.iter().find(|id| !out.contains(id)) {
                    return Err(BenchError(format!("{name}: false negative: set {missing}")));
                }
            }
            let rates: Vec<f64> = sets
                .sets
                .iter()
                .map(|(id, keys)| hits[*id as usize] as f64 / (owners.len() - keys.len()).max(1) as f64)
                .collect();
            let mean = rates.iter().sum::<f64>() / rates.len() as f64;
            let max = rates.iter().copied().fold(0.0, f64::max);
            log(&format!(
                "{name}: per-set false-positive rate over the other sets' keys: mean {mean:.5}, max {max:.5}"
            ));
            Ok(Some((mean, max)))
        })
        .collect::<Result<_, BenchError>>()?;

    // Threshold queries, checked against each engine's own filters.
    let score_queries = make_score_queries(&sets, &owners, args.score_queries, args.score_keys as usize, run.seed);
    let threshold = Threshold::fraction(THRESHOLD)?;
    for (name, engine, oracle) in &engines {
        for (i, q) in score_queries.iter().enumerate() {
            let Some(got) = engine.threshold(&q.keys, threshold) else { break };
            let want = oracle.threshold(&q.keys, threshold.min_count(q.keys.len()));
            if got != want {
                return Err(BenchError(format!("{name}: threshold query {i}: {got:?}, its own filters say {want:?}")));
            }
            if let Some(id) = q.drawn_from
                && !got.iter().any(|&(g, _)| g == id)
            {
                return Err(BenchError(format!("{name}: threshold query {i} misses set {id}, drawn from")));
            }
        }
    }
    if !score_queries.is_empty() {
        log(&format!("{} threshold queries checked on every scoring engine", score_queries.len()));
    }

    // Timing: rounds, every engine once a round, order rotated.
    let n_engines = engines.len();
    let mut batch_ns = vec![Vec::new(); n_engines];
    let mut single_ns = vec![Vec::new(); n_engines];
    let mut score_ns = vec![Vec::new(); n_engines];
    let per_key = |d: Duration, keys: usize| d.as_secs_f64() * 1e9 / keys.max(1) as f64;
    let score_keys: usize = score_queries.iter().map(|q| q.keys.len()).sum();
    for round in 0..run.args.rounds as usize {
        for step in 0..n_engines {
            let e = (round + step) % n_engines;
            let (_, engine, _) = &engines[e];
            let mut results = BatchResults::new();
            let mut matches = 0usize;
            let start = Instant::now();
            let mut batched = true;
            for chunk in hashes.chunks(run.batch.max(1)) {
                batched = engine.query_batch(chunk, &mut results);
                if !batched {
                    break;
                }
                matches += results.total_matches();
            }
            if batched {
                batch_ns[e].push(per_key(start.elapsed(), hashes.len()));
            }
            // The naive list is timed on its share of the queries
            // (2e8 filter checks a round, at least 1 000 keys).
            let single = if matches!(engine, Engine::Naive(_)) {
                &hashes[..hashes.len().min((200_000_000 / sets.sets.len().max(1)).max(1_000))]
            } else {
                &hashes[..]
            };
            let mut out = Vec::new();
            let start = Instant::now();
            for &h in single {
                engine.query_hash_into(h, &mut out);
                matches += out.len();
            }
            single_ns[e].push(per_key(start.elapsed(), single.len()));
            let start = Instant::now();
            let mut scored = false;
            for q in &score_queries {
                let Some(answer) = engine.threshold(&q.keys, threshold) else { break };
                matches += answer.len();
                scored = true;
            }
            if scored {
                score_ns[e].push(per_key(start.elapsed(), score_keys));
            }
            std::hint::black_box(matches);
        }
        log(&format!("round {} of {} timed", round + 1, run.args.rounds));
    }

    let cpu = crate::sysinfo::cpu_model();
    let kernels = Kernels::detect().backend().name().to_string();
    let optimum = optimum_bits(&sets, p) / 8.0;
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let worst = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let opt = |v: &[f64], f: &dyn Fn(&[f64]) -> f64| (!v.is_empty()).then(|| f(v));
    let k = one_params.k() as usize;
    Ok(engines
        .iter()
        .enumerate()
        .map(|(e, (name, engine, _))| {
            let shapes = engine.parts();
            let row_runs = match engine {
                Engine::Naive(_) => sets.sets.len(),
                Engine::Levels(l) => l.max_row_runs(),
                _ => shapes.len() * k,
            };
            SkewedRow {
                workload: sets.name.clone(),
                engine: (*name).to_string(),
                kernels: kernels.clone(),
                cpu: cpu.clone(),
                sets: sets.sets.len(),
                keys: sets.total_keys(),
                p,
                parts: shapes.len(),
                part_shapes: shapes,
                row_runs,
                memory_bytes: engine.memory_bytes(),
                optimum_bytes: optimum,
                memory_vs_optimum: engine.memory_bytes() as f64 / optimum.max(1.0),
                checked_queries: queries.len(),
                false_negatives: 0,
                fp_absent: fp_absent[e],
                fp_set_mean: per_set[e].map(|(mean, _)| mean),
                fp_set_max: per_set[e].map(|(_, max)| max),
                batch_ns_best: opt(&batch_ns[e], &best),
                batch_ns_worst: opt(&batch_ns[e], &worst),
                single_ns_best: best(&single_ns[e]),
                single_ns_worst: worst(&single_ns[e]),
                score_ns_best: opt(&score_ns[e], &best),
                score_ns_worst: opt(&score_ns[e], &worst),
            }
        })
        .collect())
}

/// The rows as a text table, with each engine's ratio to `one-m`.
pub fn table(rows: &[SkewedRow]) -> String {
    use core::fmt::Write;
    let mut s = String::new();
    let Some(first) = rows.first() else { return s };
    let _ = writeln!(s, "workload: {}; {} keys; p = {}", first.workload, first.keys, first.p);
    let _ = writeln!(s, "CPU: {}; kernels: {}", first.cpu, first.kernels);
    let _ = writeln!(
        s,
        "{:<16} {:>5} {:>8} {:>12} {:>8} {:>9} {:>9} {:>9} {:>15} {:>15} {:>15}",
        "engine",
        "parts",
        "row runs",
        "memory B",
        "x opt",
        "fp absent",
        "fp/set mn",
        "fp/set mx",
        "batch ns/key",
        "single ns/key",
        "score ns/key"
    );
    let one = rows.iter().find(|r| r.engine == "one-m");
    let pair = |best: Option<f64>, worst: Option<f64>| match (best, worst) {
        (Some(b), Some(w)) => format!("{b:.1} ({:.2}x)", w / b),
        _ => "-".to_string(),
    };
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.5}"));
    for r in rows {
        let _ = writeln!(
            s,
            "{:<16} {:>5} {:>8} {:>12} {:>8.2} {:>9.5} {:>9} {:>9} {:>15} {:>15} {:>15}",
            r.engine,
            r.parts,
            r.row_runs,
            r.memory_bytes,
            r.memory_vs_optimum,
            r.fp_absent,
            opt(r.fp_set_mean),
            opt(r.fp_set_max),
            pair(r.batch_ns_best, r.batch_ns_worst),
            pair(Some(r.single_ns_best), Some(r.single_ns_worst)),
            pair(r.score_ns_best, r.score_ns_worst),
        );
    }
    if let Some(one) = one {
        let _ = writeln!(s, "vs one-m (best rounds): batched / single / score");
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}x", a / b),
            _ => "-".to_string(),
        };
        for r in rows.iter().filter(|r| r.engine != "one-m") {
            let _ = writeln!(
                s,
                "  {:<16} {} / {} / {}",
                r.engine,
                ratio(r.batch_ns_best, one.batch_ns_best),
                ratio(Some(r.single_ns_best), Some(one.single_ns_best)),
                ratio(r.score_ns_best, one.score_ns_best)
            );
        }
    }
    let _ = writeln!(s, "times: best round, (worst / best) in brackets; ns per query key");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(sizes: Sizes) -> SkewedArgs {
        SkewedArgs {
            sizes,
            median: 18.0,
            p90: 200.0,
            max_size: 50_576,
            set_size: 300,
            lists: None,
            fp: 0.01,
            rounds: 1,
            score_queries: 40,
            score_keys: 20,
        }
    }

    /// The default sizes have the package lists' spread.
    #[test]
    fn lognormal_sizes_are_shaped_like_the_package_lists() {
        let mut sizes = synthetic_sizes(&args(Sizes::Lognormal), 730, 42);
        sizes.sort_unstable();
        assert_eq!(sizes[729], 50_576);
        assert!((12..=26).contains(&sizes[365]), "median {}", sizes[365]);
        assert!((130..=300).contains(&sizes[657]), "p90 {}", sizes[657]);
        assert!((700..=3_000).contains(&sizes[723]), "p99 {}", sizes[723]);
        assert_eq!(synthetic_sizes(&args(Sizes::Lognormal), 730, 42).len(), 730);
    }

    /// A small run of every shape passes every check (the run stops on a
    /// wrong answer) and reports each engine.
    #[test]
    fn small_runs_check_every_engine() {
        for sizes in [Sizes::Lognormal, Sizes::Equal, Sizes::OneHuge, Sizes::Tiny] {
            let run_args = SkewedArgs { max_size: 3_000, ..args(sizes) };
            let spec = SkewedRun { args: run_args, sets: Some(60), queries: 2_000, batch: 128, seed: 7 };
            let rows = run(&spec, &mut |_| {}).unwrap();
            assert_eq!(rows.len(), 5);
            let one = &rows[0];
            assert_eq!((one.engine.as_str(), one.parts), ("one-m", 1));
            for row in &rows {
                assert!(row.fp_absent < 0.05, "{sizes:?} {}: {}", row.engine, row.fp_absent);
                assert!(row.single_ns_best > 0.0);
            }
            if sizes == Sizes::Equal {
                assert_eq!(rows[1].parts, 1, "equal sizes make one part");
            }
        }
    }

    /// A missing lists directory is an error, not a panic.
    #[test]
    fn missing_lists_directory_is_an_error() {
        assert!(list_sets(Path::new("/nonexistent/lists")).is_err());
    }
}

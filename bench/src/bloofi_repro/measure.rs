//! Builds one engine on one experiment point, checks its answers against
//! the naive scan, and measures what Section 7.1.1 of the paper measures:
//! search time and search bf-cost, storage cost, maintenance time and
//! maintenance bf-cost.
//!
//! One thread; every time is a mean over a whole loop of operations
//! (the whole loop timed, divided by the count), in milliseconds as in
//! the paper's figures.

use std::hint::black_box;
use std::time::Duration;

use bloomslice::{BatchResults, BloomFilter, KeyHash, NaiveIndex, SlicedIndex};
use bloomslice_papers::{BloofiConfig, BloofiTree, BulkOrder, FlatBloofiPaper};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::data::Dataset;
use crate::engines::{fastest_pass, timed};

/// Keys per `SlicedIndex::query_batch_hashes` call in [`SearchCost::batch_ms`].
pub const BATCH: usize = 1024;

/// Timed passes over the searches stop after this long (at least one pass
/// always runs, at most three); the best pass is kept.
const PASS_BUDGET: Duration = Duration::from_secs(2);

/// The fastest of up to three passes of `pass` (which returns its own
/// duration) within [`PASS_BUDGET`], in seconds.
fn best_of(pass: impl FnMut() -> Duration) -> f64 {
    fastest_pass(1, 3, PASS_BUDGET, pass).as_secs_f64()
}

/// The engines of the reproduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// `NaiveIndex`: every filter checked in turn (the paper's "Naive").
    Naive,
    /// `BloofiTree`, built by inserting the filters one by one (iterative).
    Bloofi,
    /// `BloofiTree::bulk_build` with the default `BulkOrder::Auto`.
    BloofiBulk,
    /// `FlatBloofiPaper`: Section 6's Flat-Bloofi layout.
    Flat,
    /// `SlicedIndex`: bloomslice's transposed, cache-aligned bit-slices.
    Sliced,
}

impl Engine {
    /// Name in the CSVs and plots (the paper's names where it has one).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Naive => "Naive",
            Engine::Bloofi => "Bloofi",
            Engine::BloofiBulk => "Bloofi-Bulk",
            Engine::Flat => "Flat",
            Engine::Sliced => "Sliced",
        }
    }
}

/// An engine, possibly in its "after updates" (AU) form: built from half of
/// each filter's values, then every filter updated in place to all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    /// The engine.
    pub engine: Engine,
    /// Built from half the values, then updated (the paper's AU curves).
    pub after_updates: bool,
}

impl Variant {
    /// The plain (not AU) variant of `engine`.
    pub const fn plain(engine: Engine) -> Self {
        Variant { engine, after_updates: false }
    }

    /// The AU variant of `engine`.
    pub const fn au(engine: Engine) -> Self {
        Variant { engine, after_updates: true }
    }

    /// `Bloofi`, `Bloofi-AU`, ...
    pub fn name(self) -> String {
        if self.after_updates { format!("{}-AU", self.engine.name()) } else { self.engine.name().to_string() }
    }
}

/// What one engine measured on one point. Times in milliseconds, costs in
/// filters (tree nodes) checked or accessed; `None` where the metric does
/// not apply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// Value of the varied parameter.
    pub x: f64,
    /// Series name (engine, variant, and what else the experiment varies).
    pub label: String,
    /// Filters `N`.
    pub filters: usize,
    /// Filter size `m` in bits.
    pub m: u64,
    /// The searches.
    pub search: SearchCost,
    /// Storage cost as Section 7.1.1 estimates it, in kB (1000 bytes);
    /// memory actually held for `SlicedIndex`.
    pub storage_kb: f64,
    /// Construction time of the whole index, in seconds.
    pub build_s: f64,
    /// Inserts of a new filter into the built index.
    pub insert: OpCost,
    /// Deletes of a filter.
    pub delete: OpCost,
    /// In-place updates (half of the values to all of them).
    pub update: OpCost,
}

/// The maintenance operations, in the order of [`Row::ops`].
pub const OPS: [&str; 3] = ["Insert", "Delete", "Update"];

impl Row {
    /// Insert, delete and update, in that order.
    pub fn ops(&self) -> [OpCost; 3] {
        [self.insert, self.delete, self.update]
    }
}

/// Time and cost of the searches of one point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchCost {
    /// Mean time of a "yes" search, one key per call (best of up to three
    /// passes over the searches).
    pub ms: f64,
    /// `SlicedIndex` only: mean time per "yes" search when the searches are
    /// asked in batches of [`BATCH`] (`query_batch_hashes`, which prefetches
    /// the rows of later keys).
    pub batch_ms: Option<f64>,
    /// Mean filters checked by a "yes" search (the paper's search bf-cost;
    /// `N` for the naive scan, none for the flat layouts).
    pub cost: Option<f64>,
    /// Mean filters checked by a "no" search.
    pub no_cost: Option<f64>,
    /// Mean ids returned by a "yes" search.
    pub matches: f64,
}

/// Mean time and cost of one kind of maintenance operation (insert, delete
/// or update); `None` where the engine was not measured on it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpCost {
    /// Mean time of one operation.
    pub ms: Option<f64>,
    /// Mean tree nodes it accessed (read or written).
    pub cost: Option<f64>,
    /// Mean tree nodes whose filter value it wrote (ORed into, recomputed
    /// or created): the count the paper's Fig. 6b describes.
    pub written: Option<f64>,
}

/// The shared inputs of one point: the data, its filters, the searches and
/// the naive scan's answers to the first `check` of each kind.
pub struct Point<'a> {
    /// The data set.
    pub data: &'a Dataset,
    /// Tree configuration (order, metric, heuristic).
    pub config: BloofiConfig,
    /// The `N` filters.
    pub filters: &'a [BloomFilter],
    /// "Yes" searches.
    pub yes: &'a [KeyHash],
    /// "No" searches.
    pub no: &'a [KeyHash],
    /// Sorted naive answers for `yes[..check]` then `no[..check]`.
    pub reference: &'a [Vec<u64>],
    /// Insert/delete pairs measured after the searches (0 for none).
    pub ops: usize,
}

/// The naive scan's sorted answers to `queries`: the reference every engine
/// is checked against.
pub fn reference(filters: &[BloomFilter], queries: impl Iterator<Item = KeyHash>) -> Vec<Vec<u64>> {
    queries
        .map(|h| filters.iter().enumerate().filter(|(_, f)| f.contains_hash(h)).map(|(i, _)| i as u64).collect())
        .collect()
}

enum Built {
    Naive(NaiveIndex),
    Tree(Box<BloofiTree>),
    Flat(FlatBloofiPaper),
    Sliced(SlicedIndex),
}

type Res<T> = Result<T, String>;

/// Runs `$body` with `$x` bound to the built index, whatever its engine
/// (each index has its own error type, so no one trait object fits them
/// all).
macro_rules! on_index {
    ($built:expr, $x:ident => $body:expr) => {
        match $built {
            Built::Naive($x) => $body,
            Built::Tree($x) => $body,
            Built::Flat($x) => $body,
            Built::Sliced($x) => $body,
        }
    };
}

fn fail<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

impl Built {
    fn new(engine: Engine, point: &Point<'_>) -> Res<Self> {
        let params = point.data.params;
        Ok(match engine {
            Engine::Naive => Built::Naive(NaiveIndex::new(params)),
            Engine::Bloofi | Engine::BloofiBulk => {
                Built::Tree(Box::new(BloofiTree::new(params, point.config).map_err(fail("tree"))?))
            }
            Engine::Flat => Built::Flat(FlatBloofiPaper::new(params)),
            Engine::Sliced => Built::Sliced(SlicedIndex::new(params)),
        })
    }

    /// Builds from `filters` (ids `0..`): one by one, except the bulk tree
    /// and the sliced index's batch insert.
    fn build(engine: Engine, point: &Point<'_>, filters: &[BloomFilter]) -> Res<Self> {
        let pairs: Vec<(u64, &BloomFilter)> = filters.iter().enumerate().map(|(i, f)| (i as u64, f)).collect();
        match engine {
            Engine::BloofiBulk => {
                let tree = BloofiTree::bulk_build(point.data.params, point.config, &pairs, BulkOrder::Auto)
                    .map_err(fail("bulk build"))?;
                Ok(Built::Tree(Box::new(tree)))
            }
            Engine::Sliced => {
                let mut s = SlicedIndex::new(point.data.params);
                s.insert_filters(&pairs).map_err(fail("sliced build"))?;
                Ok(Built::Sliced(s))
            }
            _ => {
                let mut b = Built::new(engine, point)?;
                for (id, f) in pairs {
                    b.insert(id, f)?;
                }
                Ok(b)
            }
        }
    }

    fn insert(&mut self, id: u64, f: &BloomFilter) -> Res<()> {
        on_index!(self, x => x.insert_filter(id, f).map_err(fail("insert")))
    }

    fn delete(&mut self, id: u64) -> Res<()> {
        on_index!(self, x => x.remove_set(id).map_err(fail("delete")))
    }

    fn update(&mut self, id: u64, f: &BloomFilter) -> Res<()> {
        on_index!(self, x => x.update_filter(id, f).map_err(fail("update")))
    }

    /// Answers into `out`; returns the tree's search cost, `N` for naive,
    /// 0 for the flat layouts.
    #[inline]
    fn query(&self, h: KeyHash, out: &mut Vec<u64>) -> usize {
        match self {
            Built::Tree(x) => x.query_hash_with_cost(h, out),
            other => {
                on_index!(other, x => x.query_hash_into(h, out));
                if let Built::Naive(x) = other { x.len() } else { 0 }
            }
        }
    }

    fn last_cost(&self) -> Option<f64> {
        match self {
            Built::Tree(t) => Some(t.last_maintenance_cost() as f64),
            _ => None,
        }
    }

    fn storage_bytes(&self, words: usize) -> usize {
        match self {
            Built::Naive(x) => x.len() * words * 8,
            Built::Tree(x) => x.storage_bytes(),
            Built::Flat(x) => x.storage_bytes(),
            Built::Sliced(x) => x.memory_bytes(),
        }
    }

    fn validate(&self) -> Res<()> {
        on_index!(self, x => x.validate().map_err(|e| e.to_string()))
    }
}

/// Builds `variant` on `point`, checks it, and measures it.
///
/// # Errors
///
/// An engine error, a broken invariant, or an answer that differs from the
/// naive scan's (with the query's index).
pub fn measure(variant: Variant, point: &Point<'_>, x: f64) -> Res<Row> {
    let data = point.data;
    let n = point.filters.len();
    let mut row = Row { x, label: variant.name(), filters: n, m: data.params.m(), ..Row::default() };

    // Construction (from half the values for AU), then the AU updates.
    let (built, build) = if variant.after_updates {
        let halves: Vec<BloomFilter> = (0..n).map(|i| data.half_filter(i)).collect();
        timed(|| Built::build(variant.engine, point, &halves))
    } else {
        timed(|| Built::build(variant.engine, point, point.filters))
    };
    let mut built = built?;
    row.build_s = build.as_secs_f64();
    if variant.after_updates {
        if let Built::Tree(t) = &mut built {
            t.reset_maintenance_stats();
        }
        let (updated, time) =
            timed(|| point.filters.iter().enumerate().try_for_each(|(i, f)| built.update(i as u64, f)));
        updated?;
        row.update.ms = Some(time.as_secs_f64() * 1e3 / n.max(1) as f64);
        if let Built::Tree(t) = &built {
            row.update.cost = Some(t.maintenance_stats().mean_update());
            row.update.written = Some(t.maintenance_stats().mean_update_written());
        }
    }
    built.validate().map_err(|e| format!("{}: invalid after construction: {e}", variant.name()))?;

    // A benchmark checks its own answers first.
    let check = point.reference.len() / 2;
    let mut out = Vec::new();
    for (i, h) in point.yes[..check].iter().chain(&point.no[..check]).enumerate() {
        built.query(*h, &mut out);
        out.sort_unstable();
        if out != point.reference[i] {
            return Err(format!(
                "{}: answer {i} differs from the naive scan: {:?} vs {:?}",
                variant.name(),
                out,
                point.reference[i]
            ));
        }
    }

    // Search time and cost on the "yes" searches, cost on the "no" ones.
    let (mut cost, mut matches) = (0usize, 0usize);
    let secs = best_of(|| {
        (cost, matches) = (0, 0);
        timed(|| {
            for h in point.yes {
                cost += built.query(*h, &mut out);
                matches += out.len();
                black_box(&out);
            }
        })
        .1
    });
    row.search.ms = secs * 1e3 / point.yes.len().max(1) as f64;
    if let Built::Sliced(sliced) = &built {
        let mut results = BatchResults::default();
        let secs = best_of(|| {
            timed(|| {
                for chunk in point.yes.chunks(BATCH) {
                    sliced.query_batch_hashes(chunk, &mut results);
                    black_box(&results);
                }
            })
            .1
        });
        row.search.batch_ms = Some(secs * 1e3 / point.yes.len().max(1) as f64);
    }
    let per = |c: usize, q: usize| c as f64 / q.max(1) as f64;
    row.search.matches = per(matches, point.yes.len());
    let mut no_cost = 0usize;
    for h in point.no {
        no_cost += built.query(*h, &mut out);
    }
    if matches!(variant.engine, Engine::Naive | Engine::Bloofi | Engine::BloofiBulk) {
        row.search.cost = Some(per(cost, point.yes.len()));
        row.search.no_cost = Some(per(no_cost, point.no.len()));
    }
    row.storage_kb = built.storage_bytes(data.params.words()) as f64 / 1e3;

    // Maintenance: insert a new filter, delete a random one, `ops` times.
    if point.ops > 0 && !variant.after_updates {
        let mut rng = SmallRng::seed_from_u64(data.seed ^ 0xde1e7e);
        let mut live: Vec<u64> = (0..n as u64).collect();
        let fresh: Vec<BloomFilter> = (0..point.ops).map(|j| data.filter(n + j)).collect();
        let (mut ins_t, mut del_t, mut ins_c, mut del_c) = (0.0, 0.0, 0.0, 0.0);
        if let Built::Tree(t) = &mut built {
            t.reset_maintenance_stats();
        }
        for (j, f) in fresh.iter().enumerate() {
            let id = (n + j) as u64;
            let (inserted, time) = timed(|| built.insert(id, f));
            inserted?;
            ins_t += time.as_secs_f64();
            ins_c += built.last_cost().unwrap_or(0.0);
            live.push(id);
            let victim = live.swap_remove(rng.random_range(0..live.len()));
            let (deleted, time) = timed(|| built.delete(victim));
            deleted?;
            del_t += time.as_secs_f64();
            del_c += built.last_cost().unwrap_or(0.0);
        }
        let ops = point.ops as f64;
        row.insert.ms = Some(ins_t * 1e3 / ops);
        row.delete.ms = Some(del_t * 1e3 / ops);
        if built.last_cost().is_some() {
            row.insert.cost = Some(ins_c / ops);
            row.delete.cost = Some(del_c / ops);
        }
        if let Built::Tree(t) = &built {
            let stats = t.maintenance_stats();
            row.insert.written = Some(stats.mean_insert_written());
            row.delete.written = Some(stats.mean_delete_written());
        }
        built.validate().map_err(|e| format!("{}: invalid after maintenance: {e}", variant.name()))?;
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::super::data::Distribution;
    use super::*;
    use bloomslice::BloomParams;

    #[test]
    fn every_engine_agrees_with_the_naive_scan() {
        let params = BloomParams::for_capacity(1000, 0.01).unwrap();
        for distribution in [Distribution::Nonrandom, Distribution::Random] {
            let data = Dataset { params, filters: 70, n: 20, distribution, seed: 9 };
            let filters = data.all_filters();
            let (yes, no) = data.searches(40);
            let reference = reference(&filters, yes[..20].iter().chain(&no[..20]).copied());
            let point = Point {
                data: &data,
                config: BloofiConfig::default(),
                filters: &filters,
                yes: &yes,
                no: &no,
                reference: &reference,
                ops: 5,
            };
            for engine in [Engine::Naive, Engine::Bloofi, Engine::BloofiBulk, Engine::Flat, Engine::Sliced] {
                for variant in [Variant::plain(engine), Variant::au(engine)] {
                    let row = measure(variant, &point, 70.0).unwrap();
                    assert!(row.search.matches >= 1.0, "{row:?}");
                    assert!(row.storage_kb > 0.0);
                    if engine == Engine::Bloofi && !variant.after_updates {
                        assert!(row.insert.cost.unwrap() >= 1.0 && row.delete.cost.unwrap() >= 1.0);
                    }
                    if variant.after_updates && engine == Engine::Bloofi {
                        assert!(row.update.cost.unwrap() >= 1.0);
                    }
                }
            }
        }
    }
}

//! `paper bloofi`: reproduces Section 7 of the Bloofi paper (Crainiceanu
//! and Lemire, *Bloofi: Multidimensional Bloom Filters*, Figures 5 to 10 and
//! the Section 5.4 heuristic numbers) for the engines naive, Bloofi
//! (iterative), Bloofi-Bulk, Flat-Bloofi (the paper's layout) and
//! bloomslice's `SlicedIndex`.
//!
//! Every experiment varies one parameter and keeps Table 1's defaults for
//! the rest: `N = 1000` filters, order `d = 2`, `n_exp = 10 000` (so
//! `m = 100 992` bits, `k = 7`), `n = 100` values per filter, `p = 0.01`,
//! iterative construction, Hamming distance, nonrandom data (see [`data`]).
//!
//! | experiment | paper | varies |
//! | --- | --- | --- |
//! | `n` | Fig. 5a-c, 6a-b | `N` from 100 to 100 000; AU variants; maintenance |
//! | `order` | Fig. 7a-c, 6c | `d` from 2 to 25 |
//! | `nexp` | Fig. 8a-b | `n_exp` (so `m`) from 100 to 100 000 |
//! | `p` | Fig. 9a-b | `p` from 1e-7 to 0.5 |
//! | `elements` | Fig. 9c | `n` from 1 to 10 000 |
//! | `metric` | Fig. 8c, 10a | Hamming, Cosine, Jaccard vs `N` |
//! | `data` | Fig. 10b-c | nonrandom vs random vs `N` |
//! | `heuristic` | Section 7.2.1 text | Section 5.4 heuristic on/off at `N` = 10 000, 100 000 |
//!
//! Each experiment writes `EXP.csv` and its figures as `figNN.svg` and
//! `figNN.png` into the output folder; the run ends with `report.md`
//! (`report-EXP.md` when one experiment runs), which
//! states for every figure the paper's observation, ours with the numbers,
//! and whether they agree, plus the speed figures. Before anything is timed
//! every engine's answers are checked against the naive scan on a sample of
//! "yes" and "no" searches (see [`mod@measure`]). Progress goes to stderr.
//!
//! `--quick` runs a reduced grid in seconds (for CI and the README); the
//! full grid takes tens of minutes on two shared cores.

pub mod data;
pub mod measure;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use bloomslice::BloomParams;
use bloomslice_papers::{BloofiConfig, Metric};

use crate::plot::{LineChart, Series, write as write_chart};
use data::{Dataset, Distribution};
use measure::{Engine, OPS, OpCost, Point, Row, SearchCost, Variant, measure, reference};

/// The experiments of `paper bloofi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Experiment {
    /// Fig. 5 and 6a-b: vary N (with AU variants and maintenance).
    N,
    /// Fig. 7 and 6c: vary the order d.
    Order,
    /// Fig. 8a-b: vary n_exp (the filter size m).
    Nexp,
    /// Fig. 9a-b: vary the false-positive probability p.
    P,
    /// Fig. 9c: vary the values per filter n.
    Elements,
    /// Fig. 8c and 10a: Hamming, Cosine and Jaccard vs N.
    Metric,
    /// Fig. 10b-c: nonrandom vs random data vs N.
    Data,
    /// Section 7.2.1: the Section 5.4 heuristic on and off.
    Heuristic,
    /// The speed figures alone (naive, Bloofi, Flat, Sliced at N = 1000
    /// and the largest N), for re-measuring them on a quieter machine.
    Speed,
    /// Every experiment above, in that order.
    All,
}

impl Experiment {
    /// The experiments `all` runs, most important first.
    pub const EACH: [Experiment; 8] = [
        Experiment::N,
        Experiment::Heuristic,
        Experiment::Order,
        Experiment::Nexp,
        Experiment::P,
        Experiment::Elements,
        Experiment::Metric,
        Experiment::Data,
    ];

    /// Name on the command line and of the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::N => "n",
            Experiment::Order => "order",
            Experiment::Nexp => "nexp",
            Experiment::P => "p",
            Experiment::Elements => "elements",
            Experiment::Metric => "metric",
            Experiment::Data => "data",
            Experiment::Heuristic => "heuristic",
            Experiment::Speed => "speed",
            Experiment::All => "all",
        }
    }
}

/// Arguments of `paper bloofi`.
#[derive(clap::Args, Debug, Clone)]
pub struct BloofiArgs {
    /// Experiment to run (`all` runs every one).
    #[arg(value_enum)]
    pub experiment: Experiment,
    /// Reduced grid that runs in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Folder for the CSVs, plots and report.md (created if missing)
    /// [default: bench/results/bloofi, or bench/results/bloofi-quick with
    /// --quick, so that a quick run never overwrites the full one].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of the random data and searches.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Measure nothing: redraw the plots and the report from the CSVs
    /// already in `--out` (experiments whose CSV is missing are skipped).
    #[arg(long)]
    pub replot: bool,
    /// Leave out grid points with more filters than this (a list left
    /// empty gets this value as its only point).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    pub max_filters: Option<u64>,
}

/// The grids of one run.
#[derive(Clone, Debug)]
pub struct Grid {
    /// `N` for `n`, `metric`, `data`.
    pub filters: Vec<usize>,
    /// `N` for `heuristic`.
    pub heuristic_filters: Vec<usize>,
    /// `d` for `order`.
    pub orders: Vec<usize>,
    /// `n_exp` for `nexp`.
    pub nexps: Vec<u64>,
    /// `p` for `p`.
    pub ps: Vec<f64>,
    /// `n` for `elements`.
    pub elements: Vec<usize>,
    /// Searches per point: `budget / N`, clamped to `min..=max`.
    pub query_budget: usize,
    /// Fewest searches per point.
    pub min_queries: usize,
    /// Most searches per point.
    pub max_queries: usize,
    /// Insert/delete pairs measured per point.
    pub ops: usize,
    /// Searches of each kind checked against the naive scan.
    pub check: usize,
}

impl Grid {
    /// The paper's grid (full) or a reduced one (quick), without points
    /// above `max_filters`.
    pub fn new(quick: bool, max_filters: Option<usize>) -> Self {
        let mut g = if quick {
            Grid {
                filters: vec![100, 300, 1000],
                heuristic_filters: vec![1000, 3000],
                orders: vec![2, 3, 5],
                nexps: vec![1000, 10_000],
                ps: vec![1e-3, 1e-2, 0.1],
                elements: vec![10, 100, 1000],
                query_budget: 1_000_000,
                min_queries: 200,
                max_queries: 500,
                ops: 20,
                check: 100,
            }
        } else {
            Grid {
                filters: vec![100, 300, 1000, 3000, 10_000, 30_000, 100_000],
                heuristic_filters: vec![10_000, 100_000],
                orders: vec![2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25],
                nexps: vec![100, 300, 1000, 3000, 10_000, 30_000, 100_000],
                ps: vec![1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.2, 0.5],
                elements: vec![1, 3, 10, 30, 100, 300, 1000, 3000, 10_000],
                query_budget: 200_000_000,
                min_queries: 2000,
                max_queries: 20_000,
                ops: 200,
                check: 300,
            }
        };
        if let Some(max) = max_filters {
            // Keep at least one point per list: `max` itself.
            for list in [&mut g.filters, &mut g.heuristic_filters] {
                list.retain(|&n| n <= max);
                if list.is_empty() {
                    list.push(max);
                }
            }
        }
        g
    }

    fn queries(&self, filters: usize) -> usize {
        (self.query_budget / filters.max(1)).clamp(self.min_queries, self.max_queries)
    }
}

/// One point's parameters (Table 1 unless changed).
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// Filters `N`.
    pub filters: usize,
    /// Order `d`.
    pub order: usize,
    /// Expected values per filter `n_exp`.
    pub n_exp: u64,
    /// Desired false-positive probability.
    pub p: f64,
    /// Values per filter `n`.
    pub n: usize,
    /// Insert metric.
    pub metric: Metric,
    /// Data distribution.
    pub distribution: Distribution,
    /// The Section 5.4 heuristic.
    pub heuristic: bool,
}

impl Default for Setup {
    /// Table 1.
    fn default() -> Self {
        Setup {
            filters: 1000,
            order: 2,
            n_exp: 10_000,
            p: 0.01,
            n: 100,
            metric: Metric::Hamming,
            distribution: Distribution::Nonrandom,
            heuristic: true,
        }
    }
}

/// Fig. 6b/6c's three lines: the tree's insert and delete cost, and the
/// update cost of the after-updates (AU) build (nodes accessed); then, when
/// the CSV has them, the same three as nodes whose filter was written (the
/// paper's basis).
fn maintenance_cost_series(rows: &[Row]) -> Vec<Series> {
    let mut mc = Vec::new();
    for (what, pick) in
        [("accessed", (|op: OpCost| op.cost) as fn(OpCost) -> Option<f64>), ("written", |op| op.written)]
    {
        for (i, (label, op)) in ["Bloofi", "Bloofi", "Bloofi-AU"].into_iter().zip(OPS).enumerate() {
            for mut s in series_of(rows, &[label], |r| pick(r.ops()[i])) {
                s.name = format!("Bloofi-{op} ({what})");
                mc.push(s);
            }
        }
    }
    mc
}

/// Groups `rows` by label (first-seen order) into plot series of `f`,
/// keeping only `labels` when it is not empty, in its order.
fn series_of(rows: &[Row], labels: &[&str], f: impl Fn(&Row) -> Option<f64>) -> Vec<Series> {
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        if !names.contains(&r.label) {
            names.push(r.label.clone());
        }
    }
    if !labels.is_empty() {
        names = labels.iter().filter(|l| names.iter().any(|n| n == *l)).map(|l| l.to_string()).collect();
    }
    names
        .into_iter()
        .map(|name| {
            let points = rows.iter().filter(|r| r.label == name).filter_map(|r| Some((r.x, f(r)?))).collect();
            Series::new(name, points)
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// The distinct `x` of the rows labelled `label`, ascending.
fn xs_of(rows: &[Row], label: &str) -> Vec<f64> {
    let mut v: Vec<f64> = rows.iter().filter(|r| r.label == label).map(|r| r.x).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// The columns of an experiment's CSV after the first (the varied
/// parameter, named by [`x_name`]), in [`Row`]'s field order (`ms`, `cost` of an [`OpCost`]).
const COLUMNS: &str = concat!(
    "label,filters,m,search_ms,batch_ms,search_cost,no_cost,matches,storage_kb,build_s,",
    "insert_ms,insert_cost,delete_ms,delete_cost,update_ms,update_cost"
);

/// Columns after [`COLUMNS`] (the `written` of each [`OpCost`]) that CSVs
/// written before they existed lack (read back as absent).
const LATER_COLUMNS: &str = "insert_written,delete_written,update_written";

/// Reads back a CSV written by [`csv()`] (columns found by name, the first is
/// the varied parameter whatever its name).
///
/// # Errors
///
/// A missing column, a line with another number of cells, or a cell that is
/// not a number.
pub fn parse_csv(text: &str) -> Result<Vec<Row>, String> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().map_err(|e| e.to_string())?.clone();
    // Cell index of each field of `Row`, in its order (the first column is x;
    // `None` for a later column the CSV lacks).
    let column = |name: &str| header.iter().position(|h| h == name);
    let idx = std::iter::once(Ok(Some(0)))
        .chain(COLUMNS.split(',').map(|name| column(name).map(Some).ok_or(format!("no column {name}"))))
        .chain(LATER_COLUMNS.split(',').map(|name| Ok(column(name))))
        .collect::<Result<Vec<Option<usize>>, String>>()?;
    let mut rows = Vec::new();
    for (ln, record) in reader.records().enumerate() {
        let record = record.map_err(|e| format!("line {}: {e}", ln + 2))?;
        // A missing later column reads as an empty cell.
        let cell = |i: usize| idx[i].map_or(Ok(""), |j| record.get(j).ok_or(format!("line {}: too few cells", ln + 2)));
        let num = |i: usize| -> Result<f64, String> {
            let c = cell(i)?;
            c.parse().map_err(|_| format!("line {}: {c:?} is not a number", ln + 2))
        };
        let opt =
            |i: usize| -> Result<Option<f64>, String> { if cell(i)?.is_empty() { Ok(None) } else { num(i).map(Some) } };
        rows.push(Row {
            x: num(0)?,
            label: cell(1)?.to_string(),
            filters: num(2)? as usize,
            m: num(3)? as u64,
            search: SearchCost { ms: num(4)?, batch_ms: opt(5)?, cost: opt(6)?, no_cost: opt(7)?, matches: num(8)? },
            storage_kb: num(9)?,
            build_s: num(10)?,
            insert: OpCost { ms: opt(11)?, cost: opt(12)?, written: opt(17)? },
            delete: OpCost { ms: opt(13)?, cost: opt(14)?, written: opt(18)? },
            update: OpCost { ms: opt(15)?, cost: opt(16)?, written: opt(19)? },
        });
    }
    Ok(rows)
}

/// The ideal search cost `l log_l N + 1` of a tree with `l` children per
/// inner node.
pub fn ideal_cost(l: usize, filters: usize) -> f64 {
    let l = l as f64;
    l * (filters as f64).ln() / l.ln() + 1.0
}

/// What one experiment produced.
pub struct Outcome {
    /// The experiment.
    pub experiment: Experiment,
    /// Its rows.
    pub rows: Vec<Row>,
    /// Figure files written (stems relative to the output folder) and titles.
    pub figures: Vec<(String, String)>,
}

/// Whether a point also times inserts, deletes and updates (the grid's
/// `ops` of them) or only builds and searches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Maintenance {
    /// Time the grid's `ops` inserts, deletes and updates.
    Timed,
    /// Build and search only.
    Skipped,
}

/// A chart's axis labels and which axes are logarithmic.
#[derive(Clone, Copy)]
struct Axes<'a> {
    x: &'a str,
    y: &'a str,
    log_x: bool,
    log_y: bool,
}

impl<'a> Axes<'a> {
    /// Both axes logarithmic.
    fn log_log(x: &'a str, y: &'a str) -> Self {
        Axes { x, y, log_x: true, log_y: true }
    }

    /// Logarithmic x, linear y.
    fn log_x(x: &'a str, y: &'a str) -> Self {
        Axes { x, y, log_x: true, log_y: false }
    }

    /// Both axes linear.
    fn linear(x: &'a str, y: &'a str) -> Self {
        Axes { x, y, log_x: false, log_y: false }
    }
}

const N_AXIS: &str = "number of Bloom filters indexed N";
const TIME_AXIS: &str = "search time (ms)";
const COST_AXIS: &str = "search bf-cost (filters checked)";
const MAINTENANCE_AXIS: &str = "average nodes accessed";

/// One experiment in progress: where its figures go, the grid and seed it
/// measures with, the progress log, and the figures drawn so far.
struct Ctx<'a> {
    out: &'a Path,
    grid: &'a Grid,
    seed: u64,
    log: &'a mut dyn FnMut(&str),
    figures: Vec<(String, String)>,
}

impl Ctx<'_> {
    /// Runs `variants` on one point; labels each row `prefix` + variant name.
    fn point(
        &mut self,
        setup: &Setup,
        variants: &[Variant],
        x: f64,
        prefix: &str,
        maintenance: Maintenance,
    ) -> Result<Vec<Row>, String> {
        let grid = self.grid;
        let params = BloomParams::for_capacity(setup.n_exp, setup.p).map_err(|e| e.to_string())?;
        let data =
            Dataset { params, filters: setup.filters, n: setup.n, distribution: setup.distribution, seed: self.seed };
        let started = Instant::now();
        let filters = data.all_filters();
        let q = grid.queries(setup.filters);
        let (yes, no) = data.searches(q);
        let check = grid.check.min(q);
        let reference = reference(&filters, yes[..check].iter().chain(&no[..check]).copied());
        let config = BloofiConfig::with_order(setup.order).metric(setup.metric).all_ones_heuristic(setup.heuristic);
        let ops = if maintenance == Maintenance::Timed { grid.ops } else { 0 };
        let point = Point { data: &data, config, filters: &filters, yes: &yes, no: &no, reference: &reference, ops };
        (self.log)(&format!(
            "N={} d={} m={} k={} n={} {} {}: data ready in {:.1}s, {q} searches of each kind",
            setup.filters,
            setup.order,
            params.m(),
            params.k(),
            setup.n,
            setup.metric,
            setup.distribution.name(),
            started.elapsed().as_secs_f64()
        ));
        let mut rows = Vec::new();
        for &v in variants {
            let t = Instant::now();
            let mut row = measure(v, &point, x)?;
            row.label = format!("{prefix}{}", row.label);
            (self.log)(&format!(
                "  {:<24} checked; build {:.2}s, search {:.5} ms, cost {}, {:.1}s",
                row.label,
                row.build_s,
                row.search.ms,
                row.search.cost.map_or("-".into(), |c| format!("{c:.2}")),
                t.elapsed().as_secs_f64()
            ));
            rows.push(row);
        }
        Ok(rows)
    }

    /// Draws one chart into `out/stem.{svg,png}` and lists it for the report.
    fn chart(&mut self, stem: &str, title: &str, axes: Axes<'_>, series: Vec<Series>) -> Result<(), String> {
        let chart = LineChart {
            title: title.into(),
            x_label: axes.x.into(),
            y_label: axes.y.into(),
            log_x: axes.log_x,
            log_y: axes.log_y,
            series,
        };
        write_chart(&chart, &self.out.join(stem))?;
        self.figures.push((stem.to_string(), title.to_string()));
        Ok(())
    }
}

/// Runs `exp` and draws its figures; with `replay`, measures nothing and
/// draws the figures of those rows (read back from the CSV).
fn run_experiment(exp: Experiment, ctx: &mut Ctx<'_>, replay: Option<Vec<Row>>) -> Result<Vec<Row>, String> {
    let rows = match replay {
        Some(rows) => rows,
        None => measure_experiment(exp, ctx)?,
    };
    match exp {
        Experiment::N => draw_n(ctx, &rows)?,
        Experiment::Order => draw_order(ctx, &rows)?,
        Experiment::Nexp | Experiment::P | Experiment::Elements => draw_filter_shape(exp, ctx, &rows)?,
        Experiment::Metric | Experiment::Data | Experiment::Heuristic => draw_vs_n(exp, ctx, &rows)?,
        // The speed figures go into the report only.
        Experiment::Speed => {}
        Experiment::All => unreachable!("expanded by the caller"),
    }
    Ok(rows)
}

/// Measures every point of `exp` on the context's grid.
fn measure_experiment(exp: Experiment, ctx: &mut Ctx<'_>) -> Result<Vec<Row>, String> {
    use Engine::*;
    use Maintenance::{Skipped, Timed};
    let grid = ctx.grid;
    let base = Setup::default();
    let mut rows = Vec::new();
    match exp {
        Experiment::N => {
            let variants = [
                Variant::plain(Naive),
                Variant::plain(Bloofi),
                Variant::plain(BloofiBulk),
                Variant::plain(Flat),
                Variant::plain(Sliced),
                Variant::au(Naive),
                Variant::au(Bloofi),
                Variant::au(Flat),
                Variant::au(Sliced),
            ];
            for &n in &grid.filters {
                rows.extend(ctx.point(&Setup { filters: n, ..base }, &variants, n as f64, "", Timed)?);
            }
        }
        Experiment::Order => {
            let variants = [Variant::plain(Bloofi), Variant::plain(BloofiBulk), Variant::au(Bloofi)];
            for &d in &grid.orders {
                let setup = Setup { order: d, ..base };
                rows.extend(ctx.point(&setup, &variants, d as f64, "", Timed)?);
                if d == grid.orders[0] {
                    // The naive scan does not depend on d: measured once.
                    let naive = ctx.point(&setup, &[Variant::plain(Naive)], d as f64, "", Timed)?;
                    rows.extend(grid.orders.iter().map(|&d2| Row { x: d2 as f64, ..naive[0].clone() }));
                }
            }
        }
        Experiment::Nexp | Experiment::P | Experiment::Elements => {
            let variants =
                [Variant::plain(Bloofi), Variant::plain(Naive), Variant::plain(Flat), Variant::plain(Sliced)];
            let points: Vec<(Setup, f64)> = match exp {
                Experiment::Nexp => grid
                    .nexps
                    .iter()
                    .map(|&e| {
                        let m = BloomParams::for_capacity(e, base.p).map_or(0.0, |p| p.m() as f64);
                        (Setup { n_exp: e, ..base }, m)
                    })
                    .collect(),
                Experiment::P => grid.ps.iter().map(|&p| (Setup { p, ..base }, p)).collect(),
                _ => grid.elements.iter().map(|&n| (Setup { n, ..base }, n as f64)).collect(),
            };
            for (setup, x) in points {
                rows.extend(ctx.point(&setup, &variants, x, "", Skipped)?);
            }
        }
        Experiment::Metric => {
            for &n in &grid.filters {
                for metric in [Metric::Hamming, Metric::Cosine, Metric::Jaccard] {
                    let setup = Setup { filters: n, metric, ..base };
                    let mut r = ctx.point(&setup, &[Variant::plain(Bloofi)], n as f64, "", Skipped)?;
                    r[0].label = metric_label(metric).to_string();
                    rows.extend(r);
                }
            }
        }
        Experiment::Data => {
            let variants =
                [Variant::plain(Flat), Variant::plain(Bloofi), Variant::plain(Naive), Variant::plain(Sliced)];
            for &n in &grid.filters {
                for dist in [Distribution::Nonrandom, Distribution::Random] {
                    let setup = Setup { filters: n, distribution: dist, ..base };
                    let mut r = ctx.point(&setup, &variants, n as f64, "", Skipped)?;
                    let suffix = if dist == Distribution::Random { "-Random" } else { "-Nonrandom" };
                    for row in &mut r {
                        row.label.push_str(suffix);
                    }
                    rows.extend(r);
                }
            }
        }
        Experiment::Speed => {
            let variants =
                [Variant::plain(Naive), Variant::plain(Bloofi), Variant::plain(Flat), Variant::plain(Sliced)];
            for n in [1000].into_iter().chain(grid.filters.last().copied().filter(|&n| n != 1000)) {
                rows.extend(ctx.point(&Setup { filters: n, ..base }, &variants, n as f64, "", Skipped)?);
            }
        }
        Experiment::Heuristic => {
            for &n in &grid.heuristic_filters {
                for on in [true, false] {
                    let prefix = if on { "heuristic on: " } else { "heuristic off: " };
                    let setup = Setup { filters: n, heuristic: on, ..base };
                    rows.extend(ctx.point(&setup, &[Variant::plain(Bloofi)], n as f64, prefix, Skipped)?);
                }
            }
        }
        Experiment::All => unreachable!("expanded by the caller"),
    }
    Ok(rows)
}

/// Fig. 5a-c and 6a-b: search time, search cost, storage and maintenance
/// against N.
fn draw_n(ctx: &mut Ctx<'_>, rows: &[Row]) -> Result<(), String> {
    let base = Setup::default();
    let mut times = series_of(rows, &[], |r| Some(r.search.ms));
    times.extend(series_of(rows, &["Sliced"], |r| r.search.batch_ms).into_iter().map(|mut s| {
        s.name = format!("Sliced (batches of {})", measure::BATCH);
        s
    }));
    ctx.chart("fig05a_search_time", "Fig. 5a: search time vs N", Axes::log_log(N_AXIS, TIME_AXIS), times)?;
    let mut cost = vec![Series::new(
        "Ideal (4 log4 N + 1)",
        xs_of(rows, "Bloofi").into_iter().map(|n| (n, ideal_cost(2 * base.order, n as usize))).collect(),
    )];
    cost.extend(series_of(rows, &["Bloofi", "Bloofi-Bulk", "Bloofi-AU", "Naive"], |r| r.search.cost));
    ctx.chart("fig05b_search_cost", "Fig. 5b: search bf-cost vs N", Axes::log_log(N_AXIS, COST_AXIS), cost)?;
    ctx.chart(
        "fig05c_storage",
        "Fig. 5c: storage cost vs N",
        Axes::log_log(N_AXIS, "storage cost (kB)"),
        series_of(rows, &["Flat", "Bloofi", "Bloofi-Bulk", "Naive", "Sliced"], |r| Some(r.storage_kb)),
    )?;
    let mut maint = Vec::new();
    for (i, op) in OPS.into_iter().enumerate() {
        for e in ["Flat", "Bloofi", "Naive", "Sliced"] {
            let label = if op == "Update" { format!("{e}-AU") } else { e.to_string() };
            let mut s = series_of(rows, &[label.as_str()], |r| r.ops()[i].ms);
            for s in &mut s {
                s.name = format!("{e}-{op}");
            }
            maint.extend(s);
        }
    }
    ctx.chart(
        "fig06a_maintenance_time",
        "Fig. 6a: maintenance time vs N",
        Axes::log_log(N_AXIS, "operation time (ms)"),
        maint,
    )?;
    ctx.chart(
        "fig06b_maintenance_cost",
        "Fig. 6b: maintenance bf-cost vs N",
        Axes::log_x(N_AXIS, MAINTENANCE_AXIS),
        maintenance_cost_series(rows),
    )
}

/// Fig. 7a-c and 6c: search time, search cost, storage and maintenance
/// against the order d.
fn draw_order(ctx: &mut Ctx<'_>, rows: &[Row]) -> Result<(), String> {
    let base = Setup::default();
    let dx = "Bloofi order d";
    ctx.chart(
        "fig07a_search_time",
        "Fig. 7a: search time vs d",
        Axes::linear(dx, TIME_AXIS),
        series_of(rows, &["Bloofi", "Bloofi-Bulk", "Bloofi-AU"], |r| Some(r.search.ms)),
    )?;
    let mut cost = vec![
        Series::new(
            "Ideal-Skinny (d log_d N + 1)",
            xs_of(rows, "Bloofi").into_iter().map(|d| (d, ideal_cost(d as usize, base.filters))).collect(),
        ),
        Series::new(
            "Ideal-Full (2d log_2d N + 1)",
            xs_of(rows, "Bloofi").into_iter().map(|d| (d, ideal_cost(2 * d as usize, base.filters))).collect(),
        ),
    ];
    cost.extend(series_of(rows, &["Bloofi", "Bloofi-Bulk", "Bloofi-AU"], |r| r.search.cost));
    ctx.chart("fig07b_search_cost", "Fig. 7b: search bf-cost vs d", Axes::linear(dx, COST_AXIS), cost)?;
    ctx.chart(
        "fig07c_storage",
        "Fig. 7c: storage cost vs d",
        Axes::linear(dx, "storage cost (MB)"),
        series_of(rows, &["Bloofi", "Bloofi-Bulk", "Bloofi-AU", "Naive"], |r| Some(r.storage_kb / 1e3)),
    )?;
    ctx.chart(
        "fig06c_maintenance_cost_vs_d",
        "Fig. 6c: maintenance bf-cost vs d",
        Axes::linear(dx, MAINTENANCE_AXIS),
        maintenance_cost_series(rows),
    )
}

/// Fig. 8a-b (filter size m), 9a-b (p) and 9c (values per filter n):
/// search cost and time against one parameter of the filters.
fn draw_filter_shape(exp: Experiment, ctx: &mut Ctx<'_>, rows: &[Row]) -> Result<(), String> {
    let base = Setup::default();
    let ideal: Vec<(f64, f64)> =
        rows.iter().filter(|r| r.label == "Bloofi").map(|r| (r.x, ideal_cost(2 * base.order, base.filters))).collect();
    let mut cost = vec![Series::new("Ideal", ideal)];
    cost.extend(series_of(rows, &["Bloofi", "Naive"], |r| r.search.cost));
    let times = series_of(rows, &["Flat", "Bloofi", "Naive", "Sliced"], |r| Some(r.search.ms));
    match exp {
        Experiment::Nexp => {
            let mx = "Bloom filter size m (bits)";
            ctx.chart(
                "fig08a_search_cost_vs_m",
                "Fig. 8a: search bf-cost vs filter size",
                Axes::log_log(mx, COST_AXIS),
                cost,
            )?;
            ctx.chart(
                "fig08b_search_time_vs_m",
                "Fig. 8b: search time vs filter size",
                Axes::log_log(mx, TIME_AXIS),
                times,
            )
        }
        Experiment::P => {
            let px = "desired false-positive probability p";
            ctx.chart("fig09a_search_cost_vs_p", "Fig. 9a: search bf-cost vs p", Axes::log_log(px, COST_AXIS), cost)?;
            ctx.chart("fig09b_search_time_vs_p", "Fig. 9b: search time vs p", Axes::log_log(px, TIME_AXIS), times)
        }
        _ => {
            let ex = "number of elements n in each Bloom filter";
            ctx.chart("fig09c_search_time_vs_n", "Fig. 9c: search time vs n", Axes::log_log(ex, TIME_AXIS), times)?;
            ctx.chart(
                "fig09d_search_cost_vs_n",
                "Search bf-cost vs n (not shown in the paper)",
                Axes::log_log(ex, COST_AXIS),
                cost,
            )
        }
    }
}

/// Fig. 8c and 10a (insert metric), 10b-c (data distribution) and Section
/// 7.2.1 (the Section 5.4 heuristic on and off): search cost and, but for
/// the heuristic, search time against N.
fn draw_vs_n(exp: Experiment, ctx: &mut Ctx<'_>, rows: &[Row]) -> Result<(), String> {
    let (cost, cost_axes, cost_labels, time): (_, _, &[&str], _) = match exp {
        Experiment::Metric => (
            ("fig08c_search_cost_vs_metric", "Fig. 8c: search bf-cost vs metric vs N"),
            Axes::log_x(N_AXIS, COST_AXIS),
            &[],
            Some(("fig10a_search_time_vs_metric", "Fig. 10a: search time vs metric vs N")),
        ),
        Experiment::Data => (
            ("fig10b_search_cost_vs_data", "Fig. 10b: search bf-cost vs data distribution vs N"),
            Axes::log_log(N_AXIS, COST_AXIS),
            &["Bloofi-Nonrandom", "Naive-Nonrandom", "Bloofi-Random", "Naive-Random"],
            Some(("fig10c_search_time_vs_data", "Fig. 10c: search time vs data distribution vs N")),
        ),
        _ => (
            ("heuristic_search_cost", "Section 5.4 heuristic: search bf-cost vs N"),
            Axes::log_x(N_AXIS, COST_AXIS),
            &[],
            None,
        ),
    };
    ctx.chart(cost.0, cost.1, cost_axes, series_of(rows, cost_labels, |r| r.search.cost))?;
    let Some((stem, title)) = time else { return Ok(()) };
    ctx.chart(stem, title, Axes::log_log(N_AXIS, TIME_AXIS), series_of(rows, &[], |r| Some(r.search.ms)))
}

/// `report.md` for `all`, `report-EXP.md` for one experiment (so that a
/// single experiment run into the same folder keeps the full report).
fn report_name(exp: Experiment) -> String {
    if exp == Experiment::All { "report.md".into() } else { format!("report-{}.md", exp.name()) }
}

/// The paper's name of a metric.
fn metric_label(metric: Metric) -> &'static str {
    match metric {
        Metric::Hamming => "Hamming",
        Metric::Cosine => "Cosine",
        Metric::Jaccard => "Jaccard",
    }
}

/// The CSV of `rows`, first column named `x_name`, then one per other field
/// of [`Row`], in its order; an absent value is an empty cell. The
/// written-node columns (`insert_written`, `delete_written`, `update_written`)
/// are written only when some row has a value in them, so
/// rows read from an older CSV write back the same bytes.
pub fn csv(x_name: &str, rows: &[Row]) -> String {
    let later = rows.iter().any(|r| r.ops().iter().any(|op| op.written.is_some()));
    let later_names = if later { LATER_COLUMNS } else { "" };
    let header: Vec<&str> = [x_name]
        .into_iter()
        .chain(COLUMNS.split(','))
        .chain(later_names.split(',').filter(|c| !c.is_empty()))
        .collect();
    let o = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    crate::csv_text::from_rows(
        &header,
        rows.iter().map(|r| {
            let mut cells = vec![
                r.x.to_string(),
                r.label.clone(),
                r.filters.to_string(),
                r.m.to_string(),
                r.search.ms.to_string(),
                o(r.search.batch_ms),
                o(r.search.cost),
                o(r.search.no_cost),
                r.search.matches.to_string(),
                r.storage_kb.to_string(),
                r.build_s.to_string(),
            ];
            cells.extend(r.ops().iter().flat_map(|op| [o(op.ms), o(op.cost)]));
            if later {
                cells.extend(r.ops().map(|op| o(op.written)));
            }
            cells
        }),
    )
}

fn x_name(exp: Experiment) -> &'static str {
    match exp {
        Experiment::N | Experiment::Metric | Experiment::Data | Experiment::Heuristic | Experiment::Speed => "N",
        Experiment::Order => "d",
        Experiment::Nexp => "m",
        Experiment::P => "p",
        Experiment::Elements => "n",
        Experiment::All => "x",
    }
}

/// Runs the experiments `args` asks for, writing CSVs, plots and
/// `report.md` into `args.out` (or its default); progress goes to `log`.
///
/// # Errors
///
/// A one-line description of the first failure (including an engine whose
/// answers differ from the naive scan's).
pub fn run(args: &BloofiArgs, log: &mut dyn FnMut(&str)) -> Result<Vec<Outcome>, String> {
    let grid = Grid::new(args.quick, args.max_filters.map(|m| m as usize));
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(if args.quick { "bench/results/bloofi-quick" } else { "bench/results/bloofi" })
    });
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let list: Vec<Experiment> =
        if args.experiment == Experiment::All { Experiment::EACH.to_vec() } else { vec![args.experiment] };
    let mut outcomes = Vec::new();
    let started = Instant::now();
    for (i, &exp) in list.iter().enumerate() {
        log(&format!(
            "[{}/{}] experiment {} ({:.0}s so far)",
            i + 1,
            list.len(),
            exp.name(),
            started.elapsed().as_secs_f64()
        ));
        let path = out.join(format!("{}.csv", exp.name()));
        let replay = if args.replot {
            match std::fs::read_to_string(&path) {
                Ok(text) => Some(parse_csv(&text).map_err(|e| format!("{}: {e}", path.display()))?),
                Err(_) => {
                    log(&format!("no {}: skipped", path.display()));
                    continue;
                }
            }
        } else {
            None
        };
        let mut ctx = Ctx { out: &out, grid: &grid, seed: args.seed, log: &mut *log, figures: Vec::new() };
        let rows = run_experiment(exp, &mut ctx, replay)?;
        if !args.replot {
            std::fs::write(&path, csv(x_name(exp), &rows))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        outcomes.push(Outcome { experiment: exp, rows, figures: ctx.figures });
        // The report is rewritten after every experiment, so an interrupted
        // full run still leaves one for what finished.
        let text = report::markdown(args, &grid, &outcomes, started.elapsed().as_secs_f64());
        let path = out.join(report_name(args.experiment));
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    log(&format!(
        "done in {:.0}s; report in {}",
        started.elapsed().as_secs_f64(),
        out.join(report_name(args.experiment)).display()
    ));
    Ok(outcomes)
}

/// `paper bloofi` entry point: runs and maps errors to exit code 1.
pub fn main(args: &BloofiArgs) -> ExitCode {
    let mut log = |line: &str| eprintln!("[bloofi] {line}");
    match run(args, &mut log) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed results read back and written again are the same
    /// bytes: the CSV's columns and number format are those of every earlier
    /// run.
    #[test]
    fn committed_csvs_round_trip_byte_for_byte() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/bloofi");
        for exp in Experiment::EACH.into_iter().chain([Experiment::Speed]) {
            let text = std::fs::read_to_string(dir.join(format!("{}.csv", exp.name()))).unwrap();
            let rows = parse_csv(&text).unwrap();
            assert!(!rows.is_empty(), "{}", exp.name());
            assert_eq!(csv(x_name(exp), &rows), text, "{}", exp.name());
        }
        // The Fig. 6b re-run has the written-node columns; they read back.
        let text = std::fs::read_to_string(dir.join("fig6b-written/n.csv")).unwrap();
        let rows = parse_csv(&text).unwrap();
        assert!(rows.iter().any(|r| r.insert.written.is_some() && r.delete.written.is_some()));
        assert!(rows.iter().any(|r| r.update.written.is_some()));
        assert_eq!(csv("N", &rows), text);
    }

    /// A label with a comma or a quote is quoted, and reads back whole.
    #[test]
    fn labels_with_commas_and_quotes_are_quoted() {
        let mut row = Row { x: 3.0, label: "Bloofi, \"AU\"".into(), ..Row::default() };
        row.search.batch_ms = Some(0.5);
        let text = csv("N", std::slice::from_ref(&row));
        assert!(text.lines().nth(1).unwrap().starts_with("3,\"Bloofi, \"\"AU\"\"\",0,0,0,0.5,,"), "{text}");
        assert_eq!(parse_csv(&text).unwrap(), vec![row]);
        assert_eq!(parse_csv("N,label\n1,a\n").unwrap_err(), "no column filters");
    }
}

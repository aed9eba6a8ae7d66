//! `paper popularity`: Section 5.1 of *Optimizing Data Popularity Conscious
//! Bloom Filters* (Zipf `q'`, uniform `p`, `m/n = 8`, `k_standard = 5`,
//! `k_max = 10`, alpha from 1 to 2): predicted (eq. 5) and measured
//! false-positive rates of the standard filter, the real-rounding baseline,
//! the `(2 + eps)` integer solution and the optimal+ bound (eq. 15), as a
//! table and a CSV. The experiment itself is
//! [`crate::popularity_experiment`].
//!
//! With `--format json` it prints one JSON array with one object per
//! (alpha, approach) ([`json`]) instead of the table, so that the figures
//! can be checked by a script; `--quick` runs 10 000 sets per alpha in
//! place of 100 000; `--scheme` picks the engine's hash scheme (the
//! default is the engine's default).
//!
//! With `--out DIR` the CSV goes to `DIR/popularity.csv` and a line chart
//! to `DIR/popularity_fpr.{svg,png}` (x = alpha, y = false-positive rate on
//! a log axis, one predicted and one measured series per scheme; optimal+
//! is predicted only). With `--dp-speed` it times the dynamic program
//! instead ([`dp_speed`]): wall seconds, peak RSS (`VmHWM`, reset through
//! `/proc/self/clear_refs` before each run where the kernel allows) and the
//! solver's own memory plan
//! ([`bloomslice_papers::popularity::optimize::dp_memory_plan`]).

use std::fmt::Write as _;

use std::path::{Path, PathBuf};

use bloomslice::HashScheme;
use bloomslice_papers::PopularityError;
use bloomslice_papers::popularity::optimize;

use crate::plot::{LineChart, Series, write};
use crate::popularity_experiment::{self as experiment, ZipfConfig, ZipfRow};

/// Arguments of `paper popularity`.
#[derive(clap::Args, Debug, Clone)]
pub struct PopularityArgs {
    /// Key universe size N (the paper does not give it).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(20..=20_000))]
    pub universe: u64,
    /// Keys per set n (default N / 2).
    #[arg(long)]
    pub set_size: Option<u64>,
    /// Sets drawn per alpha [default: 100 000, or 10 000 with --quick].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub trials: Option<u64>,
    /// 10 000 sets per alpha unless --trials says otherwise (seconds, not
    /// minutes).
    #[arg(long)]
    pub quick: bool,
    /// Output: the table, or one JSON array of (alpha, approach) objects.
    #[arg(long, value_enum, default_value_t = PopularityFormat::Table)]
    pub format: PopularityFormat,
    /// Hash scheme of the measured filters [default: the engine's default].
    #[arg(long, value_enum)]
    pub scheme: Option<SchemeArg>,
    /// Approximation parameter of the dynamic program.
    #[arg(long, default_value_t = 0.05)]
    pub eps: f64,
    /// Write the rows as CSV to this file.
    #[arg(long)]
    pub csv: Option<std::path::PathBuf>,
    /// Seed of the sets and of the hash functions.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Write `popularity.csv` and the `popularity_fpr` SVG/PNG chart here.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Time the dynamic program (N = 1 000 and 10 000, and limited
    /// optimization on 10^6 keys) instead of running the experiment.
    #[arg(long)]
    pub dp_speed: bool,
}

/// Output of `paper popularity`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PopularityFormat {
    /// The fixed-width table.
    Table,
    /// One JSON array, one object per (alpha, approach) ([`json`]).
    Json,
}

/// A hash scheme on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemeArg {
    /// [`HashScheme::Xxh3Double`], the scheme before format minor 1.
    Xxh3Double,
    /// [`HashScheme::Xxh3Triple`], the engine's default.
    Xxh3Triple,
}

impl From<SchemeArg> for HashScheme {
    fn from(s: SchemeArg) -> HashScheme {
        match s {
            SchemeArg::Xxh3Double => HashScheme::Xxh3Double,
            SchemeArg::Xxh3Triple => HashScheme::Xxh3Triple,
        }
    }
}

impl PopularityArgs {
    /// The experiment configuration these arguments describe.
    pub fn config(&self) -> ZipfConfig {
        let universe = self.universe as usize;
        ZipfConfig {
            universe,
            set_size: self.set_size.map_or(universe / 2, |n| n as usize),
            eps: self.eps,
            trials: self.trials.unwrap_or(if self.quick { 10_000 } else { 100_000 }) as usize,
            seed: self.seed,
            scheme: self.scheme.map_or_else(HashScheme::default, HashScheme::from),
            ..ZipfConfig::default()
        }
    }
}

/// Runs the experiment.
///
/// # Errors
///
/// The experiment's errors (bad sizes, epsilon).
pub fn run(args: &PopularityArgs) -> Result<Vec<ZipfRow>, PopularityError> {
    experiment::run(&args.config())
}

/// The rows as a fixed-width table with a header line of context.
pub fn table(config: &ZipfConfig, rows: &[ZipfRow]) -> String {
    let mut s = String::new();
    let ZipfConfig { universe, set_size, bits_per_key, k_standard, k_max, eps, trials, scheme, .. } = config;
    let _ = writeln!(
        s,
        "Section 5.1: N = {universe}, n = {set_size}, m/n = {bits_per_key}, k_standard = {k_standard}, \
         k_max = {k_max}, eps = {eps}, {trials} sets per alpha, {scheme:?}"
    );
    let _ = writeln!(
        s,
        "{:>5} {:>6} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>9} | {:>9} {:>9}",
        "alpha",
        "D",
        "std pred",
        "std meas",
        "rnd pred",
        "rnd meas",
        "int pred",
        "int meas",
        "optimal+",
        "int/opt+p",
        "int/opt+m"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:>5.2} {:>6.2} | {:>9.3e} {:>9.3e} | {:>9.3e} {:>9.3e} | {:>9.3e} {:>9.3e} | {:>9.3e} | {:>9.2} {:>9.2}",
            r.alpha,
            r.divergence,
            r.standard.predicted,
            r.standard.measured.unwrap_or(f64::NAN),
            r.rounding.predicted,
            r.rounding.measured.unwrap_or(f64::NAN),
            r.integer.predicted,
            r.integer.measured.unwrap_or(f64::NAN),
            r.optimal_plus.predicted,
            r.integer_ratio_predicted(),
            r.integer_ratio_measured(),
        );
    }
    let _ = writeln!(
        s,
        "\nmeasured against eq. (5): 99.9% binomial interval; independent = the same sets with independent uniform probes"
    );
    let _ = writeln!(
        s,
        "{:>5} {:<9} | {:>9} {:>9} {:>9} {:>6} | {:>9} | {:>9} {:>9}",
        "alpha", "approach", "predicted", "measured", "+-99.9%", "inside", "indep.", "meas/pred", "ind/pred"
    );
    for r in rows {
        for (name, x) in approaches(r).into_iter().take(3) {
            let _ = writeln!(
                s,
                "{:>5.2} {:<9} | {:>9.3e} {:>9.3e} {:>9.1e} {:>6} | {:>9.3e} | {:>9.3} {:>9.3}",
                r.alpha,
                name,
                x.predicted,
                x.measured.unwrap_or(f64::NAN),
                x.half_width.unwrap_or(f64::NAN),
                if x.inside_interval() { "yes" } else { "no" },
                x.independent.unwrap_or(f64::NAN),
                x.measured.unwrap_or(f64::NAN) / x.predicted,
                x.independent.unwrap_or(f64::NAN) / x.predicted,
            );
        }
    }
    s
}

/// The four approaches of a row with their CSV/JSON names.
fn approaches(r: &ZipfRow) -> [(&'static str, &experiment::SchemeResult); 4] {
    [("standard", &r.standard), ("rounding", &r.rounding), ("integer", &r.integer), ("optimal_plus", &r.optimal_plus)]
}

/// One object of [`json`]: one approach at one alpha.
#[derive(serde::Serialize)]
struct JsonRow {
    alpha: f64,
    approach: &'static str,
    predicted_fpr: f64,
    measured_fpr: Option<f64>,
    hashes_per_key: f64,
    ratio_to_optimal_plus_predicted: f64,
    ratio_to_optimal_plus_measured: Option<f64>,
    measured_half_width_999: Option<f64>,
    measured_inside_interval: Option<bool>,
    independent_probes_fpr: Option<f64>,
    divergence_bits: f64,
    universe: usize,
    set_size: usize,
    trials: usize,
    scheme: String,
}

/// The rows as one JSON array with one object per (alpha, approach):
/// `alpha`, `approach` (`standard`, `rounding`, `integer`, `optimal_plus`),
/// `predicted_fpr` (eq. 5), `measured_fpr` (null for optimal+),
/// `hashes_per_key`, `ratio_to_optimal_plus_predicted` and
/// `ratio_to_optimal_plus_measured` (this approach's predicted or measured
/// rate over optimal+'s predicted rate), then the 99.9% interval
/// half-width and whether the measurement is inside it, the
/// independent-probe measurement, `D(p || q')` and the configuration.
pub fn json(config: &ZipfConfig, rows: &[ZipfRow]) -> String {
    let objects: Vec<JsonRow> = rows
        .iter()
        .flat_map(|r| {
            let opt = r.optimal_plus.predicted;
            approaches(r).map(|(approach, x)| JsonRow {
                alpha: r.alpha,
                approach,
                predicted_fpr: x.predicted,
                measured_fpr: x.measured,
                hashes_per_key: x.hashes_per_key,
                ratio_to_optimal_plus_predicted: x.predicted / opt,
                ratio_to_optimal_plus_measured: x.measured.map(|m| m / opt),
                measured_half_width_999: x.half_width,
                measured_inside_interval: x.measured.map(|_| x.inside_interval()),
                independent_probes_fpr: x.independent,
                divergence_bits: r.divergence,
                universe: config.universe,
                set_size: config.set_size,
                trials: config.trials,
                scheme: format!("{:?}", config.scheme),
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&objects).unwrap_or_else(|e| format!("\"{e}\""));
    text.push('\n');
    text
}

/// One line of the CSV: one approach at one alpha (`measured_fpr` is empty
/// for optimal+).
#[derive(serde::Serialize)]
struct CsvRow {
    alpha: f64,
    divergence_bits: f64,
    approach: &'static str,
    predicted_fpr: f64,
    measured_fpr: Option<f64>,
    hashes_per_key: f64,
    measured_half_width_999: Option<f64>,
    independent_probes_fpr: Option<f64>,
}

/// The rows as CSV, one line per (alpha, approach).
pub fn csv(rows: &[ZipfRow]) -> String {
    crate::csv_text::from_records(rows.iter().flat_map(|r| {
        [
            ("standard", &r.standard),
            ("rounding", &r.rounding),
            ("integer", &r.integer),
            ("optimal_plus", &r.optimal_plus),
        ]
        .map(|(approach, x)| CsvRow {
            alpha: r.alpha,
            divergence_bits: r.divergence,
            approach,
            predicted_fpr: x.predicted,
            measured_fpr: x.measured,
            hashes_per_key: x.hashes_per_key,
            measured_half_width_999: x.half_width,
            independent_probes_fpr: x.independent,
        })
    }))
}

/// The predicted and measured false-positive rates against alpha, one
/// series each per scheme (optimal+ has no measurement), log y axis,
/// written to `DIR/popularity_fpr.{svg,png}`.
///
/// # Errors
///
/// A one-line description when a file cannot be drawn or written.
pub fn plot(rows: &[ZipfRow], dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    let mut series = Vec::new();
    type Pick = fn(&ZipfRow) -> &experiment::SchemeResult;
    let schemes: [(&str, Pick); 4] = [
        ("standard", |r| &r.standard),
        ("rounding", |r| &r.rounding),
        ("integer DP", |r| &r.integer),
        ("optimal+", |r| &r.optimal_plus),
    ];
    for (name, pick) in schemes {
        series.push(Series::new(
            format!("{name} predicted"),
            rows.iter().map(|r| (r.alpha, pick(r).predicted)).collect(),
        ));
        let measured: Vec<(f64, f64)> = rows.iter().filter_map(|r| pick(r).measured.map(|m| (r.alpha, m))).collect();
        if !measured.is_empty() {
            series.push(Series::new(format!("{name} measured"), measured));
        }
    }
    let chart = LineChart {
        title: "Section 5.1: false-positive rate vs Zipf alpha (m/n = 8, k = 5, k_max = 10)".into(),
        x_label: "Zipf alpha of q'".into(),
        y_label: "false-positive rate".into(),
        log_x: false,
        log_y: true,
        series,
    };
    write(&chart, &dir.join("popularity_fpr"))
}

/// One timed solver run of [`dp_speed`].
#[derive(Clone, Debug, PartialEq)]
pub struct DpSpeedRow {
    /// What ran.
    pub what: String,
    /// Keys the dynamic program saw.
    pub dp_keys: usize,
    /// Wall seconds of the solver call.
    pub seconds: f64,
    /// `VmHWM` before the call (after the reset), bytes.
    pub hwm_before: Option<u64>,
    /// `VmHWM` after the call, bytes.
    pub hwm_after: Option<u64>,
    /// The solver's memory plan (bytes, walk-back block).
    pub plan: optimize::DpPlan,
}

/// `VmHWM` (peak resident set) of this process in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Resets `VmHWM` to the current RSS (`echo 5 > /proc/self/clear_refs`);
/// false where the kernel refuses.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Times [`optimize::integer_solution`] for `N` = 1 000 and 10 000
/// (`k_max` 10, `eps` 0.1, Zipf 1.5 `q'`, uniform `p`, `m/n = 8`) and
/// [`optimize::limited_integer_solution`] on 10^6 keys (1 000 bottom and
/// 1 000 top keys optimised, default `k = 5`).
///
/// # Errors
///
/// The solvers' errors.
pub fn dp_speed(sizes: &[usize], limited_universe: usize) -> Result<Vec<DpSpeedRow>, PopularityError> {
    let (k_max, eps, r) = (10, 0.1, 8.0);
    let mut rows = Vec::new();
    let mut timed = |what: String, dp_keys: usize, f: &mut dyn FnMut() -> Result<(), PopularityError>| {
        reset_peak_rss();
        let hwm_before = peak_rss_bytes();
        let (solved, time) = crate::engines::timed(f);
        solved?;
        let plan = optimize::dp_memory_plan(dp_keys, k_max, eps, None);
        rows.push(DpSpeedRow {
            what,
            dp_keys,
            seconds: time.as_secs_f64(),
            hwm_before,
            hwm_after: peak_rss_bytes(),
            plan,
        });
        Ok::<(), PopularityError>(())
    };
    for &n in sizes {
        let p = vec![1.0; n];
        let q = experiment::zipf(n, 1.5);
        timed(format!("integer_solution N={n}"), n, &mut || {
            std::hint::black_box(optimize::integer_solution(&p, &q, r, k_max, eps)?);
            Ok(())
        })?;
    }
    if limited_universe > 0 {
        let n = limited_universe;
        let p = vec![1.0; n];
        let q = experiment::zipf(n, 1.5);
        let (bottom, top) = (1_000.min(n / 2), 1_000.min(n / 2));
        timed(format!("limited_integer_solution N={n} (bottom {bottom}, top {top})"), bottom + top, &mut || {
            std::hint::black_box(optimize::limited_integer_solution(&p, &q, r, k_max, eps, 5, bottom, top)?);
            Ok(())
        })?;
    }
    Ok(rows)
}

/// The [`dp_speed`] rows as a table.
pub fn dp_speed_table(rows: &[DpSpeedRow]) -> String {
    let mib = |b: u64| format!("{:.1}", b as f64 / (1 << 20) as f64);
    let hwm = |b: Option<u64>| b.map_or("?".to_owned(), mib);
    let mut s = String::from("DP speed: k_max = 10, eps = 0.1, Zipf 1.5 q', uniform p, m/n = 8 (one thread)\n");
    // One layout for the header and the rows, so their columns line up.
    let mut line = |[what, keys, seconds, hwm0, hwm1, plan, block]: [&str; 7]| {
        let _ = writeln!(s, "{what:<58} {keys:>8} {seconds:>9} {hwm0:>12} {hwm1:>12} {plan:>11} {block:>6}");
    };
    line(["solver", "DP keys", "seconds", "HWM0 MiB", "HWM1 MiB", "plan MiB", "block"]);
    for r in rows {
        let (keys, seconds, block) = (r.dp_keys.to_string(), format!("{:.2}", r.seconds), r.plan.block.to_string());
        line([&r.what, &keys, &seconds, &hwm(r.hwm_before), &hwm(r.hwm_after), &mib(r.plan.bytes), &block]);
    }
    s
}

//! `paper popularity`: Section 5.1 of *Optimizing Data Popularity Conscious
//! Bloom Filters* (Zipf `q'`, uniform `p`, `m/n = 8`, `k_standard = 5`,
//! `k_max = 10`, alpha from 1 to 2): predicted (eq. 5) and measured
//! false-positive rates of the standard filter, the real-rounding baseline,
//! the `(2 + eps)` integer solution and the optimal+ bound (eq. 15), as a
//! table and a CSV. The experiment itself is
//! [`bloomslice::popularity::experiment`].

use std::fmt::Write as _;

use bloomslice::PopularityError;
use bloomslice::popularity::experiment::{self, ZipfConfig, ZipfRow};

/// Arguments of `paper popularity`.
#[derive(clap::Args, Debug, Clone)]
pub struct PopularityArgs {
    /// Key universe size N (the paper does not give it).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(20..=20_000))]
    pub universe: u64,
    /// Keys per set n (default N / 2).
    #[arg(long)]
    pub set_size: Option<u64>,
    /// Sets drawn per alpha.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub trials: u64,
    /// Approximation parameter of the dynamic program.
    #[arg(long, default_value_t = 0.05)]
    pub eps: f64,
    /// Write the rows as CSV to this file.
    #[arg(long)]
    pub csv: Option<std::path::PathBuf>,
    /// Seed of the sets and of the hash functions.
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
}

impl PopularityArgs {
    /// The experiment configuration these arguments describe.
    pub fn config(&self) -> ZipfConfig {
        let universe = self.universe as usize;
        ZipfConfig {
            universe,
            set_size: self.set_size.map_or(universe / 2, |n| n as usize),
            eps: self.eps,
            trials: self.trials as usize,
            seed: self.seed,
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
    let _ = writeln!(
        s,
        "Section 5.1: N = {}, n = {}, m/n = {}, k_standard = {}, k_max = {}, eps = {}, {} sets per alpha",
        config.universe,
        config.set_size,
        config.bits_per_key,
        config.k_standard,
        config.k_max,
        config.eps,
        config.trials
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
    s
}

/// The rows as CSV, one line per (alpha, approach).
pub fn csv(rows: &[ZipfRow]) -> String {
    let mut s = String::from("alpha,divergence_bits,approach,predicted_fpr,measured_fpr,hashes_per_key\n");
    for r in rows {
        for (name, x) in [
            ("standard", &r.standard),
            ("rounding", &r.rounding),
            ("integer", &r.integer),
            ("optimal_plus", &r.optimal_plus),
        ] {
            let measured = x.measured.map_or(String::new(), |m| format!("{m:.6e}"));
            let _ = writeln!(
                s,
                "{},{:.4},{name},{:.6e},{measured},{:.4}",
                r.alpha, r.divergence, x.predicted, x.hashes_per_key
            );
        }
    }
    s
}

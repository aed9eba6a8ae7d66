//! Benchmarks for bloomslice.
//!
//! This crate holds the `paper` binary (reproduces the papers' query
//! experiments and compares bloomslice against a naive list of filters and
//! against `fastbloom`), plus the criterion (`benches/query.rs`) and
//! iai-callgrind (`benches/iai.rs`) benches. The library part is what the
//! binary and the benches share:
//!
//! - [`args`]: the probes' positional arguments;
//! - [`workload`]: the named workloads (`paper`, `full`, `large`, `multi`)
//!   and their query sets;
//! - [`engines`]: the compared engines, their construction, query loops and
//!   timing helpers;
//! - [`reference`](mod@reference): reference answers and the checks every engine passes
//!   before it is timed;
//! - [`roofline`]: the memory roofline measured in the same run;
//! - [`experiment`]: the `paper query` experiment itself;
//! - [`multi`]: `paper query --workload multi`, multi-key threshold queries;
//! - [`latency`]: `paper latency`, single-key latency on a shared index
//!   while a writer publishes;
//! - [`skewed`]: `paper query --workload skewed`, collections of sets of
//!   skewed sizes;
//! - [`popularity`](mod@popularity): the `paper popularity` experiment (Section 5.1 of
//!   the popularity-conscious paper), table and CSV;
//! - [`popularity_experiment`]: that experiment's harness (Zipf workload,
//!   trials, predicted and measured rates);
//! - [`stable_experiment`]: the synthetic streams and metrics of `paper stable`
//!   (Section IV-D of the importance-aware paper);
//! - [`report`]: table and JSON output;
//! - [`csv_text`]: CSV output through the `csv` crate (quoting, escaping);
//! - [`sysinfo`]: CPU model, memory and huge-page facts from `/proc`;
//! - [`threads`]: `paper query --threads`: pool, rayon and latency;
//! - [`tuning`]: the speed settings taken from the environment;
//! - [`plot`]: line charts written as SVG and PNG (no system libraries);
//! - [`bloofi_repro`]: `paper bloofi`, Section 7 of the Bloofi paper;
//! - [`stable_plots`]: per-importance CSV and plots of `paper stable --out`;
//! - [`stable_speed`]: stream throughput of the stable and importance-aware filters.
//!
//! Results and the commands that produced them are in `bench/RESULTS.md`.

pub mod args;
pub mod bloofi_repro;
pub mod csv_text;
pub mod engines;
pub mod experiment;
pub mod latency;
pub mod multi;
pub mod plot;
pub mod popularity;
pub mod popularity_experiment;
pub mod reference;
pub mod report;
pub mod roofline;
pub mod skewed;
pub mod stable_experiment;
pub mod stable_plots;
pub mod stable_speed;
pub mod sysinfo;
pub mod threads;
pub mod tuning;
pub mod workload;

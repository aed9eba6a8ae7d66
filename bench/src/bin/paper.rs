//! `paper`: reproduces the papers' query experiments on the named workloads
//! and compares bloomslice with a naive list of filters and with
//! `fastbloom`, against the memory roofline measured in the same run.
//!
//! ```text
//! paper query --workload full --filters 10000 --format json
//! ```

use std::process::ExitCode;

use bloomslice::{BloomParams, SlicedConfig};
use bloomslice_bench::engines::EngineKind;
use bloomslice_bench::experiment::{QueryOptions, run_query};
use bloomslice_bench::report;
use bloomslice_bench::workload::{WorkloadKind, WorkloadSpec};
use clap::{Parser, Subcommand, ValueEnum};

/// Reproduces the papers' experiments for bloomslice.
#[derive(Parser, Debug)]
#[command(name = "paper", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// All-membership queries: which of N filters may hold each key?
    Query(Box<QueryArgs>),
    /// Importance-aware and stable Bloom filters (Section IV-D streams:
    /// three distributions x 10/30/50% repeats, importance 1..=50, 16 KB,
    /// M = 7, K = 5, P = 10): the Table I-style FP/FN table and the
    /// stable-state theory.
    Stable(StableArgs),
    /// Section 7 of the Bloofi paper (Figures 5-10, the Section 5.4
    /// heuristic): CSVs, SVG/PNG plots and report.md.
    Bloofi(bloomslice_bench::bloofi_repro::BloofiArgs),
    /// Popularity-conscious hash counts, Section 5.1 (Zipf q', uniform p,
    /// m/n = 8, k = 5, k_max = 10): predicted and measured false-positive
    /// rates of standard, rounding, integer DP and optimal+.
    Popularity(bloomslice_bench::popularity::PopularityArgs),
    /// Single-key latency on a shared ConcurrentIndex while a writer
    /// publishes: percentiles beside a timer control (see bench/src/latency.rs).
    Latency(bloomslice_bench::latency::LatencyArgs),
}

/// Arguments of `paper stable`.
#[derive(clap::Args, Debug)]
struct StableArgs {
    /// Distinct elements per stream.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(100..=10_000_000))]
    distinct: u64,
    /// Seed of the streams and of the filters' random decrements.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Stream items of the throughput measurement (0 skips it).
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    speed_items: u64,
    /// Also write per-importance FP/FN rates (CSV, SVG and PNG) here.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A table with context and a footer.
    Table,
    /// One JSON array of row objects.
    Json,
}

#[derive(clap::Args, Debug)]
struct QueryArgs {
    /// Workload: paper (filter i holds keys [i*100, (i+1)*100)), full (10 000
    /// random keys per filter), large (100 000 filters laid out like paper) or
    /// multi (full filters, multi-key threshold queries) or skewed (sets of
    /// heavy-tailed sizes in a collection; see bench/src/skewed.rs).
    #[arg(long, value_enum, default_value_t = WorkloadKind::Paper)]
    workload: WorkloadKind,
    /// Number of filters [default: paper 1000, full 1000, large 100000, multi 1000].
    #[arg(long)]
    filters: Option<usize>,
    /// Number of queries, half present and half absent.
    #[arg(long, default_value_t = 100_000)]
    queries: usize,
    /// Bits per filter [default: 100 992, from n_exp = 10 000 and p = 0.01].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    m: Option<u64>,
    /// Hash functions per key [default: 7, from n_exp = 10 000 and p = 0.01],
    /// for example 5 to compare with a peer built at k = 5.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    k: Option<u32>,
    /// Seed of the random keys and queries.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// SlicedConfig::max_shard_columns [default: the engine's].
    #[arg(long)]
    shard_columns: Option<usize>,
    /// SlicedConfig::prefetch_distance [default: the engine's].
    #[arg(long)]
    prefetch: Option<usize>,
    /// Engines to run, comma separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    engines: Option<Vec<EngineKind>>,
    /// Keys per query_batch_hashes call in the batched rows (with
    /// `--threads`: a comma-separated list of batch sizes).
    #[arg(long, default_value = "1024", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    batch: Vec<u32>,
    /// Timed passes per sliced engine; the best is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Queries the naive engines are checked and timed on [default: 2e8 / N, at least 1000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    naive_queries: Option<u64>,
    /// Also write the JSON rows to this file (whatever --format says).
    #[arg(long)]
    json_out: Option<std::path::PathBuf>,
    /// Threads for building filters and reference answers [default: all cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    build_threads: Option<u32>,
    /// Multi-threaded queries (`--threads`, see bench/src/threads.rs).
    #[command(flatten)]
    pool: bloomslice_bench::threads::ThreadArgs,
    /// The `skewed` workload's arguments.
    #[command(flatten)]
    skewed: bloomslice_bench::skewed::SkewedArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Command::Query(args) => args,
        Command::Stable(args) => return run_stable(&args),
        Command::Bloofi(args) => return bloomslice_bench::bloofi_repro::main(&args),
        Command::Popularity(args) => return run_popularity(&args),
        Command::Latency(args) => return bloomslice_bench::latency::main(&args),
    };
    let defaults = SlicedConfig::default();
    let mut spec = WorkloadSpec::new(args.workload, args.queries, args.seed);
    if let Some(n) = args.filters {
        spec = spec.with_filters(n);
    }
    if args.m.is_some() || args.k.is_some() {
        if args.workload == WorkloadKind::Multi {
            eprintln!("error: --m and --k apply to the paper, full and large workloads, not to multi");
            return ExitCode::from(2);
        }
        let base = spec.params;
        match BloomParams::new(args.m.unwrap_or(base.m()), args.k.unwrap_or(base.k())) {
            Ok(p) => spec = spec.with_params(p.with_seed(base.seed()).with_scheme(base.scheme())),
            Err(e) => {
                eprintln!("error: --m/--k: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let opts = QueryOptions {
        spec,
        config: bloomslice_bench::tuning::config(SlicedConfig {
            max_shard_columns: args.shard_columns.unwrap_or(defaults.max_shard_columns),
            prefetch_distance: args.prefetch.unwrap_or(defaults.prefetch_distance),
            ..defaults
        }),
        engines: args.engines.clone().unwrap_or_else(|| EngineKind::ALL.to_vec()),
        batch: args.batch[0] as usize,
        repeat: args.repeat as usize,
        naive_queries: args.naive_queries.map(|q| q.try_into().unwrap_or(usize::MAX)),
        threads: args
            .build_threads
            .map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |t| t as usize),
    };
    let mut log = |line: &str| eprintln!("[paper] {line}");
    if args.workload == WorkloadKind::Skewed {
        return run_skewed(&args, &mut log);
    }
    if args.workload == WorkloadKind::Multi {
        return run_multi(&opts, &args, &mut log);
    }
    if args.pool.threads.is_some() {
        return bloomslice_bench::threads::main(&opts, &args.batch, &args.pool, &mut log);
    }
    match run_query(&opts, &mut log) {
        Ok(report) => {
            if let Some(path) = &args.json_out {
                let written = report::json(&report)
                    .map_err(|e| e.to_string())
                    .and_then(|s| std::fs::write(path, s + "\n").map_err(|e| e.to_string()));
                if let Err(e) = written {
                    eprintln!("error: cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            }
            match args.format {
                Format::Table => print!("{}", report::table(&report)),
                Format::Json => match report::json(&report) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("error: cannot serialise the report: {e}");
                        return ExitCode::FAILURE;
                    }
                },
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `paper query --workload multi` (see `bloomslice_bench::multi`).
fn run_multi(opts: &QueryOptions, args: &QueryArgs, log: &mut dyn FnMut(&str)) -> ExitCode {
    use bloomslice_bench::multi;
    let multi_opts = multi::MultiOptions {
        filters: opts.spec.filters,
        seed: opts.spec.seed,
        config: opts.config,
        repeat: opts.repeat,
        threads: opts.threads,
        shapes: multi::MultiOptions::SHAPES.to_vec(),
    };
    report::finish_rows(
        multi::run_multi(&multi_opts, log),
        args.json_out.as_deref(),
        args.format == Format::Json,
        multi::table,
    )
}

/// `paper query --workload skewed` (see `bloomslice_bench::skewed`).
fn run_skewed(args: &QueryArgs, log: &mut dyn FnMut(&str)) -> ExitCode {
    use bloomslice_bench::skewed;
    let run = skewed::SkewedRun {
        args: args.skewed.clone(),
        sets: args.filters,
        queries: args.queries,
        batch: args.batch[0] as usize,
        seed: args.seed,
    };
    report::finish_rows(skewed::run(&run, log), args.json_out.as_deref(), args.format == Format::Json, skewed::table)
}

/// `paper stable`: the stable-state theory per policy, then the measured
/// Table I-style grid.
fn run_stable(args: &StableArgs) -> ExitCode {
    use bloomslice_bench::stable_experiment as experiment;
    use bloomslice_papers::stable::theory;
    use bloomslice_papers::{Policy, StableParams};
    let params = StableParams::paper();
    println!("stable-state theory (m = 16384 cells, M = 7, K = 5, P = 10):");
    println!("{:<8} {:>10} {:>16}", "policy", "V0", "FP bound");
    for policy in Policy::ALL {
        println!(
            "{:<8} {:>10.4} {:>16.4}",
            policy.name(),
            theory::stable_zero_fraction(&params, policy),
            theory::false_positive_bound(&params, policy)
        );
    }
    println!();
    match experiment::paper_grid(args.distinct as usize, args.seed) {
        Ok(results) => {
            print!("{}", experiment::format_table(&results));
            if let Some(dir) = &args.out {
                match bloomslice_bench::stable_plots::write_all(&results, dir) {
                    Ok(files) => eprintln!("[stable] wrote {} files into {}", files.len(), dir.display()),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(1);
                    }
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    }
    if args.speed_items == 0 {
        return ExitCode::SUCCESS;
    }
    println!();
    println!("throughput ({} items, uniform, 10% repeats, one thread, best of 3; answers checked):", args.speed_items);
    match bloomslice_bench::stable_speed::measure(args.speed_items as usize, 3, args.seed) {
        Ok(rows) => {
            print!("{}", bloomslice_bench::stable_speed::format_rows(&rows));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// `paper popularity`: the Section 5.1 table (and CSV with `--csv`, CSV
/// and plot with `--out`), or the DP timings with `--dp-speed`.
fn run_popularity(args: &bloomslice_bench::popularity::PopularityArgs) -> ExitCode {
    use bloomslice_bench::popularity;
    if args.dp_speed {
        return match popularity::dp_speed(&[1_000, 10_000], 1_000_000) {
            Ok(rows) => {
                print!("{}", popularity::dp_speed_table(&rows));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(1)
            }
        };
    }
    let rows = match popularity::run(args) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    match args.format {
        popularity::PopularityFormat::Table => print!("{}", popularity::table(&args.config(), &rows)),
        popularity::PopularityFormat::Json => print!("{}", popularity::json(&args.config(), &rows)),
    }
    if let Some(path) = &args.csv
        && let Err(e) = std::fs::write(path, popularity::csv(&rows))
    {
        eprintln!("error: writing {}: {e}", path.display());
        return ExitCode::from(1);
    }
    if let Some(dir) = &args.out {
        let written = std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display())).and_then(|()| {
            let csv = dir.join("popularity.csv");
            std::fs::write(&csv, popularity::csv(&rows)).map_err(|e| format!("{}: {e}", csv.display()))?;
            popularity::plot(&rows, dir).map(|(svg, png)| [csv, svg, png])
        });
        match written {
            // stdout stays pure JSON with --format json.
            Ok(files) if args.format == popularity::PopularityFormat::Json => {
                files.iter().for_each(|f| eprintln!("wrote {}", f.display()));
            }
            Ok(files) => files.iter().for_each(|f| println!("wrote {}", f.display())),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

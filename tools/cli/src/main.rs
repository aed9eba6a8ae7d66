//! `bloomslice`: build, query, inspect and benchmark index files of Bloom
//! filters from the command line (see `bloomslice --help`).
//!
//! Errors are one line on stderr saying what is wrong and how to fix it;
//! the exit code is 2 for usage errors and 1 for runtime errors.

mod commands;
mod demo;
mod escape;
mod files;
mod input;
mod seqs;
mod shards;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bloomslice::{BloomParams, LayoutConfig};
use clap::{Args, Parser, Subcommand};

/// A command-line failure: usage (exit code 2) or runtime (exit code 1).
#[derive(Debug)]
pub enum CliError {
    /// The command line is wrong.
    Usage(String),
    /// The command line is fine but the work failed.
    Runtime(String),
}

impl CliError {
    /// A runtime error from the engine.
    pub fn engine(e: bloomslice::Error) -> Self {
        CliError::Runtime(e.to_string())
    }

    /// A runtime error about an index file, with a hint for the common cases.
    pub fn index_file(path: &std::path::Path, e: &bloomslice::Error) -> Self {
        let hint = match e {
            bloomslice::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                " (check the path, or create the index with `bloomslice build`)"
            }
            bloomslice::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::IsADirectory => {
                " (give the path of an index file, not of a directory)"
            }
            bloomslice::Error::BadMagic => " (is this a file written by `bloomslice build`?)",
            bloomslice::Error::Truncated { .. } | bloomslice::Error::ChecksumMismatch { .. } => {
                " (the file is damaged: rebuild it or restore a copy)"
            }
            _ => "",
        };
        match e {
            // Its message already names the file.
            bloomslice::Error::Io { .. } => CliError::Runtime(format!("{e}{hint}")),
            _ => CliError::Runtime(format!("{}: {e}{hint}", path.display())),
        }
    }
}

const EXAMPLES: &str = "\
Examples:
  # Index a directory of text files (one set per file, one key per line);
  # every set is sized for its own distinct keys at 1% false positives, and
  # the layout chosen (parts, their m, sets, bytes, predicted FP) is printed:
  bloomslice build sites.bsi --dir ./sites/
  # ... or a TSV of `set<TAB>key` lines at 0.1% FP, in at most 4 parts:
  bloomslice build sites.bsi --tsv keys.tsv --fp 0.001 --max-parts 4
  # ... or every set in one filter size, for 1 million keys (one part):
  bloomslice build sites.bsi --tsv keys.tsv --n-exp 1000000 --fp 0.001
  # Which sets may contain these keys?
  bloomslice query sites.bsi apple pear
  cat keys.txt | bloomslice query sites.bsi --json
  # How many of these keys does each set hold (at least 80% of them)?
  bloomslice query sites.bsi --count --threshold 0.8 < keys.txt
  # Sequence search: one set per genome file (FASTA/FASTQ, gzip too), k = 31;
  # then, for each read, the genomes holding at least 80% of its k-mers:
  bloomslice build genomes.bsi --seqs ./genomes/ --kmer 31
  bloomslice query genomes.bsi --seqs reads.fq.gz --threshold 0.8
  # Maintain the index:
  bloomslice add sites.bsi --tsv new-sites.tsv
  bloomslice update sites.bsi --dir ./changed-sites/
  bloomslice remove sites.bsi site-17
  # Look inside, benchmark, or see the paper comparison:
  bloomslice inspect sites.bsi
  bloomslice bench sites.bsi
  # Scale out: 4 shard files and a manifest, queried as one; and back:
  bloomslice split sites.bsi --shards 4 sites-shards/
  bloomslice query sites-shards/ apple
  bloomslice merge sites-shards/ merged.bsi
  bloomslice demo

Exit codes: 0 success, 1 runtime error (missing or damaged file, bad input
data, another writer holding the index), 2 usage error (wrong command line).
Errors are one line on stderr. A closed stdout (`| head`) ends a command
quietly.

Many readers may query an index while one writer at a time (build --force,
add, update, remove) changes it: writers take the lock file `.NAME.lock`
beside the index and wait up to --wait seconds for it; readers see the old
file or the new one, never a mix.
";

fn concat_help() -> String {
    format!("{EXAMPLES}\n{}", escape::RULE)
}

/// Which of these Bloom filters may contain this key?
///
/// bloomslice keeps many sets (for example the documents each site holds) as
/// Bloom filters in one index file and answers, for a key, which sets may
/// contain it: never a false negative, and false positives at the rate you
/// choose. Build an index once from text files, then query it instantly.
#[derive(Parser, Debug)]
#[command(name = "bloomslice", version, about, after_help = concat_help())]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build an index file from a directory of text files, a TSV or sequence files.
    ///
    /// Every set is sized for its own number of distinct keys at --fp (each
    /// key is hashed once and held as 8 bytes until the set is counted), in
    /// parts of sets of similar sizes, each part with its own filter length;
    /// the layout chosen is printed. --n-exp (or --m/--k) gives every set one
    /// size instead: one part, keys streamed, never held.
    ///
    /// Example: bloomslice build sites.bsi --dir ./sites/
    Build(BuildArgs),
    /// Add new sets to an index file (from files, a TSV, or another index).
    ///
    /// Example: bloomslice add sites.bsi --tsv new.tsv
    Add(AddArgs),
    /// Remove sets, by name, from an index file.
    ///
    /// Example: bloomslice remove sites.bsi site-17 site-18
    Remove(RemoveArgs),
    /// Add keys to sets already in an index file.
    ///
    /// A set whose filter is full gains a filter in a larger part (capacities
    /// double, rates halve, so its false-positive rate stays below twice the
    /// target); the command says when that happens. Every key given counts
    /// towards a set's load, including keys it already holds.
    ///
    /// Example: bloomslice update sites.bsi --tsv more-keys.tsv
    Update(UpdateArgs),
    /// Which sets may contain each key? Keys from arguments or stdin.
    ///
    /// Example: bloomslice query sites.bsi apple pear
    Query(QueryArgs),
    /// Show an index file's parameters, parts, sets, memory, fill and FP rates; verify its checksums.
    ///
    /// Example: bloomslice inspect sites.bsi
    Inspect(InspectArgs),
    /// Time opening and querying an index file (paper-style query set).
    ///
    /// Example: bloomslice bench sites.bsi --queries 100000
    Bench(BenchArgs),
    /// Build the `paper` workload in memory and print the engine comparison table.
    ///
    /// Example: cargo run --release -p bloomslice-cli -- demo
    Demo(DemoArgs),
    /// Split an index file into K shard files (a subset of the sets each) and a manifest.
    ///
    /// Example: bloomslice split sites.bsi --shards 4 sites-shards/
    Split(SplitArgs),
    /// Merge the shard files of a manifest (from `split`) back into one index file.
    ///
    /// Example: bloomslice merge sites-shards/ sites.bsi
    Merge(MergeArgs),
    /// Print the filter parameters for an expected key count and false-positive rate.
    ///
    /// Example: bloomslice params --n-exp 10000 --fp 0.01
    Params(CapacityArgs),
}

/// Where the sets come from.
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
pub struct SourceArgs {
    /// A directory of text files: one set per file, named after the file, one key per line
    /// (symlinks to files are followed; subdirectories are skipped, and named, unless --recursive).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A TSV file of `set<TAB>key` lines (`-` reads stdin).
    #[arg(long, value_name = "FILE")]
    pub tsv: Option<PathBuf>,
}

/// Options of a `--dir` listing.
#[derive(Args, Debug)]
pub struct DirArgs {
    /// With --dir: also read the files of subdirectories (named `sub/file`).
    #[arg(long)]
    pub recursive: bool,
}

/// How long a writer waits for another one.
#[derive(Args, Debug)]
pub struct WaitArgs {
    /// Seconds to wait for another writer of the same index to finish before giving up.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_wait)]
    pub wait: f64,
}

fn parse_wait(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if !v.is_finite() || !(0.0..=1e9).contains(&v) {
        return Err(format!("{s} is not a number of seconds in [0, 1e9]"));
    }
    Ok(v)
}

impl WaitArgs {
    fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.wait)
    }
}

impl SourceArgs {
    fn source(&self, recursive: bool, names: input::Names) -> Result<input::Source<'_>, CliError> {
        if recursive && self.dir.is_none() {
            return Err(CliError::Usage("--recursive needs --dir".into()));
        }
        if names == input::Names::Escaped && self.tsv.is_none() {
            return Err(CliError::Usage("--escaped needs --tsv (it reads the TSV's set names escaped)".into()));
        }
        Ok(match (&self.dir, &self.tsv) {
            (Some(d), _) => input::Source::Dir(d, recursive),
            (None, Some(t)) => input::Source::Tsv(t, names),
            (None, None) => unreachable!("clap requires one of --dir and --tsv"),
        })
    }
}

/// Expected keys per set and false-positive rate.
#[derive(Args, Debug)]
pub struct CapacityArgs {
    /// Expected number of keys per set.
    #[arg(long, default_value_t = 10_000)]
    pub n_exp: u64,
    /// Target false-positive rate per set at --n-exp keys, in (0, 1).
    #[arg(long, default_value_t = 0.01)]
    pub fp: f64,
}

impl CapacityArgs {
    fn params(&self) -> Result<BloomParams, CliError> {
        BloomParams::for_capacity(self.n_exp, self.fp)
            .map_err(|e| CliError::Usage(format!("invalid parameters: {e} (check --n-exp and --fp)")))
    }
}

/// How `build` sizes the filters: from each set's own keys (the default),
/// or one size for every set (--n-exp, or --m/--k).
#[derive(Args, Debug)]
pub struct SizingArgs {
    /// Target false-positive rate per set, in (0, 1); default 0.01. Every
    /// set is sized for its own number of distinct keys, unless --n-exp or
    /// --m fixes one size for all.
    #[arg(long, value_name = "P", value_parser = parse_fp)]
    fp: Option<f64>,
    /// Fixed size: every set gets a filter for this many keys at --fp (one
    /// part, keys streamed into the filters, never held in memory).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    n_exp: Option<u64>,
    /// Fixed size: bits per filter (instead of --n-exp/--fp; needs --k).
    #[arg(long, requires = "k", conflicts_with_all = ["n_exp", "fp"])]
    m: Option<u64>,
    /// Hash functions per key (with --m).
    #[arg(long, requires = "m")]
    k: Option<u32>,
    /// Hash seed (indexes can only be combined if their seeds match).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sized from the data: most parts (size classes, each with its own
    /// filter length) the layout may use, 1 to 64. Every part costs a query
    /// k more row runs. Default 8.
    #[arg(long, value_name = "N", conflicts_with_all = ["n_exp", "m"], value_parser = clap::value_parser!(u64).range(1..=64))]
    max_parts: Option<u64>,
    /// Sized from the data: the price of one more part as a fraction of the
    /// memory (a part is added only if it saves more than w/(1+w) of the
    /// bytes), >= 0. 0 takes the least memory within --max-parts; large
    /// values give one part. Default 0.05.
    #[arg(long, value_name = "W", conflicts_with_all = ["n_exp", "m"], value_parser = parse_weight)]
    query_cost_weight: Option<f64>,
    /// Sized from the data, always in a level index file (by default sets
    /// of keys go into levels where they pay: large sets split into
    /// pieces, small ones merged into columns above their own filters, so
    /// fewer false sets answer and absent keys stop early).
    #[arg(long, conflicts_with_all = ["n_exp", "m", "flat"])]
    levels: bool,
    /// Sized from the data, always in a set index file (flat parts), even
    /// where levels would pay; `split`, `bench` and `add --from` take set
    /// index files only.
    #[arg(long, conflicts_with_all = ["n_exp", "m"])]
    flat: bool,
}

/// The false-positive rate `build` targets without --fp.
pub const DEFAULT_FP: f64 = 0.01;

fn parse_fp(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if !(v > 0.0 && v < 1.0) {
        return Err(format!("{s} is not a false-positive rate in (0, 1)"));
    }
    Ok(v)
}

fn parse_weight(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{s} is not a weight >= 0"));
    }
    Ok(v)
}

impl SizingArgs {
    fn sizing(&self) -> Result<commands::Sizing, CliError> {
        let fp = self.fp.unwrap_or(DEFAULT_FP);
        if let (Some(m), Some(k)) = (self.m, self.k) {
            let params = BloomParams::new(m, k)
                .map_err(|e| CliError::Usage(format!("invalid parameters: {e} (check --m and --k)")))?;
            // The rate at which `k` hash functions are the right number: the
            // collection's target, from which added sets are sized.
            return Ok(commands::Sizing::Fixed { params: params.with_seed(self.seed), p: 0.5f64.powi(k as i32) });
        }
        if let Some(n) = self.n_exp {
            let params = BloomParams::for_capacity(n, fp)
                .map_err(|e| CliError::Usage(format!("invalid parameters: {e} (check --n-exp and --fp)")))?;
            return Ok(commands::Sizing::Fixed { params: params.with_seed(self.seed), p: fp });
        }
        // `k` depends on `p` alone; a rate too small for any `k` is a usage error.
        BloomParams::for_capacity(1, fp).map_err(|e| CliError::Usage(format!("invalid --fp: {e}")))?;
        let mut config = LayoutConfig::default();
        if let Some(parts) = self.max_parts {
            config.max_parts = parts as usize;
        }
        if let Some(w) = self.query_cost_weight {
            config.query_cost_weight = w;
        }
        let levels = match (self.levels, self.flat) {
            (true, _) => commands::Layering::Levels,
            (_, true) => commands::Layering::Flat,
            _ => commands::Layering::Auto,
        };
        Ok(commands::Sizing::FromData { p: fp, config, seed: self.seed, levels })
    }
}

/// Sequence input of `build`.
#[derive(Args, Debug)]
pub struct SeqsArgs {
    /// FASTA/FASTQ files (gzip too; a directory, or one file): one set per
    /// file, named after it; the keys are the canonical k-mers of --kmer.
    #[arg(long, value_name = "DIR", group = "SourceArgs", requires = "kmer")]
    pub seqs: Option<PathBuf>,
    /// With --seqs: the k-mer length, 1 to 32 (stored in the index).
    #[arg(long, value_name = "K", requires = "seqs", value_parser = clap::value_parser!(u8).range(1..=32))]
    pub kmer: Option<u8>,
    /// With --seqs: one set per record, named by the first word of its id.
    #[arg(long, requires = "seqs")]
    pub seqs_by_record: bool,
}

#[derive(Args, Debug)]
struct BuildArgs {
    /// The index file to write.
    output: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    seqs: SeqsArgs,
    #[command(flatten)]
    dir: DirArgs,
    #[command(flatten)]
    sizing: SizingArgs,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    force: bool,
    /// Build even if the estimated file size or peak memory exceeds the free
    /// disk space or available memory.
    #[arg(long)]
    no_size_check: bool,
    #[command(flatten)]
    wait: WaitArgs,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("from_source").required(true).multiple(false)))]
struct AddArgs {
    /// The index file to change.
    index: PathBuf,
    /// A directory of text files (one new set per file).
    #[arg(long, value_name = "DIR", group = "from_source")]
    dir: Option<PathBuf>,
    /// With --dir: also read the files of subdirectories (named `sub/file`).
    #[arg(long)]
    recursive: bool,
    /// A TSV of `set<TAB>key` lines (`-` reads stdin).
    #[arg(long, value_name = "FILE", group = "from_source")]
    tsv: Option<PathBuf>,
    /// Another index file whose sets are added (its parameters must match).
    #[arg(long, value_name = "INDEX", group = "from_source")]
    from: Option<PathBuf>,
    #[command(flatten)]
    wait: WaitArgs,
}

#[derive(Args, Debug)]
struct RemoveArgs {
    /// The index file to change.
    index: PathBuf,
    /// Names of the sets to remove.
    #[arg(required = true, value_name = "SET")]
    sets: Vec<OsString>,
    /// The SET names are in the escaped form the tool prints (`caf\xe9` for
    /// the byte 0xe9; the rule is under --help), as copied from `inspect`.
    #[arg(long)]
    escaped: bool,
    #[command(flatten)]
    wait: WaitArgs,
}

#[derive(Args, Debug)]
struct UpdateArgs {
    /// The index file to change.
    index: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    dir: DirArgs,
    /// Create sets that are not in the index yet (default: an error).
    #[arg(long)]
    create: bool,
    /// With --tsv: the set names are in the escaped form the tool prints
    /// (`caf\xe9` for the byte 0xe9; the rule is under --help).
    #[arg(long)]
    escaped: bool,
    #[command(flatten)]
    wait: WaitArgs,
}

#[derive(Args, Debug)]
struct QueryArgs {
    /// The index file, or a manifest of shard files (`manifest.json` or its directory, from
    /// `split`): answers are then the union of the shards' answers.
    index: PathBuf,
    /// Keys to look up, taken as given (a trailing carriage return is kept);
    /// none, or `-`, reads one key per line from stdin (CRLF line ends are
    /// removed), answered in chunks as they arrive.
    #[arg(value_name = "KEY")]
    keys: Vec<OsString>,
    /// One JSON object per key (`{"key": ..., "sets": [...]}`, with `key_b64` and
    /// `sets_b64` for bytes that are not UTF-8, `ids` for unnamed sets), or one object for --count.
    #[arg(long)]
    json: bool,
    /// Score sets instead: how many of the keys each set may contain (stdin
    /// is read in chunks and their counts summed).
    #[arg(long, conflicts_with = "seqs")]
    count: bool,
    /// With --count: only sets holding at least this fraction of the keys,
    /// in [0, 1] (all keys, arguments or the whole of stdin, are one query).
    /// With --seqs: of each read's k-mers (default 0.8).
    #[arg(long, value_name = "FRACTION")]
    threshold: Option<f64>,
    /// Score FASTA/FASTQ reads (gzip too; `-` reads stdin) against a
    /// sequence index: for each read, the sets holding at least --threshold
    /// of its canonical k-mers, as `READ<TAB>set:count,...` (most k-mers
    /// first) or one JSON object per read (`record`, `kmers`, `skipped`,
    /// `min_count`, `matches`). K-mers with a base other than ACGT are
    /// skipped; a summary goes to stderr.
    #[arg(long, value_name = "READS", conflicts_with = "keys")]
    seqs: Option<PathBuf>,
    /// With --seqs: the k-mer length the index must have been built with.
    #[arg(long, value_name = "K", requires = "seqs")]
    kmer: Option<usize>,
    /// Open without verifying row checksums (instant for huge files; answers
    /// from a damaged file may be wrong).
    #[arg(long)]
    no_verify: bool,
}

#[derive(Args, Debug)]
struct SplitArgs {
    /// The index file to split (it is not changed).
    index: PathBuf,
    /// Number of shard files; sets are divided among them balanced by bytes, and a set never
    /// straddles files.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    shards: u64,
    /// The directory to write `shard-NNNN.bsi` files and `manifest.json` into (created if missing).
    out_dir: PathBuf,
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// The manifest (`manifest.json`) or the directory that holds it.
    manifest: PathBuf,
    /// The index file to write.
    output: PathBuf,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    wait: WaitArgs,
}

#[derive(Args, Debug)]
struct InspectArgs {
    /// The index file.
    index: PathBuf,
    /// List at most this many sets (the highest estimated FP rate first).
    /// Default: every set with --json (which says `"truncated": true` when a
    /// limit cut the list), 50 in text (a line on stderr says when it cut).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// The index file.
    index: PathBuf,
    /// Number of queries, half of them keys of the `paper` workload (the
    /// 8-byte little-endian integers `demo --save` indexes), half absent.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(2..=100_000_000))]
    queries: u64,
    /// Keys per batch for the batched timing.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    batch: u64,
    /// Seed of the query set.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// Number of filters (sets) of the `paper` workload.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    filters: u64,
    /// Number of queries, half present and half absent.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(2..=10_000_000))]
    queries: u64,
    /// Queries the slow naive engines are timed on.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    naive_queries: u64,
    /// Also save the workload's index to this file (try `query`, `inspect`, `bench` on it).
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,
}

/// How set names are given on the command line or in a TSV.
fn names_form(escaped: bool) -> input::Names {
    if escaped { input::Names::Escaped } else { input::Names::AsGiven }
}

fn main() -> ExitCode {
    // A closed stdout (`bloomslice inspect i.bsi | head -1`) ends the
    // process quietly, as for other Unix tools (exit status 141 in a shell),
    // instead of `println!` panicking on the broken pipe. Writers print only
    // after their file is saved, and the kernel releases their lock.
    #[cfg(unix)]
    // SAFETY: `signal` with `SIG_DFL` for `SIGPIPE` only restores the
    // default disposition; it runs first in `main`, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            if e.use_stderr() {
                // One line: clap's first line, which says what is wrong; the
                // usage and help pointer follow on later lines.
                let rendered = e.render().to_string();
                let what: Vec<&str> = rendered
                    .lines()
                    .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
                    .map(str::trim)
                    .filter(|l| !l.starts_with("tip:"))
                    .collect();
                let what = if what.is_empty() { "error: invalid command line".to_owned() } else { what.join(" ") };
                eprintln!("{what} (see `bloomslice --help`)");
            } else {
                let _ = e.print();
            }
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Build(a) if a.seqs.seqs.is_none() && (a.seqs.kmer.is_some() || a.seqs.seqs_by_record) => {
            Err(CliError::Usage("--kmer and --seqs-by-record need --seqs".into()))
        }
        Command::Build(a) => match (&a.seqs.seqs, a.seqs.kmer) {
            (Some(path), Some(k)) => bloomslice::kmer::KmerLength::new(usize::from(k))
                .map_err(|e| CliError::Usage(format!("{e} (check --kmer)")))
                .map(|k| {
                    commands::BuildFrom::Seqs(
                        path,
                        seqs::SeqOptions { k, by_record: a.seqs.seqs_by_record, recursive: a.dir.recursive },
                    )
                }),
            _ => a.source.source(a.dir.recursive, input::Names::AsGiven).map(commands::BuildFrom::Sets),
        }
        .and_then(|source| {
            commands::build(
                &commands::BuildOptions {
                    output: &a.output,
                    source,
                    force: a.force,
                    wait: a.wait.duration(),
                    size_check: !a.no_size_check,
                },
                a.sizing.sizing(),
            )
        }),
        Command::Add(a) if a.recursive && a.dir.is_none() => Err(CliError::Usage("--recursive needs --dir".into())),
        Command::Add(a) => {
            let source = match (&a.dir, &a.tsv, &a.from) {
                (Some(d), _, _) => commands::AddFrom::Sets(input::Source::Dir(d, a.recursive)),
                (None, Some(t), _) => commands::AddFrom::Sets(input::Source::Tsv(t, input::Names::AsGiven)),
                (None, None, Some(f)) => commands::AddFrom::Index(f),
                (None, None, None) => unreachable!("clap requires one of --dir, --tsv and --from"),
            };
            commands::add(&a.index, source, a.wait.duration())
        }
        Command::Remove(a) => commands::remove(&a.index, &a.sets, names_form(a.escaped), a.wait.duration()),
        Command::Update(a) => a
            .source
            .source(a.dir.recursive, names_form(a.escaped))
            .and_then(|source| commands::update(&a.index, &source, a.create, a.wait.duration())),
        Command::Query(a) => commands::query(&commands::QueryOptions {
            index: &a.index,
            keys: &a.keys,
            json: a.json,
            count: a.count,
            threshold: a.threshold,
            verify: !a.no_verify,
            seqs: a.seqs.as_deref(),
            kmer: a.kmer,
        }),
        Command::Inspect(a) => commands::inspect(&a.index, a.limit, a.json),
        Command::Bench(a) => commands::bench(&a.index, a.queries as usize, a.batch as usize, a.seed),
        Command::Demo(a) => {
            commands::demo(a.filters as usize, a.queries as usize, a.naive_queries as usize, a.save.as_deref())
        }
        Command::Split(a) => shards::split(&a.index, a.shards as usize, &a.out_dir),
        Command::Merge(a) => shards::merge(&a.manifest, &a.output, a.force, a.wait.duration()),
        Command::Params(a) => a.params().map(|p| {
            println!("m = {} bits, k = {}, expected FP at n_exp = {:.6}", p.m(), p.k(), p.expected_fpr(a.n_exp));
            println!("kernels: {}", bloomslice::kernels::Kernels::detect().backend());
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
        Err(CliError::Runtime(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(1)
        }
    }
}

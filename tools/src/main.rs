//! `bloomslice`: the command-line tool.
//!
//! A first, small tool: show the parameters the Bloofi rule gives, and query
//! an index built on the fly from a TSV of `set<TAB>key` lines. Persistence,
//! `inspect` and `bench` come with the file format.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use bloomslice::kernels::Kernels;
use bloomslice::{BloomFilter, BloomParams, SlicedIndex};
use clap::{Args, Parser, Subcommand};

/// Which of these Bloom filters may contain this key?
#[derive(Parser, Debug)]
#[command(name = "bloomslice", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the filter parameters for an expected key count and false-positive rate.
    ///
    /// Example: bloomslice params --n-exp 10000 --fp 0.01
    Params(ParamArgs),
    /// Build an index from a TSV of `set<TAB>key` lines and query keys.
    ///
    /// Example: bloomslice query --tsv sets.tsv apple pear
    Query {
        /// TSV file: one `set<TAB>key` per line.
        #[arg(long)]
        tsv: PathBuf,
        #[command(flatten)]
        params: ParamArgs,
        /// Keys to look up.
        #[arg(required = true)]
        keys: Vec<String>,
    },
}

#[derive(Args, Debug)]
struct ParamArgs {
    /// Expected number of keys per set.
    #[arg(long, default_value_t = 10_000)]
    n_exp: u64,
    /// Target false-positive rate per set, in (0, 1).
    #[arg(long, default_value_t = 0.01)]
    fp: f64,
}

impl ParamArgs {
    fn params(&self) -> Result<BloomParams, String> {
        BloomParams::for_capacity(self.n_exp, self.fp)
            .map_err(|e| format!("invalid parameters: {e} (check --n-exp and --fp)"))
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Params(args) => {
            let p = args.params()?;
            println!("m = {} bits, k = {}, expected FP at n_exp = {:.6}", p.m(), p.k(), p.expected_fpr(args.n_exp));
            println!("kernels: {}", Kernels::detect().backend);
            Ok(())
        }
        Command::Query { tsv, params, keys } => {
            let params = params.params()?;
            let file = std::fs::File::open(&tsv).map_err(|e| format!("cannot open {}: {e}", tsv.display()))?;
            let mut sets: BTreeMap<Vec<u8>, BloomFilter> = BTreeMap::new();
            let mut reader = BufReader::new(file);
            let mut line = Vec::new();
            let mut line_no = 0u64;
            loop {
                line.clear();
                let n =
                    reader.read_until(b'\n', &mut line).map_err(|e| format!("cannot read {}: {e}", tsv.display()))?;
                if n == 0 {
                    break;
                }
                line_no += 1;
                let row = line.strip_suffix(b"\n").unwrap_or(&line);
                let row = row.strip_suffix(b"\r").unwrap_or(row);
                if row.is_empty() {
                    continue;
                }
                let Some(tab) = row.iter().position(|&b| b == b'\t') else {
                    return Err(format!("{}:{line_no}: expected `set<TAB>key`", tsv.display()));
                };
                let filter = match sets.entry(row[..tab].to_vec()) {
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(BloomFilter::new(params).map_err(|e| e.to_string())?)
                    }
                };
                filter.insert(&row[tab + 1..]);
            }
            if sets.is_empty() {
                return Err(format!("{} holds no `set<TAB>key` lines", tsv.display()));
            }
            let mut index = SlicedIndex::new(params);
            let names: Vec<&Vec<u8>> = sets.keys().collect();
            for (id, filter) in sets.values().enumerate() {
                index.insert_filter(id as u64, filter).map_err(|e| e.to_string())?;
            }
            for key in keys {
                let mut hits: Vec<String> = index
                    .query(key.as_bytes())
                    .into_iter()
                    .map(|id| String::from_utf8_lossy(names[id as usize]).into_owned())
                    .collect();
                hits.sort();
                println!("{key}\t{}", hits.join(","));
            }
            Ok(())
        }
    }
}

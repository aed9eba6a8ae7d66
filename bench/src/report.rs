//! Printing a [`Report`]: a human table with its context and footer, or one
//! JSON array of row objects.

use core::fmt::Write as _;

use crate::experiment::{BenchError, FP_SIGMAS, Report, Row};
use crate::workload::WorkloadSpec;

/// Ends a command that produces rows (`paper latency`, `paper query
/// --workload multi|skewed`): reports the run's error, or writes the rows as
/// JSON to `json_out` if given and prints them as JSON or as `table`.
///
/// Returns the process's exit code: failure on a run, serialisation or
/// write error.
pub fn finish_rows<T: serde::Serialize>(
    rows: Result<Vec<T>, BenchError>,
    json_out: Option<&std::path::Path>,
    print_json: bool,
    table: fn(&[T]) -> String,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let json = match serde_json::to_string_pretty(&rows) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot serialise the rows: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = json_out
        && let Err(e) = std::fs::write(path, json.clone() + "\n")
    {
        eprintln!("error: cannot write {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    if print_json {
        println!("{json}");
    } else {
        print!("{}", table(&rows));
    }
    ExitCode::SUCCESS
}

/// The report as one JSON array of row objects.
///
/// # Errors
///
/// Only if serialisation fails, which plain data does not.
pub fn json(report: &Report) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&report.rows)
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

fn opt_fraction(f: Option<f64>) -> String {
    f.map_or_else(|| "-".to_owned(), |x| format!("{x:.3}"))
}

fn opt_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_owned(), |x| format!("{x:.1}x"))
}

/// The report as a table with a header (machine, workload, builds, memory,
/// roofline, checks) and a footer explaining the model.
pub fn table(report: &Report) -> String {
    let i = &report.info;
    let s = &i.spec;
    let mut o = String::new();
    let WorkloadSpec { kind, filters, keys_per_filter, queries, seed, .. } = s;
    let (m, k) = (i.params.m(), i.params.k());
    let _ = writeln!(
        o,
        "workload {kind}: N = {filters} filters x {keys_per_filter} keys, m = {m}, k = {k}, {queries} queries \
         (half present), seed {seed}"
    );
    let _ = writeln!(o, "cpu: {}", i.cpu);
    let _ = writeln!(o, "kernels: dispatched {} (available: {})", i.backend, i.available_backends.join(", "));
    let _ = writeln!(
        o,
        "sliced: max_shard_columns {}, prefetch_distance {}; {} shards, {} columns; batches of {} keys; best of {} passes",
        i.config.max_shard_columns, i.config.prefetch_distance, i.shard_count, i.columns, i.batch, i.repeat
    );
    let _ = writeln!(o, "filters: mean fill {:.4} (ones / m)", i.mean_fill);
    let _ = write!(o, "build ({} threads):", i.threads);
    for (name, t) in &i.builds {
        let _ = write!(o, " {name} {:.2} s;", t.as_secs_f64());
    }
    o.push('\n');
    let _ = write!(o, "memory:");
    for (name, bytes) in &i.memory {
        let _ = write!(o, " {name} {};", mib(*bytes));
    }
    o.push('\n');
    let r = &i.roofline;
    let _ = writeln!(
        o,
        "roofline: {} buffer ({} on huge pages): random 128-byte read {:.2} ns (prefetch distance {}), sequential read {:.2} GB/s",
        mib(r.buffer_bytes),
        r.huge_page_bytes.map_or_else(|| "unknown".to_owned(), |b| mib(b as usize)),
        r.ns_per_random_read,
        r.random_read_prefetch,
        r.seq_gb_per_s
    );
    let _ = writeln!(
        o,
        "          random {}-byte run (mean sliced row run) {:.2} ns = {:.2} GB/s",
        r.run_bytes,
        r.ns_per_random_run,
        r.run_bytes as f64 / r.ns_per_random_run
    );
    if let Some((ours, theirs)) = &i.fp {
        let _ = writeln!(
            o,
            "fastbloom check on {} queries: {} false negatives; false positives {} vs ours {} \
             (fill-based expectation {:.1} / {:.1}, z = {:.2} / {:.2}; allowed difference {FP_SIGMAS} sigma = {:.1})",
            theirs.queries,
            theirs.false_negatives,
            theirs.false_positives,
            ours.false_positives,
            theirs.expected,
            ours.expected,
            theirs.z(),
            ours.z(),
            FP_SIGMAS * (ours.variance + theirs.variance).sqrt() + 2.0,
        );
    }
    o.push('\n');
    let _ = writeln!(
        o,
        "{:<16} {:>7} {:>12} {:>12} {:>10} {:>11} {:>11} {:>9} {:>9} {:>9} {:>8}",
        "engine",
        "batched",
        "ns/query",
        "queries/s",
        "vs fbloom",
        "bytes/query",
        "roofline ns",
        "roofline",
        "(early)",
        "(runs)",
        "checked"
    );
    for row in &report.rows {
        let _ = writeln!(o, "{}", table_row(row));
    }
    o.push('\n');
    let _ = writeln!(
        o,
        "answers: `checked` queries were compared before timing. naive and sliced*: exactly the naive id set \
         (reference computed filter-major from the naive filters). naive-fastbloom probes other bits: \
         no false negatives and false positives within {FP_SIGMAS} sigma of ours."
    );
    if i.naive_queries < s.queries {
        let _ = writeln!(
            o,
            "sampled: the naive engines were checked and timed on the first {} of {} queries (--naive-queries); \
             sliced engines on all of them.",
            i.naive_queries, s.queries
        );
    }
    let _ = writeln!(
        o,
        "roofline model: roofline ns = max(bytes / sequential bandwidth, runs x random 128-byte read); fraction = \
         roofline ns / measured ns. sliced: bytes = index.bytes_per_query() (all k row runs of every shard), runs = k \
         x shards. naive engines: bytes = k x 64 x N and runs = k x N, an upper bound (they stop at the first zero \
         bit, so fractions above 1 are expected). `(early)`: the sliced fraction with bytes scaled by the expected rows \
         read per 512-bit chunk under the early exit. `(runs)`: runs x the measured time of one random read of the \
         mean row-run length (prefetched), over measured ns: a roofline for runs of this length, not a stream."
    );
    o
}

fn table_row(r: &Row) -> String {
    format!(
        "{:<16} {:>7} {:>12.1} {:>12.0} {:>10} {:>11} {:>11.1} {:>9.3} {:>9} {:>9} {:>8}",
        r.subject.engine,
        if r.batched { "yes" } else { "no" },
        r.ns_per_query,
        r.queries_per_sec,
        opt_ratio(r.ratio_vs_naive_fastbloom),
        r.roofline.bytes_per_query,
        r.roofline.roofline_ns,
        r.roofline.roofline_fraction,
        opt_fraction(r.roofline.roofline_fraction_early_exit),
        opt_fraction(r.roofline.run_roofline_fraction),
        r.answers_checked,
    )
}

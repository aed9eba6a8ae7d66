//! The subcommands. Readers map the index without a lock; writers hold the
//! index's lock (`bloomslice::persist::IndexFile`) across load, change and
//! save, which replaces the file atomically.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use bloomslice::persist::{self, IndexFile, IndexFileLock, LoadedIndex, Temporary, Verify};
use bloomslice::score::{Scores, Threshold};
use bloomslice::{BatchResults, BloomFilter, BloomParams, KeyHash, SetNames, SlicedIndex};

use crate::escape::{self, plain, set_name};
use crate::files::{Answers, Target, lock_index, map_index};
use crate::input::{self, Source};
use crate::{CliError, demo, seqs};

fn load_locked(lock: &IndexFileLock) -> Result<LoadedIndex, CliError> {
    lock.load().map_err(|e| CliError::index_file(lock.path(), &e))
}

fn save_locked(lock: &IndexFileLock, index: &SlicedIndex, names: &SetNames) -> Result<(), CliError> {
    lock.save(index, names).map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 30 { format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30)) } else { mib(bytes) }
}

/// Fill ratio and estimated false-positive rate of one filter: `fill^k`.
fn fill_and_fp(ones: u64, params: &BloomParams) -> (f64, f64) {
    let fill = ones as f64 / params.m() as f64;
    (fill, fill.powi(params.k() as i32))
}

/// One line about temporaries a writer removed, if any.
fn removed_note(lock: &IndexFileLock) {
    let removed = lock.removed_temporaries();
    if !removed.is_empty() {
        let bytes: u64 = removed.iter().map(|t| t.bytes).sum();
        println!("removed {} temporary files ({}) left by killed writers", removed.len(), size(bytes));
    }
}

/// One line about directory entries a `--dir` skipped, if any.
fn skipped_note(skipped: &[String]) {
    if !skipped.is_empty() {
        println!("skipped {} entries: {}", skipped.len(), skipped.join(", "));
    }
}

/// Memory the system can still give (`MemAvailable`), if known.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Checks that an index of `n_sets` sets fits in memory and on disk.
fn check_size(output: &Path, params: &BloomParams, n_sets: u64, name_bytes: u64) -> Result<(), CliError> {
    let config = bloomslice::SlicedConfig::default();
    let file = persist::estimated_file_bytes(params, &config, n_sets, name_bytes);
    // The rows, one filter being read, names (in the map and the file's
    // section) and the id map.
    let peak = persist::estimated_rows_bytes(params, &config, n_sets)
        .and_then(|r| r.checked_add(params.m() / 8 + 4 * name_bytes + 96 * n_sets));
    let (Some(file), Some(peak)) = (file, peak) else {
        return Err(CliError::Runtime(format!(
            "an index of {n_sets} sets of m = {} bits is too large to address: lower --n-exp or raise --fp",
            params.m()
        )));
    };
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let memory = available_memory();
    let disk = fs4::available_space(dir).ok();
    let short_memory = memory.is_some_and(|m| peak > m);
    let short_disk = disk.is_some_and(|d| file > d);
    if short_memory || short_disk {
        let known = |v: Option<u64>| v.map_or_else(|| "unknown".to_owned(), size);
        return Err(CliError::Runtime(format!(
            "the index of {n_sets} sets of m = {} bits would need about {} on disk and {} of memory, but {} of memory is available and {} of disk is free in {}: lower --n-exp or raise --fp, or pass --no-size-check to try anyway",
            params.m(),
            size(file),
            size(peak),
            known(memory),
            known(disk),
            dir.display()
        )));
    }
    Ok(())
}

/// What `build` indexes.
pub enum BuildFrom<'a> {
    /// Sets of keys: text files or a TSV.
    Sets(Source<'a>),
    /// FASTA/FASTQ files (a directory or one file): canonical k-mers.
    Seqs(&'a Path, seqs::SeqOptions),
}

/// Options of `build`.
pub struct BuildOptions<'a> {
    /// The index file to write.
    pub output: &'a Path,
    /// Where the sets come from.
    pub source: BuildFrom<'a>,
    /// Overwrite an existing file.
    pub force: bool,
    /// How long to wait for another writer.
    pub wait: Duration,
    /// Refuse indexes larger than memory or disk.
    pub size_check: bool,
}

/// `build`: read sets, index them, save, summarise.
pub fn build(o: &BuildOptions<'_>, params: Result<BloomParams, CliError>) -> Result<(), CliError> {
    let params = params?;
    let output = o.output;
    if output.is_dir() {
        return Err(CliError::Runtime(format!(
            "{} is a directory: give the path of the index file to write (for example {})",
            output.display(),
            output.join("index.bsi").display()
        )));
    }
    let lock = lock_index(output, o.wait)?;
    if output.exists() && !o.force {
        return Err(CliError::Runtime(format!(
            "{} already exists: pass --force to overwrite it, or use `bloomslice add`/`update` to change it",
            output.display()
        )));
    }
    let start = Instant::now();
    let check = |n: u64, name_bytes: u64| {
        if o.size_check { check_size(output, &params, n, name_bytes) } else { Ok(()) }
    };
    let built = match &o.source {
        BuildFrom::Sets(source) => input::build_index(source, params, &check)?,
        BuildFrom::Seqs(path, seq_options) => seqs::build_index(path, *seq_options, params, &check)?,
    };
    save_locked(&lock, &built.index, &built.names)?;
    summary(output, &built, start.elapsed());
    removed_note(&lock);
    Ok(())
}

fn summary(output: &Path, built: &input::Built, took: Duration) {
    let (index, names) = (&built.index, &built.names);
    let p = index.params();
    let keys: u64 = built.keys.iter().sum();
    let file = std::fs::metadata(output).map_or(0, |m| m.len());
    println!("wrote {} in {:.2} s", output.display(), took.as_secs_f64());
    println!("params: m = {} bits, k = {}, seed = {}", p.m(), p.k(), p.seed());
    println!("sets: {}, keys: {keys} ({:.0} keys/s)", built.keys.len(), keys as f64 / took.as_secs_f64().max(1e-9));
    println!("memory: {} in memory, {} on disk", mib(index.memory_bytes() as u64), mib(file));
    let mut ones = index.ones_per_filter();
    ones.sort_unstable();
    let stats: Vec<(f64, f64)> = ones.iter().map(|&(_, o)| fill_and_fp(o, p)).collect();
    let mean_fill = stats.iter().map(|s| s.0).sum::<f64>() / stats.len().max(1) as f64;
    let mean_fp = stats.iter().map(|s| s.1).sum::<f64>() / stats.len().max(1) as f64;
    println!("fill: mean {mean_fill:.4} (ones / m); expected FP per set: mean {mean_fp:.3e}");
    let keys_of = |id: u64| built.keys.get(id as usize).copied().unwrap_or(0);
    if stats.len() <= 20 {
        for (&(id, _), (fill, fp)) in ones.iter().zip(&stats) {
            println!("  {}\tkeys {}\tfill {fill:.4}\tFP {fp:.3e}", set_name(names, id), keys_of(id));
        }
    }
    if let Some((i, (fill, fp))) = stats.iter().enumerate().max_by(|a, b| a.1.1.total_cmp(&b.1.1)) {
        let id = ones[i].0;
        println!("worst set: {} ({} keys, fill {fill:.4}, expected FP {fp:.3e})", set_name(names, id), keys_of(id));
        if *fill > 0.5 {
            println!("hint: sets more than half full have a high FP rate; rebuild with a larger --n-exp");
        }
    }
    for note in &built.notes {
        println!("{note}");
    }
    skipped_note(&built.skipped);
}

/// Where `add` takes its new sets from.
pub enum AddFrom<'a> {
    /// Text files or a TSV.
    Sets(Source<'a>),
    /// Another index file.
    Index(&'a Path),
}

fn next_id(index: &SlicedIndex) -> u64 {
    index.ids().max().map_or(0, |m| m + 1)
}

/// `add`: new sets into an existing index file.
pub fn add(path: &Path, from: AddFrom<'_>, wait: Duration) -> Result<(), CliError> {
    let lock = lock_index(path, wait)?;
    let LoadedIndex { mut index, mut names, .. } = load_locked(&lock)?;
    let params = *index.params();
    let mut skipped = Vec::new();
    let new: Vec<(Vec<u8>, BloomFilter)> = match from {
        AddFrom::Sets(source) => {
            let (sets, skip) = input::read_sets(&source, params)?;
            skipped = skip;
            sets.into_iter().map(|s| (s.name, s.filter)).collect()
        }
        AddFrom::Index(other) => {
            let o = persist::load(other).map_err(|e| CliError::index_file(other, &e))?;
            if o.index.kmer_length() != index.kmer_length() {
                let k =
                    |k: Option<bloomslice::kmer::KmerLength>| k.map_or_else(|| "none".to_owned(), |k| k.to_string());
                return Err(CliError::Runtime(format!(
                    "{} has k-mer length {} but {} has {}: sets of other keys cannot be mixed",
                    other.display(),
                    k(o.index.kmer_length()),
                    path.display(),
                    k(index.kmer_length())
                )));
            }
            if *o.index.params() != params {
                return Err(CliError::Runtime(format!(
                    "{} was built with other parameters ({}) than {} ({}): rebuild it with --m {} --k {} --seed {}",
                    other.display(),
                    o.index.params(),
                    path.display(),
                    params,
                    params.m(),
                    params.k(),
                    params.seed()
                )));
            }
            let mut ids: Vec<u64> = o.index.ids().collect();
            ids.sort_unstable();
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let name = o.names.name(id).map_or_else(|| format!("#{id}").into_bytes(), <[u8]>::to_vec);
                out.push((name, o.index.filter_cloned(id).map_err(CliError::engine)?));
            }
            out
        }
    };
    if new.is_empty() {
        println!("no sets on stdin: {} unchanged", path.display());
        return Ok(());
    }
    for (name, _) in &new {
        if names.id(name).is_some() {
            return Err(CliError::Runtime(format!(
                "set {} is already in {}: use `bloomslice update` to add keys to it, or `remove` it first",
                plain(name),
                path.display()
            )));
        }
    }
    let first = next_id(&index);
    let items: Vec<(u64, &BloomFilter)> = new.iter().enumerate().map(|(i, (_, f))| (first + i as u64, f)).collect();
    index.insert_filters(&items).map_err(CliError::engine)?;
    for (i, (name, _)) in new.iter().enumerate() {
        names.insert(first + i as u64, name.clone()).map_err(CliError::engine)?;
    }
    save_locked(&lock, &index, &names)?;
    println!("added {} sets to {} (now {} sets)", new.len(), path.display(), index.len());
    skipped_note(&skipped);
    removed_note(&lock);
    Ok(())
}

/// `remove`: sets by name (given as `form` says).
pub fn remove(path: &Path, sets: &[OsString], form: input::Names, wait: Duration) -> Result<(), CliError> {
    let sets: Vec<Vec<u8>> = sets
        .iter()
        .map(|set| match form {
            input::Names::AsGiven => Ok(input::os_bytes(set)),
            input::Names::Escaped => escape::parse(&input::os_bytes(set))
                .map_err(|e| CliError::Usage(format!("set name {}: {e}", set.to_string_lossy()))),
        })
        .collect::<Result<_, _>>()?;
    let lock = lock_index(path, wait)?;
    let LoadedIndex { mut index, mut names, .. } = load_locked(&lock)?;
    for name in &sets {
        let Some(id) = names.id(name) else {
            return Err(CliError::Runtime(format!(
                "no set named {} in {} (list the sets with `bloomslice inspect {}`)",
                plain(name),
                path.display(),
                path.display()
            )));
        };
        index.delete_filter(id).map_err(CliError::engine)?;
        names.remove(id);
    }
    save_locked(&lock, &index, &names)?;
    println!("removed {} sets from {} (now {} sets)", sets.len(), path.display(), index.len());
    removed_note(&lock);
    Ok(())
}

/// `update`: OR new keys into existing sets.
pub fn update(path: &Path, source: &Source<'_>, create: bool, wait: Duration) -> Result<(), CliError> {
    let lock = lock_index(path, wait)?;
    let LoadedIndex { mut index, mut names, .. } = load_locked(&lock)?;
    let (sets, skipped) = input::read_sets(source, *index.params())?;
    if sets.is_empty() {
        println!("no sets on stdin: {} unchanged", path.display());
        return Ok(());
    }
    if !create && let Some(s) = sets.iter().find(|s| names.id(&s.name).is_none()) {
        return Err(CliError::Runtime(format!(
            "set {} is not in {}: use `bloomslice add`, or pass --create",
            plain(&s.name),
            path.display()
        )));
    }
    let (mut updated, mut created) = (0, 0);
    for s in sets {
        if let Some(id) = names.id(&s.name) {
            index.update_filter(id, &s.filter).map_err(CliError::engine)?;
            updated += 1;
        } else {
            let id = next_id(&index);
            index.insert_filter(id, &s.filter).map_err(CliError::engine)?;
            names.insert(id, s.name).map_err(CliError::engine)?;
            created += 1;
        }
    }
    save_locked(&lock, &index, &names)?;
    println!("updated {updated} sets and created {created} in {}", path.display());
    skipped_note(&skipped);
    removed_note(&lock);
    Ok(())
}

/// Options of `query`.
pub struct QueryOptions<'a> {
    /// Index file.
    pub index: &'a Path,
    /// Keys (empty: stdin).
    pub keys: &'a [OsString],
    /// JSON output.
    pub json: bool,
    /// Per-set scores.
    pub count: bool,
    /// Score threshold.
    pub threshold: Option<f64>,
    /// Verify row checksums on open.
    pub verify: bool,
    /// FASTA/FASTQ reads to score instead of keys (`-` is stdin).
    pub seqs: Option<&'a Path>,
    /// With `seqs`: the k-mer length the index must have.
    pub kmer: Option<usize>,
}

/// The fraction of a read's k-mers a set must hold when `query --seqs` is
/// given no `--threshold`.
pub const SEQS_THRESHOLD: f64 = 0.8;

/// `query`: per-key matching sets, or per-set scores, or (`--seqs`) per-read
/// scores. Keys from stdin are answered in chunks as they arrive (memory
/// does not grow with their number); `--count` sums the chunks' counts
/// (all keys are one query for `--threshold`).
pub fn query(o: &QueryOptions<'_>) -> Result<(), CliError> {
    let threshold = match o.threshold {
        Some(t) => Some(
            Threshold::fraction(t)
                .map_err(|_| CliError::Usage(format!("--threshold must be a fraction in [0, 1], got {t}")))?,
        ),
        None => None,
    };
    if o.threshold.is_some() && !o.count && o.seqs.is_none() {
        return Err(CliError::Usage("--threshold needs --count or --seqs".into()));
    }
    if o.kmer.is_some() && o.seqs.is_none() {
        return Err(CliError::Usage("--kmer needs --seqs".into()));
    }
    let verify = if o.verify { Verify::Full } else { Verify::Deferred };
    // An index file, or the shard files of a manifest (`split`).
    let target = Target::open(o.index, verify)?;
    let names = target.names();
    if let Some(reads) = o.seqs {
        let Some(index) = target.single() else {
            return Err(CliError::Usage(
                "--seqs needs an index file, not a manifest of shard files (merge them first)".into(),
            ));
        };
        let threshold = o.threshold.unwrap_or(SEQS_THRESHOLD);
        let so = seqs::QueryOptions { index_path: o.index, reads, k: o.kmer, threshold, json: o.json };
        return seqs::query(index, names, &so);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let write = |r: std::io::Result<()>| r.map_err(|e| CliError::Runtime(format!("cannot write output: {e}")));
    let mut results = Answers::new();
    let mut counts: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    let (mut scratch, mut hits) = (Scores::new(), Vec::new());
    let mut answer = |keys: &[&[u8]]| -> Result<(), CliError> {
        if o.count {
            // Each chunk is scored on its own and the counts summed: the
            // threshold applies to the totals, once all keys are in.
            target.query_threshold_into(keys, Threshold::count(1), &mut scratch, &mut hits);
            for &(id, c) in &hits {
                *counts.entry(id).or_default() += u64::from(c);
            }
            return Ok(());
        }
        target.query_batch(keys, &mut results);
        for (key, ids) in keys.iter().zip(results.iter()) {
            let mut hits: Vec<u64> = ids.to_vec();
            hits.sort_by(|a, b| names.name(*a).cmp(&names.name(*b)).then(a.cmp(b)));
            if o.json {
                let mut obj = serde_json::Map::new();
                escape::put_bytes(&mut obj, "key", key);
                let (mut sets, mut sets_b64, mut unnamed) = (Vec::new(), Vec::new(), Vec::new());
                for id in hits {
                    match names.name(id) {
                        Some(n) => match std::str::from_utf8(n) {
                            Ok(s) => sets.push(serde_json::Value::from(s)),
                            Err(_) => sets_b64.push(serde_json::Value::from(escape::b64(n))),
                        },
                        None => unnamed.push(serde_json::Value::from(id)),
                    }
                }
                obj.insert("sets".into(), sets.into());
                if !sets_b64.is_empty() {
                    obj.insert("sets_b64".into(), sets_b64.into());
                }
                if !unnamed.is_empty() {
                    obj.insert("ids".into(), unnamed.into());
                }
                write(writeln!(out, "{}", serde_json::Value::Object(obj)))?;
            } else {
                let hits: Vec<String> = hits.iter().map(|&id| set_name(names, id)).collect();
                write(writeln!(out, "{}\t{}", plain(key), hits.join(",")))?;
            }
        }
        // Answers leave as each chunk is done, not at the end of input.
        write(out.flush())
    };
    let n_keys = if o.keys.is_empty() || (o.keys.len() == 1 && o.keys[0] == "-") {
        input::stream_keys(std::io::stdin().lock(), input::QUERY_CHUNK, &mut answer)?
    } else {
        let keys: Vec<Vec<u8>> = o.keys.iter().map(|k| input::os_bytes(k)).collect();
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        answer(&keys)?;
        keys.len() as u64
    };
    // No keys (an empty pipeline) is no answers, not an error; `--count`
    // still says how many keys it scored.
    if o.count {
        let min = threshold.map_or(1, |t| u64::from(t.min_count(n_keys as usize)).max(1));
        let threshold = o.threshold.unwrap_or(0.0);
        let n = n_keys as f64;
        let mut rows: Vec<(u64, u64, f64)> =
            counts.into_iter().filter(|&(_, c)| c >= min).map(|(id, c)| (id, c, c as f64 / n)).collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| names.name(a.0).cmp(&names.name(b.0))).then(a.0.cmp(&b.0)));
        if o.json {
            let sets: Vec<_> = rows
                .iter()
                .map(|&(id, c, f)| {
                    let mut obj = serde_json::Map::new();
                    escape::put_set(&mut obj, "set", names, id);
                    obj.insert("count".into(), c.into());
                    obj.insert("fraction".into(), f.into());
                    serde_json::Value::Object(obj)
                })
                .collect();
            let doc = serde_json::json!({"keys": n_keys, "threshold": threshold, "sets": sets});
            write(writeln!(out, "{doc}"))?;
        } else {
            for (id, c, f) in rows {
                write(writeln!(out, "{}\t{c}\t{f:.4}", set_name(names, id)))?;
            }
        }
    }
    write(out.flush())
}

fn temporaries_json(temps: &[Temporary]) -> serde_json::Value {
    temps
        .iter()
        .map(|t| {
            serde_json::json!({"path": t.path.display().to_string(), "pid": t.pid, "bytes": t.bytes, "writer_alive": t.writer_alive})
        })
        .collect()
}

/// Sets `inspect` lists in text when not given `--limit`.
pub const INSPECT_TEXT_LIMIT: usize = 50;

/// `inspect`: everything about a file, fully verified. `limit` caps the
/// list of sets (`None`: all of them in JSON, [`INSPECT_TEXT_LIMIT`] in
/// text); a cut list says so.
pub fn inspect(path: &Path, limit: Option<usize>, json: bool) -> Result<(), CliError> {
    let loaded = map_index(path, Verify::Full)?;
    let temps = IndexFile::new(path).leftover_temporaries().unwrap_or_default();
    let (index, names, info) = (&loaded.index, &loaded.names, &loaded.info);
    let p = index.params();
    let mut sets = index.ones_per_filter();
    sets.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let fill = index.count_ones() as f64 / (p.m() as f64 * index.len().max(1) as f64);
    let limit = limit.unwrap_or(if json { usize::MAX } else { INSPECT_TEXT_LIMIT });
    let truncated = sets.len() > limit;
    if json {
        let set_rows: Vec<_> = sets
            .iter()
            .take(limit)
            .map(|&(id, ones)| {
                let (fill, fp) = fill_and_fp(ones, p);
                let mut obj = serde_json::Map::new();
                obj.insert("id".into(), id.into());
                if let Some(name) = names.name(id) {
                    escape::put_bytes(&mut obj, "name", name);
                }
                obj.insert("ones".into(), ones.into());
                obj.insert("fill".into(), fill.into());
                obj.insert("estimated_fp".into(), fp.into());
                serde_json::Value::Object(obj)
            })
            .collect();
        let sums: Vec<_> = info
            .checksums
            .iter()
            .map(|(s, c)| serde_json::json!({"section": s, "xxh3": format!("{c:016x}")}))
            .collect();
        let doc = serde_json::json!({
            "file": path.display().to_string(),
            "format_version": format!("{}.{}", info.version.0, info.version.1),
            "file_bytes": info.file_bytes,
            "checksums_verified": info.rows_verified,
            "checksums": sums,
            "m": p.m(), "k": p.k(), "scheme": format!("{:?}", p.scheme()), "seed": p.seed(),
            "kmer_length": index.kmer_length().map(|k| k.get()),
            "shards": index.shard_count(), "columns": index.columns(), "sets": index.len(),
            "memory_bytes": index.memory_bytes(), "fill": fill,
            "huge_page_bytes": index.huge_page_bytes(),
            "set_details": set_rows,
            "truncated": truncated,
            "leftover_temporaries": temporaries_json(&temps),
        });
        println!("{doc:#}");
        return Ok(());
    }
    println!("file: {} ({})", path.display(), mib(info.file_bytes));
    println!("format version: {}.{}", info.version.0, info.version.1);
    println!("checksums verified: {}", if info.rows_verified { "yes, all sections" } else { "no" });
    for (section, sum) in &info.checksums {
        println!("  {section}: xxh3 {sum:016x}");
    }
    println!("params: m = {} bits, k = {}, scheme {:?}, seed {}", p.m(), p.k(), p.scheme(), p.seed());
    match index.kmer_length() {
        Some(k) => println!("k-mer length: {k} (a sequence index: query it with --seqs)"),
        None => println!("k-mer length: none (not a sequence index)"),
    }
    println!("layout: {} shards, {} columns, {} sets", index.shard_count(), index.columns(), index.len());
    println!("memory: {} (rows and maps)", mib(index.memory_bytes() as u64));
    println!("huge pages: {} of the rows (transparent huge pages)", mib(index.huge_page_bytes() as u64));
    println!("fill: {fill:.4} mean (ones / m)");
    println!("sets (highest estimated FP rate first{}):", if truncated { ", see --limit" } else { "" });
    println!("  {:<24} {:>10} {:>8} {:>12}", "name", "id", "fill", "est. FP");
    for &(id, ones) in sets.iter().take(limit) {
        let (fill, fp) = fill_and_fp(ones, p);
        println!("  {:<24} {:>10} {:>8.4} {:>12.3e}", set_name(names, id), id, fill, fp);
    }
    if truncated {
        println!("  ... {} more", sets.len() - limit);
        eprintln!("inspect: listed {limit} of {} sets (pass --limit {} to list them all)", sets.len(), sets.len());
    }
    if !temps.is_empty() {
        let bytes: u64 = temps.iter().map(|t| t.bytes).sum();
        println!("leftover temporary files: {} ({})", temps.len(), size(bytes));
        for t in &temps {
            let state = if t.writer_alive { "writer still running" } else { "writer gone" };
            println!("  {} ({}, pid {}, {state})", t.path.display(), size(t.bytes), t.pid);
        }
        println!("hint: the next `add`, `update`, `remove` or `build --force` removes those whose writer is gone");
    }
    Ok(())
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let v = f();
    (v, start.elapsed())
}

/// `bench`: open times and query speed of a file, in memory and mapped.
pub fn bench(path: &Path, queries: usize, batch: usize, seed: u64) -> Result<(), CliError> {
    let err = |e: bloomslice::Error| CliError::index_file(path, &e);
    let (lazy, t_lazy) = timed(|| map_index(path, Verify::Deferred));
    let lazy = lazy?;
    let (full, t_full) = timed(|| map_index(path, Verify::Full));
    full?;
    let (loaded, t_load) = timed(|| persist::load(path));
    let loaded = loaded.map_err(err)?;
    if loaded.index.is_empty() {
        return Err(CliError::Runtime(format!("{} holds no sets: nothing to benchmark", path.display())));
    }
    let p = *loaded.index.params();
    let keys = demo::queries(queries, loaded.index.len() as u64, seed);
    let hashes: Vec<KeyHash> = keys.iter().map(|k| p.hash(&k.to_le_bytes())).collect();
    // Check before timing: the mapped index answers exactly as the loaded one.
    let mut a = BatchResults::new();
    let mut b = BatchResults::new();
    loaded.index.query_batch_hashes(&hashes, &mut a);
    lazy.index.query_batch_hashes(&hashes, &mut b);
    if a.iter().ne(b.iter()) {
        return Err(CliError::Runtime("the mapped index answered differently from the loaded one".into()));
    }
    let matches = a.total_matches();
    println!("index: {} ({} sets, m = {}, k = {})", path.display(), loaded.index.len(), p.m(), p.k());
    println!(
        "queries: {queries} (paper workload keys, half in sets 0..N if built by `demo --save`), {matches} matches"
    );
    println!(
        "open: mmap (deferred checks) {:.3} ms, mmap (verified) {:.3} ms, read into memory {:.3} ms",
        t_lazy.as_secs_f64() * 1e3,
        t_full.as_secs_f64() * 1e3,
        t_load.as_secs_f64() * 1e3
    );
    println!(
        "huge pages: memory {}, mmap {} of rows",
        mib(loaded.index.huge_page_bytes() as u64),
        mib(lazy.index.huge_page_bytes() as u64)
    );
    println!("{:<10} {:<8} {:>12} {:>14}", "index", "mode", "ns/query", "queries/s");
    // Memory and mmap side by side per mode, so both see the same machine.
    for (mode, batch) in [("single", None), ("batch", Some(batch))] {
        for (what, index) in [("memory", &loaded.index), ("mmap", &lazy.index)] {
            let t = demo::time_queries(index, &hashes, batch, 3)?;
            let ns = t.as_secs_f64() * 1e9 / queries as f64;
            println!("{what:<10} {mode:<8} {ns:>12.1} {:>14.0}", 1e9 / ns);
        }
    }
    Ok(())
}

/// `demo`: the `paper` comparison table, and optionally the index file.
pub fn demo(filters: usize, queries: usize, naive_queries: usize, save: Option<&Path>) -> Result<(), CliError> {
    if let Some(path) = save {
        let p = demo::params();
        let built = demo::filters(p, filters as u64)?;
        let mut index = SlicedIndex::new(p);
        let items: Vec<(u64, &BloomFilter)> = built.iter().map(|(id, f)| (*id, f)).collect();
        index.insert_filters(&items).map_err(CliError::engine)?;
        let mut names = SetNames::new();
        for (id, _) in &built {
            names.insert(*id, format!("filter-{id}")).map_err(CliError::engine)?;
        }
        let lock = lock_index(path, Duration::from_secs(10))?;
        save_locked(&lock, &index, &names)?;
        eprintln!("saved the paper workload's index to {}", path.display());
    }
    demo::run(filters as u64, queries, naive_queries)
}

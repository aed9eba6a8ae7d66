//! The subcommands: each loads what it needs, does its work, and saves
//! atomically (through `bloomslice::persist::save`) when it changes a file.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use bloomslice::persist::{self, LoadedIndex, Verify};
use bloomslice::{BatchResults, BloomFilter, BloomParams, KeyHash, SetNames, SlicedIndex};
use bloomslice_bench::engines::{self, EngineKind};
use bloomslice_bench::experiment::{QueryOptions as PaperOptions, run_query};
use bloomslice_bench::workload::{WorkloadKind, WorkloadSpec, key_hash};

use crate::CliError;
use crate::input::{self, InputSet, Source};

fn load_index(path: &Path) -> Result<LoadedIndex, CliError> {
    persist::load(path).map_err(|e| CliError::index_file(path, &e))
}

fn save_index(path: &Path, index: &SlicedIndex, names: &SetNames) -> Result<(), CliError> {
    persist::save(path, index, names).map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// Fill ratio and estimated false-positive rate of one filter: `fill^k`.
fn fill_and_fp(ones: u64, params: &BloomParams) -> (f64, f64) {
    let fill = ones as f64 / params.m() as f64;
    (fill, fill.powi(params.k() as i32))
}

fn name_of(names: &SetNames, id: u64) -> String {
    names.display(id)
}

/// `build`: read sets, index them, save, summarise.
pub fn build(
    output: &Path,
    source: &Source<'_>,
    params: Result<BloomParams, CliError>,
    force: bool,
) -> Result<(), CliError> {
    let params = params?;
    if output.exists() && !force {
        return Err(CliError::Runtime(format!(
            "{} already exists: pass --force to overwrite it, or use `bloomslice add`/`update` to change it",
            output.display()
        )));
    }
    let start = Instant::now();
    let sets = input::read_sets(source, params)?;
    let mut index = SlicedIndex::new(params);
    let mut names = SetNames::new();
    let items: Vec<(u64, &BloomFilter)> = sets.iter().enumerate().map(|(i, s)| (i as u64, &s.filter)).collect();
    index.insert_filters(&items).map_err(CliError::engine)?;
    for (i, s) in sets.iter().enumerate() {
        names.insert(i as u64, s.name.clone()).map_err(CliError::engine)?;
    }
    save_index(output, &index, &names)?;
    summary(output, &index, &names, &sets, start.elapsed());
    Ok(())
}

fn summary(output: &Path, index: &SlicedIndex, names: &SetNames, sets: &[InputSet], took: Duration) {
    let p = index.params();
    let keys: u64 = sets.iter().map(|s| s.keys).sum();
    let file = std::fs::metadata(output).map_or(0, |m| m.len());
    println!("wrote {} in {:.2} s", output.display(), took.as_secs_f64());
    println!("params: m = {} bits, k = {}, seed = {}", p.m(), p.k(), p.seed());
    println!("sets: {}, keys: {keys} ({:.0} keys/s)", sets.len(), keys as f64 / took.as_secs_f64().max(1e-9));
    println!("memory: {} in memory, {} on disk", mib(index.memory_bytes() as u64), mib(file));
    let stats: Vec<(f64, f64)> = sets.iter().map(|s| fill_and_fp(s.filter.count_ones(), p)).collect();
    let mean_fill = stats.iter().map(|s| s.0).sum::<f64>() / stats.len().max(1) as f64;
    let mean_fp = stats.iter().map(|s| s.1).sum::<f64>() / stats.len().max(1) as f64;
    println!("fill: mean {mean_fill:.4} (ones / m); expected FP per set: mean {mean_fp:.3e}");
    if sets.len() <= 20 {
        for ((i, s), (fill, fp)) in sets.iter().enumerate().zip(&stats) {
            println!("  {}\tkeys {}\tfill {fill:.4}\tFP {fp:.3e}", name_of(names, i as u64), s.keys);
        }
    }
    if let Some((i, (fill, fp))) = stats.iter().enumerate().max_by(|a, b| a.1.1.total_cmp(&b.1.1)) {
        println!(
            "worst set: {} ({} keys, fill {fill:.4}, expected FP {fp:.3e})",
            name_of(names, i as u64),
            sets[i].keys
        );
        if *fill > 0.5 {
            println!("hint: sets more than half full have a high FP rate; rebuild with a larger --n-exp");
        }
    }
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
pub fn add(path: &Path, from: AddFrom<'_>) -> Result<(), CliError> {
    let LoadedIndex { mut index, mut names, .. } = load_index(path)?;
    let params = *index.params();
    let new: Vec<(Vec<u8>, BloomFilter)> = match from {
        AddFrom::Sets(source) => input::read_sets(&source, params)?.into_iter().map(|s| (s.name, s.filter)).collect(),
        AddFrom::Index(other) => {
            let o = load_index(other)?;
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
                out.push((name, o.index.get_filter(id).map_err(CliError::engine)?));
            }
            out
        }
    };
    for (name, _) in &new {
        if names.id(name).is_some() {
            return Err(CliError::Runtime(format!(
                "set {:?} is already in {}: use `bloomslice update` to add keys to it, or `remove` it first",
                String::from_utf8_lossy(name),
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
    save_index(path, &index, &names)?;
    println!("added {} sets to {} (now {} sets)", new.len(), path.display(), index.len());
    Ok(())
}

/// `remove`: sets by name.
pub fn remove(path: &Path, sets: &[OsString]) -> Result<(), CliError> {
    let LoadedIndex { mut index, mut names, .. } = load_index(path)?;
    for set in sets {
        let name = os_bytes(set);
        let Some(id) = names.id(&name) else {
            return Err(CliError::Runtime(format!(
                "no set named {:?} in {} (list the sets with `bloomslice inspect {}`)",
                set,
                path.display(),
                path.display()
            )));
        };
        index.delete_filter(id).map_err(CliError::engine)?;
        names.remove(id);
    }
    save_index(path, &index, &names)?;
    println!("removed {} sets from {} (now {} sets)", sets.len(), path.display(), index.len());
    Ok(())
}

fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        s.as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        s.to_string_lossy().into_owned().into_bytes()
    }
}

/// `update`: OR new keys into existing sets.
pub fn update(path: &Path, source: &Source<'_>, create: bool) -> Result<(), CliError> {
    let LoadedIndex { mut index, mut names, .. } = load_index(path)?;
    let sets = input::read_sets(source, *index.params())?;
    if !create && let Some(s) = sets.iter().find(|s| names.id(&s.name).is_none()) {
        return Err(CliError::Runtime(format!(
            "set {:?} is not in {}: use `bloomslice add`, or pass --create",
            String::from_utf8_lossy(&s.name),
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
    save_index(path, &index, &names)?;
    println!("updated {updated} sets and created {created} in {}", path.display());
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
}

/// `query`: per-key matching sets, or per-set scores.
pub fn query(o: &QueryOptions<'_>) -> Result<(), CliError> {
    if let Some(t) = o.threshold
        && !(0.0..=1.0).contains(&t)
    {
        return Err(CliError::Usage(format!("--threshold must be a fraction in [0, 1], got {t}")));
    }
    let verify = if o.verify { Verify::Full } else { Verify::Deferred };
    let loaded = persist::open_mmap(o.index, verify).map_err(|e| CliError::index_file(o.index, &e))?;
    let keys = input::query_keys(o.keys)?;
    let (index, names) = (&loaded.index, &loaded.names);
    let mut results = BatchResults::new();
    index.query_batch(&keys, &mut results);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let write = |r: std::io::Result<()>| r.map_err(|e| CliError::Runtime(format!("cannot write output: {e}")));
    if o.count {
        let mut counts: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        for ids in results.iter() {
            for id in ids {
                *counts.entry(*id).or_default() += 1;
            }
        }
        let threshold = o.threshold.unwrap_or(0.0);
        let n = keys.len() as f64;
        let mut rows: Vec<(String, u64, f64)> = counts
            .into_iter()
            .map(|(id, c)| (name_of(names, id), c, c as f64 / n))
            .filter(|(_, _, f)| *f >= threshold)
            .collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        if o.json {
            let sets: Vec<_> =
                rows.iter().map(|(name, c, f)| serde_json::json!({"set": name, "count": c, "fraction": f})).collect();
            let doc = serde_json::json!({"keys": keys.len(), "threshold": threshold, "sets": sets});
            write(writeln!(out, "{doc}"))?;
        } else {
            for (name, c, f) in rows {
                write(writeln!(out, "{name}\t{c}\t{f:.4}"))?;
            }
        }
    } else {
        for (key, ids) in keys.iter().zip(results.iter()) {
            let mut hits: Vec<String> = ids.iter().map(|&id| name_of(names, id)).collect();
            hits.sort();
            let key = String::from_utf8_lossy(key);
            if o.json {
                write(writeln!(out, "{}", serde_json::json!({"key": key, "sets": hits})))?;
            } else {
                write(writeln!(out, "{key}\t{}", hits.join(",")))?;
            }
        }
    }
    write(out.flush())
}

/// `inspect`: everything about a file, fully verified.
pub fn inspect(path: &Path, limit: usize, json: bool) -> Result<(), CliError> {
    let loaded = persist::open_mmap(path, Verify::Full).map_err(|e| CliError::index_file(path, &e))?;
    let (index, names, info) = (&loaded.index, &loaded.names, &loaded.info);
    let p = index.params();
    let mut sets = index.ones_per_filter();
    sets.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let fill = index.count_ones() as f64 / (p.m() as f64 * index.len().max(1) as f64);
    if json {
        let set_rows: Vec<_> = sets
            .iter()
            .take(limit)
            .map(|&(id, ones)| {
                let (fill, fp) = fill_and_fp(ones, p);
                serde_json::json!({"id": id, "name": name_of(names, id), "ones": ones, "fill": fill, "estimated_fp": fp})
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
            "shards": index.shard_count(), "columns": index.columns(), "sets": index.len(),
            "memory_bytes": index.memory_bytes(), "fill": fill,
            "set_details": set_rows,
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
    println!("layout: {} shards, {} columns, {} sets", index.shard_count(), index.columns(), index.len());
    println!("memory: {} (rows and maps)", mib(index.memory_bytes() as u64));
    println!("fill: {fill:.4} mean (ones / m)");
    println!("sets (highest estimated FP rate first{}):", if sets.len() > limit { ", see --limit" } else { "" });
    println!("  {:<24} {:>10} {:>8} {:>12}", "name", "id", "fill", "est. FP");
    for &(id, ones) in sets.iter().take(limit) {
        let (fill, fp) = fill_and_fp(ones, p);
        println!("  {:<24} {:>10} {:>8.4} {:>12.3e}", name_of(names, id), id, fill, fp);
    }
    if sets.len() > limit {
        println!("  ... {} more", sets.len() - limit);
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
    let (lazy, t_lazy) = timed(|| persist::open_mmap(path, Verify::Deferred));
    let lazy = lazy.map_err(err)?;
    let (full, t_full) = timed(|| persist::open_mmap(path, Verify::Full));
    full.map_err(err)?;
    let (loaded, t_load) = timed(|| persist::load(path));
    let loaded = loaded.map_err(err)?;
    if loaded.index.is_empty() {
        return Err(CliError::Runtime(format!("{} holds no sets: nothing to benchmark", path.display())));
    }
    let p = *loaded.index.params();
    let spec = WorkloadSpec::new(WorkloadKind::Paper, queries, seed).with_filters(loaded.index.len());
    let hashes: Vec<KeyHash> = spec.queries().iter().map(|q| key_hash(&p, q.key)).collect();
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
    println!("{:<10} {:<8} {:>12} {:>14}", "index", "mode", "ns/query", "queries/s");
    for (what, index) in [("memory", &loaded.index), ("mmap", &lazy.index)] {
        let mut out = Vec::new();
        let (single, _) = engines::best_of(3, || engines::sliced_single_pass(index, &hashes, &mut out));
        let mut results = BatchResults::new();
        let (batched, _) = engines::best_of(3, || engines::sliced_batch_pass(index, &hashes, batch, &mut results));
        for (mode, t) in [("single", single), ("batch", batched)] {
            let ns = t.as_secs_f64() * 1e9 / queries as f64;
            println!("{what:<10} {mode:<8} {ns:>12.1} {:>14.0}", 1e9 / ns);
        }
    }
    Ok(())
}

/// `demo`: the `paper` comparison table, and optionally the index file.
pub fn demo(filters: usize, queries: usize, naive_queries: usize, save: Option<&Path>) -> Result<(), CliError> {
    let spec = WorkloadSpec::new(WorkloadKind::Paper, queries, 42).with_filters(filters);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(path) = save {
        let p = bloomslice_bench::workload::params();
        let built = engines::build_filters(&spec, p, threads).map_err(CliError::engine)?;
        let mut index = SlicedIndex::new(p);
        let items: Vec<(u64, &BloomFilter)> = built.iter().map(|(id, f)| (*id, f)).collect();
        index.insert_filters(&items).map_err(CliError::engine)?;
        let mut names = SetNames::new();
        for (id, _) in &built {
            names.insert(*id, format!("filter-{id}")).map_err(CliError::engine)?;
        }
        save_index(path, &index, &names)?;
        eprintln!("saved the paper workload's index to {}", path.display());
    }
    let opts = PaperOptions {
        spec,
        config: bloomslice::SlicedConfig::default(),
        engines: EngineKind::ALL.to_vec(),
        batch: 1024,
        repeat: 3,
        naive_queries: Some(naive_queries.min(queries)),
        threads,
    };
    let report = run_query(&opts, &mut |line| eprintln!("{line}")).map_err(|e| CliError::Runtime(e.to_string()))?;
    print!("{}", bloomslice_bench::report::table(&report));
    Ok(())
}

//! The subcommands. Readers map the index without a lock; writers hold the
//! index's lock (`bloomslice::persist::IndexFile`) across load, change and
//! save, which replaces the file atomically.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use bloomslice::persist::{self, IndexFile, IndexFileLock, Loaded, Temporary, Verify};
use bloomslice::score::{Scores, Threshold};
use bloomslice::{
    BatchResults, BloomFilter, BloomParams, HashScheme, KeyHash, LayoutConfig, LevelConfig, LevelIndex, Prehashed,
    ReadIndex, SetIndex, SetNames, SlicedIndex,
};

use crate::escape::{self, plain, set_name};
use crate::files::{Target, is_level_file, level_file_refused, lock_index, map_collection, map_levels};
use crate::input::{self, Source};
use crate::{CliError, demo, seqs};

/// The set index in a file a writer holds (a level index file is refused
/// with a one-line error: see [`load_written`]).
fn load_locked(lock: &IndexFileLock) -> Result<Loaded, CliError> {
    if is_level_file(lock.path()) {
        return Err(level_file_refused(lock.path(), "this command"));
    }
    lock.load().map_err(|e| CliError::index_file(lock.path(), &e))
}

fn save_collection_locked(lock: &IndexFileLock, collection: &SetIndex, names: &SetNames) -> Result<(), CliError> {
    save_locked(lock, collection, names)
}

fn save_locked<I: persist::Persist>(lock: &IndexFileLock, index: &I, names: &SetNames) -> Result<(), CliError> {
    lock.save(index, names).map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))
}

/// The index of a file that `add`, `remove` or `update` change: a set
/// index, or a level index (whose writes go beside its levels until it is
/// built again).
enum Written {
    Sets(SetIndex),
    Levels(LevelIndex),
}

impl Written {
    fn seed(&self) -> u64 {
        match self {
            Written::Sets(collection) => seed_of(collection),
            Written::Levels(levels) => ReadIndex::seed(levels),
        }
    }

    fn len(&self) -> usize {
        match self {
            Written::Sets(collection) => collection.len(),
            Written::Levels(levels) => levels.len(),
        }
    }

    fn next_id(&self) -> u64 {
        match self {
            Written::Sets(collection) => next_id(collection),
            Written::Levels(levels) => levels.ids().last().map_or(0, |m| m + 1),
        }
    }

    fn insert_set(&mut self, id: u64, keys: &[Prehashed]) -> Result<(), CliError> {
        match self {
            Written::Sets(collection) => collection.insert_set(id, keys),
            Written::Levels(levels) => levels.insert_set(id, keys),
        }
        .map_err(CliError::engine)
    }

    fn add_keys(&mut self, id: u64, keys: &[Prehashed]) -> Result<(), CliError> {
        match self {
            Written::Sets(collection) => collection.add_keys(id, keys),
            Written::Levels(levels) => levels.add_keys(id, keys),
        }
        .map_err(CliError::engine)
    }

    fn remove_set(&mut self, id: u64) -> Result<(), CliError> {
        match self {
            Written::Sets(collection) => collection.remove_set(id),
            Written::Levels(levels) => levels.remove_set(id),
        }
        .map_err(CliError::engine)
    }

    /// Parts of a set index (none for levels).
    fn parts(&self) -> usize {
        match self {
            Written::Sets(collection) => collection.parts().len(),
            Written::Levels(_) => 0,
        }
    }

    fn save(&self, lock: &IndexFileLock, names: &SetNames) -> Result<(), CliError> {
        match self {
            Written::Sets(collection) => save_locked(lock, collection, names),
            Written::Levels(levels) => save_locked(lock, levels, names),
        }
    }

    /// What a writer prints after the change: a set index's new parts, or
    /// how many of a level index's sets are beside its levels.
    fn notes(&self, parts_before: usize) {
        match self {
            Written::Sets(collection) => new_parts_note(collection, parts_before),
            Written::Levels(levels) => {
                let (delta, hidden) = (levels.delta().len(), levels.hidden().len());
                if delta + hidden > 0 {
                    println!(
                        "{delta} sets are beside the levels and {hidden} of their sets are hidden since the build: \
                         `bloomslice build` again lays every set out in levels"
                    );
                }
            }
        }
    }
}

/// The index and names of a file a writer holds, either layout.
fn load_written(lock: &IndexFileLock) -> Result<(Written, SetNames), CliError> {
    if is_level_file(lock.path()) {
        let loaded = Loaded::<LevelIndex>::load(lock.path()).map_err(|e| CliError::index_file(lock.path(), &e))?;
        return Ok((Written::Levels(loaded.index), loaded.names));
    }
    let Loaded { index, names, .. } = load_locked(lock)?;
    Ok((Written::Sets(index), names))
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

/// A build's notes, then its skipped entries.
fn remarks_note(remarks: &input::Remarks) {
    for note in &remarks.notes {
        println!("{note}");
    }
    skipped_note(&remarks.skipped);
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

/// How `build` sizes the filters.
pub enum Sizing {
    /// One filter length for every set: one part, keys streamed into the
    /// filters.
    Fixed {
        /// The parameters of every filter.
        params: BloomParams,
        /// The collection's target rate (that of sets added later).
        p: f64,
    },
    /// Every set sized for its own distinct keys at rate `p`: in levels
    /// where they pay, else in the parts
    /// [`bloomslice::collection::Layout::choose`] picks under `config`.
    FromData {
        /// Whether the sets go into levels ([`LevelIndex`]) or flat parts.
        levels: Layering,
        /// Target false-positive rate per set.
        p: f64,
        /// The layout's knobs.
        config: LayoutConfig,
        /// Hash seed.
        seed: u64,
    },
}

/// Whether a build from the data lays sets out in levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layering {
    /// Levels where they pay ([`LevelIndex::pays`]) for sets of keys;
    /// otherwise (and for sequences) a set index file.
    Auto,
    /// Always a set index file.
    Flat,
    /// Always a level index file (one flat level where levels do not pay).
    Levels,
}

/// `build`: read sets, index them, save, summarise.
pub fn build(o: &BuildOptions<'_>, sizing: Result<Sizing, CliError>) -> Result<(), CliError> {
    let sizing = sizing?;
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
    match sizing {
        Sizing::Fixed { params, p } => {
            let check = |n: u64, name_bytes: u64| {
                if o.size_check { check_size(output, &params, n, name_bytes) } else { Ok(()) }
            };
            let built = match &o.source {
                BuildFrom::Sets(source) => input::build_index(source, params, &check)?,
                BuildFrom::Seqs(path, seq_options) => seqs::build_index(path, *seq_options, params, &check)?,
            };
            let input::Built { index, names, keys, remarks } = built;
            let collection = SetIndex::from_index(index, p).map_err(CliError::engine)?;
            save_collection_locked(&lock, &collection, &names)?;
            let index = collection.parts().next().ok_or_else(|| CliError::Runtime("the index has no part".into()))?;
            summary(output, &FixedSummary { index, names: &names, keys: &keys, remarks: &remarks }, start.elapsed());
        }
        Sizing::FromData { p, config, seed, levels } => {
            if levels == Layering::Levels && matches!(o.source, BuildFrom::Seqs(..)) {
                return Err(CliError::Usage(
                    "--levels indexes sets of keys (--dir or --tsv), not sequences (--seqs)".into(),
                ));
            }
            let read = match &o.source {
                BuildFrom::Sets(source) => input::read_hashed(source, seed)?,
                BuildFrom::Seqs(path, seq_options) => seqs::read_hashed(path, *seq_options, seed)?,
            };
            if read.sets.is_empty() {
                let what = match &o.source {
                    BuildFrom::Sets(Source::Tsv(p, _)) => format!("{} holds no `set<TAB>key` lines", p.display()),
                    BuildFrom::Sets(Source::Dir(d, _)) => format!("{} has no files with keys", d.display()),
                    BuildFrom::Seqs(path, _) => format!("{} holds no k-mers", path.display()),
                };
                return Err(CliError::Runtime(format!(
                    "{what}: nothing to index (check the path and the input format)"
                )));
            }
            let kmer = match &o.source {
                BuildFrom::Seqs(_, seq_options) => Some(seq_options.k),
                BuildFrom::Sets(_) => None,
            };
            let level_config = LevelConfig { layout: config, ..LevelConfig::default() };
            let in_levels = match levels {
                Layering::Flat => false,
                Layering::Levels => true,
                Layering::Auto => {
                    kmer.is_none() && {
                        let sizes: Vec<u64> = read.sets.iter().map(|s| s.hashes.len() as u64).collect();
                        LevelIndex::pays(&sizes, p, &level_config).map_err(CliError::engine)?
                    }
                }
            };
            if in_levels {
                let built = build_levels(read, p, level_config, seed)?;
                if o.size_check {
                    check_disk(output, built.index.memory_bytes() as u64)?;
                }
                lock.save(&built.index, &built.names)
                    .map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))?;
                levels_summary(output, &built, start.elapsed());
                removed_note(&lock);
                return Ok(());
            }
            let built = build_collection(read, p, config, seed, kmer)?;
            if o.size_check {
                check_disk(output, built.collection.memory_bytes() as u64)?;
            }
            save_collection_locked(&lock, &built.collection, &built.names)?;
            collection_summary(output, &built, config, start.elapsed());
        }
    }
    removed_note(&lock);
    Ok(())
}

/// A collection built from hashed sets, with what the summary reports.
pub struct BuiltCollection {
    /// The collection; set `i` has id `i`.
    pub collection: SetIndex,
    /// Names of the sets.
    pub names: SetNames,
    /// Key lines read per set, by id.
    pub lines: Vec<u64>,
    /// Distinct keys per set, by id (the sizes the layout was chosen for).
    pub distinct: Vec<u64>,
    /// What the summary reports besides the sets.
    pub remarks: input::Remarks,
}

/// The collection of `read`'s sets (ids in order) at rate `p`, each set
/// sized for its distinct keys.
pub fn build_collection(
    read: input::HashedSets,
    p: f64,
    config: LayoutConfig,
    seed: u64,
    kmer: Option<bloomslice::kmer::KmerLength>,
) -> Result<BuiltCollection, CliError> {
    let input::HashedSets { sets, remarks } = read;
    let items: Vec<(u64, &[Prehashed])> =
        sets.iter().enumerate().map(|(i, s)| (i as u64, s.hashes.as_slice())).collect();
    let mut collection = SetIndex::build_with_hashing(&items, p, config, HashScheme::default(), seed)
        .map_err(|e| CliError::Runtime(format!("cannot lay out the sets: {e}")))?;
    collection.set_kmer_length(kmer);
    drop(items);
    let mut names = SetNames::new();
    let (mut lines, mut distinct) = (Vec::with_capacity(sets.len()), Vec::with_capacity(sets.len()));
    for (i, set) in sets.into_iter().enumerate() {
        lines.push(set.lines);
        distinct.push(set.hashes.len() as u64);
        names.insert(i as u64, set.name).map_err(CliError::engine)?;
    }
    Ok(BuiltCollection { collection, names, lines, distinct, remarks })
}

/// A level index built from hashed sets, with what the summary reports.
pub struct BuiltLevels {
    /// The index; set `i` has id `i`.
    pub index: LevelIndex,
    /// Names of the sets.
    pub names: SetNames,
    /// Distinct keys over all sets.
    pub keys: u64,
    /// What the reading skipped or noted.
    pub remarks: input::Remarks,
}

/// The level index of `read`'s sets (ids in order) at rate `p`, each set
/// sized for its distinct keys, under `level_config` (flat parts laid out
/// as its `layout` says where levels do not pay).
pub fn build_levels(
    read: input::HashedSets,
    p: f64,
    level_config: LevelConfig,
    seed: u64,
) -> Result<BuiltLevels, CliError> {
    let input::HashedSets { sets, remarks } = read;
    let items: Vec<(u64, &[Prehashed])> =
        sets.iter().enumerate().map(|(i, s)| (i as u64, s.hashes.as_slice())).collect();
    let index = LevelIndex::build_with_hashing(&items, p, level_config, HashScheme::default(), seed)
        .map_err(|e| CliError::Runtime(format!("cannot lay out the sets: {e}")))?;
    drop(items);
    let keys = sets.iter().map(|s| s.hashes.len() as u64).sum();
    let mut names = SetNames::new();
    for (i, set) in sets.into_iter().enumerate() {
        names.insert(i as u64, set.name).map_err(CliError::engine)?;
    }
    Ok(BuiltLevels { index, names, keys, remarks })
}

/// One line on a level index: its levels, or that it stayed flat.
fn levels_line(index: &LevelIndex) -> String {
    match index.top_shape() {
        Some((m, columns)) => format!(
            "{} levels, the top one {columns} columns of m = {m}; at most {} row runs a key",
            index.depth(),
            index.max_row_runs()
        ),
        None => "one flat level (levels do not pay for these sizes)".into(),
    }
}

fn levels_summary(output: &Path, built: &BuiltLevels, took: Duration) {
    let index = &built.index;
    println!(
        "wrote {}: {} sets, {} distinct keys, p = {}, k = {}: {}",
        output.display(),
        index.len(),
        built.keys,
        index.p(),
        ReadIndex::k(index),
        levels_line(index)
    );
    println!(
        "rows {}, memory {} ({:.2} bytes a key); built in {:.2} s",
        human(index.rows_bytes() as u64),
        human(index.memory_bytes() as u64),
        index.memory_bytes() as f64 / built.keys.max(1) as f64,
        took.as_secs_f64()
    );
    remarks_note(&built.remarks);
}

/// `inspect` of a level index file.
fn inspect_levels(path: &Path, json: bool) -> Result<(), CliError> {
    let loaded = map_levels(path)?;
    let (index, info) = (&loaded.index, &loaded.info);
    if json {
        let obj = serde_json::json!({
            "path": path.display().to_string(),
            "format": format!("{}.{}", info.version.0, info.version.1),
            "file_bytes": info.file_bytes,
            "sets": index.len(),
            "p": index.p(),
            "k": ReadIndex::k(index),
            "seed": ReadIndex::seed(index),
            "depth": index.depth(),
            "top_columns": index.top_columns(),
            "top_m": index.top_shape().map(|(m, _)| m),
            "max_row_runs": index.max_row_runs(),
            "rows_bytes": index.rows_bytes(),
            "memory_bytes": index.memory_bytes(),
        });
        println!("{obj}");
        return Ok(());
    }
    println!(
        "{}: level index file, format {}.{}, {}",
        path.display(),
        info.version.0,
        info.version.1,
        human(info.file_bytes)
    );
    println!("{} sets, p = {}, k = {}, seed {}", index.len(), index.p(), ReadIndex::k(index), ReadIndex::seed(index));
    println!("{}", levels_line(index));
    println!("rows {}, memory {}", human(index.rows_bytes() as u64), human(index.memory_bytes() as u64));
    Ok(())
}

/// Checks that a file of about `bytes` fits on the disk of `output`.
fn check_disk(output: &Path, bytes: u64) -> Result<(), CliError> {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(free) = fs4::available_space(dir)
        && bytes > free
    {
        return Err(CliError::Runtime(format!(
            "the index needs about {} on disk but {} is free in {}: raise --fp, or pass --no-size-check to try anyway",
            size(bytes),
            size(free),
            dir.display()
        )));
    }
    Ok(())
}

/// Bytes in a short human form (B, KiB, MiB, GiB).
fn human(bytes: u64) -> String {
    match bytes {
        b if b < 1 << 10 => format!("{b} B"),
        b if b < 1 << 20 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => size(b),
    }
}

/// Per part of `collection`: `(sets, predicted FP mean, max)` by
/// [`SetIndex::fpr_bound`] of the sets whose first filter is in it.
fn part_fp(collection: &SetIndex) -> Vec<(usize, f64, f64)> {
    let mut out = vec![(0usize, 0.0f64, 0.0f64); collection.parts().len()];
    for id in collection.ids() {
        let (Some(filters), Some(bound)) = (collection.filters(id), collection.fpr_bound(id)) else { continue };
        let Some(first) = filters.first() else { continue };
        let slot = &mut out[first.part];
        slot.0 += 1;
        slot.1 += bound;
        slot.2 = slot.2.max(bound);
    }
    for slot in &mut out {
        slot.1 /= slot.0.max(1) as f64;
    }
    out
}

/// The layout table of a collection: one line per part (its `m`, sets,
/// columns, bytes, the set sizes it was laid out for, and the predicted
/// false-positive rates of the sets placed in it).
fn parts_table(collection: &SetIndex) -> Vec<String> {
    let mut lines = vec![format!(
        "  {:>4} {:>10} {:>7} {:>8} {:>11} {:>17} {:>10} {:>10}",
        "part", "m (bits)", "sets", "columns", "bytes", "keys per set", "FP mean", "FP max"
    )];
    let plans = collection.layout().parts();
    let fp = part_fp(collection);
    for (i, index) in collection.parts().enumerate() {
        let range = plans
            .get(i)
            .filter(|plan| plan.m == index.params().m())
            .map_or_else(|| "(added)".to_owned(), |plan| format!("{}..={}", plan.min_size.max(1), plan.capacity));
        lines.push(format!(
            "  {:>4} {:>10} {:>7} {:>8} {:>11} {:>17} {:>10.2e} {:>10.2e}",
            i,
            index.params().m(),
            index.len(),
            index.columns(),
            human(index.memory_bytes() as u64),
            range,
            fp[i].1,
            fp[i].2
        ));
    }
    lines
}

fn collection_summary(output: &Path, built: &BuiltCollection, config: LayoutConfig, took: Duration) {
    let c = &built.collection;
    let lines: u64 = built.lines.iter().sum();
    let distinct: u64 = built.distinct.iter().sum();
    let file = std::fs::metadata(output).map_or(0, |m| m.len());
    let layout = c.layout();
    println!("wrote {} in {:.2} s", output.display(), took.as_secs_f64());
    println!(
        "sets: {}, keys: {lines} lines, {distinct} distinct (each set sized for its distinct keys; {:.0} keys/s)",
        built.lines.len(),
        lines as f64 / took.as_secs_f64().max(1e-9)
    );
    println!(
        "params: target FP {} per set, k = {}, seed = {}; layout: {} parts (--max-parts {}, --query-cost-weight {}), {} row runs per key",
        c.p(),
        c.k(),
        seed_of(c),
        c.parts().len(),
        config.max_parts,
        config.query_cost_weight,
        c.k() as usize * c.parts().len()
    );
    for line in parts_table(c) {
        println!("{line}");
    }
    println!(
        "memory: {} in memory, {} on disk; the layout's model {} ({:.2}x the per-set optimum of {})",
        human(c.memory_bytes() as u64),
        human(file),
        human(layout.bytes()),
        layout.bits() as f64 / layout.optimum_bits().max(1.0),
        human((layout.optimum_bits() / 8.0).ceil() as u64)
    );
    let bounds: Vec<(u64, f64)> = c.ids().filter_map(|id| c.fpr_bound(id).map(|b| (id, b))).collect();
    let mean = bounds.iter().map(|b| b.1).sum::<f64>() / bounds.len().max(1) as f64;
    if let Some(&(id, worst)) = bounds.iter().max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0))) {
        let keys = built.distinct.get(id as usize).copied().unwrap_or(0);
        println!(
            "predicted FP per set: mean {mean:.3e}, max {worst:.3e} ({}, {keys} distinct keys)",
            set_name(&built.names, id)
        );
    }
    remarks_note(&built.remarks);
}

/// The hash seed of a collection (that of its parts).
fn seed_of(c: &SetIndex) -> u64 {
    c.parts().next().map_or(0, |index| index.params().seed())
}

/// What the summary of a fixed-size build reports.
struct FixedSummary<'a> {
    index: &'a SlicedIndex,
    names: &'a SetNames,
    keys: &'a [u64],
    remarks: &'a input::Remarks,
}

fn summary(output: &Path, built: &FixedSummary<'_>, took: Duration) {
    let (index, names) = (built.index, built.names);
    let p = index.params();
    let keys: u64 = built.keys.iter().sum();
    let file = std::fs::metadata(output).map_or(0, |m| m.len());
    println!("wrote {} in {:.2} s", output.display(), took.as_secs_f64());
    println!("params: m = {} bits, k = {}, seed = {}", p.m(), p.k(), p.seed());
    println!(
        "layout: 1 part, every set in filters of one size (without --n-exp or --m, each set is sized for its own keys)"
    );
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
    remarks_note(built.remarks);
}

/// Where `add` takes its new sets from.
pub enum AddFrom<'a> {
    /// Text files or a TSV.
    Sets(Source<'a>),
    /// Another index file.
    Index(&'a Path),
}

fn next_id(collection: &SetIndex) -> u64 {
    collection.ids().max().map_or(0, |m| m + 1)
}

/// One line per part added since `before` parts: for sets larger than
/// every part, or for the added filters of sets that grew.
fn new_parts_note(collection: &SetIndex, before: usize) {
    for (i, index) in collection.parts().enumerate().skip(before) {
        println!(
            "new part {i}: m = {} bits, {} filters ({} in memory)",
            index.params().m(),
            index.len(),
            human(index.memory_bytes() as u64)
        );
    }
}

/// The message for a set that gained filters while keys were added to it.
fn grown_note(collection: &SetIndex, names: &SetNames, id: u64, before: usize) -> Option<String> {
    let filters = collection.filters(id)?;
    let before = before.max(1);
    if filters.len() <= before {
        return None;
    }
    let (outgrown, first_new, last) = (&filters[before - 1], &filters[before], filters.last()?);
    let gained = filters.len() - before;
    let new = |f: &bloomslice::collection::FilterInfo| {
        format!("part {}, m = {} bits, capacity {} keys", f.part, f.params.m(), f.capacity)
    };
    let placed = if gained == 1 {
        format!("1 filter in a larger part ({})", new(first_new))
    } else {
        format!("{gained} filters in larger parts (the first in {}; the last in {})", new(first_new), new(last))
    };
    let bound = collection.fpr_bound(id)?;
    Some(format!(
        "set {} outgrew its filter ({} keys in a filter of capacity {}): it gained {placed}; it is answered as the \
         union of its {} filters, predicted FP {bound:.3e} (target {}, bounded by {} however it grows)",
        set_name(names, id),
        outgrown.load,
        outgrown.capacity,
        filters.len(),
        collection.p(),
        2.0 * collection.p()
    ))
}

/// `add`: new sets into an existing index file. Each set from files or a
/// TSV is sized for its distinct keys and placed in the part of least
/// capacity that holds it (a new part if none does).
pub fn add(path: &Path, from: AddFrom<'_>, wait: Duration) -> Result<(), CliError> {
    let lock = lock_index(path, wait)?;
    let (mut index, mut names) = load_written(&lock)?;
    let parts_before = index.parts();
    let added = match from {
        AddFrom::Sets(source) => {
            let read = input::read_hashed(&source, index.seed())?;
            if read.sets.is_empty() {
                println!("no sets on stdin: {} unchanged", path.display());
                return Ok(());
            }
            for set in &read.sets {
                refuse_existing(&names, &set.name, path)?;
            }
            let (first, added) = (index.next_id(), read.sets.len());
            for (i, set) in read.sets.into_iter().enumerate() {
                let id = first + i as u64;
                index.insert_set(id, &set.hashes)?;
                names.insert(id, set.name).map_err(CliError::engine)?;
            }
            skipped_note(&read.remarks.skipped);
            added
        }
        AddFrom::Index(other) => {
            let Written::Sets(collection) = &mut index else {
                return Err(level_file_refused(path, "`add --from`"));
            };
            let o = persist::load(other).map_err(|e| CliError::index_file(other, &e))?;
            add_index(path, collection, &mut names, other, o)?
        }
    };
    index.save(&lock, &names)?;
    println!("added {added} sets to {} (now {} sets)", path.display(), index.len());
    index.notes(parts_before);
    removed_note(&lock);
    Ok(())
}

fn refuse_existing(names: &SetNames, name: &[u8], path: &Path) -> Result<(), CliError> {
    if names.id(name).is_some() {
        return Err(CliError::Runtime(format!(
            "set {} is already in {}: use `bloomslice update` to add keys to it, or `remove` it first",
            plain(name),
            path.display()
        )));
    }
    Ok(())
}

/// `add --from`: the sets of another file, as their filters are (the
/// parameters must match). Returns the sets added.
fn add_index(
    path: &Path,
    collection: &mut SetIndex,
    names: &mut SetNames,
    other: &Path,
    o: Loaded,
) -> Result<usize, CliError> {
    if o.index.kmer_length() != collection.kmer_length() {
        let k = |k: Option<bloomslice::kmer::KmerLength>| k.map_or_else(|| "none".to_owned(), |k| k.to_string());
        return Err(CliError::Runtime(format!(
            "{} has k-mer length {} but {} has {}: sets of other keys cannot be mixed",
            other.display(),
            k(o.index.kmer_length()),
            path.display(),
            k(collection.kmer_length())
        )));
    }
    let mut ids: Vec<u64> = o.index.ids().collect();
    ids.sort_unstable();
    let first = next_id(collection);
    let new_ids: hashbrown::HashMap<u64, (u64, Vec<u8>)> = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            (id, (first + i as u64, o.names.name(id).map_or_else(|| format!("#{id}").into_bytes(), <[u8]>::to_vec)))
        })
        .collect();
    // Parameters first, then names: nothing is saved after an error.
    collection.absorb_with(&o.index, |id| new_ids.get(&id).map_or(id, |n| n.0)).map_err(|e| match e {
        bloomslice::Error::ParamsMismatch { .. } | bloomslice::Error::Invalid(_) => CliError::Runtime(format!(
            "{} was built with other parameters than {} ({e}): build it again with --fp {} --seed {}",
            other.display(),
            path.display(),
            collection.p(),
            seed_of(collection)
        )),
        e => CliError::engine(e),
    })?;
    for (_, name) in new_ids.values() {
        refuse_existing(names, name, path)?;
    }
    for (_, (id, name)) in new_ids {
        names.insert(id, name).map_err(CliError::engine)?;
    }
    Ok(ids.len())
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
    let (mut index, mut names) = load_written(&lock)?;
    for name in &sets {
        let Some(id) = names.id(name) else {
            return Err(CliError::Runtime(format!(
                "no set named {} in {} (list the sets with `bloomslice inspect {}`)",
                plain(name),
                path.display(),
                path.display()
            )));
        };
        index.remove_set(id)?;
        names.remove(id);
    }
    index.save(&lock, &names)?;
    println!("removed {} sets from {} (now {} sets)", sets.len(), path.display(), index.len());
    index.notes(index.parts());
    removed_note(&lock);
    Ok(())
}

/// `update`: add keys to existing sets (each set's distinct new keys; a
/// set that outgrows its filter gains one in a larger part, and says so).
pub fn update(path: &Path, source: &Source<'_>, create: bool, wait: Duration) -> Result<(), CliError> {
    let lock = lock_index(path, wait)?;
    let (mut index, mut names) = load_written(&lock)?;
    let read = input::read_hashed(source, index.seed())?;
    if read.sets.is_empty() {
        println!("no sets on stdin: {} unchanged", path.display());
        return Ok(());
    }
    if !create && let Some(s) = read.sets.iter().find(|s| names.id(&s.name).is_none()) {
        return Err(CliError::Runtime(format!(
            "set {} is not in {}: use `bloomslice add`, or pass --create",
            plain(&s.name),
            path.display()
        )));
    }
    let parts_before = index.parts();
    let (mut updated, mut created, mut notes) = (0, 0, Vec::new());
    for s in read.sets {
        if let Some(id) = names.id(&s.name) {
            let filters = |index: &Written| match index {
                Written::Sets(collection) => collection.filter_count(id),
                Written::Levels(_) => None,
            };
            let before = filters(&index).unwrap_or(1);
            index.add_keys(id, &s.hashes)?;
            if let Written::Sets(collection) = &index {
                notes.extend(grown_note(collection, &names, id, before));
            }
            updated += 1;
        } else {
            let id = index.next_id();
            index.insert_set(id, &s.hashes)?;
            names.insert(id, s.name).map_err(CliError::engine)?;
            created += 1;
        }
    }
    index.save(&lock, &names)?;
    println!("updated {updated} sets and created {created} in {}", path.display());
    for note in notes {
        println!("{note}");
    }
    index.notes(parts_before);
    skipped_note(&read.remarks.skipped);
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
    let mut results = BatchResults::new();
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
            serde_json::json!({"path": t.path.display().to_string(), "bytes": t.bytes, "writer_active": t.writer_active})
        })
        .collect()
}

/// Sets `inspect` lists in text when not given `--limit`.
pub const INSPECT_TEXT_LIMIT: usize = 50;

/// One set as `inspect` lists it: its filters, the ones they hold, their
/// bits, and the estimated false-positive rate of their union (the sum of
/// each filter's `fill^k`).
struct SetRow {
    id: u64,
    filters: usize,
    ones: u64,
    bits: u64,
    est_fp: f64,
}

/// Every set of `collection`, highest estimated false-positive rate first.
fn set_rows(collection: &SetIndex) -> Vec<SetRow> {
    let mut rows: hashbrown::HashMap<u64, SetRow> = hashbrown::HashMap::new();
    for index in collection.parts() {
        let p = index.params();
        for (id, ones) in index.ones_per_filter() {
            let row = rows.entry(id).or_insert(SetRow { id, filters: 0, ones: 0, bits: 0, est_fp: 0.0 });
            row.filters += 1;
            row.ones += ones;
            row.bits += p.m();
            row.est_fp += fill_and_fp(ones, p).1;
        }
    }
    let mut rows: Vec<SetRow> = rows.into_values().collect();
    rows.sort_by(|a, b| b.est_fp.total_cmp(&a.est_fp).then(a.id.cmp(&b.id)));
    rows
}

/// `inspect`: everything about a file, fully verified. `limit` caps the
/// list of sets (`None`: all of them in JSON, [`INSPECT_TEXT_LIMIT`] in
/// text); a cut list says so.
pub fn inspect(path: &Path, limit: Option<usize>, json: bool) -> Result<(), CliError> {
    if is_level_file(path) {
        return inspect_levels(path, json);
    }
    let loaded = map_collection(path, Verify::Full)?;
    let temps = IndexFile::new(path).leftover_temporaries().unwrap_or_default();
    let (c, names, info) = (&loaded.index, &loaded.names, &loaded.info);
    let sets = set_rows(c);
    let (ones, bits): (u64, u64) =
        c.parts().fold((0, 0), |(o, b), index| (o + index.count_ones(), b + index.params().m() * index.len() as u64));
    let fill = ones as f64 / bits.max(1) as f64;
    let limit = limit.unwrap_or(if json { usize::MAX } else { INSPECT_TEXT_LIMIT });
    let truncated = sets.len() > limit;
    let first = c.parts().next().map(|index| *index.params());
    let shards: usize = c.parts().map(SlicedIndex::shard_count).sum();
    let columns: usize = c.parts().map(SlicedIndex::columns).sum();
    if json {
        let set_rows: Vec<_> = sets
            .iter()
            .take(limit)
            .map(|row| {
                let mut obj = serde_json::Map::new();
                obj.insert("id".into(), row.id.into());
                if let Some(name) = names.name(row.id) {
                    escape::put_bytes(&mut obj, "name", name);
                }
                obj.insert("filters".into(), row.filters.into());
                obj.insert("ones".into(), row.ones.into());
                obj.insert("fill".into(), (row.ones as f64 / row.bits.max(1) as f64).into());
                obj.insert("estimated_fp".into(), row.est_fp.into());
                obj.insert("fp_bound".into(), c.fpr_bound(row.id).into());
                serde_json::Value::Object(obj)
            })
            .collect();
        let parts: Vec<_> = c
            .parts()
            .map(|index| {
                let fill = index.count_ones() as f64 / (index.params().m() as f64 * index.len().max(1) as f64);
                serde_json::json!({
                    "m": index.params().m(), "sets": index.len(), "columns": index.columns(),
                    "shards": index.shard_count(), "memory_bytes": index.memory_bytes(), "fill": fill,
                })
            })
            .collect();
        let sums: Vec<_> = info
            .checksums
            .iter()
            .map(|(s, c)| serde_json::json!({"section": s, "xxh3": format!("{c:016x}")}))
            .collect();
        let one_m = (c.parts().len() == 1).then(|| first.map(|p| p.m())).flatten();
        let doc = serde_json::json!({
            "file": path.display().to_string(),
            "format_version": format!("{}.{}", info.version.0, info.version.1),
            "file_bytes": info.file_bytes,
            "checksums_verified": info.rows_verified,
            "checksums": sums,
            "fp": c.p(), "m": one_m, "k": c.k(),
            "scheme": first.map(|p| format!("{:?}", p.scheme())), "seed": seed_of(c),
            "kmer_length": c.kmer_length().map(|k| k.get()),
            "parts": parts, "grown_sets": c.grown_sets(),
            "shards": shards, "columns": columns, "sets": c.len(),
            "memory_bytes": c.memory_bytes(), "fill": fill,
            "huge_page_bytes": c.huge_page_bytes(),
            "set_details": set_rows,
            "truncated": truncated,
            "leftover_temporaries": temporaries_json(&temps),
        });
        println!("{doc:#}");
        return Ok(());
    }
    println!("file: {} ({})", path.display(), human(info.file_bytes));
    println!("format version: {}.{}", info.version.0, info.version.1);
    println!("checksums verified: {}", if info.rows_verified { "yes, all sections" } else { "no" });
    for (section, sum) in &info.checksums {
        println!("  {section}: xxh3 {sum:016x}");
    }
    match first {
        Some(p) => {
            println!("params: target FP {} per set, k = {}, scheme {:?}, seed {}", c.p(), c.k(), p.scheme(), p.seed())
        }
        None => println!("params: target FP {} per set, k = {}", c.p(), c.k()),
    }
    match c.kmer_length() {
        Some(k) => println!("k-mer length: {k} (a sequence index: query it with --seqs)"),
        None => println!("k-mer length: none (not a sequence index)"),
    }
    println!(
        "layout: {} parts ({} row runs per key), {} sets ({} grown into several filters), {shards} shards, {columns} columns",
        c.parts().len(),
        c.k() as usize * c.parts().len(),
        c.len(),
        c.grown_sets()
    );
    println!("  {:>4} {:>10} {:>7} {:>8} {:>11} {:>8}", "part", "m (bits)", "sets", "columns", "bytes", "fill");
    for (i, index) in c.parts().enumerate() {
        let fill = index.count_ones() as f64 / (index.params().m() as f64 * index.len().max(1) as f64);
        println!(
            "  {:>4} {:>10} {:>7} {:>8} {:>11} {:>8.4}",
            i,
            index.params().m(),
            index.len(),
            index.columns(),
            human(index.memory_bytes() as u64),
            fill
        );
    }
    println!("memory: {} (rows and maps)", human(c.memory_bytes() as u64));
    println!("huge pages: {} of the rows (transparent huge pages)", human(c.huge_page_bytes() as u64));
    println!("fill: {fill:.4} mean (ones / m)");
    println!("sets (highest estimated FP rate first{}):", if truncated { ", see --limit" } else { "" });
    println!("  {:<24} {:>10} {:>7} {:>8} {:>12} {:>12}", "name", "id", "filters", "fill", "est. FP", "FP bound");
    for row in sets.iter().take(limit) {
        println!(
            "  {:<24} {:>10} {:>7} {:>8.4} {:>12.3e} {:>12.3e}",
            set_name(names, row.id),
            row.id,
            row.filters,
            row.ones as f64 / row.bits.max(1) as f64,
            row.est_fp,
            c.fpr_bound(row.id).unwrap_or(0.0)
        );
    }
    if truncated {
        println!("  ... {} more", sets.len() - limit);
        eprintln!("inspect: listed {limit} of {} sets (pass --limit {} to list them all)", sets.len(), sets.len());
    }
    if !temps.is_empty() {
        let bytes: u64 = temps.iter().map(|t| t.bytes).sum();
        println!("leftover temporary files: {} ({})", temps.len(), size(bytes));
        for t in &temps {
            let state = if t.writer_active { "a writer holds the lock: may be its save" } else { "writer gone" };
            println!("  {} ({}, {state})", t.path.display(), size(t.bytes));
        }
        println!("hint: the next `add`, `update`, `remove` or `build --force` removes them once it holds the lock");
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
    let (lazy, t_lazy) = timed(|| map_collection(path, Verify::Deferred));
    let lazy = lazy?;
    let (full, t_full) = timed(|| map_collection(path, Verify::Full));
    full?;
    let (loaded, t_load) = timed(|| persist::load(path));
    let mut loaded = loaded.map_err(err)?;
    crate::files::tune(&mut loaded.index);
    let c = &loaded.index;
    if c.is_empty() {
        return Err(CliError::Runtime(format!("{} holds no sets: nothing to benchmark", path.display())));
    }
    let seed_used = seed_of(c);
    let keys = demo::queries(queries, c.len() as u64, seed);
    let hashes: Vec<KeyHash> = keys.iter().map(|k| KeyHash::from_bytes(&k.to_le_bytes(), seed_used)).collect();
    // Check before timing: the mapped collection answers exactly as the loaded one.
    let mut a = BatchResults::new();
    let mut b = BatchResults::new();
    c.query_batch_hashes(&hashes, &mut a);
    lazy.index.query_batch_hashes(&hashes, &mut b);
    if a.iter().ne(b.iter()) {
        return Err(CliError::Runtime("the mapped index answered differently from the loaded one".into()));
    }
    let matches = a.total_matches();
    let ms: Vec<String> = c.parts().map(|index| index.params().m().to_string()).collect();
    println!(
        "index: {} ({} sets, {} parts, m = {}, k = {}, {} row runs per key)",
        path.display(),
        c.len(),
        c.parts().len(),
        ms.join("/"),
        c.k(),
        c.k() as usize * c.parts().len()
    );
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
        mib(c.huge_page_bytes() as u64),
        mib(lazy.index.huge_page_bytes() as u64)
    );
    println!("{:<10} {:<8} {:>12} {:>14}", "index", "mode", "ns/query", "queries/s");
    // Memory and mmap side by side per mode, so both see the same machine.
    for (mode, batch) in [("single", None), ("batch", Some(batch))] {
        for (what, collection) in [("memory", c), ("mmap", &lazy.index)] {
            let t = demo::time_queries(collection, &hashes, batch, 3)?;
            let ns = t.as_secs_f64() * 1e9 / queries as f64;
            println!("{what:<10} {mode:<8} {ns:>12.1} {:>14.0}", 1e9 / ns);
        }
    }
    Ok(())
}

/// `demo`: the `paper` comparison table, and optionally the index file
/// (a collection of one part, the workload's fixed `m`).
pub fn demo(filters: usize, queries: usize, naive_queries: usize, save: Option<&Path>) -> Result<(), CliError> {
    if let Some(path) = save {
        let p = demo::params();
        let built = demo::filters(p, filters as u64)?;
        let mut index = SlicedIndex::new(p);
        let items: Vec<(u64, &BloomFilter)> = built.iter().map(|(id, f)| (*id, f)).collect();
        index.insert_filters(&items).map_err(CliError::engine)?;
        let collection = SetIndex::from_index(index, demo::FP).map_err(CliError::engine)?;
        let mut names = SetNames::new();
        for (id, _) in &built {
            names.insert(*id, format!("filter-{id}")).map_err(CliError::engine)?;
        }
        let lock = lock_index(path, Duration::from_secs(10))?;
        save_collection_locked(&lock, &collection, &names)?;
        eprintln!("saved the paper workload's index to {}", path.display());
    }
    demo::run(filters as u64, queries, naive_queries)
}

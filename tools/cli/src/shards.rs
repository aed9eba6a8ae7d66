//! `split` and `merge`: one index file as K column-shard files with a
//! manifest (`bloomslice::persist::manifest`), and back; and the query
//! target that answers from an index file or from a manifest alike.
//!
//! A set never straddles files and keeps its id, so the union of the shard
//! files' answers is the index's answer, id for id.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bloomslice::persist::manifest::{self, MANIFEST_FILE, Manifest, ManifestParams, ShardFile};
use bloomslice::persist::{self, LoadedIndex, MAGIC, Verify};
use bloomslice::{BatchResults, BloomFilter, SetNames, SlicedIndex};

use crate::CliError;
use crate::commands::{lock_index, map_index};

/// The file name of shard `i` of a split.
fn shard_file_name(i: usize) -> String {
    format!("shard-{i:04}.bsi")
}

/// The ids of `index` in `shards` parts balanced by bytes: every filter of
/// an index has the same `m`, so bytes follow the number of columns and
/// contiguous runs of ids (in id order) of sizes differing by at most one
/// are balanced.
fn plan(index: &SlicedIndex, shards: usize) -> Vec<Vec<u64>> {
    let mut ids: Vec<u64> = index.ids().collect();
    ids.sort_unstable();
    let n = ids.len();
    (0..shards).map(|s| ids[s * n / shards..(s + 1) * n / shards].to_vec()).collect()
}

/// `split`: writes `shards` index files and `manifest.json` into `out_dir`
/// (created if missing; it must hold no manifest or shard file yet).
pub fn split(index_path: &Path, shards: usize, out_dir: &Path) -> Result<(), CliError> {
    if shards == 0 {
        return Err(CliError::Usage("--shards must be at least 1".into()));
    }
    let loaded = persist::load(index_path).map_err(|e| CliError::index_file(index_path, &e))?;
    let (index, names) = (&loaded.index, &loaded.names);
    if index.len() < shards {
        return Err(CliError::Runtime(format!(
            "{} holds {} sets: it cannot be split into {shards} shards (a set never straddles files)",
            index_path.display(),
            index.len()
        )));
    }
    std::fs::create_dir_all(out_dir)
        .map_err(|e| CliError::Runtime(format!("cannot create {}: {e}", out_dir.display())))?;
    let taken = std::iter::once(MANIFEST_FILE.to_owned()).chain((0..shards).map(shard_file_name));
    if let Some(existing) = taken.map(|f| out_dir.join(f)).find(|p| p.exists()) {
        return Err(CliError::Runtime(format!(
            "{} already exists: split into a new or empty directory",
            existing.display()
        )));
    }
    let mut files = Vec::with_capacity(shards);
    for (i, ids) in plan(index, shards).into_iter().enumerate() {
        let mut part = SlicedIndex::with_config(*index.params(), *index.config());
        part.set_kmer_length(index.kmer_length());
        let mut part_names = SetNames::new();
        let filters: Vec<(u64, BloomFilter)> = ids
            .iter()
            .map(|&id| index.filter_cloned(id).map(|f| (id, f)))
            .collect::<Result<_, _>>()
            .map_err(CliError::engine)?;
        let refs: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
        part.insert_filters(&refs).map_err(CliError::engine)?;
        for &id in &ids {
            if let Some(name) = names.name(id) {
                part_names.insert(id, name.to_vec()).map_err(CliError::engine)?;
            }
        }
        let file = shard_file_name(i);
        let path = out_dir.join(&file);
        persist::save(&path, &part, &part_names)
            .map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))?;
        files.push(ShardFile::describe(out_dir, &file, &part, &part_names).map_err(CliError::engine)?);
    }
    let manifest = Manifest { params: ManifestParams::of(index.params()), files };
    let manifest_path = out_dir.join(MANIFEST_FILE);
    manifest.write(&manifest_path).map_err(CliError::engine)?;
    for f in &manifest.files {
        println!("{}\t{} sets\t{} bytes", out_dir.join(&f.file).display(), f.sets.len(), f.bytes);
    }
    println!("{}\t{} files, {} sets", manifest_path.display(), manifest.files.len(), manifest.set_count());
    Ok(())
}

/// Reads, checks and verifies the manifest at `path` (a manifest file or
/// its directory) and loads every shard file; with `verify` every file's
/// size and checksum is compared with the manifest first.
fn open_shards(path: &Path, verify: bool) -> Result<(PathBuf, Manifest, Vec<LoadedIndex>), CliError> {
    let manifest_path = manifest::manifest_path(path);
    let m = Manifest::read(&manifest_path).map_err(CliError::engine)?;
    let dir = manifest::manifest_dir(&manifest_path);
    if verify {
        m.verify_files(&dir).map_err(CliError::engine)?;
    }
    let mode = if verify { Verify::Full } else { Verify::Deferred };
    let mut shards = Vec::with_capacity(m.files.len());
    let mut first: Option<bloomslice::BloomParams> = None;
    for i in 0..m.files.len() {
        let file = m.file_path(&dir, i);
        let loaded = map_index(&file, mode)?;
        if let Some(p) = first
            && p != *loaded.index.params()
        {
            return Err(CliError::Runtime(format!(
                "{} has parameters {} but {} has {}: shards of one collection share their parameters",
                file.display(),
                ManifestParams::of(loaded.index.params()),
                m.file_path(&dir, 0).display(),
                ManifestParams::of(&p)
            )));
        }
        first = Some(*loaded.index.params());
        m.check_shard(i, &loaded).map_err(|e| CliError::Runtime(format!("{}: {e}", manifest_path.display())))?;
        shards.push(loaded);
    }
    Ok((manifest_path, m, shards))
}

/// `merge`: the shard files of a manifest back into one index file.
pub fn merge(manifest: &Path, output: &Path, force: bool, wait: Duration) -> Result<(), CliError> {
    let (_, m, shards) = open_shards(manifest, true)?;
    let params = *shards[0].index.params();
    let mut index = SlicedIndex::with_config(params, *shards[0].index.config());
    let kmer = shards[0].index.kmer_length();
    if let Some((i, other)) = shards.iter().enumerate().find(|(_, s)| s.index.kmer_length() != kmer) {
        let k = |k: Option<bloomslice::kmer::KmerLength>| k.map_or_else(|| "none".to_owned(), |k| k.to_string());
        return Err(CliError::Runtime(format!(
            "{} has k-mer length {} but {} has {}: shards of one collection share it",
            m.files[i].file,
            k(other.index.kmer_length()),
            m.files[0].file,
            k(kmer)
        )));
    }
    index.set_kmer_length(kmer);
    let mut names = SetNames::new();
    for shard in &shards {
        let mut ids: Vec<u64> = shard.index.ids().collect();
        ids.sort_unstable();
        let filters: Vec<(u64, BloomFilter)> = ids
            .iter()
            .map(|&id| shard.index.filter_cloned(id).map(|f| (id, f)))
            .collect::<Result<_, _>>()
            .map_err(CliError::engine)?;
        let refs: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
        index.insert_filters(&refs).map_err(CliError::engine)?;
        for (id, name) in shard.names.iter() {
            names.insert(id, name.to_vec()).map_err(CliError::engine)?;
        }
    }
    let lock = lock_index(output, wait)?;
    if !force && output.exists() {
        return Err(CliError::Runtime(format!("{} already exists (pass --force to replace it)", output.display())));
    }
    lock.save(&index, &names).map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))?;
    println!("{}\t{} sets from {} files", output.display(), m.set_count(), m.files.len());
    Ok(())
}

/// What `query` answers from: one index file, or the shard files of a
/// manifest (answers are the union of theirs).
pub enum Target {
    /// An index file.
    One(Box<LoadedIndex>),
    /// Shard files and the names of all their sets.
    Many(Vec<LoadedIndex>, SetNames),
}

/// Whether `path` names a manifest: a directory that holds
/// `manifest.json` (any other directory is left to the index file error,
/// "is a directory"), a `.json` file, or a file that does not start with
/// the index magic bytes but with `{`.
fn is_manifest(path: &Path) -> bool {
    if path.is_dir() {
        return path.join(MANIFEST_FILE).is_file();
    }
    if path.extension() == Some(OsStr::new("json")) {
        return true;
    }
    let mut head = [0u8; 8];
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    let n = f.read(&mut head).unwrap_or(0);
    head[..n] != MAGIC[..n.min(MAGIC.len())] && head[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

impl Target {
    /// Opens an index file or a manifest (a manifest file or its directory).
    pub fn open(path: &Path, verify: Verify) -> Result<Self, CliError> {
        if !is_manifest(path) {
            return map_index(path, verify).map(|l| Target::One(Box::new(l)));
        }
        let (_, _, shards) = open_shards(path, verify == Verify::Full)?;
        let mut names = SetNames::new();
        for shard in &shards {
            for (id, name) in shard.names.iter() {
                names.insert(id, name.to_vec()).map_err(CliError::engine)?;
            }
        }
        Ok(Target::Many(shards, names))
    }

    /// The index, if this is one index file.
    pub fn single(&self) -> Option<&SlicedIndex> {
        match self {
            Target::One(l) => Some(&l.index),
            Target::Many(..) => None,
        }
    }

    /// The index of every file (one for an index file).
    pub fn indexes(&self) -> Vec<&SlicedIndex> {
        match self {
            Target::One(l) => vec![&l.index],
            Target::Many(shards, _) => shards.iter().map(|s| &s.index).collect(),
        }
    }

    /// The names of every set.
    pub fn names(&self) -> &SetNames {
        match self {
            Target::One(l) => &l.names,
            Target::Many(_, names) => names,
        }
    }

    /// Answers `keys` into `out`.
    pub fn query_batch(&self, keys: &[&[u8]], out: &mut Answers) {
        out.ids.clear();
        out.ends.clear();
        match self {
            Target::One(l) => {
                l.index.query_batch(keys, &mut out.scratch);
                let (ids, ends) = out.scratch.flat();
                out.ids.extend_from_slice(ids);
                out.ends.extend_from_slice(ends);
            }
            Target::Many(shards, _) => {
                out.per_shard.resize_with(shards.len(), BatchResults::new);
                for (shard, results) in shards.iter().zip(out.per_shard.iter_mut()) {
                    shard.index.query_batch(keys, results);
                }
                for key in 0..keys.len() {
                    for results in &out.per_shard {
                        out.ids.extend_from_slice(results.get(key).unwrap_or_default());
                    }
                    out.ends.push(out.ids.len());
                }
            }
        }
    }
}

/// The answers of one batch: the set ids of each key.
#[derive(Default)]
pub struct Answers {
    ids: Vec<u64>,
    ends: Vec<usize>,
    scratch: BatchResults,
    per_shard: Vec<BatchResults>,
}

impl Answers {
    /// No answers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The set ids of each key, in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u64]> + '_ {
        (0..self.ends.len()).map(|i| &self.ids[if i == 0 { 0 } else { self.ends[i - 1] }..self.ends[i]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_is_balanced_and_covers_every_id_once() {
        let params = bloomslice::BloomParams::new(64, 1).unwrap();
        let mut index = SlicedIndex::new(params);
        let f = BloomFilter::new(params).unwrap();
        for id in (0..103u64).map(|i| i * 3) {
            index.insert_filter(id, &f).unwrap();
        }
        for k in [1, 2, 4, 8, 103] {
            let parts = plan(&index, k);
            assert_eq!(parts.len(), k);
            let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
            let all: Vec<u64> = parts.concat();
            assert_eq!(all, (0..103u64).map(|i| i * 3).collect::<Vec<_>>());
        }
    }
}

//! `split` and `merge`: one index file as K column-shard files with a
//! manifest (`bloomslice::persist::manifest`), and back. A set never
//! straddles files and keeps its id, so the shard files answer as the
//! index did (`bloomslice::sharded::ShardedIndex`, which `query` opens).

use std::path::Path;
use std::time::Duration;

use bloomslice::persist::manifest::{MANIFEST_FILE, Manifest, ManifestParams, ShardFile};
use bloomslice::persist::{self, SetNames, Verify};
use bloomslice::{BloomFilter, SlicedIndex};

use crate::CliError;
use crate::files::{lock_index, map_shards};

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

/// `merge`: the shard files of a manifest back into one index file.
pub fn merge(manifest: &Path, output: &Path, force: bool, wait: Duration) -> Result<(), CliError> {
    let sharded = map_shards(manifest, Verify::Full)?;
    let shards = sharded.shards();
    let config = shards[0].collection.parts().next().map(|part| *part.config()).unwrap_or_default();
    let mut index = SlicedIndex::with_config(*sharded.params(), config);
    index.set_kmer_length(sharded.kmer_length());
    for shard in shards {
        for part in shard.collection.parts() {
            let mut ids: Vec<u64> = part.ids().collect();
            ids.sort_unstable();
            let filters: Vec<(u64, BloomFilter)> = ids
                .iter()
                .map(|&id| part.filter_cloned(id).map(|f| (id, f)))
                .collect::<Result<_, _>>()
                .map_err(CliError::engine)?;
            let refs: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
            index.insert_filters(&refs).map_err(CliError::engine)?;
        }
    }
    let lock = lock_index(output, wait)?;
    if !force && output.exists() {
        return Err(CliError::Runtime(format!("{} already exists (pass --force to replace it)", output.display())));
    }
    lock.save(&index, sharded.names())
        .map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))?;
    println!("{}\t{} sets from {} files", output.display(), sharded.len(), sharded.shard_count());
    Ok(())
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

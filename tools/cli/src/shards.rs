//! `split` and `merge`: one index file as K column-shard files with a
//! manifest (`bloomslice::persist::manifest`), and back. A set never
//! straddles files and keeps its id, so the shard files answer as the
//! index did (`bloomslice::sharded::ShardedIndex`, which `query` opens).

use std::path::Path;
use std::time::Duration;

use bloomslice::SetIndex;
use bloomslice::persist::manifest::{MANIFEST_FILE, Manifest, ManifestParams, ShardFile};
use bloomslice::persist::{self, SetNames, Verify};

use crate::CliError;
use crate::files::{lock_index, map_shards};

/// The file name of shard `i` of a split.
fn shard_file_name(i: usize) -> String {
    format!("shard-{i:04}.bsi")
}

/// The ids of `collection` in `shards` runs balanced by bytes: ids in
/// order, each set weighing the bits of its filters, set `i` going to the
/// shard its weight's midpoint falls in, never skipping a shard and
/// leaving enough sets for the shards after it (so no shard is empty when
/// there are at least as many sets as shards). Sets of equal weight give
/// shards whose sizes differ by at most one.
fn plan(collection: &SetIndex, shards: usize) -> Vec<Vec<u64>> {
    let mut ids: Vec<u64> = collection.ids().collect();
    ids.sort_unstable();
    let weight = |id: u64| -> f64 {
        collection.filters(id).map_or(0.0, |fs| fs.iter().map(|f| f.params.m() as f64).sum::<f64>())
    };
    let weights: Vec<f64> = ids.iter().map(|&id| weight(id)).collect();
    let total: f64 = weights.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let n = ids.len();
    let mut out = vec![Vec::new(); shards];
    let (mut before, mut prev) = (0.0, 0usize);
    for (i, (&id, &w)) in ids.iter().zip(&weights).enumerate() {
        let mid = before + w / 2.0;
        before += w;
        let want = ((mid / total) * shards as f64) as usize;
        let mut s = want.max(prev).min(prev + usize::from(i > 0));
        s = s.max(shards.saturating_sub(n - i)).min(shards - 1);
        out[s].push(id);
        prev = s;
    }
    out
}

/// `split`: writes `shards` collection files and `manifest.json` into
/// `out_dir` (created if missing; it must hold no manifest or shard file
/// yet). Every shard file keeps the collection's parts (those it holds no
/// set of are empty), so merged back the sets land in the same parts.
pub fn split(index_path: &Path, shards: usize, out_dir: &Path) -> Result<(), CliError> {
    if shards == 0 {
        return Err(CliError::Usage("--shards must be at least 1".into()));
    }
    let loaded = persist::load(index_path).map_err(|e| CliError::index_file(index_path, &e))?;
    let (collection, names) = (&loaded.index, &loaded.names);
    if collection.len() < shards {
        return Err(CliError::Runtime(format!(
            "{} holds {} sets: it cannot be split into {shards} shards (a set never straddles files)",
            index_path.display(),
            collection.len()
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
    for (i, ids) in plan(collection, shards).into_iter().enumerate() {
        let keep: hashbrown::HashSet<u64> = ids.iter().copied().collect();
        let mut part = collection.clone();
        let mut part_names = SetNames::new();
        for id in collection.ids() {
            if !keep.contains(&id) {
                part.remove_set(id).map_err(CliError::engine)?;
            }
        }
        for &id in &ids {
            if let Some(name) = names.name(id) {
                part_names.insert(id, name.to_vec()).map_err(CliError::engine)?;
            }
        }
        let file = shard_file_name(i);
        let path = out_dir.join(&file);
        persist::save(&path, &part, &part_names)
            .map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))?;
        files.push(ShardFile::describe_collection(out_dir, &file, &part, &part_names).map_err(CliError::engine)?);
    }
    let first = collection.parts().next().map(|index| *index.params());
    let params = first.ok_or_else(|| CliError::Runtime(format!("{} has no parts", index_path.display())))?;
    let manifest = Manifest { params: ManifestParams::of(&params), files };
    let manifest_path = out_dir.join(MANIFEST_FILE);
    manifest.write(&manifest_path).map_err(CliError::engine)?;
    for f in &manifest.files {
        println!("{}\t{} sets\t{} bytes", out_dir.join(&f.file).display(), f.sets.len(), f.bytes);
    }
    println!("{}\t{} files, {} sets", manifest_path.display(), manifest.files.len(), manifest.set_count());
    Ok(())
}

/// `merge`: the shard files of a manifest back into one collection file
/// (each file's filters as they are, into parts of the same parameters).
pub fn merge(manifest: &Path, output: &Path, force: bool, wait: Duration) -> Result<(), CliError> {
    // Opening checks every file against the manifest (sums, parameters, sets).
    let sharded = map_shards(manifest, Verify::Full)?;
    let m = sharded.manifest();
    let mut merged: Option<SetIndex> = None;
    for (i, shard) in sharded.shards().iter().enumerate() {
        match &mut merged {
            None => merged = Some(shard.index.clone()),
            Some(c) => c.absorb(&shard.index).map_err(|e| CliError::Runtime(format!("{}: {e}", m.files[i].file)))?,
        }
    }
    let collection =
        merged.ok_or_else(|| CliError::Runtime(format!("{} lists no files", sharded.manifest_path().display())))?;
    let lock = lock_index(output, wait)?;
    if !force && output.exists() {
        return Err(CliError::Runtime(format!("{} already exists (pass --force to replace it)", output.display())));
    }
    lock.save(&collection, sharded.names())
        .map_err(|e| CliError::Runtime(format!("{e} (check the directory is writable)")))?;
    println!("{}\t{} sets from {} files", output.display(), sharded.len(), sharded.shard_count());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomslice::LayoutConfig;

    fn keys(prefix: u64, n: u64) -> Vec<bloomslice::Prehashed> {
        (0..n).map(|i| bloomslice::Prehashed(xxhash_of(prefix << 32 | i))).collect()
    }

    fn xxhash_of(x: u64) -> u64 {
        bloomslice::KeyHash::from_bytes(&x.to_le_bytes(), 0).h1
    }

    #[test]
    fn plan_is_balanced_and_covers_every_id_once() {
        let sets: Vec<(u64, Vec<bloomslice::Prehashed>)> = (0..103u64).map(|i| (i * 3, keys(i, 50))).collect();
        let c = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
        for k in [1, 2, 4, 8, 103] {
            let parts = plan(&c, k);
            assert_eq!(parts.len(), k);
            let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
            let all: Vec<u64> = parts.concat();
            assert_eq!(all, (0..103u64).map(|i| i * 3).collect::<Vec<_>>());
        }
    }

    #[test]
    fn plan_balances_bytes_and_leaves_no_shard_empty() {
        // One huge set among small ones, first, in the middle and last.
        for at in [0u64, 10, 19] {
            let sets: Vec<(u64, Vec<bloomslice::Prehashed>)> =
                (0..20u64).map(|i| (i, keys(i, if i == at { 100_000 } else { 20 }))).collect();
            let c = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
            for k in [2, 3, 5, 20] {
                let parts = plan(&c, k);
                assert!(parts.iter().all(|p| !p.is_empty()), "{at} {k}: {parts:?}");
                assert_eq!(parts.concat(), (0..20u64).collect::<Vec<_>>());
                // From three shards on, the huge set has a shard of its own.
                if k >= 3 {
                    assert!(parts.contains(&vec![at]), "{at} {k}: {parts:?}");
                }
            }
        }
    }
}

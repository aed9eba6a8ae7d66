//! Splitting a [`SetIndex`] into the column-shard files of a manifest: one
//! planner ([`plan_split`]) and one writer ([`write_split`]) for every
//! front end (the CLI's `split`, Python's `Index.save_shards`, the C ABI),
//! so which sets go to which file, and what the files are called, do not
//! depend on who asked.
//!
//! A set never straddles files and keeps its id; every file keeps all the
//! collection's parts (those it holds no set of are empty, costing their
//! tables only), so the files share their first part's parameters, which
//! the manifest records, and merged back the sets land in the same parts.

use std::path::Path;

use crate::collection::SetIndex;
use crate::error::{Error, Result};
use crate::persist::manifest::{MANIFEST_FILE, Manifest, ManifestParams, ShardFile};
use crate::persist::{self, SetNames};

/// The file name of shard `i` of a split: `shard-0000.bsi`, `shard-0001.bsi`,
/// ... (four digits, so the names of up to 10 000 files sort in shard
/// order; collection files share the `.bsi` extension with index files).
pub fn shard_file_name(i: usize) -> String {
    format!("shard-{i:04}.bsi")
}

/// The ids of `index` in `shards` runs balanced by bytes: ids in ascending
/// order, each set weighing the bits of its filters, set `i` going to the
/// shard its weight's midpoint falls in, never skipping a shard and
/// leaving enough sets for the shards after it. So no shard is empty when
/// there are at least as many sets as shards, sets of equal weight give
/// shards whose sizes differ by at most one, and a set much heavier than
/// the rest gets a shard of its own.
///
/// Runs of ids rather than a greedy packing: a file then holds a range of
/// ids, which a reader of the manifest can tell at a glance, and the plan
/// of a collection changes only near the sets that changed.
///
/// Returns `shards` lists of ids, each ascending (an empty list for
/// `shards` of 0, which places no set).
///
/// ```
/// use bloomslice::{LayoutConfig, SetIndex};
/// use bloomslice::sharded::plan_split;
///
/// let sets: Vec<(u64, Vec<String>)> =
///     (0..6u64).map(|id| (id, (0..100).map(|k| format!("{id}-{k}")).collect())).collect();
/// let index = SetIndex::build(&sets, 0.01, LayoutConfig::default())?;
/// assert_eq!(plan_split(&index, 3), [vec![0, 1], vec![2, 3], vec![4, 5]]);
/// # Ok::<(), bloomslice::Error>(())
/// ```
pub fn plan_split(index: &SetIndex, shards: usize) -> Vec<Vec<u64>> {
    if shards == 0 {
        return Vec::new();
    }
    let mut ids: Vec<u64> = index.ids().collect();
    ids.sort_unstable();
    let weight =
        |id: u64| -> f64 { index.filters(id).map_or(0.0, |fs| fs.iter().map(|f| f.params.m() as f64).sum::<f64>()) };
    let weights: Vec<f64> = ids.iter().map(|&id| weight(id)).collect();
    let total: f64 = weights.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let n = ids.len();
    let mut out = vec![Vec::new(); shards];
    let (mut before, mut prev) = (0.0, 0usize);
    for (i, (&id, &w)) in ids.iter().zip(&weights).enumerate() {
        let mid = before + w / 2.0;
        before += w;
        let want = ((mid / total) * shards as f64) as usize;
        // Never back, at most one shard ahead of the previous set ...
        let mut s = want.max(prev).min(prev + usize::from(i > 0));
        // ... and late enough that every later shard still gets a set.
        s = s.max(shards.saturating_sub(n - i)).min(shards - 1);
        out[s].push(id);
        prev = s;
    }
    out
}

/// Writes `index` with its `names` as `shards` collection files
/// ([`shard_file_name`]) and a manifest ([`MANIFEST_FILE`]) in `out_dir`,
/// which is created if missing, with the sets of [`plan_split`]. Returns
/// the manifest written. Open the result with
/// [`ShardedIndex`](super::ShardedIndex); it answers as `index` does.
///
/// ```
/// use bloomslice::persist::{SetNames, Verify};
/// use bloomslice::sharded::{ShardedIndex, write_split};
/// use bloomslice::{LayoutConfig, SetIndex};
///
/// let sets: Vec<(u64, Vec<String>)> =
///     (0..6u64).map(|id| (id, (0..100).map(|k| format!("{id}-{k}")).collect())).collect();
/// let index = SetIndex::build(&sets, 0.01, LayoutConfig::default())?;
/// let mut names = SetNames::new();
/// names.insert(4, "four")?;
/// let dir = std::env::temp_dir().join(format!("bloomslice-split-doc-{}", std::process::id()));
/// let manifest = write_split(&index, &names, 3, &dir)?;
/// assert_eq!(manifest.files[2].file, "shard-0002.bsi");
/// let sharded = ShardedIndex::load(&dir, Verify::Full)?;
/// assert_eq!(sharded.query("4-17"), [4]);
/// assert_eq!(sharded.names().id(b"four"), Some(4));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), bloomslice::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Invalid`] for `shards` of 0 or more than `index` has sets (a
/// set never straddles files); [`Error::Io`] of kind
/// [`AlreadyExists`](std::io::ErrorKind::AlreadyExists) if `out_dir`
/// already holds the manifest or one of the shard files (split into a new
/// or empty directory; nothing is written then), and [`Error::Io`] for a
/// directory or file that cannot be created or written (the files written
/// before stay).
pub fn write_split(index: &SetIndex, names: &SetNames, shards: usize, out_dir: &Path) -> Result<Manifest> {
    let sets = index.len();
    if shards == 0 || shards > sets {
        return Err(Error::Invalid(format!(
            "{sets} sets cannot be split into {shards} shards: a set never straddles files (give 1 to {sets})"
        )));
    }
    // A collection that holds a set has a part.
    let params =
        *index.parts().next().ok_or_else(|| Error::Invalid("a collection with sets has no part".into()))?.params();
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io("create directory", out_dir, e))?;
    let taken = std::iter::once(MANIFEST_FILE.to_owned()).chain((0..shards).map(shard_file_name));
    if let Some(existing) = taken.map(|f| out_dir.join(f)).find(|p| p.exists()) {
        let e = std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "it already exists: split into a new or empty directory",
        );
        return Err(Error::io("write", &existing, e));
    }
    let mut files = Vec::with_capacity(shards);
    for (i, ids) in plan_split(index, shards).into_iter().enumerate() {
        let (part, part_names) = restricted(index, names, &ids)?;
        let file = shard_file_name(i);
        save_shard(out_dir, &file, &part, &part_names)?;
        files.push(ShardFile::describe_collection(out_dir, &file, &part, &part_names)?);
    }
    let manifest = Manifest { params: ManifestParams::of(&params), files };
    manifest.write(&out_dir.join(MANIFEST_FILE))?;
    Ok(manifest)
}

/// `index` and `names` with only the sets `keep` (ascending ids): every
/// other set removed, its parts kept.
fn restricted(index: &SetIndex, names: &SetNames, keep: &[u64]) -> Result<(SetIndex, SetNames)> {
    let mut part = index.clone();
    for id in index.ids() {
        if keep.binary_search(&id).is_err() {
            part.remove_set(id)?;
        }
    }
    let mut part_names = SetNames::new();
    for &id in keep {
        if let Some(name) = names.name(id) {
            part_names.insert(id, name.to_vec())?;
        }
    }
    Ok((part, part_names))
}

/// Writes one shard file (atomically, as every collection file is saved).
fn save_shard(dir: &Path, file: &str, part: &SetIndex, names: &SetNames) -> Result<()> {
    persist::save(dir.join(file), part, names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::Verify;
    use crate::sharded::ShardedIndex;
    use crate::{BatchResults, KeyHash, LayoutConfig, Prehashed};

    fn keys(prefix: u64, n: u64) -> Vec<Prehashed> {
        (0..n).map(|i| Prehashed(KeyHash::from_bytes(&(prefix << 32 | i).to_le_bytes(), 0).h1)).collect()
    }

    #[test]
    fn plan_is_balanced_and_covers_every_id_once() {
        let sets: Vec<(u64, Vec<Prehashed>)> = (0..103u64).map(|i| (i * 3, keys(i, 50))).collect();
        let c = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
        for k in [1, 2, 4, 8, 103] {
            let parts = plan_split(&c, k);
            assert_eq!(parts.len(), k);
            let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
            let all: Vec<u64> = parts.concat();
            assert_eq!(all, (0..103u64).map(|i| i * 3).collect::<Vec<_>>());
        }
        assert!(plan_split(&c, 0).is_empty());
    }

    #[test]
    fn plan_balances_bytes_and_leaves_no_shard_empty() {
        // One huge set among small ones, first, in the middle and last.
        for at in [0u64, 10, 19] {
            let sets: Vec<(u64, Vec<Prehashed>)> =
                (0..20u64).map(|i| (i, keys(i, if i == at { 100_000 } else { 20 }))).collect();
            let c = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
            for k in [2, 3, 5, 20] {
                let parts = plan_split(&c, k);
                assert!(parts.iter().all(|p| !p.is_empty()), "{at} {k}: {parts:?}");
                assert_eq!(parts.concat(), (0..20u64).collect::<Vec<_>>());
                // From three shards on, the huge set has a shard of its own.
                if k >= 3 {
                    assert!(parts.contains(&vec![at]), "{at} {k}: {parts:?}");
                }
            }
        }
    }

    #[test]
    fn written_split_answers_as_the_index_and_keeps_ids_names_and_parts() {
        let sizes = [3u64, 40, 600, 5000];
        let sets: Vec<(u64, Vec<Prehashed>)> =
            (0..24u64).map(|i| (i * 2 + 1, keys(i, sizes[i as usize % 4]))).collect();
        let index = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
        assert!(index.parts().len() >= 2);
        let mut names = SetNames::new();
        for &(id, _) in sets.iter().filter(|(id, _)| id % 3 != 0) {
            names.insert(id, format!("set-{id}")).unwrap();
        }
        let probe: Vec<Prehashed> = (0..24).flat_map(|i| keys(i, 7)).chain(keys(999, 2000)).collect();
        let mut want = BatchResults::new();
        index.query_batch(&probe, &mut want);
        for k in [1usize, 3, 24] {
            let dir = tempfile::tempdir().unwrap();
            let manifest = write_split(&index, &names, k, dir.path()).unwrap();
            let files: Vec<String> = (0..k).map(shard_file_name).collect();
            assert_eq!(manifest.files.iter().map(|f| f.file.clone()).collect::<Vec<_>>(), files);
            assert_eq!(Manifest::read(&dir.path().join(MANIFEST_FILE)).unwrap(), manifest);
            let planned = plan_split(&index, k);
            for (f, ids) in manifest.files.iter().zip(&planned) {
                assert_eq!(f.sets.iter().map(|s| s.id).collect::<Vec<_>>(), *ids);
                for s in &f.sets {
                    assert_eq!(s.name.as_deref(), names.name(s.id));
                }
            }
            let sharded = ShardedIndex::load(dir.path(), Verify::Full).unwrap();
            assert_eq!(sharded.len(), index.len());
            for shard in sharded.shards() {
                assert_eq!(shard.index.parts().len(), index.parts().len(), "{k} shards: every part kept");
            }
            let mut got = BatchResults::new();
            sharded.query_batch(&probe, &mut got);
            for i in 0..probe.len() {
                let mut g = got.get(i).unwrap().to_vec();
                let mut w = want.get(i).unwrap().to_vec();
                g.sort_unstable();
                w.sort_unstable();
                assert_eq!(g, w, "{k} shards, key {i}");
            }
        }
    }

    #[test]
    fn bad_shard_counts_and_taken_directories_are_errors() {
        let sets: Vec<(u64, Vec<Prehashed>)> = (0..4u64).map(|i| (i, keys(i, 30))).collect();
        let index = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
        let names = SetNames::new();
        let dir = tempfile::tempdir().unwrap();
        for k in [0, 5] {
            let err = write_split(&index, &names, k, dir.path()).unwrap_err();
            assert!(matches!(&err, Error::Invalid(m) if m.contains("cannot be split")), "{err}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
        let out = dir.path().join("new").join("deeper");
        write_split(&index, &names, 2, &out).unwrap();
        let err = write_split(&index, &names, 2, &out).unwrap_err();
        assert_eq!(err.io_kind(), Some(std::io::ErrorKind::AlreadyExists), "{err}");
        assert!(err.to_string().contains("already exists"), "{err}");
        // A shard file alone is enough to refuse.
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(shard_file_name(3)), b"x").unwrap();
        assert_eq!(
            write_split(&index, &names, 4, &other).unwrap_err().io_kind(),
            Some(std::io::ErrorKind::AlreadyExists)
        );
        assert!(!other.join(MANIFEST_FILE).exists());
    }
}

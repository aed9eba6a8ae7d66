//! Every call of the binding into the library's files (`bloomslice::persist`:
//! index, collection and manifest files; `bloomslice::sharded`: opening and
//! writing a split), one small function per verb, so that the rest of the
//! binding never names a file format or a loader.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bloomslice::persist::manifest::{self, Manifest};
use bloomslice::persist::{self, FileInfo, Loaded, Verify};
use bloomslice::sharded::{self, ShardedIndex};
use bloomslice::{BloomFilter, BloomParams, Error, LevelIndex, SetIndex, SetNames, SlicedIndex};

use crate::Engine;

/// Whether `path` names a manifest of shard files: a directory holding
/// one, or a `.json` file.
pub fn is_manifest(path: &Path) -> bool {
    if path.is_dir() {
        return path.join(manifest::MANIFEST_FILE).is_file();
    }
    path.extension().is_some_and(|ext| ext == "json")
}

fn verify_of(verify: bool) -> Verify {
    if verify { Verify::Full } else { Verify::Deferred }
}

/// Opens the file at `path` (mapped or read): an index file of one filter
/// length (format 1) as the fixed-size index it was built and saved as; a
/// collection file (format 2) as a collection; a level index file (format
/// 3) as the level index it holds (read whole and fully verified, also
/// when mapped). Returns its names and what the file said about itself
/// too.
pub fn open(path: &Path, mmap: bool, verify: bool) -> Result<(Engine, SetNames, FileInfo), Error> {
    let verify = verify_of(verify);
    if persist::is_level_file(path) {
        let loaded = if mmap {
            // SAFETY: as for format-1 files below.
            unsafe { Loaded::<LevelIndex>::open_mmap(path, verify) }
        } else {
            Loaded::<LevelIndex>::load(path)
        };
        let Loaded { index, names, info } = loaded?;
        return Ok((Engine::Levels(index), names, info));
    }
    if persist::is_format_1(path) {
        let loaded = if mmap {
            // SAFETY: the mapping contract of `open_mmap` (no truncation or
            // in-place write while mapped) is the documented contract of
            // `Index.open`, as for `numpy.memmap`; bloomslice's own writers
            // (`save`, the CLI) replace files by rename under a lock.
            unsafe { Loaded::<SlicedIndex>::open_mmap(path, verify) }
        } else {
            Loaded::<SlicedIndex>::load(path)
        };
        let Loaded { index, names, info } = loaded?;
        return Ok((Engine::Fixed(index), names, info));
    }
    let loaded = if mmap {
        // SAFETY: as above.
        unsafe { persist::open_mmap(path, verify) }
    } else {
        persist::load(path)
    };
    let Loaded { index, names, info } = loaded?;
    Ok((Engine::Sized(index), names, info))
}

/// Whether the file at `path` is a level index file (format 3).
pub fn is_level_file(path: &Path) -> bool {
    persist::is_level_file(path)
}

/// The path of shard file `shard` of the manifest `m` at `manifest_path`.
pub fn shard_path(manifest_path: &Path, m: &Manifest, shard: usize) -> PathBuf {
    m.file_path(&manifest::manifest_dir(manifest_path), shard)
}

/// Opens the manifest at `path` (a manifest file or its directory) and
/// every shard file it lists, mapped or read.
pub fn open_shards(path: &Path, mmap: bool, verify: bool) -> Result<ShardedIndex, Error> {
    let verify = verify_of(verify);
    if mmap {
        // SAFETY: the mapping contract of `ShardedIndex::open_mmap`, for
        // every file of the manifest, is the documented contract of
        // `Index.open_shards`, as for `Index.open`; the manifest's writers
        // replace files by rename.
        unsafe { ShardedIndex::open_mmap(path, verify) }
    } else {
        ShardedIndex::load(path, verify)
    }
}

/// Saves a fixed-size index as an index file (format 1), atomically.
pub fn save_index(path: &Path, index: &SlicedIndex, names: &SetNames) -> Result<(), Error> {
    persist::save(path, index, names)
}

/// Saves a collection as a collection file (format 2), atomically.
pub fn save_collection(path: &Path, collection: &SetIndex, names: &SetNames) -> Result<(), Error> {
    persist::save(path, collection, names)
}

/// Saves a level index as a level index file (format 3), atomically.
pub fn save_levels(path: &Path, levels: &LevelIndex, names: &SetNames) -> Result<(), Error> {
    persist::save(path, levels, names)
}

/// Writes `collection` as `shards` shard files and a manifest in `dir`
/// (the library's one split); returns the manifest's path.
pub fn write_split(collection: &SetIndex, names: &SetNames, shards: usize, dir: &Path) -> Result<PathBuf, Error> {
    sharded::write_split(collection, names, shards, dir)?;
    Ok(dir.join(manifest::MANIFEST_FILE))
}

/// The manifest at `path` (a manifest file or its directory): its file's
/// path, its directory, and what it says.
pub fn read_manifest(path: &Path) -> Result<(PathBuf, PathBuf, Manifest), Error> {
    let manifest_path = manifest::manifest_path(path);
    let m = Manifest::read(&manifest_path)?;
    let dir = manifest::manifest_dir(&manifest_path);
    Ok((manifest_path, dir, m))
}

/// Size and xxh3-64 of a file, as a manifest records them.
pub fn file_checksum(path: &Path) -> Result<(u64, u64), Error> {
    manifest::file_checksum(path)
}

/// The parameters a new filter of shard file `shard` of the manifest `m`
/// (at `manifest_path`) takes: the file's own (an index file's, or a
/// collection file's first part's, read from its header and tables only),
/// so the filter matches the file whatever the manifest says; `None` for a
/// collection file of no parts.
pub fn shard_params(manifest_path: &Path, m: &Manifest, shard: usize) -> Result<Option<BloomParams>, Error> {
    let file = shard_path(manifest_path, m, shard);
    // SAFETY: the map lives only for this read of the parameters; writers
    // of index and collection files replace them by rename.
    let opened = unsafe { persist::open_mmap(&file, Verify::Deferred) }?;
    Ok(opened.index.parts().next().map(|part| *part.params()))
}

/// Adds the set `name` (its filter) to shard file `shard` of the manifest,
/// under its locks; returns its id.
pub fn add_set(
    manifest_path: &Path,
    shard: usize,
    name: &[u8],
    filter: &BloomFilter,
    wait: Duration,
) -> Result<u64, Error> {
    manifest::add_set(manifest_path, shard, name, filter, wait)
}

/// Removes the set `name` from the shard file of the manifest that holds
/// it, under its locks; returns that file's index.
pub fn remove_set(manifest_path: &Path, name: &[u8], wait: Duration) -> Result<usize, Error> {
    manifest::remove_set(manifest_path, name, wait)
}

//! Opening what the commands read and write: index files (mapped for
//! reading, locked for writing) and the query target, an index file or the
//! shard files of a manifest (`bloomslice::sharded::ShardedIndex`).

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use bloomslice::collection::PartPrefetch;
use bloomslice::collection::levels::LEVELS_FORMAT_MAJOR;
use bloomslice::kernels::LookAhead;
use bloomslice::persist::manifest::MANIFEST_FILE;
use bloomslice::persist::{self, IndexFile, IndexFileLock, Loaded, MAGIC, SetNames, Verify};
use bloomslice::score::{Scores, Threshold};
use bloomslice::sharded::ShardedIndex;
use bloomslice::{BatchResults, LevelIndex, ReadIndex, SetIndex};

use crate::CliError;

/// Maps a collection file (or an older index file, as a collection of one
/// part) for reading, with the speed settings of [`tune`].
pub fn map_collection(path: &Path, verify: Verify) -> Result<Loaded, CliError> {
    if is_level_file(path) {
        return Err(level_file_refused(path, "this command"));
    }
    // SAFETY: `bloomslice` never writes into an existing index file: every
    // writer holds the index's lock and replaces the file by rename
    // (`persist::save`), which leaves this map on the old,
    // unchanged file. Programs that write index files in place are outside
    // the contract the README states ("Concurrency and files").
    let mut loaded = unsafe { persist::open_mmap(path, verify) }.map_err(|e| CliError::index_file(path, &e))?;
    tune(&mut loaded.index);
    Ok(loaded)
}

/// Applies the speed settings the environment names (the library reads no
/// environment): `BLOOMSLICE_LOOKAHEAD=l1|l2` (scoring's look-ahead cache
/// level, else the CPU's choice) and `BLOOMSLICE_COLLECTION_PREFETCH=auto|always|never`
/// (whether queries prefetch the parts' rows). Unknown values are ignored.
/// Answers never change.
pub fn tune(index: &mut SetIndex) {
    let var = |name: &str| std::env::var(name).ok();
    if let Some(look_ahead) = var("BLOOMSLICE_LOOKAHEAD").and_then(|v| LookAhead::from_name(&v)) {
        index.set_look_ahead(look_ahead);
    }
    if let Some(mode) = var("BLOOMSLICE_COLLECTION_PREFETCH").and_then(|v| PartPrefetch::from_name(&v)) {
        index.set_part_prefetch(mode);
    }
}

/// Maps the shard files of the manifest at `path` (a manifest file or its
/// directory) for reading; with [`Verify::Full`] every file is compared
/// with its recorded checksum and fully verified.
pub fn map_shards(path: &Path, verify: Verify) -> Result<ShardedIndex, CliError> {
    // SAFETY: as in `map_collection`, for every file of the manifest: its
    // writers (`split`, `bloomslice::persist::manifest::add_set`) replace
    // files by rename.
    unsafe { ShardedIndex::open_mmap(path, verify) }.map_err(CliError::engine)
}

/// Whether `path` is a level index file (format 3): the index magic and
/// major version 3.
pub fn is_level_file(path: &Path) -> bool {
    let mut head = [0u8; 10];
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    f.read_exact(&mut head).is_ok()
        && head[..8] == MAGIC
        && u16::from_le_bytes([head[8], head[9]]) == LEVELS_FORMAT_MAJOR
}

/// The error of a command that takes set index files only (`what` it
/// does), given a level index file.
pub fn level_file_refused(path: &Path, what: &str) -> CliError {
    CliError::Runtime(format!(
        "{} is a level index file: {what} takes set index files (build one with `bloomslice build --flat`)",
        path.display()
    ))
}

/// Maps a level index file (read whole and verified).
pub fn map_levels(path: &Path) -> Result<Loaded<LevelIndex>, CliError> {
    // SAFETY: as in `map_collection`: writers replace files by rename.
    unsafe { Loaded::<LevelIndex>::open_mmap(path, Verify::Full) }.map_err(|e| CliError::index_file(path, &e))
}

/// Takes the write lock of `path`, waiting up to `wait`.
pub fn lock_index(path: &Path, wait: Duration) -> Result<IndexFileLock, CliError> {
    IndexFile::new(path).lock(wait).map_err(|e| match e {
        bloomslice::Error::LockBusy { .. } => {
            CliError::Runtime(format!("{e} (wait for the other writer to finish, or pass a longer --wait)"))
        }
        e => CliError::Runtime(format!("{e} (check the directory exists and is writable)")),
    })
}

/// What `query` answers from: one index file, or the shard files of a
/// manifest (answered as one index).
pub enum Target {
    /// A collection file (or an older index file, as one part).
    One(Loaded),
    /// The shard files of a manifest.
    Many(ShardedIndex),
    /// A level index file.
    Levels(Loaded<LevelIndex>),
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
        if is_manifest(path) {
            map_shards(path, verify).map(Target::Many)
        } else if is_level_file(path) {
            map_levels(path).map(Target::Levels)
        } else {
            map_collection(path, verify).map(Target::One)
        }
    }

    /// The collection, if this is one file.
    pub fn single(&self) -> Option<&SetIndex> {
        match self {
            Target::One(l) => Some(&l.index),
            Target::Many(_) | Target::Levels(_) => None,
        }
    }

    /// The names of every set.
    pub fn names(&self) -> &SetNames {
        match self {
            Target::One(l) => &l.names,
            Target::Many(s) => s.names(),
            Target::Levels(l) => &l.names,
        }
    }

    /// Answers `keys` into `out`.
    pub fn query_batch(&self, keys: &[&[u8]], out: &mut BatchResults) {
        match self {
            Target::One(l) => l.index.query_batch(keys, out),
            Target::Many(s) => s.query_batch(keys, out),
            Target::Levels(l) => ReadIndex::query_batch(&l.index, keys, out),
        }
    }

    /// The sets whose count of `keys` reaches `threshold`, `(id, count)` by
    /// ascending id, into `out`.
    pub fn query_threshold_into(
        &self,
        keys: &[&[u8]],
        threshold: Threshold,
        scratch: &mut Scores,
        out: &mut Vec<(u64, u32)>,
    ) {
        match self {
            Target::One(l) => l.index.query_threshold_into(keys, threshold, scratch, out),
            Target::Many(s) => s.query_threshold_into(keys, threshold, scratch, out),
            Target::Levels(l) => ReadIndex::query_threshold_into(&l.index, keys, threshold, scratch, out),
        }
    }
}

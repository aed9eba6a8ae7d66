//! Every call of the C ABI into `bloomslice::persist` and the manifest
//! openers, one private function per verb (load, map, save, open a
//! manifest), so that a change of the persist API touches this file only.

use std::path::Path;

use bloomslice::SlicedIndex;
use bloomslice::persist::{self, Loaded, Verify};
use bloomslice::sharded::ShardedIndex;
use bloomslice::{Error, SetNames};

use crate::{Engine, Failure};

/// Reads the file at `path` into memory, fully verified, as the layout it
/// was saved from: an index file of one filter length as `Sliced`, a
/// collection file as `Sets`.
pub(crate) fn load(path: &Path) -> Result<(Engine, SetNames), Error> {
    if persist::is_format_1(path) {
        let Loaded { index, names, .. } = Loaded::<SlicedIndex>::load(path)?;
        return Ok((Engine::Sliced(index), names));
    }
    let Loaded { index, names, .. } = persist::load(path)?;
    Ok((Engine::Sets(index), names))
}

/// [`load`] with the file mapped and queried in place.
///
/// # Safety
///
/// The file must not be truncated or written in place while the returned
/// index is alive (replacing it by rename is fine).
pub(crate) unsafe fn map(path: &Path, verify: Verify) -> Result<(Engine, SetNames), Error> {
    if persist::is_format_1(path) {
        // SAFETY: the mapping contract is this function's, forwarded.
        let Loaded { index, names, .. } = unsafe { Loaded::<SlicedIndex>::open_mmap(path, verify) }?;
        return Ok((Engine::Sliced(index), names));
    }
    // SAFETY: the mapping contract is this function's, forwarded.
    let Loaded { index, names, .. } = unsafe { persist::open_mmap(path, verify) }?;
    Ok((Engine::Sets(index), names))
}

/// Saves `engine` with `names` to `path` atomically, in the format of its
/// layout (a collection file for `Sets`, an index file for `Sliced`).
pub(crate) fn save(path: &Path, engine: &Engine, names: &SetNames) -> Result<(), Failure> {
    match engine {
        Engine::Sets(sets) => Ok(persist::save(path, sets, names)?),
        Engine::Sliced(index) => Ok(persist::save(path, index, names)?),
        Engine::Sharded(_) => Err(Failure::read_only("save")),
    }
}

/// Opens the manifest at `path` (a manifest file or its directory) and
/// every shard file it lists, mapped or read into memory.
///
/// # Safety
///
/// With `mapped`, no shard file may be truncated or written in place while
/// the returned index is alive (replacing one by rename is fine).
pub(crate) unsafe fn open_manifest(path: &Path, mapped: bool, verify: Verify) -> Result<ShardedIndex, Error> {
    if mapped {
        // SAFETY: the mapping contract is this function's, forwarded.
        unsafe { ShardedIndex::open_mmap(path, verify) }
    } else {
        ShardedIndex::load(path, verify)
    }
}

//! Every call of the C ABI into `bloomslice::persist` and the manifest
//! openers, one private function per verb (load, map, save, open a
//! manifest), so that a change of the persist API touches this file only.

use std::path::Path;

use bloomslice::persist::{self, Loaded, Verify};
use bloomslice::sharded::ShardedIndex;
use bloomslice::{Error, SetNames};
use bloomslice::{LevelIndex, SlicedIndex};

use crate::{Engine, Failure};

/// Reads the file at `path` into memory, fully verified, as the layout it
/// was saved from: an index file of one filter length as `Sliced`, a level
/// index file as `Levels`, a collection file as `Sets`.
pub(crate) fn load(path: &Path) -> Result<(Engine, SetNames), Error> {
    if persist::is_level_file(path) {
        let Loaded { index, names, .. } = Loaded::<LevelIndex>::load(path)?;
        return Ok((Engine::Levels(index), names));
    }
    if persist::is_format_1(path) {
        let Loaded { index, names, .. } = Loaded::<SlicedIndex>::load(path)?;
        return Ok((Engine::Sliced(index), names));
    }
    let Loaded { index, names, .. } = persist::load(path)?;
    Ok((Engine::Sets(index), names))
}

/// [`load`] with the file mapped and queried in place (a level index file
/// is read out of the map whole and fully verified, whatever `verify`
/// says).
///
/// # Safety
///
/// The file must not be truncated or written in place while the returned
/// index is alive (replacing it by rename is fine).
pub(crate) unsafe fn map(path: &Path, verify: Verify) -> Result<(Engine, SetNames), Error> {
    if persist::is_level_file(path) {
        // SAFETY: the mapping contract is this function's, forwarded.
        let Loaded { index, names, .. } = unsafe { Loaded::<LevelIndex>::open_mmap(path, verify) }?;
        return Ok((Engine::Levels(index), names));
    }
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
/// layout (a collection file for `Sets`, an index file for `Sliced`, a
/// level index file for `Levels`).
pub(crate) fn save(path: &Path, engine: &Engine, names: &SetNames) -> Result<(), Failure> {
    match engine {
        Engine::Sets(sets) => Ok(persist::save(path, sets, names)?),
        Engine::Sliced(index) => Ok(persist::save(path, index, names)?),
        Engine::Levels(levels) => Ok(persist::save(path, levels, names)?),
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

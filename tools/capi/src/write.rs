//! The functions that change an index (add and grow sets, remove them,
//! save): on the writable layouts (sets, one filter length, levels), each
//! a clear [`BloomsliceStatus::Unsupported`] on a manifest's shard files.

use std::ffi::c_char;

use bloomslice::{BloomFilter, KeyHash, LevelIndex, ReadIndex, SetIndex, SetNames, SlicedIndex};

use crate::read::id_of;
use crate::{
    BloomsliceIndex, BloomsliceStatus, Engine, Failure, KEYS, byte_strings, bytes, changing, check_ptr, files,
    path_arg, reading, slice,
};
#[cfg(doc)]
use crate::{bloomslice_query_batch_hashes, bloomslice_query_hash};

/// The index behind a handle, of a layout that can change.
enum Writable<'a> {
    Sets(&'a mut SetIndex),
    Sliced(&'a mut SlicedIndex),
    /// Its writes go to the flat delta beside the levels
    /// ([`LevelIndex::delta`]) until the index is built again.
    Levels(&'a mut LevelIndex),
}

impl Engine {
    /// The index, if its layout can change (`verb` names the change in the
    /// message otherwise).
    fn writable(&mut self, verb: &str) -> Result<Writable<'_>, Failure> {
        match self {
            Engine::Sets(sets) => Ok(Writable::Sets(sets)),
            Engine::Sliced(index) => Ok(Writable::Sliced(index)),
            Engine::Sharded(_) => Err(Failure::read_only(verb)),
            Engine::Levels(levels) => Ok(Writable::Levels(levels)),
        }
    }
}

impl Writable<'_> {
    fn read(&self) -> &dyn ReadIndex {
        match self {
            Writable::Sets(sets) => &**sets,
            Writable::Sliced(index) => &**index,
            Writable::Levels(levels) => &**levels,
        }
    }

    /// A new set `id` holding the keys hashed as `hashes`.
    fn insert_set(&mut self, id: u64, hashes: &[KeyHash]) -> Result<(), Failure> {
        match self {
            Writable::Sets(sets) => Ok(sets.insert_set(id, hashes)?),
            Writable::Sliced(index) => Ok(index.insert_set(id, hashes)?),
            Writable::Levels(levels) => Ok(levels.insert_set(id, hashes)?),
        }
    }

    /// Adds the keys hashed as `hashes` to set `id`.
    fn add_keys(&mut self, id: u64, hashes: &[KeyHash]) -> Result<(), Failure> {
        match self {
            Writable::Sets(sets) => Ok(sets.add_keys(id, hashes)?),
            Writable::Sliced(index) => Ok(index.add_keys(id, hashes)?),
            Writable::Levels(levels) => Ok(levels.add_keys(id, hashes)?),
        }
    }

    /// A new set `id` of the ready filter `words`.
    fn insert_words(&mut self, id: u64, words: &[u64]) -> Result<(), Failure> {
        match self {
            Writable::Sets(_) => Err(Failure::unsupported(
                "cannot add a ready filter: the sets of this index are each sized from their own keys; \
                 ready filters go to an index of one filter length (bloomslice_index_new_sliced)",
            )),
            Writable::Sliced(index) => Ok(index.insert_filter(id, &BloomFilter::from_words(*index.params(), words)?)?),
            Writable::Levels(_) => Err(Failure::unsupported(
                "cannot add a ready filter: a level index sizes each new set from its own keys; add the \
                 set's keys (bloomslice_index_add_set), or ready filters to an index of one filter length \
                 (bloomslice_index_new_sliced)",
            )),
        }
    }

    fn remove_set(&mut self, id: u64) -> Result<(), Failure> {
        match self {
            Writable::Sets(sets) => Ok(sets.remove_set(id)?),
            Writable::Sliced(index) => Ok(index.remove_set(id)?),
            Writable::Levels(levels) => Ok(levels.remove_set(id)?),
        }
    }
}

/// Runs `body` as an entry point that changes the index behind a handle of
/// a writable layout (`verb` names the change otherwise), with the set name
/// `name` (`name_len` bytes) checked.
///
/// # Safety
///
/// A non-null `index` must be a live handle that no other call uses at the
/// same time; a non-null `name` must point to `name_len` bytes.
unsafe fn changing_named(
    index: *mut BloomsliceIndex, (name, name_len): (*const u8, usize), verb: &str,
    body: impl FnOnce(Writable<'_>, &mut SetNames, &[u8]) -> Result<(), Failure>,
) -> BloomsliceStatus {
    let body = |h: &mut BloomsliceIndex| {
        // SAFETY: forwarded caller contract.
        let name = unsafe { bytes(name, name_len, "name") }?;
        let BloomsliceIndex { engine, names, .. } = h;
        body(engine.writable(verb)?, names, name)
    };
    // SAFETY: forwarded caller contract.
    unsafe { changing(index, body) }
}

/// The hashes of the byte keys `keys[i]` (`key_lens[i]` bytes, `n_keys`
/// of them) under `read`'s seed.
///
/// # Safety
///
/// As [`byte_strings`].
unsafe fn hashes_of(
    read: &dyn ReadIndex, keys: (*const *const u8, *const usize, usize),
) -> Result<Vec<KeyHash>, Failure> {
    // SAFETY: forwarded caller contract.
    let keys = unsafe { byte_strings(keys, KEYS) }?;
    Ok(keys.iter().map(|key| read.hash_bytes(key)).collect())
}

/// The body of the `add_set` functions: a new set called `name` that
/// `insert` stores under the id it is given; the id goes to `*id_out` when
/// that is not null.
///
/// # Safety
///
/// `index` must be a live handle used by no other call; `name` must point to
/// `name_len` bytes; `id_out` null or valid for a write.
unsafe fn add_set_with(
    index: *mut BloomsliceIndex, name: (*const u8, usize), id_out: *mut u64,
    insert: impl FnOnce(&mut Writable<'_>, u64) -> Result<(), Failure>,
) -> BloomsliceStatus {
    let body = |mut target: Writable<'_>, names: &mut SetNames, name: &[u8]| {
        // Checked first, so that a bad `id_out` leaves the index unchanged.
        if !id_out.is_null() {
            check_ptr(id_out.cast_const(), "id_out")?;
        }
        if name.is_empty() {
            return Err(Failure::invalid("set name is empty"));
        }
        if names.id(name).is_some() {
            return Err(Failure {
                status: BloomsliceStatus::AlreadyExists,
                message: format!("set {:?} is already in the index", String::from_utf8_lossy(name)),
            });
        }
        let id = target.read().ids().last().map_or(0, |m| m + 1).max(names.next_free_id());
        insert(&mut target, id)?;
        if let Err(e) = names.insert(id, name) {
            // Keep the index unchanged on failure.
            let _ = target.remove_set(id);
            return Err(e.into());
        }
        if !id_out.is_null() {
            // SAFETY: checked above (non-null, aligned), valid for a write by
            // the caller's contract.
            unsafe { id_out.write(id) };
        }
        Ok(())
    };
    // SAFETY: forwarded caller contract.
    unsafe { changing_named(index, name, "add a set", body) }
}

/// The body of the `add_set` functions whose input is the caller's array of
/// 64-bit words (`what`, `len` of them at `ptr`): `insert` stores them under
/// the new set's id.
///
/// # Safety
///
/// As [`add_set_with`]; `ptr` must point to `len` aligned `u64`.
unsafe fn add_set_of_words(
    index: *mut BloomsliceIndex, name: (*const u8, usize), (ptr, len, what): (*const u64, usize, &str),
    id_out: *mut u64, insert: impl FnOnce(&mut Writable<'_>, u64, &[u64]) -> Result<(), Failure>,
) -> BloomsliceStatus {
    let insert = |target: &mut Writable<'_>, id| {
        // SAFETY: forwarded caller contract.
        let words = unsafe { slice(ptr, len, what) }?;
        insert(target, id, words)
    };
    // SAFETY: forwarded caller contract.
    unsafe { add_set_with(index, name, id_out, insert) }
}

/// Adds a new set called `name` (`name_len` bytes, not empty, unique) holding
/// `n_keys` byte keys: key `i` is `keys[i]`, `key_lens[i]` bytes (a key may be
/// empty). In an index of sets sized from the data, the set goes to the
/// part that holds its number of keys (a new part if none does); in a
/// level index, to the flat sets beside the levels until the index is
/// built again. On success `*id_out` (if not null) receives the set's id.
///
/// Errors: `BLOOMSLICE_STATUS_ALREADY_EXISTS` for a name in use,
/// `BLOOMSLICE_STATUS_INVALID_ARGUMENT` for bad pointers or an empty name,
/// `BLOOMSLICE_STATUS_UNSUPPORTED` on a manifest's shard files.
///
/// Thread safety: exclusive (changes the index).
///
/// # Safety
///
/// `index` must be a live handle used by no other call; `name` must point to
/// `name_len` bytes; `keys` and `key_lens` to `n_keys` elements each, every
/// `keys[i]` to `key_lens[i]` bytes; `id_out` null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_add_set(
    index: *mut BloomsliceIndex, name: *const u8, name_len: usize, keys: *const *const u8, key_lens: *const usize,
    n_keys: usize, id_out: *mut u64,
) -> BloomsliceStatus {
    let insert = |target: &mut Writable<'_>, id| {
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let hashes = unsafe { hashes_of(target.read(), (keys, key_lens, n_keys)) }?;
        target.insert_set(id, &hashes)
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { add_set_with(index, (name, name_len), id_out, insert) }
}

/// [`bloomslice_index_add_set`] with keys given as the caller's 64-bit
/// hashes (`hashes[i]`, `n` of them); query them with
/// [`bloomslice_query_hash`] or [`bloomslice_query_batch_hashes`].
///
/// Thread safety: exclusive (changes the index).
///
/// # Safety
///
/// As [`bloomslice_index_add_set`]; `hashes` must point to `n` aligned
/// `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_add_set_hashes(
    index: *mut BloomsliceIndex, name: *const u8, name_len: usize, hashes: *const u64, n: usize, id_out: *mut u64,
) -> BloomsliceStatus {
    let insert = |target: &mut Writable<'_>, id, hashes: &[u64]| {
        let hashes: Vec<KeyHash> = hashes.iter().map(|&hash| KeyHash::from_u64(hash)).collect();
        target.insert_set(id, &hashes)
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { add_set_of_words(index, (name, name_len), (hashes, n, "hashes"), id_out, insert) }
}

/// Adds a new set called `name` from a ready Bloom filter: `n_words`
/// little-endian-bit-order words (bit `i` of the filter is bit `i % 64` of
/// `words[i / 64]`), exactly `ceil(m / 64)` of them, with no bit set at or
/// beyond `m`. The filter must have been built with this index's `m`, `k`
/// and seed, so the index must be of one filter length. On success
/// `*id_out` (if not null) receives the set's id.
///
/// Errors: `BLOOMSLICE_STATUS_UNSUPPORTED` on an index of sets sized from
/// the data, a level index (each sizes a new set from its keys: add those
/// with [`bloomslice_index_add_set`]) or a manifest's shard files.
///
/// Thread safety: exclusive (changes the index).
///
/// # Safety
///
/// As [`bloomslice_index_add_set`]; `words` must point to `n_words` aligned
/// `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_add_filter(
    index: *mut BloomsliceIndex, name: *const u8, name_len: usize, words: *const u64, n_words: usize, id_out: *mut u64,
) -> BloomsliceStatus {
    let insert = |target: &mut Writable<'_>, id, words: &[u64]| target.insert_words(id, words);
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { add_set_of_words(index, (name, name_len), (words, n_words, "words"), id_out, insert) }
}

/// Adds `n_keys` byte keys to the set called `name`. In an index of sets
/// sized from the data, keys fill the set's last filter to its capacity;
/// past it the set gains a filter in a larger part (with capacities
/// doubling and rates halving, so the set's false-positive rate stays below
/// twice the index's). In an index of one filter length, the keys go to
/// the set's filter (its false-positive rate grows with its keys). In a
/// level index, a set of the levels keeps its filters there and gains one
/// beside them (it answers where either does, so its false-positive rate
/// is at most the sum of the two); a set added since the build grows as in
/// an index of sets sized from the data.
///
/// Errors: `BLOOMSLICE_STATUS_NOT_FOUND` when no set has this name,
/// `BLOOMSLICE_STATUS_UNSUPPORTED` on a manifest's shard files.
///
/// Thread safety: exclusive (changes the index).
///
/// # Safety
///
/// As [`bloomslice_index_add_set`] (without `id_out`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_add_keys(
    index: *mut BloomsliceIndex, name: *const u8, name_len: usize, keys: *const *const u8, key_lens: *const usize,
    n_keys: usize,
) -> BloomsliceStatus {
    let body = |mut target: Writable<'_>, names: &mut SetNames, name: &[u8]| {
        let id = id_of(names, name)?;
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let hashes = unsafe { hashes_of(target.read(), (keys, key_lens, n_keys)) }?;
        target.add_keys(id, &hashes)
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { changing_named(index, (name, name_len), "add keys", body) }
}

/// Removes the set called `name` (and all its filters; in a level index,
/// its filters in the levels no longer answer and are dropped by the next
/// build).
///
/// Errors: `BLOOMSLICE_STATUS_NOT_FOUND` when no set has this name,
/// `BLOOMSLICE_STATUS_UNSUPPORTED` on a manifest's shard files.
///
/// Thread safety: exclusive (changes the index).
///
/// # Safety
///
/// `index` must be a live handle used by no other call; `name` must point
/// to `name_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_remove_set(
    index: *mut BloomsliceIndex, name: *const u8, name_len: usize,
) -> BloomsliceStatus {
    let body = |mut target: Writable<'_>, names: &mut SetNames, name: &[u8]| {
        let id = id_of(names, name)?;
        target.remove_set(id)?;
        names.remove(id);
        Ok(())
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { changing_named(index, (name, name_len), "remove a set", body) }
}

/// Saves the index with its names to `path`, atomically: a temporary file
/// is written, synced and renamed over `path`, so a failure never leaves a
/// partial file and processes that mapped the old file keep reading it.
/// Sets sized from the data are saved as a collection file, an index of one
/// filter length as an index file, a level index as a level index file
/// (with the sets written since its build);
/// [`crate::bloomslice_index_load`] opens each as it was.
///
/// Errors: `BLOOMSLICE_STATUS_IO` when the file cannot be written,
/// `BLOOMSLICE_STATUS_UNSUPPORTED` on a manifest's shard files.
///
/// Thread safety: concurrent with other readers (queries may run meanwhile).
///
/// # Safety
///
/// `index` must be a live handle; `path` a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_save(index: *const BloomsliceIndex, path: *const c_char) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, |h| files::save(&path_arg(path)?, &h.engine, &h.names)) }
}

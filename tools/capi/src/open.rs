//! The functions that make a handle: built from sets, empty of either
//! writable layout, or opened from a file or a manifest.

use std::ffi::c_char;

use bloomslice::{BloomParams, Error, HashScheme, KeyHash, LayoutConfig, SetIndex, SetNames, SlicedIndex, Verify};

use crate::{
    BloomsliceIndex, BloomsliceStatus, Engine, Failure, KEYS, byte_strings, check_ptr, entry, files, path_arg, slice,
};
#[cfg(doc)]
use crate::{BloomsliceInfo, bloomslice_index_free, bloomslice_index_save};

/// Runs `make` as an entry point and boxes the handle it makes into
/// `*out`.
///
/// # Safety
///
/// `out` must be null or valid for a write of a pointer.
unsafe fn hand_out(
    out: *mut *mut BloomsliceIndex, make: impl FnOnce() -> Result<BloomsliceIndex, Failure>,
) -> BloomsliceStatus {
    entry(|| {
        check_ptr(out.cast_const(), "out")?;
        let handle = Box::into_raw(Box::new(make()?));
        // SAFETY: `out` checked above, valid for a write by the caller's
        // contract.
        unsafe { out.write(handle) };
        Ok(())
    })
}

fn verify_of(verify: bool) -> Verify {
    if verify { Verify::Full } else { Verify::Deferred }
}

/// Creates an empty index whose sets are each sized for their own keys at
/// false-positive rate `fp` (each set added goes to the part that holds
/// its number of keys, a new part if none does); byte keys are hashed with
/// `seed`. On success `*out` receives the handle.
///
/// Errors: `BLOOMSLICE_STATUS_INVALID_ARGUMENT` for an `fp` outside
/// `(0, 1)`.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `out` must be valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_new(fp: f64, seed: u64, out: *mut *mut BloomsliceIndex) -> BloomsliceStatus {
    let make = || {
        let sets = SetIndex::with_hashing(fp, HashScheme::default(), seed)?;
        Ok(BloomsliceIndex::new(Engine::Sets(sets), SetNames::new(), false))
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { hand_out(out, make) }
}

/// Builds an index of `n_sets` named sets at false-positive rate `fp`,
/// each sized from its own number of keys, in the parts the default layout
/// chooses for their sizes: the front door, for sets of any sizes. Set `i`
/// is called `names[i]` (`name_lens[i]` bytes, not empty, unique), gets id
/// `i`, and holds the byte keys `keys[j]` (`key_lens[j]` bytes) for `j`
/// from `set_ends[i - 1]` (0 for the first set) to `set_ends[i]`
/// (exclusive): `set_ends` has `n_sets` entries, non-decreasing, the last
/// the total number of keys. Byte keys are hashed with `seed`. On success
/// `*out` receives the handle.
///
/// Errors: `BLOOMSLICE_STATUS_INVALID_ARGUMENT` for bad pointers, an `fp`
/// outside `(0, 1)`, an empty name or `set_ends` out of order;
/// `BLOOMSLICE_STATUS_ALREADY_EXISTS` for a name given twice.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `names` and `name_lens` must point to `n_sets` elements, each
/// `names[i]` to `name_lens[i]` bytes; `set_ends` to `n_sets` elements;
/// `keys` and `key_lens` to `set_ends[n_sets - 1]` elements (none for no
/// sets), each `keys[j]` to `key_lens[j]` bytes; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_build(
    fp: f64, seed: u64, names: *const *const u8, name_lens: *const usize, n_sets: usize, keys: *const *const u8,
    key_lens: *const usize, set_ends: *const usize, out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    let make = || {
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let names = unsafe { byte_strings((names, name_lens, n_sets), ["names", "name_lens", "name"]) }?;
        // SAFETY: forwarded caller contract.
        let ends = unsafe { slice(set_ends, n_sets, "set_ends") }?;
        if let Some(i) = (1..ends.len()).find(|&i| ends[i] < ends[i - 1]) {
            return Err(Failure::invalid(format!("set_ends[{i}] = {} is below set_ends[{}]", ends[i], i - 1)));
        }
        let n_keys = ends.last().copied().unwrap_or(0);
        // SAFETY: forwarded caller contract.
        let keys = unsafe { byte_strings((keys, key_lens, n_keys), KEYS) }?;
        let mut set_names = SetNames::new();
        for (i, name) in names.iter().enumerate() {
            if name.is_empty() {
                return Err(Failure::invalid(format!("set name {i} is empty")));
            }
            set_names.insert(i as u64, name.to_vec())?;
        }
        let mut start = 0;
        let mut sets: Vec<(u64, Vec<KeyHash>)> = Vec::with_capacity(n_sets);
        for (i, &end) in ends.iter().enumerate() {
            sets.push((i as u64, keys[start..end].iter().map(|key| KeyHash::from_bytes(key, seed)).collect()));
            start = end;
        }
        let sets = SetIndex::build_with_hashing(&sets, fp, LayoutConfig::default(), HashScheme::default(), seed)?;
        Ok(BloomsliceIndex::new(Engine::Sets(sets), set_names, false))
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { hand_out(out, make) }
}

/// An empty index of one filter length with the parameters `params` makes,
/// hashing byte keys with `seed`, into `*out`.
///
/// # Safety
///
/// `out` must be valid for a write of a pointer.
unsafe fn new_sliced(
    out: *mut *mut BloomsliceIndex, seed: u64, params: impl FnOnce() -> Result<BloomParams, Error>,
) -> BloomsliceStatus {
    let make = || {
        let index = SlicedIndex::new(params()?.with_seed(seed));
        Ok(BloomsliceIndex::new(Engine::Sliced(index), SetNames::new(), false))
    };
    // SAFETY: forwarded caller contract.
    unsafe { hand_out(out, make) }
}

/// Creates an empty index of one filter length: every filter of `m` bits
/// and `k` hash functions; byte keys are hashed with `seed`. On success
/// `*out` receives the handle.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `out` must be valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_new_sliced(
    m: u64, k: u32, seed: u64, out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { new_sliced(out, seed, || BloomParams::new(m, k)) }
}

/// Creates an empty index of one filter length sized for `n_exp` keys per
/// set at false-positive rate `fp` (for example 10 000 and 0.01 give
/// m = 100 992, k = 7); byte keys are hashed with `seed`. On success `*out`
/// receives the handle.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `out` must be valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_new_sliced_for_capacity(
    n_exp: u64, fp: f64, seed: u64, out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { new_sliced(out, seed, || BloomParams::for_capacity(n_exp, fp)) }
}

/// Reads a file saved by [`bloomslice_index_save`] or the CLI into memory,
/// fully verified, as the layout it was saved from: a collection file as
/// sets sized from the data, an index file as an index of one filter
/// length, a level index file (`bloomslice build --levels`) as a level
/// index. The index can be changed and saved. On success `*out` receives
/// the handle.
///
/// Errors: `BLOOMSLICE_STATUS_IO` when the file cannot be read,
/// `BLOOMSLICE_STATUS_CORRUPT_FILE` when it is not a valid file of any
/// kind.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `path` must be a NUL-terminated string; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_load(
    path: *const c_char, out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    let make = || {
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let (engine, names) = files::load(&unsafe { path_arg(path) }?)?;
        Ok(BloomsliceIndex::new(engine, names, false))
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { hand_out(out, make) }
}

/// [`bloomslice_index_load`] with the file mapped and queried in place
/// (zero copy; opening costs only its tables). With `verify` false the row
/// checksums are not read (a flipped bit in the rows may change answers,
/// never crash); with `verify` true the whole file is checked first.
/// Changing a mapped index copies the shards it touches into memory; the
/// file is never written. A level index file is read out of the map whole
/// and fully verified, whatever `verify` says (its handle reports
/// `mapped` false in [`BloomsliceInfo`]).
///
/// Contract: the file must not be truncated or written in place while it is
/// mapped (until [`bloomslice_index_free`]); replacing it by rename, as
/// [`bloomslice_index_save`] does, is safe. Breaking this may change answers
/// or kill the process with `SIGBUS`.
///
/// Errors: as [`bloomslice_index_load`].
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `path` must be a NUL-terminated string; `out` valid for a write; the
/// mapping contract above must hold.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_open_mapped(
    path: *const c_char, verify: bool, out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    let make = || {
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let path = unsafe { path_arg(path) }?;
        // SAFETY: the mapping contract (no truncation or in-place write
        // while mapped) is this function's documented contract, which the
        // caller accepts; bloomslice's own writers replace files by rename.
        let (engine, names) = unsafe { files::map(&path, verify_of(verify)) }?;
        let mapped = !matches!(engine, Engine::Levels(_));
        Ok(BloomsliceIndex::new(engine, names, mapped))
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { hand_out(out, make) }
}

/// Opens the manifest `manifest` (a manifest file, or the directory that
/// holds `manifest.json`, as written by `bloomslice split`) and every shard
/// file it lists, as one read-only index answering as the unsplit index
/// would (the ids of the first file first). With `mapped` the files are
/// mapped and queried in place (opening costs the manifest and the files'
/// small tables), else read into memory, each fully verified and checked
/// against its entry (parameters, set ids and names). With `verify` true
/// every file's size and checksum is first compared with the manifest's
/// record (and mapped files are fully verified); with `verify` false and
/// `mapped`, neither the manifest's checksums nor the files' row checksums
/// are read (a flipped bit in the rows may change answers, never crash).
/// On success `*out` receives the handle.
///
/// Contract, with `mapped`: no shard file may be truncated or written in
/// place while it is mapped (until [`bloomslice_index_free`]); replacing
/// files by rename, as bloomslice's writers do, is safe. Breaking this may
/// change answers or kill the process with `SIGBUS`.
///
/// Errors: `BLOOMSLICE_STATUS_IO` when a file cannot be read,
/// `BLOOMSLICE_STATUS_CORRUPT_FILE` when the manifest or a file is invalid
/// or they disagree.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `manifest` must be a NUL-terminated string; `out` valid for a write;
/// the mapping contract above must hold.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_open_manifest(
    manifest: *const c_char, mapped: bool, verify: bool, out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    let make = || {
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let path = unsafe { path_arg(manifest) }?;
        // SAFETY: the mapping contract is this function's documented
        // contract, which the caller accepts.
        let sharded = unsafe { files::open_manifest(&path, mapped, verify_of(verify)) }?;
        Ok(BloomsliceIndex::new(Engine::Sharded(sharded), SetNames::new(), mapped))
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { hand_out(out, make) }
}

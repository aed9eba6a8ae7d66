//! Collections of sets of any sizes through the C ABI: a
//! [`BloomsliceCollection`] handle over `bloomslice::SetIndex`, whose
//! sets are each sized from their own keys and kept in size-classed parts,
//! built, changed, queried, batched and scored under the rules of the
//! crate docs.

use std::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use bloomslice::persist::{self, Loaded, Verify};
use bloomslice::score::{Scores, Threshold};
use bloomslice::{BatchResults, Error, HashScheme, KeyHash, LayoutConfig, SetIndex, SetNames};

use crate::{
    BatchOut, BloomsliceStatus, ChunkScratch, Failure, Queried, Scored, batch_of_hashes, batch_of_keys, byte_keys,
    bytes, check_ptr, copy_name, entry, fraction_of, id_of, path_arg, query_one, reading, reading_bytes, scored, slice,
    write_out,
};
#[cfg(doc)]
use crate::{
    bloomslice_index_set_id, bloomslice_index_set_name, bloomslice_query, bloomslice_query_batch,
    bloomslice_query_batch_hashes, bloomslice_query_threshold, bloomslice_score,
};

/// Named sets of keys of any sizes, each sized from its own keys at one
/// false-positive rate and kept in size-classed parts (each part a sliced
/// index with its own filter length): a skewed collection costs memory
/// for its sets' sizes, not for its largest set times the number of sets.
/// Opaque: create it with [`bloomslice_collection_new`],
/// [`bloomslice_collection_build`], [`bloomslice_collection_load`] or
/// [`bloomslice_collection_open_mapped`] and release it with
/// [`bloomslice_collection_free`].
pub struct BloomsliceCollection {
    pub(crate) collection: SetIndex,
    /// The seed byte keys are hashed with.
    pub(crate) seed: u64,
    pub(crate) names: SetNames,
    /// Opened from a mapped file.
    pub(crate) mapped: bool,
}

impl Queried for BloomsliceCollection {
    fn seed(&self) -> u64 {
        self.seed
    }

    fn names(&self) -> &SetNames {
        &self.names
    }

    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        self.collection.query_hash_into(hash, out);
    }

    fn query_chunk<'s>(&self, hashes: &[KeyHash], scratch: &'s mut ChunkScratch) -> (&'s [u64], &'s [usize]) {
        self.collection.query_batch_hashes(hashes, &mut scratch.results);
        BatchResults::flat(&scratch.results)
    }
}

impl Scored for BloomsliceCollection {
    fn score_into(&self, hashes: &[KeyHash], scores: &mut Scores) {
        self.collection.score_into(hashes, scores);
    }

    fn query_threshold_into(&self, hashes: &[KeyHash], t: Threshold, _scratch: &mut Scores, out: &mut Vec<(u64, u32)>) {
        *out = self.collection.query_threshold(hashes, t);
    }
}

/// Facts about a collection, filled by [`bloomslice_collection_info`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BloomsliceCollectionInfo {
    /// The target false-positive rate of a set in its first filter.
    pub fp: f64,
    /// Hash functions per key (every part has the same).
    pub k: u32,
    /// Hash seed of byte keys.
    pub seed: u64,
    /// Number of sets.
    pub sets: u64,
    /// Number of parts that hold at least one filter.
    pub parts: u64,
    /// Sets that outgrew their first filter and hold filters in several
    /// parts.
    pub grown_sets: u64,
    /// Bytes of memory the collection holds: rows (mapped rows included)
    /// and maps.
    pub memory_bytes: u64,
    /// Whether the collection was opened from a mapped file.
    pub mapped: bool,
}

/// Boxes a new handle into `*out`.
///
/// # Safety
///
/// `out` must be checked (non-null, aligned) already.
pub(crate) unsafe fn hand_out_collection(out: *mut *mut BloomsliceCollection, handle: BloomsliceCollection) {
    let handle = Box::into_raw(Box::new(handle));
    // SAFETY: `out` was checked by the caller and is valid for a write.
    unsafe { out.write(handle) };
}

/// Creates an empty collection whose sets are sized for their own keys at
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
pub unsafe extern "C" fn bloomslice_collection_new(
    fp: f64,
    seed: u64,
    out: *mut *mut BloomsliceCollection,
) -> BloomsliceStatus {
    entry(|| {
        check_ptr(out.cast_const(), "out")?;
        let collection = SetIndex::with_hashing(fp, HashScheme::default(), seed)?;
        let handle = BloomsliceCollection { collection, seed, names: SetNames::new(), mapped: false };
        // SAFETY: `out` checked above.
        unsafe { hand_out_collection(out, handle) };
        Ok(())
    })
}

/// Builds a collection of `n_sets` named sets at false-positive rate `fp`,
/// each sized from its own number of keys, in the parts the default layout
/// chooses for their sizes. Set `i` is called `names[i]` (`name_lens[i]`
/// bytes, not empty, unique), gets id `i`, and holds the byte keys
/// `keys[j]` (`key_lens[j]` bytes) for `j` from `set_ends[i - 1]` (0 for
/// the first set) to `set_ends[i]` (exclusive): `set_ends` has `n_sets`
/// entries, non-decreasing, the last the total number of keys. Byte keys
/// are hashed with `seed`. On success `*out` receives the handle.
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
pub unsafe extern "C" fn bloomslice_collection_build(
    fp: f64,
    seed: u64,
    names: *const *const u8,
    name_lens: *const usize,
    n_sets: usize,
    keys: *const *const u8,
    key_lens: *const usize,
    set_ends: *const usize,
    out: *mut *mut BloomsliceCollection,
) -> BloomsliceStatus {
    entry(|| {
        check_ptr(out.cast_const(), "out")?;
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let names = unsafe { byte_keys((names, name_lens, n_sets)) }
            .map_err(|e| Failure::invalid(e.message.replacen("key", "name", 1)))?;
        // SAFETY: forwarded caller contract.
        let ends = unsafe { slice(set_ends, n_sets, "set_ends") }?;
        if let Some(i) = (1..ends.len()).find(|&i| ends[i] < ends[i - 1]) {
            return Err(Failure::invalid(format!("set_ends[{i}] = {} is below set_ends[{}]", ends[i], i - 1)));
        }
        let n_keys = ends.last().copied().unwrap_or(0);
        // SAFETY: forwarded caller contract.
        let keys = unsafe { byte_keys((keys, key_lens, n_keys)) }?;
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
        let collection = SetIndex::build_with_hashing(&sets, fp, LayoutConfig::default(), HashScheme::default(), seed)?;
        let handle = BloomsliceCollection { collection, seed, names: set_names, mapped: false };
        // SAFETY: `out` checked above.
        unsafe { hand_out_collection(out, handle) };
        Ok(())
    })
}

/// The body of the functions that open a file: the collection `open`
/// reads from `path` into `*out`.
///
/// # Safety
///
/// `path` must be a NUL-terminated string; `out` valid for a write.
unsafe fn open_file(
    path: *const c_char,
    out: *mut *mut BloomsliceCollection,
    mapped: bool,
    open: impl FnOnce(PathBuf) -> Result<Loaded, Error>,
) -> BloomsliceStatus {
    entry(|| {
        // SAFETY: forwarded caller contract.
        let path = unsafe { path_arg(path) }?;
        check_ptr(out.cast_const(), "out")?;
        let Loaded { index: collection, names, .. } = open(path)?;
        // The parts' seed (a collection of no parts holds no set; its keys'
        // seed matters only once a set is added, and 0 is the default).
        let seed = collection.parts().next().map_or(0, |part| part.params().seed());
        // SAFETY: `out` checked above.
        unsafe { hand_out_collection(out, BloomsliceCollection { collection, seed, names, mapped }) };
        Ok(())
    })
}

/// Reads a collection file, or an index file of one filter length (as a
/// collection of one part, answering as the index does), into memory,
/// fully verified. On success `*out` receives the handle.
///
/// Errors: `BLOOMSLICE_STATUS_IO` when the file cannot be read,
/// `BLOOMSLICE_STATUS_CORRUPT_FILE` when it is neither a valid collection
/// file nor a valid index file.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `path` must be a NUL-terminated string; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_load(
    path: *const c_char,
    out: *mut *mut BloomsliceCollection,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { open_file(path, out, false, persist::load) }
}

/// Maps a collection file, or an index file of one filter length (as a
/// collection of one part), and queries it in place (opening costs only
/// its tables). With `verify` false the row checksums are not read (a
/// flipped bit in the rows may change answers, never crash); with
/// `verify` true the whole file is checked first. Changing a mapped
/// collection copies the shards it touches into memory; the file is never
/// written.
///
/// Contract: the file must not be truncated or written in place while it
/// is mapped (until [`bloomslice_collection_free`]); replacing it by
/// rename, as [`bloomslice_collection_save`] does, is safe. Breaking this
/// may change answers or kill the process with `SIGBUS`.
///
/// Errors: as [`bloomslice_collection_load`].
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `path` must be a NUL-terminated string; `out` valid for a write; the
/// mapping contract above must hold.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_open_mapped(
    path: *const c_char,
    verify: bool,
    out: *mut *mut BloomsliceCollection,
) -> BloomsliceStatus {
    let verify = if verify { Verify::Full } else { Verify::Deferred };
    let open = |path: PathBuf| {
        // SAFETY: the mapping contract of `persist::open_mmap` (no
        // truncation or in-place write while mapped) is this function's
        // documented contract, which the caller accepts; bloomslice's own
        // writers replace files by rename.
        unsafe { persist::open_mmap(path, verify) }
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { open_file(path, out, true, open) }
}

/// Saves the collection with its names to `path` as a collection file,
/// atomically: a temporary file is written, synced and renamed over
/// `path`, so a failure never leaves a partial file and processes that
/// mapped the old file keep reading it.
///
/// Thread safety: concurrent with other readers (queries may run
/// meanwhile).
///
/// # Safety
///
/// `collection` must be a live handle; `path` a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_save(
    collection: *const BloomsliceCollection,
    path: *const c_char,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(collection, |h| Ok(persist::save(&path_arg(path)?, &h.collection, &h.names)?)) }
}

/// Releases a collection handle. A null handle is ignored.
///
/// Thread safety: exclusive: no other call may use this handle at the same
/// time or after.
///
/// # Safety
///
/// `collection` must be null or a live handle from this library, freed
/// once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_free(collection: *mut BloomsliceCollection) {
    if collection.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a live handle made by `Box::into_raw` in
        // `hand_out_collection`, freed once (caller's contract).
        drop(unsafe { Box::from_raw(collection) });
    }));
}

/// Fills `*out` with the collection's rate, parameters and size.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `collection` must be a live handle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_info(
    collection: *const BloomsliceCollection,
    out: *mut BloomsliceCollectionInfo,
) -> BloomsliceStatus {
    let body = |h: &BloomsliceCollection| {
        let c = &h.collection;
        let info = BloomsliceCollectionInfo {
            fp: c.p(),
            k: c.k(),
            seed: h.seed,
            sets: c.len() as u64,
            parts: c.parts().filter(|part| !part.is_empty()).count() as u64,
            grown_sets: c.grown_sets() as u64,
            memory_bytes: c.memory_bytes() as u64,
            mapped: h.mapped,
        };
        // SAFETY: forwarded caller contract.
        unsafe { write_out(out, info, "out") }
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(collection, body) }
}

/// Runs `body` as an entry point that changes the collection behind a
/// handle, with the set name `name` (`name_len` bytes, not empty) and the
/// hashes of the byte keys `keys` checked.
///
/// # Safety
///
/// `collection` must be a live handle that no other call uses at the same
/// time; `name` must point to `name_len` bytes; `keys` and `key_lens` to
/// `n_keys` elements, each `keys[i]` to `key_lens[i]` bytes.
unsafe fn changing(
    collection: *mut BloomsliceCollection,
    (name, name_len): (*const u8, usize),
    keys: (*const *const u8, *const usize, usize),
    body: impl FnOnce(&mut BloomsliceCollection, &[u8], &[KeyHash]) -> Result<(), Failure>,
) -> BloomsliceStatus {
    entry(|| {
        check_ptr(collection.cast_const(), "collection")?;
        // SAFETY: a live handle used by this call alone (caller's contract).
        let h = unsafe { &mut *collection };
        // SAFETY: forwarded caller contract.
        let name = unsafe { bytes(name, name_len, "name") }?;
        if name.is_empty() {
            return Err(Failure::invalid("set name is empty"));
        }
        // SAFETY: forwarded caller contract.
        let keys = unsafe { byte_keys(keys) }?;
        let hashes: Vec<KeyHash> = keys.iter().map(|key| KeyHash::from_bytes(key, h.seed)).collect();
        body(h, name, &hashes)
    })
}

/// Adds a new set called `name` (`name_len` bytes, not empty, unique)
/// holding `n_keys` byte keys (`keys[i]`, `key_lens[i]` bytes), in the part
/// that holds its number of keys (a new part if none does). On success
/// `*id_out` (if not null) receives the set's id.
///
/// Errors: `BLOOMSLICE_STATUS_ALREADY_EXISTS` for a name in use,
/// `BLOOMSLICE_STATUS_INVALID_ARGUMENT` for bad pointers or an empty name.
///
/// Thread safety: exclusive (changes the collection).
///
/// # Safety
///
/// `collection` must be a live handle used by no other call; `name` must
/// point to `name_len` bytes; `keys` and `key_lens` to `n_keys` elements,
/// every `keys[i]` to `key_lens[i]` bytes; `id_out` null or valid for a
/// write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_add_set(
    collection: *mut BloomsliceCollection,
    name: *const u8,
    name_len: usize,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
    id_out: *mut u64,
) -> BloomsliceStatus {
    let body = |h: &mut BloomsliceCollection, name: &[u8], hashes: &[KeyHash]| {
        if h.names.id(name).is_some() {
            return Err(Failure {
                status: BloomsliceStatus::AlreadyExists,
                message: format!("set {:?} is already in the collection", String::from_utf8_lossy(name)),
            });
        }
        let id = h.collection.ids().max().map_or(0, |m| m + 1).max(h.names.next_free_id());
        h.collection.insert_set(id, hashes)?;
        if let Err(e) = h.names.insert(id, name) {
            // Keep the collection unchanged on failure.
            let _ = h.collection.remove_set(id);
            return Err(e.into());
        }
        if !id_out.is_null() {
            // SAFETY: non-null, valid by the caller's contract.
            unsafe { write_out(id_out, id, "id_out") }?;
        }
        Ok(())
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { changing(collection, (name, name_len), (keys, key_lens, n_keys), body) }
}

/// Adds `n_keys` byte keys to the set called `name`. Keys fill the set's
/// last filter to its capacity; past it the set gains a filter in a larger
/// part (with capacities doubling and rates halving, so the set's
/// false-positive rate stays below twice the collection's).
///
/// Errors: `BLOOMSLICE_STATUS_NOT_FOUND` when no set has this name.
///
/// Thread safety: exclusive (changes the collection).
///
/// # Safety
///
/// As [`bloomslice_collection_add_set`] (without `id_out`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_add_keys(
    collection: *mut BloomsliceCollection,
    name: *const u8,
    name_len: usize,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
) -> BloomsliceStatus {
    let body = |h: &mut BloomsliceCollection, name: &[u8], hashes: &[KeyHash]| {
        let id = id_of(h, name)?;
        Ok(h.collection.add_keys(id, hashes)?)
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { changing(collection, (name, name_len), (keys, key_lens, n_keys), body) }
}

/// Removes the set called `name` and all its filters.
///
/// Errors: `BLOOMSLICE_STATUS_NOT_FOUND` when no set has this name.
///
/// Thread safety: exclusive (changes the collection).
///
/// # Safety
///
/// `collection` must be a live handle used by no other call; `name` must
/// point to `name_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_remove_set(
    collection: *mut BloomsliceCollection,
    name: *const u8,
    name_len: usize,
) -> BloomsliceStatus {
    let body = |h: &mut BloomsliceCollection, name: &[u8], _: &[KeyHash]| {
        let id = id_of(h, name)?;
        h.collection.remove_set(id)?;
        h.names.remove(id);
        Ok(())
    };
    // SAFETY: forwarded caller contract (no keys are read).
    unsafe { changing(collection, (name, name_len), (std::ptr::null(), std::ptr::null(), 0), body) }
}

/// [`bloomslice_index_set_id`] for a collection: the id of the set called
/// `name` into `*id_out`.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `collection` must be a live handle; `name` must point to `name_len`
/// bytes; `id_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_set_id(
    collection: *const BloomsliceCollection,
    name: *const u8,
    name_len: usize,
    id_out: *mut u64,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading_bytes(collection, (name, name_len, "name"), |h, name| write_out(id_out, id_of(h, name)?, "id_out"))
    }
}

/// [`bloomslice_index_set_name`] for a collection: the name of set `id`
/// into `buf` (`cap` bytes) and its length into `*len_out`.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `collection` must be a live handle; `buf` null (with `cap` 0) or valid
/// for `cap` bytes; `len_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_set_name(
    collection: *const BloomsliceCollection,
    id: u64,
    buf: *mut u8,
    cap: usize,
    len_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(collection, |h| copy_name(h, id, buf, cap, len_out)) }
}

/// The 64-bit hash the collection gives the byte key `key` (seeded
/// xxh3-64, the same for every part), for
/// [`bloomslice_collection_query_batch_hashes`].
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `collection` must be a live handle; `key` must point to `key_len`
/// bytes; `hash_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_hash_key(
    collection: *const BloomsliceCollection,
    key: *const u8,
    key_len: usize,
    hash_out: *mut u64,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading_bytes(collection, (key, key_len, "key"), |h, key| {
            write_out(hash_out, KeyHash::from_bytes(key, h.seed).h1, "hash_out")
        })
    }
}

/// [`bloomslice_query`] for a collection: the ids of the sets that may
/// contain the byte key `key`, each once, into `ids_out` (room for `cap`),
/// their number into `*n_out`; `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL` when
/// more than `cap` match (room for every set is always enough).
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `collection` must be a live handle; `key` must point to `key_len`
/// bytes; `ids_out` null (with `cap` 0) or valid for `cap` writes; `n_out`
/// valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_query(
    collection: *const BloomsliceCollection,
    key: *const u8,
    key_len: usize,
    ids_out: *mut u64,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading_bytes(collection, (key, key_len, "key"), |h, key| {
            query_one(h, KeyHash::from_bytes(key, h.seed), ids_out, cap, n_out)
        })
    }
}

/// [`bloomslice_query_batch`] for a collection: the byte keys `keys[i]`
/// (`key_lens[i]` bytes) answered in the CSR layout, key `i`'s ids (each
/// once) in `ids_out[offsets_out[i] .. offsets_out[i + 1]]`, with the same
/// `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL` protocol.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `collection` must be a live handle; the other arguments as for
/// [`bloomslice_query_batch`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_query_batch(
    collection: *const BloomsliceCollection,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
    ids_out: *mut u64,
    ids_cap: usize,
    offsets_out: *mut usize,
    total_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading(collection, |h| {
            let keys = byte_keys((keys, key_lens, n_keys))?;
            batch_of_keys(h, &keys, BatchOut::new(n_keys, ids_out, ids_cap, offsets_out, total_out)?)
        })
    }
}

/// [`bloomslice_query_batch_hashes`] for a collection: keys given as the
/// caller's 64-bit hashes (`hashes[i]`, `n` of them, as
/// [`bloomslice_collection_hash_key`] gives them).
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// As [`bloomslice_collection_query_batch`]; `hashes` must point to `n`
/// aligned `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_query_batch_hashes(
    collection: *const BloomsliceCollection,
    hashes: *const u64,
    n: usize,
    ids_out: *mut u64,
    ids_cap: usize,
    offsets_out: *mut usize,
    total_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading(collection, |h| {
            let hashes = slice(hashes, n, "hashes")?;
            batch_of_hashes(h, hashes, BatchOut::new(n, ids_out, ids_cap, offsets_out, total_out)?)
        })
    }
}

/// [`bloomslice_score`] for a collection: for every set, how many of the
/// `n_keys` byte keys the union of its filters may contain (a key given
/// twice counts twice), ids and counts of the sets with a count above 0 by
/// ascending id, with the same buffer protocol.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `collection` must be a live handle; the other arguments as for
/// [`bloomslice_score`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_score(
    collection: *const BloomsliceCollection,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
    ids_out: *mut u64,
    counts_out: *mut u32,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(collection, |h| scored(h, (keys, key_lens, n_keys), (ids_out, counts_out, cap, n_out), None)) }
}

/// [`bloomslice_query_threshold`] for a collection: the sets whose count
/// (as [`bloomslice_collection_score`] counts) reaches `fraction` of the
/// `n_keys` byte keys, by ascending id; each part is scored and pruned on
/// its own.
///
/// Errors: `BLOOMSLICE_STATUS_INVALID_ARGUMENT` for a `fraction` that is
/// NaN or outside `[0, 1]`.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// As [`bloomslice_collection_score`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_collection_query_threshold(
    collection: *const BloomsliceCollection,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
    fraction: f64,
    ids_out: *mut u64,
    counts_out: *mut u32,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    let body = |h: &BloomsliceCollection| {
        let threshold = fraction_of(fraction)?;
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        unsafe { scored(h, (keys, key_lens, n_keys), (ids_out, counts_out, cap, n_out), Some(threshold)) }
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(collection, body) }
}

#[cfg(test)]
mod tests {
    use std::ptr;

    use super::*;
    use crate::tests::last_error;

    /// Sets of skewed sizes: set `i` holds `sizes[i]` keys `"{i}-{j}"`.
    fn skewed(sizes: &[usize]) -> Vec<Vec<Vec<u8>>> {
        sizes.iter().enumerate().map(|(i, &n)| (0..n).map(|j| format!("{i}-{j}").into_bytes()).collect()).collect()
    }

    fn build(sets: &[Vec<Vec<u8>>], fp: f64) -> *mut BloomsliceCollection {
        let names: Vec<Vec<u8>> = (0..sets.len()).map(|i| format!("set-{i}").into_bytes()).collect();
        let name_ptrs: Vec<*const u8> = names.iter().map(|n| n.as_ptr()).collect();
        let name_lens: Vec<usize> = names.iter().map(Vec::len).collect();
        let keys: Vec<&Vec<u8>> = sets.iter().flatten().collect();
        let key_ptrs: Vec<*const u8> = keys.iter().map(|k| k.as_ptr()).collect();
        let key_lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
        let ends: Vec<usize> = sets.iter().scan(0, |end, set| Some(*end + set.len()).inspect(|&e| *end = e)).collect();
        let mut h = ptr::null_mut();
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_collection_build(
                fp,
                5,
                name_ptrs.as_ptr(),
                name_lens.as_ptr(),
                sets.len(),
                key_ptrs.as_ptr(),
                key_lens.as_ptr(),
                ends.as_ptr(),
                &mut h,
            )
        };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        h
    }

    fn query(h: *const BloomsliceCollection, key: &[u8]) -> Vec<u64> {
        let mut ids = vec![0u64; 64];
        let mut n = 0;
        // SAFETY: live buffers of the stated lengths.
        let st =
            unsafe { bloomslice_collection_query(h, key.as_ptr(), key.len(), ids.as_mut_ptr(), ids.len(), &mut n) };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        ids.truncate(n);
        ids
    }

    /// Scores (`fraction` `None`) or thresholds `keys` through the C ABI.
    fn score(h: *const BloomsliceCollection, keys: &[Vec<u8>], fraction: Option<f64>) -> Vec<(u64, u32)> {
        let ptrs: Vec<*const u8> = keys.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = keys.iter().map(Vec::len).collect();
        let (mut ids, mut counts, mut n) = (vec![0u64; 64], vec![0u32; 64], 0);
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            match fraction {
                None => bloomslice_collection_score(
                    h,
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    keys.len(),
                    ids.as_mut_ptr(),
                    counts.as_mut_ptr(),
                    64,
                    &mut n,
                ),
                Some(f) => bloomslice_collection_query_threshold(
                    h,
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    keys.len(),
                    f,
                    ids.as_mut_ptr(),
                    counts.as_mut_ptr(),
                    64,
                    &mut n,
                ),
            }
        };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        ids[..n].iter().copied().zip(counts[..n].iter().copied()).collect()
    }

    #[test]
    fn a_skewed_collection_answers_as_the_library_with_no_false_negatives() {
        let sizes = [3, 5, 8, 10, 12, 20, 40, 100, 400, 3000];
        let sets = skewed(&sizes);
        let h = build(&sets, 0.01);
        let mut info = BloomsliceCollectionInfo::default();
        // SAFETY: live handle, valid out pointer.
        assert_eq!(unsafe { bloomslice_collection_info(h, &mut info) }, BloomsliceStatus::Ok);
        assert_eq!((info.sets, info.k, info.seed, info.fp, info.mapped), (10, 7, 5, 0.01, false));
        assert!(info.parts >= 2, "{info:?}");
        // The library's collection of the same sets, hashed alike.
        let lib_sets: Vec<(u64, Vec<KeyHash>)> = sets
            .iter()
            .enumerate()
            .map(|(i, keys)| (i as u64, keys.iter().map(|k| KeyHash::from_bytes(k, 5)).collect()))
            .collect();
        let lib =
            SetIndex::build_with_hashing(&lib_sets, 0.01, LayoutConfig::default(), HashScheme::default(), 5).unwrap();
        for (i, keys) in sets.iter().enumerate() {
            for key in keys {
                assert!(query(h, key).contains(&(i as u64)), "set {i} lost {key:?}");
            }
        }
        // Batches of byte keys and of hashes answer as single queries.
        let probe: Vec<Vec<u8>> = sets
            .iter()
            .flat_map(|s| s.iter().take(7).cloned())
            .chain((0..500).map(|j| format!("absent-{j}").into_bytes()))
            .collect();
        let ptrs: Vec<*const u8> = probe.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = probe.iter().map(Vec::len).collect();
        let mut ids = vec![0u64; 4 * probe.len()];
        let mut offsets = vec![0usize; probe.len() + 1];
        let mut total = 0;
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_collection_query_batch(
                h,
                ptrs.as_ptr(),
                lens.as_ptr(),
                probe.len(),
                ids.as_mut_ptr(),
                ids.len(),
                offsets.as_mut_ptr(),
                &mut total,
            )
        };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        let hashes: Vec<u64> = probe
            .iter()
            .map(|k| {
                let mut x = 0;
                // SAFETY: live buffers.
                let st = unsafe { bloomslice_collection_hash_key(h, k.as_ptr(), k.len(), &mut x) };
                assert_eq!(st, BloomsliceStatus::Ok);
                x
            })
            .collect();
        let mut ids2 = vec![0u64; 4 * probe.len()];
        let mut offsets2 = vec![0usize; probe.len() + 1];
        let mut total2 = 0;
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_collection_query_batch_hashes(
                h,
                hashes.as_ptr(),
                hashes.len(),
                ids2.as_mut_ptr(),
                ids2.len(),
                offsets2.as_mut_ptr(),
                &mut total2,
            )
        };
        assert_eq!(st, BloomsliceStatus::Ok);
        assert_eq!((total, &offsets, &ids[..total]), (total2, &offsets2, &ids2[..total2]));
        for (i, key) in probe.iter().enumerate() {
            assert_eq!(&ids[offsets[i]..offsets[i + 1]], query(h, key).as_slice(), "key {i}");
            assert_eq!(query(h, key), lib.query(key.as_slice()), "key {i}");
        }
        // Scores and thresholds are the library's.
        let read: Vec<Vec<u8>> = sets[8][..200].iter().cloned().chain(sets[2].iter().cloned()).collect();
        let hashed: Vec<KeyHash> = read.iter().map(|k| KeyHash::from_bytes(k, 5)).collect();
        let mut scores = Scores::new();
        lib.score_into(&hashed, &mut scores);
        assert_eq!(score(h, &read, None), scores.iter().collect::<Vec<_>>());
        let want = lib.query_threshold(&hashed, Threshold::fraction(0.9).unwrap());
        let got = score(h, &read, Some(0.9));
        assert_eq!(got, want);
        assert!(got.iter().any(|&(id, c)| id == 8 && c >= 200), "{got:?}");
        // SAFETY: a live handle, freed once.
        unsafe { bloomslice_collection_free(h) };
    }

    #[test]
    fn sets_are_added_grown_and_removed() {
        let mut h = ptr::null_mut();
        // SAFETY: a valid out pointer.
        assert_eq!(unsafe { bloomslice_collection_new(0.01, 0, &mut h) }, BloomsliceStatus::Ok);
        let add = |name: &str, keys: &[Vec<u8>]| {
            let ptrs: Vec<*const u8> = keys.iter().map(|k| k.as_ptr()).collect();
            let lens: Vec<usize> = keys.iter().map(Vec::len).collect();
            let mut id = u64::MAX;
            // SAFETY: live buffers of the stated lengths.
            let st = unsafe {
                bloomslice_collection_add_set(
                    h,
                    name.as_ptr(),
                    name.len(),
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    keys.len(),
                    &mut id,
                )
            };
            (st, id)
        };
        let small = skewed(&[10])[0].clone();
        let (st, a) = add("a", &small);
        assert_eq!(st, BloomsliceStatus::Ok);
        assert_eq!(add("a", &small).0, BloomsliceStatus::AlreadyExists);
        assert_eq!(add("", &small).0, BloomsliceStatus::InvalidArgument);
        let (_, b) = add("b", &skewed(&[0, 2000])[1]);
        assert_ne!(a, b);
        // Growing "a" far past its capacity keeps every key.
        let more: Vec<Vec<u8>> = (0..500).map(|j| format!("more-{j}").into_bytes()).collect();
        let ptrs: Vec<*const u8> = more.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = more.iter().map(Vec::len).collect();
        // SAFETY: live buffers of the stated lengths.
        let st =
            unsafe { bloomslice_collection_add_keys(h, b"a".as_ptr(), 1, ptrs.as_ptr(), lens.as_ptr(), more.len()) };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        // SAFETY: as above.
        let st = unsafe { bloomslice_collection_add_keys(h, b"zz".as_ptr(), 2, ptrs.as_ptr(), lens.as_ptr(), 1) };
        assert_eq!(st, BloomsliceStatus::NotFound);
        let mut info = BloomsliceCollectionInfo::default();
        // SAFETY: live handle, valid out pointer.
        assert_eq!(unsafe { bloomslice_collection_info(h, &mut info) }, BloomsliceStatus::Ok);
        assert_eq!((info.sets, info.grown_sets), (2, 1));
        for key in small.iter().chain(&more) {
            assert!(query(h, key).contains(&a), "{key:?}");
        }
        // A grown set is reported once, and scored once per key.
        assert_eq!(query(h, &more[3]).iter().filter(|&&id| id == a).count(), 1);
        let counts = score(h, &more[..100], Some(1.0));
        assert!(counts.contains(&(a, 100)), "{counts:?}");
        let mut name = [0u8; 8];
        let mut len = 0;
        // SAFETY: live buffers.
        unsafe {
            assert_eq!(bloomslice_collection_set_name(h, b, name.as_mut_ptr(), 8, &mut len), BloomsliceStatus::Ok);
            assert_eq!(&name[..len], b"b");
            let mut id = 0;
            assert_eq!(bloomslice_collection_set_id(h, b"a".as_ptr(), 1, &mut id), BloomsliceStatus::Ok);
            assert_eq!(id, a);
            assert_eq!(bloomslice_collection_remove_set(h, b"a".as_ptr(), 1), BloomsliceStatus::Ok);
            assert_eq!(bloomslice_collection_remove_set(h, b"a".as_ptr(), 1), BloomsliceStatus::NotFound);
        }
        assert!(!query(h, &small[0]).contains(&a));
        // SAFETY: a live handle, freed once.
        unsafe { bloomslice_collection_free(h) };
    }

    #[test]
    fn collection_and_index_files_load_and_map() {
        use std::ffi::CString;
        let dir = tempfile::tempdir().unwrap();
        let sets = skewed(&[2, 30, 700, 4000]);
        let h = build(&sets, 0.01);
        let more: Vec<Vec<u8>> = (0..900).map(|j| format!("more-{j}").into_bytes()).collect();
        let ptrs: Vec<*const u8> = more.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = more.iter().map(Vec::len).collect();
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe { bloomslice_collection_add_keys(h, b"set-0".as_ptr(), 5, ptrs.as_ptr(), lens.as_ptr(), 900) };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        let path = CString::new(dir.path().join("c.bsc").to_str().unwrap()).unwrap();
        let (mut loaded, mut mapped) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: live handles, NUL-terminated paths, valid out pointers.
        unsafe {
            assert_eq!(bloomslice_collection_save(h, path.as_ptr()), BloomsliceStatus::Ok, "{}", last_error());
            assert_eq!(bloomslice_collection_load(path.as_ptr(), &mut loaded), BloomsliceStatus::Ok);
            assert_eq!(bloomslice_collection_open_mapped(path.as_ptr(), true, &mut mapped), BloomsliceStatus::Ok);
        }
        let mut info = BloomsliceCollectionInfo::default();
        // SAFETY: live handle, valid out pointer.
        assert_eq!(unsafe { bloomslice_collection_info(mapped, &mut info) }, BloomsliceStatus::Ok);
        assert_eq!((info.sets, info.grown_sets, info.seed, info.mapped), (4, 1, 5, true));
        let probe: Vec<Vec<u8>> =
            sets.iter().flatten().step_by(3).chain(&more).cloned().chain([b"absent".to_vec()]).collect();
        for key in &probe {
            assert_eq!(query(loaded, key), query(h, key));
            assert_eq!(query(mapped, key), query(h, key));
        }
        assert_eq!(score(mapped, &more, Some(1.0)), score(h, &more, Some(1.0)));

        // An index file of one filter length opens as a one-part collection.
        let index = crate::tests::new_index();
        let keys: Vec<Vec<u8>> = (0..50).map(|j| format!("i-{j}").into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let id = crate::tests::add(index, "only", &refs);
        let v1 = CString::new(dir.path().join("v1.bsi").to_str().unwrap()).unwrap();
        let mut old = ptr::null_mut();
        // SAFETY: as above.
        unsafe {
            assert_eq!(crate::bloomslice_index_save(index, v1.as_ptr()), BloomsliceStatus::Ok);
            assert_eq!(bloomslice_collection_open_mapped(v1.as_ptr(), false, &mut old), BloomsliceStatus::Ok);
            assert_eq!(bloomslice_collection_info(old, &mut info), BloomsliceStatus::Ok);
        }
        assert_eq!((info.sets, info.parts, info.seed), (1, 1, 3));
        for key in keys.iter().chain(&probe) {
            assert_eq!(query(old, key), crate::tests::query(index, key));
        }
        assert_eq!(score(old, &keys, Some(1.0)), vec![(id, 50)]);

        let bad = dir.path().join("bad.bsc");
        std::fs::write(&bad, vec![7u8; 300]).unwrap();
        let bad = CString::new(bad.to_str().unwrap()).unwrap();
        let mut none = ptr::null_mut();
        // SAFETY: as above.
        unsafe {
            assert_eq!(bloomslice_collection_load(bad.as_ptr(), &mut none), BloomsliceStatus::CorruptFile);
            assert_eq!(
                bloomslice_collection_open_mapped(bad.as_ptr(), false, &mut none),
                BloomsliceStatus::CorruptFile
            );
            assert_eq!(bloomslice_collection_load(c"/nonexistent/x.bsc".as_ptr(), &mut none), BloomsliceStatus::Io);
            assert!(none.is_null());
            for handle in [h, loaded, mapped, old] {
                bloomslice_collection_free(handle);
            }
            crate::bloomslice_index_free(index);
        }
    }

    #[test]
    fn bad_arguments_are_errors_not_crashes() {
        let mut out = ptr::null_mut();
        let name = b"n";
        let names = [name.as_ptr(), name.as_ptr()];
        let lens = [1usize, 1];
        // SAFETY: every pointer is null, valid, or describes a live buffer;
        // the functions must reject the bad arguments without reading them.
        unsafe {
            assert_eq!(bloomslice_collection_new(1.5, 0, &mut out), BloomsliceStatus::InvalidArgument);
            assert_eq!(bloomslice_collection_new(0.01, 0, ptr::null_mut()), BloomsliceStatus::InvalidArgument);
            let ends = [0usize, 0];
            let st = bloomslice_collection_build(
                0.01,
                0,
                names.as_ptr(),
                lens.as_ptr(),
                2,
                ptr::null(),
                ptr::null(),
                ends.as_ptr(),
                &mut out,
            );
            assert_eq!(st, BloomsliceStatus::AlreadyExists, "{}", last_error());
            let ends = [2usize, 1];
            let st = bloomslice_collection_build(
                0.01,
                0,
                names.as_ptr(),
                lens.as_ptr(),
                2,
                ptr::null(),
                ptr::null(),
                ends.as_ptr(),
                &mut out,
            );
            assert_eq!(st, BloomsliceStatus::InvalidArgument);
            assert!(last_error().contains("set_ends"), "{}", last_error());
            assert!(out.is_null());
            let mut n = 0;
            assert_eq!(
                bloomslice_collection_query(ptr::null(), b"x".as_ptr(), 1, ptr::null_mut(), 0, &mut n),
                BloomsliceStatus::InvalidArgument
            );
            bloomslice_collection_free(ptr::null_mut());
        }
    }
}

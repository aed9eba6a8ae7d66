//! Collections of shard files through the C ABI: a [`BloomsliceSharded`]
//! handle over `bloomslice::sharded::ShardedIndex`, opened from a manifest
//! and queried, batched and scored as one index, under the rules of the
//! crate docs.

use std::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use bloomslice::persist::Verify;
use bloomslice::score::{Scores, Threshold};
use bloomslice::sharded::ShardedIndex;
use bloomslice::{Error, KeyHash, SetNames};

use crate::{
    BatchOut, BloomsliceStatus, ChunkScratch, Failure, Queried, Scored, batch_of_hashes, batch_of_keys, byte_keys,
    check_ptr, copy_name, entry, fraction_of, id_of, path_arg, query_one, reading, reading_bytes, scored, slice,
    write_out,
};
#[cfg(doc)]
use crate::{
    BloomsliceInfo, bloomslice_hash_key, bloomslice_index_set_id, bloomslice_index_set_name, bloomslice_query,
    bloomslice_query_batch, bloomslice_query_batch_hashes,
};

/// The shard files of a manifest (written by `bloomslice split`), queried
/// as one index: every answer is the union of the files' answers, each set
/// once (a set never straddles files). Opaque: open it with
/// [`bloomslice_sharded_load`] or [`bloomslice_sharded_open_mapped`] and
/// release it with [`bloomslice_sharded_free`]. Read-only: it is queried
/// from any number of threads at once.
pub struct BloomsliceSharded {
    sharded: ShardedIndex,
}

impl Queried for BloomsliceSharded {
    fn seed(&self) -> u64 {
        self.sharded.params().seed()
    }

    fn names(&self) -> &SetNames {
        self.sharded.names()
    }

    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        self.sharded.query_hash_into(hash, out);
    }

    fn query_chunk<'s>(&self, hashes: &[KeyHash], scratch: &'s mut ChunkScratch) -> (&'s [u64], &'s [usize]) {
        self.sharded.query_batch(hashes, &mut scratch.results);
        scratch.results.flat()
    }
}

/// Facts about a collection of shard files, filled by
/// [`bloomslice_sharded_info`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BloomsliceShardedInfo {
    /// Bits per filter (every file shares it).
    pub m: u64,
    /// Hash functions per key.
    pub k: u32,
    /// Hash seed of byte keys.
    pub seed: u64,
    /// Number of sets across all files.
    pub sets: u64,
    /// Number of shard files.
    pub shards: u64,
    /// Bytes of memory the files' indexes hold (mapped rows included).
    pub memory_bytes: u64,
    /// Whether the files were opened with [`bloomslice_sharded_open_mapped`].
    pub mapped: bool,
}

/// The body of the functions that open a manifest: the collection `open`
/// reads from `manifest` into `*out`.
///
/// # Safety
///
/// `manifest` must be a NUL-terminated string; `out` valid for a write.
unsafe fn open_sharded(
    manifest: *const c_char,
    out: *mut *mut BloomsliceSharded,
    open: impl FnOnce(PathBuf) -> Result<ShardedIndex, Error>,
) -> BloomsliceStatus {
    entry(|| {
        // SAFETY: forwarded caller contract.
        let path = unsafe { path_arg(manifest) }?;
        check_ptr(out.cast_const(), "out")?;
        let sharded = open(path).map_err(|e| match e {
            // A manifest that is invalid or disagrees with its files.
            Error::Manifest(message) => Failure { status: BloomsliceStatus::CorruptFile, message },
            e => e.into(),
        })?;
        let handle = Box::into_raw(Box::new(BloomsliceSharded { sharded }));
        // SAFETY: `out` checked above, valid by the caller's contract.
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Opens the manifest `manifest` (a manifest file, or the directory that
/// holds `manifest.json`) and reads every shard file it lists into memory,
/// each fully verified and checked against its entry (parameters, set ids
/// and names). With `verify` true every file's size and checksum is first
/// compared with the manifest's record. On success `*out` receives the
/// handle.
///
/// Errors: `BLOOMSLICE_STATUS_IO` when a file cannot be read,
/// `BLOOMSLICE_STATUS_CORRUPT_FILE` when the manifest or a file is invalid
/// or they disagree.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `manifest` must be a NUL-terminated string; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_load(
    manifest: *const c_char,
    verify: bool,
    out: *mut *mut BloomsliceSharded,
) -> BloomsliceStatus {
    let verify = if verify { Verify::Full } else { Verify::Deferred };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { open_sharded(manifest, out, |path| ShardedIndex::load(path, verify)) }
}

/// [`bloomslice_sharded_load`] with every shard file memory-mapped and
/// queried in place (opening costs the manifest and the files' small
/// tables). With `verify` false neither the manifest's checksums nor the
/// files' row checksums are read (a flipped bit in the rows may change
/// answers, never crash); with `verify` true both are checked first.
///
/// Contract: no shard file may be truncated or written in place while it
/// is mapped (until [`bloomslice_sharded_free`]); replacing files by
/// rename, as bloomslice's writers do, is safe. Breaking this may change
/// answers or kill the process with `SIGBUS`.
///
/// Errors: as [`bloomslice_sharded_load`].
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `manifest` must be a NUL-terminated string; `out` valid for a write;
/// the mapping contract above must hold.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_open_mapped(
    manifest: *const c_char,
    verify: bool,
    out: *mut *mut BloomsliceSharded,
) -> BloomsliceStatus {
    let verify = if verify { Verify::Full } else { Verify::Deferred };
    // SAFETY: forwarded caller contract (see this function's `# Safety`);
    // the mapping contract is the caller's.
    unsafe { open_sharded(manifest, out, |path| ShardedIndex::open_mmap(path, verify)) }
}

/// Releases a collection handle. A null handle is ignored.
///
/// Thread safety: exclusive: no other call may use this handle at the same
/// time or after.
///
/// # Safety
///
/// `sharded` must be null or a live handle from this library, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_free(sharded: *mut BloomsliceSharded) {
    if sharded.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a live handle made by `Box::into_raw` in `open_sharded`,
        // freed once (caller's contract).
        drop(unsafe { Box::from_raw(sharded) });
    }));
}

/// Fills `*out` with the collection's parameters and size.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `sharded` must be a live handle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_info(
    sharded: *const BloomsliceSharded,
    out: *mut BloomsliceShardedInfo,
) -> BloomsliceStatus {
    let body = |h: &BloomsliceSharded| {
        let (s, p) = (&h.sharded, h.sharded.params());
        let info = BloomsliceShardedInfo {
            m: p.m(),
            k: p.k(),
            seed: p.seed(),
            sets: s.len() as u64,
            shards: s.shard_count() as u64,
            memory_bytes: s.memory_bytes() as u64,
            mapped: s.is_mapped(),
        };
        // SAFETY: forwarded caller contract.
        unsafe { write_out(out, info, "out") }
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(sharded, body) }
}

/// [`bloomslice_index_set_id`] for a collection: the id of the set called
/// `name` into `*id_out`.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `sharded` must be a live handle; `name` must point to `name_len` bytes;
/// `id_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_set_id(
    sharded: *const BloomsliceSharded,
    name: *const u8,
    name_len: usize,
    id_out: *mut u64,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading_bytes(sharded, (name, name_len, "name"), |h, name| write_out(id_out, id_of(h, name)?, "id_out")) }
}

/// [`bloomslice_index_set_name`] for a collection: the name of set `id`
/// into `buf` (`cap` bytes) and its length into `*len_out`.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `sharded` must be a live handle; `buf` null (with `cap` 0) or valid for
/// `cap` bytes; `len_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_set_name(
    sharded: *const BloomsliceSharded,
    id: u64,
    buf: *mut u8,
    cap: usize,
    len_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(sharded, |h| copy_name(h, id, buf, cap, len_out)) }
}

/// [`bloomslice_query`] for a collection: the ids of the sets that may
/// contain the byte key `key`, those of the first shard file first (in
/// manifest order), into `ids_out` (room for `cap`), their number into
/// `*n_out`; `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL` when more than `cap` match.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `sharded` must be a live handle; `key` must point to `key_len` bytes;
/// `ids_out` null (with `cap` 0) or valid for `cap` writes; `n_out` valid
/// for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_query(
    sharded: *const BloomsliceSharded,
    key: *const u8,
    key_len: usize,
    ids_out: *mut u64,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading_bytes(sharded, (key, key_len, "key"), |h, key| {
            query_one(h, h.sharded.params().hash(key), ids_out, cap, n_out)
        })
    }
}

/// [`bloomslice_query_batch`] for a collection: the byte keys `keys[i]`
/// (`key_lens[i]` bytes) answered in the CSR layout, key `i`'s ids (those
/// of the first shard file first) in
/// `ids_out[offsets_out[i] .. offsets_out[i + 1]]`, with the same
/// `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL` protocol.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `sharded` must be a live handle; the other arguments as for
/// [`bloomslice_query_batch`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_query_batch(
    sharded: *const BloomsliceSharded,
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
        reading(sharded, |h| {
            let keys = byte_keys((keys, key_lens, n_keys))?;
            batch_of_keys(h, &keys, BatchOut::new(n_keys, ids_out, ids_cap, offsets_out, total_out)?)
        })
    }
}

/// [`bloomslice_query_batch_hashes`] for a collection: keys given as the
/// caller's 64-bit hashes (`hashes[i]`, `n` of them, as
/// [`bloomslice_hash_key`] gives them for an index of the same seed).
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// As [`bloomslice_sharded_query_batch`]; `hashes` must point to `n`
/// aligned `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_query_batch_hashes(
    sharded: *const BloomsliceSharded,
    hashes: *const u64,
    n: usize,
    ids_out: *mut u64,
    ids_cap: usize,
    offsets_out: *mut usize,
    total_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading(sharded, |h| {
            let hashes = slice(hashes, n, "hashes")?;
            batch_of_hashes(h, hashes, BatchOut::new(n, ids_out, ids_cap, offsets_out, total_out)?)
        })
    }
}

impl Scored for BloomsliceSharded {
    fn score_into(&self, hashes: &[KeyHash], scores: &mut Scores) {
        self.sharded.score_into(hashes, scores);
    }

    fn query_threshold_into(&self, hashes: &[KeyHash], t: Threshold, scratch: &mut Scores, out: &mut Vec<(u64, u32)>) {
        self.sharded.query_threshold_into(hashes, t, scratch, out);
    }
}

/// Scores one query of `n_keys` byte keys (`keys[i]`, `key_lens[i]`
/// bytes) against every set of the collection: for every set with a count
/// above 0 (how many of the keys it may contain; a key given twice counts
/// twice), its id goes to `ids_out` and its count to `counts_out`, by
/// ascending id, and their number to `*n_out`. When more than `cap` sets
/// have a count, the first `cap` are written, `*n_out` says how many there
/// are, and the call returns `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL`; room
/// for every set ([`BloomsliceShardedInfo::sets`]) is always enough.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `sharded` must be a live handle; `keys` and `key_lens` must point to
/// `n_keys` elements, each `keys[i]` to `key_lens[i]` bytes; `ids_out` and
/// `counts_out` null (with `cap` 0) or valid for `cap` writes; `n_out`
/// valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_score(
    sharded: *const BloomsliceSharded,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
    ids_out: *mut u64,
    counts_out: *mut u32,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(sharded, |h| scored(h, (keys, key_lens, n_keys), (ids_out, counts_out, cap, n_out), None)) }
}

/// The sets of the collection whose count for the query of `n_keys` byte
/// keys reaches `fraction` of them (the least whole count at or above
/// `fraction * n_keys`, a product within 1e-9 of a whole number taken as
/// that number): ids and counts by ascending id, into the buffers as for
/// [`bloomslice_sharded_score`]. A `fraction` whose least count is 0
/// reports every set. Scoring stops reading sets that can no longer pass.
///
/// Errors: `BLOOMSLICE_STATUS_INVALID_ARGUMENT` for a `fraction` that is
/// NaN or outside `[0, 1]`.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// As [`bloomslice_sharded_score`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_sharded_query_threshold(
    sharded: *const BloomsliceSharded,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
    fraction: f64,
    ids_out: *mut u64,
    counts_out: *mut u32,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    let body = |h: &BloomsliceSharded| {
        let threshold = fraction_of(fraction)?;
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        unsafe { scored(h, (keys, key_lens, n_keys), (ids_out, counts_out, cap, n_out), Some(threshold)) }
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(sharded, body) }
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;
    use std::ptr;

    use super::*;
    use crate::tests::{add, last_error, new_index, query};
    use crate::{BloomsliceStatus, bloomslice_index_free};
    use bloomslice::persist;

    #[test]
    fn sharded_collections_answer_as_the_unsplit_index() {
        use bloomslice::persist::manifest::{MANIFEST_FILE, Manifest, ManifestParams, ShardFile};
        let dir = tempfile::tempdir().unwrap();
        let h = new_index();
        let names: Vec<String> = (0..12).map(|i| format!("set-{i}")).collect();
        let keys_of =
            |i: usize| -> Vec<Vec<u8>> { (0..300).map(|k| format!("{}", i * 100 + k).into_bytes()).collect() };
        for (i, name) in names.iter().enumerate() {
            let keys = keys_of(i);
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            add(h, name, &refs);
        }
        // SAFETY: a live handle.
        let whole = unsafe { &*h };
        let mut files = Vec::new();
        for (f, range) in [(0, 0..5u64), (1, 5..12)] {
            let mut part = whole.index.clone();
            let mut part_names = whole.names.clone();
            for id in (0..12).filter(|id| !range.contains(id)) {
                part.remove_set(id).unwrap();
                part_names.remove(id);
            }
            let file = format!("part-{f}.bsi");
            persist::save(dir.path().join(&file), &part, &part_names).unwrap();
            files.push(ShardFile::describe(dir.path(), &file, &part, &part_names).unwrap());
        }
        let manifest = Manifest { params: ManifestParams::of(whole.index.params()), files };
        manifest.write(&dir.path().join(MANIFEST_FILE)).unwrap();
        let cdir = CString::new(dir.path().to_str().unwrap()).unwrap();
        let mut s = ptr::null_mut();
        // SAFETY: a NUL-terminated path and a valid out pointer.
        assert_eq!(unsafe { bloomslice_sharded_open_mapped(cdir.as_ptr(), true, &mut s) }, BloomsliceStatus::Ok);
        let mut info = BloomsliceShardedInfo::default();
        // SAFETY: live handle, valid out pointer.
        assert_eq!(unsafe { bloomslice_sharded_info(s, &mut info) }, BloomsliceStatus::Ok);
        assert_eq!((info.sets, info.shards, info.m, info.mapped), (12, 2, 10112, true));

        let queries: Vec<Vec<u8>> = (0..1500u32).map(|k| format!("{k}").into_bytes()).collect();
        let ptrs: Vec<*const u8> = queries.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = queries.iter().map(Vec::len).collect();
        let mut ids = vec![0u64; 12 * queries.len()];
        let mut offsets = vec![0usize; queries.len() + 1];
        let mut total = 0;
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_sharded_query_batch(
                s,
                ptrs.as_ptr(),
                lens.as_ptr(),
                queries.len(),
                ids.as_mut_ptr(),
                ids.len(),
                offsets.as_mut_ptr(),
                &mut total,
            )
        };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        for (i, key) in queries.iter().enumerate() {
            let got = &ids[offsets[i]..offsets[i + 1]];
            let mut one = [0u64; 12];
            let mut n = 0;
            // SAFETY: live buffers of the stated lengths.
            let st = unsafe { bloomslice_sharded_query(s, key.as_ptr(), key.len(), one.as_mut_ptr(), 12, &mut n) };
            assert_eq!((st, &one[..n]), (BloomsliceStatus::Ok, got), "key {i}");
            let mut got = got.to_vec();
            got.sort_unstable();
            let mut want = query(h, key);
            want.sort_unstable();
            assert_eq!(got, want, "key {i}");
        }

        // Scores and thresholds: those of the library's unsplit index.
        let read = keys_of(7)[..100].to_vec();
        let ptrs: Vec<*const u8> = read.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = read.iter().map(Vec::len).collect();
        let (mut ids, mut counts, mut n) = ([0u64; 12], [0u32; 12], 0);
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_sharded_score(
                s,
                ptrs.as_ptr(),
                lens.as_ptr(),
                100,
                ids.as_mut_ptr(),
                counts.as_mut_ptr(),
                12,
                &mut n,
            )
        };
        assert_eq!(st, BloomsliceStatus::Ok);
        let mut scores = Scores::new();
        whole.index.score_into(&read, &mut scores);
        let pairs: Vec<(u64, u32)> = ids[..n].iter().copied().zip(counts[..n].iter().copied()).collect();
        assert_eq!(pairs, scores.iter().collect::<Vec<_>>());
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_sharded_query_threshold(
                s,
                ptrs.as_ptr(),
                lens.as_ptr(),
                100,
                0.9,
                ids.as_mut_ptr(),
                counts.as_mut_ptr(),
                12,
                &mut n,
            )
        };
        assert_eq!(st, BloomsliceStatus::Ok);
        let want = whole.index.query_threshold(&read, Threshold::fraction(0.9).unwrap());
        let pairs: Vec<(u64, u32)> = ids[..n].iter().copied().zip(counts[..n].iter().copied()).collect();
        assert_eq!(pairs, want);
        assert!(pairs.iter().any(|&(id, c)| id == 7 && c == 100));
        // SAFETY: live handles, freed once.
        unsafe {
            bloomslice_sharded_free(s);
            bloomslice_index_free(h);
        }
    }
}

//! The read functions, written once over `bloomslice::ReadIndex`: they
//! answer alike on every layout.

use std::cell::RefCell;

use bloomslice::score::{Scores, Threshold};
use bloomslice::{BatchResults, KeyHash, ReadIndex, SetNames};

use crate::{
    BloomsliceIndex, BloomsliceInfo, BloomsliceStatus, Engine, Failure, KEYS, byte_strings, bytes, check_ptr, reading,
    slice, slice_mut, write_count, write_out,
};

thread_local! {
    /// Per-thread buffers of the query functions, so a warm query
    /// allocates nothing.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

#[derive(Default)]
struct Scratch {
    hashes: Vec<KeyHash>,
    results: BatchResults,
    ids: Vec<u64>,
    scores: Scores,
    hits: Vec<(u64, u32)>,
}

/// Runs `body` on this thread's scratch buffers.
fn with_scratch<T>(body: impl FnOnce(&mut Scratch) -> Result<T, Failure>) -> Result<T, Failure> {
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.try_borrow_mut().map_err(|_| Failure::invalid("re-entrant call"))?;
        body(&mut scratch)
    })
}

/// Keys hashed and queried at a time by the batch functions: big enough to
/// keep the library's prefetch pipeline full, small enough that the
/// positions buffer (`k * 4` bytes per key) stays in L2 and that memory does
/// not grow with the batch.
const BATCH_CHUNK: usize = 2048;

/// [`reading`] with the byte string `ptr` (`len` bytes, called `what` in
/// messages) checked too.
///
/// # Safety
///
/// As [`reading`]; a non-null `ptr` must point to `len` readable bytes.
unsafe fn reading_bytes(
    index: *const BloomsliceIndex, (ptr, len, what): (*const u8, usize, &str),
    body: impl FnOnce(&BloomsliceIndex, &[u8]) -> Result<(), Failure>,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract.
    unsafe { reading(index, |h| body(h, bytes(ptr, len, what)?)) }
}

/// Fills `*out` with the index's layout, parameters and size.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `index` must be a live handle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_info(
    index: *const BloomsliceIndex, out: *mut BloomsliceInfo,
) -> BloomsliceStatus {
    let body = |h: &BloomsliceIndex| {
        let read = h.read();
        let mut info = BloomsliceInfo {
            layout: h.engine.layout(),
            k: read.k(),
            seed: read.seed(),
            sets: read.len() as u64,
            memory_bytes: read.memory_bytes() as u64,
            mapped: h.mapped,
            ..BloomsliceInfo::default()
        };
        let parts_of = |sets: &bloomslice::SetIndex| sets.parts().filter(|part| !part.is_empty()).count() as u64;
        match &h.engine {
            Engine::Sets(sets) => {
                (info.fp, info.parts, info.grown_sets) = (sets.p(), parts_of(sets), sets.grown_sets() as u64);
            }
            Engine::Sliced(index) => (info.m, info.parts) = (index.params().m(), 1),
            Engine::Sharded(sharded) => {
                info.m = sharded.params().m();
                info.shards = sharded.shard_count() as u64;
                info.parts = sharded.shards().iter().map(|shard| parts_of(&shard.index)).sum();
            }
            Engine::Levels(levels) => info.fp = levels.p(),
        }
        // SAFETY: forwarded caller contract.
        unsafe { write_out(out, info, "out") }
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, body) }
}

/// The number of sets of the index, into `*len_out`.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `index` must be a live handle; `len_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_len(index: *const BloomsliceIndex, len_out: *mut u64) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, |h| write_out(len_out, h.read().len() as u64, "len_out")) }
}

/// Whether a set is stored under `id`, into `*out`.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `index` must be a live handle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_contains(
    index: *const BloomsliceIndex, id: u64, out: *mut bool,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, |h| write_out(out, h.read().contains(id), "out")) }
}

/// The id of the set called `name`.
pub(crate) fn id_of(names: &SetNames, name: &[u8]) -> Result<u64, Failure> {
    names
        .id(name)
        .ok_or_else(|| Failure::not_found(format!("no set named {:?} in the index", String::from_utf8_lossy(name))))
}

/// Looks up the id of the set called `name` into `*id_out`.
///
/// Errors: `BLOOMSLICE_STATUS_NOT_FOUND` when no set has this name.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `index` must be a live handle; `name` must point to `name_len` bytes;
/// `id_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_set_id(
    index: *const BloomsliceIndex, name: *const u8, name_len: usize, id_out: *mut u64,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading_bytes(index, (name, name_len, "name"), |h, name| write_out(id_out, id_of(h.names(), name)?, "id_out"))
    }
}

/// Copies the name of set `id` (bytes, not NUL-terminated) into `buf`
/// (`cap` bytes) and its length into `*len_out`. When `cap` is too small,
/// returns `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL` with `*len_out` set to the
/// length needed and nothing copied.
///
/// Errors: `BLOOMSLICE_STATUS_NOT_FOUND` when set `id` has no name.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `index` must be a live handle; `buf` null (with `cap` 0) or valid for
/// `cap` bytes; `len_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_set_name(
    index: *const BloomsliceIndex, id: u64, buf: *mut u8, cap: usize, len_out: *mut usize,
) -> BloomsliceStatus {
    let body = |h: &BloomsliceIndex| {
        check_ptr(len_out.cast_const(), "len_out")?;
        let name = h.names().name(id).ok_or_else(|| Failure::not_found(format!("set {id} has no name")))?;
        // SAFETY: checked above; valid by the caller's contract.
        unsafe {
            write_count(len_out, name.len(), cap, || {
                format!("the name of set {id} needs {} bytes, the buffer has {cap}", name.len())
            })
        }?;
        // SAFETY: forwarded caller contract (`cap >= name.len()` bytes).
        let out = unsafe { slice_mut(buf, name.len(), "buf") }?;
        out.copy_from_slice(name);
        Ok(())
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, body) }
}

/// The 64-bit hash this index gives the byte key `key` (seeded xxh3-64, the
/// same for every part and shard file): [`bloomslice_query_hash`] with it
/// answers as [`bloomslice_query`] with the key. Lets a caller hash once and
/// keep hashes.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `index` must be a live handle; `key` must point to `key_len` bytes;
/// `hash_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_hash_key(
    index: *const BloomsliceIndex, key: *const u8, key_len: usize, hash_out: *mut u64,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading_bytes(index, (key, key_len, "key"), |h, key| {
            write_out(hash_out, h.read().hash_bytes(key).h1, "hash_out")
        })
    }
}

/// Queries one hash; copies the matching ids into `ids_out` and their
/// number into `*n_out`.
///
/// # Safety
///
/// As [`bloomslice_query`].
unsafe fn query_one(
    read: &dyn ReadIndex, hash: KeyHash, ids_out: *mut u64, cap: usize, n_out: *mut usize,
) -> Result<(), Failure> {
    check_ptr(n_out.cast_const(), "n_out")?;
    // SAFETY: forwarded caller contract.
    let out = unsafe { slice_mut(ids_out, cap, "ids_out") }?;
    with_scratch(|scratch| {
        let ids = &mut scratch.ids;
        read.query_hash_into(hash, ids);
        let room = ids.len().min(cap);
        out[..room].copy_from_slice(&ids[..room]);
        // SAFETY: checked above; valid by the caller's contract.
        unsafe {
            write_count(n_out, ids.len(), cap, || format!("{} sets match, ids_out has room for {cap}", ids.len()))
        }
    })
}

/// Which sets may contain the byte key `key` (`key_len` bytes): their ids,
/// each once (in index order; for a manifest's files, those of the first
/// file first), go to `ids_out` (room for `cap`) and their number to
/// `*n_out`. When more than `cap` sets match, the first `cap` ids are
/// written, `*n_out` says how many there are, and the call returns
/// `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL`. A buffer with room for every set
/// ([`BloomsliceInfo::sets`]) is always enough. Allocates nothing once the
/// thread's buffers are warm.
///
/// Thread safety: concurrent with other readers (many threads may query one
/// handle at once).
///
/// # Safety
///
/// `index` must be a live handle; `key` must point to `key_len` bytes;
/// `ids_out` null (with `cap` 0) or valid for `cap` writes; `n_out` valid
/// for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_query(
    index: *const BloomsliceIndex, key: *const u8, key_len: usize, ids_out: *mut u64, cap: usize, n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading_bytes(index, (key, key_len, "key"), |h, key| {
            query_one(h.read(), h.read().hash_bytes(key), ids_out, cap, n_out)
        })
    }
}

/// [`bloomslice_query`] for a key given as the caller's 64-bit hash (used
/// as is, without the seed; see [`bloomslice_hash_key`]).
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// As [`bloomslice_query`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_query_hash(
    index: *const BloomsliceIndex, hash: u64, ids_out: *mut u64, cap: usize, n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, |h| query_one(h.read(), KeyHash::from_u64(hash), ids_out, cap, n_out)) }
}

/// The output arguments of a batch call of `n` keys, checked.
struct BatchOut<'a> {
    n: usize,
    ids_out: &'a mut [u64],
    offsets: &'a mut [usize],
    total_out: *mut usize,
}

impl BatchOut<'_> {
    /// Checks the output arguments of a batch call of `n` keys.
    ///
    /// # Safety
    ///
    /// As [`bloomslice_query_batch`]: `ids_out` null (with `ids_cap` 0) or
    /// valid for `ids_cap` writes, `offsets_out` for `n + 1` writes,
    /// `total_out` for one.
    unsafe fn new(
        n: usize, ids_out: *mut u64, ids_cap: usize, offsets_out: *mut usize, total_out: *mut usize,
    ) -> Result<Self, Failure> {
        // SAFETY: forwarded caller contract.
        let ids_out = unsafe { slice_mut(ids_out, ids_cap, "ids_out") }?;
        // SAFETY: forwarded caller contract.
        let offsets = unsafe { slice_mut(offsets_out, n.saturating_add(1), "offsets_out") }?;
        check_ptr(total_out.cast_const(), "total_out")?;
        Ok(BatchOut { n, ids_out, offsets, total_out })
    }

    /// Runs the batch, `BATCH_CHUNK` keys at a time (`hash_into` hashes keys
    /// `start..end`), writing ids and offsets (CSR layout) into the caller's
    /// buffers and the total into `*total_out`; reports a short buffer.
    fn run(
        self, read: &dyn ReadIndex, mut hash_into: impl FnMut(usize, usize, &mut Vec<KeyHash>),
    ) -> Result<(), Failure> {
        let BatchOut { n, ids_out, offsets, total_out } = self;
        let total = with_scratch(|scratch| {
            let Scratch { hashes, results, .. } = scratch;
            let mut total = 0usize;
            offsets[0] = 0;
            let mut start = 0;
            while start < n {
                let end = (start + BATCH_CHUNK).min(n);
                hashes.clear();
                hash_into(start, end, hashes);
                read.query_batch_hashes(hashes, results);
                // One copy per chunk: per-key copies of a few ids each cost a
                // memcpy call per key.
                let (ids, ends) = results.flat();
                if total < ids_out.len() {
                    let room = (ids_out.len() - total).min(ids.len());
                    ids_out[total..total + room].copy_from_slice(&ids[..room]);
                }
                for (offset, &end) in offsets[start + 1..=end].iter_mut().zip(ends) {
                    *offset = total + end;
                }
                total += ids.len();
                start = end;
            }
            Ok(total)
        })?;
        let cap = ids_out.len();
        // SAFETY: checked in `new`; valid by the caller's contract.
        unsafe {
            write_count(total_out, total, cap, || format!("the batch matched {total} ids, ids_out has room for {cap}"))
        }
    }
}

/// Queries a batch of `n_keys` byte keys (`keys[i]`, `key_lens[i]` bytes).
/// Results use the CSR layout: the ids of key `i` (as [`bloomslice_query`]
/// gives them) are `ids_out[offsets_out[i] .. offsets_out[i + 1]]`;
/// `offsets_out` receives `n_keys + 1` entries and `*total_out` the total
/// number of ids. When the total exceeds `ids_cap`, the offsets and
/// `*total_out` are still complete, the first `ids_cap` ids are written,
/// and the call returns `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL`: call again
/// with a buffer of `*total_out` ids. Keys are hashed and queried in chunks
/// with prefetching (the library's `query_batch`); nothing is allocated
/// once the thread's buffers are warm.
///
/// Thread safety: concurrent with other readers (many threads may query one
/// handle at once).
///
/// # Safety
///
/// `index` must be a live handle; `keys` and `key_lens` must point to
/// `n_keys` elements, each `keys[i]` to `key_lens[i]` bytes; `ids_out` null
/// (with `ids_cap` 0) or valid for `ids_cap` writes; `offsets_out` valid for
/// `n_keys + 1` writes; `total_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_query_batch(
    index: *const BloomsliceIndex, keys: *const *const u8, key_lens: *const usize, n_keys: usize, ids_out: *mut u64,
    ids_cap: usize, offsets_out: *mut usize, total_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading(index, |h| {
            let keys = byte_strings((keys, key_lens, n_keys), KEYS)?;
            let out = BatchOut::new(n_keys, ids_out, ids_cap, offsets_out, total_out)?;
            let read = h.read();
            out.run(read, |start, end, hashes| hashes.extend(keys[start..end].iter().map(|key| read.hash_bytes(key))))
        })
    }
}

/// [`bloomslice_query_batch`] for keys given as the caller's 64-bit hashes
/// (`hashes[i]`, `n` of them; see [`bloomslice_hash_key`]). `offsets_out`
/// receives `n + 1` entries.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// As [`bloomslice_query_batch`]; `hashes` must point to `n` aligned
/// `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_query_batch_hashes(
    index: *const BloomsliceIndex, hashes: *const u64, n: usize, ids_out: *mut u64, ids_cap: usize,
    offsets_out: *mut usize, total_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading(index, |h| {
            let hashes = slice(hashes, n, "hashes")?;
            let out = BatchOut::new(n, ids_out, ids_cap, offsets_out, total_out)?;
            out.run(h.read(), |start, end, chunk| {
                chunk.extend(hashes[start..end].iter().map(|&x| KeyHash::from_u64(x)));
            })
        })
    }
}

/// The body of the scoring functions: the byte keys `keys` scored against
/// every set of `h`, every set with a count above 0 (`threshold` `None`) or
/// those whose count reaches `threshold`, by ascending id, copied into
/// `ids_out` and `counts_out` (room for `cap`), their number into `*n_out`.
///
/// # Safety
///
/// As [`bloomslice_score`].
unsafe fn scored(
    index: *const BloomsliceIndex, keys: (*const *const u8, *const usize, usize),
    (ids_out, counts_out, cap, n_out): (*mut u64, *mut u32, usize, *mut usize),
    threshold: impl FnOnce() -> Result<Option<Threshold>, Failure>,
) -> BloomsliceStatus {
    let body = |h: &BloomsliceIndex| {
        let threshold = threshold()?;
        // SAFETY: forwarded caller contract.
        let keys = unsafe { byte_strings(keys, KEYS) }?;
        // SAFETY: forwarded caller contract.
        let ids = unsafe { slice_mut(ids_out, cap, "ids_out") }?;
        // SAFETY: forwarded caller contract.
        let counts = unsafe { slice_mut(counts_out, cap, "counts_out") }?;
        check_ptr(n_out.cast_const(), "n_out")?;
        let read = h.read();
        with_scratch(|scratch| {
            let Scratch { hashes, scores, hits, .. } = scratch;
            hashes.clear();
            hashes.extend(keys.iter().map(|key| read.hash_bytes(key)));
            match threshold {
                None => {
                    read.score_hashes_into(hashes, scores);
                    hits.clear();
                    hits.extend(scores.iter());
                }
                Some(t) => read.query_threshold_hashes_into(hashes, t, scores, hits),
            }
            let room = hits.len().min(cap);
            for ((id, count), &(i, c)) in ids.iter_mut().zip(counts.iter_mut()).zip(&hits[..room]) {
                (*id, *count) = (i, c);
            }
            // SAFETY: checked above; valid by the caller's contract.
            unsafe {
                write_count(n_out, hits.len(), cap, || {
                    format!("{} sets scored, the buffers have room for {cap}", hits.len())
                })
            }
        })
    };
    // SAFETY: forwarded caller contract.
    unsafe { reading(index, body) }
}

/// Scores one query of `n_keys` byte keys (`keys[i]`, `key_lens[i]`
/// bytes) against every set of the index: for every set with a count
/// above 0 (how many of the keys it may contain, a set of several filters
/// counted once per key; a key given twice counts twice), its id goes to
/// `ids_out` and its count to `counts_out`, by ascending id, and their
/// number to `*n_out`. When more than `cap` sets have a count, the first
/// `cap` are written, `*n_out` says how many there are, and the call
/// returns `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL`; room for every set
/// ([`BloomsliceInfo::sets`]) is always enough.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `index` must be a live handle; `keys` and `key_lens` must point to
/// `n_keys` elements, each `keys[i]` to `key_lens[i]` bytes; `ids_out` and
/// `counts_out` null (with `cap` 0) or valid for `cap` writes; `n_out`
/// valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_score(
    index: *const BloomsliceIndex, keys: *const *const u8, key_lens: *const usize, n_keys: usize, ids_out: *mut u64,
    counts_out: *mut u32, cap: usize, n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { scored(index, (keys, key_lens, n_keys), (ids_out, counts_out, cap, n_out), || Ok(None)) }
}

/// The sets of the index whose count for the query of `n_keys` byte keys
/// (as [`bloomslice_score`] counts) reaches `fraction` of them (the least
/// whole count at or above `fraction * n_keys`, a product within 1e-9 of a
/// whole number taken as that number): ids and counts by ascending id,
/// into the buffers as for [`bloomslice_score`]. A `fraction` whose least
/// count is 0 reports every set. Scoring stops reading sets that can no
/// longer pass.
///
/// Errors: `BLOOMSLICE_STATUS_INVALID_ARGUMENT` for a `fraction` that is
/// NaN or outside `[0, 1]`.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// As [`bloomslice_score`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_query_threshold(
    index: *const BloomsliceIndex, keys: *const *const u8, key_lens: *const usize, n_keys: usize, fraction: f64,
    ids_out: *mut u64, counts_out: *mut u32, cap: usize, n_out: *mut usize,
) -> BloomsliceStatus {
    let threshold = || Ok(Some(Threshold::fraction(fraction)?));
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { scored(index, (keys, key_lens, n_keys), (ids_out, counts_out, cap, n_out), threshold) }
}

//! # bloomslice C ABI
//!
//! A C interface to [`bloomslice`] for services written in C, C++, Go or
//! Java: opaque [`BloomsliceIndex`] handles, keys as byte pointers plus
//! lengths (or the caller's own 64-bit hashes), answers written into caller
//! buffers, and errors as [`BloomsliceStatus`] return codes with a
//! thread-local message ([`bloomslice_last_error`]).
//!
//! The header `include/bloomslice.h` is generated from this file and the
//! modules it declares by `cbindgen` (`tests/header.rs` checks that the
//! committed copy is up to date).
//!
//! # Rules every entry point follows
//!
//! - It never unwinds into C: the body runs under `catch_unwind`, and a panic
//!   (a bug) becomes [`BloomsliceStatus::Internal`].
//! - Every pointer argument is checked for null (a null *byte* pointer is
//!   accepted only with length 0) and every `uint64_t` pointer for alignment;
//!   a violation is [`BloomsliceStatus::InvalidArgument`], never a crash.
//!   Pointers that are not null must still point to as many valid elements as
//!   their length says: that cannot be checked.
//! - On failure, outputs are left as they were unless the function says
//!   otherwise, and the index is unchanged.
//!
//! # Threads
//!
//! A handle may be *read* (queried, inspected, saved, names looked up) from
//! any number of threads at once. A function that *changes* a handle
//! (`add`, `remove`, `free`) needs exclusive use: no other call on the same
//! handle may run at the same time. Each function's documentation says
//! which kind it is. Different handles are independent.
//!
//! # Collections of shard files
//!
//! A [`BloomsliceSharded`] handle (module `sharded`) opens a manifest
//! written by `bloomslice split` and queries its shard files as one index
//! (`bloomslice::sharded::ShardedIndex`): `bloomslice_sharded_query`,
//! `_query_batch` and `_query_batch_hashes` answer as the unsplit index
//! would (the ids of the first file first), and `bloomslice_sharded_score`
//! and `_query_threshold` score one query of many keys against every set.
//! It is read-only; change a collection with the CLI (`bloomslice add`,
//! `remove`) or the Python package, then open it again.
//!
//! # Collections of sets of any sizes
//!
//! A [`BloomsliceCollection`] handle (module `collection`) holds sets each
//! sized from their own keys at one false-positive rate, in size-classed
//! parts (`bloomslice::SetIndex`): built from all sets at once
//! (`bloomslice_collection_build`, the layout chosen from their sizes) or
//! one set at a time, opened from a collection file or from an index file
//! of one filter length (as a collection of one part), queried, batched,
//! scored and thresholded as an index is, grown (`_add_keys`: a set that
//! outgrows its filter gains one in a larger part) and saved as a
//! collection file.
//!
//! # Scores
//!
//! `bloomslice_score` and `bloomslice_query_threshold` (and their
//! `_sharded_` and `_collection_` forms) score one query of many keys
//! against every set: how many of the keys each set may contain, and the
//! sets that reach a fraction of them.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use bloomslice::persist::{self, Loaded, Verify};
use bloomslice::score::{Scores, Threshold};
use bloomslice::sharded::ShardedResults;
use bloomslice::{BatchResults, BloomFilter, BloomParams, Error, KeyHash, SetNames, SlicedIndex};

mod collection;
mod sharded;
pub use collection::{
    BloomsliceCollection, BloomsliceCollectionInfo, bloomslice_collection_add_keys, bloomslice_collection_add_set,
    bloomslice_collection_build, bloomslice_collection_free, bloomslice_collection_hash_key,
    bloomslice_collection_info, bloomslice_collection_load, bloomslice_collection_new,
    bloomslice_collection_open_mapped, bloomslice_collection_query, bloomslice_collection_query_batch,
    bloomslice_collection_query_batch_hashes, bloomslice_collection_query_threshold, bloomslice_collection_remove_set,
    bloomslice_collection_save, bloomslice_collection_score, bloomslice_collection_set_id,
    bloomslice_collection_set_name,
};
pub use sharded::{
    BloomsliceSharded, BloomsliceShardedInfo, bloomslice_sharded_free, bloomslice_sharded_info,
    bloomslice_sharded_load, bloomslice_sharded_open_mapped, bloomslice_sharded_query, bloomslice_sharded_query_batch,
    bloomslice_sharded_query_batch_hashes, bloomslice_sharded_query_threshold, bloomslice_sharded_score,
    bloomslice_sharded_set_id, bloomslice_sharded_set_name,
};

/// What a call returned. Every function of this API that can fail returns
/// one; on anything but `BLOOMSLICE_STATUS_OK`, [`bloomslice_last_error`]
/// describes the failure.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BloomsliceStatus {
    /// Success.
    Ok = 0,
    /// A null or misaligned pointer, a length that is too large, invalid
    /// filter parameters, or a set name that is empty or too long.
    InvalidArgument = 1,
    /// The operating system refused a file operation (open, read, write,
    /// rename, map).
    Io = 2,
    /// The file is not a valid index file: wrong magic bytes, unsupported
    /// version, truncated, checksum mismatch or inconsistent tables.
    CorruptFile = 3,
    /// The caller's output buffer is too small; the functions that return
    /// this say how much room is needed.
    BufferTooSmall = 4,
    /// No set has this name.
    NotFound = 5,
    /// A set with this name already exists.
    AlreadyExists = 6,
    /// The filter was built with other parameters than the index.
    ParamsMismatch = 7,
    /// A bug in bloomslice (a panic was caught at the boundary). The handle
    /// should not be used further.
    Internal = 8,
}

/// An index of Bloom filters with names for its sets. Opaque: create it with
/// [`bloomslice_index_new`], [`bloomslice_index_new_for_capacity`],
/// [`bloomslice_index_load`] or [`bloomslice_index_open_mapped`] and release
/// it with [`bloomslice_index_free`].
pub struct BloomsliceIndex {
    index: SlicedIndex,
    names: SetNames,
    /// Opened with [`bloomslice_index_open_mapped`].
    mapped: bool,
}

/// Facts about an index, filled by [`bloomslice_index_info`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BloomsliceInfo {
    /// Bits per filter.
    pub m: u64,
    /// Hash functions per key.
    pub k: u32,
    /// Hash seed of byte keys.
    pub seed: u64,
    /// Number of sets.
    pub sets: u64,
    /// Bytes of memory the index holds: rows (mapped rows included) and
    /// maps.
    pub memory_bytes: u64,
    /// Whether the index was opened with [`bloomslice_index_open_mapped`]
    /// (its rows are read from the mapped file until changed).
    pub mapped: bool,
}

/// The error of a failed call, before it becomes a status and a message.
struct Failure {
    status: BloomsliceStatus,
    message: String,
}

impl Failure {
    fn invalid(message: impl Into<String>) -> Self {
        Failure { status: BloomsliceStatus::InvalidArgument, message: message.into() }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let status = match &e {
            Error::Io { .. } => BloomsliceStatus::Io,
            Error::BadMagic
            | Error::UnsupportedVersion { .. }
            | Error::Truncated { .. }
            | Error::ChecksumMismatch { .. }
            | Error::CorruptFile(_) => BloomsliceStatus::CorruptFile,
            Error::DuplicateName(_) | Error::DuplicateId(_) => BloomsliceStatus::AlreadyExists,
            Error::UnknownId(_) => BloomsliceStatus::NotFound,
            Error::ParamsMismatch { .. } => BloomsliceStatus::ParamsMismatch,
            _ => BloomsliceStatus::InvalidArgument,
        };
        Failure { status, message: e.to_string() }
    }
}

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// Per-thread buffers of the query functions, so a warm query allocates
    /// nothing.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

#[derive(Default)]
struct Scratch {
    hashes: Vec<KeyHash>,
    chunk: ChunkScratch,
    ids: Vec<u64>,
    scores: Scores,
    hits: Vec<(u64, u32)>,
}

/// The answers of one chunk of a batch, for either kind of handle.
#[derive(Default)]
struct ChunkScratch {
    results: BatchResults,
    sharded: ShardedResults,
}

/// What the query functions read of a handle: an index
/// ([`BloomsliceIndex`]) or a collection of shard files
/// ([`BloomsliceSharded`]).
trait Queried {
    /// The seed byte keys are hashed with.
    fn seed(&self) -> u64;
    /// The set names.
    fn names(&self) -> &SetNames;
    /// The ids of the sets that may contain `hash`, into `out`.
    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>);
    /// Answers a chunk of a batch: every key's ids and where each ends.
    fn query_chunk<'s>(&self, hashes: &[KeyHash], scratch: &'s mut ChunkScratch) -> (&'s [u64], &'s [usize]);
}

impl Queried for BloomsliceIndex {
    fn seed(&self) -> u64 {
        self.index.params().seed()
    }

    fn names(&self) -> &SetNames {
        &self.names
    }

    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        self.index.query_hash_into(hash, out);
    }

    fn query_chunk<'s>(&self, hashes: &[KeyHash], scratch: &'s mut ChunkScratch) -> (&'s [u64], &'s [usize]) {
        self.index.query_batch_hashes(hashes, &mut scratch.results);
        scratch.results.flat()
    }
}

/// What the scoring functions read of a handle: the scores of one query of
/// many keys against every set.
trait Scored: Queried {
    /// Every set's count of the keys it may contain (non-zero counts).
    fn score_into(&self, hashes: &[KeyHash], scores: &mut Scores);
    /// The sets whose count reaches `threshold`, `(id, count)` by
    /// ascending id, into `out` (cleared first).
    fn query_threshold_into(&self, hashes: &[KeyHash], t: Threshold, scratch: &mut Scores, out: &mut Vec<(u64, u32)>);
}

impl Scored for BloomsliceIndex {
    fn score_into(&self, hashes: &[KeyHash], scores: &mut Scores) {
        self.index.score_into(hashes, scores);
    }

    fn query_threshold_into(&self, hashes: &[KeyHash], t: Threshold, scratch: &mut Scores, out: &mut Vec<(u64, u32)>) {
        self.index.query_threshold_into(hashes, t, scratch, out);
    }
}

/// Keys hashed and queried at a time by the batch functions: big enough to
/// keep the library's prefetch pipeline full, small enough that the
/// positions buffer (`k * 4` bytes per key) stays in L2 and that memory does
/// not grow with the batch.
const BATCH_CHUNK: usize = 2048;

fn set_last_error(message: &str) {
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
}

/// Runs `body` as an entry point: catches panics, turns failures into a
/// status and the thread's last error message.
fn entry(body: impl FnOnce() -> Result<(), Failure>) -> BloomsliceStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => BloomsliceStatus::Ok,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            set_last_error(&format!("internal error in bloomslice (please report it): {what}"));
            BloomsliceStatus::Internal
        }
    }
}

/// A byte slice from a C pointer and length (null is accepted for length 0).
///
/// # Safety
///
/// A non-null `ptr` must point to `len` readable bytes that stay valid and
/// unchanged for `'a`.
unsafe fn bytes<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is null but its length is {len}")));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!("{what} length {len} is too large")));
    }
    // SAFETY: `ptr` is non-null and, by the caller's contract, points to
    // `len` valid bytes; `len <= isize::MAX` was checked.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A slice of `T` from a C pointer and count (null is accepted for count 0).
///
/// # Safety
///
/// A non-null `ptr` must point to `len` initialised `T` that stay valid and
/// unchanged for `'a`.
unsafe fn slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    check_ptr(ptr, what)?;
    if len > isize::MAX as usize / size_of::<T>().max(1) {
        return Err(Failure::invalid(format!("{what} length {len} is too large")));
    }
    // SAFETY: `ptr` is non-null and aligned (checked above) and, by the
    // caller's contract, points to `len` valid elements; the byte size fits
    // `isize`.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A mutable slice from a C pointer and count (null is accepted for count 0).
///
/// # Safety
///
/// A non-null `ptr` must point to `len` writable `T` that nothing else
/// accesses for `'a`.
unsafe fn slice_mut<'a, T>(ptr: *mut T, len: usize, what: &str) -> Result<&'a mut [T], Failure> {
    if len == 0 {
        return Ok(&mut []);
    }
    check_ptr(ptr.cast_const(), what)?;
    if len > isize::MAX as usize / size_of::<T>().max(1) {
        return Err(Failure::invalid(format!("{what} length {len} is too large")));
    }
    // SAFETY: `ptr` is non-null and aligned (checked above) and, by the
    // caller's contract, points to `len` writable elements used by no one
    // else; the byte size fits `isize`.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

fn check_ptr<T>(ptr: *const T, what: &str) -> Result<(), Failure> {
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is null")));
    }
    if !ptr.is_aligned() {
        return Err(Failure::invalid(format!("{what} is not aligned to {} bytes", align_of::<T>())));
    }
    Ok(())
}

/// Writes `value` through an output pointer.
///
/// # Safety
///
/// A non-null `out` must be valid for a write of `T`.
unsafe fn write_out<T>(out: *mut T, value: T, what: &str) -> Result<(), Failure> {
    check_ptr(out.cast_const(), what)?;
    // SAFETY: non-null and aligned (checked), valid by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Runs `body` as an entry point on the index (or collection) behind a
/// handle, for reading.
///
/// # Safety
///
/// A non-null `index` must be a live handle from this library.
unsafe fn reading<H>(index: *const H, body: impl FnOnce(&H) -> Result<(), Failure>) -> BloomsliceStatus {
    entry(|| {
        check_ptr(index, "index")?;
        // SAFETY: a live handle by the caller's contract; readers may share it.
        body(unsafe { &*index })
    })
}

/// [`reading`] with the byte string `ptr` (`len` bytes, called `what` in
/// messages) checked too.
///
/// # Safety
///
/// As [`reading`]; a non-null `ptr` must point to `len` readable bytes.
unsafe fn reading_bytes<H>(
    index: *const H,
    (ptr, len, what): (*const u8, usize, &str),
    body: impl FnOnce(&H, &[u8]) -> Result<(), Failure>,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract.
    unsafe { reading(index, |h| body(h, bytes(ptr, len, what)?)) }
}

/// Runs `body` as an entry point that changes the index behind a handle,
/// with the set name `name` (`name_len` bytes) checked.
///
/// # Safety
///
/// A non-null `index` must be a live handle that no other call uses at the
/// same time; a non-null `name` must point to `name_len` bytes.
unsafe fn changing_named(
    index: *mut BloomsliceIndex,
    name: *const u8,
    name_len: usize,
    body: impl FnOnce(&mut BloomsliceIndex, &[u8]) -> Result<(), Failure>,
) -> BloomsliceStatus {
    entry(|| {
        check_ptr(index.cast_const(), "index")?;
        // SAFETY: a live handle used by this call alone (caller's contract).
        let h = unsafe { &mut *index };
        // SAFETY: forwarded caller contract.
        body(h, unsafe { bytes(name, name_len, "name") }?)
    })
}

/// A path from a NUL-terminated C string (bytes on Unix, UTF-8 elsewhere).
///
/// # Safety
///
/// A non-null `path` must point to a NUL-terminated string.
unsafe fn path_arg(path: *const c_char) -> Result<PathBuf, Failure> {
    if path.is_null() {
        return Err(Failure::invalid("path is null"));
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    if bytes.is_empty() {
        return Err(Failure::invalid("path is empty"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(Path::new(std::ffi::OsStr::from_bytes(bytes)).to_path_buf())
    }
    #[cfg(not(unix))]
    {
        let s = std::str::from_utf8(bytes).map_err(|_| Failure::invalid("path is not UTF-8"))?;
        Ok(PathBuf::from(s))
    }
}

/// Writes the `needed` length of an answer to `count_out`; when the
/// caller's buffer has room for only `cap`, the call fails with
/// [`BloomsliceStatus::BufferTooSmall`] and `message`.
///
/// # Safety
///
/// `count_out` must be checked (non-null, aligned) already and valid for a
/// write.
unsafe fn write_count(
    count_out: *mut usize,
    needed: usize,
    cap: usize,
    message: impl FnOnce() -> String,
) -> Result<(), Failure> {
    // SAFETY: checked and valid by the caller's contract.
    unsafe { count_out.write(needed) };
    if needed > cap {
        return Err(Failure { status: BloomsliceStatus::BufferTooSmall, message: message() });
    }
    Ok(())
}

/// Boxes a new handle into `*out`.
///
/// # Safety
///
/// `out` must be checked (non-null, aligned) already.
unsafe fn hand_out(out: *mut *mut BloomsliceIndex, index: SlicedIndex, names: SetNames, mapped: bool) {
    let handle = Box::into_raw(Box::new(BloomsliceIndex { index, names, mapped }));
    // SAFETY: `out` was checked by the caller and is valid for a write.
    unsafe { out.write(handle) };
}

/// The body of the `new` constructors: an empty index with the parameters
/// `params` makes, hashing byte keys with `seed`, into `*out`.
///
/// # Safety
///
/// `out` must be valid for a write of a pointer.
unsafe fn new_empty(
    out: *mut *mut BloomsliceIndex,
    seed: u64,
    params: impl FnOnce() -> Result<BloomParams, Error>,
) -> BloomsliceStatus {
    entry(|| {
        check_ptr(out.cast_const(), "out")?;
        let params = params()?.with_seed(seed);
        // SAFETY: `out` checked above.
        unsafe { hand_out(out, SlicedIndex::new(params), SetNames::new(), false) };
        Ok(())
    })
}

/// The body of the functions that open a file: the index `open` reads from
/// `path` into `*out`.
///
/// # Safety
///
/// `path` must be a NUL-terminated string; `out` valid for a write.
unsafe fn open_file(
    path: *const c_char,
    out: *mut *mut BloomsliceIndex,
    mapped: bool,
    open: impl FnOnce(PathBuf) -> Result<Loaded<SlicedIndex>, Error>,
) -> BloomsliceStatus {
    entry(|| {
        // SAFETY: forwarded caller contract.
        let path = unsafe { path_arg(path) }?;
        check_ptr(out.cast_const(), "out")?;
        let Loaded { index, names, .. } = open(path)?;
        // SAFETY: `out` checked above.
        unsafe { hand_out(out, index, names, mapped) };
        Ok(())
    })
}

/// The library version, as a static NUL-terminated string.
///
/// Thread safety: any thread, any time.
#[unsafe(no_mangle)]
pub extern "C" fn bloomslice_version() -> *const c_char {
    c"0.1.0".as_ptr()
}

/// The message of the last failed call on the calling thread (empty if no
/// call failed yet), as a NUL-terminated UTF-8 string. The pointer stays
/// valid until the next failing call on this thread; copy it to keep it.
/// A successful call does not clear it.
///
/// Thread safety: any thread; each thread has its own message.
#[unsafe(no_mangle)]
pub extern "C" fn bloomslice_last_error() -> *const c_char {
    // The CString lives in the thread-local until the next failure on this
    // thread replaces it, which is the documented lifetime of the pointer.
    LAST_ERROR.try_with(|e| e.borrow().as_ptr()).unwrap_or(c"".as_ptr())
}

/// Creates an empty index of filters with `m` bits and `k` hash functions;
/// byte keys are hashed with `seed`. On success `*out` receives the handle.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `out` must be valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_new(
    m: u64,
    k: u32,
    seed: u64,
    out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { new_empty(out, seed, || BloomParams::new(m, k)) }
}

/// Creates an empty index sized for `n_exp` keys per set at false-positive
/// rate `fp` (for example 10 000 and 0.01 give m = 100 992, k = 7); byte
/// keys are hashed with `seed`. On success `*out` receives the handle.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `out` must be valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_new_for_capacity(
    n_exp: u64,
    fp: f64,
    seed: u64,
    out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { new_empty(out, seed, || BloomParams::for_capacity(n_exp, fp)) }
}

/// Reads an index file into memory (fully verified; the index can be
/// changed and saved). On success `*out` receives the handle.
///
/// Errors: `BLOOMSLICE_STATUS_IO` when the file cannot be read,
/// `BLOOMSLICE_STATUS_CORRUPT_FILE` when it is not a valid index file.
///
/// Thread safety: any thread.
///
/// # Safety
///
/// `path` must be a NUL-terminated string; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_load(
    path: *const c_char,
    out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { open_file(path, out, false, Loaded::<SlicedIndex>::load) }
}

/// Maps an index file and queries it in place (zero copy; opening costs only
/// the small tables). With `verify` false the row checksums are not read
/// (a flipped bit in the rows may change answers, never crash); with
/// `verify` true the whole file is checked first. Changing a mapped index
/// copies the shards it touches into memory; the file is never written.
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
    path: *const c_char,
    verify: bool,
    out: *mut *mut BloomsliceIndex,
) -> BloomsliceStatus {
    let verify = if verify { Verify::Full } else { Verify::Deferred };
    let open = |path: PathBuf| {
        // SAFETY: the mapping contract of `open_mmap` (no truncation or
        // in-place write while mapped) is this function's documented
        // contract, which the caller accepts; bloomslice's own writers
        // replace files by rename.
        unsafe { Loaded::<SlicedIndex>::open_mmap(path, verify) }
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { open_file(path, out, true, open) }
}

/// Releases a handle. A null handle is ignored.
///
/// Thread safety: exclusive: no other call may use this handle at the same
/// time or after.
///
/// # Safety
///
/// `index` must be null or a live handle from this library, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_free(index: *mut BloomsliceIndex) {
    if index.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a live handle made by `Box::into_raw` in `hand_out`, freed
        // once (caller's contract).
        drop(unsafe { Box::from_raw(index) });
    }));
}

/// Fills `*out` with the index's parameters and size.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `index` must be a live handle; `out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_info(
    index: *const BloomsliceIndex,
    out: *mut BloomsliceInfo,
) -> BloomsliceStatus {
    let body = |h: &BloomsliceIndex| {
        let p = h.index.params();
        let info = BloomsliceInfo {
            m: p.m(),
            k: p.k(),
            seed: p.seed(),
            sets: h.index.len() as u64,
            memory_bytes: h.index.memory_bytes() as u64,
            mapped: h.mapped,
        };
        // SAFETY: forwarded caller contract.
        unsafe { write_out(out, info, "out") }
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, body) }
}

/// The set name of a new set, checked.
fn new_name<'a>(h: &BloomsliceIndex, name: &'a [u8]) -> Result<&'a [u8], Failure> {
    if name.is_empty() {
        return Err(Failure::invalid("set name is empty"));
    }
    if h.names.id(name).is_some() {
        return Err(Failure {
            status: BloomsliceStatus::AlreadyExists,
            message: format!("set {:?} is already in the index", String::from_utf8_lossy(name)),
        });
    }
    Ok(name)
}

/// The id of the set called `name`.
fn id_of(h: &impl Queried, name: &[u8]) -> Result<u64, Failure> {
    h.names().id(name).ok_or_else(|| Failure {
        status: BloomsliceStatus::NotFound,
        message: format!("no set named {:?} in the index", String::from_utf8_lossy(name)),
    })
}

/// Inserts `filter` as a new set called `name` under a fresh id.
fn add_filter(h: &mut BloomsliceIndex, name: &[u8], filter: &BloomFilter) -> Result<u64, Failure> {
    let name = new_name(h, name)?;
    let id = h.index.ids().max().map_or(0, |m| m + 1).max(h.names.next_free_id());
    h.index.insert_filter(id, filter)?;
    if let Err(e) = h.names.insert(id, name) {
        // Keep the index unchanged on failure.
        let _ = h.index.delete_filter(id);
        return Err(e.into());
    }
    Ok(id)
}

/// The body of the `add_*` functions: a new set called `name` holding the
/// filter `build` makes with the index's parameters; its id goes to
/// `*id_out` when that is not null.
///
/// # Safety
///
/// `index` must be a live handle used by no other call; `name` must point to
/// `name_len` bytes; `id_out` null or valid for a write.
unsafe fn add_set_with(
    index: *mut BloomsliceIndex,
    name: *const u8,
    name_len: usize,
    id_out: *mut u64,
    build: impl FnOnce(BloomParams) -> Result<BloomFilter, Failure>,
) -> BloomsliceStatus {
    let body = |h: &mut BloomsliceIndex, name: &[u8]| {
        let filter = build(*h.index.params())?;
        let id = add_filter(h, name, &filter)?;
        if !id_out.is_null() {
            // SAFETY: non-null, valid by the caller's contract.
            unsafe { write_out(id_out, id, "id_out") }?;
        }
        Ok(())
    };
    // SAFETY: forwarded caller contract.
    unsafe { changing_named(index, name, name_len, body) }
}

/// Adds a new set called `name` (`name_len` bytes, not empty, unique) holding
/// `n_keys` byte keys: key `i` is `keys[i]`, `key_lens[i]` bytes (a key may be
/// empty). On success `*id_out` (if not null) receives the set's id.
///
/// Errors: `BLOOMSLICE_STATUS_ALREADY_EXISTS` for a name in use,
/// `BLOOMSLICE_STATUS_INVALID_ARGUMENT` for bad pointers or an empty name.
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
    index: *mut BloomsliceIndex,
    name: *const u8,
    name_len: usize,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
    id_out: *mut u64,
) -> BloomsliceStatus {
    let build = |params: BloomParams| -> Result<BloomFilter, Failure> {
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let keys = unsafe { slice(keys, n_keys, "keys") }?;
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let lens = unsafe { slice(key_lens, n_keys, "key_lens") }?;
        let mut filter = BloomFilter::new(params)?;
        for (i, (&key, &len)) in keys.iter().zip(lens).enumerate() {
            // SAFETY: forwarded caller contract for `keys[i]`.
            let key = unsafe { bytes(key, len, &format!("keys[{i}]")) }?;
            filter.insert(key);
        }
        Ok(filter)
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { add_set_with(index, name, name_len, id_out, build) }
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
    index: *mut BloomsliceIndex,
    name: *const u8,
    name_len: usize,
    hashes: *const u64,
    n: usize,
    id_out: *mut u64,
) -> BloomsliceStatus {
    let build = |params: BloomParams| -> Result<BloomFilter, Failure> {
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let hashes = unsafe { slice(hashes, n, "hashes") }?;
        let mut filter = BloomFilter::new(params)?;
        for &hash in hashes {
            filter.insert_hash(KeyHash::from_u64(hash));
        }
        Ok(filter)
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { add_set_with(index, name, name_len, id_out, build) }
}

/// Adds a new set called `name` from a ready Bloom filter: `n_words`
/// little-endian-bit-order words (bit `i` of the filter is bit `i % 64` of
/// `words[i / 64]`), exactly `ceil(m / 64)` of them, with no bit set at or
/// beyond `m`. The filter must have been built with this index's `m`, `k`
/// and seed. On success `*id_out` (if not null) receives the set's id.
///
/// Thread safety: exclusive (changes the index).
///
/// # Safety
///
/// As [`bloomslice_index_add_set`]; `words` must point to `n_words` aligned
/// `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_add_filter(
    index: *mut BloomsliceIndex,
    name: *const u8,
    name_len: usize,
    words: *const u64,
    n_words: usize,
    id_out: *mut u64,
) -> BloomsliceStatus {
    let build = |params: BloomParams| -> Result<BloomFilter, Failure> {
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        let words = unsafe { slice(words, n_words, "words") }?;
        Ok(BloomFilter::from_words(params, words)?)
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { add_set_with(index, name, name_len, id_out, build) }
}

/// Removes the set called `name`.
///
/// Errors: `BLOOMSLICE_STATUS_NOT_FOUND` when no set has this name.
///
/// Thread safety: exclusive (changes the index).
///
/// # Safety
///
/// `index` must be a live handle used by no other call; `name` must point
/// to `name_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_remove_set(
    index: *mut BloomsliceIndex,
    name: *const u8,
    name_len: usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        changing_named(index, name, name_len, |h, name| {
            let id = id_of(h, name)?;
            h.index.delete_filter(id)?;
            h.names.remove(id);
            Ok(())
        })
    }
}

/// Saves the index with its names to `path`, atomically: a temporary file
/// is written, synced and renamed over `path`, so a failure never leaves a
/// partial file and processes that mapped the old file keep reading it.
///
/// Thread safety: concurrent with other readers (queries may run meanwhile).
///
/// # Safety
///
/// `index` must be a live handle; `path` a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_index_save(index: *const BloomsliceIndex, path: *const c_char) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, |h| Ok(persist::save(&path_arg(path)?, &h.index, &h.names)?)) }
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
    index: *const BloomsliceIndex,
    name: *const u8,
    name_len: usize,
    id_out: *mut u64,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading_bytes(index, (name, name_len, "name"), |h, name| write_out(id_out, id_of(h, name)?, "id_out")) }
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
    index: *const BloomsliceIndex,
    id: u64,
    buf: *mut u8,
    cap: usize,
    len_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, |h| copy_name(h, id, buf, cap, len_out)) }
}

/// The body of the `set_name` functions: the name of set `id` into `buf`.
///
/// # Safety
///
/// As [`bloomslice_index_set_name`].
unsafe fn copy_name(h: &impl Queried, id: u64, buf: *mut u8, cap: usize, len_out: *mut usize) -> Result<(), Failure> {
    check_ptr(len_out.cast_const(), "len_out")?;
    let name = h
        .names()
        .name(id)
        .ok_or_else(|| Failure { status: BloomsliceStatus::NotFound, message: format!("set {id} has no name") })?;
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
}

/// The 64-bit hash this index gives the byte key `key` (seeded xxh3-64):
/// [`bloomslice_query_hash`] with it answers as [`bloomslice_query`] with
/// the key. Lets a caller hash once and keep hashes.
///
/// Thread safety: concurrent with other readers.
///
/// # Safety
///
/// `index` must be a live handle; `key` must point to `key_len` bytes;
/// `hash_out` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bloomslice_hash_key(
    index: *const BloomsliceIndex,
    key: *const u8,
    key_len: usize,
    hash_out: *mut u64,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading_bytes(index, (key, key_len, "key"), |h, key| {
            write_out(hash_out, h.index.params().hash(key).h1, "hash_out")
        })
    }
}

/// Queries one hash; copies the matching ids (in index order) into
/// `ids_out` and their number into `*n_out`.
///
/// # Safety
///
/// As [`bloomslice_query`].
unsafe fn query_one(
    h: &impl Queried,
    hash: KeyHash,
    ids_out: *mut u64,
    cap: usize,
    n_out: *mut usize,
) -> Result<(), Failure> {
    check_ptr(n_out.cast_const(), "n_out")?;
    // SAFETY: forwarded caller contract.
    let out = unsafe { slice_mut(ids_out, cap, "ids_out") }?;
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.try_borrow_mut().map_err(|_| Failure::invalid("re-entrant call"))?;
        let ids = &mut scratch.ids;
        h.query_hash_into(hash, ids);
        let room = ids.len().min(cap);
        out[..room].copy_from_slice(&ids[..room]);
        // SAFETY: checked above; valid by the caller's contract.
        unsafe {
            write_count(n_out, ids.len(), cap, || format!("{} sets match, ids_out has room for {cap}", ids.len()))
        }
    })
}

/// Which sets may contain the byte key `key` (`key_len` bytes): their ids,
/// in index order, go to `ids_out` (room for `cap`) and their number to
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
    index: *const BloomsliceIndex,
    key: *const u8,
    key_len: usize,
    ids_out: *mut u64,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading_bytes(index, (key, key_len, "key"), |h, key| {
            query_one(h, h.index.params().hash(key), ids_out, cap, n_out)
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
    index: *const BloomsliceIndex,
    hash: u64,
    ids_out: *mut u64,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, |h| query_one(h, KeyHash::from_u64(hash), ids_out, cap, n_out)) }
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
        n: usize,
        ids_out: *mut u64,
        ids_cap: usize,
        offsets_out: *mut usize,
        total_out: *mut usize,
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
        self,
        h: &impl Queried,
        mut hash_into: impl FnMut(usize, usize, &mut Vec<KeyHash>) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let BatchOut { n, ids_out, offsets, total_out } = self;
        let total = SCRATCH.with(|scratch| {
            let mut scratch = scratch.try_borrow_mut().map_err(|_| Failure::invalid("re-entrant call"))?;
            let Scratch { hashes, chunk, .. } = &mut *scratch;
            let mut total = 0usize;
            offsets[0] = 0;
            let mut start = 0;
            while start < n {
                let end = (start + BATCH_CHUNK).min(n);
                hashes.clear();
                hash_into(start, end, hashes)?;
                // One copy per chunk: per-key copies of a few ids each cost a
                // memcpy call per key.
                let (ids, ends) = h.query_chunk(hashes, chunk);
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
            Ok::<_, Failure>(total)
        })?;
        let cap = ids_out.len();
        // SAFETY: checked in `new`; valid by the caller's contract.
        unsafe {
            write_count(total_out, total, cap, || format!("the batch matched {total} ids, ids_out has room for {cap}"))
        }
    }
}

/// Queries a batch of `n_keys` byte keys (`keys[i]`, `key_lens[i]` bytes).
/// Results use the CSR layout: the ids (index order) of key `i` are
/// `ids_out[offsets_out[i] .. offsets_out[i + 1]]`; `offsets_out` receives
/// `n_keys + 1` entries and `*total_out` the total number of ids. When the
/// total exceeds `ids_cap`, the offsets and `*total_out` are still complete,
/// the first `ids_cap` ids are written, and the call returns
/// `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL`: call again with a buffer of
/// `*total_out` ids. Keys are hashed and queried in chunks with prefetching
/// (the library's `query_batch`); nothing is allocated once the thread's
/// buffers are warm.
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
    index: *const BloomsliceIndex,
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
        reading(index, |h| {
            let keys = byte_keys((keys, key_lens, n_keys))?;
            batch_of_keys(h, &keys, BatchOut::new(n_keys, ids_out, ids_cap, offsets_out, total_out)?)
        })
    }
}

/// The byte keys `keys[i]` (`key_lens[i]` bytes, `n_keys` of them) of a
/// call, every pointer checked before the first key is used, so a bad
/// pointer fails the call without partial output.
///
/// # Safety
///
/// `keys` and `key_lens` must point to `n_keys` elements, each `keys[i]` to
/// `key_lens[i]` bytes, valid and unchanged for `'a`.
unsafe fn byte_keys<'a>(
    (keys, key_lens, n_keys): (*const *const u8, *const usize, usize),
) -> Result<Vec<&'a [u8]>, Failure> {
    // SAFETY: forwarded caller contract.
    let keys = unsafe { slice(keys, n_keys, "keys") }?;
    // SAFETY: forwarded caller contract.
    let lens = unsafe { slice(key_lens, n_keys, "key_lens") }?;
    keys.iter()
        .zip(lens)
        .enumerate()
        .map(|(i, (&key, &len))| {
            // SAFETY: forwarded caller contract for `keys[i]`.
            unsafe { bytes(key, len, "keys[i]") }.map_err(|e| Failure::invalid(format!("key {i}: {}", e.message)))
        })
        .collect()
}

/// The body of the batch functions of byte keys: `keys` answered into
/// `out`.
fn batch_of_keys(h: &impl Queried, keys: &[&[u8]], out: BatchOut<'_>) -> Result<(), Failure> {
    let seed = h.seed();
    out.run(h, |start, end, hashes| {
        hashes.extend(keys[start..end].iter().map(|key| KeyHash::from_bytes(key, seed)));
        Ok(())
    })
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
    index: *const BloomsliceIndex,
    hashes: *const u64,
    n: usize,
    ids_out: *mut u64,
    ids_cap: usize,
    offsets_out: *mut usize,
    total_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe {
        reading(index, |h| {
            let hashes = slice(hashes, n, "hashes")?;
            batch_of_hashes(h, hashes, BatchOut::new(n, ids_out, ids_cap, offsets_out, total_out)?)
        })
    }
}

/// The body of the batch functions of hashes: `hashes` answered into
/// `out`.
fn batch_of_hashes(h: &impl Queried, hashes: &[u64], out: BatchOut<'_>) -> Result<(), Failure> {
    out.run(h, |start, end, chunk| {
        chunk.extend(hashes[start..end].iter().map(|&x| KeyHash::from_u64(x)));
        Ok(())
    })
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
    h: &impl Scored,
    keys: (*const *const u8, *const usize, usize),
    (ids_out, counts_out, cap, n_out): (*mut u64, *mut u32, usize, *mut usize),
    threshold: Option<Threshold>,
) -> Result<(), Failure> {
    // SAFETY: forwarded caller contract.
    let keys = unsafe { byte_keys(keys) }?;
    // SAFETY: forwarded caller contract.
    let ids = unsafe { slice_mut(ids_out, cap, "ids_out") }?;
    // SAFETY: forwarded caller contract.
    let counts = unsafe { slice_mut(counts_out, cap, "counts_out") }?;
    check_ptr(n_out.cast_const(), "n_out")?;
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.try_borrow_mut().map_err(|_| Failure::invalid("re-entrant call"))?;
        let Scratch { hashes, scores, hits, .. } = &mut *scratch;
        let seed = h.seed();
        hashes.clear();
        hashes.extend(keys.iter().map(|key| KeyHash::from_bytes(key, seed)));
        match threshold {
            None => {
                h.score_into(hashes, scores);
                hits.clear();
                hits.extend(scores.iter());
            }
            Some(t) => h.query_threshold_into(hashes, t, scores, hits),
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
}

/// A threshold given as a fraction of the query's keys, checked.
fn fraction_of(fraction: f64) -> Result<Threshold, Failure> {
    Ok(Threshold::fraction(fraction)?)
}

/// Scores one query of `n_keys` byte keys (`keys[i]`, `key_lens[i]`
/// bytes) against every set of the index: for every set with a count
/// above 0 (how many of the keys it may contain; a key given twice counts
/// twice), its id goes to `ids_out` and its count to `counts_out`, by
/// ascending id, and their number to `*n_out`. When more than `cap` sets
/// have a count, the first `cap` are written, `*n_out` says how many there
/// are, and the call returns `BLOOMSLICE_STATUS_BUFFER_TOO_SMALL`; room
/// for every set ([`BloomsliceInfo::sets`]) is always enough.
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
    index: *const BloomsliceIndex,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
    ids_out: *mut u64,
    counts_out: *mut u32,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, |h| scored(h, (keys, key_lens, n_keys), (ids_out, counts_out, cap, n_out), None)) }
}

/// The sets of the index whose count for the query of `n_keys` byte keys
/// reaches `fraction` of them (the least whole count at or above
/// `fraction * n_keys`, a product within 1e-9 of a whole number taken as
/// that number): ids and counts by ascending id, into the buffers as for
/// [`bloomslice_score`]. A `fraction` whose least count is 0 reports every
/// set. Scoring stops reading sets that can no longer pass.
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
    index: *const BloomsliceIndex,
    keys: *const *const u8,
    key_lens: *const usize,
    n_keys: usize,
    fraction: f64,
    ids_out: *mut u64,
    counts_out: *mut u32,
    cap: usize,
    n_out: *mut usize,
) -> BloomsliceStatus {
    let body = |h: &BloomsliceIndex| {
        let threshold = fraction_of(fraction)?;
        // SAFETY: forwarded caller contract (see this function's `# Safety`).
        unsafe { scored(h, (keys, key_lens, n_keys), (ids_out, counts_out, cap, n_out), Some(threshold)) }
    };
    // SAFETY: forwarded caller contract (see this function's `# Safety`).
    unsafe { reading(index, body) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    pub(crate) fn last_error() -> String {
        // SAFETY: `bloomslice_last_error` returns a NUL-terminated string.
        unsafe { CStr::from_ptr(bloomslice_last_error()) }.to_string_lossy().into_owned()
    }

    pub(crate) fn new_index() -> *mut BloomsliceIndex {
        let mut h = ptr::null_mut();
        // SAFETY: `h` is a valid out pointer.
        assert_eq!(unsafe { bloomslice_index_new_for_capacity(1000, 0.01, 3, &mut h) }, BloomsliceStatus::Ok);
        h
    }

    pub(crate) fn add(h: *mut BloomsliceIndex, name: &str, keys: &[&[u8]]) -> u64 {
        let ptrs: Vec<*const u8> = keys.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
        let mut id = u64::MAX;
        // SAFETY: all pointers describe live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_index_add_set(h, name.as_ptr(), name.len(), ptrs.as_ptr(), lens.as_ptr(), keys.len(), &mut id)
        };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        id
    }

    pub(crate) fn query(h: *const BloomsliceIndex, key: &[u8]) -> Vec<u64> {
        let mut ids = vec![0u64; 16];
        let mut n = 0;
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe { bloomslice_query(h, key.as_ptr(), key.len(), ids.as_mut_ptr(), ids.len(), &mut n) };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        ids.truncate(n);
        ids
    }

    /// `bloomslice_query_batch_hashes` into `ids` (room for `cap`) and
    /// `offsets`: the status and the total.
    fn batch_hashes(
        h: *const BloomsliceIndex,
        hashes: &[u64],
        ids: &mut [u64],
        cap: usize,
        offsets: &mut [usize],
    ) -> (BloomsliceStatus, usize) {
        assert!(cap <= ids.len() && offsets.len() > hashes.len());
        let mut total = 0;
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_query_batch_hashes(
                h,
                hashes.as_ptr(),
                hashes.len(),
                ids.as_mut_ptr(),
                cap,
                offsets.as_mut_ptr(),
                &mut total,
            )
        };
        (st, total)
    }

    #[test]
    fn build_query_remove_and_batch_agree_with_the_library() {
        let h = new_index();
        let a = add(h, "a", &[b"apple", b"pear", b""]);
        let b = add(h, "b", &[b"pear", b"plum"]);
        assert_ne!(a, b);
        assert_eq!(query(h, b"apple"), vec![a]);
        let mut both = query(h, b"pear");
        both.sort_unstable();
        assert_eq!(both, vec![a, b]);
        assert!(query(h, b"").contains(&a));

        // The batch of byte keys and of hashes answer as single queries do.
        let keys: Vec<Vec<u8>> = (0..5000u32).map(|i| format!("k{i}").into_bytes()).chain([b"pear".to_vec()]).collect();
        let ptrs: Vec<*const u8> = keys.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = keys.iter().map(Vec::len).collect();
        let mut ids = vec![0u64; 2 * keys.len()];
        let mut offsets = vec![0usize; keys.len() + 1];
        let mut total = 0;
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_query_batch(
                h,
                ptrs.as_ptr(),
                lens.as_ptr(),
                keys.len(),
                ids.as_mut_ptr(),
                ids.len(),
                offsets.as_mut_ptr(),
                &mut total,
            )
        };
        assert_eq!(st, BloomsliceStatus::Ok);
        let hashes: Vec<u64> = keys
            .iter()
            .map(|k| {
                let mut x = 0;
                // SAFETY: live buffers.
                assert_eq!(unsafe { bloomslice_hash_key(h, k.as_ptr(), k.len(), &mut x) }, BloomsliceStatus::Ok);
                x
            })
            .collect();
        let mut ids2 = vec![0u64; 2 * keys.len()];
        let mut offsets2 = vec![0usize; keys.len() + 1];
        let (st, total2) = batch_hashes(h, &hashes, &mut ids2, 2 * keys.len(), &mut offsets2);
        assert_eq!(st, BloomsliceStatus::Ok);
        assert_eq!((total, &offsets, &ids[..total]), (total2, &offsets2, &ids2[..total2]));
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(&ids[offsets[i]..offsets[i + 1]], query(h, key).as_slice(), "key {i}");
        }
        assert_eq!(offsets[keys.len()], total);

        // A short buffer: complete offsets and total, BUFFER_TOO_SMALL.
        let (st, total3) = batch_hashes(h, &hashes, &mut [0u64; 1], 0, &mut offsets2);
        assert_eq!(st, BloomsliceStatus::BufferTooSmall);
        assert_eq!(total3, total);
        assert_eq!(offsets2, offsets);

        // SAFETY: live handle and name.
        assert_eq!(unsafe { bloomslice_index_remove_set(h, b"a".as_ptr(), 1) }, BloomsliceStatus::Ok);
        assert_eq!(query(h, b"pear"), vec![b]);
        // SAFETY: live handle and name.
        assert_eq!(unsafe { bloomslice_index_remove_set(h, b"a".as_ptr(), 1) }, BloomsliceStatus::NotFound);
        assert!(last_error().contains("no set named"), "{}", last_error());
        // SAFETY: live handle, freed once.
        unsafe { bloomslice_index_free(h) };
    }

    #[test]
    fn scores_and_thresholds_of_an_index_are_the_librarys() {
        let h = new_index();
        let sets: Vec<Vec<Vec<u8>>> =
            (0..6).map(|i| (0..200).map(|k| format!("{}", i * 50 + k).into_bytes()).collect()).collect();
        for (i, keys) in sets.iter().enumerate() {
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            add(h, &format!("s{i}"), &refs);
        }
        let read = &sets[3][..120];
        let ptrs: Vec<*const u8> = read.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = read.iter().map(Vec::len).collect();
        // SAFETY: a live handle.
        let lib = unsafe { &(*h).index };
        let (mut ids, mut counts, mut n) = ([0u64; 6], [0u32; 6], 0);
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_score(h, ptrs.as_ptr(), lens.as_ptr(), 120, ids.as_mut_ptr(), counts.as_mut_ptr(), 6, &mut n)
        };
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        let mut scores = Scores::new();
        lib.score_into(read, &mut scores);
        let pairs: Vec<(u64, u32)> = ids[..n].iter().copied().zip(counts[..n].iter().copied()).collect();
        assert_eq!(pairs, scores.iter().collect::<Vec<_>>());
        for fraction in [0.0, 0.5, 0.9, 1.0] {
            // SAFETY: live buffers of the stated lengths.
            let st = unsafe {
                bloomslice_query_threshold(
                    h,
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    120,
                    fraction,
                    ids.as_mut_ptr(),
                    counts.as_mut_ptr(),
                    6,
                    &mut n,
                )
            };
            assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
            let pairs: Vec<(u64, u32)> = ids[..n].iter().copied().zip(counts[..n].iter().copied()).collect();
            assert_eq!(pairs, lib.query_threshold(read, Threshold::fraction(fraction).unwrap()), "{fraction}");
        }
        // Set 3 holds every key read (the fraction 1.0 answer above).
        assert!(pairs_of(&ids, &counts, n).contains(&(3, 120)));
        // A short buffer reports how many sets there are; a bad fraction is an error.
        // SAFETY: live buffers of the stated lengths.
        unsafe {
            let st = bloomslice_score(
                h,
                ptrs.as_ptr(),
                lens.as_ptr(),
                120,
                ids.as_mut_ptr(),
                counts.as_mut_ptr(),
                1,
                &mut n,
            );
            assert_eq!((st, n), (BloomsliceStatus::BufferTooSmall, scores.iter().count()));
            let st = bloomslice_query_threshold(
                h,
                ptrs.as_ptr(),
                lens.as_ptr(),
                120,
                1.5,
                ids.as_mut_ptr(),
                counts.as_mut_ptr(),
                6,
                &mut n,
            );
            assert_eq!(st, BloomsliceStatus::InvalidArgument);
            bloomslice_index_free(h);
        }
    }

    fn pairs_of(ids: &[u64], counts: &[u32], n: usize) -> Vec<(u64, u32)> {
        ids[..n].iter().copied().zip(counts[..n].iter().copied()).collect()
    }

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let status = entry(|| panic!("boom"));
        assert_eq!(status, BloomsliceStatus::Internal);
        assert!(last_error().contains("internal error") && last_error().contains("boom"), "{}", last_error());
        assert_eq!(entry(|| Err(Failure::invalid("a\0b"))), BloomsliceStatus::InvalidArgument);
        assert_eq!(last_error(), "a\\0b");
    }

    #[test]
    fn bad_arguments_are_errors_not_crashes() {
        let h = new_index();
        let mut n = 0;
        let mut out = ptr::null_mut();
        // SAFETY: every pointer below is null, misaligned on purpose or
        // live; the functions must reject the bad ones without reading them.
        unsafe {
            assert_eq!(
                bloomslice_query(ptr::null(), b"x".as_ptr(), 1, ptr::null_mut(), 0, &mut n),
                BloomsliceStatus::InvalidArgument
            );
            assert!(last_error().contains("index is null"));
            assert_eq!(
                bloomslice_query(h, ptr::null(), 3, ptr::null_mut(), 0, &mut n),
                BloomsliceStatus::InvalidArgument
            );
            assert_eq!(
                bloomslice_query(h, b"x".as_ptr(), 1, ptr::null_mut(), 0, ptr::null_mut()),
                BloomsliceStatus::InvalidArgument
            );
            assert_eq!(bloomslice_index_new(0, 3, 0, &mut out), BloomsliceStatus::InvalidArgument);
            assert!(last_error().contains("m = 0"), "{}", last_error());
            assert_eq!(bloomslice_index_new_for_capacity(10, 1.5, 0, &mut out), BloomsliceStatus::InvalidArgument);
            assert_eq!(bloomslice_index_new(64, 3, 0, ptr::null_mut()), BloomsliceStatus::InvalidArgument);
            assert_eq!(bloomslice_index_load(ptr::null(), &mut out), BloomsliceStatus::InvalidArgument);
            assert_eq!(bloomslice_index_load(c"/nonexistent/x.bsi".as_ptr(), &mut out), BloomsliceStatus::Io);
            assert!(out.is_null());
            assert_eq!(
                bloomslice_index_add_set(h, b"".as_ptr(), 0, ptr::null(), ptr::null(), 0, ptr::null_mut()),
                BloomsliceStatus::InvalidArgument
            );
            let storage = [0u64; 2];
            let misaligned = storage.as_ptr().cast::<u8>().wrapping_add(1).cast::<u64>();
            assert_eq!(
                bloomslice_query_batch_hashes(h, misaligned, 1, ptr::null_mut(), 0, ptr::null_mut(), &mut n),
                BloomsliceStatus::InvalidArgument
            );
            assert!(last_error().contains("aligned"), "{}", last_error());
            let words = [0u64; 3];
            assert_eq!(
                bloomslice_index_add_filter(h, b"f".as_ptr(), 1, words.as_ptr(), 3, ptr::null_mut()),
                BloomsliceStatus::InvalidArgument
            );
            assert!(last_error().contains("words"), "{}", last_error());
            bloomslice_index_free(ptr::null_mut());
            bloomslice_index_free(h);
        }
    }

    #[test]
    fn save_load_and_map_answer_alike_and_corrupt_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bsi");
        let cpath = CString::new(path.to_str().unwrap()).unwrap();
        let h = new_index();
        let a = add(h, "a", &[b"one", b"two"]);
        let mut loaded = ptr::null_mut();
        let mut mapped = ptr::null_mut();
        // SAFETY: live handles, NUL-terminated paths, valid out pointers.
        unsafe {
            assert_eq!(bloomslice_index_save(h, cpath.as_ptr()), BloomsliceStatus::Ok);
            assert_eq!(bloomslice_index_load(cpath.as_ptr(), &mut loaded), BloomsliceStatus::Ok);
            assert_eq!(bloomslice_index_open_mapped(cpath.as_ptr(), true, &mut mapped), BloomsliceStatus::Ok);
            let mut info = BloomsliceInfo::default();
            assert_eq!(bloomslice_index_info(mapped, &mut info), BloomsliceStatus::Ok);
            assert_eq!((info.m, info.k, info.seed, info.sets, info.mapped), (10112, 7, 3, 1, true));
            let mut id = 0;
            assert_eq!(bloomslice_index_set_id(loaded, b"a".as_ptr(), 1, &mut id), BloomsliceStatus::Ok);
            assert_eq!(id, a);
            let mut name = [0u8; 4];
            let mut len = 0;
            assert_eq!(bloomslice_index_set_name(mapped, a, name.as_mut_ptr(), 4, &mut len), BloomsliceStatus::Ok);
            assert_eq!(&name[..len], b"a");
            assert_eq!(
                bloomslice_index_set_name(mapped, a, name.as_mut_ptr(), 0, &mut len),
                BloomsliceStatus::BufferTooSmall
            );
            assert_eq!(len, 1);
        }
        for key in [&b"one"[..], b"two", b"three"] {
            assert_eq!(query(loaded, key), query(h, key));
            assert_eq!(query(mapped, key), query(h, key));
        }
        let bad_path = dir.path().join("bad.bsi");
        std::fs::write(&bad_path, b"definitely not an index file, but long enough to have a header of some sort......")
            .unwrap();
        let cpath = CString::new(bad_path.to_str().unwrap()).unwrap();
        let mut bad = ptr::null_mut();
        // SAFETY: as above.
        unsafe {
            assert_eq!(bloomslice_index_load(cpath.as_ptr(), &mut bad), BloomsliceStatus::CorruptFile);
            assert!(last_error().contains("magic"), "{}", last_error());
            assert_eq!(bloomslice_index_open_mapped(cpath.as_ptr(), false, &mut bad), BloomsliceStatus::CorruptFile);
            assert!(bad.is_null());
            for handle in [h, loaded, mapped] {
                bloomslice_index_free(handle);
            }
        }
    }
}

//! # bloomslice C ABI
//!
//! A C interface to [`bloomslice`] for services written in C, C++, Go or
//! Java: one opaque [`BloomsliceIndex`] handle for any index, keys as byte
//! pointers plus lengths (or the caller's own 64-bit hashes), answers
//! written into caller buffers, and errors as [`BloomsliceStatus`] return
//! codes with a thread-local message ([`bloomslice_last_error`]).
//!
//! The header `include/bloomslice.h` is generated from this file and the
//! modules it declares by `cbindgen` (`tests/header.rs` checks that the
//! committed copy is up to date).
//!
//! # One handle, four layouts
//!
//! A handle holds one of the indexes of the library ([`BloomsliceLayout`]),
//! and every read function (query, batch, score, threshold, names, info)
//! answers alike on each, written once over `bloomslice::ReadIndex`:
//!
//! - **sets sized from the data** (`bloomslice::SetIndex`, the default):
//!   each set's filter sized from its own keys at one false-positive rate,
//!   in size-classed parts. Made by [`bloomslice_index_build`] (the layout
//!   chosen from all the sets' sizes) or [`bloomslice_index_new`], or
//!   opened from a collection file. A set that outgrows its filter gains
//!   one in a larger part ([`bloomslice_index_add_keys`]).
//! - **one filter length** (`bloomslice::SlicedIndex`): every filter of
//!   `m` bits and `k` hash functions. Made by
//!   [`bloomslice_index_new_sliced`] or
//!   [`bloomslice_index_new_sliced_for_capacity`], or opened from an index
//!   file; it also takes ready filters ([`bloomslice_index_add_filter`]).
//! - **a manifest's shard files** (`bloomslice::sharded::ShardedIndex`),
//!   opened with [`bloomslice_index_open_manifest`] and queried as the
//!   unsplit index would be. It is read-only: change it with the CLI
//!   (`bloomslice add`, `remove`) or the Python package and open it again.
//! - **levels** (`bloomslice::LevelIndex`): large sets split into pieces,
//!   small ones merged into columns above their own filters, so an absent
//!   key mostly stops at the top level. Opened from a level index file
//!   (written by `bloomslice build --levels`, the Python package or the
//!   Rust library). Sets added, grown or removed
//!   ([`bloomslice_index_add_set`], [`bloomslice_index_add_keys`],
//!   [`bloomslice_index_remove_set`]) go to flat sets beside the levels
//!   until the index is built again; [`bloomslice_index_save`] writes a
//!   level index file with them.
//!
//! [`bloomslice_index_load`] and [`bloomslice_index_open_mapped`] open
//! every kind of file as the layout it was saved from. A write a layout
//! does not support returns [`BloomsliceStatus::Unsupported`].
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
//! # Scores
//!
//! [`bloomslice_score`] and [`bloomslice_query_threshold`] score one query
//! of many keys against every set: how many of the keys each set may
//! contain, and the sets that reach a fraction of them.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use bloomslice::sharded::ShardedIndex;
use bloomslice::{Error, LevelIndex, ReadIndex, SetIndex, SetNames, SlicedIndex};

mod files;
mod open;
mod read;
#[cfg(test)]
mod tests;
mod write;

pub use open::{
    bloomslice_index_build, bloomslice_index_load, bloomslice_index_new, bloomslice_index_new_sliced,
    bloomslice_index_new_sliced_for_capacity, bloomslice_index_open_manifest, bloomslice_index_open_mapped,
};
pub use read::{
    bloomslice_hash_key, bloomslice_index_contains, bloomslice_index_info, bloomslice_index_len,
    bloomslice_index_set_id, bloomslice_index_set_name, bloomslice_query, bloomslice_query_batch,
    bloomslice_query_batch_hashes, bloomslice_query_hash, bloomslice_query_threshold, bloomslice_score,
};
pub use write::{
    bloomslice_index_add_filter, bloomslice_index_add_keys, bloomslice_index_add_set, bloomslice_index_add_set_hashes,
    bloomslice_index_remove_set, bloomslice_index_save,
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
    /// version, truncated, checksum mismatch or inconsistent tables; or a
    /// manifest that is invalid or disagrees with its files.
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
    /// The index's layout does not support this change: a manifest's shard
    /// files are read-only, and only an index of one filter length takes a
    /// ready filter.
    Unsupported = 9,
}

/// The layout of the index behind a handle (see the crate documentation).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BloomsliceLayout {
    /// Sets each sized from their own keys, in size-classed parts.
    #[default]
    Sets = 0,
    /// Every filter of one length (`m` bits, `k` hash functions).
    Sliced = 1,
    /// The shard files of a manifest, queried as one index; read-only.
    Sharded = 2,
    /// Levels of filters over the sets (a level index file), with the sets
    /// written since the build beside them.
    Levels = 3,
}

/// An index of Bloom filters with names for its sets, of any layout.
/// Opaque: create it with [`bloomslice_index_build`],
/// [`bloomslice_index_new`], [`bloomslice_index_new_sliced`],
/// [`bloomslice_index_new_sliced_for_capacity`], [`bloomslice_index_load`],
/// [`bloomslice_index_open_mapped`] or [`bloomslice_index_open_manifest`],
/// and release it with [`bloomslice_index_free`].
pub struct BloomsliceIndex {
    engine: Engine,
    /// The set names of the `Sets`, `Sliced` and `Levels` layouts (a
    /// sharded index keeps its files' names itself; see
    /// [`BloomsliceIndex::names`]).
    names: SetNames,
    /// Opened from a mapped file (or mapped shard files).
    mapped: bool,
}

/// The index behind a handle. Reads go through [`Engine::read`]; the
/// variants differ only in what they can change and how they are saved.
enum Engine {
    Sets(SetIndex),
    Sliced(SlicedIndex),
    Sharded(ShardedIndex),
    Levels(LevelIndex),
}

// Many C threads read one handle at once.
const _: () = {
    const fn shared_between_threads<T: Send + Sync>() {}
    shared_between_threads::<BloomsliceIndex>();
};

impl Engine {
    /// The index's read side, the same for every layout.
    fn read(&self) -> &(dyn ReadIndex + Send + Sync) {
        match self {
            Engine::Sets(sets) => sets,
            Engine::Sliced(index) => index,
            Engine::Sharded(sharded) => sharded,
            Engine::Levels(levels) => levels,
        }
    }

    fn layout(&self) -> BloomsliceLayout {
        match self {
            Engine::Sets(_) => BloomsliceLayout::Sets,
            Engine::Sliced(_) => BloomsliceLayout::Sliced,
            Engine::Sharded(_) => BloomsliceLayout::Sharded,
            Engine::Levels(_) => BloomsliceLayout::Levels,
        }
    }
}

impl BloomsliceIndex {
    fn new(engine: Engine, names: SetNames, mapped: bool) -> Self {
        BloomsliceIndex { engine, names, mapped }
    }

    fn read(&self) -> &(dyn ReadIndex + Send + Sync) {
        self.engine.read()
    }

    fn names(&self) -> &SetNames {
        match &self.engine {
            Engine::Sharded(sharded) => sharded.names(),
            _ => &self.names,
        }
    }
}

/// Facts about an index, filled by [`bloomslice_index_info`]. Fields that
/// do not apply to the index's layout are 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BloomsliceInfo {
    /// The index's layout.
    pub layout: BloomsliceLayout,
    /// Bits per filter (`Sliced` and `Sharded`; the sets of the `Sets`
    /// layout each have their own).
    pub m: u64,
    /// The target false-positive rate of a set in its first filter
    /// (`Sets`), or of every set (`Levels`).
    pub fp: f64,
    /// Hash functions per key.
    pub k: u32,
    /// Hash seed of byte keys.
    pub seed: u64,
    /// Number of sets.
    pub sets: u64,
    /// Number of parts that hold at least one filter (`Sets`; for
    /// `Sharded`, across all files; 1 for `Sliced`).
    pub parts: u64,
    /// Sets that outgrew their first filter and hold filters in several
    /// parts (`Sets`).
    pub grown_sets: u64,
    /// Number of shard files (`Sharded`).
    pub shards: u64,
    /// Bytes of memory the index holds: rows (mapped rows included) and
    /// maps.
    pub memory_bytes: u64,
    /// Whether the index was opened from a mapped file (its rows are read
    /// from the file until changed).
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

    fn not_found(message: impl Into<String>) -> Self {
        Failure { status: BloomsliceStatus::NotFound, message: message.into() }
    }

    fn unsupported(message: impl Into<String>) -> Self {
        Failure { status: BloomsliceStatus::Unsupported, message: message.into() }
    }

    /// The failure of a change to a manifest's shard files.
    fn read_only(verb: &str) -> Self {
        Failure::unsupported(format!(
            "cannot {verb}: a manifest's shard files are read-only here; change them with the CLI \
             (`bloomslice add`, `remove`) and open the manifest again"
        ))
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
            | Error::CorruptFile(_)
            | Error::Manifest(_) => BloomsliceStatus::CorruptFile,
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
}

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

/// The names of the arguments of byte keys, for messages.
const KEYS: [&str; 3] = ["keys", "key_lens", "key"];

/// The byte keys `keys[i]` (`key_lens[i]` bytes, `n_keys` of them) of a
/// call, every pointer checked before the first key is used, so a bad
/// pointer fails the call without partial output. `what` names the two
/// arrays and one element in messages (as [`KEYS`] does).
///
/// # Safety
///
/// `keys` and `key_lens` must point to `n_keys` elements, each `keys[i]` to
/// `key_lens[i]` bytes, valid and unchanged for `'a`.
unsafe fn byte_strings<'a>(
    (keys, key_lens, n_keys): (*const *const u8, *const usize, usize), [ptrs_name, lens_name, one]: [&str; 3],
) -> Result<Vec<&'a [u8]>, Failure> {
    // SAFETY: forwarded caller contract.
    let ptrs = unsafe { slice(keys, n_keys, ptrs_name) }?;
    // SAFETY: forwarded caller contract.
    let lens = unsafe { slice(key_lens, n_keys, lens_name) }?;
    ptrs.iter()
        .zip(lens)
        .enumerate()
        .map(|(i, (&ptr, &len))| {
            // SAFETY: forwarded caller contract for `keys[i]`.
            unsafe { bytes(ptr, len, one) }.map_err(|e| Failure::invalid(format!("{one} {i}: {}", e.message)))
        })
        .collect()
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
    count_out: *mut usize, needed: usize, cap: usize, message: impl FnOnce() -> String,
) -> Result<(), Failure> {
    // SAFETY: checked and valid by the caller's contract.
    unsafe { count_out.write(needed) };
    if needed > cap {
        return Err(Failure { status: BloomsliceStatus::BufferTooSmall, message: message() });
    }
    Ok(())
}

/// Runs `body` as an entry point on the index behind a handle, shared with
/// other readers.
///
/// # Safety
///
/// A non-null `index` must be a live handle from this library.
unsafe fn reading(
    index: *const BloomsliceIndex, body: impl FnOnce(&BloomsliceIndex) -> Result<(), Failure>,
) -> BloomsliceStatus {
    entry(|| {
        check_ptr(index, "index")?;
        // SAFETY: a live handle by the caller's contract; readers may share it.
        body(unsafe { &*index })
    })
}

/// Runs `body` as an entry point that changes the index behind a handle.
///
/// # Safety
///
/// A non-null `index` must be a live handle that no other call uses at the
/// same time.
unsafe fn changing(
    index: *mut BloomsliceIndex, body: impl FnOnce(&mut BloomsliceIndex) -> Result<(), Failure>,
) -> BloomsliceStatus {
    entry(|| {
        check_ptr(index.cast_const(), "index")?;
        // SAFETY: a live handle used by this call alone (caller's contract).
        body(unsafe { &mut *index })
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
        // SAFETY: a live handle made by `Box::into_raw` in `open::hand_out`,
        // freed once (caller's contract).
        drop(unsafe { Box::from_raw(index) });
    }));
}

//! # bloomslice for Python
//!
//! The extension module `bloomslice._native` behind the `bloomslice` Python
//! package: one class, `Index`, over any index the library has, a
//! [`SetIndex`] (sets sized from their own keys, the default), a
//! [`SlicedIndex`] of one filter length, a [`LevelIndex`] (its writes go
//! beside the levels until the next build), or the [`ShardedIndex`] of a
//! manifest's shard files (read-only), with its
//! [`SetNames`]. Every read
//! goes through the library's one read trait, [`ReadIndex`], so it is
//! written once; only changes and layout facts look at the kind. Files are
//! read and written in one place, the `files` module. The package's
//! `__init__.pyi` documents the Python surface.
//!
//! - The GIL is released while the library works (opening, building,
//!   inserting, querying, saving), so Python threads that query one index
//!   run in parallel. Reading Python objects (keys, names) needs the GIL;
//!   batches are therefore hashed a chunk at a time with the GIL held and
//!   queried with it released.
//! - Keys are never copied into an intermediate collection: a NumPy
//!   `uint64` array of hashes is read in place, and `bytes` keys are hashed
//!   straight from their buffers (`str` keys are encoded to UTF-8 once).
//! - Errors are exceptions: `ValueError`/`TypeError` for bad arguments,
//!   `OSError` (or its subclasses) for files, [`IndexError`] (a subclass of
//!   `OSError`) for corrupt files, `io.UnsupportedOperation` for a change
//!   of a manifest's shard files or a split of a level index. A panic would surface as PyO3's
//!   `PanicException`, never as a crash.
//! - `Index.save_shards` writes the library's one split
//!   ([`sharded::write_split`], as the CLI's `split`); `merge_answers`
//!   merges shard answers computed elsewhere (the Ray actors of
//!   `bloomslice.ray`) in the order of [`ShardedIndex`]
//!   ([`sharded::merge_answers`]).
//! - Multi-key scoring (`Index.score`) counts, per set, how many keys of
//!   one query it may contain ([`ReadIndex::score_hashes_into`] and
//!   [`ReadIndex::query_threshold_hashes_into`]), with the GIL released.

mod files;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use bloomslice::persist::FileInfo;
use bloomslice::persist::manifest::{Manifest, ManifestParams, ShardFile};
use bloomslice::sharded::{self, AnswerPart, PartIds, ShardedIndex};
use bloomslice::storage;
use bloomslice::{
    BatchResults, BloomFilter, BloomParams, Error, HashScheme, KeyHash, LayoutConfig, LevelConfig, LevelIndex,
    ReadIndex, Scores, SetIndex, SetNames, SlicedIndex, Threshold,
};
use numpy::{PyArray1, PyReadonlyArray1, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyOSError, PyPermissionError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PySequence, PyString};
use pyo3::{create_exception, import_exception};

create_exception!(
    bloomslice,
    IndexError,
    PyOSError,
    "A file that is not a valid bloomslice index: wrong magic bytes, unsupported version, truncated, \
     checksum mismatch or inconsistent tables. A subclass of OSError."
);

// Python's own `io.UnsupportedOperation` (a subclass of both `OSError` and
// `ValueError`): what a change of a read-only index raises.
import_exception!(io, UnsupportedOperation);

/// Keys hashed (with the GIL) and then queried (without it) at a time.
const CHUNK: usize = 4096;

/// A library error as the Python exception of its kind.
fn py_err(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
            std::io::ErrorKind::AlreadyExists => PyFileExistsError::new_err(message),
            _ => PyOSError::new_err(message),
        },
        Error::BadMagic
        | Error::UnsupportedVersion { .. }
        | Error::Truncated { .. }
        | Error::ChecksumMismatch { .. }
        | Error::CorruptFile(_)
        | Error::Manifest(_) => IndexError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// The bytes of a key or name: `bytes` as is, `str` as UTF-8; anything else
/// is a `TypeError`. Calls `f` on the bytes without copying `bytes`.
fn with_key_bytes<T>(obj: &Bound<'_, PyAny>, what: &str, f: impl FnOnce(&[u8]) -> T) -> PyResult<T> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let encoded = s.encode_utf8()?;
        return Ok(f(encoded.as_bytes()));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes or str, not {}",
        obj.get_type().name().map_or_else(|_| "?".to_owned(), |n| n.to_string())
    )))
}

fn name_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let name = with_key_bytes(obj, "a set name", <[u8]>::to_vec)?;
    if name.is_empty() {
        return Err(PyValueError::new_err("a set name must not be empty"));
    }
    Ok(name)
}

/// Filter parameters from the keyword arguments of `build`.
fn params_of(n_exp: u64, fp: f64, m: Option<u64>, k: Option<u32>, seed: u64) -> PyResult<BloomParams> {
    let params = match (m, k) {
        (Some(m), Some(k)) => BloomParams::new(m, k),
        (None, None) => BloomParams::for_capacity(n_exp, fp),
        _ => return Err(PyValueError::new_err("give both m and k, or neither (then n_exp and fp size the filters)")),
    };
    Ok(params.map_err(py_err)?.with_seed(seed))
}

/// Inserts every key of the Python iterable `keys` into `filter`: hashed a
/// chunk at a time with the GIL, inserted without it. Returns the number
/// of keys.
fn insert_keys(py: Python<'_>, filter: &mut BloomFilter, keys: &Bound<'_, PyAny>) -> PyResult<u64> {
    if keys.is_instance_of::<PyBytes>() || keys.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("keys must be an iterable of bytes or str, not a single bytes or str"));
    }
    if let Ok(array) = keys.cast::<PyUntypedArray>() {
        let hashes = hash_slice(array)?;
        let slice = contiguous(&hashes)?;
        py.detach(|| slice.iter().for_each(|&h| filter.insert_hash(KeyHash::from_u64(h))));
        return Ok(slice.len() as u64);
    }
    let params = *filter.params();
    let mut chunk: Vec<KeyHash> = Vec::with_capacity(CHUNK);
    let mut count = 0u64;
    for key in keys.try_iter()? {
        let key = key?;
        chunk.push(with_key_bytes(&key, "a key", |b| params.hash(b))?);
        if chunk.len() == CHUNK {
            count += CHUNK as u64;
            py.detach(|| chunk.iter().for_each(|&h| filter.insert_hash(h)));
            chunk.clear();
        }
    }
    count += chunk.len() as u64;
    py.detach(|| chunk.iter().for_each(|&h| filter.insert_hash(h)));
    Ok(count)
}

/// The hashes of the keys of the Python iterable `keys` under `seed`: a
/// NumPy `uint64` array of key hashes (taken as they are), or `bytes`/`str`
/// keys. A single `bytes` or `str` is a `TypeError`.
fn key_hashes(keys: &Bound<'_, PyAny>, seed: u64) -> PyResult<Vec<KeyHash>> {
    if keys.is_instance_of::<PyBytes>() || keys.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("keys must be an iterable of bytes or str, not a single bytes or str"));
    }
    if let Ok(array) = keys.cast::<PyUntypedArray>() {
        let hashes = hash_slice(array)?;
        return Ok(contiguous(&hashes)?.iter().map(|&h| KeyHash::from_u64(h)).collect());
    }
    let mut out = Vec::with_capacity(keys.len().unwrap_or(0));
    for key in keys.try_iter()? {
        out.push(with_key_bytes(&key?, "a key", |b| KeyHash::from_bytes(b, seed))?);
    }
    Ok(out)
}

/// The hashes of a NumPy array, read in place, or a `ValueError` when the
/// array is not contiguous.
fn contiguous<'a>(hashes: &'a PyReadonlyArray1<'_, u64>) -> PyResult<&'a [u64]> {
    hashes
        .as_slice()
        .map_err(|_| PyValueError::new_err("the hash array must be contiguous (use numpy.ascontiguousarray)"))
}

/// The `keys` argument of a batch call that is not a NumPy array: a
/// sequence of `bytes`/`str` keys. A single key is a `TypeError` saying
/// `one_key`.
fn key_sequence<'py>(keys: &Bound<'py, PyAny>, one_key: &'static str) -> PyResult<Bound<'py, PySequence>> {
    if keys.is_instance_of::<PyBytes>() || keys.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(one_key));
    }
    let seq = keys.cast::<PySequence>().map_err(|_| {
        PyTypeError::new_err("keys must be a list (or sequence) of bytes/str keys, or a NumPy uint64 array of hashes")
    })?;
    Ok(seq.clone())
}

/// Two vectors as a tuple of NumPy arrays (`(ids, offsets)`, `(ids, counts)`).
fn array_pair<'py, A: numpy::Element, B: numpy::Element>(
    py: Python<'py>,
    (a, b): (Vec<A>, Vec<B>),
) -> PyResult<Bound<'py, PyAny>> {
    (PyArray1::from_vec(py, a), PyArray1::from_vec(py, b)).into_pyobject(py).map(Bound::into_any)
}

/// A NumPy array as a 1-D `uint64` array of key hashes, or a `TypeError`.
fn hash_slice<'py>(array: &Bound<'py, PyUntypedArray>) -> PyResult<PyReadonlyArray1<'py, u64>> {
    array.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "a NumPy array of keys must be a 1-D array of uint64 hashes, not {}-D {}",
            array.ndim(),
            array.dtype()
        ))
    })
}

/// A set's name and the hashes of its keys.
type NamedKeys = (Vec<u8>, Vec<KeyHash>);

/// Reads a directory of text files: one set per file (named after the file),
/// one key per line (`\n` or `\r\n`, empty lines skipped); files without
/// keys are skipped. Sets come in file name order, as in the CLI's `build`,
/// each as the hashes of its keys under `seed`.
fn read_dir_sets(dir: &Path, seed: u64) -> PyResult<Vec<NamedKeys>> {
    let io = |what: &str, path: &Path, e: std::io::Error| {
        let message = format!("cannot {what} {}: {e}", path.display());
        match e.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
            _ => PyOSError::new_err(message),
        }
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io("read directory", dir, e))? {
        let entry = entry.map_err(|e| io("read directory", dir, e))?;
        if entry.file_type().map_err(|e| io("stat", &entry.path(), e))?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    let mut sets = Vec::with_capacity(files.len());
    let mut line = Vec::new();
    for path in files {
        let file = std::fs::File::open(&path).map_err(|e| io("open", &path, e))?;
        let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
        let mut hashes = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).map_err(|e| io("read", &path, e))? == 0 {
                break;
            }
            let key = line.strip_suffix(b"\n").unwrap_or(&line);
            let key = key.strip_suffix(b"\r").unwrap_or(key);
            if !key.is_empty() {
                hashes.push(KeyHash::from_bytes(key, seed));
            }
        }
        if !hashes.is_empty() {
            sets.push((file_name_bytes(&path), hashes));
        }
    }
    if sets.is_empty() {
        return Err(PyValueError::new_err(format!("{} has no files with keys: nothing to index", dir.display())));
    }
    Ok(sets)
}

#[cfg(unix)]
fn file_name_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.file_name().map_or_else(Vec::new, |n| n.as_bytes().to_vec())
}

#[cfg(not(unix))]
fn file_name_bytes(path: &Path) -> Vec<u8> {
    path.file_name().map_or_else(Vec::new, |n| n.to_string_lossy().into_owned().into_bytes())
}

/// A Python score threshold as a library [`Threshold`]: an `int` is a
/// minimum count (`>= 0`; above `u32::MAX` no set reaches it anyway), a
/// `float` a fraction of the query's keys in `[0, 1]`. `ValueError` for a
/// negative count or a fraction that is NaN or outside `[0, 1]`,
/// `TypeError` for anything else (`bool` included).
fn threshold_of(obj: &Bound<'_, PyAny>) -> PyResult<Threshold> {
    if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err("threshold must be an int (a count) or a float (a fraction), not bool"));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Threshold::fraction(obj.extract::<f64>()?).map_err(py_err);
    }
    match obj.extract::<i128>() {
        Ok(c) if c < 0 => Err(PyValueError::new_err(format!("threshold count must be >= 0, got {c}"))),
        Ok(c) => Ok(Threshold::count(u32::try_from(c).unwrap_or(u32::MAX))),
        Err(_) => Err(PyTypeError::new_err(format!(
            "threshold must be an int (a count) or a float (a fraction in [0, 1]), not {}",
            obj.get_type().name().map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))),
    }
}

/// One sorted list of set names per key of a CSR answer; each id's name
/// is made once.
fn names_per_key<'py>(py: Python<'py>, names: &SetNames, ids: &[u64], offsets: &[u64]) -> PyResult<Bound<'py, PyAny>> {
    let mut cache: HashMap<u64, String> = HashMap::new();
    let out = PyList::empty(py);
    for w in offsets.windows(2) {
        let key_ids = &ids[w[0] as usize..w[1] as usize];
        for &id in key_ids {
            cache.entry(id).or_insert_with(|| names.display(id));
        }
        let mut key_names: Vec<&str> = key_ids.iter().map(|id| cache[id].as_str()).collect();
        key_names.sort_unstable();
        out.append(PyList::new(py, key_names)?)?;
    }
    Ok(out.into_any())
}

/// A score answer `(ids, counts)` as a dict of set name to count, in name
/// order.
fn named_counts<'py>(py: Python<'py>, names: &SetNames, answer: &(Vec<u64>, Vec<u32>)) -> PyResult<Bound<'py, PyAny>> {
    let mut named: Vec<(String, u32)> =
        answer.0.iter().zip(&answer.1).map(|(&id, &c)| (names.display(id), c)).collect();
    named.sort_unstable();
    let d = PyDict::new(py);
    for (name, count) in named {
        d.set_item(name, count)?;
    }
    Ok(d.into_any())
}

/// Scores `hashes` against `index`: the sets whose count reaches
/// `threshold`, as `(ids, counts)` by ascending id. A set with a count of 0
/// is never reported, so a threshold whose least count is 0 gives every set
/// with a count above 0 (an unpruned [`ReadIndex::score_hashes_into`]).
fn score_hashes(index: &dyn ReadIndex, hashes: &[KeyHash], threshold: Threshold) -> (Vec<u64>, Vec<u32>) {
    let mut scores = Scores::new();
    let pairs: Vec<(u64, u32)> = if threshold.min_count(hashes.len()) == 0 {
        index.score_hashes_into(hashes, &mut scores);
        scores.iter().collect()
    } else {
        let mut out = Vec::new();
        index.query_threshold_hashes_into(hashes, threshold, &mut scores, &mut out);
        out
    };
    pairs.into_iter().unzip()
}

/// Ids a growth of an answer may add on the strength of the estimate alone
/// (64 MB of `u64`); beyond it, a growth adds at most what is held plus
/// twice the chunk (about doubling, as `Vec` grows). Untouched capacity
/// costs no memory and is trimmed at the end, but an early rate far above
/// the later one (the hot keys first) must not reserve, or fail to
/// reserve, far more than the answer will use.
const TRUSTED_ESTIMATE_IDS: usize = 1 << 23;

/// Appends a chunk's answers to CSR `ids` and `offsets` (one copy of the
/// ids per chunk, each through `id`), `keys_left` keys of the batch still
/// to come. When `ids` must grow, it is sized for the whole batch at the
/// rate of ids per key so far (plus 1/8; see [`TRUSTED_ESTIMATE_IDS`]), so
/// a batch usually allocates its answer once or twice.
fn append_csr<T>(
    results: &BatchResults,
    ids: &mut Vec<T>,
    offsets: &mut Vec<u64>,
    keys_left: usize,
    id: impl Fn(u64) -> T,
) {
    let (chunk_ids, ends) = results.flat();
    let base = ids.len() as u64;
    let need = chunk_ids.len();
    if ids.capacity() - ids.len() < need {
        let keys_done = offsets.len() - 1 + ends.len();
        let per_key = (ids.len() + need).div_ceil(keys_done.max(1));
        let rest = per_key.saturating_mul(keys_left).saturating_add(per_key.saturating_mul(keys_left) / 8);
        // At most the trusted amount more, or about doubling what is held.
        let cap = ids.len().saturating_add(need.saturating_mul(2)).max(TRUSTED_ESTIMATE_IDS);
        reserve_huge(ids, need.saturating_add(rest).min(cap).max(need));
    }
    ids.extend(chunk_ids.iter().map(|&i| id(i)));
    offsets.extend(ends.iter().map(|&end| base + end as u64));
}

/// Makes room in `v` for `additional` more elements, advising a large
/// buffer to be backed by huge pages before it is written
/// ([`storage::advise_huge_capacity`]): every answer handed to NumPy is
/// fresh memory.
fn reserve_huge<T>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() >= additional {
        return;
    }
    v.reserve_exact(additional);
    storage::advise_huge_capacity(v);
}

/// The error of a change asked of an index opened from the shard files of
/// a manifest.
fn read_only(what: &str) -> PyErr {
    UnsupportedOperation::new_err(format!(
        "cannot {what}: this index is the shard files of a manifest, opened read-only (change them with \
         bloomslice.collection_add and collection_remove, or RayIndex.add and remove; `bloomslice merge` \
         makes them one file again)"
    ))
}

/// The error of `save_shards` on a level index: shard files are
/// collection files, whose parts a level index does not have.
fn levels_not_split() -> PyErr {
    UnsupportedOperation::new_err(
        "cannot split a level index into shard files: shard files are collection files (sets in \
         size-classed parts), and a level index keeps its sets in levels; save it whole with save(), \
         or build the sets without levels=True to split them",
    )
}

/// The index an [`Index`] answers from. Every read goes through
/// [`Engine::reader`], the one read trait every index implements; only
/// changes, saving and facts about the layout look at the kind.
enum Engine {
    /// A [`SetIndex`]: sets each sized from their own keys, in size-classed
    /// parts (built without a size, or a collection file).
    Sized(SetIndex),
    /// One [`SlicedIndex`]: every filter has the same `m` (built with
    /// `n_exp`, or `m` and `k`, or an index file of one filter length).
    Fixed(SlicedIndex),
    /// The shard files of a manifest, read-only.
    Sharded(ShardedIndex),
    /// A [`LevelIndex`]: levels of filters over the sets (built with
    /// `levels=True`, or a level index file); its writes go to the flat
    /// sets beside the levels ([`LevelIndex::delta`]).
    Levels(LevelIndex),
}

/// `$call` on the index of a writable [`Engine`] (the same set verb on a
/// [`SlicedIndex`], a [`SetIndex`] or a [`LevelIndex`], so written once and
/// expanded for each), its error as a Python exception; an
/// `UnsupportedOperation` for the shard files of a manifest (`$what` says
/// which change).
macro_rules! write_set {
    ($engine:expr, $what:expr, |$index:ident| $call:expr) => {
        match $engine {
            Engine::Fixed($index) => $call,
            Engine::Sized($index) => $call,
            Engine::Levels($index) => $call,
            Engine::Sharded(_) => return Err(read_only($what)),
        }
        .map_err(py_err)
    };
}

impl Engine {
    /// The index, for every read.
    fn reader(&self) -> &dyn ReadIndex {
        match self {
            Engine::Sized(collection) => collection,
            Engine::Fixed(index) => index,
            Engine::Sharded(sharded) => sharded,
            Engine::Levels(levels) => levels,
        }
    }

    /// A `bloomslice.UnsupportedOperation` for a change of the shard files
    /// of a manifest (`what` says which), else nothing.
    fn check_writable(&self, what: &str) -> PyResult<()> {
        match self {
            Engine::Sharded(_) => Err(read_only(what)),
            _ => Ok(()),
        }
    }

    /// Adds set `id` holding `hashes`: a filter of the index's size, in
    /// the collection's part that holds its number of keys, or beside the
    /// levels.
    fn insert_set(&mut self, id: u64, hashes: &[KeyHash]) -> PyResult<()> {
        write_set!(self, "add a set", |index| index.insert_set(id, hashes))
    }

    /// Adds `hashes` to set `id`: into its filter, (a collection) filling
    /// its last filter and growing into a larger part past its capacity,
    /// or (levels) into a filter beside the levels.
    fn add_keys(&mut self, id: u64, hashes: &[KeyHash]) -> PyResult<()> {
        write_set!(self, "add keys", |index| index.add_keys(id, hashes))
    }

    fn remove_set(&mut self, id: u64) -> PyResult<()> {
        write_set!(self, "remove a set", |index| index.remove_set(id))
    }

    /// Replaces the keys of set `id` by `hashes` (a collection sizes the
    /// set again from them).
    fn replace_set(&mut self, id: u64, hashes: &[KeyHash]) -> PyResult<()> {
        write_set!(self, "update a set", |index| index.replace_set(id, hashes))
    }

    /// The filter layers: one index, the parts of a collection, or the
    /// parts of every file of a manifest (file after file); none for a
    /// level index, whose levels are its own.
    fn parts(&self) -> Vec<&SlicedIndex> {
        match self {
            Engine::Levels(_) => Vec::new(),
            Engine::Fixed(index) => vec![index],
            Engine::Sized(collection) => collection.parts().collect(),
            Engine::Sharded(sharded) => sharded.shards().iter().flat_map(|s| s.index.parts()).collect(),
        }
    }

    /// The target false-positive rate of sets sized from their keys
    /// (`None` for one filter length).
    fn fp(&self) -> Option<f64> {
        match self {
            Engine::Levels(levels) => Some(levels.p()),
            Engine::Fixed(_) => None,
            Engine::Sized(collection) => Some(collection.p()),
            Engine::Sharded(sharded) => sharded.shards().first().map(|s| s.index.p()),
        }
    }
}

/// Where an [`Index`]'s sets came from, to open them again.
enum Source {
    /// Built in this process.
    Built,
    /// An index or collection file, and what it said about itself.
    File(PathBuf, FileInfo),
    /// The manifest of shard files, and whether their checksums were
    /// compared with it.
    Manifest(PathBuf, bool),
}

/// What an [`Index`] guards with its lock.
struct Inner {
    engine: Engine,
    names: SetNames,
    source: Source,
    mapped: bool,
}

impl Inner {
    fn built(engine: Engine, names: SetNames) -> Self {
        Inner { engine, names, source: Source::Built, mapped: false }
    }

    /// Opens an index or collection file, or (a directory holding a
    /// manifest, or a `.json` file) the shard files of a manifest.
    fn open(path: PathBuf, mmap: bool, verify: bool) -> Result<Self, Error> {
        if files::is_manifest(&path) {
            return Self::open_shards(path, mmap, verify);
        }
        let (engine, names, info) = files::open(&path, mmap, verify)?;
        // A level index file is read out of its map whole: nothing stays
        // mapped.
        let mapped = mmap && !matches!(engine, Engine::Levels(_));
        Ok(Inner { engine, names, source: Source::File(path, info), mapped })
    }

    fn open_shards(path: PathBuf, mmap: bool, verify: bool) -> Result<Self, Error> {
        let sharded = files::open_shards(&path, mmap, verify)?;
        let names = sharded.names().clone();
        let source = Source::Manifest(sharded.manifest_path().to_path_buf(), verify);
        Ok(Inner { engine: Engine::Sharded(sharded), names, source, mapped: mmap })
    }

    fn next_id(&self) -> u64 {
        self.engine.reader().ids().last().map_or(0, |m| m + 1).max(self.names.next_free_id())
    }

    /// The id of the set called `name`, or a `ValueError`.
    fn id_of(&self, name: &[u8]) -> PyResult<u64> {
        self.names.id(name).filter(|&id| self.engine.reader().contains(id)).ok_or_else(|| {
            PyValueError::new_err(format!("no set named {:?} in the index", String::from_utf8_lossy(name)))
        })
    }

    /// Set names of `ids`, sorted (as the CLI prints them).
    fn sorted_names(&self, ids: &[u64]) -> Vec<String> {
        let mut names: Vec<String> = ids.iter().map(|&id| self.names.display(id)).collect();
        names.sort();
        names
    }
}

/// An index of named sets of keys, each stored as a Bloom filter; answers
/// "which sets may contain this key?" (no false negatives, a small rate of
/// false positives set by the filter parameters). One class over every
/// index the library has: built without a size, or opened from a
/// collection file, a [`SetIndex`] (each set sized from its own keys, in
/// size-classed parts); built with `n_exp` or `m` and `k`, a
/// [`SlicedIndex`] of one filter length; built with `levels=True`, or
/// opened from a level index file, a [`LevelIndex`] (writes go beside its
/// levels until the next build); opened
/// from a manifest, the [`ShardedIndex`] of its shard files (read-only).
/// Every read is written once, over [`ReadIndex`].
///
/// Queries may run from many Python threads at once (the GIL is released
/// while the index works); changes wait for running queries.
#[pyclass(frozen, module = "bloomslice")]
struct Index {
    inner: RwLock<Inner>,
}

impl Index {
    fn new(inner: Inner) -> Self {
        Index { inner: RwLock::new(inner) }
    }

    /// Read access. A lock poisoned by a panic still holds a consistent
    /// index: every library operation leaves it unchanged on failure.
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `change(engine, id, hashes)` on the set called `name` with `keys`
    /// hashed under the index's seed, under the write lock and without the
    /// GIL; an `UnsupportedOperation` for a read-only index (`what` says
    /// which change).
    fn change_keys(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        keys: &Bound<'_, PyAny>,
        what: &str,
        change: impl FnOnce(&mut Engine, u64, &[KeyHash]) -> PyResult<()> + Send,
    ) -> PyResult<()> {
        let name = name_bytes(name)?;
        let seed = {
            let inner = self.read();
            inner.engine.check_writable(what)?;
            inner.engine.reader().seed()
        };
        let hashes = key_hashes(keys, seed)?;
        py.detach(|| {
            let mut inner = self.write();
            let id = inner.id_of(&name)?;
            change(&mut inner.engine, id, &hashes)
        })
    }

    /// The hash of a `bytes`/`str` key under the index's seed.
    fn key_hash(&self, key: &Bound<'_, PyAny>) -> PyResult<KeyHash> {
        let inner = self.read();
        with_key_bytes(key, "a key", |b| inner.engine.reader().hash_bytes(b))
    }

    /// The hashes of `keys`, a NumPy `uint64` array of hashes (read in
    /// place) or a sequence of `bytes`/`str` keys (`one_key` is the
    /// `TypeError` for a single key).
    fn hashes(&self, keys: &Bound<'_, PyAny>, one_key: &'static str) -> PyResult<Vec<KeyHash>> {
        if let Ok(array) = keys.cast::<PyUntypedArray>() {
            let hashes = hash_slice(array)?;
            return Ok(contiguous(&hashes)?.iter().map(|&h| KeyHash::from_u64(h)).collect());
        }
        let seq = key_sequence(keys, one_key)?;
        let seed = self.read().engine.reader().seed();
        (0..seq.len()?).map(|i| with_key_bytes(&seq.get_item(i)?, "a key", |b| KeyHash::from_bytes(b, seed))).collect()
    }

    /// Queries `n` keys a chunk at a time: `hash_chunk(start, end, out)`
    /// hashes keys `start..end` (with the GIL), the chunk is queried with
    /// the GIL released. Returns ids and CSR offsets (`n + 1`).
    fn batch(
        &self,
        py: Python<'_>,
        n: usize,
        mut hash_chunk: impl FnMut(usize, usize, &mut Vec<KeyHash>) -> PyResult<()>,
    ) -> PyResult<(Vec<u64>, Vec<u64>)> {
        let mut ids = Vec::new();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u64);
        let mut hashes = Vec::with_capacity(CHUNK.min(n));
        let mut results = BatchResults::new();
        let mut start = 0;
        while start < n {
            let end = (start + CHUNK).min(n);
            hashes.clear();
            hash_chunk(start, end, &mut hashes)?;
            py.detach(|| {
                self.read().engine.reader().query_batch_hashes(&hashes, &mut results);
                append_csr(&results, &mut ids, &mut offsets, n - end, |i| i);
            });
            start = end;
        }
        // The estimate may have overshot; for a large (mapped) buffer this
        // returns the tail without copying.
        ids.shrink_to_fit();
        Ok((ids, offsets))
    }
}

/// The CSR answer of `index` to caller hashes (read in place, hashed into
/// `KeyHash`es a chunk at a time), each id stored through `id`.
fn batch_of<T>(index: &dyn ReadIndex, hashes: &[u64], id: impl Fn(u64) -> T) -> (Vec<T>, Vec<u64>) {
    let mut ids = Vec::new();
    let mut offsets = Vec::with_capacity(hashes.len() + 1);
    offsets.push(0u64);
    let mut chunk = Vec::with_capacity(CHUNK.min(hashes.len()));
    let mut results = BatchResults::new();
    for part in hashes.chunks(CHUNK) {
        chunk.clear();
        chunk.extend(part.iter().map(|&h| KeyHash::from_u64(h)));
        index.query_batch_hashes(&chunk, &mut results);
        let left = hashes.len() - (offsets.len() - 1) - chunk.len();
        append_csr(&results, &mut ids, &mut offsets, left, &id);
    }
    ids.shrink_to_fit();
    (ids, offsets)
}

#[pymethods]
impl Index {
    /// Opens an index file: a collection file, an index file of one filter
    /// length (as the fixed-size index it was saved from), or a level index
    /// file (``bloomslice build --levels``; read whole and fully
    /// verified even when mapped); a manifest (a directory holding ``manifest.json``, or a ``.json``
    /// file) opens as :meth:`open_shards` would. With ``mmap=True`` (the
    /// default) the file is memory-mapped and queried in place: opening
    /// costs only its small tables, whatever its size. The file must then
    /// not be truncated or written in place while the index is alive
    /// (replacing it by rename, as :meth:`save` does, is safe).
    /// ``verify=True`` checks every checksum first; without it a flipped
    /// bit in the rows can change answers but never crash. With
    /// ``mmap=False`` the file is read into memory and fully verified.
    #[staticmethod]
    #[pyo3(signature = (path, *, mmap = true, verify = false))]
    fn open(py: Python<'_>, path: PathBuf, mmap: bool, verify: bool) -> PyResult<Self> {
        let inner = py.detach(|| Inner::open(path, mmap, verify)).map_err(py_err)?;
        Ok(Index::new(inner))
    }

    /// Opens the manifest ``manifest`` (a manifest file or its directory)
    /// and every shard file it lists, each checked against its entry, as
    /// one read-only index: it answers as the unsplit index would, and its
    /// changes (``add``, ``save``, ...) raise
    /// ``bloomslice.UnsupportedOperation``. ``mmap`` and ``verify`` as for
    /// :meth:`open`; ``verify=True`` also compares every file with the
    /// manifest's size and checksum. ``bloomslice.IndexError`` for an
    /// invalid manifest or a file that disagrees with it.
    #[staticmethod]
    #[pyo3(signature = (manifest, *, mmap = true, verify = false))]
    fn open_shards(py: Python<'_>, manifest: PathBuf, mmap: bool, verify: bool) -> PyResult<Self> {
        let inner = py.detach(|| Inner::open_shards(manifest, mmap, verify)).map_err(py_err)?;
        Ok(Index::new(inner))
    }

    /// Builds an index in memory from ``sets``: a dict (any mapping) of set
    /// name to keys (an iterable of ``bytes``/``str``, ``str`` hashed as
    /// UTF-8, or a NumPy ``uint64`` array of key hashes), or the path of a
    /// directory of text files (one set per file, named after it, one key
    /// per line, as the CLI's ``build --dir``). Set ids are given in name
    /// order; ``seed`` seeds the key hash.
    ///
    /// Without ``n_exp``, ``m`` or ``k``, each set is sized from its own
    /// number of keys at false-positive rate ``fp``: the sets are kept in
    /// size-classed parts (a ``bloomslice::SetIndex``) chosen by the
    /// layout, whose knobs are ``max_parts`` (most parts), ``query_cost_weight``
    /// (the price of one more part as a fraction of the memory: 0 takes the
    /// least memory, large values one part). With ``n_exp`` every filter is sized for
    /// ``n_exp`` keys at ``fp``; with ``m`` and ``k`` it has exactly ``m``
    /// bits and ``k`` hashes.
    ///
    /// With ``levels=True`` (sizes from the data only) the sets are kept in
    /// levels where they pay, as ``bloomslice build --levels`` does (a
    /// [`LevelIndex`]: large sets split into pieces, small ones merged into
    /// columns above their own filters, so absent keys mostly stop at the
    /// top; else one collection laid out with ``max_parts`` and
    /// ``query_cost_weight``): fewer false sets per key; sets written later
    /// go beside the levels until the index is built again.
    #[staticmethod]
    #[pyo3(signature = (
        sets, *, n_exp = None, fp = 0.01, m = None, k = None, seed = 0,
        max_parts = None, query_cost_weight = None, levels = false
    ))]
    #[expect(clippy::too_many_arguments, reason = "the keyword arguments of the Python method")]
    fn build(
        py: Python<'_>,
        sets: &Bound<'_, PyAny>,
        n_exp: Option<u64>,
        fp: f64,
        m: Option<u64>,
        k: Option<u32>,
        seed: u64,
        max_parts: Option<usize>,
        query_cost_weight: Option<f64>,
        levels: bool,
    ) -> PyResult<Self> {
        let fixed = n_exp.is_some() || m.is_some() || k.is_some();
        if fixed && levels {
            return Err(PyValueError::new_err(
                "levels=True sizes every set from its own keys: give it without n_exp, m and k",
            ));
        }
        let knobs = max_parts.is_some() || query_cost_weight.is_some();
        if fixed && knobs {
            return Err(PyValueError::new_err(
                "max_parts and query_cost_weight choose the parts of sets sized from their keys: \
                 give them without n_exp, m and k",
            ));
        }
        let params = if fixed { Some(params_of(n_exp.unwrap_or(10_000), fp, m, k, seed)?) } else { None };
        let mut built: Vec<NamedKeys> = if let Ok(dir) = sets.extract::<PathBuf>() {
            py.detach(|| read_dir_sets(&dir, seed))?
        } else if let Ok(items) = sets.call_method0("items") {
            let mut out = Vec::new();
            for item in items.try_iter()? {
                let (name, keys): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
                let name = name_bytes(&name)?;
                out.push((name, key_hashes(&keys, seed)?));
            }
            out
        } else {
            return Err(PyTypeError::new_err(
                "sets must be a dict of set name to keys, or the path of a directory of text files",
            ));
        };
        built.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = built.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(PyValueError::new_err(format!(
                "set name {:?} is given twice (names are compared as UTF-8 bytes)",
                String::from_utf8_lossy(&w[0].0)
            )));
        }
        if max_parts == Some(0) {
            return Err(PyValueError::new_err("max_parts must be at least 1"));
        }
        if let Some(w) = query_cost_weight.filter(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(PyValueError::new_err(format!("query_cost_weight must be a finite number >= 0, got {w}")));
        }
        let defaults = LayoutConfig::default();
        let config = LayoutConfig {
            max_parts: max_parts.unwrap_or(defaults.max_parts),
            query_cost_weight: query_cost_weight.unwrap_or(defaults.query_cost_weight),
        };
        let inner = py.detach(|| -> Result<Inner, Error> {
            let engine = match params {
                Some(params) => {
                    let mut index = SlicedIndex::new(params);
                    let mut filters = Vec::with_capacity(built.len());
                    for (_, hashes) in &built {
                        filters.push(index.filter_of(hashes)?);
                    }
                    let items: Vec<(u64, &BloomFilter)> =
                        filters.iter().enumerate().map(|(i, f)| (i as u64, f)).collect();
                    index.insert_filters(&items)?;
                    Engine::Fixed(index)
                }
                None => {
                    let sets: Vec<(u64, &[KeyHash])> =
                        built.iter().enumerate().map(|(i, (_, hashes))| (i as u64, hashes.as_slice())).collect();
                    if levels {
                        let config = LevelConfig { layout: config, ..LevelConfig::default() };
                        Engine::Levels(LevelIndex::build_with_hashing(&sets, fp, config, HashScheme::default(), seed)?)
                    } else {
                        Engine::Sized(SetIndex::build_with_hashing(&sets, fp, config, HashScheme::default(), seed)?)
                    }
                }
            };
            let mut names = SetNames::new();
            for (i, (name, _)) in built.iter().enumerate() {
                names.insert(i as u64, name.clone())?;
            }
            Ok(Inner::built(engine, names))
        });
        Ok(Index::new(inner.map_err(py_err)?))
    }

    /// The names of the sets that may contain ``key`` (``bytes`` or
    /// ``str``), sorted. Unnamed sets show as ``#id``.
    fn query(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let hash = self.key_hash(key)?;
        Ok(py.detach(|| {
            let inner = self.read();
            let mut ids = Vec::new();
            inner.engine.reader().query_hash_into(hash, &mut ids);
            inner.sorted_names(&ids)
        }))
    }

    /// The ids of the sets that may contain ``key``, in index order (the
    /// shard files of a manifest in manifest order).
    fn query_ids(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        let hash = self.key_hash(key)?;
        Ok(py.detach(|| {
            let mut ids = Vec::new();
            self.read().engine.reader().query_hash_into(hash, &mut ids);
            ids
        }))
    }

    /// Queries many keys at once (hashed first, rows prefetched ahead).
    ///
    /// ``keys`` is either a 1-D NumPy ``uint64`` array of key hashes (see
    /// :meth:`hash`; read in place, never copied), which returns
    /// ``(ids, offsets)``: two ``uint64`` arrays where the set ids of key
    /// ``i`` are ``ids[offsets[i]:offsets[i + 1]]``; or a sequence of
    /// ``bytes``/``str`` keys, which returns one sorted list of set names per
    /// key, or ``(ids, offsets)`` arrays with ``arrays=True``.
    #[pyo3(signature = (keys, *, arrays = false))]
    fn query_batch<'py>(&self, py: Python<'py>, keys: &Bound<'py, PyAny>, arrays: bool) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(array) = keys.cast::<PyUntypedArray>() {
            let hashes = hash_slice(array)?;
            let slice = contiguous(&hashes)?;
            // The whole batch runs without the GIL: the slice is the
            // array's own buffer (no copy).
            return array_pair(py, py.detach(|| batch_of(self.read().engine.reader(), slice, |i| i)));
        }
        let seq = key_sequence(keys, "keys must be a sequence of keys; for one key use query()")?;
        let n = seq.len()?;
        let seed = self.read().engine.reader().seed();
        let (ids, offsets) = self.batch(py, n, |start, end, out| {
            for i in start..end {
                let key = seq.get_item(i)?;
                out.push(with_key_bytes(&key, "a key", |b| KeyHash::from_bytes(b, seed))?);
            }
            Ok(())
        })?;
        if arrays {
            return array_pair(py, (ids, offsets));
        }
        names_per_key(py, &self.read().names, &ids, &offsets)
    }

    /// :meth:`query_batch` on a 1-D NumPy ``uint64`` array of key hashes,
    /// with the ids as ``uint32`` when every set id of the index fits in 32
    /// bits (else ``uint64``, as :meth:`query_batch`): half the bytes to
    /// send when the answer crosses processes or machines, as the shard
    /// actors of ``bloomslice.ray`` send theirs (``merge_answers`` takes
    /// either). Returns ``(ids, offsets)``.
    fn query_batch_compact<'py>(&self, py: Python<'py>, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let array = keys
            .cast::<PyUntypedArray>()
            .map_err(|_| PyTypeError::new_err("query_batch_compact takes a 1-D NumPy uint64 array of key hashes"))?;
        let hashes = hash_slice(array)?;
        let slice = contiguous(&hashes)?;
        enum Answer {
            Narrow((Vec<u32>, Vec<u64>)),
            Wide((Vec<u64>, Vec<u64>)),
        }
        // The ids are checked and the batch answered under one read lock,
        // so no set added in between can bring a wider id.
        let answer = py.detach(|| {
            let inner = self.read();
            let index = inner.engine.reader();
            if index.ids().last().is_none_or(|&id| u32::try_from(id).is_ok()) {
                // Every id fits: the cast never truncates.
                Answer::Narrow(batch_of(index, slice, |i| i as u32))
            } else {
                Answer::Wide(batch_of(index, slice, |i| i))
            }
        });
        match answer {
            Answer::Narrow(narrow) => array_pair(py, narrow),
            Answer::Wide(wide) => array_pair(py, wide),
        }
    }

    /// Scores one query of many keys: for every set, how many of ``keys``
    /// it may contain (a key given twice counts twice), reporting the sets
    /// whose count reaches ``threshold``.
    ///
    /// ``keys`` is as for :meth:`query_batch`: a 1-D NumPy ``uint64`` array
    /// of key hashes, which returns ``(ids, counts)`` (``uint64`` and
    /// ``uint32`` arrays, by ascending id), or a sequence of ``bytes``/``str``
    /// keys, which returns a dict of set name to count (in name order), or
    /// ``(ids, counts)`` with ``arrays=True``.
    ///
    /// ``threshold`` is an ``int``, a least count, or a ``float`` in
    /// ``[0, 1]``, a least fraction of ``len(keys)`` (rounded up, with a
    /// product within 1e-9 of a whole number taken as that number, so 0.8
    /// of 100 keys is 80). Sets with a count of 0 are never reported: a
    /// threshold of ``0`` (the default) or ``0.0`` gives every set with a
    /// count of at least 1. ``ValueError`` for a negative count or a
    /// fraction outside ``[0, 1]``; ``TypeError`` for another type.
    #[pyo3(signature = (keys, threshold = None, *, arrays = false))]
    fn score<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        threshold: Option<&Bound<'py, PyAny>>,
        arrays: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let threshold = threshold.map_or(Ok(Threshold::count(0)), threshold_of)?;
        let is_array = keys.cast::<PyUntypedArray>().is_ok();
        let hashes = self.hashes(keys, "keys must be a sequence of keys, not a single bytes or str")?;
        let answer = py.detach(|| score_hashes(self.read().engine.reader(), &hashes, threshold));
        if arrays || is_array {
            return array_pair(py, answer);
        }
        named_counts(py, &self.read().names, &answer)
    }

    /// The 64-bit hash of ``key`` under this index's seed (seeded xxh3-64 of
    /// its bytes): ``query_batch(numpy.array([index.hash(k)], dtype=numpy.uint64))``
    /// answers as ``query(k)``.
    fn hash(&self, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok(self.key_hash(key)?.h1)
    }

    /// The name of set ``id``.
    fn name(&self, id: u64) -> PyResult<String> {
        let inner = self.read();
        match inner.names.name(id) {
            Some(name) => Ok(String::from_utf8_lossy(name).into_owned()),
            None => Err(PyValueError::new_err(format!("set {id} has no name"))),
        }
    }

    /// The id of the set called ``name``.
    fn id(&self, name: &Bound<'_, PyAny>) -> PyResult<u64> {
        let name = name_bytes(name)?;
        self.read().names.id(&name).ok_or_else(|| {
            PyValueError::new_err(format!("no set named {:?} in the index", String::from_utf8_lossy(&name)))
        })
    }

    /// The set names, in id order.
    fn names(&self) -> Vec<String> {
        let inner = self.read();
        inner.engine.reader().ids().into_iter().map(|id| inner.names.display(id)).collect()
    }

    /// The set ids, ascending.
    fn ids(&self) -> Vec<u64> {
        self.read().engine.reader().ids()
    }

    /// Bytes of memory the index holds (mapped rows included).
    fn memory_bytes(&self) -> usize {
        self.read().engine.reader().memory_bytes()
    }

    /// Adds a new set called ``name`` holding ``keys`` (an iterable of
    /// ``bytes``/``str``, or a NumPy ``uint64`` array of key hashes);
    /// returns its id. In an index built without a size, the set goes to
    /// the part that holds its number of keys (a new part if none does);
    /// in a level index, beside the levels until the index is built again.
    /// Waits for running queries.
    fn add(&self, py: Python<'_>, name: &Bound<'_, PyAny>, keys: &Bound<'_, PyAny>) -> PyResult<u64> {
        let name = name_bytes(name)?;
        let seed = {
            let inner = self.read();
            inner.engine.check_writable("add a set")?;
            inner.engine.reader().seed()
        };
        let hashes = key_hashes(keys, seed)?;
        py.detach(|| {
            let mut inner = self.write();
            if inner.names.id(&name).is_some() {
                return Err(PyValueError::new_err(format!(
                    "set {:?} is already in the index",
                    String::from_utf8_lossy(&name)
                )));
            }
            let id = inner.next_id();
            inner.engine.insert_set(id, &hashes)?;
            if let Err(e) = inner.names.insert(id, name) {
                let _ = inner.engine.remove_set(id);
                return Err(py_err(e));
            }
            Ok(id)
        })
    }

    /// Adds ``keys`` to the set called ``name``. In an index built without
    /// a size, a set whose filter fills past its capacity gains a filter in
    /// a larger part, so its false-positive rate stays below twice ``fp``;
    /// in a fixed-size index the keys go into its one filter; a set of a
    /// level index's levels gains a filter beside them (its rate at most
    /// the sum of both). Waits for running queries.
    fn add_keys(&self, py: Python<'_>, name: &Bound<'_, PyAny>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        self.change_keys(py, name, keys, "add keys", Engine::add_keys)
    }

    /// Replaces the keys of the set called ``name`` by ``keys`` (its id and
    /// name stay; in an index built without a size the set is placed again
    /// by its new number of keys; in a level index its filters in the
    /// levels stop answering and the new keys go beside them). Waits for
    /// running queries.
    fn update(&self, py: Python<'_>, name: &Bound<'_, PyAny>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        self.change_keys(py, name, keys, "update a set", Engine::replace_set)
    }

    /// Removes the set called ``name`` (in a level index, its filters in
    /// the levels stop answering). Waits for running queries.
    fn remove(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<()> {
        let name = name_bytes(name)?;
        py.detach(|| {
            let mut inner = self.write();
            inner.engine.check_writable("remove a set")?;
            let id = inner.id_of(&name)?;
            inner.engine.remove_set(id)?;
            inner.names.remove(id);
            Ok(())
        })
    }

    /// Saves the index with its names to ``path``, atomically (a temporary
    /// file is written, synced and renamed over ``path``; an index mapped
    /// from ``path`` keeps reading the old file): an index built with
    /// ``n_exp`` or ``m`` and ``k`` as an index file (format 1), a level
    /// index as a level index file (format 3, 3.1 with the sets written
    /// since its build), any other as a collection
    /// file (format 2).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| {
            let inner = self.read();
            match &inner.engine {
                Engine::Fixed(index) => files::save_index(&path, index, &inner.names).map_err(py_err),
                Engine::Sized(collection) => files::save_collection(&path, collection, &inner.names).map_err(py_err),
                Engine::Levels(levels) => files::save_levels(&path, levels, &inner.names).map_err(py_err),
                Engine::Sharded(_) => Err(read_only("save")),
            }
        })
    }

    /// Writes the index as ``shards`` shard files and a manifest
    /// (``manifest.json``) in the directory ``dir`` (created if missing),
    /// for :meth:`open_shards` and the Ray actors of ``bloomslice.ray``, as
    /// the CLI's ``split`` does (the library's one split): each set goes to
    /// one file and keeps its id; the sets, in id order, are cut into
    /// ``shards`` runs of about equal filter bytes. The files are
    /// collection files ``shard-0000.bsi``, ``shard-0001.bsi``, ..., each
    /// with every part of the index (parts without sets there cost their
    /// tables only). Returns the manifest's path. ``FileExistsError`` if
    /// ``dir`` holds a manifest or one of these files already,
    /// ``ValueError`` for ``shards`` below 1 or above the number of sets.
    fn save_shards(&self, py: Python<'_>, dir: PathBuf, shards: usize) -> PyResult<String> {
        let manifest = py.detach(|| {
            let inner = self.read();
            let split = |collection: &SetIndex| files::write_split(collection, &inner.names, shards, &dir);
            match &inner.engine {
                Engine::Sized(collection) => split(collection).map_err(py_err),
                Engine::Fixed(index) => {
                    // As a collection of one part, at the rate whose `k`
                    // is the index's (as a format-1 file opens).
                    let p = 0.5f64.powi(index.params().k() as i32);
                    SetIndex::from_index(index.clone(), p).and_then(|c| split(&c)).map_err(py_err)
                }
                Engine::Sharded(_) => Err(read_only("split again")),
                Engine::Levels(_) => Err(levels_not_split()),
            }
        })?;
        Ok(manifest.display().to_string())
    }

    /// Everything about the index as a dict, like ``bloomslice inspect
    /// --json``: ``m`` (the filter length; ``None`` when the parts differ),
    /// ``k``, ``seed``, ``scheme``, ``fp`` (the target rate of an index
    /// built without a size, else ``None``), ``shards`` and ``columns``
    /// (summed over the parts), ``sets``, ``memory_bytes``, ``fill``,
    /// ``mapped``, ``parts`` (per part ``m``, ``sets``, ``columns``,
    /// ``memory_bytes`` and ``fill``; the parts of every shard file, file
    /// after file, for a manifest), the file it came from (``file``,
    /// ``format_version``, ``file_bytes``, ``checksums_verified``, or
    /// ``None``; for a manifest, its path, ``None``, the files' bytes and
    /// whether they were compared with it), ``shard_files`` (a manifest's
    /// file names, else ``None``), ``levels`` (the levels a key may read in
    /// a level index, else ``None``), and per set ``id``, ``name``,
    /// ``filters``, ``ones``, ``fill`` and ``estimated_fp`` (the union of
    /// its filters, highest first). A level index has no parts (``parts``
    /// and ``set_details`` are empty, ``m`` and ``fill`` are ``None``).
    fn inspect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        /// One part: its parameters, sets, columns, shards, bytes, ones.
        type PartFacts = (BloomParams, usize, usize, usize, usize, u64);
        /// One set: name, filters, ones, bits, chance that all of its
        /// filters answer no to an absent key.
        type SetFacts = (String, usize, u64, u64, f64);
        /// The file: path, format version, bytes, checksums verified.
        type FileFacts = Option<(String, Option<String>, u64, bool)>;
        let (parts, mut sets, summary, file, shard_files, levels) = py.detach(|| {
            let inner = self.read();
            let levels = match &inner.engine {
                Engine::Levels(levels) => Some((levels.depth(), levels.scheme())),
                _ => None,
            };
            let mut sets: HashMap<u64, SetFacts> = HashMap::new();
            let mut parts: Vec<PartFacts> = Vec::new();
            for index in inner.engine.parts() {
                let p = *index.params();
                for (id, ones) in index.ones_per_filter() {
                    let set = sets.entry(id).or_insert_with(|| (inner.names.display(id), 0, 0, 0, 1.0));
                    set.1 += 1;
                    set.2 += ones;
                    set.3 += p.m();
                    set.4 *= 1.0 - (ones as f64 / p.m() as f64).powi(p.k() as i32);
                }
                parts.push((
                    p,
                    index.len(),
                    index.columns(),
                    index.shard_count(),
                    index.memory_bytes(),
                    index.count_ones(),
                ));
            }
            let reader = inner.engine.reader();
            let summary =
                (inner.engine.fp(), reader.k(), reader.seed(), reader.len(), reader.memory_bytes(), inner.mapped);
            let (file, shard_files): (FileFacts, Option<Vec<String>>) = match (&inner.source, &inner.engine) {
                (Source::Built, _) => (None, None),
                (Source::File(path, info), _) => (
                    Some((
                        path.display().to_string(),
                        Some(format!("{}.{}", info.version.0, info.version.1)),
                        info.file_bytes,
                        info.rows_verified,
                    )),
                    None,
                ),
                (Source::Manifest(path, verified), engine) => {
                    let listed: &[ShardFile] = match engine {
                        Engine::Sharded(sharded) => sharded.manifest().files.as_slice(),
                        _ => &[],
                    };
                    let bytes = listed.iter().map(|f| f.bytes).sum();
                    (
                        Some((path.display().to_string(), None, bytes, *verified)),
                        Some(listed.iter().map(|f| f.file.clone()).collect()),
                    )
                }
            };
            (parts, sets.drain().collect::<Vec<_>>(), summary, file, shard_files, levels)
        });
        let (fp, k, seed, n_sets, memory, mapped) = summary;
        let d = PyDict::new(py);
        let ms: Vec<u64> = parts.iter().map(|part| part.0.m()).collect();
        match ms.split_first() {
            Some((first, rest)) if rest.iter().all(|m| m == first) => d.set_item("m", first)?,
            _ => d.set_item("m", py.None())?,
        }
        d.set_item("k", k)?;
        d.set_item("seed", seed)?;
        let scheme = match levels {
            Some((_, scheme)) => scheme,
            None => parts.first().map_or_else(HashScheme::default, |part| part.0.scheme()),
        };
        d.set_item("scheme", format!("{scheme:?}"))?;
        d.set_item("fp", fp)?;
        d.set_item("shards", parts.iter().map(|part| part.3).sum::<usize>())?;
        d.set_item("columns", parts.iter().map(|part| part.2).sum::<usize>())?;
        d.set_item("sets", n_sets)?;
        d.set_item("memory_bytes", memory)?;
        let bits: f64 = parts.iter().map(|part| part.0.m() as f64 * part.1 as f64).sum();
        let ones: u64 = parts.iter().map(|part| part.5).sum();
        if levels.is_some() {
            d.set_item("fill", py.None())?;
        } else {
            d.set_item("fill", ones as f64 / bits.max(1.0))?;
        }
        d.set_item("levels", levels.map(|(depth, _)| depth))?;
        d.set_item("mapped", mapped)?;
        let part_list = PyList::empty(py);
        for (p, part_sets, columns, _, bytes, part_ones) in &parts {
            let part = PyDict::new(py);
            part.set_item("m", p.m())?;
            part.set_item("sets", part_sets)?;
            part.set_item("columns", columns)?;
            part.set_item("memory_bytes", bytes)?;
            part.set_item("fill", *part_ones as f64 / (p.m() as f64 * (*part_sets).max(1) as f64))?;
            part_list.append(part)?;
        }
        d.set_item("parts", part_list)?;
        match file {
            Some((path, version, bytes, verified)) => {
                d.set_item("file", path)?;
                d.set_item("format_version", version)?;
                d.set_item("file_bytes", bytes)?;
                d.set_item("checksums_verified", verified)?;
            }
            None => {
                for key in ["file", "format_version", "file_bytes", "checksums_verified"] {
                    d.set_item(key, py.None())?;
                }
            }
        }
        d.set_item("shard_files", shard_files)?;
        // Least chance of a clean answer (highest estimated rate) first.
        sets.sort_by(|a, b| a.1.4.total_cmp(&b.1.4).then(a.0.cmp(&b.0)));
        let details = PyList::empty(py);
        for (id, (name, filters, set_ones, set_bits, clear)) in sets {
            let set = PyDict::new(py);
            set.set_item("id", id)?;
            set.set_item("name", name)?;
            set.set_item("filters", filters)?;
            set.set_item("ones", set_ones)?;
            set.set_item("fill", set_ones as f64 / set_bits.max(1) as f64)?;
            set.set_item("estimated_fp", 1.0 - clear)?;
            details.append(set)?;
        }
        d.set_item("set_details", details)?;
        Ok(d)
    }

    /// Opens the file (or manifest) this index was opened from again, as it
    /// was opened (mapped or read), to see changes another writer saved
    /// since; the index keeps answering from the old state until the new
    /// one is ready. ``ValueError`` for an index that was not opened from a
    /// file.
    fn reload(&self, py: Python<'_>) -> PyResult<()> {
        let (path, mapped, shards) = {
            let inner = self.read();
            match &inner.source {
                Source::File(path, _) => (path.clone(), inner.mapped, false),
                Source::Manifest(path, _) => (path.clone(), inner.mapped, true),
                Source::Built => return Err(PyValueError::new_err("this index was not opened from a file")),
            }
        };
        let inner = py
            .detach(|| if shards { Inner::open_shards(path, mapped, false) } else { Inner::open(path, mapped, false) })
            .map_err(py_err)?;
        *self.write() = inner;
        Ok(())
    }

    /// Number of sets.
    fn __len__(&self) -> usize {
        self.read().engine.reader().len()
    }

    /// Whether a set is called ``name``.
    fn __contains__(&self, name: &Bound<'_, PyAny>) -> PyResult<bool> {
        let name = with_key_bytes(name, "a set name", <[u8]>::to_vec)?;
        Ok(self.read().names.id(&name).is_some())
    }

    fn __repr__(&self) -> String {
        let inner = self.read();
        let from = match &inner.source {
            Source::Built => String::new(),
            Source::File(path, _) => format!(", file={:?}", path.display()),
            Source::Manifest(path, _) => format!(", manifest={:?}", path.display()),
        };
        let reader = inner.engine.reader();
        let (sets, k, seed) = (reader.len(), reader.k(), reader.seed());
        match &inner.engine {
            Engine::Fixed(index) => {
                format!("<bloomslice.Index sets={sets} m={} k={k} seed={seed}{from}>", index.params().m())
            }
            Engine::Sized(collection) => {
                let parts = collection.parts().filter(|part| !part.is_empty()).count();
                format!("<bloomslice.Index sets={sets} parts={parts} fp={} k={k} seed={seed}{from}>", collection.p())
            }
            Engine::Sharded(sharded) => {
                format!("<bloomslice.Index sets={sets} files={} k={k} seed={seed}{from}>", sharded.shard_count())
            }
            Engine::Levels(levels) => {
                let depth = levels.depth();
                format!("<bloomslice.Index sets={sets} levels={depth} fp={} k={k} seed={seed}{from}>", levels.p())
            }
        }
    }
}

/// The 64-bit hashes of ``keys`` (a sequence of ``bytes``/``str``) under
/// ``seed``, as a NumPy ``uint64`` array: what :meth:`Index.hash` gives for
/// an index of that seed, ready for ``query_batch``.
#[pyfunction]
#[pyo3(signature = (keys, *, seed = 0))]
fn hash_keys<'py>(py: Python<'py>, keys: &Bound<'py, PyAny>, seed: u64) -> PyResult<Bound<'py, PyArray1<u64>>> {
    if keys.is_instance_of::<PyBytes>() || keys.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("keys must be a sequence of keys, not a single bytes or str"));
    }
    let mut out = Vec::with_capacity(keys.len().unwrap_or(0));
    for key in keys.try_iter()? {
        out.push(with_key_bytes(&key?, "a key", |b| KeyHash::from_bytes(b, seed).h1)?);
    }
    Ok(PyArray1::from_vec(py, out))
}

/// The least count a score ``threshold`` (as :meth:`Index.score` takes it)
/// asks of a query of ``keys`` keys, computed as the library does; the
/// same errors as :meth:`Index.score` for a bad threshold.
#[pyfunction]
fn score_min_count(threshold: &Bound<'_, PyAny>, keys: usize) -> PyResult<u32> {
    Ok(threshold_of(threshold)?.min_count(keys))
}

/// Reads and checks a manifest of shard files (a manifest file or its
/// directory) as a dict: ``path``, ``dir``, ``params`` (``m``, ``k``,
/// ``seed``, ``scheme``) and ``files``, each with ``file``, ``path``,
/// ``bytes``, ``xxh3`` and ``sets`` (a list of ``(id, name)``, ``name``
/// ``None`` for an unnamed set, else decoded as UTF-8 with replacement).
#[pyfunction]
fn read_manifest<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let (manifest_path, dir, m) = py.detach(|| files::read_manifest(&path)).map_err(py_err)?;
    let d = PyDict::new(py);
    d.set_item("path", manifest_path.display().to_string())?;
    d.set_item("dir", dir.display().to_string())?;
    let p = PyDict::new(py);
    p.set_item("m", m.params.m)?;
    p.set_item("k", m.params.k)?;
    p.set_item("seed", m.params.seed)?;
    p.set_item("scheme", &m.params.scheme)?;
    d.set_item("params", p)?;
    let listed = PyList::empty(py);
    for (i, f) in m.files.iter().enumerate() {
        let entry = PyDict::new(py);
        entry.set_item("file", &f.file)?;
        entry.set_item("path", m.file_path(&dir, i).display().to_string())?;
        entry.set_item("bytes", f.bytes)?;
        entry.set_item("xxh3", f.xxh3)?;
        let sets = PyList::empty(py);
        for s in &f.sets {
            let name = s.name.as_deref().map(|n| String::from_utf8_lossy(n).into_owned());
            sets.append((s.id, name))?;
        }
        entry.set_item("sets", sets)?;
        listed.append(entry)?;
    }
    d.set_item("files", listed)?;
    Ok(d)
}

/// Size and xxh3-64 of the file at ``path`` (as a manifest records them).
#[pyfunction]
fn file_checksum(py: Python<'_>, path: PathBuf) -> PyResult<(u64, u64)> {
    py.detach(|| files::file_checksum(&path)).map_err(py_err)
}

/// Adds the set ``name`` holding ``keys`` to shard file ``shard`` of the
/// collection whose manifest is at ``manifest`` (under the manifest's lock
/// and the file's writer lock, waiting up to ``wait`` seconds for each) and
/// records it in the manifest; returns the new set's id.
#[pyfunction]
#[pyo3(signature = (manifest, shard, name, keys, *, wait = 10.0))]
fn collection_add(
    py: Python<'_>,
    manifest: PathBuf,
    shard: usize,
    name: &Bound<'_, PyAny>,
    keys: &Bound<'_, PyAny>,
    wait: f64,
) -> PyResult<u64> {
    let name = name_bytes(name)?;
    let wait = wait_of(wait)?;
    let (manifest_path, _, m) = py.detach(|| files::read_manifest(&manifest)).map_err(py_err)?;
    if shard >= m.files.len() {
        return Err(PyValueError::new_err(format!(
            "shard {shard} does not exist (the manifest lists {})",
            m.files.len()
        )));
    }
    check_not_levels(&manifest_path, &m, shard, "add a set")?;
    let params = match py.detach(|| files::shard_params(&manifest_path, &m, shard)).map_err(py_err)? {
        Some(params) => params,
        None => params_of_manifest(&m.params)?,
    };
    let mut filter = BloomFilter::new(params).map_err(py_err)?;
    insert_keys(py, &mut filter, keys)?;
    py.detach(|| files::add_set(&manifest_path, shard, &name, &filter, wait)).map_err(py_err)
}

/// An `UnsupportedOperation` when shard file `shard` of the manifest `m`
/// (at `manifest_path`) is a level index file: the manifest's writers
/// write collection files only.
fn check_not_levels(manifest_path: &Path, m: &Manifest, shard: usize, what: &str) -> PyResult<()> {
    let file = files::shard_path(manifest_path, m, shard);
    if !files::is_level_file(&file) {
        return Ok(());
    }
    Err(UnsupportedOperation::new_err(format!(
        "cannot {what}: shard file {} is a level index file, which the manifest's writers do not change \
         (they write collection files); build it again with Index.build(..., levels=True) or \
         `bloomslice build --levels`",
        file.display()
    )))
}

/// The filter parameters a manifest records.
fn params_of_manifest(p: &ManifestParams) -> PyResult<BloomParams> {
    let scheme = HashScheme::ALL
        .into_iter()
        .find(|s| format!("{s:?}") == p.scheme)
        .ok_or_else(|| IndexError::new_err(format!("the manifest names an unknown hash scheme {:?}", p.scheme)))?;
    Ok(BloomParams::new(p.m, p.k).map_err(py_err)?.with_scheme(scheme).with_seed(p.seed))
}

/// Removes the set called ``name`` from the collection whose manifest is at
/// ``manifest`` (from its shard file, under the same locks as
/// :func:`collection_add`); returns the index of the file that held it.
#[pyfunction]
#[pyo3(signature = (manifest, name, *, wait = 10.0))]
fn collection_remove(py: Python<'_>, manifest: PathBuf, name: &Bound<'_, PyAny>, wait: f64) -> PyResult<usize> {
    let name = name_bytes(name)?;
    let wait = wait_of(wait)?;
    let (manifest_path, _, m) = py.detach(|| files::read_manifest(&manifest)).map_err(py_err)?;
    let Some(owner) = m.owner_of(&name) else {
        return Err(PyValueError::new_err(format!(
            "no set named {:?} in the collection",
            String::from_utf8_lossy(&name)
        )));
    };
    check_not_levels(&manifest_path, &m, owner, "remove a set")?;
    py.detach(|| files::remove_set(&manifest_path, &name, wait)).map_err(py_err)
}

/// An answer as NumPy arrays: `(ids, offsets)`.
type Csr<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>);

/// Merges the answers of shards that hold disjoint sets, key by key:
/// ``parts`` is a list of ``(ids, offsets)`` pairs over the same ``n``
/// keys (as ``Index.query_batch`` or ``Index.query_batch_compact`` return
/// them: ``uint64`` offsets, ``uint64`` or ``uint32`` ids); the result is
/// ``(ids, offsets)``, both ``uint64``, with key ``i``'s ids from every
/// part, in part order (``bloomslice::sharded::merge_answers``). Copies
/// run without the GIL, on two threads from 2^20 ids on. ``TypeError`` for ids
/// of another dtype, ``ValueError`` for parts of different key counts or
/// offsets that are not a valid CSR table.
#[pyfunction]
fn merge_answers<'py>(
    py: Python<'py>,
    parts: Vec<(Bound<'py, PyAny>, PyReadonlyArray1<'py, u64>)>,
) -> PyResult<Csr<'py>> {
    let contiguous = || PyValueError::new_err("the answer arrays must be contiguous (use numpy.ascontiguousarray)");
    /// The ids of one answer, held: ``uint64``, or ``uint32`` from
    /// ``Index.query_batch_compact``.
    enum HeldIds<'py> {
        Wide(PyReadonlyArray1<'py, u64>),
        Narrow(PyReadonlyArray1<'py, u32>),
    }
    let mut held: Vec<HeldIds<'py>> = Vec::with_capacity(parts.len());
    for (ids, _) in &parts {
        held.push(if let Ok(wide) = ids.extract::<PyReadonlyArray1<'py, u64>>() {
            HeldIds::Wide(wide)
        } else if let Ok(narrow) = ids.extract::<PyReadonlyArray1<'py, u32>>() {
            HeldIds::Narrow(narrow)
        } else {
            return Err(PyTypeError::new_err("answer ids must be 1-D uint64 or uint32 arrays"));
        });
    }
    let mut views: Vec<AnswerPart<'_>> = Vec::with_capacity(parts.len());
    for (ids, (_, offsets)) in held.iter().zip(&parts) {
        let ids = match ids {
            HeldIds::Wide(a) => PartIds::Wide(a.as_slice().map_err(|_| contiguous())?),
            HeldIds::Narrow(a) => PartIds::Narrow(a.as_slice().map_err(|_| contiguous())?),
        };
        views.push(AnswerPart { ids, offsets: offsets.as_slice().map_err(|_| contiguous())? });
    }
    let (ids, offsets) = py.detach(|| sharded::merge_answers(&views)).map_err(py_err)?;
    Ok((PyArray1::from_vec(py, ids), PyArray1::from_vec(py, offsets)))
}

fn wait_of(wait: f64) -> PyResult<std::time::Duration> {
    if !wait.is_finite() || !(0.0..=1e9).contains(&wait) {
        return Err(PyValueError::new_err(format!("wait must be a number of seconds in [0, 1e9], got {wait}")));
    }
    Ok(std::time::Duration::from_secs_f64(wait))
}

/// The native part of the `bloomslice` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Index>()?;
    m.add_function(wrap_pyfunction!(hash_keys, m)?)?;
    m.add_function(wrap_pyfunction!(merge_answers, m)?)?;
    m.add_function(wrap_pyfunction!(score_min_count, m)?)?;
    m.add_function(wrap_pyfunction!(read_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(file_checksum, m)?)?;
    m.add_function(wrap_pyfunction!(collection_add, m)?)?;
    m.add_function(wrap_pyfunction!(collection_remove, m)?)?;
    m.add("IndexError", m.py().get_type::<IndexError>())?;
    m.add("UnsupportedOperation", m.py().get_type::<UnsupportedOperation>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

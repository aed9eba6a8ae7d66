//! Manifests of column-shard files: one collection of sets stored as
//! several self-describing files that share one [`BloomParams`].
//!
//! A shard file is an index file (format 1) or a collection file (format
//! 2, several parts: see [`super::save`]). The manifest's
//! parameters are those of every index file, and those of every collection
//! file's first part (its other parts share `k`, scheme and seed, the
//! parameters a key's hash depends on); a collection file of no parts has
//! the manifest's `k`, scheme and seed.
//!
//! A query over the collection is the union of the files' answers (set ids
//! are unique across files and a set never straddles files), so each file
//! can be served where it is stored (for example by one Ray actor per
//! file) and the answers merged by whoever fans out. The manifest is the
//! small JSON document that lists the files, relative to its own
//! directory, with their sizes, xxh3-64 checksums and set ids and names:
//!
//! ```json
//! {
//!   "format": "bloomslice-manifest",
//!   "version": 1,
//!   "params": {"m": 100992, "k": 7, "seed": 0, "scheme": "Xxh3Double"},
//!   "files": [
//!     {"file": "shard-0000.bsi", "bytes": 4096, "xxh3": "00112233445566ff",
//!      "sets": [{"id": 0, "name": "site-a"}, {"id": 1, "name_hex": "ff00"}, {"id": 2}]}
//!   ]
//! }
//! ```
//!
//! A set name that is not UTF-8 is written as `name_hex`; a set without a
//! name has neither key. [`Manifest::from_json`] checks everything a reader
//! relies on (format, version, parameters, plain relative file names, ids
//! and names unique across files) and is fuzzed. [`Manifest::verify_files`]
//! compares the files on disk with their recorded sizes and checksums, and
//! [`Manifest::check_shard`] (an index) and [`Manifest::check_collection`] (a
//! collection, either format) compare a loaded file's parameters, ids and
//! names with its entry.
//!
//! Writers of a sharded collection ([`add_set`], [`remove_set`]) hold the
//! manifest's lock (an [`IndexFile`] lock on the manifest path) and then the
//! shard file's own writer lock, change the file, and rewrite the manifest
//! atomically under its lock ([`Manifest::write_locked`]: temporary file,
//! sync, rename), so readers see either the old
//! or the new manifest, and a manifest always matches the files it names
//! once its writer finished.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use xxhash_rust::xxh3::Xxh3;

use super::file::replace;
use super::{IndexFile, IndexFileLock, Loaded, SAVE_LOCK_WAIT, SetNames};
use crate::error::{Error, Result};
use crate::{BloomFilter, BloomParams, SetIndex, SlicedIndex};

/// The `format` string every manifest carries.
pub const MANIFEST_FORMAT: &str = "bloomslice-manifest";

/// The manifest version this build reads and writes.
pub const MANIFEST_VERSION: u64 = 1;

/// The file name [`manifest_path`] looks for in a directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// The largest manifest [`Manifest::read`] reads (it is parsed in memory):
/// 1 GiB holds tens of millions of set entries, far more than one machine's
/// worth of shards needs; a larger file is refused rather than exhausting
/// memory.
pub const MAX_MANIFEST_BYTES: u64 = 1 << 30;

/// The parameters every file of a collection shares, as the manifest
/// records them (the hash scheme by name).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestParams {
    /// Bits per filter.
    pub m: u64,
    /// Hash functions per key.
    pub k: u32,
    /// Hash seed.
    pub seed: u64,
    /// The hash scheme's name (its `Debug` form).
    pub scheme: String,
}

impl ManifestParams {
    /// The manifest form of `params`.
    pub fn of(params: &BloomParams) -> Self {
        ManifestParams { m: params.m(), k: params.k(), seed: params.seed(), scheme: format!("{:?}", params.scheme()) }
    }

    /// Whether `params` are these parameters.
    pub fn matches(&self, params: &BloomParams) -> bool {
        *self == ManifestParams::of(params)
    }
}

impl std::fmt::Display for ManifestParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "m = {}, k = {}, seed = {}, scheme {}", self.m, self.k, self.seed, self.scheme)
    }
}

/// One set of a shard file: its id and name (`None` for an unnamed set).
///
/// In JSON, `{"id": 1, "name": "site-a"}` for a UTF-8 name,
/// `{"id": 2, "name_hex": "ff00"}` for any other, `{"id": 3}` for none.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "SetEntry", into = "SetEntry")]
pub struct ShardSet {
    /// The set id (unique across the collection).
    pub id: u64,
    /// The set name (unique across the collection), if it has one.
    pub name: Option<Vec<u8>>,
}

/// The JSON form of a [`ShardSet`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetEntry {
    id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "hex::serialize_some",
        deserialize_with = "present_hex"
    )]
    name_hex: Option<Vec<u8>>,
}

impl TryFrom<SetEntry> for ShardSet {
    type Error = String;

    fn try_from(e: SetEntry) -> std::result::Result<Self, String> {
        let name = match (e.name, e.name_hex) {
            (Some(_), Some(_)) => return Err(format!("set {} has both \"name\" and \"name_hex\"", e.id)),
            (Some(n), None) => Some(n.into_bytes()),
            (None, hex) => hex,
        };
        Ok(ShardSet { id: e.id, name })
    }
}

impl From<ShardSet> for SetEntry {
    fn from(s: ShardSet) -> Self {
        match s.name.map(String::from_utf8) {
            None => SetEntry { id: s.id, name: None, name_hex: None },
            Some(Ok(name)) => SetEntry { id: s.id, name: Some(name), name_hex: None },
            Some(Err(e)) => SetEntry { id: s.id, name: None, name_hex: Some(e.into_bytes()) },
        }
    }
}

/// A field that may be absent but, when present, is a string (not `null`).
fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// [`present`] for a hex-encoded byte string.
fn present_hex<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Vec<u8>>, D::Error> {
    hex::bytes(d).map(Some)
}

/// Hex strings in manifests: lower-case on output, either case on input.
mod hex {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    /// `bytes` as two hex digits each.
    pub(super) fn encode(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The bytes of a string of hex digit pairs, or `None`.
    pub(super) fn decode(s: &str) -> Option<Vec<u8>> {
        if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
    }

    /// Serializes present bytes as hex digits (absent ones are skipped).
    pub(super) fn serialize_some<S: Serializer>(bytes: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(bytes.as_deref().unwrap_or_default()))
    }

    /// Deserializes a byte string written as hex digits.
    pub(super) fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        decode(&s).ok_or_else(|| D::Error::custom(format!("{s:?} is not an even number of hex digits")))
    }

    /// A `u64` as exactly 16 hex digits (the `xxh3` field).
    pub(super) mod u64_16 {
        use super::*;

        pub(in super::super) fn serialize<S: Serializer>(x: &u64, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str(&format!("{x:016x}"))
        }

        pub(in super::super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
            let s = String::deserialize(d)?;
            let bytes = Some(&s).filter(|s| s.len() == 16).and_then(|s| decode(s));
            let bytes = bytes.ok_or_else(|| D::Error::custom(format!("{s:?} is not 16 hex digits")))?;
            Ok(bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
        }
    }
}

/// One shard file of a manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardFile {
    /// The file name, relative to the manifest's directory.
    pub file: String,
    /// The file size in bytes.
    pub bytes: u64,
    /// xxh3-64 of the whole file (16 hex digits in JSON).
    #[serde(with = "hex::u64_16")]
    pub xxh3: u64,
    /// The sets the file holds, in id order.
    pub sets: Vec<ShardSet>,
}

impl ShardFile {
    /// The entry of `file` (a plain file name in `dir`) holding `index`
    /// with `names`; its size and checksum are read from disk.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the file cannot be read.
    pub fn describe(dir: &Path, file: &str, index: &SlicedIndex, names: &SetNames) -> Result<Self> {
        let (bytes, xxh3) = file_checksum(&dir.join(file))?;
        Ok(ShardFile { file: file.to_owned(), bytes, xxh3, sets: shard_sets(index.ids(), names) })
    }

    /// The entry of `file` (a plain file name in `dir`) holding
    /// `collection` with `names`; its size and checksum are read from disk.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the file cannot be read.
    pub fn describe_collection(dir: &Path, file: &str, collection: &SetIndex, names: &SetNames) -> Result<Self> {
        let (bytes, xxh3) = file_checksum(&dir.join(file))?;
        Ok(ShardFile { file: file.to_owned(), bytes, xxh3, sets: shard_sets(collection.ids(), names) })
    }
}

/// The entry's sets of `ids` named by `names`, in id order.
fn shard_sets(ids: impl Iterator<Item = u64>, names: &SetNames) -> Vec<ShardSet> {
    let mut sets: Vec<ShardSet> = ids.map(|id| ShardSet { id, name: names.name(id).map(<[u8]>::to_vec) }).collect();
    sets.sort();
    sets
}

/// A collection of shard files sharing one set of parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The parameters of every file.
    pub params: ManifestParams,
    /// The files, in shard order.
    pub files: Vec<ShardFile>,
}

/// The JSON document of a [`Manifest`]: its fields with the format's name
/// and version. Parsing it checks the shape (fields, types, hex digits);
/// [`Document::into_manifest`] checks the rest.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document<P, F> {
    format: String,
    version: u64,
    params: P,
    files: Vec<F>,
}

fn bad(reason: impl Into<String>) -> Error {
    Error::Manifest(reason.into())
}

/// Whether `name` is a plain file name: no directory part, not `.`/`..`.
fn plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && !name.starts_with('.')
        && name.len() <= 255
}

impl Document<ManifestParams, ShardFile> {
    /// The checks beyond the JSON's shape: format and version, valid
    /// parameters, plain and unique file names, ids and names unique across
    /// files, names neither empty nor too long. Sorts each file's sets.
    fn into_manifest(self) -> Result<Manifest> {
        if self.format != MANIFEST_FORMAT {
            return Err(bad(format!("\"format\" must be \"{MANIFEST_FORMAT}\"")));
        }
        if self.version != MANIFEST_VERSION {
            return Err(bad(format!(
                "manifest version {} is not supported (this build reads version {MANIFEST_VERSION})",
                self.version
            )));
        }
        let params = self.params;
        BloomParams::new(params.m, params.k).map_err(|e| bad(format!("invalid params: {e}")))?;
        if self.files.is_empty() {
            return Err(bad("\"files\" is empty: a manifest lists at least one shard file"));
        }
        let mut files = self.files;
        let mut seen_files = std::collections::HashSet::new();
        let mut seen_ids = std::collections::HashSet::new();
        let mut seen_names = std::collections::HashSet::new();
        for f in &mut files {
            if !plain_file_name(&f.file) {
                return Err(bad(format!(
                    "file name {:?} must be a plain name in the manifest's directory (no '/', not hidden)",
                    f.file
                )));
            }
            if !seen_files.insert(f.file.as_str()) {
                return Err(bad(format!("file {:?} is listed twice", f.file)));
            }
            for s in &f.sets {
                if !seen_ids.insert(s.id) {
                    return Err(bad(format!("set id {} appears twice (a set never straddles files)", s.id)));
                }
                if let Some(n) = &s.name {
                    if n.is_empty() || n.len() > super::MAX_NAME_BYTES {
                        return Err(bad(format!("set {} has an empty or too long name", s.id)));
                    }
                    if !seen_names.insert(n.as_slice()) {
                        return Err(bad(format!("set name {:?} appears twice", String::from_utf8_lossy(n))));
                    }
                }
            }
        }
        for f in &mut files {
            f.sets.sort();
        }
        Ok(Manifest { params, files })
    }
}

impl Manifest {
    /// Parses and checks a manifest.
    ///
    /// # Errors
    ///
    /// [`Error::Manifest`] saying what is wrong: not JSON, a missing,
    /// unknown or mistyped field, another format or version, invalid
    /// parameters, a file name with a directory part, a duplicate file, id
    /// or name, a malformed checksum or name.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let doc: Document<ManifestParams, ShardFile> =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not a valid manifest: {e}")))?;
        doc.into_manifest()
    }

    /// The manifest as pretty-printed JSON (one set per line), ending in a
    /// newline. [`Manifest::from_json`] reads it back unchanged.
    pub fn to_json(&self) -> String {
        let doc = Document {
            format: MANIFEST_FORMAT.to_owned(),
            version: MANIFEST_VERSION,
            params: &self.params,
            files: self.files.iter().collect(),
        };
        let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
        out.push('\n');
        out
    }

    /// Reads and checks the manifest at `path` (see [`manifest_path`] for
    /// directories).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if it cannot be read, [`Error::Manifest`] (prefixed
    /// with the path) if it is not a valid manifest or larger than
    /// [`MAX_MANIFEST_BYTES`].
    pub fn read(path: &Path) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
        let mut bytes = Vec::new();
        file.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::io("read", path, e))?;
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(bad(format!("{}: larger than {MAX_MANIFEST_BYTES} bytes", path.display())));
        }
        Manifest::from_json(&bytes).map_err(|e| match e {
            Error::Manifest(reason) => bad(format!("{}: {reason}", path.display())),
            e => e,
        })
    }

    /// Writes the manifest to `path` atomically under its lock (an
    /// [`IndexFile`] lock on `path`, waited for up to [`SAVE_LOCK_WAIT`]);
    /// see [`Manifest::write_locked`].
    ///
    /// # Errors
    ///
    /// [`Error::LockBusy`] if another writer holds the lock for longer;
    /// [`Error::Io`] naming the step and the file.
    pub fn write(&self, path: &Path) -> Result<()> {
        self.write_locked(&IndexFile::new(path).lock(SAVE_LOCK_WAIT)?)
    }

    /// Writes the manifest over the file `lock` holds, atomically: a
    /// temporary file in the same directory, synced, renamed over it, and a
    /// sync of the directory.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] naming the step and the file.
    pub fn write_locked(&self, lock: &IndexFileLock) -> Result<()> {
        let json = self.to_json();
        replace(lock, |w| {
            w.write_all(json.as_bytes()).map_err(|e| Error::io("write", lock.path(), e))?;
            Ok(json.len() as u64)
        })
    }

    /// The path of file `i`, relative to `dir` (the manifest's directory).
    pub fn file_path(&self, dir: &Path, i: usize) -> PathBuf {
        dir.join(&self.files[i].file)
    }

    /// The index of the file that holds the set called `name`.
    pub fn owner_of(&self, name: &[u8]) -> Option<usize> {
        self.files.iter().position(|f| f.sets.iter().any(|s| s.name.as_deref() == Some(name)))
    }

    /// One more than the largest set id of the collection (0 if empty).
    pub fn next_id(&self) -> u64 {
        self.files.iter().flat_map(|f| &f.sets).map(|s| s.id.saturating_add(1)).max().unwrap_or(0)
    }

    /// Number of sets across all files.
    pub fn set_count(&self) -> usize {
        self.files.iter().map(|f| f.sets.len()).sum()
    }

    /// Checks that every file in `dir` has its recorded size and checksum
    /// (reads every file once).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if a file cannot be read, [`Error::Manifest`] naming
    /// the first file that differs.
    pub fn verify_files(&self, dir: &Path) -> Result<()> {
        for (i, f) in self.files.iter().enumerate() {
            let path = self.file_path(dir, i);
            let (bytes, xxh3) = file_checksum(&path)?;
            if bytes != f.bytes || xxh3 != f.xxh3 {
                return Err(bad(format!(
                    "{} does not match the manifest (size {bytes}, xxh3 {xxh3:016x}; the manifest says size {}, xxh3 {:016x}): it was changed or replaced",
                    path.display(),
                    f.bytes,
                    f.xxh3
                )));
            }
        }
        Ok(())
    }

    /// Checks that `loaded` (file `i`) has the manifest's parameters and
    /// exactly the ids and names its entry lists.
    ///
    /// # Errors
    ///
    /// [`Error::Manifest`] saying what differs.
    pub fn check_shard(&self, i: usize, loaded: &Loaded<SlicedIndex>) -> Result<()> {
        let entry = &self.files[i];
        if !self.params.matches(loaded.index.params()) {
            return Err(bad(format!(
                "{} has parameters {} but the manifest says {}",
                entry.file,
                ManifestParams::of(loaded.index.params()),
                self.params
            )));
        }
        self.check_sets(entry, shard_sets(loaded.index.ids(), &loaded.names))
    }

    /// Checks that `loaded` (file `i`, either format) has the manifest's
    /// parameters (in its first part; with no part, its `k`, scheme and
    /// seed) and exactly the ids and names its entry lists.
    ///
    /// # Errors
    ///
    /// [`Error::Manifest`] saying what differs.
    pub fn check_collection(&self, i: usize, loaded: &Loaded) -> Result<()> {
        let entry = &self.files[i];
        let collection = &loaded.index;
        let found = match collection.parts().next() {
            Some(first) => ManifestParams::of(first.params()),
            None => {
                let head = collection.stored_head();
                let params = BloomParams::new(self.params.m, head.k)?.with_scheme(head.scheme).with_seed(head.seed);
                ManifestParams::of(&params)
            }
        };
        if found != self.params {
            return Err(bad(format!("{} has parameters {found} but the manifest says {}", entry.file, self.params)));
        }
        self.check_sets(entry, shard_sets(collection.ids(), &loaded.names))
    }

    fn check_sets(&self, entry: &ShardFile, sets: Vec<ShardSet>) -> Result<()> {
        if sets != entry.sets {
            return Err(bad(format!(
                "{} holds {} sets that differ from the {} the manifest lists for it",
                entry.file,
                sets.len(),
                entry.sets.len()
            )));
        }
        Ok(())
    }
}

/// Whether the file at `path` is a collection file (format 2), by its
/// version bytes; anything else is left to the index file reader.
fn is_collection_file(path: &Path) -> Result<bool> {
    Ok(super::format_major(path)? == Some(super::COLLECTION_FORMAT_MAJOR))
}

/// The index of a shard file being edited ([`edit_shard`]), in the layout
/// of its format.
enum ShardIndex<'a> {
    /// A collection file's.
    Sets(&'a mut SetIndex),
    /// An index file's (one filter length).
    Sliced(&'a mut SlicedIndex),
}

/// Changes shard file `shard` (at `path`) with `f`, under its writer lock,
/// keeping its format.
fn edit_shard(
    m: &Manifest,
    shard: usize,
    path: &Path,
    wait: Duration,
    f: impl FnOnce(ShardIndex<'_>, &mut SetNames) -> Result<()>,
) -> Result<()> {
    let lock = IndexFile::new(path).lock(wait)?;
    if is_collection_file(path)? {
        let mut loaded = Loaded::<SetIndex>::load(lock.path())?;
        m.check_collection(shard, &loaded)?;
        f(ShardIndex::Sets(&mut loaded.index), &mut loaded.names)?;
        lock.save(&loaded.index, &loaded.names)
    } else {
        let mut loaded = Loaded::<SlicedIndex>::load(lock.path())?;
        m.check_shard(shard, &loaded)?;
        f(ShardIndex::Sliced(&mut loaded.index), &mut loaded.names)?;
        lock.save(&loaded.index, &loaded.names)
    }
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The manifest file of `path`: `path/manifest.json` if `path` is a
/// directory, else `path` itself.
pub fn manifest_path(path: &Path) -> PathBuf {
    if path.is_dir() { path.join(MANIFEST_FILE) } else { path.to_path_buf() }
}

/// The directory the files of the manifest at `manifest` are relative to.
pub fn manifest_dir(manifest: &Path) -> PathBuf {
    dir_of(manifest).to_path_buf()
}

/// Size and xxh3-64 of the file at `path`, read once in 1 MiB pieces.
///
/// # Errors
///
/// [`Error::Io`] if it cannot be read.
pub fn file_checksum(path: &Path) -> Result<(u64, u64)> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut h = Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io("read", path, e)),
        };
        h.update(&buf[..n]);
        total += n as u64;
    }
    Ok((total, h.digest()))
}

/// Adds the set `name` holding `filter` to shard file `shard` of the
/// collection whose manifest is at `manifest`, and records it in the
/// manifest. In a collection file the filter goes, as it is, to the first
/// part of its parameters (a new part if there is none). Holds the manifest's lock, then the file's writer lock (each
/// waited for up to `wait`). The new set gets the collection's next id,
/// which is returned.
///
/// # Errors
///
/// [`Error::Manifest`] if `shard` is out of range, the name is taken
/// anywhere in the collection or the file does not match its entry;
/// [`Error::ParamsMismatch`] for a filter of other parameters;
/// [`Error::LockBusy`] and [`Error::Io`] from the locks and files.
pub fn add_set(manifest: &Path, shard: usize, name: &[u8], filter: &BloomFilter, wait: Duration) -> Result<u64> {
    let lock = IndexFile::new(manifest).lock(wait)?;
    let mut m = Manifest::read(manifest)?;
    if shard >= m.files.len() {
        return Err(bad(format!("shard {shard} does not exist (the manifest lists {})", m.files.len())));
    }
    if m.owner_of(name).is_some() {
        return Err(Error::DuplicateName(String::from_utf8_lossy(name).into_owned()));
    }
    let id = m.next_id();
    let dir = manifest_dir(manifest);
    let path = m.file_path(&dir, shard);
    edit_shard(&m, shard, &path, wait, |index, names| {
        match index {
            ShardIndex::Sets(collection) => collection.insert_filter_set(id, filter)?,
            ShardIndex::Sliced(index) => index.insert_filter(id, filter)?,
        }
        names.insert(id, name.to_vec())
    })?;
    refresh_entry(&mut m, &dir, shard)?;
    m.write_locked(&lock)?;
    Ok(id)
}

/// Removes the set called `name` from the collection whose manifest is at
/// `manifest` (from the file that owns it) and from the manifest, under
/// the same locks as [`add_set`]. Returns the index of the file that held it.
///
/// # Errors
///
/// [`Error::Manifest`] if no set has this name or the file does not match
/// its entry; [`Error::LockBusy`] and [`Error::Io`] from the locks and files.
pub fn remove_set(manifest: &Path, name: &[u8], wait: Duration) -> Result<usize> {
    let lock = IndexFile::new(manifest).lock(wait)?;
    let mut m = Manifest::read(manifest)?;
    let Some(shard) = m.owner_of(name) else {
        return Err(bad(format!("no set named {:?} in the collection", String::from_utf8_lossy(name))));
    };
    let dir = manifest_dir(manifest);
    let path = m.file_path(&dir, shard);
    let id_of = |names: &SetNames| names.id(name).ok_or_else(|| bad("the file lost a set its entry lists"));
    edit_shard(&m, shard, &path, wait, |index, names| {
        let id = id_of(names)?;
        match index {
            ShardIndex::Sets(collection) => collection.remove_set(id)?,
            ShardIndex::Sliced(index) => index.remove_set(id)?,
        }
        names.remove(id);
        Ok(())
    })?;
    refresh_entry(&mut m, &dir, shard)?;
    m.write_locked(&lock)?;
    Ok(shard)
}

/// Re-reads file `shard` (either format, fully verified) and updates its
/// entry.
fn refresh_entry(m: &mut Manifest, dir: &Path, shard: usize) -> Result<()> {
    let loaded = super::load(m.file_path(dir, shard))?;
    let file = m.files[shard].file.clone();
    m.files[shard] = ShardFile::describe_collection(dir, &file, &loaded.index, &loaded.names)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> BloomParams {
        BloomParams::new(1000, 3).unwrap().with_seed(5)
    }

    fn filter(keys: std::ops::Range<u64>) -> BloomFilter {
        let mut f = BloomFilter::new(params()).unwrap();
        for k in keys {
            f.insert(&k.to_le_bytes());
        }
        f
    }

    /// A collection of two files (sets 0..3 and 3..5) in `dir`.
    fn collection(dir: &Path) -> PathBuf {
        let mut files = Vec::new();
        for (s, ids) in [(0usize, 0..3u64), (1, 3..5)] {
            let mut index = SlicedIndex::new(params());
            let mut names = SetNames::new();
            for id in ids {
                index.insert_filter(id, &filter(id * 10..id * 10 + 10)).unwrap();
                names.insert(id, format!("set-{id}")).unwrap();
            }
            let file = format!("shard-{s}.bsi");
            super::super::save(dir.join(&file), &index, &names).unwrap();
            files.push(ShardFile::describe(dir, &file, &index, &names).unwrap());
        }
        let m = Manifest { params: ManifestParams::of(&params()), files };
        let path = dir.join(MANIFEST_FILE);
        m.write(&path).unwrap();
        path
    }

    #[test]
    fn json_round_trips_with_odd_names() {
        let m = Manifest {
            params: ManifestParams::of(&params()),
            files: vec![ShardFile {
                file: "a.bsi".into(),
                bytes: 7,
                xxh3: u64::MAX,
                sets: vec![
                    ShardSet { id: 1, name: Some(b"caf\xc3\xa9".to_vec()) },
                    ShardSet { id: 2, name: Some(vec![0xff, 0]) },
                    ShardSet { id: u64::MAX, name: None },
                ],
            }],
        };
        let back = Manifest::from_json(m.to_json().as_bytes()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn rejects_bad_manifests() {
        let good = Manifest::from_json(
            Manifest {
                params: ManifestParams::of(&params()),
                files: vec![ShardFile { file: "a.bsi".into(), bytes: 1, xxh3: 2, sets: vec![] }],
            }
            .to_json()
            .as_bytes(),
        )
        .unwrap();
        let text = good.to_json();
        let cases = [
            ("not json", "{".to_owned()),
            ("format", text.replace(MANIFEST_FORMAT, "other")),
            ("version", text.replace("\"version\": 1", "\"version\": 2")),
            ("m = 0", text.replace("\"m\": 1000", "\"m\": 0")),
            ("traversal", text.replace("a.bsi", "../a.bsi")),
            ("absolute", text.replace("a.bsi", "/etc/passwd")),
            ("checksum", text.replace("0000000000000002", "xyz")),
            (
                "no files",
                text.replace(&text[text.find("\"files\"").unwrap()..text.rfind('}').unwrap()], "\"files\": []"),
            ),
        ];
        for (what, case) in cases {
            assert!(matches!(Manifest::from_json(case.as_bytes()), Err(Error::Manifest(_))), "{what}: {case}");
        }
        let dup = r#"{"format":"bloomslice-manifest","version":1,"params":{"m":10,"k":1,"seed":0,"scheme":"x"},
            "files":[{"file":"a","bytes":0,"xxh3":"0000000000000000","sets":[{"id":1,"name":"n"}]},
                     {"file":"b","bytes":0,"xxh3":"0000000000000000","sets":[{"id":2,"name":"n"}]}]}"#;
        assert!(Manifest::from_json(dup.as_bytes()).unwrap_err().to_string().contains("twice"));
        let dup_id = dup.replace("\"id\":2,\"name\":\"n\"", "\"id\":1,\"name\":\"o\"");
        assert!(Manifest::from_json(dup_id.as_bytes()).unwrap_err().to_string().contains("id 1"));
    }

    #[test]
    fn earlier_manifests_parse_and_unknown_or_null_fields_do_not() {
        // As the hand-written writer printed them: keys in sorted order.
        let earlier = r#"{"files": [{"bytes": 4096, "file": "shard-0000.bsi",
            "sets": [{"id": 2}, {"id": 0, "name": "site-a"}, {"id": 1, "name_hex": "FF00"}],
            "xxh3": "00112233445566fF"}],
            "format": "bloomslice-manifest",
            "params": {"k": 7, "m": 100992, "scheme": "Xxh3Double", "seed": 0}, "version": 1}"#;
        let m = Manifest::from_json(earlier.as_bytes()).unwrap();
        assert_eq!(m.params, ManifestParams { m: 100_992, k: 7, seed: 0, scheme: "Xxh3Double".into() });
        let f = &m.files[0];
        assert_eq!((f.file.as_str(), f.bytes, f.xxh3), ("shard-0000.bsi", 4096, 0x0011_2233_4455_66ff));
        let names: Vec<_> = f.sets.iter().map(|s| (s.id, s.name.clone())).collect();
        assert_eq!(names, [(0, Some(b"site-a".to_vec())), (1, Some(vec![0xff, 0])), (2, None)]);
        assert_eq!(Manifest::from_json(m.to_json().as_bytes()).unwrap(), m);
        for (what, bad) in [
            ("unknown top field", earlier.replace("\"version\": 1", "\"version\": 1, \"extra\": 0")),
            ("unknown set field", earlier.replace("{\"id\": 2}", "{\"id\": 2, \"label\": \"x\"}")),
            ("null name", earlier.replace("{\"id\": 2}", "{\"id\": 2, \"name\": null}")),
            ("both names", earlier.replace("{\"id\": 2}", "{\"id\": 2, \"name\": \"b\", \"name_hex\": \"62\"}")),
            ("odd hex", earlier.replace("FF00", "FF0")),
            ("short checksum", earlier.replace("00112233445566fF", "112233445566fF")),
            ("k above u32", earlier.replace("\"k\": 7", "\"k\": 4294967296")),
            ("empty name", earlier.replace("site-a", "")),
        ] {
            let err = Manifest::from_json(bad.as_bytes()).expect_err(what);
            assert!(matches!(err, Error::Manifest(_)), "{what}: {err}");
        }
    }

    #[test]
    fn verify_and_check_catch_changed_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = collection(dir.path());
        let m = Manifest::read(&path).unwrap();
        m.verify_files(dir.path()).unwrap();
        for i in 0..2 {
            m.check_shard(i, &Loaded::<SlicedIndex>::load(m.file_path(dir.path(), i)).unwrap()).unwrap();
        }
        // The second file's sets under the first file's entry.
        let other = Loaded::<SlicedIndex>::load(m.file_path(dir.path(), 1)).unwrap();
        assert!(m.check_shard(0, &other).is_err());
        std::fs::copy(m.file_path(dir.path(), 1), m.file_path(dir.path(), 0)).unwrap();
        assert!(m.verify_files(dir.path()).unwrap_err().to_string().contains("does not match the manifest"));
    }

    #[test]
    fn add_and_remove_keep_manifest_and_files_in_step() {
        let dir = tempfile::tempdir().unwrap();
        let path = collection(dir.path());
        let wait = Duration::from_secs(5);
        let id = add_set(&path, 1, b"new", &filter(500..510), wait).unwrap();
        assert_eq!(id, 5);
        let m = Manifest::read(&path).unwrap();
        m.verify_files(dir.path()).unwrap();
        assert_eq!(m.owner_of(b"new"), Some(1));
        let loaded = Loaded::<SlicedIndex>::load(m.file_path(dir.path(), 1)).unwrap();
        m.check_shard(1, &loaded).unwrap();
        assert!(loaded.index.query(&505u64.to_le_bytes()).contains(&5));
        assert!(matches!(add_set(&path, 0, b"set-1", &filter(0..1), wait), Err(Error::DuplicateName(_))));
        assert!(add_set(&path, 9, b"other", &filter(0..1), wait).is_err());
        assert_eq!(remove_set(&path, b"set-1", wait).unwrap(), 0);
        let m = Manifest::read(&path).unwrap();
        m.verify_files(dir.path()).unwrap();
        assert_eq!(m.owner_of(b"set-1"), None);
        assert_eq!(m.set_count(), 5);
        assert!(remove_set(&path, b"set-1", wait).is_err());
    }
}

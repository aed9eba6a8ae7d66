//! Saving and loading an index with its [`SetNames`]: one API for both
//! layouts and both file formats of `docs/FORMAT.md`.
//!
//! - [`save`], [`to_bytes`] and [`write_to`] take any index that has a file
//!   format (the sealed trait [`Persist`]): a [`SetIndex`] writes a set
//!   index file (format 2, each part embedded as an index file), a
//!   [`SlicedIndex`] an index file (format 1).
//! - [`load`], [`from_bytes`] and [`open_mmap`] read either format into a
//!   [`Loaded`]: a [`SetIndex`] (a format-1 file opens as a set index of one
//!   part), its names and what the file said about itself ([`FileInfo`]).
//!   [`Loaded::load`], [`Loaded::from_bytes`] and [`Loaded::open_mmap`] do
//!   the same for another layout: `Loaded::<SlicedIndex>::load(path)` reads
//!   a format-1 file as the [`SlicedIndex`] it holds.
//! - [`load`] reads a file into memory: a mutable index. This is the safe
//!   way to open a file that something else may change.
//! - [`open_mmap`] (`unsafe`: see its contract) maps a file with `memmap2`
//!   and queries it in place (zero copy). The index is usable as soon as the
//!   headers and the small tables (shard tables, id maps, set table, names)
//!   are checked. A write to a mapped index copies the shard it touches
//!   into memory first; the file is never written through.
//! - [`IndexFile`] serializes writers: every save holds an exclusive lock
//!   ([`save`] takes it for the write alone; [`IndexFile::edit`] or
//!   [`IndexFile::lock`] hold it across load, change and save, so two
//!   writers never lose each other's update). A save writes a temporary
//!   file in the target's directory, syncs it and renames it over the
//!   target, so a crash or an error mid-save never leaves a partial file at
//!   the destination and never loses the previous one; the next lock holder
//!   removes the temporaries of writers that were killed.
//!
//! # Checksum policy
//!
//! Every section carries an xxh3-64 checksum. Headers and tables are
//! always verified before an index is returned. Row data (almost all of the
//! file) is verified, together with the index's invariants, by [`load`],
//! [`from_bytes`] and by [`open_mmap`] with [`Verify::Full`]. With
//! [`Verify::Deferred`], [`open_mmap`] returns without reading the rows
//! (opening costs only the tables, whatever the file size); call
//! [`Loaded::verify`] later (for example in the background) to check them.
//! Until then a flipped bit in the rows can change answers (a false
//! positive or negative), but can never cause a panic or undefined
//! behaviour: every offset and size was checked against the file.
//!
//! # Files modified underneath a map
//!
//! Mapping is only sound if the file does not change while it is mapped,
//! which no Rust type can guarantee (the convention of `memmap2` and
//! ripgrep): that is why [`open_mmap`] is an `unsafe fn`. A save never
//! writes into an existing file (it renames a new one over it), so processes
//! that only use this module to update index files keep seeing their old,
//! intact mapping. Truncating or writing into a mapped index file by other
//! means may change answers or terminate the process with `SIGBUS`.

pub(crate) mod collection;
mod file;
pub(crate) mod format;
pub mod manifest;
mod names;

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use xxhash_rust::xxh3::{Xxh3, xxh3_64};

pub use self::collection::{COLLECTION_FORMAT_MAJOR, COLLECTION_FORMAT_MINOR, COLLECTION_HEADER_BYTES};
pub use self::file::{IndexFile, IndexFileLock, SAVE_LOCK_WAIT, Temporary};
pub use self::format::{FORMAT_MAJOR, FORMAT_MINOR, HEADER_BYTES, MAGIC, ROWS_ALIGN};
use self::format::{Header, Layout, Meta, encode_header, read_meta};
pub use self::names::{MAX_NAME_BYTES, SetNames};
use crate::collection::SetIndex;
use crate::error::{Error, Result};
use crate::sliced::{ShardParts, SlicedIndex};
use crate::storage::{FileMap, Words, map_file};

/// How much of a file [`open_mmap`] checks before returning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verify {
    /// Every checksum and every index invariant (reads the whole file).
    #[default]
    Full,
    /// Header, shard table, id map and names only; row checksums (and the
    /// uniqueness of set names, checked when the name maps are built on
    /// first use) wait for [`Loaded::verify`]. Opening then costs the same
    /// for a 1 MB and a 100 GB index.
    Deferred,
}

/// What the file said about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// Format version `(major, minor)`.
    pub version: (u16, u16),
    /// File size in bytes.
    pub file_bytes: u64,
    /// `(section, xxh3-64)` of every section: header, shard table, id map,
    /// names, then one per shard.
    pub checksums: Vec<(String, u64)>,
    /// Whether the row checksums and index invariants have been verified.
    pub rows_verified: bool,
}

/// An index read or mapped from a file, with its set names: a [`SetIndex`]
/// (from either file version) unless another layout was asked for
/// (`Loaded::<SlicedIndex>`, format-1 files only).
#[derive(Clone, Debug)]
pub struct Loaded<I = SetIndex> {
    /// The index (shards may be windows of a memory map; writes copy the
    /// shards they touch).
    pub index: I,
    /// The set names stored with it.
    pub names: SetNames,
    /// Version, size and checksums (see [`FileInfo::checksums`] for the
    /// sections of each format).
    pub info: FileInfo,
}

mod sealed {
    use std::io::{Read, Write};
    use std::path::Path;
    use std::sync::Arc;

    use super::{FileMap, Loaded, SetNames, Verify};
    use crate::error::Result;

    /// What [`super::Persist`] requires, private to the crate so the trait
    /// stays sealed.
    pub trait Sealed: Sized {
        /// Writes the index and `names` in its format; returns the bytes written.
        fn write_file(&self, w: &mut dyn Write, names: &SetNames) -> Result<u64>;
        /// Reads a whole file of `len` bytes from `r`, fully verified.
        fn read_file(r: &mut dyn Read, len: u64, what: &Path) -> Result<Loaded<Self>>;
        /// The file of the whole `map`, verified as `verify` says.
        fn map_file(map: &Arc<FileMap>, verify: Verify) -> Result<Loaded<Self>>;
        /// Verifies what a deferred opening left unchecked.
        fn verify(loaded: &mut Loaded<Self>) -> Result<()>;
        /// Whether the index reads (some of) its rows from a memory map.
        fn is_mapped(&self) -> bool;
    }
}

/// An index that has a file format: [`SlicedIndex`] writes index files
/// (format 1), [`SetIndex`] set index files (format 2; it also reads
/// format-1 files, as one part). Sealed: the formats are this crate's.
pub trait Persist: sealed::Sealed {}

impl Persist for SlicedIndex {}
impl Persist for SetIndex {}
impl Persist for crate::LevelIndex {}

/// Level index files (format 3, see `collection::levels`): read whole and
/// fully verified, also when mapped (the levels are copied out of the
/// map).
impl sealed::Sealed for crate::LevelIndex {
    fn write_file(&self, w: &mut dyn Write, names: &SetNames) -> Result<u64> {
        let bytes = crate::collection::levels::encode_file(self, names)?;
        w.write_all(&bytes).map_err(|e| Error::io("write", Path::new("level index"), e))?;
        Ok(bytes.len() as u64)
    }

    fn read_file(r: &mut dyn Read, len: u64, what: &Path) -> Result<Loaded<Self>> {
        let mut bytes = Vec::with_capacity(usize::try_from(len.min(1 << 30)).unwrap_or(0));
        r.take(len).read_to_end(&mut bytes).map_err(|e| Error::io("read", what, e))?;
        crate::collection::levels::decode_file(&bytes)
    }

    fn map_file(map: &Arc<FileMap>, _verify: Verify) -> Result<Loaded<Self>> {
        crate::collection::levels::decode_file(map)
    }

    fn verify(_loaded: &mut Loaded<Self>) -> Result<()> {
        Ok(())
    }

    fn is_mapped(&self) -> bool {
        false
    }
}

impl sealed::Sealed for SlicedIndex {
    fn write_file(&self, w: &mut dyn Write, names: &SetNames) -> Result<u64> {
        write_index_to(w, self, names)
    }

    fn read_file(r: &mut dyn Read, len: u64, what: &Path) -> Result<Loaded<Self>> {
        load_from_reader(&mut &mut *r, len, what)
    }

    fn map_file(map: &Arc<FileMap>, verify: Verify) -> Result<Loaded<Self>> {
        let mut loaded = loaded_from_map(map)?;
        if verify == Verify::Full {
            loaded.verify()?;
        }
        Ok(loaded)
    }

    fn verify(loaded: &mut Loaded<Self>) -> Result<()> {
        if loaded.info.rows_verified {
            return Ok(());
        }
        let sums: Vec<u64> = loaded.info.checksums.iter().skip(4).map(|(_, s)| *s).collect();
        for (i, ((_, _, rows), want)) in loaded.index.shard_views().zip(sums).enumerate() {
            check_rows(rows, want, i)?;
        }
        loaded.index.validate().map_err(Error::into_corrupt_file)?;
        loaded.names.check().map_err(|e| Error::CorruptFile(e.to_string()))?;
        loaded.info.rows_verified = true;
        Ok(())
    }

    fn is_mapped(&self) -> bool {
        SlicedIndex::is_mapped(self)
    }
}

impl<I: Persist> Loaded<I> {
    /// Reads a file into memory (a mutable index), fully verified: for a
    /// [`SetIndex`] either format, for a [`SlicedIndex`] format 1.
    ///
    /// # Errors
    ///
    /// [`Error::Io`], or the errors of [`Loaded::from_bytes`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let (file, len) = open(path)?;
        let mut r = std::io::BufReader::with_capacity(1 << 16, file);
        I::read_file(&mut r, len, path)
    }

    /// Loads an index from file bytes (into memory, fully verified).
    ///
    /// # Errors
    ///
    /// A typed error for any malformed input ([`Error::BadMagic`],
    /// [`Error::UnsupportedVersion`] (also for a set index file read as a
    /// [`SlicedIndex`]), [`Error::Truncated`], [`Error::ChecksumMismatch`],
    /// [`Error::CorruptFile`], duplicate names as [`Error::CorruptFile`]);
    /// never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = bytes;
        I::read_file(&mut r, bytes.len() as u64, Path::new("index bytes"))
    }

    /// Maps a file and queries it in place (see the module docs for the
    /// checksum policy): no row is copied on little-endian targets (on
    /// big-endian ones the rows are copied and converted). With
    /// [`Verify::Full`] every checksum and invariant is checked before it
    /// returns; with [`Verify::Deferred`] only the headers and tables are,
    /// and [`Loaded::verify`] checks the rest later. Answers are those of
    /// [`Loaded::load`].
    ///
    /// # Safety
    ///
    /// The file must not be truncated or written into while the returned
    /// index (or any clone of it, or of its shards) is alive: the index
    /// reads the file's pages directly, so a change underneath is undefined
    /// behaviour in Rust terms and in practice changes answers or kills the
    /// process with `SIGBUS`. Replacing the file by rename is fine (the map
    /// keeps the old file): that is how [`save`] and [`IndexFile`] write,
    /// so a file changed only by them (or by `bloomslice`) satisfies this.
    /// Use [`Loaded::load`] when other programs may write the file in place.
    ///
    /// # Errors
    ///
    /// [`Error::Io`], or the errors of [`Loaded::from_bytes`].
    pub unsafe fn open_mmap(path: impl AsRef<Path>, verify: Verify) -> Result<Self> {
        let path = path.as_ref();
        let (file, len) = open(path)?;
        if len < COLLECTION_HEADER_BYTES {
            // Too short to map usefully (and an empty file cannot be mapped):
            // read what there is (at most a header) and let the reader say
            // what is wrong.
            let mut bytes = Vec::new();
            (&file).take(COLLECTION_HEADER_BYTES).read_to_end(&mut bytes).map_err(|e| Error::io("read", path, e))?;
            let mut r = bytes.as_slice();
            return I::read_file(&mut r, bytes.len() as u64, path);
        }
        // SAFETY: mapping a file is sound only while no one truncates or
        // writes it; the caller promises that (this function's `# Safety`
        // contract). The map is read-only, and every offset taken from it is
        // checked against its length.
        let map = unsafe { map_file(&file) }.map_err(|e| Error::io("map", path, e))?;
        I::map_file(&Arc::new(map), verify)
    }

    /// Verifies the row checksums (if not done yet), the index's
    /// invariants and the uniqueness of the set names. For a [`SetIndex`]
    /// of a format-1 file opened with [`Verify::Deferred`], the sets' loads
    /// (estimated from their shards' bit counts when it was opened) are
    /// then estimated from their own columns, as
    /// [`SetIndex::from_index`] does. Call it before changing the index: a
    /// shard changed since opening no longer has its file's checksum.
    ///
    /// # Errors
    ///
    /// [`Error::ChecksumMismatch`] or [`Error::CorruptFile`].
    pub fn verify(&mut self) -> Result<()> {
        I::verify(self)
    }

    /// Whether the index reads (some of) its rows from a memory map.
    pub fn is_mapped(&self) -> bool {
        self.index.is_mapped()
    }
}

fn check_rows(rows: &Words, want: u64, shard: usize) -> Result<()> {
    if rows_checksum(rows) != want {
        return Err(Error::ChecksumMismatch { section: format!("rows of shard {shard}") });
    }
    Ok(())
}

/// xxh3-64 of a shard's rows as little-endian bytes.
pub(crate) fn rows_checksum(rows: &Words) -> u64 {
    if cfg!(target_endian = "little") {
        xxh3_64(rows.as_bytes())
    } else {
        let mut h = Xxh3::new();
        for w in rows.iter() {
            h.update(&w.to_le_bytes());
        }
        h.digest()
    }
}

/// Writes `index` and `names` in its file format to `w` (an index file
/// for a [`SlicedIndex`], a set index file for a [`SetIndex`]); returns
/// the bytes written. Names of ids not in the index are not written.
///
/// # Errors
///
/// [`Error::Io`] from the writer, [`Error::CapacityOverflow`] for sizes
/// that overflow.
pub fn write_to<W: Write + ?Sized, I: Persist>(w: &mut W, index: &I, names: &SetNames) -> Result<u64> {
    index.write_file(&mut &mut *w, names)
}

/// Writes `index` and `names` in the index file format (format 1).
fn write_index_to(w: &mut dyn Write, index: &SlicedIndex, names: &SetNames) -> Result<u64> {
    let io = |e: std::io::Error| Error::io("write", Path::new("index file"), e);
    let entries = index.column_entries();
    let mut id_map = Vec::with_capacity(entries.len() * 24 + 8);
    let mut blob = Vec::new();
    for &(id, shard, col) in &entries {
        let name = names.name(id).unwrap_or_default();
        id_map.extend_from_slice(&id.to_le_bytes());
        id_map.extend_from_slice(&shard.to_le_bytes());
        id_map.extend_from_slice(&col.to_le_bytes());
        id_map.extend_from_slice(&(name.len() as u32).to_le_bytes());
        id_map.extend_from_slice(&0u32.to_le_bytes());
        blob.extend_from_slice(name);
    }
    let n_shards = index.shard_views().len() as u64;
    let layout = Layout::new(n_shards, entries.len() as u64, blob.len() as u64)
        .ok_or(Error::CapacityOverflow("index file layout"))?;
    let mut table = Vec::with_capacity(n_shards as usize * 32 + 8);
    let mut offset = layout.rows;
    for (columns, ones, rows) in index.shard_views() {
        table.extend_from_slice(&(columns as u64).to_le_bytes());
        table.extend_from_slice(&ones.to_le_bytes());
        table.extend_from_slice(&offset.to_le_bytes());
        table.extend_from_slice(&rows_checksum(rows).to_le_bytes());
        offset += rows.len() as u64 * 8;
    }
    for section in [&mut table, &mut id_map, &mut blob] {
        let sum = xxh3_64(section);
        section.extend_from_slice(&sum.to_le_bytes());
    }
    let header = Header {
        minor: FORMAT_MINOR,
        file_len: offset,
        params: *index.params(),
        config: *index.config(),
        n_shards,
        n_sets: entries.len() as u64,
        names_len: (blob.len() - 8) as u64,
        kmer_length: index.kmer_length(),
        checksum: 0,
    };
    w.write_all(&encode_header(&header, &layout)).map_err(io)?;
    w.write_all(&table).map_err(io)?;
    w.write_all(&id_map).map_err(io)?;
    w.write_all(&blob).map_err(io)?;
    w.write_all(&[0u8; 64][..(layout.rows - layout.names_end) as usize]).map_err(io)?;
    for (_, _, rows) in index.shard_views() {
        if cfg!(target_endian = "little") {
            w.write_all(rows.as_bytes()).map_err(io)?;
        } else {
            for chunk in rows.chunks(8192) {
                let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
                w.write_all(&bytes).map_err(io)?;
            }
        }
    }
    Ok(offset)
}

/// The file bytes of `index` and `names` (see [`write_to`]).
///
/// # Errors
///
/// As [`write_to`].
pub fn to_bytes<I: Persist>(index: &I, names: &SetNames) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_to(&mut out, index, names)?;
    Ok(out)
}

/// Saves `index` and `names` in its file format (see [`write_to`])
/// atomically, under the file's write lock ([`IndexFile::lock`], waited
/// for up to [`SAVE_LOCK_WAIT`]): writes a temporary file
/// (`.NAME.tmp-XXXXXX`) in `path`'s directory, syncs it, renames it over
/// `path` and syncs the directory. On any error the temporary file is
/// removed and `path` is untouched; a process killed mid-save leaves the
/// temporary behind (the next [`IndexFile::lock`] removes it). Writers that
/// load, change and save must hold the lock across all three:
/// [`IndexFile::edit`], or [`IndexFileLock::save`] (a thread that holds
/// the lock and calls `save` on the same file waits for itself).
///
/// # Errors
///
/// [`Error::LockBusy`] if another writer holds the lock for longer;
/// [`Error::Io`] naming the step and the file.
pub fn save<I: Persist>(path: impl AsRef<Path>, index: &I, names: &SetNames) -> Result<()> {
    IndexFile::new(path.as_ref()).save(SAVE_LOCK_WAIT, index, names)
}

pub(crate) fn info_of(meta: &Meta, rows_verified: bool) -> FileInfo {
    let mut checksums = vec![
        ("header".to_owned(), meta.header.checksum),
        ("shard table".to_owned(), meta.section_checksums[0]),
        ("id map".to_owned(), meta.section_checksums[1]),
        ("names".to_owned(), meta.section_checksums[2]),
    ];
    checksums.extend(meta.shards.iter().enumerate().map(|(i, s)| (format!("rows of shard {i}"), s.checksum)));
    FileInfo { version: (FORMAT_MAJOR, meta.header.minor), file_bytes: meta.header.file_len, checksums, rows_verified }
}

/// Reads every shard's rows from `r` (positioned at the first row byte),
/// checks them and builds the index.
pub(crate) fn load_from_reader(r: &mut impl Read, real_len: u64, what: &Path) -> Result<Loaded<SlicedIndex>> {
    let meta = read_meta(r, real_len)?;
    let mut parts = Vec::with_capacity(meta.shards.len());
    for (i, s) in meta.shards.iter().enumerate() {
        let mut rows = Words::zeroed(s.words)?;
        r.read_exact(rows.as_bytes_mut()).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                Error::Truncated { section: "shard rows", needed: meta.header.file_len, len: real_len }
            }
            _ => Error::io("read", what, e),
        })?;
        if cfg!(target_endian = "big") {
            for w in rows.iter_mut() {
                *w = u64::from_le(*w);
            }
        }
        check_rows(&rows, s.checksum, i)?;
        parts.push(ShardParts { columns: s.columns, ones: s.ones, rows });
    }
    let mut index = SlicedIndex::from_parts(meta.header.params, meta.header.config, parts, &meta.entries)?;
    index.set_kmer_length(meta.header.kmer_length);
    index.validate().map_err(Error::into_corrupt_file)?;
    meta.names.check().map_err(|e| Error::CorruptFile(e.to_string()))?;
    let info = info_of(&meta, true);
    Ok(Loaded { index, names: meta.names, info })
}

/// Loads a [`SetIndex`] from file bytes of either format (a format-1
/// index file as a set index of one part) into memory, fully verified
/// ([`Loaded::from_bytes`]).
///
/// # Errors
///
/// Those of [`Loaded::from_bytes`].
pub fn from_bytes(bytes: &[u8]) -> Result<Loaded> {
    Loaded::from_bytes(bytes)
}

/// Whether the file at `path` is an index file of one filter length
/// (format 1), by its magic and version bytes alone: such a file opens as
/// the [`SlicedIndex`] it was saved from (`Loaded::<SlicedIndex>::load`).
/// A file that cannot be read, or any other file, is not; a collection file
/// reader then reports what is wrong with it. Nothing past the version is
/// checked.
///
/// ```
/// use bloomslice::persist::{self, SetNames};
/// use bloomslice::{BloomParams, SlicedIndex};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("one-length.bsi");
/// persist::save(&path, &SlicedIndex::new(BloomParams::new(1024, 3)?), &SetNames::new())?;
/// assert!(persist::is_format_1(&path));
/// assert!(!persist::is_format_1(dir.path().join("missing.bsi")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn is_format_1(path: impl AsRef<Path>) -> bool {
    matches!(format_major(path.as_ref()), Ok(Some(FORMAT_MAJOR)))
}

/// Whether the file at `path` is a level index file (format 3,
/// [`LEVELS_FORMAT_MAJOR`](crate::collection::levels::LEVELS_FORMAT_MAJOR)),
/// by its magic and version bytes alone: such a file opens as a
/// [`LevelIndex`](crate::LevelIndex) (`Loaded::<LevelIndex>::load`), and
/// [`load`] refuses it with [`Error::UnsupportedVersion`]. A file that
/// cannot be read, or any other file, is not. Nothing past the version is
/// checked.
///
/// ```
/// use bloomslice::persist::{self, SetNames};
/// use bloomslice::{LevelConfig, LevelIndex};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("levels.bsl");
/// let index = LevelIndex::build(&[(0u64, vec!["a", "b"])], 0.01, LevelConfig::default())?;
/// persist::save(&path, &index, &SetNames::new())?;
/// assert!(persist::is_level_file(&path));
/// assert!(!persist::is_format_1(&path));
/// assert!(!persist::is_level_file(dir.path().join("missing.bsl")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn is_level_file(path: impl AsRef<Path>) -> bool {
    matches!(format_major(path.as_ref()), Ok(Some(crate::collection::levels::LEVELS_FORMAT_MAJOR)))
}

/// The major version of the file at `path` ([`FORMAT_MAJOR`] or
/// [`COLLECTION_FORMAT_MAJOR`] for the files this crate writes), or `None`
/// when it does not start with [`MAGIC`] and a version.
///
/// # Errors
///
/// [`Error::Io`] when the file cannot be opened or read.
pub(crate) fn format_major(path: &Path) -> Result<Option<u16>> {
    let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut head = Vec::with_capacity(10);
    file.take(10).read_to_end(&mut head).map_err(|e| Error::io("read", path, e))?;
    Ok(format::major_version(&head))
}

pub(crate) fn open(path: &Path) -> Result<(File, u64)> {
    let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
    let meta = file.metadata().map_err(|e| Error::io("stat", path, e))?;
    if !meta.is_file() {
        let what = if meta.is_dir() { "a directory" } else { "not a regular file" };
        let kind = if meta.is_dir() { std::io::ErrorKind::IsADirectory } else { std::io::ErrorKind::InvalidInput };
        return Err(Error::io("open", path, std::io::Error::new(kind, format!("it is {what}, not an index file"))));
    }
    Ok((file, meta.len()))
}

/// Reads a file of either format into memory as a [`SetIndex`] (a mutable
/// index; a format-1 index file as a set index of one part), fully
/// verified ([`Loaded::load`]).
///
/// # Errors
///
/// Those of [`Loaded::load`].
pub fn load(path: impl AsRef<Path>) -> Result<Loaded> {
    Loaded::load(path)
}

/// Maps a file of either format as a [`SetIndex`] and queries it in place
/// ([`Loaded::open_mmap`]).
///
/// # Safety
///
/// That of [`Loaded::open_mmap`]: the file must not be truncated or written
/// into while the returned index (or a clone of it, or of its parts) is
/// alive. Replacing it by rename, as [`save`] does, is fine.
///
/// # Errors
///
/// Those of [`Loaded::open_mmap`].
pub unsafe fn open_mmap(path: impl AsRef<Path>, verify: Verify) -> Result<Loaded> {
    // SAFETY: forwarded to the caller (this function's `# Safety`).
    unsafe { Loaded::open_mmap(path, verify) }
}

/// The index file of the whole `map`, its rows used in place and not
/// verified yet.
pub(crate) fn loaded_from_map(map: &Arc<FileMap>) -> Result<Loaded<SlicedIndex>> {
    let (index, meta) = index_in_map(map, 0, map.len())?;
    let info = info_of(&meta, false);
    Ok(Loaded { index, names: meta.names, info })
}

/// The index file at bytes `start..start + len` of `map` (`start` a
/// multiple of [`ROWS_ALIGN`]), its rows used in place (copied on
/// big-endian targets) and not verified: every table is checked, no row is
/// read.
pub(crate) fn index_in_map(map: &Arc<FileMap>, start: usize, len: usize) -> Result<(SlicedIndex, Meta)> {
    let bytes = start.checked_add(len).and_then(|end| map.get(start..end));
    let Some(mut r) = bytes else {
        return Err(Error::CorruptFile(format!("embedded index at {start} of {len} bytes is outside the file")));
    };
    let meta = read_meta(&mut r, len as u64)?;
    let mut parts = Vec::with_capacity(meta.shards.len());
    for s in &meta.shards {
        let offset = usize::try_from(s.offset)
            .ok()
            .and_then(|o| o.checked_add(start))
            .ok_or(Error::CapacityOverflow("file offset"))?;
        #[cfg(target_endian = "little")]
        let rows = Words::mapped(Arc::clone(map), offset, s.words)?;
        #[cfg(target_endian = "big")]
        let rows = {
            let mut rows = Words::zeroed(s.words)?;
            for (w, b) in rows.iter_mut().zip(map[offset..][..s.words * 8].chunks_exact(8)) {
                *w = u64::from_le_bytes(b.try_into().expect("8 bytes"));
            }
            rows
        };
        parts.push(ShardParts { columns: s.columns, ones: s.ones, rows });
    }
    let mut index = SlicedIndex::from_parts(meta.header.params, meta.header.config, parts, &meta.entries)?;
    index.set_kmer_length(meta.header.kmer_length);
    Ok((index, meta))
}

/// Bytes of the index file of `index` without set names (as
/// [`write_to`] writes it with no names), or `None` on overflow.
pub(crate) fn index_file_bytes(index: &SlicedIndex) -> Option<u64> {
    let layout = Layout::new(index.shard_views().len() as u64, index.len() as u64, 0)?;
    index.shard_views().try_fold(layout.rows, |at, (_, _, rows)| at.checked_add(rows.len() as u64 * 8))
}

/// Bytes of the index file that a [`SlicedIndex`] with `params` and
/// `config`, built by inserting `n_sets` filters into an empty index, would
/// take, with `name_bytes` bytes of set names; its rows take as much memory
/// (see [`estimated_rows_bytes`]). `None` if that overflows `u64`.
pub fn estimated_file_bytes(
    params: &crate::params::BloomParams,
    config: &crate::sliced::SlicedConfig,
    n_sets: u64,
    name_bytes: u64,
) -> Option<u64> {
    let (shards, rows) = estimated_layout(params, config, n_sets)?;
    let layout = Layout::new(shards, n_sets, name_bytes)?;
    layout.rows.checked_add(rows)
}

/// Bytes of row data (the bulk of memory and file) of an index with
/// `params` and `config` holding `n_sets` filters inserted into an empty
/// index ([`rows_bytes_for`](crate::sliced::rows_bytes_for)). `None` on
/// overflow.
pub fn estimated_rows_bytes(
    params: &crate::params::BloomParams,
    config: &crate::sliced::SlicedConfig,
    n_sets: u64,
) -> Option<u64> {
    estimated_layout(params, config, n_sets).map(|(_, rows)| rows)
}

fn estimated_layout(
    params: &crate::params::BloomParams,
    config: &crate::sliced::SlicedConfig,
    n_sets: u64,
) -> Option<(u64, u64)> {
    let max = config.max_shard_columns.max(crate::sliced::SHARD_COLUMN_STEP) as u64;
    let shards = n_sets.div_ceil(max);
    Some((shards, crate::sliced::rows_bytes_for(params.m(), n_sets, config.max_shard_columns)?))
}

//! The typed error every fallible operation of the library returns: one
//! [`Error`] for the crate, with the query pool's [`PoolError`] nested in
//! it and an I/O error kept as its [`source`](std::error::Error::source).
//! The structures of the `bloomslice-papers` crate have error types of
//! their own that wrap this one.

use std::sync::Arc;

/// Everything that can go wrong in bloomslice. Every operation that returns
/// an error leaves the structure it was called on unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A filter needs at least one bit.
    #[error("a Bloom filter needs at least one bit (m = 0)")]
    ZeroBits,
    /// A filter needs at least one hash function.
    #[error("a Bloom filter needs at least one hash function (k = 0)")]
    ZeroHashes,
    /// More hash functions than [`crate::params::MAX_HASHES`].
    #[error("k = {k} hash functions is more than the supported maximum of {max}")]
    TooManyHashes {
        /// The requested k.
        k: u64,
        /// The largest supported k.
        max: u32,
    },
    /// More bits than [`crate::params::MAX_BITS`].
    #[error("m = {m} bits is more than the supported maximum of {max}")]
    TooManyBits {
        /// The requested m.
        m: u64,
        /// The largest supported m.
        max: u64,
    },
    /// A false-positive rate outside the open interval (0, 1).
    #[error("false-positive rate {0} is outside the open interval (0, 1)")]
    InvalidFalsePositiveRate(f64),
    /// An expected capacity of zero keys.
    #[error("the expected number of keys must be at least 1")]
    ZeroCapacity,
    /// Sizes that overflow, or an allocation that could not be made.
    #[error("size overflow or allocation failure: {0}")]
    CapacityOverflow(&'static str),
    /// A filter or index built with other parameters.
    #[error("parameter mismatch: expected {expected}, found {found}")]
    ParamsMismatch {
        /// The parameters of the receiving structure.
        expected: crate::params::BloomParams,
        /// The parameters that were offered.
        found: crate::params::BloomParams,
    },
    /// Raw words of the wrong length.
    #[error("expected {expected} words, found {found}")]
    WordCountMismatch {
        /// Words the parameters call for.
        expected: usize,
        /// Words that were offered.
        found: usize,
    },
    /// Raw words with bits set at positions `>= m`.
    #[error("raw words have bits set beyond bit m = {m}")]
    PaddingBitsSet {
        /// The filter length in bits.
        m: u64,
    },
    /// A filter id that is already in the index.
    #[error("filter id {0} is already in the index")]
    DuplicateId(u64),
    /// A filter id that is not in the index.
    #[error("filter id {0} is not in the index")]
    UnknownId(u64),
    /// An operating-system I/O error while saving or loading an index file;
    /// the `std::io::Error` is its [`source`](std::error::Error::source).
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// What was being done ("open", "read", "write", "rename", ...).
        op: &'static str,
        /// The file concerned.
        path: String,
        /// The operating system's error.
        #[source]
        source: SharedIoError,
    },
    /// The file does not start with the index file magic bytes.
    #[error("not a bloomslice index file (wrong magic bytes)")]
    BadMagic,
    /// The file's major format version is not one this build reads.
    #[error(
        "index file format version {major}.{minor} is not supported (this build reads version {supported}.x); rebuild the index or use a matching bloomslice"
    )]
    UnsupportedVersion {
        /// Major version in the file.
        major: u16,
        /// Minor version in the file.
        minor: u16,
        /// The major version this build reads.
        supported: u16,
    },
    /// The file ends before a section it declares.
    #[error("index file is truncated: {section} needs {needed} bytes but the file has {len}")]
    Truncated {
        /// The section that does not fit.
        section: &'static str,
        /// Bytes the file would need.
        needed: u64,
        /// Bytes the file has.
        len: u64,
    },
    /// A section's xxh3 checksum does not match its bytes.
    #[error("index file is corrupt: checksum mismatch in the {section}")]
    ChecksumMismatch {
        /// The section whose checksum failed.
        section: String,
    },
    /// A structurally invalid index file: absurd sizes or counts, sections
    /// at unexpected or misaligned offsets, inconsistent tables.
    #[error("index file is corrupt: {0}")]
    CorruptFile(String),
    /// A broken invariant found by a `validate` method (a bug, or a
    /// structure built from damaged data).
    #[error("invalid index: {0}")]
    Invalid(String),
    /// A set name that is already used by another set.
    #[error("set name {0:?} is already used by another set")]
    DuplicateName(String),
    /// Another writer holds an index file's lock (see
    /// [`crate::persist::IndexFile`]) and did not release it in time.
    #[error("{path} is being changed by another writer: its lock {lock} was still held after {waited_ms} ms")]
    LockBusy {
        /// The index file.
        path: String,
        /// The lock file beside it.
        lock: String,
        /// How long this writer waited, in milliseconds.
        waited_ms: u64,
    },
    /// A manifest of shard files that is malformed, or that does not match
    /// the files it lists (see [`crate::persist::manifest`]).
    #[error("invalid manifest: {0}")]
    Manifest(String),
    /// A k-mer length outside `1..=32` (see [`crate::kmer`]).
    #[error("k-mer length {k} is outside 1..={max}")]
    InvalidKmerLength {
        /// The requested length.
        k: usize,
        /// The longest supported k-mer.
        max: usize,
    },
    /// An error of the query pool ([`crate::pool`]).
    #[error(transparent)]
    Pool(#[from] PoolError),
}

impl Error {
    /// An [`Error::Io`] from an `std::io::Error`.
    pub(crate) fn io(op: &'static str, path: &std::path::Path, e: std::io::Error) -> Self {
        Error::Io { op, path: path.display().to_string(), source: SharedIoError(Arc::new(e)) }
    }

    /// A broken invariant of a loaded structure reported as
    /// [`Error::CorruptFile`] (the file is at fault, not the code).
    pub(crate) fn into_corrupt_file(self) -> Self {
        match self {
            Error::Invalid(what) => Error::CorruptFile(what),
            other => other,
        }
    }

    /// The kind of an [`Error::Io`], `None` for every other error.
    #[must_use]
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            Error::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}

/// The `std::io::Error` of an [`Error::Io`], shared so that [`Error`] stays
/// `Clone`; two are equal when their kinds are (the operating system's
/// message is not compared). Dereferences to the `std::io::Error`.
#[derive(Debug, Clone)]
pub struct SharedIoError(Arc<std::io::Error>);

impl core::ops::Deref for SharedIoError {
    type Target = std::io::Error;
    fn deref(&self) -> &std::io::Error {
        &self.0
    }
}

impl PartialEq for SharedIoError {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind()
    }
}

impl core::fmt::Display for SharedIoError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedIoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// An [`Error::Invalid`] with a formatted description of a broken
/// invariant (what the `validate` methods return). Exported (hidden) for
/// the `bloomslice-papers` crate.
#[doc(hidden)]
#[macro_export]
macro_rules! invalid {
    ($($arg:tt)*) => {
        $crate::error::Error::Invalid(format!($($arg)*))
    };
}

/// The errors of the query pool ([`crate::pool`]), nested in
/// [`Error::Pool`]. Defined here, beside [`Error`], so that the error
/// module depends on no other module of the crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// A task of the batch panicked; the batch has no results. The pool
    /// keeps serving later batches.
    #[error("a task of this batch panicked; the batch has no results")]
    TaskPanicked,
    /// A worker thread could not be started.
    #[error("cannot start a worker thread: {0}")]
    Spawn(String),
    /// A configuration value out of range.
    #[error("invalid pool configuration: {0}")]
    Config(&'static str),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

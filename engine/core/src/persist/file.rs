//! [`IndexFile`]: one writer at a time per index file, atomic replacement,
//! and the clean-up of temporary files that killed writers leave behind.
//!
//! Every writer of an index file takes an exclusive advisory lock
//! (`flock(2)` through `fs4`) on a lock file beside it, `.NAME.lock`, and
//! holds it across its whole read-modify-write: load, change, save. A
//! second writer polls for the lock until its deadline and then fails with
//! [`Error::LockBusy`]. The lock file is never deleted (deleting it would
//! let two writers lock two different inodes) and the index itself is never
//! locked: it is replaced by rename, which a lock on it would not survive.
//!
//! Every save holds that lock ([`super::save`] takes it for the write
//! alone): it writes a temporary file `.NAME.tmp-XXXXXX` (a `tempfile`
//! with six random characters) in the index's directory, syncs it, renames
//! it over the index and syncs the directory. Readers take no lock: they
//! open either the old file or the new one, never a mix.
//!
//! A writer killed mid-save leaves its temporary file behind. Since no save
//! runs without the lock, a temporary seen by the holder of the lock is an
//! orphan: [`IndexFile::lock`] removes them all, without asking which
//! process wrote them; [`IndexFile::leftover_temporaries`] lists them for
//! tools (`bloomslice inspect` reports them).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Loaded, Persist, SetNames};
use crate::error::{Error, Result};

/// How long [`super::save`] (and the other writers that take the lock for
/// one write only) wait for another writer to finish: the default of the
/// `bloomslice` command's `--wait`.
pub const SAVE_LOCK_WAIT: Duration = Duration::from_secs(10);

/// Random characters after a temporary's prefix (`tempfile`'s default,
/// fixed so the names can be recognised exactly).
const TEMP_RANDOM_CHARS: usize = 6;

/// An index file path and the lock protocol of its writers.
///
/// ```no_run
/// use std::time::Duration;
/// use bloomslice::persist::IndexFile;
///
/// let file = IndexFile::new("sites.bsi");
/// // Load, change and save under the lock: a concurrent writer waits.
/// file.edit(Duration::from_secs(10), |loaded| loaded.index.remove_set(17))?;
/// # Ok::<(), bloomslice::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexFile {
    path: PathBuf,
}

/// A temporary file left beside an index by a writer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Temporary {
    /// The temporary file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether a writer held the index's lock when it was listed: then the
    /// file may be that writer's save in progress. Otherwise it is an orphan
    /// (its writer was killed), which the next lock holder removes.
    pub writer_active: bool,
}

/// The exclusive write lock of an index file; released when dropped.
#[derive(Debug)]
pub struct IndexFileLock {
    /// Holds the `flock`; closing it releases the lock.
    _file: File,
    path: PathBuf,
    removed: Vec<Temporary>,
}

/// `.NAME` + `suffix` beside `path`.
fn sibling(path: &Path, suffix: &str) -> Result<PathBuf> {
    Ok(path.with_file_name(hidden_name(path, suffix)?))
}

/// `.NAME` + `suffix` for the file name `NAME` of `path`.
fn hidden_name(path: &Path, suffix: &str) -> Result<OsString> {
    let name = path.file_name().ok_or_else(|| {
        Error::io("use", path, std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))
    })?;
    let mut s = OsString::from(".");
    s.push(name);
    s.push(suffix);
    Ok(s)
}

/// The directory `path` lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The prefix of the temporaries of the index at `path`: `.NAME.tmp-`.
fn temp_prefix(path: &Path) -> Result<OsString> {
    hidden_name(path, ".tmp-")
}

/// Whether `name` is the name of a temporary with `prefix`: the prefix then
/// exactly [`TEMP_RANDOM_CHARS`] ASCII letters and digits (so the
/// temporaries and lock of an index called `NAME.tmp-x` do not match).
fn is_temp_name(name: &OsStr, prefix: &OsStr) -> bool {
    let (name, prefix) = (name.as_encoded_bytes(), prefix.as_encoded_bytes());
    name.strip_prefix(prefix)
        .is_some_and(|rest| rest.len() == TEMP_RANDOM_CHARS && rest.iter().all(u8::is_ascii_alphanumeric))
}

/// Writes the locked file anew: `write` fills a temporary file in its
/// directory, which is synced and renamed over the file, then the directory
/// is synced. On any error the temporary is removed and the file untouched.
/// Taking the lock is what makes a temporary that outlives its writer
/// recognisable as an orphan.
pub(crate) fn replace(lock: &IndexFileLock, write: impl FnOnce(&mut dyn Write) -> Result<u64>) -> Result<()> {
    let path = lock.path();
    let dir = parent_dir(path);
    let prefix = temp_prefix(path)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).rand_bytes(TEMP_RANDOM_CHARS);
    #[cfg(unix)]
    {
        // What `File::create` gives (less the umask); `tempfile` defaults
        // to owner-only, which would change the index's permissions.
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(|e| Error::io("create a temporary file in", dir, e))?;
    let tmp_path = tmp.path().to_owned();
    {
        let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut w).map_err(|e| match e {
            Error::Io { op, source, .. } => Error::Io { op, path: tmp_path.display().to_string(), source },
            e => e,
        })?;
        w.flush().map_err(|e| Error::io("write", &tmp_path, e))?;
    }
    tmp.as_file().sync_all().map_err(|e| Error::io("sync", &tmp_path, e))?;
    // On failure the returned temporary is dropped, which removes it.
    tmp.persist(path).map_err(|e| Error::io("rename the temporary file over", path, e.error))?;
    sync_dir(dir);
    Ok(())
}

/// Makes the rename durable. Best effort: some file systems refuse to
/// open or sync a directory, and the data itself is already synced.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

impl IndexFile {
    /// The index file at `path` (it need not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        IndexFile { path: path.into() }
    }

    /// The index file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock file beside the index: `.NAME.lock`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the path has no file name.
    pub fn lock_path(&self) -> Result<PathBuf> {
        sibling(&self.path, ".lock")
    }

    /// Takes the exclusive write lock, polling for up to `wait` while
    /// another writer (thread or process) holds it, then removes every
    /// temporary file of the index (see
    /// [`IndexFileLock::removed_temporaries`]).
    ///
    /// # Errors
    ///
    /// [`Error::LockBusy`] after `wait`; [`Error::Io`] if the lock file
    /// cannot be created or locked (for example a read-only directory).
    pub fn lock(&self, wait: Duration) -> Result<IndexFileLock> {
        let lock_path = self.lock_path()?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| Error::io("create the lock file", &lock_path, e))?;
        let start = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            match fs4::FileExt::try_lock(&file) {
                Ok(()) => break,
                Err(fs4::TryLockError::WouldBlock) => {}
                Err(fs4::TryLockError::Error(e)) => return Err(Error::io("lock", &lock_path, e)),
            }
            let waited = start.elapsed();
            if waited >= wait {
                return Err(Error::LockBusy {
                    path: self.path.display().to_string(),
                    lock: lock_path.display().to_string(),
                    waited_ms: waited.as_millis() as u64,
                });
            }
            std::thread::sleep(pause.min(wait - waited));
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        // Every save holds this lock, so no temporary is in progress: each
        // one left is an orphan of a writer that was killed.
        let mut removed = Vec::new();
        if let Ok(temps) = self.temporaries(false) {
            for t in temps {
                if std::fs::remove_file(&t.path).is_ok() {
                    removed.push(t);
                }
            }
        }
        Ok(IndexFileLock { _file: file, path: self.path.clone(), removed })
    }

    /// Reads the index into memory, fully verified (as [`super::load`]; no
    /// lock is needed to read).
    ///
    /// # Errors
    ///
    /// Those of [`super::load`].
    pub fn load(&self) -> Result<Loaded> {
        super::load(&self.path)
    }

    /// Saves `index` (either layout, each in its own format) over the file
    /// under the write lock, waited for up to `wait`.
    ///
    /// # Errors
    ///
    /// Those of [`IndexFile::lock`] and [`IndexFileLock::save`].
    pub fn save<I: Persist>(&self, wait: Duration, index: &I, names: &SetNames) -> Result<()> {
        self.lock(wait)?.save(index, names)
    }

    /// Loads the index (a [`SetIndex`](crate::SetIndex), from either file
    /// version), lets `f` change it and saves it (as a set index file), all
    /// under the lock (taken as [`IndexFile::lock`] does). Nothing is saved
    /// when `f` fails. To change a [`SlicedIndex`](crate::SlicedIndex) file
    /// in its own format, load it with [`Loaded::load`] under
    /// [`IndexFile::lock`] and save it with [`IndexFileLock::save`].
    ///
    /// # Errors
    ///
    /// Those of [`IndexFile::lock`], [`super::load`], `f` and
    /// [`IndexFileLock::save`].
    pub fn edit<T, E: From<Error>>(
        &self,
        wait: Duration,
        f: impl FnOnce(&mut Loaded) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let lock = self.lock(wait)?;
        let mut loaded = lock.load()?;
        let out = f(&mut loaded)?;
        lock.save(&loaded.index, &loaded.names)?;
        Ok(out)
    }

    /// The temporary files writers of this index left in its directory,
    /// in name order. Each says whether a writer held the lock when it was
    /// listed (then it may be a save in progress); listing takes no lock.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the directory cannot be read.
    pub fn leftover_temporaries(&self) -> Result<Vec<Temporary>> {
        let active = self.writer_active();
        self.temporaries(active)
    }

    /// Whether a writer holds the lock now (it is free if the lock file is
    /// missing or cannot be opened).
    fn writer_active(&self) -> bool {
        let Ok(lock_path) = self.lock_path() else { return false };
        let Ok(file) = File::open(&lock_path) else { return false };
        match fs4::FileExt::try_lock(&file) {
            // Closing `file` releases the lock at once.
            Ok(()) => false,
            Err(fs4::TryLockError::WouldBlock) => true,
            Err(fs4::TryLockError::Error(_)) => false,
        }
    }

    fn temporaries(&self, writer_active: bool) -> Result<Vec<Temporary>> {
        if self.path.file_name().is_none() {
            return Ok(Vec::new());
        }
        let prefix = temp_prefix(&self.path)?;
        let dir = parent_dir(&self.path);
        let io = |e: std::io::Error| Error::io("read the directory", dir, e);
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            if !is_temp_name(&entry.file_name(), &prefix) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_file() {
                out.push(Temporary { path: entry.path(), bytes: meta.len(), writer_active });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }
}

impl IndexFileLock {
    /// The locked index file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Temporaries of killed writers this lock removed when it was taken.
    pub fn removed_temporaries(&self) -> &[Temporary] {
        &self.removed
    }

    /// Loads the locked index as a [`SetIndex`](crate::SetIndex), from
    /// either file version (as [`super::load`]); [`Loaded::load`] reads it
    /// in another layout.
    ///
    /// # Errors
    ///
    /// Those of [`super::load`].
    pub fn load(&self) -> Result<Loaded> {
        super::load(&self.path)
    }

    /// Saves `index` (either layout, each in its own format) over the
    /// locked file: a temporary file beside it, synced and renamed over it.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] naming the step and the file.
    pub fn save<I: Persist>(&self, index: &I, names: &SetNames) -> Result<()> {
        replace(self, |w| super::write_to(w, index, names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_are_recognised_exactly() {
        let prefix = temp_prefix(Path::new("dir/a.bsi")).unwrap();
        assert_eq!(prefix, ".a.bsi.tmp-");
        assert!(is_temp_name(OsStr::new(".a.bsi.tmp-Ab12xZ"), &prefix));
        for other in
            [".a.bsi.tmp-Ab12x", ".a.bsi.tmp-Ab12xZ9", ".a.bsi.tmp-x.tmp-Ab12xZ", ".a.bsi.lock", ".b.bsi.tmp-Ab12xZ"]
        {
            assert!(!is_temp_name(OsStr::new(other), &prefix), "{other}");
        }
        assert!(temp_prefix(Path::new("/")).is_err());
    }
}

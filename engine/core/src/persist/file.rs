//! [`IndexFile`]: one writer at a time per index file, and the clean-up of
//! temporary files that killed writers leave behind.
//!
//! Every writer of an index file takes an exclusive advisory lock
//! (`flock(2)` through `fs4`) on a lock file beside it, `.NAME.lock`, and
//! holds it across its whole read-modify-write: load, change, save. A
//! second writer polls for the lock until its deadline and then fails with
//! [`Error::LockBusy`]. The lock file is never deleted (deleting it would
//! let two writers lock two different inodes) and the index itself is never
//! locked: it is replaced by rename, which a lock on it would not survive.
//!
//! Readers take no lock: [`super::save`] writes a temporary file and
//! renames it over the index, so a reader opens either the old file or the
//! new one, never a mix.
//!
//! A writer killed mid-save leaves its temporary file, `.NAME.tmp-PID-N`,
//! behind. The next writer that gets the lock removes every temporary of
//! the index whose writer process is gone; [`IndexFile::leftover_temporaries`]
//! lists them for tools (`bloomslice inspect` reports them).

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::LoadedIndex;
use crate::error::{Error, Result};
use crate::persist::SetNames;
use crate::sliced::SlicedIndex;

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
pub struct Temporary {
    /// The temporary file.
    pub path: PathBuf,
    /// The process id of the writer that created it.
    pub pid: u32,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether that writer process still runs (then the file may be a save
    /// in progress and is left alone). A process with that id that started
    /// after the file was last written is another process (the id was
    /// reused), so the writer counts as gone.
    pub writer_alive: bool,
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
    let name = path.file_name().ok_or_else(|| {
        Error::io("use", path, std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))
    })?;
    let mut s = OsString::from(".");
    s.push(name);
    s.push(suffix);
    Ok(path.with_file_name(s))
}

/// The directory `path` lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The temporary file name of the `n`-th save of this process: `.NAME.tmp-PID-N`.
pub(crate) fn temp_path(path: &Path) -> Result<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    sibling(path, &format!(".tmp-{}-{n}", std::process::id()))
}

/// The writer pid of a temporary name of `index_name`, or `None` if `name`
/// is not one.
fn temp_pid(name: &[u8], index_name: &[u8]) -> Option<u32> {
    let rest = name.strip_prefix(b".")?.strip_prefix(index_name)?.strip_prefix(b".tmp-")?;
    let dash = rest.iter().position(|&b| b == b'-')?;
    let (pid, n) = (&rest[..dash], &rest[dash + 1..]);
    if pid.is_empty() || n.is_empty() || !pid.iter().chain(n).all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(pid).ok()?.parse().ok()
}

/// Whether process `pid` still runs. A zombie (killed, not yet reaped) is
/// gone. Where this cannot be known, every process counts as alive, so
/// nothing is removed.
pub(crate) fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(target_os = "linux")]
    {
        match std::fs::read(format!("/proc/{pid}/stat")) {
            // `pid (comm) S ...`: the state follows the last `)`.
            Ok(stat) => {
                let state = stat.iter().rposition(|&b| b == b')').and_then(|i| stat.get(i + 2));
                !matches!(state, Some(b'Z' | b'X'))
            }
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        true
    }
}

/// When process `pid` started, if that can be known (Linux: field 22 of
/// `/proc/PID/stat`, in clock ticks after the boot time of `/proc/stat`).
fn process_start(pid: u32) -> Option<std::time::SystemTime> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        let close = stat.iter().rposition(|&b| b == b')')?;
        // Fields from the state (field 3) on; the start time is field 22.
        let ticks: u64 = stat
            .get(close + 2..)?
            .split(|&b| b == b' ')
            .nth(19)
            .and_then(|f| std::str::from_utf8(f).ok())?
            .parse()
            .ok()?;
        let boot: u64 = std::fs::read_to_string("/proc/stat")
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("btime "))?
            .trim()
            .parse()
            .ok()?;
        // SAFETY: `sysconf` only reads a configuration value.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if hz <= 0 {
            return None;
        }
        let since_boot = Duration::from_secs(ticks / hz as u64) + Duration::from_secs(ticks % hz as u64) / hz as u32;
        Some(std::time::UNIX_EPOCH + Duration::from_secs(boot) + since_boot)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Whether the writer of a temporary last modified at `modified` still
/// runs: process `pid` is alive and did not start after that (with two
/// seconds of slack for the boot time's one-second resolution).
fn writer_alive(pid: u32, modified: Option<std::time::SystemTime>) -> bool {
    if !process_alive(pid) {
        return false;
    }
    match (process_start(pid), modified) {
        (Some(start), Some(modified)) if pid != std::process::id() => start <= modified + Duration::from_secs(2),
        _ => true,
    }
}

#[cfg(unix)]
fn name_bytes(name: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    name.as_bytes().to_vec()
}

#[cfg(not(unix))]
fn name_bytes(name: &std::ffi::OsStr) -> Vec<u8> {
    name.to_string_lossy().into_owned().into_bytes()
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
    /// another writer (thread or process) holds it, then removes the
    /// temporaries of writers that are gone (see
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
        let mut removed = Vec::new();
        if let Ok(temps) = self.leftover_temporaries() {
            for t in temps.into_iter().filter(|t| !t.writer_alive) {
                if std::fs::remove_file(&t.path).is_ok() {
                    removed.push(t);
                }
            }
        }
        Ok(IndexFileLock { _file: file, path: self.path.clone(), removed })
    }

    /// Loads the index, lets `f` change it and saves it, all under the
    /// lock (taken as [`IndexFile::lock`] does). Nothing is saved when `f`
    /// fails.
    ///
    /// # Errors
    ///
    /// Those of [`IndexFile::lock`], [`super::load`], `f` and [`super::save`].
    pub fn edit<T, E: From<Error>>(
        &self,
        wait: Duration,
        f: impl FnOnce(&mut LoadedIndex) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let lock = self.lock(wait)?;
        let mut loaded = lock.load()?;
        let out = f(&mut loaded)?;
        lock.save(&loaded.index, &loaded.names)?;
        Ok(out)
    }

    /// The temporary files writers of this index left in its directory,
    /// in name order, whether their writer still runs or not.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the directory cannot be read.
    pub fn leftover_temporaries(&self) -> Result<Vec<Temporary>> {
        let Some(index_name) = self.path.file_name() else { return Ok(Vec::new()) };
        let index_name = name_bytes(index_name);
        let dir = parent_dir(&self.path);
        let io = |e: std::io::Error| Error::io("read the directory", dir, e);
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let Some(pid) = temp_pid(&name_bytes(&entry.file_name()), &index_name) else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let writer_alive = writer_alive(pid, meta.modified().ok());
            out.push(Temporary { path: entry.path(), pid, bytes: meta.len(), writer_alive });
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

    /// Temporaries of dead writers this lock removed when it was taken.
    pub fn removed_temporaries(&self) -> &[Temporary] {
        &self.removed
    }

    /// Loads the locked index (as [`super::load`]).
    ///
    /// # Errors
    ///
    /// Those of [`super::load`].
    pub fn load(&self) -> Result<LoadedIndex> {
        super::load(&self.path)
    }

    /// Saves over the locked index (as [`super::save`]: atomic replace).
    ///
    /// # Errors
    ///
    /// Those of [`super::save`].
    pub fn save(&self, index: &SlicedIndex, names: &SetNames) -> Result<()> {
        super::save(&self.path, index, names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_round_trip() {
        let t = temp_path(Path::new("dir/a.bsi")).unwrap();
        let name = t.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with(".a.bsi.tmp-"), "{name}");
        assert_eq!(temp_pid(name.as_bytes(), b"a.bsi"), Some(std::process::id()));
        assert_eq!(temp_pid(name.as_bytes(), b"b.bsi"), None);
        assert_eq!(temp_pid(b".a.bsi.tmp-12-3", b"a.bsi"), Some(12));
        for bad in [&b".a.bsi.tmp-12"[..], b".a.bsi.tmp--3", b".a.bsi.tmp-1x-3", b"a.bsi.tmp-1-2", b".a.bsi.lock"] {
            assert_eq!(temp_pid(bad, b"a.bsi"), None, "{}", String::from_utf8_lossy(bad));
        }
        assert!(temp_path(Path::new("/")).is_err());
        assert_ne!(temp_path(Path::new("a")).unwrap(), temp_path(Path::new("a")).unwrap());
    }

    #[test]
    fn a_live_process_that_started_after_the_file_is_not_its_writer() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let start = process_start(pid).unwrap();
        let now = std::time::SystemTime::now();
        assert!(start <= now + Duration::from_secs(1) && start + Duration::from_secs(60) > now, "{start:?}");
        assert!(writer_alive(pid, Some(now)));
        assert!(writer_alive(pid, None));
        assert!(!writer_alive(pid, Some(now - Duration::from_secs(3600))), "the pid was reused");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!writer_alive(pid, Some(now)));
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(process_alive(std::process::id()));
        if cfg!(target_os = "linux") {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            assert!(!process_alive(pid));
        }
    }
}

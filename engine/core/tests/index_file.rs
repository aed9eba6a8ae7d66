//! `persist::IndexFile`: one writer at a time (no lost update between
//! concurrent editors), a typed error when the lock stays busy, clean-up of
//! temporaries left by dead writers, size estimates that match real files,
//! and a clear error for a directory given as an index file.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use bloomslice::persist::Loaded;
use bloomslice::persist::{self, IndexFile};
use bloomslice::{BloomFilter, BloomParams, Error, SetNames, SlicedConfig, SlicedIndex};

fn params() -> BloomParams {
    BloomParams::new(4096, 3).unwrap()
}

fn one_set() -> (SlicedIndex, SetNames) {
    let mut index = SlicedIndex::new(params());
    let mut f = BloomFilter::new(params()).unwrap();
    f.insert("seed key");
    index.insert_filter(0, &f).unwrap();
    let mut names = SetNames::new();
    names.insert(0, "seed").unwrap();
    (index, names)
}

/// [`one_set`] saved as `i.bsi` in a new temporary directory.
fn one_set_saved() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.bsi");
    let (index, names) = one_set();
    persist::save(&path, &index, &names).unwrap();
    (dir, path)
}

/// Adds set `name` with key `name` (the id after the largest).
fn add_set(loaded: &mut Loaded, name: &str) -> bloomslice::Result<()> {
    let id = loaded.index.ids().max().map_or(0, |m| m + 1);
    loaded.index.insert_set(id, &[name])?;
    loaded.names.insert(id, name)
}

#[test]
#[cfg_attr(miri, ignore = "sixty locked load-change-save rounds: too many to interpret")]
fn concurrent_editors_never_lose_an_update() {
    let (dir, path) = one_set_saved();
    let rounds = 20;
    let start = Arc::new(Barrier::new(3));
    let writers: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|w| {
            let (path, start) = (path.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let file = IndexFile::new(&path);
                for r in 0..rounds {
                    file.edit(Duration::from_secs(60), |l| add_set(l, &format!("{w}{r}"))).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let loaded = persist::load(&path).unwrap();
    assert_eq!(loaded.index.len(), 1 + 3 * rounds);
    for w in ["a", "b", "c"] {
        for r in 0..rounds {
            let name = format!("{w}{r}");
            let id = loaded.names.id(name.as_bytes()).unwrap_or_else(|| panic!("{name} was lost"));
            assert!(loaded.index.query(&name).contains(&id));
        }
    }
    assert!(IndexFile::new(&path).leftover_temporaries().unwrap().is_empty());
    assert!(dir.path().join(".i.bsi.lock").exists(), "the lock file is kept");
}

#[test]
fn a_busy_lock_is_a_typed_error_after_the_wait_and_free_once_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.bsi");
    let file = IndexFile::new(&path);
    let held = file.lock(Duration::ZERO).unwrap();
    let t = Instant::now();
    let err = IndexFile::new(&path).lock(Duration::from_millis(200)).unwrap_err();
    assert!(t.elapsed() >= Duration::from_millis(200));
    match &err {
        Error::LockBusy { path: p, lock, waited_ms } => {
            assert!(p.ends_with("i.bsi") && lock.ends_with(".i.bsi.lock") && *waited_ms >= 200, "{err}");
        }
        e => panic!("{e}"),
    }
    assert!(err.to_string().contains(".i.bsi.lock"), "{err}");
    // A waiter gets the lock as soon as the holder lets go.
    let waiter = std::thread::spawn(move || IndexFile::new(&path).lock(Duration::from_secs(30)).map(|_| ()));
    std::thread::sleep(Duration::from_millis(100));
    drop(held);
    waiter.join().unwrap().unwrap();
    // `edit` saves nothing when the change fails.
    let (index, names) = one_set();
    persist::save(file.path(), &index, &names).unwrap();
    let before = std::fs::read(file.path()).unwrap();
    let r: Result<(), Error> = file.edit(Duration::ZERO, |l| l.index.remove_set(99));
    assert_eq!(r, Err(Error::UnknownId(99)));
    assert_eq!(std::fs::read(file.path()).unwrap(), before);
}

#[test]
fn the_lock_holder_removes_every_temporary_of_its_index() {
    let (dir, path) = one_set_saved();
    // Every save holds the lock, so under the lock these are orphans of
    // killed writers, whatever process wrote them.
    let stale = dir.path().join(".i.bsi.tmp-a1B2c3");
    let also_stale = dir.path().join(".i.bsi.tmp-ZZZZZZ");
    let other = dir.path().join(".j.bsi.tmp-a1B2c3");
    // Not temporaries of `i.bsi`: those of an index called `i.bsi.tmp-x`,
    // and a name with too few random characters.
    let lookalikes = [dir.path().join(".i.bsi.tmp-x.tmp-a1B2c3"), dir.path().join(".i.bsi.tmp-a1B2c")];
    for p in [&stale, &also_stale, &other].into_iter().chain(&lookalikes) {
        std::fs::write(p, vec![7u8; 1000]).unwrap();
    }
    let file = IndexFile::new(&path);
    let temps = file.leftover_temporaries().unwrap();
    assert_eq!(temps.len(), 2, "{temps:?}");
    assert!(temps.iter().any(|t| t.path == stale && !t.writer_active && t.bytes == 1000));
    assert!(temps.iter().any(|t| t.path == also_stale && !t.writer_active));
    let lock = file.lock(Duration::ZERO).unwrap();
    // Listed while a writer holds the lock, a temporary may be its save.
    std::fs::write(&stale, b"x").unwrap();
    assert!(file.leftover_temporaries().unwrap().iter().all(|t| t.writer_active));
    std::fs::remove_file(&stale).unwrap();
    assert_eq!(lock.removed_temporaries().len(), 2);
    assert_eq!(lock.removed_temporaries()[0].path, also_stale);
    assert!(!also_stale.exists() && other.exists() && lookalikes.iter().all(|p| p.exists()));
    assert_eq!(lock.load().unwrap().names, one_set().1);
    drop(lock);
    // A save leaves no temporary behind, and keeps the lock file.
    let (index, names) = one_set();
    persist::save(&path, &index, &names).unwrap();
    assert!(file.leftover_temporaries().unwrap().is_empty());
}

#[test]
#[cfg_attr(miri, ignore = "indexes of up to 1100 filters of 4096 bits: too large to interpret")]
fn estimated_sizes_match_saved_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = params();
    for (n, max_cols) in
        [(1u64, 16_384), (2, 16_384), (3, 512), (40, 512), (100, 512), (512, 16_384), (513, 512), (1100, 1024)]
    {
        let config = SlicedConfig { max_shard_columns: max_cols, ..SlicedConfig::default() };
        let mut index = SlicedIndex::with_config(p, config);
        index.reserve(n as usize).unwrap();
        let mut names = SetNames::new();
        let f = BloomFilter::new(p).unwrap();
        let mut name_bytes = 0;
        for id in 0..n {
            index.insert_filter(id, &f).unwrap();
            let name = format!("set-{id}");
            name_bytes += name.len() as u64;
            names.insert(id, name).unwrap();
        }
        let path = dir.path().join(format!("{n}.bsi"));
        persist::save(&path, &index, &names).unwrap();
        let real = std::fs::metadata(&path).unwrap().len();
        assert_eq!(persist::estimated_file_bytes(&p, &config, n, name_bytes), Some(real), "n = {n}");
        let rows = persist::estimated_rows_bytes(&p, &config, n).unwrap();
        assert_eq!(rows, index.rows_bytes() as u64, "n = {n}");
    }
    let huge = BloomParams::new(bloomslice::params::MAX_BITS, 1).unwrap();
    assert_eq!(persist::estimated_file_bytes(&huge, &SlicedConfig::default(), u64::MAX, 0), None);
}

#[test]
fn a_directory_is_not_an_index_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = Loaded::<SlicedIndex>::load(dir.path()).unwrap_err();
    assert!(matches!(err, Error::Io { ref source, .. } if source.kind() == std::io::ErrorKind::IsADirectory), "{err}");
    assert!(err.to_string().contains("is a directory"), "{err}");
    // SAFETY: nothing writes the directory's (absent) index file.
    let err =
        unsafe { Loaded::<SlicedIndex>::open_mmap(dir.path(), bloomslice::persist::Verify::Deferred) }.unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_saved_file_has_the_permissions_of_a_created_one() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, path) = one_set_saved();
    let created = dir.path().join("created");
    std::fs::File::create(&created).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), mode(&created));
}

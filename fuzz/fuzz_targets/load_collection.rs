//! Fuzzing of the collection file readers (format 2, and format 1 files
//! opened as one-part collections): arbitrary bytes must load or give a
//! typed error, never panic, hang or over-allocate, both from bytes and
//! mapped with `Verify::Deferred`.
//!
//! A collection that loads must validate, answer queries (naming only its
//! own sets, each once), score, and save back to a file of the same length
//! that loads with the same names and answers. A deferred map must answer
//! without a panic, naming only its own sets, and its `verify` must accept
//! exactly the files `persist::from_bytes` accepts, after which it
//! answers as the loaded collection. As for `load`, every input is also
//! tried with its checksums recomputed (every section of the collection
//! file, and every section of each embedded part), to reach the structural
//! checks behind them.
#![no_main]

mod checksums;
mod scratch;

use std::path::Path;

use bloomslice::persist::{self, Verify};
use bloomslice::{BatchResults, Scores, SetIndex, Threshold};
use libfuzzer_sys::fuzz_target;

/// [`checksums::le_u64`] at an offset read from the input.
fn le_u64(b: &[u8], at: u64) -> Option<u64> {
    checksums::le_u64(b, usize::try_from(at).ok()?)
}

/// [`checksums::put_sum`] up to an end computed with checked arithmetic.
fn put_sum(b: &mut [u8], start: u64, end: Option<u64>) -> Option<()> {
    checksums::put_sum(b, start, end?)
}

/// Recomputes every checksum a collection file's header and part table
/// locate, the embedded parts' included (best effort; counts and offsets
/// are the input's own, so every step is checked arithmetic).
fn fix_collection_checksums(b: &mut [u8]) -> Option<()> {
    let count = |b: &[u8], i: u64| le_u64(b, 56 + 8 * i);
    let offset = |b: &[u8], i: u64| le_u64(b, 104 + 8 * i);
    let (parts, plans, filters) = (count(b, 0)?, count(b, 1)?, count(b, 2)?);
    let (named, name_bytes) = (count(b, 4)?, count(b, 5)?);
    let len = b.len() as u64;
    let table = offset(b, 0)?;
    let table_end = table.checked_add(parts.checked_mul(64)?)?;
    if table_end <= len {
        // `table_end <= len` bounds `parts` by the input size.
        for i in 0..parts {
            let e = table + 64 * i;
            let (at, size) = (le_u64(b, e)?, le_u64(b, e + 8)?);
            if let Some(end) = at.checked_add(size).filter(|&end| end <= len) {
                let _ = checksums::fix_checksums(&mut b[at as usize..end as usize]);
            }
        }
        put_sum(b, table, Some(table_end));
    }
    let layout = offset(b, 1)?;
    put_sum(b, layout, plans.checked_mul(40).and_then(|x| x.checked_add(32)).and_then(|x| x.checked_add(layout)));
    let sets = offset(b, 2)?;
    put_sum(b, sets, filters.checked_mul(32).and_then(|x| x.checked_add(sets)));
    let names = offset(b, 3)?;
    put_sum(b, names, named.checked_mul(16).and_then(|x| x.checked_add(name_bytes)).and_then(|x| x.checked_add(names)));
    put_sum(b, 0, Some(184));
    Some(())
}

fn keys() -> Vec<[u8; 8]> {
    (0..64u64).map(u64::to_le_bytes).collect()
}

/// Whether `ids` are sets of `c`, each once.
fn own_ids(c: &SetIndex, ids: &[u64]) -> bool {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    sorted.len() == ids.len() && ids.iter().all(|&id| c.contains(id))
}

/// Every query of `c` over the probe keys, checked to name only its sets.
fn answers(c: &SetIndex) -> Vec<Vec<u64>> {
    let keys = keys();
    let mut out = Vec::with_capacity(keys.len());
    for key in &keys {
        let ids = c.query(key);
        assert!(own_ids(c, &ids), "a collection named an id it does not hold");
        out.push(ids);
    }
    let mut batch = BatchResults::new();
    c.query_batch(&keys, &mut batch);
    assert_eq!(batch.len(), keys.len());
    assert!(batch.iter().all(|ids| own_ids(c, ids)), "a batch named an id the collection does not hold");
    let mut scores = Scores::new();
    c.score_into(&keys[..16], &mut scores);
    assert!(scores.iter().all(|(id, n)| c.contains(id) && n as usize <= 16));
    let hits = c.query_threshold(&keys[..16], Threshold::count(1));
    assert!(hits.iter().all(|&(id, n)| c.contains(id) && (1..=16).contains(&n)));
    out
}

fn check(bytes: &[u8]) {
    scratch::check_with_scratch("collection", "bsc", bytes, check_file);
}

fn check_file(bytes: &[u8], path: &Path) {
    let full = persist::from_bytes(bytes);
    let loaded_answers = full.as_ref().ok().map(|loaded| {
        loaded.index.validate().expect("a loaded collection is valid");
        let got = answers(&loaded.index);
        let again = persist::to_bytes(&loaded.index, &loaded.names).expect("save");
        let reloaded = persist::from_bytes(&again).expect("a saved collection loads");
        assert_eq!(reloaded.names, loaded.names);
        if loaded.info.version.0 == persist::COLLECTION_FORMAT_MAJOR {
            assert_eq!(again.len(), bytes.len(), "a collection file saves back to its length");
        }
        for (key, want) in keys().iter().zip(&got) {
            let mut a = reloaded.index.query(key);
            let mut b = want.clone();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "a saved collection answers differently");
        }
        got
    });

    std::fs::write(path, bytes).expect("write the scratch file");
    // SAFETY: the scratch file belongs to this process alone, and it is
    // removed and rewritten (by `scratch::check_with_scratch`) only after every
    // map of it made here has been dropped at the end of this call.
    let opened = unsafe { persist::open_mmap(path, Verify::Deferred) };
    let Ok(mut lazy) = opened else {
        assert!(full.is_err(), "a deferred open refused a file that loads");
        return;
    };
    let _ = answers(&lazy.index);
    let _ = lazy.names.len();
    match (lazy.verify(), loaded_answers) {
        (Ok(()), Some(want)) => {
            for (key, want) in keys().iter().zip(want) {
                assert_eq!(lazy.index.query(key), want, "mapped and loaded answers differ");
            }
            lazy.index.validate().expect("a verified collection is valid");
        }
        (Ok(()), None) => panic!("verify accepted a file that persist::from_bytes rejects"),
        (Err(e), Some(_)) => panic!("verify rejected a file that persist::from_bytes accepts: {e}"),
        (Err(_), None) => {}
    }
}

fuzz_target!(|data: &[u8]| {
    // As given, and (for a format-1 file) with its checksums fixed.
    checksums::check_raw_and_fixed(data, check);
    if data.len() >= 192 && data[8] == 2 {
        let mut fixed = data.to_vec();
        let _ = fix_collection_checksums(&mut fixed);
        check(&fixed);
    }
});

//! Fuzzing of the index file loader: arbitrary bytes must load or give a
//! typed error, never panic, hang or over-allocate.
//!
//! Random mutations almost always break a checksum, which the loader checks
//! first; so every input is also loaded a second time after its checksums
//! are recomputed (as a hostile, rather than merely corrupt, file would
//! have them), to reach the structural checks behind them. An input that
//! loads must validate, answer queries, and save back to the same bytes.
#![no_main]

use bloomslice::persist;
use libfuzzer_sys::fuzz_target;
use xxhash_rust::xxh3::xxh3_64;

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn put_sum(b: &mut [u8], start: usize, end: usize) {
    if start <= end && end + 8 <= b.len() {
        let sum = xxh3_64(&b[start..end]);
        b[end..end + 8].copy_from_slice(&sum.to_le_bytes());
    }
}

/// Recomputes every checksum the header's counts locate (best effort).
fn fix_checksums(b: &mut [u8]) -> Option<()> {
    let (n_shards, n_sets, names_len) = (le_u64(b, 56)?, le_u64(b, 64)?, le_u64(b, 72)?);
    let len = b.len() as u64;
    let table_end = 128u64.checked_add(n_shards.checked_mul(32)?)?;
    if table_end + 8 <= len {
        for i in 0..n_shards as usize {
            let e = 128 + i * 32;
            let (offset, columns) = (le_u64(b, e + 16)?, le_u64(b, e)?);
            let bytes = le_u64(b, 24)?.checked_mul(columns / 64)?.checked_mul(8)?;
            let end = offset.checked_add(bytes)?;
            if end <= len {
                let sum = xxh3_64(&b[offset as usize..end as usize]);
                b[e + 24..e + 32].copy_from_slice(&sum.to_le_bytes());
            }
        }
        put_sum(b, 128, table_end as usize);
    }
    let map = table_end.checked_add(8)?;
    let map_end = map.checked_add(n_sets.checked_mul(24)?)?;
    if map_end + 8 <= len {
        put_sum(b, map as usize, map_end as usize);
    }
    let names = map_end.checked_add(8)?;
    let names_end = names.checked_add(names_len)?;
    if names_end + 8 <= len {
        put_sum(b, names as usize, names_end as usize);
    }
    put_sum(b, 0, 120);
    Some(())
}

fn check(bytes: &[u8]) {
    let Ok(loaded) = persist::from_bytes(bytes) else { return };
    loaded.index.validate().expect("a loaded index is valid");
    for key in 0..64u64 {
        let ids = loaded.index.query(&key.to_le_bytes());
        assert!(ids.iter().all(|id| loaded.index.contains_id(*id)));
    }
    let again = persist::to_bytes(&loaded.index, &loaded.names).expect("save");
    assert_eq!(again.len(), bytes.len());
    let reloaded = persist::from_bytes(&again).expect("a saved index loads");
    assert_eq!(reloaded.names, loaded.names);
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if data.len() >= 128 {
        let mut fixed = data.to_vec();
        let _ = fix_checksums(&mut fixed);
        check(&fixed);
    }
});

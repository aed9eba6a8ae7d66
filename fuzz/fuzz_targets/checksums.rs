//! Recomputing the checksums of a mutated index file, shared by the `load`
//! and `load_deferred` targets: random mutations almost always break a
//! checksum, which loaders check first, so inputs are also tried with their
//! checksums fixed (as a hostile, rather than merely corrupt, file would
//! have them) to reach the structural checks behind them.
//!
//! The header's counts are attacker-controlled: every offset is computed
//! with checked arithmetic (a count near `u64::MAX` once overflowed
//! `map_end + 8` here and panicked the harness itself).

use xxhash_rust::xxh3::xxh3_64;

/// The little-endian `u64` at `b[at..at + 8]`, if it is there.
pub fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// Writes the xxh3 of `b[start..end]` at `end`, if it fits.
pub fn put_sum(b: &mut [u8], start: u64, end: u64) -> Option<()> {
    let (start, end) = (usize::try_from(start).ok()?, usize::try_from(end).ok()?);
    let sum_end = end.checked_add(8)?;
    if start > end || sum_end > b.len() {
        return None;
    }
    let sum = xxh3_64(&b[start..end]);
    b[end..sum_end].copy_from_slice(&sum.to_le_bytes());
    Some(())
}

/// Recomputes every checksum the header's counts locate (best effort).
pub fn fix_checksums(b: &mut [u8]) -> Option<()> {
    let (n_shards, n_sets, names_len) = (le_u64(b, 56)?, le_u64(b, 64)?, le_u64(b, 72)?);
    let len = b.len() as u64;
    let table_end = 128u64.checked_add(n_shards.checked_mul(32)?)?;
    if table_end.checked_add(8)? <= len {
        // `table_end <= len` bounds `n_shards` by the input size.
        for i in 0..n_shards {
            let e = usize::try_from(128 + i * 32).ok()?;
            let (offset, columns) = (le_u64(b, e + 16)?, le_u64(b, e)?);
            let bytes = le_u64(b, 24)?.checked_mul(columns / 64)?.checked_mul(8)?;
            let end = offset.checked_add(bytes)?;
            if end <= len {
                let sum = xxh3_64(&b[offset as usize..end as usize]);
                b[e + 24..e + 32].copy_from_slice(&sum.to_le_bytes());
            }
        }
        put_sum(b, 128, table_end);
    }
    let map = table_end.checked_add(8)?;
    let map_end = map.checked_add(n_sets.checked_mul(24)?)?;
    put_sum(b, map, map_end);
    let names = map_end.checked_add(8)?;
    let names_end = names.checked_add(names_len)?;
    put_sum(b, names, names_end);
    put_sum(b, 0, 120);
    Some(())
}

/// Runs `check` on `data` as given, then, for an input long enough to hold
/// a header, on a copy with its checksums fixed, so that the fuzzer also
/// reaches the parser past the checksum tests.
pub fn check_raw_and_fixed(data: &[u8], check: impl Fn(&[u8])) {
    check(data);
    if data.len() >= 128 {
        let mut fixed = data.to_vec();
        let _ = fix_checksums(&mut fixed);
        check(&fixed);
    }
}

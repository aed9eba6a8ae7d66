//! A collection's queries with and without prefetching its parts' rows, on
//! skewed collections from about 0.2 MB to 50 MB of rows:
//! `cargo run --release -p bloomslice --example collection_prefetch [ROUNDS] [COPIES]`.
//! Queries each collection in every [`PartPrefetch`] mode
//! ([`SetIndex::set_part_prefetch`]) and prints ns per key of batched and
//! single-key queries; `auto` reads without prefetching up to
//! [`RESIDENT_ROWS_BYTES`](bloomslice::collection::RESIDENT_ROWS_BYTES).
//! `COPIES` measures one size only.
use std::hint::black_box;
use std::time::Instant;

use bloomslice::collection::PartPrefetch;
use bloomslice::{BatchResults, Key, KeyHash, LayoutConfig, SetIndex};

/// `copies` copies of 730 skewed sets (set `i` of a copy holds about
/// 50 000 / (i + 1) keys, a quarter of that for two sets in three).
fn sets(copies: u64) -> Vec<(u64, Vec<KeyHash>)> {
    let mut sets = Vec::new();
    for c in 0..copies {
        for i in 0..730u64 {
            let n = (50_000 / (i + 1)) / if i % 3 == 0 { 1 } else { 4 } + 1;
            let id = c * 1_000 + i;
            sets.push((id, (0..n).map(|k| ((id << 32) | k).to_le_bytes().key_hash(0)).collect()));
        }
    }
    sets
}

fn measure(copies: u64, rounds: usize) -> bloomslice::Result<()> {
    let sets = sets(copies);
    let mut c = SetIndex::build(&sets, 0.01, LayoutConfig::default())?;
    for mode in [PartPrefetch::Always, PartPrefetch::Never, PartPrefetch::Auto] {
        c.set_part_prefetch(mode);
        measure_mode(&c, &sets, mode, rounds);
    }
    Ok(())
}

fn measure_mode(c: &SetIndex, sets: &[(u64, Vec<KeyHash>)], mode: PartPrefetch, rounds: usize) {
    let rows: usize = c.parts().map(|part| part.rows_bytes()).sum();
    // Half present (a set chosen in turn, one of its first keys), half absent.
    let hashes: Vec<KeyHash> = (0..20_000u64)
        .map(|q| {
            if q % 2 == 0 {
                let (_, keys) = &sets[(q as usize / 2 * 7919) % sets.len()];
                keys[(q as usize / 2) % keys.len()]
            } else {
                (q | (1 << 62)).to_le_bytes().key_hash(0)
            }
        })
        .collect();
    let mut results = BatchResults::new();
    let mut single = Vec::new();
    // Checked before timing: every present key finds its set, and the batch
    // answers as the single-key path.
    c.query_batch_hashes(&hashes, &mut results);
    for (q, &hash) in hashes.iter().enumerate() {
        c.query_hash_into(hash, &mut single);
        assert_eq!(results.get(q), Some(&single[..]), "batch and single key {q} differ");
        if q % 2 == 0 {
            let (id, _) = &sets[(q / 2 * 7919) % sets.len()];
            assert!(single.contains(id), "false negative for key {q}");
        }
    }
    let (mut batched, mut one) = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        let t = Instant::now();
        c.query_batch_hashes(&hashes, &mut results);
        black_box(results.total_matches());
        batched = batched.min(t.elapsed().as_secs_f64() * 1e9 / hashes.len() as f64);
        let t = Instant::now();
        for &hash in &hashes {
            c.query_hash_into(hash, &mut single);
            black_box(single.len());
        }
        one = one.min(t.elapsed().as_secs_f64() * 1e9 / hashes.len() as f64);
    }
    println!(
        "{:>6} {:>7} sets {:>9} KB rows {:>3} parts: batched {:>7.1} ns, single {:>7.1} ns",
        mode.name(),
        sets.len(),
        rows / 1024,
        c.parts().filter(|part| !part.is_empty()).count(),
        batched,
        one
    );
}

fn main() -> bloomslice::Result<()> {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(9);
    let copies = match args.next().and_then(|a| a.parse().ok()) {
        Some(n) => vec![n],
        None => vec![1u64, 4, 16, 64, 256],
    };
    for n in copies {
        measure(n, rounds)?;
    }
    Ok(())
}

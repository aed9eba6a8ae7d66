//! Batched queries on a skewed collection against one `m` sized for its
//! largest set, the same sets, in one run:
//! `cargo run --release -p bloomslice --example collection_batch -- [rounds]`.
//! Under callgrind, `--toggle-collect='*collection_batch*measured*'`
//! counts the collection's batches only.
use std::hint::black_box;
use std::time::Instant;

use bloomslice::{BatchResults, BloomFilter, BloomParams, Key, KeyHash, LayoutConfig, SetIndex, SlicedIndex};

/// The collection's batch, kept out of line so callgrind can isolate it.
#[inline(never)]
fn measured(c: &SetIndex, hashes: &[KeyHash], results: &mut BatchResults) -> usize {
    c.query_batch_hashes(hashes, results);
    results.total_matches()
}

fn main() -> bloomslice::Result<()> {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    // 730 sets: set i holds about 50 000 / (i + 1) keys (a quarter of that
    // for two sets in three), so sizes run from 50 001 down to 1.
    let sets: Vec<(u64, Vec<[u8; 8]>)> = (0..730u64)
        .map(|i| {
            let n = (50_000 / (i + 1)) as usize / if i % 3 == 0 { 1 } else { 4 } + 1;
            (i, (0..n as u64).map(|k| ((i << 32) | k).to_le_bytes()).collect())
        })
        .collect();
    let c = SetIndex::build(&sets, 0.01, LayoutConfig::default())?;
    let largest = sets.iter().map(|(_, keys)| keys.len()).max().unwrap_or(1) as u64;
    let mut one_m = SlicedIndex::new(BloomParams::for_capacity(largest, 0.01)?);
    for (id, keys) in &sets {
        let mut filter = BloomFilter::new(*one_m.params())?;
        for key in keys {
            filter.insert(key);
        }
        one_m.insert_filter(*id, &filter)?;
    }
    // Half present (key 0 or 1 of a set), half absent.
    let keys: Vec<[u8; 8]> = (0..10_000u64)
        .map(|q| if q % 2 == 0 { ((q % 730) << 32) | ((q / 730) % 2) } else { q | (1 << 62) }.to_le_bytes())
        .collect();
    let hashes: Vec<KeyHash> = keys.iter().map(|k| k.key_hash(0)).collect();
    let (mut results, mut check) = (BatchResults::new(), BatchResults::new());
    // No false negatives in either engine before timing.
    c.query_batch_hashes(&hashes, &mut results);
    one_m.query_batch_hashes(&hashes, &mut check);
    for (i, q) in (0..10_000u64).enumerate() {
        if q % 2 == 0 {
            let set = q % 730;
            assert!(results.get(i).is_some_and(|ids| ids.contains(&set)), "collection misses key {q}");
            assert!(check.get(i).is_some_and(|ids| ids.contains(&set)), "one m misses key {q}");
        }
    }
    let (mut best_c, mut best_m) = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        let t = Instant::now();
        black_box(measured(&c, &hashes, &mut results));
        best_c = best_c.min(t.elapsed().as_secs_f64() * 1e9 / hashes.len() as f64);
        let t = Instant::now();
        one_m.query_batch_hashes(&hashes, &mut check);
        black_box(check.total_matches());
        best_m = best_m.min(t.elapsed().as_secs_f64() * 1e9 / hashes.len() as f64);
    }
    println!(
        "collection: {} parts, {} bytes, {best_c:.1} ns/key; one m: {} bytes, {best_m:.1} ns/key; ratio {:.2}",
        c.parts().len(),
        c.memory_bytes(),
        one_m.memory_bytes(),
        best_c / best_m
    );
    Ok(())
}

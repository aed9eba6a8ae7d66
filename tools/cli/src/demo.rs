//! The `paper` workload for `demo` and `bench`, built from the library
//! alone: filter `i` holds the 8-byte little-endian keys
//! `[100 i, 100 i + 100)` (the Bloofi paper's default workload, m = 100 992,
//! k = 7), and a query set of half present keys (with their owner) and half
//! absent ones (top bit set). The full comparison, with `fastbloom`, the
//! Bloofi tree and the memory roofline, is `paper query` of the
//! `bloomslice-bench` crate.

use std::time::{Duration, Instant};

use bloomslice::kernels::Kernels;
use bloomslice::{
    BatchResults, BloomFilter, BloomParams, KeyHash, LayoutConfig, NaiveIndex, ReadIndex, SetIndex, SlicedIndex,
};

use crate::CliError;

/// Keys per filter of the `paper` workload.
pub const KEYS_PER_FILTER: u64 = 100;
/// Keys per batch in the batched timings.
pub const BATCH: usize = 1024;
/// Absent keys have this bit set; present keys never do.
const ABSENT_BIT: u64 = 1 << 63;

/// The workload's target false-positive rate.
pub const FP: f64 = 0.01;

/// The workload's parameters: 10 000 expected keys at 1% (m = 100 992, k = 7).
pub fn params() -> BloomParams {
    BloomParams::for_capacity(10_000, FP).expect("valid parameters")
}

/// SplitMix64's first output from state `x` (`rand_xoshiro`, the
/// generator of the tests and benches): the query generator's
/// deterministic stream.
fn splitmix64(x: u64) -> u64 {
    use rand_xoshiro::rand_core::{RngCore, SeedableRng};
    rand_xoshiro::SplitMix64::seed_from_u64(x).next_u64()
}

/// The filters: `(id, filter)` for `id` in `0..filters`.
pub fn filters(params: BloomParams, filters: u64) -> Result<Vec<(u64, BloomFilter)>, CliError> {
    (0..filters)
        .map(|id| {
            let mut f = BloomFilter::new(params).map_err(CliError::engine)?;
            for key in id * KEYS_PER_FILTER..(id + 1) * KEYS_PER_FILTER {
                f.insert(&key.to_le_bytes());
            }
            Ok((id, f))
        })
        .collect()
}

/// `n` queries, alternately present (a key of a pseudo-random filter
/// `< filters`) and absent, as keys.
pub fn queries(n: usize, filters: u64, seed: u64) -> Vec<u64> {
    (0..n as u64)
        .map(|i| {
            let r = splitmix64(seed ^ splitmix64(i));
            if i % 2 == 0 { r % (filters.max(1) * KEYS_PER_FILTER) } else { r | ABSENT_BIT }
        })
        .collect()
}

/// The best of `repeat` timings of `pass`, which returns a match count
/// that must not change between passes.
pub fn best_of(repeat: usize, mut pass: impl FnMut() -> usize) -> Result<Duration, CliError> {
    let (mut best, mut matches) = (Duration::MAX, None);
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        let n = std::hint::black_box(pass());
        best = best.min(start.elapsed());
        if matches.is_some_and(|m| m != n) {
            return Err(CliError::Runtime("an engine's answers changed between passes".into()));
        }
        matches = Some(n);
    }
    Ok(best)
}

/// The best of `repeat` passes of `hashes` over `index`: one key per call
/// (`batch` is `None`) or batches of `batch` keys (`query_batch_hashes`).
pub fn time_queries(
    index: &dyn ReadIndex,
    hashes: &[KeyHash],
    batch: Option<usize>,
    repeat: usize,
) -> Result<Duration, CliError> {
    let (mut out, mut results) = (Vec::new(), BatchResults::new());
    best_of(repeat, || match batch {
        None => hashes
            .iter()
            .map(|&h| {
                index.query_hash_into(h, &mut out);
                out.len()
            })
            .sum(),
        Some(b) => hashes
            .chunks(b.max(1))
            .map(|chunk| {
                index.query_batch_hashes(chunk, &mut results);
                results.total_matches()
            })
            .sum(),
    })
}

/// Checks `index` against `reference` (the naive list's sorted answers to
/// the first queries of `hashes`), one key at a time and batched.
fn check(name: &str, index: &dyn ReadIndex, hashes: &[KeyHash], reference: &[Vec<u64>]) -> Result<(), CliError> {
    let (mut out, mut results) = (Vec::new(), BatchResults::new());
    index.query_batch_hashes(&hashes[..reference.len()], &mut results);
    for (i, want) in reference.iter().enumerate() {
        index.query_hash_into(hashes[i], &mut out);
        let batch = results.get(i).unwrap_or_default();
        if &sorted(out.clone()) != want || &sorted(batch.to_vec()) != want {
            return Err(CliError::Runtime(format!("answer check failed: {name} disagrees with naive on query {i}")));
        }
    }
    Ok(())
}

/// The naive answers to the first `n` of `hashes` (sorted), checking that
/// each present key's owner is among them.
fn reference(naive: &NaiveIndex, keys: &[u64], hashes: &[KeyHash], n: usize) -> Result<Vec<Vec<u64>>, CliError> {
    let mut out = Vec::new();
    keys.iter()
        .zip(hashes)
        .take(n)
        .map(|(key, &h)| {
            naive.query_hash_into(h, &mut out);
            if key & ABSENT_BIT == 0 && !out.contains(&(key / KEYS_PER_FILTER)) {
                return Err(CliError::Runtime(format!("answer check failed: naive lost key {key}")));
            }
            Ok(sorted(out.clone()))
        })
        .collect()
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// One row of the demo table.
struct Row {
    engine: String,
    batched: bool,
    ns: f64,
    checked: usize,
}

/// Builds the workload, checks every engine against the naive list of
/// filters (exact id sets, and each present key's owner found), then
/// times them and prints the table. The front door ([`SetIndex`], each set
/// sized from its own keys) comes first; the paper's fixed `m` follows as
/// a [`SlicedIndex`] (scalar and dispatched kernels) and as a one-part set
/// index of those filters.
pub fn run(filters_n: u64, queries_n: usize, naive_queries: usize) -> Result<(), CliError> {
    let p = params();
    let start = Instant::now();
    let sets: Vec<(u64, Vec<[u8; 8]>)> = (0..filters_n)
        .map(|id| (id, (id * KEYS_PER_FILTER..(id + 1) * KEYS_PER_FILTER).map(u64::to_le_bytes).collect()))
        .collect();
    let sized = SetIndex::build(&sets, FP, LayoutConfig::default()).map_err(CliError::engine)?;
    drop(sets);
    let built = filters(p, filters_n)?;
    let mut naive = NaiveIndex::new(p);
    for (id, f) in &built {
        naive.insert_filter(*id, f).map_err(CliError::engine)?;
    }
    let mut sliced = SlicedIndex::new(p);
    let items: Vec<(u64, &BloomFilter)> = built.iter().map(|(id, f)| (*id, f)).collect();
    sliced.insert_filters(&items).map_err(CliError::engine)?;
    drop(built);
    let keys = queries(queries_n, filters_n, 42);
    let hashes: Vec<KeyHash> = keys.iter().map(|k| p.hash(&k.to_le_bytes())).collect();
    let build_s = start.elapsed().as_secs_f64();
    let dispatched = Kernels::detect();
    let naive_n = naive_queries.min(hashes.len());

    // Check before timing: the naive answers are the reference, and hold
    // every present key's owner. The sized index's reference is the naive
    // list of its own filters (their `m` is sized for 100 keys).
    let reference_fixed = reference(&naive, &keys, &hashes, naive_n)?;
    let sized_params = sized.parts().next().map_or(p, |part| *part.params());
    let mut sized_naive = NaiveIndex::new(sized_params);
    for part in sized.parts() {
        for id in part.ids() {
            sized_naive
                .insert_filter(id, &part.filter_cloned(id).map_err(CliError::engine)?)
                .map_err(CliError::engine)?;
        }
    }
    let reference_sized = reference(&sized_naive, &keys, &hashes, naive_n)?;
    check("set index", &sized, &hashes, &reference_sized)?;

    let mut rows = Vec::new();
    let t = time_queries(&naive, &hashes[..naive_n], None, 1)?;
    rows.push(Row {
        engine: "naive".into(),
        batched: false,
        ns: t.as_secs_f64() * 1e9 / naive_n as f64,
        checked: naive_n,
    });
    let timed = |name: &str, index: &dyn ReadIndex, rows: &mut Vec<Row>| -> Result<(), CliError> {
        for batched in [false, true] {
            let t = time_queries(index, &hashes, batched.then_some(BATCH), 3)?;
            rows.push(Row {
                engine: name.into(),
                batched,
                ns: t.as_secs_f64() * 1e9 / hashes.len() as f64,
                checked: naive_n,
            });
        }
        Ok(())
    };
    timed("set index", &sized, &mut rows)?;
    for (name, kernels) in [("sliced-scalar", Kernels::scalar()), ("sliced", dispatched)] {
        sliced.set_kernels(kernels);
        check(name, &sliced, &hashes, &reference_fixed)?;
        timed(name, &sliced, &mut rows)?;
    }
    // The same filters as a set index of one part (what `build --n-exp`
    // and `demo --save` write): checked and timed like the sliced index.
    sliced.set_kernels(dispatched);
    let one_part = SetIndex::from_index(sliced.clone(), FP).map_err(CliError::engine)?;
    check("set index (fixed m)", &one_part, &hashes, &reference_fixed)?;
    timed("set index m=fix", &one_part, &mut rows)?;

    println!(
        "workload paper: N = {filters_n} filters x {KEYS_PER_FILTER} keys, m = {}, k = {}, {queries_n} queries (half present), seed 42",
        p.m(),
        p.k()
    );
    println!("kernels: dispatched {} (available: {})", dispatched.backend(), available());
    println!(
        "set index: each set sized from its own keys at {FP}: {} part(s), m = {}, {:.2} MiB",
        sized.parts().len(),
        sized_params.m(),
        sized.memory_bytes() as f64 / f64::from(1u32 << 20)
    );
    println!(
        "sliced (the paper's fixed m): {} shards, {} columns, {:.1} MiB; built in {build_s:.2} s; batches of {BATCH} keys; \
         best of 3 passes",
        sliced.shard_count(),
        sliced.columns(),
        sliced.memory_bytes() as f64 / f64::from(1u32 << 20)
    );
    println!();
    println!(
        "{:<16} {:>7} {:>12} {:>12} {:>9} {:>8}",
        "engine", "batched", "ns/query", "queries/s", "vs naive", "checked"
    );
    let naive_ns = rows[0].ns;
    for r in &rows {
        println!(
            "{:<16} {:>7} {:>12.1} {:>12.0} {:>8.1}x {:>8}",
            r.engine,
            if r.batched { "yes" } else { "no" },
            r.ns,
            1e9 / r.ns,
            naive_ns / r.ns,
            r.checked
        );
    }
    println!();
    println!(
        "answers: the first {naive_n} queries were checked before timing (every engine returns exactly the naive id set; \
         naive finds every present key's owner). The set index sized from the data is checked against the naive \
         list of its own filters. The naive engine is timed on those {naive_n}, the others on all {queries_n}. Full comparison (fastbloom, Bloofi, roofline): cargo run --release -p bloomslice-bench --bin paper -- query"
    );
    Ok(())
}

fn available() -> String {
    Kernels::available().iter().map(|k| k.backend().to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_half_present_and_deterministic() {
        let q = queries(1000, 30, 7);
        assert_eq!(q, queries(1000, 30, 7));
        assert_eq!(q.iter().filter(|k| *k & ABSENT_BIT == 0).count(), 500);
        assert!(q.iter().filter(|k| *k & ABSENT_BIT == 0).all(|k| k / KEYS_PER_FILTER < 30));
    }

    #[test]
    fn every_present_key_is_found_in_its_filter() {
        let p = params();
        let built = filters(p, 5).unwrap();
        for key in queries(200, 5, 1).into_iter().filter(|k| k & ABSENT_BIT == 0) {
            assert!(built[(key / KEYS_PER_FILTER) as usize].1.contains(&key.to_le_bytes()));
        }
    }
}

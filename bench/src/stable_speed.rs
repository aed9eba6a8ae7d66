//! Stream throughput of the stable and importance-aware filters
//! (`paper stable` prints it after the Table I-style grid).
//!
//! Every policy of [`Policy::ALL`] runs `observe` over the same synthetic
//! stream (uniform, 10% repeats, importance 1..=50, 4-byte keys) at the
//! paper's parameters (16 KB, M = 7, K = 5, P = 10). The plain-bit baseline
//! is a [`BloomFilter`] of the same 16 KB doing `contains` then `insert`,
//! what a duplicate detector without forgetting costs.
//!
//! Before anything is timed, each engine's duplicate count is computed once;
//! every timed pass must reproduce it exactly (the filters are seeded, so a
//! pass is deterministic), otherwise the run fails.

use std::hint::black_box;

use crate::stable_experiment::{Distribution, StreamConfig, StreamItem, synthetic_stream};
use bloomslice::{BloomFilter, BloomParams};
use bloomslice_papers::{Policy, StableBloomFilter, StableParams};

/// One row of the throughput table.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedRow {
    /// Engine name (a policy's name, or `bit BF` for the baseline).
    pub engine: String,
    /// Items per second of the best pass, in millions.
    pub mitems_per_s: f64,
    /// Nanoseconds per item of the best pass.
    pub ns_per_item: f64,
    /// Items reported as duplicates (identical in every pass).
    pub duplicates: u64,
}

/// One engine's whole pass over the stream, returning its duplicate count.
type Pass<'a> = Box<dyn Fn() -> Result<u64, String> + 'a>;

/// Seed of the filters' random decrements in the timed passes.
const FILTER_SEED: u64 = 0x5eed;

fn run_policy(params: &StableParams, policy: Policy, stream: &[StreamItem]) -> Result<u64, String> {
    let mut filter = StableBloomFilter::new(*params, policy, FILTER_SEED);
    let mut duplicates = 0u64;
    for item in stream {
        let dup = filter.observe(&item.element.to_le_bytes(), item.importance).map_err(|e| e.to_string())?;
        duplicates += u64::from(dup);
    }
    black_box(filter.cells());
    Ok(duplicates)
}

fn run_bits(params: &BloomParams, stream: &[StreamItem]) -> Result<u64, String> {
    let mut filter = BloomFilter::new(*params).map_err(|e| e.to_string())?;
    let mut duplicates = 0u64;
    for item in stream {
        let key = item.element.to_le_bytes();
        let dup = filter.contains(&key);
        filter.insert(&key);
        duplicates += u64::from(dup);
    }
    black_box(filter.words());
    Ok(duplicates)
}

/// Times every policy and the bit baseline over a stream of `items` items,
/// best of `passes` passes each.
///
/// # Errors
///
/// A message when the stream cannot be made, or when a timed pass does not
/// reproduce its engine's duplicate count.
pub fn measure(items: usize, passes: usize, seed: u64) -> Result<Vec<SpeedRow>, String> {
    let params = StableParams::paper();
    // 90% of the items are first sightings: distinct = 0.9 * items.
    let config = StreamConfig {
        distinct: (items * 9 / 10).max(1),
        repeat_fraction: 0.1,
        distribution: Distribution::Uniform,
        max_importance: params.max_importance(),
        seed,
    };
    let stream = synthetic_stream(&config).map_err(|e| e.to_string())?;
    // The same 16 KB as bits: 131 072 bits, K = 5.
    let bits = BloomParams::new(params.cells() * 8, params.hashes()).map_err(|e| e.to_string())?;
    let mut engines: Vec<(String, Pass<'_>)> = Policy::ALL
        .iter()
        .map(|&policy| {
            let stream = &stream;
            let run: Pass<'_> = Box::new(move || run_policy(&params, policy, stream));
            (policy.name().to_string(), run)
        })
        .collect();
    engines.push(("bit BF".to_string(), Box::new(|| run_bits(&bits, &stream))));
    let mut rows = Vec::with_capacity(engines.len());
    for (name, run) in &engines {
        let expected = run()?;
        let mut best = f64::INFINITY;
        for _ in 0..passes.max(1) {
            let (got, time) = crate::engines::timed(run);
            let got = got?;
            if got != expected {
                return Err(format!("{name}: a timed pass reported {got} duplicates, the check pass {expected}"));
            }
            best = best.min(time.as_secs_f64());
        }
        let n = stream.len() as f64;
        rows.push(SpeedRow {
            engine: name.clone(),
            mitems_per_s: n / best / 1e6,
            ns_per_item: best * 1e9 / n,
            duplicates: expected,
        });
    }
    Ok(rows)
}

/// The rows as a plain-text table.
pub fn format_rows(rows: &[SpeedRow]) -> String {
    let mut out = format!("{:<8} {:>12} {:>10} {:>12}\n", "engine", "M items/s", "ns/item", "duplicates");
    for r in rows {
        out.push_str(&format!(
            "{:<8} {:>12.1} {:>10.1} {:>12}\n",
            r.engine, r.mitems_per_s, r.ns_per_item, r.duplicates
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_is_measured_and_checked() {
        let rows = measure(20_000, 1, 3).unwrap();
        assert_eq!(rows.len(), Policy::ALL.len() + 1);
        assert!(rows.iter().all(|r| r.mitems_per_s > 0.0 && r.ns_per_item > 0.0));
        // Plain BF never forgets: it reports at least the true repeats.
        let bf = rows.iter().find(|r| r.engine == "BF").unwrap();
        assert!(bf.duplicates >= 2_000 - 1);
        assert!(format_rows(&rows).contains("IBF-H"));
    }
}

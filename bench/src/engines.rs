//! The engines the `paper` benchmark compares, how they are built from a
//! workload, the timed query loops and the timing helpers they share.
//!
//! All engines are queried single-threaded with precomputed [`KeyHash`]es,
//! so the figures compare index structures, not hash functions.
//!
//! - `naive`: [`NaiveIndex`], our [`BloomFilter`]s tested one by one;
//! - `naive-fastbloom`: a list of `fastbloom` 0.17 filters with the same `m`
//!   and `k`, fed `KeyHash::h1` through its precomputed-hash API
//!   (`insert_hash` / `contains_hash`): the peer a user would reach for;
//! - `sliced-scalar`: [`SlicedIndex`] on the scalar reference kernels;
//! - `sliced`: [`SlicedIndex`] on the kernels [`Kernels::detect`] picks.
//!
//! The sliced engines run both one key at a time (`query_hash_into`) and in
//! batches (`query_batch_hashes`).

use std::time::{Duration, Instant};

use bloomslice::kernels::Kernels;
use bloomslice::{BatchResults, BloomFilter, BloomParams, FilterIndex, KeyHash, NaiveIndex, SlicedConfig, SlicedIndex};

use crate::workload::{WorkloadSpec, key_hash};

/// The engines of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum EngineKind {
    /// [`NaiveIndex`] of our filters.
    Naive,
    /// A list of `fastbloom` filters (same `m`, `k`; its own probe positions).
    NaiveFastbloom,
    /// [`SlicedIndex`] with [`Kernels::scalar`].
    SlicedScalar,
    /// [`SlicedIndex`] with [`Kernels::detect`].
    Sliced,
}

impl EngineKind {
    /// Every engine, in report order.
    pub const ALL: [EngineKind; 4] =
        [EngineKind::Naive, EngineKind::NaiveFastbloom, EngineKind::SlicedScalar, EngineKind::Sliced];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Naive => "naive",
            EngineKind::NaiveFastbloom => "naive-fastbloom",
            EngineKind::SlicedScalar => "sliced-scalar",
            EngineKind::Sliced => "sliced",
        }
    }

    /// Whether the engine is one of the sliced ones.
    pub fn is_sliced(self) -> bool {
        matches!(self, EngineKind::SlicedScalar | EngineKind::Sliced)
    }

    /// The kernel table a sliced engine runs on.
    pub fn kernels(self) -> &'static Kernels {
        match self {
            EngineKind::SlicedScalar => Kernels::scalar(),
            _ => Kernels::detect(),
        }
    }
}

/// Builds the workload's filters with our hashing on `threads` threads:
/// filter `i` gets id `i`.
///
/// # Errors
///
/// The engine's error if a filter cannot be allocated.
pub fn build_filters(
    spec: &WorkloadSpec,
    params: BloomParams,
    threads: usize,
) -> bloomslice::Result<Vec<(u64, BloomFilter)>> {
    build_parallel(spec.filters, threads, |i| {
        let mut f = BloomFilter::new(params)?;
        for j in 0..spec.keys_per_filter {
            f.insert_hash(key_hash(&params, spec.key(i, j)));
        }
        Ok((i as u64, f))
    })
}

/// Builds the workload as `fastbloom` filters (same `m` and `k`, fed
/// `KeyHash::h1` of our hash) on `threads` threads.
pub fn build_fastbloom(spec: &WorkloadSpec, params: BloomParams, threads: usize) -> FastbloomIndex {
    let filters = build_parallel(spec.filters, threads, |i| {
        let mut f = fastbloom::BloomFilter::with_num_bits(params.m() as usize).hashes(params.k());
        for j in 0..spec.keys_per_filter {
            f.insert_hash(key_hash(&params, spec.key(i, j)).h1);
        }
        Ok::<_, bloomslice::Error>((i as u64, f))
    })
    .expect("fastbloom construction cannot fail");
    FastbloomIndex { filters }
}

/// Runs `make(i)` for `i` in `0..n` on up to `threads` scoped threads and
/// returns the results in order.
fn build_parallel<T: Send, E: Send>(
    n: usize,
    threads: usize,
    make: impl Fn(usize) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E> {
    let threads = threads.clamp(1, n.max(1));
    let per_thread = n.div_ceil(threads).max(1);
    let parts: Vec<Result<Vec<T>, E>> = std::thread::scope(|scope| {
        let make = &make;
        let handles: Vec<_> = (0..n)
            .step_by(per_thread)
            .map(|start| scope.spawn(move || (start..(start + per_thread).min(n)).map(make).collect()))
            .collect();
        handles.into_iter().map(|h| h.join().expect("build thread panicked")).collect()
    });
    let mut out = Vec::with_capacity(n);
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// A [`NaiveIndex`] holding `filters`. `insert_filter` clones each filter;
/// the original is dropped right after, so no second full copy lives.
///
/// # Errors
///
/// The engine's error on a duplicate id or mismatched parameters.
pub fn naive_index(params: BloomParams, filters: Vec<(u64, BloomFilter)>) -> bloomslice::Result<NaiveIndex> {
    let mut naive = NaiveIndex::new(params);
    for (id, f) in filters {
        naive.insert_filter(id, &f)?;
    }
    Ok(naive)
}

/// A [`SlicedIndex`] built from the naive engine's filters in one
/// `reserve` + `insert_filters`.
///
/// # Errors
///
/// The engine's error when memory cannot be had.
pub fn sliced_index(naive: &NaiveIndex, config: SlicedConfig) -> bloomslice::Result<SlicedIndex> {
    let mut index = SlicedIndex::with_config(*naive.params(), config);
    index.reserve(naive.len())?;
    let refs: Vec<(u64, &BloomFilter)> = naive.filters().iter().map(|(id, f)| (*id, f)).collect();
    index.insert_filters(&refs)?;
    Ok(index)
}

/// The `naive-fastbloom` engine: a list of `fastbloom` filters tested one
/// by one.
#[derive(Clone, Debug)]
pub struct FastbloomIndex {
    filters: Vec<(u64, fastbloom::BloomFilter)>,
}

impl FastbloomIndex {
    /// Ids of the filters that may hold the key whose hash is `hash`
    /// (fastbloom's source hash; we pass `KeyHash::h1`), into `out`
    /// (cleared first).
    #[inline]
    pub fn query_hash_into(&self, hash: u64, out: &mut Vec<u64>) {
        out.clear();
        out.extend(self.filters.iter().filter(|(_, f)| f.contains_hash(hash)).map(|(id, _)| *id));
    }

    /// Number of filters.
    pub fn len(&self) -> usize {
        self.filters.len()
    }

    /// Whether there are no filters.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// Bytes held by the filters and the list.
    pub fn memory_bytes(&self) -> usize {
        self.filters.capacity() * core::mem::size_of::<(u64, fastbloom::BloomFilter)>()
            + self.filters.iter().map(|(_, f)| f.as_slice().len() * 8).sum::<usize>()
    }

    /// Per-key false-positive probability `fill^k` of each filter, by id
    /// (ids are `0..len`).
    pub fn fp_probabilities(&self) -> Vec<f64> {
        self.filters
            .iter()
            .map(|(_, f)| {
                let ones: u64 = f.as_slice().iter().map(|w| u64::from(w.count_ones())).sum();
                crate::reference::fp_probability(ones, f.num_bits() as u64, f.num_hashes())
            })
            .collect()
    }
}

/// The value of `f` and the wall time it took.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

/// The fastest of the passes of `pass`, which returns its own duration (so
/// that it may leave its setup untimed): `min` passes (at least one), then
/// more while fewer than `max` ran and less than `budget` has gone by since
/// the first began. The best-of-N loops of the benchmarks run through it.
pub fn fastest_pass(min: usize, max: usize, budget: Duration, mut pass: impl FnMut() -> Duration) -> Duration {
    let start = Instant::now();
    let (mut best, mut passes) = (Duration::MAX, 0);
    while passes < min.max(1) || (passes < max && start.elapsed() < budget) {
        best = best.min(pass());
        passes += 1;
    }
    best
}

/// The best of `repeat` timings of `pass`, which returns a match count that
/// must be the same every time (it keeps the work observable).
///
/// # Panics
///
/// Panics if two passes return different counts: the engine is not
/// deterministic, which the answer check should have caught.
pub fn best_of(repeat: usize, mut pass: impl FnMut() -> usize) -> (Duration, usize) {
    let mut matches = None;
    let best = fastest_pass(repeat, repeat, Duration::ZERO, || {
        let (n, time) = timed(|| std::hint::black_box(pass()));
        assert!(matches.is_none_or(|m| m == n), "match count changed between passes");
        matches = Some(n);
        time
    });
    (best, matches.unwrap_or(0))
}

/// One pass of single-key queries over `hashes`, each answered by `query`
/// into `out`; returns the total matches. Every engine row uses it: pass
/// `|h, out| index.query_hash_into(h, out)` for any [`FilterIndex`].
pub fn single_pass(hashes: &[KeyHash], out: &mut Vec<u64>, mut query: impl FnMut(KeyHash, &mut Vec<u64>)) -> usize {
    hashes
        .iter()
        .map(|&h| {
            query(h, out);
            out.len()
        })
        .sum()
}

/// One pass of batched queries over `hashes` in batches of `batch` keys on
/// any [`FilterIndex`]; returns the total matches.
pub fn batch_pass<I: FilterIndex + ?Sized>(
    index: &I,
    hashes: &[KeyHash],
    batch: usize,
    results: &mut BatchResults,
) -> usize {
    hashes
        .chunks(batch.max(1))
        .map(|chunk| {
            index.query_batch_hashes(chunk, results);
            results.total_matches()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{WorkloadKind, params};

    #[test]
    fn every_engine_finds_present_keys() {
        let spec = WorkloadSpec::new(WorkloadKind::Full, 200, 5).with_filters(12);
        let spec = WorkloadSpec { keys_per_filter: 300, ..spec };
        let p = params();
        let naive = naive_index(p, build_filters(&spec, p, 2).unwrap()).unwrap();
        let fb = build_fastbloom(&spec, p, 3);
        let mut sliced = sliced_index(&naive, SlicedConfig::default()).unwrap();
        assert_eq!((naive.len(), fb.len(), sliced.len()), (12, 12, 12));
        let mut out = Vec::new();
        for q in spec.queries() {
            let h = key_hash(&p, q.key);
            let Some(owner) = q.owner else { continue };
            naive.query_hash_into(h, &mut out);
            assert!(out.contains(&owner));
            fb.query_hash_into(h.h1, &mut out);
            assert!(out.contains(&owner));
            for kind in [EngineKind::SlicedScalar, EngineKind::Sliced] {
                sliced.set_kernels(kind.kernels());
                sliced.query_hash_into(h, &mut out);
                assert!(out.contains(&owner));
            }
        }
    }
}

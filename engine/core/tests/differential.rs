//! Every kernel backend gives the scalar backend's answers on a large
//! index, and indexes of every shard width (1 to 256 columns and past 512)
//! answer every query as `NaiveIndex` on every backend. (`SlicedIndex` against `NaiveIndex` under random operation
//! sequences, with ground truth for "no false negatives", is the shared
//! harness of `tests/filter_index.rs`.)

use bloomslice::kernels::Kernels;
use bloomslice::sliced::shard_columns_for;
use bloomslice::testing::index_of_u64_runs;
use bloomslice::{BatchResults, BloomFilter, BloomParams, NaiveIndex, Scores, SlicedConfig, SlicedIndex, Threshold};
use rand_xoshiro::SplitMix64;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

#[test]
fn every_backend_gives_the_same_answers() {
    let mut index = index_of_u64_runs(BloomParams::new(3000, 5).unwrap(), 2000, 4, 30);
    let keys: Vec<[u8; 8]> = (0u64..12_000).map(u64::to_le_bytes).collect();
    index.set_kernels(Kernels::scalar());
    let mut want = BatchResults::new();
    index.query_batch(&keys, &mut want);
    for kernels in Kernels::available() {
        index.set_kernels(kernels);
        let mut got = BatchResults::new();
        index.query_batch(&keys, &mut got);
        assert!(want.iter().eq(got.iter()), "{} differs from scalar", kernels.backend());
    }
}

/// A seeded generator (SplitMix64, `rand_xoshiro`), so that every width
/// and backend replays the same operations.
struct Rng(SplitMix64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(SplitMix64::seed_from_u64(seed))
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
}

/// The filter of `keys` (a run of `u64` keys).
fn filter_of(p: BloomParams, keys: core::ops::Range<u64>) -> BloomFilter {
    bloomslice::testing::filter_of_u64_keys(p, keys)
}

/// Every query of `index` answers as `naive` does, on every backend:
/// single keys, a batch, scores, pruned and unpruned thresholds.
fn assert_same(index: &mut SlicedIndex, naive: &NaiveIndex, keys: &[[u8; 8]], case: &str) {
    index.validate().unwrap_or_else(|e| panic!("{case}: {e}"));
    let p = *naive.params();
    let mut want_single = Vec::new();
    for key in keys {
        let mut ids = Vec::new();
        naive.query_hash_into(p.hash(key), &mut ids);
        ids.sort_unstable();
        want_single.push(ids);
    }
    let mut want_scores: Vec<(u64, u32)> = naive
        .filters()
        .iter()
        .map(|(id, f)| (*id, keys.iter().filter(|k| f.contains(&k[..])).count() as u32))
        .filter(|&(_, c)| c > 0)
        .collect();
    want_scores.sort_unstable();
    let mut all: Vec<u64> = naive.filters().iter().map(|(id, _)| *id).collect();
    all.sort_unstable();
    for kernels in Kernels::available() {
        index.set_kernels(kernels);
        let b = kernels.backend();
        let mut out = Vec::new();
        for (key, want) in keys.iter().zip(&want_single) {
            index.query_into(key, &mut out);
            out.sort_unstable();
            assert_eq!(&out, want, "{case} {b}: single key");
        }
        let mut batch = BatchResults::new();
        index.query_batch(keys, &mut batch);
        for (got, want) in batch.iter().zip(&want_single) {
            let mut got = got.to_vec();
            got.sort_unstable();
            assert_eq!(&got, want, "{case} {b}: batch");
        }
        let mut scores = Scores::new();
        index.score_into(keys, &mut scores);
        assert_eq!(scores.iter().collect::<Vec<_>>(), want_scores, "{case} {b}: scores");
        let max = keys.len() as u32;
        for min in [0, 1, max / 2, max.saturating_sub(1), max] {
            let want: Vec<(u64, u32)> = if min == 0 {
                all.iter().map(|&id| (id, want_scores.iter().find(|s| s.0 == id).map_or(0, |s| s.1))).collect()
            } else {
                want_scores.iter().copied().filter(|&(_, c)| c >= min).collect()
            };
            assert_eq!(index.query_threshold(keys, Threshold::count(min)), want, "{case} {b}: threshold {min}");
            assert_eq!(
                index.query_threshold(keys, Threshold::count(min).unpruned()),
                want,
                "{case} {b}: unpruned threshold {min}"
            );
        }
    }
}

/// Asserts that a write succeeds on both indexes or fails on both: `$a` and
/// `$b` each called with `$method($arg, ...)` (the arguments are evaluated
/// once per index).
macro_rules! assert_same_outcome {
    ($a:ident, $b:ident, $method:ident($($arg:expr),*), $($message:tt)+) => {
        assert_eq!($a.$method($($arg),*).is_ok(), $b.$method($($arg),*).is_ok(), $($message)+)
    };
}

/// Indexes of every shard width (1 to 256 columns, and past 512), grown
/// one filter at a time or in a batch, then changed by random deletes,
/// updates, key inserts and reinserts: every query answers as
/// `NaiveIndex` on every kernel backend, after every phase.
#[test]
fn every_width_answers_as_naive() {
    let mut rng = Rng::new(1);
    for target in [1usize, 2, 3, 5, 8, 13, 16, 31, 33, 64, 65, 100, 128, 200, 256, 300, 600] {
        for (m, k) in [(61u64, 2u32), (640, 4), (1000, 7)] {
            let p = BloomParams::new(m, k).unwrap();
            let config = SlicedConfig { max_shard_columns: 512, ..SlicedConfig::default() };
            for batch in [false, true] {
                let case = format!("{target} sets, m {m}, k {k}, batch {batch}");
                let mut index = SlicedIndex::with_config(p, config);
                let mut naive = NaiveIndex::new(p);
                let filters: Vec<(u64, BloomFilter)> = (0..target as u64)
                    .map(|i| {
                        let start = rng.below(400);
                        (i * 3 + 1, filter_of(p, start..start + 1 + rng.below(12)))
                    })
                    .collect();
                if batch {
                    let refs: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
                    index.insert_filters(&refs).unwrap();
                } else {
                    for (id, f) in &filters {
                        index.insert_filter(*id, f).unwrap();
                    }
                }
                for (id, f) in &filters {
                    naive.insert_filter(*id, f).unwrap();
                }
                let columns = match target {
                    ..=512 => shard_columns_for(target),
                    _ => 512 + shard_columns_for(target - 512),
                };
                assert_eq!(index.columns(), columns, "{case}");
                let keys: Vec<[u8; 8]> = (0..40).map(|_| rng.below(420).to_le_bytes()).collect();
                assert_same(&mut index, &naive, &keys, &format!("{case}, built"));
                for step in 0..(target * 2).min(200) {
                    let id = rng.below(target as u64 + 4) * 3 + 1;
                    match rng.below(4) {
                        0 => assert_same_outcome!(index, naive, remove_set(id), "{case} {step}"),
                        1 => {
                            let start = rng.below(400);
                            let f = filter_of(p, start..start + 1 + rng.below(6));
                            assert_same_outcome!(index, naive, update_filter(id, &f), "{case} {step}");
                        }
                        2 => {
                            let h = p.hash(&rng.below(420).to_le_bytes());
                            assert_same_outcome!(index, naive, insert_key_hash(id, h), "{case} {step}");
                        }
                        _ => {
                            let start = rng.below(400);
                            let f = filter_of(p, start..start + 1 + rng.below(12));
                            assert_same_outcome!(index, naive, insert_filter(id, &f), "{case} {step}");
                        }
                    }
                }
                for (id, f) in naive.filters() {
                    assert_eq!(&index.filter_cloned(*id).unwrap(), f, "{case}: filter {id}");
                }
                let ones: u64 = naive.filters().iter().map(|(_, f)| f.count_ones()).sum();
                assert_eq!(index.count_ones(), ones, "{case}");
                assert_same(&mut index, &naive, &keys, &format!("{case}, changed"));
            }
        }
    }
}

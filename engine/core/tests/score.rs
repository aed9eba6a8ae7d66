//! Multi-key scoring against a naive count: for every filter, how many of
//! the query's keys `BloomFilter::contains` accepts. Counts from
//! `score_into`, the pruned and unpruned threshold answers, the concurrent
//! index and the pool's batches must all equal it exactly, on random
//! indexes (with deletes, so columns are reused and ids leave column order),
//! random multisets of keys, every threshold and every kernel backend.

use std::sync::atomic::{AtomicUsize, Ordering};

use bloomslice::ReadIndex;
use bloomslice::kernels::{Kernels, LookAhead};
use bloomslice::{
    BloomFilter, BloomParams, ConcurrentIndex, Error, Key, KeyHash, PoolConfig, PoolError, PoolResults, QueryPool,
    Scores, SlicedConfig, SlicedIndex, Threshold, ThresholdResults, Workers,
};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Naive counts of `keys` for every filter, ascending id (zeros included).
fn naive_counts(filters: &[(u64, BloomFilter)], keys: &[u64]) -> Vec<(u64, u32)> {
    let mut counts: Vec<(u64, u32)> = filters
        .iter()
        .map(|(id, f)| (*id, keys.iter().filter(|k| f.contains(&k.to_le_bytes())).count() as u32))
        .collect();
    counts.sort_unstable();
    counts
}

/// An index of `n` filters over `m` bits, filter `f` holding `fill` keys
/// from a small universe, after deleting every `delete_every`-th filter
/// and inserting replacements (columns reused, ids out of column order).
fn build(m: u64, k: u32, n: u64, fill: u64, delete_every: u64, shard: usize) -> (SlicedIndex, Vec<(u64, BloomFilter)>) {
    build_with(m, k, n, fill, delete_every, SlicedConfig { max_shard_columns: shard, ..SlicedConfig::default() })
}

/// [`build`] with any index configuration.
fn build_with(
    m: u64,
    k: u32,
    n: u64,
    fill: u64,
    delete_every: u64,
    config: SlicedConfig,
) -> (SlicedIndex, Vec<(u64, BloomFilter)>) {
    let p = BloomParams::new(m, k).unwrap();
    let mut index = SlicedIndex::with_config(p, config);
    let mut filters = Vec::new();
    let make = |seed: u64| {
        let mut f = BloomFilter::new(p).unwrap();
        for i in 0..fill {
            f.insert(&((seed * 31 + i * 7) % 400).to_le_bytes());
        }
        f
    };
    for f in 0..n {
        let id = 10 * n - 3 * f;
        let filter = make(f);
        index.insert_filter(id, &filter).unwrap();
        filters.push((id, filter));
    }
    if delete_every > 0 {
        let mut kept = Vec::new();
        for (i, (id, f)) in filters.into_iter().enumerate() {
            if (i as u64).is_multiple_of(delete_every) {
                index.remove_set(id).unwrap();
            } else {
                kept.push((id, f));
            }
        }
        filters = kept;
        for j in 0..n / delete_every / 2 {
            let id = 100 * n + j;
            let filter = make(j + 1000);
            index.insert_filter(id, &filter).unwrap();
            filters.push((id, filter));
        }
    }
    index.validate().unwrap();
    (index, filters)
}

/// [`check_all`] with every kernel backend and both look-ahead cache
/// levels ([`SlicedConfig::look_ahead`]).
fn check_every_backend(index: &mut SlicedIndex, filters: &[(u64, BloomFilter)], keys: &[u64]) {
    for kernels in Kernels::available() {
        index.set_kernels(kernels);
        for look_ahead in [LookAhead::L1, LookAhead::L2] {
            index.set_look_ahead(look_ahead);
            check_all(index, filters, keys);
        }
    }
}

/// Every scoring entry point agrees with the naive counts.
fn check_all(index: &SlicedIndex, filters: &[(u64, BloomFilter)], keys: &[u64]) {
    let keys_bytes: Vec<[u8; 8]> = keys.iter().map(|k| k.to_le_bytes()).collect();
    let naive = naive_counts(filters, keys);
    let nonzero: Vec<(u64, u32)> = naive.iter().copied().filter(|&(_, c)| c > 0).collect();
    let mut scores = Scores::new();
    index.score_into(&keys_bytes, &mut scores);
    assert_eq!(scores.keys(), keys.len());
    assert_eq!(scores.iter().collect::<Vec<_>>(), nonzero, "score_into ({})", index.kernels().backend());
    for &(id, c) in &naive {
        assert_eq!(scores.get(id), c);
    }
    assert_eq!(scores.get(u64::MAX), 0);
    let hashes: Vec<_> = keys_bytes.iter().map(|k| index.params().hash(k)).collect();
    let mut by_hash = Scores::new();
    index.score_into(&hashes, &mut by_hash);
    assert_eq!(by_hash.iter().collect::<Vec<_>>(), nonzero);

    let q = keys.len() as u32;
    let mut scratch = Scores::new();
    let mut out = Vec::new();
    for min in [0, 1, q / 2, q.saturating_mul(4) / 5, q.saturating_sub(1), q, q + 1] {
        let want: Vec<(u64, u32)> = naive.iter().copied().filter(|&(_, c)| c >= min).collect();
        let t = Threshold::count(min);
        assert_eq!(index.query_threshold(&keys_bytes, t), want, "pruned min {min} of {q}");
        index.query_threshold_into(&keys_bytes, t.unpruned(), &mut scratch, &mut out);
        assert_eq!(out, want, "unpruned min {min} of {q}");
        index.query_threshold_into(&keys_bytes, t, &mut scratch, &mut out);
        assert_eq!(out, want, "pruned into, min {min} of {q}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn counts_equal_naive_counts(
        n in 1u64..1400,
        fill in 0u64..120,
        delete_every in prop_oneof![Just(0u64), 2u64..7],
        shard in prop_oneof![Just(512usize), Just(1024), Just(16_384)],
        keys in proptest::collection::vec(0u64..500, 0..150),
    ) {
        let (mut index, filters) = build(1500, 3, n, fill, delete_every, shard);
        check_every_backend(&mut index, &filters, &keys);
    }

    /// Dense filters (rows about half ones) over at least nine 512-column
    /// chunks, where pruned threshold queries screen with fewer rows first:
    /// queries made of one filter's keys (its chunk survives the screen and
    /// is scored again exactly) plus random ones (their chunks die in it).
    #[test]
    fn screened_counts_equal_naive_counts(
        n in 4200u64..4700,
        seed in 0u64..4200,
        own in 0u64..120,
        random in proptest::collection::vec(0u64..500, 0..60),
    ) {
        let (mut index, filters) = build(256, 7, n, 25, 0, 16_384);
        let mut keys: Vec<u64> = (0..own).map(|i| (seed * 31 + (i % 25) * 7) % 400).collect();
        keys.extend(random);
        check_every_backend(&mut index, &filters, &keys);
    }
}

/// Long queries (more planes, many pruning checks) with duplicates, on the
/// default layout.
#[test]
fn long_queries_with_duplicates() {
    let (mut index, filters) = build(4000, 4, 2100, 300, 3, 16_384);
    let mut keys: Vec<u64> = (0..900u64).map(|i| (i * 13) % 450).collect();
    keys.extend([5, 5, 5, 5]);
    for keys in [&keys[..], &keys[..1], &[]] {
        check_every_backend(&mut index, &filters, keys);
    }
}

/// An empty index scores nothing and passes nothing, whatever the threshold.
#[test]
fn empty_index() {
    let index = SlicedIndex::new(BloomParams::new(1000, 3).unwrap());
    let mut scores = Scores::new();
    index.score_into(&[1u64.to_le_bytes()], &mut scores);
    assert!(scores.is_empty());
    assert!(index.query_threshold(&[1u64.to_le_bytes()], Threshold::count(0)).is_empty());
}

/// Fractions: the answer of `fraction(f)` is that of `count(min_count)`.
#[test]
fn fraction_thresholds() {
    let (index, filters) = build(1500, 3, 300, 80, 0, 16_384);
    let keys: Vec<[u8; 8]> = (0..100u64).map(|k| k.to_le_bytes()).collect();
    let naive = naive_counts(&filters, &(0..100).collect::<Vec<_>>());
    for f in [0.0, 0.25, 0.8, 0.81, 1.0] {
        let t = Threshold::fraction(f).unwrap();
        let min = t.min_count(keys.len());
        let want: Vec<_> = naive.iter().copied().filter(|&(_, c)| c >= min).collect();
        assert_eq!(index.query_threshold(&keys, t), want, "{f}");
    }
}

/// The concurrent index and the pool's batches give the same answers, for
/// one and for two workers.
#[test]
fn concurrent_and_pool_batches() {
    let (index, filters) = build(2000, 3, 1000, 100, 4, 16_384);
    let queries: Vec<Vec<[u8; 8]>> =
        (0..37u64).map(|q| (0..(q * 11) % 120).map(|i| ((q * 17 + i * 3) % 400).to_le_bytes()).collect()).collect();
    let threshold = Threshold::fraction(0.5).unwrap();
    let want: Vec<Vec<(u64, u32)>> = queries.iter().map(|q| index.query_threshold(q, threshold)).collect();
    let concurrent = ConcurrentIndex::new(index);
    for (q, w) in queries.iter().zip(&want) {
        assert_eq!(&concurrent.query_threshold(q, threshold), w);
        let keys: Vec<u64> = q.iter().map(|k| u64::from_le_bytes(*k)).collect();
        let naive = naive_counts(&filters, &keys);
        let mut scores = Scores::new();
        concurrent.score_into(q, &mut scores);
        assert_eq!(scores.iter().collect::<Vec<_>>(), naive.into_iter().filter(|&(_, c)| c > 0).collect::<Vec<_>>());
        let (mut scratch, mut out) = (Scores::new(), Vec::new());
        concurrent.read(|ix| ix.query_threshold_into(q, threshold, &mut scratch, &mut out));
        assert_eq!(&out, w);
    }
    let mut results = ThresholdResults::new();
    for workers in [1, 2, 3] {
        let pool = QueryPool::new(PoolConfig { workers: Workers::Count(workers), ..PoolConfig::default() }).unwrap();
        for round in 0..2 {
            pool.query_threshold_batch(&concurrent, &queries, threshold, &mut results).unwrap();
            assert_eq!(results.len(), queries.len());
            assert_eq!(results.iter().map(<[_]>::to_vec).collect::<Vec<_>>(), want, "{workers} workers, round {round}");
        }
        pool.query_threshold_batch::<Vec<[u8; 8]>, [u8; 8]>(&concurrent, &[], threshold, &mut results).unwrap();
        assert!(results.is_empty());
        pool.query_threshold_batch(&concurrent, &queries[..1], threshold, &mut results).unwrap();
        assert_eq!(results.get(0), Some(&want[0][..]));
        assert_eq!(results.get(1), None);
    }
}

/// Per-query answers of `query_threshold_into` on one index.
fn per_query(index: &SlicedIndex, queries: &[Vec<[u8; 8]>], threshold: Threshold) -> Vec<Vec<(u64, u32)>> {
    let (mut scratch, mut out) = (Scores::new(), Vec::new());
    queries
        .iter()
        .map(|q| {
            index.query_threshold_into(q, threshold, &mut scratch, &mut out);
            out.clone()
        })
        .collect()
}

fn random_queries(rng: &mut SmallRng, n: usize, max_len: usize) -> Vec<Vec<[u8; 8]>> {
    (0..n)
        .map(|_| {
            let len = rng.random_range(0..=max_len);
            (0..len).map(|_| rng.random_range(0..500u64).to_le_bytes()).collect()
        })
        .collect()
}

/// The pool's configurations that take every path: workers only (the
/// caller never helps), the caller helping, and the caller alone (inline).
fn pools(workers: usize) -> Vec<(&'static str, QueryPool)> {
    let base = PoolConfig { workers: Workers::Count(workers), ..PoolConfig::default() };
    vec![
        ("workers only", QueryPool::new(PoolConfig { caller_help_work: 0, ..base.clone() }).unwrap()),
        ("caller helps", QueryPool::new(PoolConfig { caller_help_work: usize::MAX, ..base.clone() }).unwrap()),
        ("inline", QueryPool::new(PoolConfig { min_keys_per_task: 1 << 30, ..base.clone() }).unwrap()),
        ("default", QueryPool::new(base).unwrap()),
    ]
}

/// Differential: random indexes, random batches (empty queries, repeated
/// keys, one query, many), thresholds by count and by fraction, every
/// scheduling path: the pool's answers equal per-query scoring.
#[test]
fn pool_threshold_batches_equal_per_query_scoring() {
    let mut rng = SmallRng::seed_from_u64(0x5c0e);
    let mut results = ThresholdResults::new();
    for (round, workers) in [1usize, 2, 3].into_iter().enumerate() {
        let pools = pools(workers);
        for case in 0..6u64 {
            let seed = round as u64 * 10 + case;
            let (index, _) = build(2048, 3, 200 + 150 * case, 40 + 10 * case, 5, [512, 16_384][case as usize % 2]);
            let concurrent = ConcurrentIndex::new(index);
            let snapshot = concurrent.snapshot();
            for batch in 0..4 {
                let n = [1, 7, 40, 150][batch];
                let queries = random_queries(&mut rng, n, [300, 5, 120, 60][batch]);
                let threshold = if rng.random_bool(0.5) {
                    Threshold::fraction(rng.random_range(0.0..=1.0)).unwrap()
                } else {
                    Threshold::count(rng.random_range(0..40))
                };
                let want = per_query(&snapshot, &queries, threshold);
                for (name, pool) in &pools {
                    pool.query_threshold_batch(&concurrent, &queries, threshold, &mut results).unwrap();
                    let got: Vec<Vec<(u64, u32)>> = results.iter().map(<[_]>::to_vec).collect();
                    assert_eq!(got, want, "seed {seed}, batch {batch}, {workers} workers, {name}");
                }
            }
        }
    }
}

/// A panicking range fails its batch only: the error, empty results, and
/// the next batches (threshold and key batches alike) are answered in full,
/// whether the range ran on a worker or on the caller.
#[test]
fn panicking_threshold_range_fails_only_its_batch() {
    let (index, _) = build(2048, 3, 600, 60, 0, 16_384);
    let mut rng = SmallRng::seed_from_u64(77);
    let queries = random_queries(&mut rng, 64, 200);
    let threshold = Threshold::fraction(0.3).unwrap();
    let want = per_query(&index, &queries, threshold);
    let concurrent = ConcurrentIndex::new(index);
    let mut results = ThresholdResults::new();
    let keys: Vec<[u8; 8]> = (0..2000u64).map(u64::to_le_bytes).collect();
    let mut key_results = PoolResults::new();
    for (name, pool) in pools(2) {
        for fail in [1, 3] {
            pool.fail_next_tasks(fail);
            let err = pool.query_threshold_batch(&concurrent, &queries, threshold, &mut results);
            assert_eq!(err, Err(Error::Pool(PoolError::TaskPanicked)), "{name}, {fail} failing");
            assert!(results.is_empty(), "{name}: a failed batch has no results");
            // Every injected failure was consumed by that batch's ranges.
            pool.query_threshold_batch(&concurrent, &queries, threshold, &mut results).unwrap();
            assert_eq!(results.iter().map(<[_]>::to_vec).collect::<Vec<_>>(), want, "{name}, after a panic");
            pool.query_batch(&concurrent, &keys, &mut key_results).unwrap();
            assert_eq!(key_results.len(), keys.len());
        }
    }
}

/// One state of the index per batch: while a writer adds filters that hold
/// every key, all queries of a batch (identical ones) get the same answer,
/// and the answers only grow from batch to batch.
#[test]
fn a_batch_sees_one_state_of_the_index() {
    let params = BloomParams::new(1024, 3).unwrap();
    let mut all = BloomFilter::new(params).unwrap();
    let query: Vec<[u8; 8]> = (0..50u64).map(u64::to_le_bytes).collect();
    for key in &query {
        all.insert(key);
    }
    let concurrent = ConcurrentIndex::new(SlicedIndex::new(params));
    let queries = vec![query; 48];
    let pool = QueryPool::new(PoolConfig { workers: Workers::Count(2), caller_help_work: 0, ..PoolConfig::default() })
        .unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for id in 0..400u64 {
                concurrent.insert_filter(id, &all).unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::Release);
        });
        let mut results = ThresholdResults::new();
        let mut last = 0;
        let mut batches = 0;
        while !stop.load(std::sync::atomic::Ordering::Acquire) || batches < 10 {
            pool.query_threshold_batch(&concurrent, &queries, Threshold::count(50), &mut results).unwrap();
            let first = results.get(0).unwrap();
            assert!(results.iter().all(|r| r == first), "queries of one batch saw different states");
            assert!(first.len() >= last, "answers went back in time");
            assert!(first.iter().enumerate().all(|(i, &(id, c))| id == i as u64 && c == 50));
            last = first.len();
            batches += 1;
        }
    });
}

/// A key that counts how often it is hashed (on any thread).
struct Counted<'a> {
    key: [u8; 8],
    hashes: &'a AtomicUsize,
}

impl Key for Counted<'_> {
    fn key_hash(&self, seed: u64) -> KeyHash {
        self.hashes.fetch_add(1, Ordering::Relaxed);
        self.key.key_hash(seed)
    }
}

/// Keys are hashed as the scoring passes reach them, each at most once: an
/// unpruned query hashes every key once; a pruned query whose filters all
/// fail early (keys no filter holds, threshold 0.8) stops hashing soon
/// after its chunks die, and still answers exactly.
#[test]
fn pruned_queries_hash_only_the_keys_they_read() {
    for shard in [1024, 16_384] {
        let (mut index, filters) = build(1500, 3, 1000, 100, 0, shard);
        let keys: Vec<u64> = (0..1000).map(|i| 10_000 + i * 13).collect();
        let hashes = AtomicUsize::new(0);
        let counted: Vec<Counted<'_>> =
            keys.iter().map(|k| Counted { key: k.to_le_bytes(), hashes: &hashes }).collect();
        let naive = naive_counts(&filters, &keys);
        for kernels in Kernels::available() {
            index.set_kernels(kernels);
            let t = Threshold::fraction(0.8).unwrap();
            let want: Vec<(u64, u32)> = naive.iter().copied().filter(|&(_, c)| c >= t.min_count(1000)).collect();
            hashes.store(0, Ordering::Relaxed);
            assert_eq!(index.query_threshold(&counted, t.unpruned()), want);
            assert_eq!(hashes.load(Ordering::Relaxed), 1000, "unpruned: every key once");
            hashes.store(0, Ordering::Relaxed);
            assert_eq!(index.query_threshold(&counted, t), want);
            let hashed = hashes.load(Ordering::Relaxed);
            // A column can fail after 201 keys; the chunks die within a few
            // checks of that.
            assert!((201..=300).contains(&hashed), "pruned: {hashed} keys hashed ({})", kernels.backend());
        }
    }
}

/// The pool's threshold batches read the caller's queries in place, so
/// there too a pruned query hashes only the keys its scoring reaches (each
/// at most once), on whichever worker scores it; and its key batches hash
/// every key exactly once.
#[test]
fn pool_batches_hash_keys_where_they_are_read() {
    let (index, filters) = build(1500, 3, 1000, 100, 0, 16_384);
    let concurrent = ConcurrentIndex::new(index);
    let keys: Vec<u64> = (0..1000).map(|i| 10_000 + i * 13).collect();
    let hashes = AtomicUsize::new(0);
    let counted: Vec<Counted<'_>> = keys.iter().map(|k| Counted { key: k.to_le_bytes(), hashes: &hashes }).collect();
    let t = Threshold::fraction(0.8).unwrap();
    let want: Vec<(u64, u32)> =
        naive_counts(&filters, &keys).into_iter().filter(|&(_, c)| c >= t.min_count(1000)).collect();
    let queries: Vec<&[Counted<'_>]> = vec![&counted[..]; 6];
    let pool = QueryPool::new(PoolConfig { workers: Workers::Count(2), ..PoolConfig::default() }).unwrap();
    let mut results = ThresholdResults::new();
    pool.query_threshold_batch(&concurrent, &queries, t.unpruned(), &mut results).unwrap();
    assert!(results.iter().all(|got| got == want));
    assert_eq!(hashes.swap(0, Ordering::Relaxed), 6 * 1000, "unpruned: every key of every query once");
    pool.query_threshold_batch(&concurrent, &queries, t, &mut results).unwrap();
    assert!(results.iter().all(|got| got == want));
    let hashed = hashes.swap(0, Ordering::Relaxed);
    assert!((6 * 201..=6 * 300).contains(&hashed), "pruned: {hashed} keys hashed for 6 queries");
    let mut by_key = PoolResults::new();
    pool.query_batch(&concurrent, &counted, &mut by_key).unwrap();
    assert_eq!(hashes.load(Ordering::Relaxed), 1000, "a key batch hashes each key once");
    let mut direct = bloomslice::BatchResults::new();
    concurrent.snapshot().query_batch(&keys.iter().map(|k| k.to_le_bytes()).collect::<Vec<_>>(), &mut direct);
    assert!(by_key.iter().eq(direct.iter()));
}

/// Every prefetch distance scores exactly: the look-ahead of an exact
/// pruned pass over long runs is `prefetch_distance` keys, gathered into
/// scratch sized for it (here up to five times a scoring group).
#[test]
fn every_prefetch_distance_scores_exactly() {
    let keys: Vec<u64> = (0..120).map(|i| (i * 11) % 400).collect();
    let hashed: Vec<[u8; 8]> = keys.iter().map(|k| k.to_le_bytes()).collect();
    for d in [0, 1, 3, 8, 9, 40] {
        let config = SlicedConfig { prefetch_distance: d, ..SlicedConfig::default() };
        let (index, filters) = build_with(1 << 12, 5, 3000, 60, 0, config);
        let naive = naive_counts(&filters, &keys);
        for fraction in [0.05, 0.3, 0.8] {
            let t = Threshold::fraction(fraction).unwrap();
            let want: Vec<(u64, u32)> = naive.iter().copied().filter(|&(_, c)| c >= t.min_count(keys.len())).collect();
            assert_eq!(index.query_threshold(&hashed, t), want, "distance {d}, fraction {fraction}");
            assert_eq!(index.query_threshold(&hashed, t.unpruned()), want, "distance {d}, fraction {fraction}");
        }
    }
}

//! Multi-key scoring against a naive count: for every filter, how many of
//! the query's keys `BloomFilter::contains` accepts. Counts from
//! `score_into`, the pruned and unpruned threshold answers, the concurrent
//! index and the pool's batches must all equal it exactly, on random
//! indexes (with deletes, so columns are reused and ids leave column order),
//! random multisets of keys, every threshold and every kernel backend.

use bloomslice::kernels::Kernels;
use bloomslice::{
    BloomFilter, BloomParams, ConcurrentIndex, PoolConfig, QueryPool, Scores, SlicedConfig, SlicedIndex, Threshold,
    ThresholdResults, Workers,
};
use proptest::prelude::*;

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
    let p = BloomParams::new(m, k).unwrap();
    let mut index = SlicedIndex::with_config(p, SlicedConfig { max_shard_columns: shard, ..SlicedConfig::default() });
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
                index.delete_filter(id).unwrap();
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
    index.score_hashes_into(&hashes, &mut by_hash);
    assert_eq!(by_hash.iter().collect::<Vec<_>>(), nonzero);

    let q = keys.len() as u32;
    let mut scratch = Scores::new();
    let mut out = Vec::new();
    for min in [0, 1, q / 2, q.saturating_mul(4) / 5, q.saturating_sub(1), q, q + 1] {
        let want: Vec<(u64, u32)> = naive.iter().copied().filter(|&(_, c)| c >= min).collect();
        let t = Threshold::count(min);
        assert_eq!(index.query_threshold(&keys_bytes, t), want, "pruned min {min} of {q}");
        index.query_threshold_unpruned_into(&keys_bytes, t, &mut scratch, &mut out);
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
        for kernels in Kernels::available() {
            index.set_kernels(kernels);
            check_all(&index, &filters, &keys);
        }
    }
}

/// Long queries (more planes, many pruning checks) with duplicates, on the
/// default layout.
#[test]
fn long_queries_with_duplicates() {
    let (mut index, filters) = build(4000, 4, 2100, 300, 3, 16_384);
    let mut keys: Vec<u64> = (0..900u64).map(|i| (i * 13) % 450).collect();
    keys.extend([5, 5, 5, 5]);
    for kernels in Kernels::available() {
        index.set_kernels(kernels);
        check_all(&index, &filters, &keys);
        check_all(&index, &filters, &keys[..1]);
        check_all(&index, &filters, &[]);
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
        concurrent.query_threshold_into(q, threshold, &mut scratch, &mut out);
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

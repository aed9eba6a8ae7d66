//! `query_into`, `query_batch`, `score_into` and `query_threshold_into` allocate nothing once their buffers are
//! warm, checked with a counting global allocator; so do the single-key
//! paths of `SlicedIndex` (`query_into`, `query_hash_into`) and of
//! `ConcurrentIndex` (`query_into`, `read`), also after a write was
//! published. One test: the counter is global, and tests of one binary run
//! in parallel.

use bloomslice::ReadIndex;
use bloomslice::{BatchResults, BloomParams, ConcurrentIndex, Prehashed, Scores, Threshold};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::allocations;

#[test]
fn warm_queries_do_not_allocate() {
    let index = bloomslice::testing::index_of_u64_runs(BloomParams::new(4096, 4).unwrap(), 5000, 3, 40);
    let keys: Vec<[u8; 8]> = (0..20_000u64).map(u64::to_le_bytes).collect();
    let mut out = Vec::new();
    let mut results = BatchResults::new();
    // Warm up: grow every buffer to the largest answer.
    for key in &keys {
        index.query_into(key, &mut out);
    }
    index.query_batch(&keys, &mut results);
    assert!(results.total_matches() > 0);

    let before = allocations();
    for key in &keys {
        index.query_into(key, &mut out);
    }
    index.query_batch(&keys, &mut results);
    index.query_batch(&keys[..100], &mut results);
    index.query_batch(&keys, &mut results);
    assert_eq!(allocations() - before, 0, "a warm query allocated");

    // Multi-key scoring: warm `Scores` and output buffers, then nothing.
    let mut scores = Scores::new();
    let mut scratch = Scores::new();
    let mut passing = Vec::new();
    let threshold = Threshold::fraction(0.5).unwrap();
    for query in keys.chunks(300) {
        index.score_into(query, &mut scores);
        index.query_threshold_into(query, threshold, &mut scratch, &mut passing);
    }
    let (before, mut scored) = (allocations(), 0);
    for query in keys.chunks(300) {
        index.score_into(query, &mut scores);
        index.query_threshold_into(query, threshold, &mut scratch, &mut passing);
        scored += scores.len();
    }
    assert!(scored > 0, "the scoring queries found nothing: the test would prove nothing");
    assert_eq!(allocations() - before, 0, "a warm scoring query allocated");

    // Single keys, by key and by hash.
    let p = *index.params();
    let hashes: Vec<_> = keys.iter().map(|k| p.hash(k)).collect();
    let (before, mut found) = (allocations(), 0);
    for (key, &hash) in keys.iter().zip(&hashes) {
        index.query_into(key, &mut out);
        found += out.len();
        index.query_hash_into(hash, &mut out);
        found += out.len();
        index.query_into(&Prehashed(hash.h1), &mut out);
    }
    assert!(found > 0, "the single-key queries found nothing: the test would prove nothing");
    assert_eq!(allocations() - before, 0, "a warm single-key query allocated");

    // The shared index: readers inline, after writes were published (a
    // write may allocate; the reads after it may not).
    let shared = ConcurrentIndex::new(index.clone());
    let filter = bloomslice::testing::filter_of_u64_keys(p, 0..10);
    let late = 1u64 << 40;
    for publish in 0..2 {
        if publish == 0 {
            shared.insert_filter(late, &filter).unwrap();
        } else {
            shared.update_filter(late, &filter).unwrap();
        }
        for key in &keys {
            shared.query_into(key, &mut out);
        }
        let (before, mut found, mut len) = (allocations(), 0, 0);
        for key in &keys {
            shared.query_into(key, &mut out);
            found += out.iter().filter(|&&id| id == late).count();
            len += shared.read(|ix| ix.len());
        }
        assert_eq!(allocations() - before, 0, "a single-key read allocated after publish {publish}");
        assert!(found >= 10, "the published set is not seen: the test would prove nothing");
        assert_eq!(len, keys.len() * (index.len() + 1));
    }
}

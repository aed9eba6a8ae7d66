//! `query_into`, `query_batch`, `score_into` and `query_threshold_into` allocate nothing once their buffers are
//! warm, checked with a counting global allocator.

use bloomslice::{BatchResults, BloomParams, Scores, Threshold};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{Counting, allocations};

#[global_allocator]
static GLOBAL: Counting = Counting;

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
}

//! `ConcurrentIndex`: writes that fail half-way (a panic, a replay that
//! runs out of memory) leave both copies equal to a model and do not stall
//! the next write; the query methods answer as `SlicedIndex` does; readers
//! holding a guard never block a writer for long.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use bloomslice::ReadIndex;
use bloomslice::concurrent::DRAIN_PATIENCE;
use bloomslice::{BatchResults, BloomFilter, BloomParams, ConcurrentIndex, SlicedIndex, WriteOp};

fn params() -> BloomParams {
    BloomParams::new(4096, 4).unwrap()
}

fn filter_of(keys: std::ops::Range<u64>) -> BloomFilter {
    let mut f = BloomFilter::new(params()).unwrap();
    for k in keys {
        f.insert(&k.to_le_bytes());
    }
    f
}

/// The filters of `index`, by id, for comparing states exactly.
/// A shared index and a plain model of it, both holding filters `0..n`, filter
/// `id` of the keys `keys(id)`.
fn shared_and_model(n: u64, keys: impl Fn(u64) -> std::ops::Range<u64>) -> (ConcurrentIndex, SlicedIndex) {
    let shared = ConcurrentIndex::new(SlicedIndex::new(params()));
    let mut model = SlicedIndex::new(params());
    for id in 0..n {
        shared.insert_filter(id, &filter_of(keys(id))).unwrap();
        model.insert_filter(id, &filter_of(keys(id))).unwrap();
    }
    (shared, model)
}

fn state(index: &SlicedIndex) -> Vec<(u64, Vec<u64>)> {
    let mut ids: Vec<u64> = index.ids().collect();
    ids.sort_unstable();
    ids.into_iter().map(|id| (id, index.filter_cloned(id).unwrap().words().to_vec())).collect()
}

/// Both copies of `shared` equal `model`: a write that fails (unknown id)
/// still publishes, so it swaps the copies, and each is compared in turn.
fn assert_both_copies_equal(shared: &ConcurrentIndex, model: &SlicedIndex) {
    for round in 0..2 {
        let snap = shared.snapshot();
        assert_eq!(state(&snap), state(model), "copy {round}");
        snap.validate().unwrap();
        drop(snap);
        assert!(shared.remove_set(u64::MAX).is_err());
    }
}

#[test]
fn a_panic_inside_a_write_neither_stalls_the_next_write_nor_splits_the_copies() {
    let (shared, mut model) = shared_and_model(4, |id| id * 10..id * 10 + 10);
    shared.panic_in_next_write();
    let panicked = catch_unwind(AssertUnwindSafe(|| shared.insert_filter(99, &filter_of(0..3))));
    assert!(panicked.is_err(), "the hook panics inside the write");
    // The panicked write was never published.
    assert!(!shared.snapshot().contains(99));
    let start = Instant::now();
    shared.insert_key(2, "after the panic").unwrap();
    model.insert_key(2, "after the panic").unwrap();
    let took = start.elapsed();
    assert!(took < DRAIN_PATIENCE / 4, "the write after a panic waited {took:?}");
    assert_both_copies_equal(&shared, &model);
    // And the writer keeps working normally afterwards.
    for id in 10..20 {
        shared.insert_filter(id, &filter_of(id..id + 5)).unwrap();
        model.insert_filter(id, &filter_of(id..id + 5)).unwrap();
    }
    shared.remove_set(1).unwrap();
    model.remove_set(1).unwrap();
    assert_both_copies_equal(&shared, &model);
}

#[test]
fn a_failed_replay_rebuilds_the_standby_from_the_published_copy() {
    let shared = ConcurrentIndex::new(SlicedIndex::new(params()));
    let mut model = SlicedIndex::new(params());
    for round in 0..6u64 {
        // Write A (missed by the standby), then arm the hook: write B's
        // replay of A fails, so the standby is rebuilt from the copy that
        // holds A, and B applies on top.
        shared.insert_filter(round, &filter_of(round * 7..round * 7 + 7)).unwrap();
        model.insert_filter(round, &filter_of(round * 7..round * 7 + 7)).unwrap();
        shared.fail_next_replay();
        let ops = vec![
            WriteOp::InsertKey { id: round, hash: params().hash("b") },
            WriteOp::UpdateFilter { id: 0, filter: filter_of(1000 + round..1001 + round) },
        ];
        for result in shared.apply(ops) {
            result.unwrap();
        }
        model.insert_key(round, "b").unwrap();
        model.update_filter(0, &filter_of(1000 + round..1001 + round)).unwrap();
        assert_both_copies_equal(&shared, &model);
    }
}

#[test]
fn query_methods_answer_as_the_sliced_index() {
    let (shared, model) = shared_and_model(50, |id| id * 20..id * 20 + 40);
    let keys: Vec<[u8; 8]> = (0..1200u64).map(u64::to_le_bytes).collect();
    let (mut got, mut want) = (BatchResults::new(), BatchResults::new());
    shared.query_batch(&keys, &mut got);
    model.query_batch(&keys, &mut want);
    assert!(got.iter().eq(want.iter()));
    let hashes: Vec<_> = keys.iter().map(|k| params().hash(k)).collect();
    shared.query_batch_hashes(&hashes, &mut got);
    assert!(got.iter().eq(want.iter()));
    let mut out = Vec::new();
    for (key, ids) in keys.iter().zip(want.iter()) {
        shared.query_into(key, &mut out);
        assert_eq!(out, ids);
        assert_eq!(shared.query(key), ids);
    }
    assert_eq!(shared.len(), 50);
    assert!(!shared.is_empty());
    assert_eq!(shared.read(|ix| ix.len()), 50);
}

/// A reader inside `read` sees one state for its whole closure, and a
/// writer meanwhile still publishes (the next write waits for the guard,
/// which arc-swap turned into a real reference when the copies swapped).
#[test]
fn a_guard_sees_one_state_while_writers_publish() {
    let shared = ConcurrentIndex::new(SlicedIndex::new(params()));
    shared.insert_filter(1, &filter_of(0..10)).unwrap();
    let key = 5u64.to_le_bytes();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            shared.read(|ix| {
                assert_eq!(ix.query(&key), vec![1]);
                tx.send(()).unwrap();
                // Hold the guard while the writer publishes twice.
                std::thread::sleep(Duration::from_millis(150));
                assert_eq!(ix.query(&key), vec![1], "a guard's state never changes");
                assert_eq!(ix.len(), 1);
            });
        });
        rx.recv().unwrap();
        shared.remove_set(1).unwrap();
        // Published at once: new readers see the delete while the guard lives.
        assert!(shared.query(&key).is_empty());
        // This write edits the guard's copy, so it waits for the guard.
        let start = Instant::now();
        shared.insert_filter(2, &filter_of(0..10)).unwrap();
        assert!(start.elapsed() < DRAIN_PATIENCE, "waited for the guard, not the patience limit");
    });
    assert_eq!(shared.query(&key), vec![2]);
    assert_both_copies_equal(&shared, &{
        let mut m = SlicedIndex::new(params());
        m.insert_filter(2, &filter_of(0..10)).unwrap();
        m
    });
}

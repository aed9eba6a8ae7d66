//! A `SetIndex` through `ConcurrentIndex` (`ConcurrentIndex<SetIndex>`) and
//! `QueryPool`: key batches, submitted batches and threshold batches equal
//! the collection's own `query_batch`, `query` and `query_threshold` (every
//! kernel backend, many parts, grown sets), a collection of one part
//! answers as its `SlicedIndex`, warm pool batches allocate nothing,
//! readers see only whole writes while a writer publishes, and the two
//! copies stay equal to a model after failed, panicking and replayed
//! writes.
//!
//! The tests share one counting allocator, so they run one at a time
//! (`counting_alloc::serial`); each is bounded in time.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bloomslice::ReadIndex;
use bloomslice::kernels::Kernels;
use bloomslice::{
    BatchResults, ConcurrentIndex, Error, Key, KeyHash, LayoutConfig, PoolConfig, PoolResults, QueryPool, Scores,
    SetIndex, SetOp, Threshold, ThresholdResults, Workers,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{allocations, serial};

#[path = "common/publisher.rs"]
mod publisher;

use publisher::Progress;

const P: f64 = 0.01;

/// The keys of set `id`: `count` distinct keys of its own.
fn set_keys(id: u64, from: u64, count: u64) -> Vec<[u8; 8]> {
    (from..from + count).map(|i| (id << 32 | i).to_le_bytes()).collect()
}

/// A collection of skewed sets (sizes 1 to 4096) with several parts, some
/// sets grown into larger parts (several times over) and one set larger
/// than every part of the layout. Returns it and, per set, its key count.
fn skewed(seed: u64) -> (SetIndex, Vec<(u64, u64)>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let sizes: Vec<(u64, u64)> = (0..80u64).map(|id| (id, 1u64 << rng.random_range(0..13))).collect();
    let sets: Vec<(u64, Vec<[u8; 8]>)> = sizes.iter().map(|&(id, n)| (id, set_keys(id, 0, n))).collect();
    let mut collection = SetIndex::build(&sets, P, LayoutConfig::default()).unwrap();
    let mut sizes = sizes;
    for (id, n) in sizes.iter_mut().take(6) {
        // Past its first filter's capacity, and past the next one's.
        let more = collection.filters(*id).unwrap()[0].capacity * 4;
        collection.add_keys(*id, &set_keys(*id, *n, more)).unwrap();
        *n += more;
    }
    collection.insert_set(1000, &set_keys(1000, 0, 30_000)).unwrap();
    sizes.push((1000, 30_000));
    collection.validate().unwrap();
    assert!(collection.parts().len() >= 4, "{} parts", collection.parts().len());
    assert!(collection.grown_sets() >= 6);
    (collection, sizes)
}

/// Present keys of random sets and absent keys, mixed.
fn probes(seed: u64, sizes: &[(u64, u64)], n: usize) -> Vec<[u8; 8]> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            if rng.random_range(0..3) == 0 {
                (u64::MAX - rng.random_range(0..1_000_000u64)).to_le_bytes()
            } else {
                let (id, count) = sizes[rng.random_range(0..sizes.len())];
                (id << 32 | rng.random_range(0..count)).to_le_bytes()
            }
        })
        .collect()
}

/// Threshold queries: runs of one set's keys with absent keys among them.
fn queries(seed: u64, sizes: &[(u64, u64)], n: usize) -> Vec<Vec<[u8; 8]>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|q| {
            let (id, count) = sizes[rng.random_range(0..sizes.len())];
            let len = 1 + (q * 37) % 120;
            (0..len)
                .map(|_| {
                    if rng.random_range(0..4) == 0 {
                        (u64::MAX - rng.random_range(0..1_000_000u64)).to_le_bytes()
                    } else {
                        (id << 32 | rng.random_range(0..count)).to_le_bytes()
                    }
                })
                .collect()
        })
        .collect()
}

fn thresholds() -> Vec<Threshold> {
    vec![
        Threshold::count(0),
        Threshold::count(1),
        Threshold::fraction(0.5).unwrap(),
        Threshold::fraction(0.9).unwrap(),
        Threshold::fraction(0.5).unwrap().unpruned(),
    ]
}

/// The collection's own answers, key by key.
fn reference<K: Key>(collection: &SetIndex, keys: &[K]) -> Vec<Vec<u64>> {
    let mut results = BatchResults::new();
    collection.query_batch(keys, &mut results);
    results.iter().map(<[u64]>::to_vec).collect()
}

fn pools() -> [QueryPool; 2] {
    let config =
        |caller_help_work| PoolConfig { workers: Workers::Count(2), caller_help_work, ..PoolConfig::default() };
    [QueryPool::new(config(0)).unwrap(), QueryPool::new(config(usize::MAX)).unwrap()]
}

/// Every pool path and every query of `shared` equals `collection`'s own.
fn check_equal(collection: &SetIndex, shared: &ConcurrentIndex<SetIndex>, pools: &[QueryPool], seed: u64) {
    let sizes: Vec<(u64, u64)> = collection.ids().map(|id| (id, 64)).collect();
    let keys = probes(seed, &sizes, 3000);
    let want = reference(collection, &keys);
    for (key, ids) in keys.iter().zip(&want) {
        assert_eq!(&collection.query(key), ids, "query and query_batch differ");
        assert_eq!(&shared.query(key), ids);
    }
    let mut batch = BatchResults::new();
    shared.query_batch(&keys, &mut batch);
    assert!(batch.iter().eq(want.iter().map(Vec::as_slice)));
    let mut results = PoolResults::new();
    for pool in pools {
        for size in [0, 1, 7, 31, 32, 33, 100, 1000, 3000] {
            pool.query_batch(shared, &keys[..size], &mut results).unwrap();
            assert_eq!(results.len(), size);
            assert!(results.iter().eq(want[..size].iter().map(Vec::as_slice)), "pool batch of {size}");
            results = pool.submit(shared, &keys[..size], results).wait().unwrap();
            assert!(results.iter().eq(want[..size].iter().map(Vec::as_slice)), "submitted batch of {size}");
        }
        let hashes: Vec<KeyHash> = keys.iter().map(|key| key.key_hash(shared.seed())).collect();
        pool.query_batch(shared, &hashes, &mut results).unwrap();
        assert!(results.iter().eq(want.iter().map(Vec::as_slice)), "pool batch of hashes");
    }
    let queries = queries(seed + 1, &sizes, 60);
    let mut scored = ThresholdResults::new();
    let mut scores = Scores::new();
    for threshold in thresholds() {
        let want: Vec<Vec<(u64, u32)>> = queries.iter().map(|q| collection.query_threshold(q, threshold)).collect();
        for (q, ids) in queries.iter().zip(&want) {
            assert_eq!(&shared.query_threshold(q, threshold), ids);
        }
        for pool in pools {
            for n in [0, 1, 5, 60] {
                pool.query_threshold_batch(shared, &queries[..n], threshold, &mut scored).unwrap();
                assert!(scored.iter().eq(want[..n].iter().map(Vec::as_slice)), "threshold batch of {n}");
            }
        }
    }
    // Scores through the pool: a threshold of one key is the non-zero scores.
    pools[0].query_threshold_batch(shared, &queries, Threshold::count(1), &mut scored).unwrap();
    for (i, q) in queries.iter().enumerate() {
        collection.score_into(q, &mut scores);
        let nonzero: Vec<(u64, u32)> = scores.iter().collect();
        assert_eq!(scored.get(i).unwrap(), nonzero.as_slice());
        shared.score_into(q, &mut scores);
        assert_eq!(scores.iter().collect::<Vec<_>>(), nonzero);
    }
}

#[test]
fn pool_and_concurrent_queries_equal_the_collection_with_every_backend() {
    let _serial = serial();
    let (mut collection, _) = skewed(1);
    let pools = pools();
    for kernels in Kernels::available() {
        collection.set_kernels(kernels);
        let shared = ConcurrentIndex::new(collection.clone());
        check_equal(&collection, &shared, &pools, 2);
    }
}

/// A collection of one part answers through the pool as its sliced index
/// does through the pool.
#[test]
fn one_part_answers_as_its_sliced_index() {
    let _serial = serial();
    let sets: Vec<(u64, Vec<[u8; 8]>)> = (0..300u64).map(|id| (id, set_keys(id, 0, 50))).collect();
    let collection = SetIndex::build(&sets, P, LayoutConfig::default()).unwrap();
    assert_eq!(collection.parts().len(), 1);
    let part = collection.parts().next().unwrap().clone();
    let sizes: Vec<(u64, u64)> = (0..300u64).map(|id| (id, 50)).collect();
    let keys = probes(3, &sizes, 2000);
    let shared = ConcurrentIndex::new(collection.clone());
    let sliced = ConcurrentIndex::new(part);
    let pools = pools();
    let (mut a, mut b) = (PoolResults::new(), PoolResults::new());
    for pool in &pools {
        pool.query_batch(&shared, &keys, &mut a).unwrap();
        pool.query_batch(&sliced, &keys, &mut b).unwrap();
        assert!(a.iter().eq(b.iter()));
        assert!(a.iter().eq(reference(&collection, &keys).iter().map(Vec::as_slice)));
    }
    check_equal(&collection, &shared, &pools, 4);
}

/// Warm pool batches on a collection of many parts and grown sets allocate
/// nothing: key batches (inline, helped, workers only, submitted) and
/// threshold batches.
#[test]
fn warm_collection_batches_do_not_allocate() {
    let _serial = serial();
    let (collection, sizes) = skewed(5);
    let shared = ConcurrentIndex::new(collection);
    let keys = probes(6, &sizes, 4000);
    let queries = queries(7, &sizes, 64);
    let threshold = Threshold::fraction(0.3).unwrap();
    let pools = pools();
    let mut results = PoolResults::new();
    let mut other = Some(PoolResults::new());
    let mut scored = ThresholdResults::new();
    let mut run = || {
        for pool in &pools {
            for size in [64, 1, 4000, 0, 20] {
                pool.query_batch(&shared, &keys[..size], &mut results).unwrap();
            }
            let ticket = pool.submit(&shared, &keys[..200], other.take().unwrap());
            other = Some(ticket.wait().unwrap());
            for n in [64, 1, 0, 5] {
                pool.query_threshold_batch(&shared, &queries[..n], threshold, &mut scored).unwrap();
            }
        }
    };
    for _ in 0..50 {
        run();
    }
    // A thread's scratch grows (to the batch's bounds) before the first
    // task it runs, and which thread claims a task is a race (a helping
    // caller often claims them all before a worker wakes): a worker may run
    // its first task only after the warm-up, once. So a stretch of 50
    // rounds must allocate nothing within a few tries; an allocation per
    // batch would show in every stretch.
    let mut stretches = Vec::new();
    for _ in 0..4 {
        let before = allocations();
        for _ in 0..50 {
            run();
        }
        stretches.push(allocations() - before);
        if stretches.last() == Some(&0) {
            break;
        }
    }
    assert_eq!(stretches.last(), Some(&0), "warm collection batches allocated {stretches:?} times");
}

/// A random write to `model` (one that succeeds), returned as an op.
fn random_write(rng: &mut SmallRng, model: &mut SetIndex, next_id: &mut u64) -> SetOp {
    let ids: Vec<u64> = {
        let mut ids: Vec<u64> = model.ids().collect();
        ids.sort_unstable();
        ids
    };
    let hashes = |rng: &mut SmallRng, id: u64| -> Vec<KeyHash> {
        let n = 1u64 << rng.random_range(0..12);
        let from = rng.random_range(0..1000);
        set_keys(id, from, n).iter().map(|k| k.key_hash(0)).collect()
    };
    let op = match rng.random_range(0..10) {
        _ if ids.len() < 4 => {
            *next_id += 1;
            SetOp::InsertSet { id: *next_id, hashes: hashes(rng, *next_id) }
        }
        0..3 => {
            *next_id += 1;
            SetOp::InsertSet { id: *next_id, hashes: hashes(rng, *next_id) }
        }
        3..5 => SetOp::RemoveSet { id: ids[rng.random_range(0..ids.len())] },
        5..8 => {
            let id = ids[rng.random_range(0..ids.len())];
            SetOp::AddKeys { id, hashes: hashes(rng, id) }
        }
        _ => {
            let id = ids[rng.random_range(0..ids.len())];
            SetOp::ReplaceSet { id, hashes: hashes(rng, id) }
        }
    };
    let applied = match &op {
        SetOp::InsertSet { id, hashes } => model.insert_set(*id, hashes),
        SetOp::RemoveSet { id } => model.remove_set(*id),
        SetOp::AddKeys { id, hashes } => model.add_keys(*id, hashes),
        SetOp::ReplaceSet { id, hashes } => model.remove_set(*id).and_then(|()| model.insert_set(*id, hashes)),
    };
    applied.unwrap();
    op
}

/// A model after `writes` random writes drawn from `seed`, with the
/// generator and the next id that continue it.
fn random_model(seed: u64, writes: usize) -> (SmallRng, SetIndex, u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut model = SetIndex::new(P).unwrap();
    let mut next_id = 0;
    for _ in 0..writes {
        random_write(&mut rng, &mut model, &mut next_id);
    }
    (rng, model, next_id)
}

/// Probe keys of sets `0..200` (whatever sets exist when queried).
fn stress_probes() -> Vec<[u8; 8]> {
    let mut rng = SmallRng::seed_from_u64(17);
    (0..64).map(|_| (rng.random_range(0..200u64) << 32 | rng.random_range(0..1500u64)).to_le_bytes()).collect()
}

/// Readers (pool batches, submitted batches, threshold batches and direct
/// queries) run while a writer publishes collection writes one by one
/// (sets inserted, removed, grown into new parts, replaced). Every batch
/// must equal one whole state `j` with `done_before <= j <= started_after`.
#[test]
fn stress_readers_and_a_writer_see_only_whole_writes() {
    let _serial = serial();
    let writes = 200;
    let deadline = Instant::now() + Duration::from_secs(4);
    let probe = stress_probes();
    let query: Vec<Vec<[u8; 8]>> = probe.chunks(16).map(<[[u8; 8]]>::to_vec).collect();
    let threshold = Threshold::fraction(0.25).unwrap();
    let (mut rng, mut model, mut next_id) = random_model(19, 30);
    let shared = ConcurrentIndex::new(model.clone());
    let mut ops = Vec::new();
    let answers = |model: &SetIndex| {
        let keys = reference(model, &probe);
        let scored: Vec<Vec<(u64, u32)>> = query.iter().map(|q| model.query_threshold(q, threshold)).collect();
        (keys, scored)
    };
    let mut states = vec![answers(&model)];
    for _ in 0..writes {
        ops.push(random_write(&mut rng, &mut model, &mut next_id));
        states.push(answers(&model));
    }
    assert!(model.grown_sets() > 0 && model.parts().len() > 3, "the writes grow sets and add parts");
    let progress = Progress::default();
    let Progress { started, done, stop } = &progress;
    let checked = AtomicUsize::new(0);
    let [workers_only, helping] = pools();
    let check_keys = |got: Vec<Vec<u64>>, lo: usize, hi: usize| {
        assert!((lo..=hi).any(|j| states[j].0 == got), "a key batch matched no whole state in {lo}..={hi}");
        checked.fetch_add(1, Ordering::Relaxed);
    };
    let check_scores = |got: Vec<Vec<(u64, u32)>>, lo: usize, hi: usize| {
        assert!((lo..=hi).any(|j| states[j].1 == got), "a threshold batch matched no whole state in {lo}..={hi}");
        checked.fetch_add(1, Ordering::Relaxed);
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let publish = |j, op: &SetOp| {
                let result = shared.apply(vec![op.clone()]);
                assert!(result.iter().all(Result::is_ok), "write {j} failed");
            };
            progress.publish_each(&ops, deadline, publish, || {});
        });
        for reader in 0..2 {
            let pool = if reader == 0 { &workers_only } else { &helping };
            let (shared, probe, query, stop, started, done) = (&shared, &probe, &query, &stop, &started, &done);
            let (check_keys, check_scores) = (&check_keys, &check_scores);
            s.spawn(move || {
                let mut results = PoolResults::new();
                let mut scored = ThresholdResults::new();
                let mut direct = BatchResults::new();
                for round in 0usize.. {
                    let lo = done.load(Ordering::SeqCst);
                    match round % 4 {
                        0 => pool.query_batch(shared, probe, &mut results).unwrap(),
                        1 => results = pool.submit(shared, probe, results).wait().unwrap(),
                        2 => pool.query_threshold_batch(shared, query, threshold, &mut scored).unwrap(),
                        _ => shared.query_batch(probe, &mut direct),
                    }
                    let hi = started.load(Ordering::SeqCst);
                    match round % 4 {
                        0 | 1 => check_keys(results.iter().map(<[u64]>::to_vec).collect(), lo, hi),
                        2 => check_scores(scored.iter().map(<[(u64, u32)]>::to_vec).collect(), lo, hi),
                        _ => check_keys(direct.iter().map(<[u64]>::to_vec).collect(), lo, hi),
                    }
                    if round >= 4 && (stop.load(Ordering::SeqCst) || Instant::now() >= deadline) {
                        break;
                    }
                }
            });
        }
    });
    assert!(checked.load(Ordering::Relaxed) >= 8);
    // After the writer: the published state is the model's last one.
    let last = done.load(Ordering::SeqCst);
    assert_eq!(reference(&shared.snapshot(), &probe), states[last].0);
}

/// What a copy holds, for comparing copies exactly: every set's filters
/// (part, parameters, capacity, load), the parts' sizes, and its answers.
fn state(collection: &SetIndex, probe: &[[u8; 8]]) -> String {
    collection.validate().unwrap();
    let mut ids: Vec<u64> = collection.ids().collect();
    ids.sort_unstable();
    let filters: Vec<_> = ids.iter().map(|&id| (id, collection.filters(id).unwrap())).collect();
    let parts: Vec<(u64, usize)> = collection.parts().map(|part| (part.params().m(), part.len())).collect();
    format!("{filters:?} {parts:?} {:?}", reference(collection, probe))
}

/// Both copies of `shared` equal `model`: a write that fails (unknown id)
/// still publishes, so it swaps the copies, and each is compared in turn.
fn assert_both_copies_equal(shared: &ConcurrentIndex<SetIndex>, model: &SetIndex, probe: &[[u8; 8]]) {
    for round in 0..2 {
        assert_eq!(state(&shared.snapshot(), probe), state(model, probe), "copy {round}");
        assert!(matches!(shared.remove_set(u64::MAX), Err(Error::UnknownId(_))));
    }
}

#[test]
fn copies_stay_equal_after_failed_panicking_and_replayed_writes() {
    let _serial = serial();
    let probe = stress_probes();
    let (mut rng, mut model, mut next_id) = random_model(23, 20);
    let shared = ConcurrentIndex::new(model.clone());
    assert_both_copies_equal(&shared, &model, &probe);
    for round in 0..60 {
        let op = random_write(&mut rng, &mut model, &mut next_id);
        match round % 6 {
            0 => {
                shared.panic_in_next_write();
                let panicked = catch_unwind(AssertUnwindSafe(|| shared.apply(vec![op.clone()])));
                assert!(panicked.is_err(), "the hook panics inside the write");
                assert!(shared.apply(vec![op]).iter().all(Result::is_ok));
            }
            1 => {
                shared.fail_next_replay();
                assert!(shared.apply(vec![op]).iter().all(Result::is_ok));
            }
            _ => assert!(shared.apply(vec![op]).iter().all(Result::is_ok)),
        }
        // Writes that fail before changing anything.
        let some = model.ids().next().unwrap();
        assert!(matches!(shared.insert_set(some, &["x"]), Err(Error::DuplicateId(_))));
        assert!(matches!(shared.add_keys(u64::MAX - 1, &["x"]), Err(Error::UnknownId(_))));
        assert!(matches!(shared.replace_set(u64::MAX - 1, &["x"]), Err(Error::UnknownId(_))));
        if round % 10 == 0 {
            assert_both_copies_equal(&shared, &model, &probe);
        }
    }
    assert_both_copies_equal(&shared, &model, &probe);
    // The convenience writes equal their ops.
    let keys = set_keys(5000, 0, 3000);
    shared.insert_set(5000, &keys[..10]).unwrap();
    model.insert_set(5000, &keys[..10]).unwrap();
    shared.add_keys(5000, &keys[10..]).unwrap();
    model.add_keys(5000, &keys[10..]).unwrap();
    assert!(model.filter_count(5000).unwrap() > 1, "the set grew");
    shared.replace_set(5000, &keys[..5]).unwrap();
    model.remove_set(5000).unwrap();
    model.insert_set(5000, &keys[..5]).unwrap();
    assert!(shared.contains(5000));
    assert_eq!(shared.len(), model.len());
    assert_both_copies_equal(&shared, &model, &probe);
}

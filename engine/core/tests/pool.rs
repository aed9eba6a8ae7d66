//! `QueryPool` and `ConcurrentIndex`: answers equal `SlicedIndex::query_batch`
//! for every batch size, warm batches allocate nothing (counting global
//! allocator), readers and writers together only ever see whole writes,
//! panics fail only their batch, and shutdown with batches in flight
//! finishes them.
//!
//! The tests share one counting allocator, so they run one at a time
//! (`counting_alloc::serial`); each is bounded in time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bloomslice::{
    BatchResults, BloomFilter, BloomParams, ConcurrentIndex, Error, KeyHash, PoolConfig, PoolError, PoolResults,
    QueryPool, SlicedConfig, SlicedIndex, Threshold, ThresholdResults, Workers, WriteOp,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{allocations, serial};

#[path = "common/publisher.rs"]
mod publisher;

use publisher::Progress;

fn params() -> BloomParams {
    BloomParams::new(2048, 3).unwrap()
}

fn random_filter(rng: &mut SmallRng, params: BloomParams, keys: u64) -> BloomFilter {
    let mut f = BloomFilter::new(params).unwrap();
    for _ in 0..rng.random_range(1..=keys) {
        f.insert(&rng.random_range(0..4000u64).to_le_bytes());
    }
    f
}

fn random_index(seed: u64, filters: u64, shard_columns: usize) -> SlicedIndex {
    let mut rng = SmallRng::seed_from_u64(seed);
    let config = SlicedConfig { max_shard_columns: shard_columns, ..SlicedConfig::default() };
    let mut index = SlicedIndex::with_config(params(), config);
    for id in 0..filters {
        index.insert_filter(id * 3 + 1, &random_filter(&mut rng, params(), 60)).unwrap();
    }
    index
}

fn pool(workers: usize) -> QueryPool {
    QueryPool::new(PoolConfig { workers: Workers::Count(workers), ..PoolConfig::default() }).unwrap()
}

fn keys(seed: u64, n: usize) -> Vec<[u8; 8]> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(0..4000u64).to_le_bytes()).collect()
}

/// Per-key answers of the single-threaded engine.
fn reference(index: &SlicedIndex, keys: &[[u8; 8]]) -> Vec<Vec<u64>> {
    let mut r = BatchResults::new();
    index.query_batch(keys, &mut r);
    r.iter().map(<[u64]>::to_vec).collect()
}

/// A shared index of `random_index(index_args)`, a batch of `keys(key_args)`
/// and the single-threaded answers for it.
fn fixture(index_args: (u64, u64, usize), key_args: (u64, usize)) -> (ConcurrentIndex, Vec<[u8; 8]>, Vec<Vec<u64>>) {
    let index = random_index(index_args.0, index_args.1, index_args.2);
    let batch = keys(key_args.0, key_args.1);
    let expected = reference(&index, &batch);
    (ConcurrentIndex::new(index), batch, expected)
}

fn assert_same(results: &PoolResults, expected: &[Vec<u64>], what: &str) {
    assert_eq!(results.len(), expected.len(), "{what}: length");
    assert_eq!(results.iter().count(), expected.len(), "{what}: iter length");
    for (i, (got, want)) in results.iter().zip(expected).enumerate() {
        assert_eq!(got, want.as_slice(), "{what}: key {i}");
        assert_eq!(results.get(i), Some(want.as_slice()), "{what}: get({i})");
    }
    assert_eq!(results.get(expected.len()), None);
    assert_eq!(results.total_matches(), expected.iter().map(Vec::len).sum::<usize>());
}

/// A batch whose first task panics fails with an empty result; the next
/// batch answers as expected: neither the caller's buffer nor the pool is
/// poisoned.
fn panic_then_recover(
    pool: &QueryPool,
    shared: &ConcurrentIndex,
    batch: &[[u8; 8]],
    results: &mut PoolResults,
    expected: &[Vec<u64>],
    what: &str,
) {
    pool.fail_next_tasks(1);
    assert_eq!(pool.query_batch(shared, batch, results), Err(Error::Pool(PoolError::TaskPanicked)));
    assert!(results.is_empty());
    pool.query_batch(shared, batch, results).unwrap();
    assert_same(results, expected, what);
}

#[test]
fn pool_equals_query_batch_for_every_batch_size() {
    let _serial = serial();
    let index = random_index(1, 300, 512); // several shards
    let expected_all = reference(&index, &keys(2, 10_000));
    let all = keys(2, 10_000);
    let shared = ConcurrentIndex::new(index);
    let pool = pool(2);
    let mut results = PoolResults::new();
    let mut rng = SmallRng::seed_from_u64(3);
    for n in 0..=10_000usize {
        let start = rng.random_range(0..=10_000 - n);
        let batch = &all[start..start + n];
        let expected = &expected_all[start..start + n];
        if n.is_multiple_of(7) {
            let ticket = pool.submit(&shared, batch, results);
            results = ticket.wait().unwrap();
        } else {
            pool.query_batch(&shared, batch, &mut results).unwrap();
        }
        assert_same(&results, expected, &format!("batch of {n}"));
    }
}

#[test]
fn pool_equals_query_batch_on_random_indexes() {
    let _serial = serial();
    let pool = pool(3);
    let mut results = PoolResults::new();
    for seed in 0..6u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let filters = rng.random_range(0..2000);
        let shard_columns = [512, 1024, 16_384][seed as usize % 3];
        let index = random_index(seed, filters, shard_columns);
        let n = rng.random_range(0..5000);
        let batch = keys(seed + 100, n);
        let expected = reference(&index, &batch);
        let shared = ConcurrentIndex::new(index);
        pool.query_batch(&shared, &batch, &mut results).unwrap();
        assert_same(&results, &expected, &format!("seed {seed}, {filters} filters, {n} keys"));
        // Prehashed keys take the same path.
        let hashes: Vec<KeyHash> = batch.iter().map(|k| shared.params().hash(k)).collect();
        pool.query_batch(&shared, &hashes, &mut results).unwrap();
        assert_same(&results, &expected, &format!("seed {seed}, hashes"));
    }
}

#[test]
fn warm_batches_do_not_allocate() {
    let _serial = serial();
    let shared = ConcurrentIndex::new(random_index(7, 1500, 512));
    let pool = pool(2);
    let big = keys(8, 10_000);
    let mut results = PoolResults::new();
    // An Option, not mem::take: a fresh PoolResults allocates.
    let mut other = Some(PoolResults::new());
    let run = |results: &mut PoolResults, other: &mut Option<PoolResults>| {
        for size in [64, 1, 10_000, 0, 64] {
            pool.query_batch(&shared, &big[..size], results).unwrap();
        }
        let ticket = pool.submit(&shared, &big[..64], other.take().unwrap());
        *other = Some(ticket.wait().unwrap());
    };
    // Warm up: every buffer grows to its largest answer, every worker
    // registers with the epoch collector of the deques.
    for _ in 0..50 {
        run(&mut results, &mut other);
    }
    let before = allocations();
    for _ in 0..50 {
        run(&mut results, &mut other);
    }
    let allocated = allocations() - before;
    assert_eq!(allocated, 0, "warm pool batches allocated {allocated} times");
    assert_eq!(other.map(|o| o.len()), Some(64));
}

/// Warm threshold batches allocate nothing, on the workers (whose scratch
/// lives in the worker) and on a helping or inline caller alike.
#[test]
fn warm_threshold_batches_do_not_allocate() {
    let _serial = serial();
    let shared = ConcurrentIndex::new(random_index(31, 1500, 512));
    let queries: Vec<Vec<[u8; 8]>> = (0..64u64).map(|q| keys(100 + q, 50 + (q as usize * 13) % 200)).collect();
    let threshold = Threshold::fraction(0.2).unwrap();
    let workers_only =
        QueryPool::new(PoolConfig { workers: Workers::Count(2), caller_help_work: 0, ..PoolConfig::default() })
            .unwrap();
    let helping = QueryPool::new(PoolConfig {
        workers: Workers::Count(2),
        caller_help_work: usize::MAX,
        ..PoolConfig::default()
    })
    .unwrap();
    let mut results = ThresholdResults::new();
    let run = |results: &mut ThresholdResults| {
        for pool in [&workers_only, &helping] {
            for n in [64, 1, 0, 5, 64] {
                pool.query_threshold_batch(&shared, &queries[..n], threshold, results).unwrap();
            }
        }
    };
    for _ in 0..30 {
        run(&mut results);
    }
    assert_eq!(results.len(), 64);
    // A thread's scratch grows on the first threshold task it scores, and
    // which thread claims a task is a race (a helping caller often claims
    // them all before a worker wakes): a worker may score its first task
    // only after the warm-up, once (8 buffers). So a stretch of 30 rounds
    // must allocate nothing within a few tries; an allocation per batch
    // would show in every stretch.
    let mut stretches = Vec::new();
    for _ in 0..4 {
        let before = allocations();
        for _ in 0..30 {
            run(&mut results);
        }
        stretches.push(allocations() - before);
        if stretches.last() == Some(&0) {
            break;
        }
    }
    assert_eq!(stretches.last(), Some(&0), "warm threshold batches allocated {stretches:?} times");
    assert_eq!(results.len(), 64);
}

#[test]
fn panicking_task_fails_only_its_batch() {
    let _serial = serial();
    let (shared, batch, expected) = fixture((9, 400, 512), (10, 3000));
    let pool = pool(2);
    let mut results = PoolResults::new();
    panic_then_recover(&pool, &shared, &batch, &mut results, &expected, "after a panic");
    pool.fail_next_tasks(3);
    let failed = pool.submit(&shared, &batch, results).wait().unwrap_err();
    assert_eq!(failed.error, Error::Pool(PoolError::TaskPanicked));
    let results = pool.submit(&shared, &batch, failed.results).wait().unwrap();
    assert_same(&results, &expected, "ticket after a panic");
}

/// Submits and polls without waiting, so every task runs on a worker (a
/// waiting caller would help).
fn worker_run(pool: &QueryPool, index: &ConcurrentIndex, batch: &[[u8; 8]], results: PoolResults) -> PoolResults {
    let mut ticket = pool.submit(index, batch, results);
    loop {
        match ticket.try_wait() {
            Ok(done) => return done.unwrap(),
            Err(running) => {
                ticket = running;
                std::thread::yield_now();
            }
        }
    }
}

#[test]
fn caller_run_and_worker_run_batches_agree() {
    let _serial = serial();
    let (shared, all, expected_all) = fixture((21, 300, 512), (22, 10_000));
    let workers = pool(2);
    // Every blocking batch of this pool runs on the caller alone.
    let inline =
        QueryPool::new(PoolConfig { workers: Workers::Count(1), min_keys_per_task: 1 << 20, ..PoolConfig::default() })
            .unwrap();
    let mut by_caller = PoolResults::new();
    let mut by_workers = PoolResults::new();
    for n in (0..300).chain([1000, 4321, 10_000]) {
        assert!(inline.runs_inline(n));
        let (batch, expected) = (&all[..n], &expected_all[..n]);
        inline.query_batch(&shared, batch, &mut by_caller).unwrap();
        by_workers = worker_run(&workers, &shared, batch, by_workers);
        assert_same(&by_caller, expected, &format!("caller-run batch of {n}"));
        assert_same(&by_workers, expected, &format!("worker-run batch of {n}"));
        // The default pool runs small blocking batches inline too.
        workers.query_batch(&shared, batch, &mut by_caller).unwrap();
        assert_same(&by_caller, expected, &format!("blocking batch of {n}"));
    }
}

#[test]
fn panic_in_a_caller_run_task_fails_its_batch() {
    let _serial = serial();
    let (shared, batch, expected) = fixture((23, 300, 512), (24, 20));
    let pool = pool(1);
    assert!(pool.runs_inline(batch.len()), "20 keys run on the caller");
    let mut results = PoolResults::new();
    panic_then_recover(&pool, &shared, &batch, &mut results, &expected, "caller-run batch after a panic");
    let results = worker_run(&pool, &shared, &batch, results);
    assert_same(&results, &expected, "worker-run batch after a panic");
}

#[test]
fn dropping_the_pool_finishes_batches_in_flight() {
    let _serial = serial();
    let (shared, batch, expected) = fixture((11, 600, 1024), (12, 2000));
    for workers in [1, 2, 4] {
        let pool = QueryPool::new(PoolConfig {
            workers: Workers::Count(workers),
            queue_capacity: 8, // submitters back off while it is full
            ..PoolConfig::default()
        })
        .unwrap();
        let tickets: Vec<_> = (0..40).map(|_| pool.submit(&shared, &batch, PoolResults::new())).collect();
        drop(pool); // joins every worker after the queue is drained
        for ticket in tickets {
            assert!(ticket.is_done(), "a queued batch was not finished before the pool was dropped");
            let results = ticket.wait().unwrap();
            assert_same(&results, &expected, "batch finished by drop");
        }
    }
    // A pool dropped while idle (and asleep) joins too.
    let pool = pool(2);
    std::thread::sleep(Duration::from_millis(5));
    drop(pool);
}

#[test]
fn edge_batches_and_more_workers_than_cores() {
    let _serial = serial();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let index = random_index(13, 200, 512);
    let shared = ConcurrentIndex::new(index.clone());
    let pool = pool(cores * 3 + 1);
    assert_eq!(pool.workers(), cores * 3 + 1);
    let mut results = PoolResults::new();
    let none: [[u8; 8]; 0] = [];
    pool.query_batch(&shared, &none, &mut results).unwrap();
    assert!(results.is_empty());
    assert_eq!(results.iter().count(), 0);
    assert_eq!(results.get(0), None);
    let one = keys(14, 1);
    pool.query_batch(&shared, &one, &mut results).unwrap();
    assert_same(&results, &reference(&index, &one), "one key");
    // Two million keys: the largest task count, long tasks.
    let many = keys(15, 2_000_000);
    let expected = reference(&index, &many);
    pool.query_batch(&shared, &many, &mut results).unwrap();
    assert_eq!(results.len(), many.len());
    assert!(results.iter().zip(&expected).all(|(a, b)| a == b.as_slice()), "two million keys");
    // A zero-key ticket is done at once.
    let ticket = pool.submit(&shared, &none, results);
    assert!(ticket.is_done());
    assert!(ticket.try_wait().unwrap().unwrap().is_empty());
}

#[test]
fn pinning_refused_runs_unpinned_and_says_so() {
    let _serial = serial();
    let (shared, batch, expected) = fixture((16, 100, 512), (17, 500));
    let refused =
        QueryPool::new(PoolConfig { workers: Workers::Cores(vec![1_000_000, 0]), ..PoolConfig::default() }).unwrap();
    assert!(refused.status().pin_refused);
    assert_eq!(refused.status().cores[0], None);
    let mut results = PoolResults::new();
    refused.query_batch(&shared, &batch, &mut results).unwrap();
    assert_same(&results, &expected, "unpinned");
    let unpinned =
        QueryPool::new(PoolConfig { workers: Workers::Count(2), pin: false, ..PoolConfig::default() }).unwrap();
    assert!(!unpinned.status().pin_refused);
    assert_eq!(unpinned.status().cores, vec![None, None]);
    assert!(matches!(
        QueryPool::new(PoolConfig { workers: Workers::Count(0), ..PoolConfig::default() }),
        Err(Error::Pool(PoolError::Config(_)))
    ));
}

/// A random write that succeeds on `model` (applied to it).
fn random_write(rng: &mut SmallRng, model: &mut SlicedIndex, next_id: &mut u64) -> WriteOp {
    let ids: Vec<u64> = model.ids().collect();
    let op = match rng.random_range(0..11) {
        0..4 => {
            *next_id += 1;
            WriteOp::InsertFilter { id: *next_id, filter: random_filter(rng, params(), 80) }
        }
        _ if ids.is_empty() => {
            *next_id += 1;
            WriteOp::InsertFilter { id: *next_id, filter: random_filter(rng, params(), 80) }
        }
        4..6 => WriteOp::RemoveSet { id: ids[rng.random_range(0..ids.len())] },
        6..8 => {
            WriteOp::UpdateFilter { id: ids[rng.random_range(0..ids.len())], filter: random_filter(rng, params(), 80) }
        }
        8 => {
            WriteOp::ReplaceFilter { id: ids[rng.random_range(0..ids.len())], filter: random_filter(rng, params(), 80) }
        }
        _ => WriteOp::InsertKey {
            id: ids[rng.random_range(0..ids.len())],
            hash: params().hash(&rng.random_range(0..4000u64).to_le_bytes()),
        },
    };
    let applied = match &op {
        WriteOp::InsertFilter { id, filter } => model.insert_filter(*id, filter),
        WriteOp::RemoveSet { id } => model.remove_set(*id),
        WriteOp::UpdateFilter { id, filter } => model.update_filter(*id, filter),
        WriteOp::ReplaceFilter { id, filter } => model.replace_filter(*id, filter),
        WriteOp::InsertKey { id, hash } => model.insert_key_hash(*id, *hash),
    };
    applied.unwrap();
    op
}

fn sorted(ids: &[u64]) -> Vec<u64> {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v
}

/// Readers (through the pool, blocking and ticketed, and through direct
/// snapshots) run while a writer applies random writes. Every batch must
/// equal one whole state `j` with `done_before <= j <= started_after`: no
/// half-written filter, no mix of states inside a batch, and no state older
/// than a write that had completed before the batch was submitted.
#[test]
fn stress_readers_and_writers_see_only_whole_writes() {
    let _serial = serial();
    let writes = if cfg!(miri) { 10 } else { 400 };
    let deadline = Instant::now() + Duration::from_secs(if cfg!(miri) { 60 } else { 4 });
    let probe = keys(18, 48);
    // States 0..=writes and their answers for the probe keys.
    let mut rng = SmallRng::seed_from_u64(19);
    let mut model =
        SlicedIndex::with_config(params(), SlicedConfig { max_shard_columns: 512, ..SlicedConfig::default() });
    let mut next_id = 0;
    for _ in 0..50 {
        random_write(&mut rng, &mut model, &mut next_id);
    }
    let shared = Arc::new(ConcurrentIndex::new(model.clone()));
    let mut ops = Vec::new();
    let mut states = vec![reference(&model, &probe)];
    for _ in 0..writes {
        ops.push(random_write(&mut rng, &mut model, &mut next_id));
        states.push(reference(&model, &probe));
    }
    let states: Vec<Vec<Vec<u64>>> = states.into_iter().map(|s| s.iter().map(|ids| sorted(ids)).collect()).collect();
    let progress = Progress::default();
    let Progress { started, done, stop } = &progress;
    let pool = pool(2);
    let checked = AtomicUsize::new(0);
    let check = |batch: &mut dyn Iterator<Item = &[u64]>, lo: usize, hi: usize| {
        let got: Vec<Vec<u64>> = batch.map(sorted).collect();
        assert!((lo..=hi).any(|j| states[j] == got), "a batch matched no whole state between {lo} and {hi}");
        checked.fetch_add(1, Ordering::Relaxed);
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = SmallRng::seed_from_u64(20);
            // One op per publish, so every model state is a valid one.
            let publish = |j, op: &WriteOp| {
                let result = shared.apply(vec![op.clone()]);
                assert!(result.iter().all(Result::is_ok), "write {j} failed");
            };
            let maybe_yield = || {
                if rng.random_range(0..4) == 0 {
                    std::thread::yield_now();
                }
            };
            progress.publish_each(&ops, deadline, publish, maybe_yield);
        });
        for reader in 0..2 {
            let (pool, shared, probe, check, stop, started, done) =
                (&pool, &shared, &probe, &check, &stop, &started, &done);
            s.spawn(move || {
                let mut results = PoolResults::new();
                let mut round = 0usize;
                // At least one round each, even if the writer is already
                // done (on a loaded machine it can finish first).
                loop {
                    round += 1;
                    let lo = done.load(Ordering::SeqCst);
                    if (round + reader).is_multiple_of(3) {
                        results = pool.submit(shared, probe, results).wait().unwrap();
                    } else {
                        pool.query_batch(shared, probe, &mut results).unwrap();
                    }
                    let hi = started.load(Ordering::SeqCst);
                    check(&mut results.iter(), lo, hi);
                    if stop.load(Ordering::SeqCst) || Instant::now() >= deadline {
                        break;
                    }
                }
            });
        }
        // A direct reader, without the pool.
        s.spawn(|| {
            let mut out = BatchResults::new();
            loop {
                let lo = done.load(Ordering::SeqCst);
                shared.snapshot().query_batch(&probe, &mut out);
                let hi = started.load(Ordering::SeqCst);
                check(&mut out.iter(), lo, hi);
                if stop.load(Ordering::SeqCst) || Instant::now() >= deadline {
                    break;
                }
            }
        });
    });
    // Every reader ran at least one round.
    assert!(checked.load(Ordering::Relaxed) >= 3);
    // After the writer: both copies hold the final state.
    let final_state = done.load(Ordering::SeqCst);
    assert!(final_state > 0, "the writer made no progress");
    for _ in 0..2 {
        let snap = shared.snapshot();
        snap.validate().unwrap();
        let got: Vec<Vec<u64>> = reference(&snap, &probe).iter().map(|ids| sorted(ids)).collect();
        assert_eq!(got, states[final_state]);
        drop(snap);
        // A write that fails changes nothing but still swaps the copies.
        assert!(shared.remove_set(u64::MAX).is_err());
    }
}

#[test]
fn writes_are_visible_after_they_return_and_snapshots_never_change() {
    let _serial = serial();
    let p = params();
    let shared = ConcurrentIndex::new(SlicedIndex::new(p));
    let pool = pool(2);
    let key = 77u64.to_le_bytes();
    let mut results = PoolResults::new();
    let mut f = BloomFilter::new(p).unwrap();
    f.insert(&key);
    shared.insert_filter(5, &f).unwrap();
    pool.query_batch(&shared, &[key], &mut results).unwrap();
    assert_eq!(results.get(0), Some(&[5u64][..]));
    // A snapshot kept across writes: the writer waits for it at most
    // `concurrent::DRAIN_PATIENCE`, then copies; the snapshot itself never changes.
    let kept = shared.snapshot();
    shared.insert_key(5, "pear").unwrap();
    shared.remove_set(5).unwrap();
    assert_eq!(kept.query(&key), vec![5]);
    assert!(shared.snapshot().query(&key).is_empty());
    pool.query_batch(&shared, &[key], &mut results).unwrap();
    assert_eq!(results.get(0), Some(&[][..]));
    drop(kept);
    shared.insert_filter(6, &f).unwrap();
    assert_eq!(shared.snapshot().query(&key), vec![6]);
    shared.snapshot().validate().unwrap();
}

/// `ConcurrentIndex::apply` publishes several writes at once: readers see
/// both filters of a pair or neither, never one alone.
#[test]
fn multi_write_publish_is_all_or_nothing() {
    let _serial = serial();
    let p = params();
    let shared = ConcurrentIndex::new(SlicedIndex::new(p));
    let key = 4242u64.to_le_bytes();
    let mut f = BloomFilter::new(p).unwrap();
    f.insert(&key);
    let pool = pool(2);
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 0..300u64 {
                if Instant::now() > deadline {
                    break;
                }
                let (a, b) = (round * 2, round * 2 + 1);
                let inserted = shared.apply(vec![
                    WriteOp::InsertFilter { id: a, filter: f.clone() },
                    WriteOp::InsertFilter { id: b, filter: f.clone() },
                ]);
                assert!(inserted.iter().all(Result::is_ok));
                let deleted = shared.apply(vec![WriteOp::RemoveSet { id: a }, WriteOp::RemoveSet { id: b }]);
                assert!(deleted.iter().all(Result::is_ok));
            }
            stop.store(true, Ordering::SeqCst);
        });
        s.spawn(|| {
            let mut results = PoolResults::new();
            let keys = [key; 8];
            // At least one batch, even if the writer is already done.
            loop {
                pool.query_batch(&shared, &keys, &mut results).unwrap();
                for ids in results.iter() {
                    assert!(ids.is_empty() || (ids.len() == 2 && ids[0] / 2 == ids[1] / 2), "saw {ids:?}");
                }
                if stop.load(Ordering::SeqCst) {
                    break;
                }
            }
        });
    });
    assert!(shared.snapshot().is_empty());
}

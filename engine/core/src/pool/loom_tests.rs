//! Loom models of the pool's hand-over (`job.rs`): every interleaving of
//! an owner and one or two workers, up to a preemption bound, on tiny
//! batches (one or two workers, two tasks). Loom checks each access to the
//! job's `UnsafeCell`s against the happens-before order the atomics give,
//! and reports a deadlock if a parked owner is never woken.
//!
//! The queues are not modelled (crossbeam's atomics are invisible to
//! loom): a worker's queue entry is an `Arc<Job>` it was given when it
//! started, which is all an entry is ("this job may have unclaimed tasks";
//! the batch data is published by the claim counter alone). A worker that
//! holds an entry across batches is a stale entry.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p bloomslice --release
//! --lib loom_` (`LOOM_MAX_PREEMPTIONS` overrides the bound below).

use std::time::Duration;

use crossbeam_deque::Worker;

use super::job::{Job, WaitOnDrop};
use super::served::Scratch;
use super::{PoolResults, Shared, Task, run};
use crate::error::{Error, PoolError};
use crate::hash::{Key, KeyHash};
use crate::score::{Threshold, ThresholdResults};
use crate::sliced::{BatchResults, SlicedIndex};
use crate::sync::{Arc, Mutex, UnsafeCell};
use crate::{BloomFilter, BloomParams};

/// Runs `f` under loom with a preemption bound of 3 unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise.
pub(crate) fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&runs);
    builder.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f();
    });
    eprintln!("explored {} executions", runs.load(std::sync::atomic::Ordering::Relaxed));
}

/// An index of two filters: 1 holds "a" and "b", 2 holds "c" and "d".
fn index() -> SlicedIndex {
    let params = BloomParams::new(256, 2).unwrap();
    let mut index = SlicedIndex::new(params);
    for (id, keys) in [(1, ["a", "b"]), (2, ["c", "d"])] {
        let mut f = BloomFilter::new(params).unwrap();
        keys.iter().for_each(|k| f.insert(k));
        index.insert_filter(id, &f).unwrap();
    }
    index
}

/// A fresh snapshot of `index` (one per batch, as the pool loads one).
fn snapshot(index: &SlicedIndex) -> Arc<SlicedIndex> {
    Arc::new(index.clone())
}

/// What the pool shares with its workers; its queues stay empty here.
fn shared() -> (Arc<Shared>, Worker<Task>) {
    let local = Worker::new_lifo();
    let shared = Arc::new(Shared::new(1, vec![local.stealer()].into_boxed_slice(), Duration::ZERO, 1));
    (shared, local)
}

/// A worker that pops `entries` one after the other and runs each as the
/// pool's workers do (`run`: claim, then claim until none is left).
fn worker(shared: &Arc<Shared>, local: Worker<Task>, entries: Vec<Arc<Job>>) -> loom::thread::JoinHandle<()> {
    let shared = Arc::clone(shared);
    loom::thread::spawn(move || {
        let mut scratch = Scratch::default();
        for job in entries {
            run(&shared, &local, Task { job, fresh: true }, &mut scratch);
        }
    })
}

/// A pool's shared state and one worker holding `entries`, for models
/// outside this module.
pub(crate) fn pool_with_worker(entries: Vec<Arc<Job>>) -> (Arc<Shared>, loom::thread::JoinHandle<()>) {
    let (shared, local) = shared();
    let worker = worker(&shared, local, entries);
    (shared, worker)
}

fn answers(results: &PoolResults) -> Vec<Vec<u64>> {
    results.iter().map(<[u64]>::to_vec).collect()
}

fn expected<K: Key>(index: &SlicedIndex, keys: &[K]) -> Vec<Vec<u64>> {
    let mut out = BatchResults::new();
    index.query_batch(keys, &mut out);
    out.iter().map(<[u64]>::to_vec).collect()
}

/// A batch handed to a worker whose entry outlives it: the entry's second
/// pop may meet the owner refilling the job for its next batch, or that
/// batch armed. Every claim through it either fails or is an ordinary
/// claim of the batch it sees, whose data it sees whole.
#[test]
fn loom_stale_entry_meets_the_next_batch() {
    let index = index();
    let (keys1, keys2) = (["a", "c"], ["d", "b"]);
    let (want1, want2) = (expected(&index, &keys1), expected(&index, &keys2));
    model(move || {
        let (shared, local) = shared();
        let mut results = PoolResults::new();
        let (job, tasks) = results.prepare_copied(snapshot(&index), &keys1, |_| 2).unwrap();
        assert_eq!(tasks, 2);
        // Two entries for one batch: the second is stale by the time it is
        // popped, unless the worker pops it before the batch ends.
        let w = worker(&shared, local, vec![Arc::clone(&job), job]);
        results.finish(&shared, Duration::ZERO, true).unwrap();
        assert_eq!(answers(&results), want1);
        let (job, _) = results.prepare_copied(snapshot(&index), &keys2, |_| 2).unwrap();
        drop(job);
        results.finish(&shared, Duration::ZERO, true).unwrap();
        assert_eq!(answers(&results), want2);
        w.join().unwrap();
    });
}

/// The owner helps with its own batch and parks for the tasks a worker
/// holds; then a batch it does not help with, which it waits for parked
/// (or spinning) until the worker's last task wakes it.
#[test]
fn loom_owner_helps_then_waits() {
    let index = index();
    let keys = ["a", "b", "c"];
    let want = expected(&index, &keys);
    model(move || {
        let (shared, local) = shared();
        let mut results = PoolResults::new();
        let (job, _) = results.prepare_copied(snapshot(&index), &keys, |_| 2).unwrap();
        let w = worker(&shared, local, vec![job]);
        results.finish(&shared, Duration::ZERO, true).unwrap();
        assert_eq!(answers(&results), want);
        w.join().unwrap();

        let (shared, local) = (shared, Worker::new_lifo());
        let (job, _) = results.prepare_copied(snapshot(&index), &keys, |_| 2).unwrap();
        let w = worker(&shared, local, vec![job]);
        results.finish(&shared, Duration::ZERO, false).unwrap();
        assert_eq!(answers(&results), want);
        w.join().unwrap();
    });
}

/// Silences the injected panics' messages (loom replays them thousands of
/// times); any other panic is reported as usual.
#[cfg(feature = "test-hooks")]
fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let injected = info.payload().downcast_ref::<&str>().is_some_and(|m| m.contains("injected task failure"));
            if !injected {
                default(info);
            }
        }));
    });
}

/// A task that panics fails its batch, on a worker or on the helping
/// owner alike; the batch still ends (the owner is woken) and the next
/// batch on the same job runs normally.
#[cfg(feature = "test-hooks")]
#[test]
fn loom_a_panicking_task_fails_only_its_batch() {
    quiet_injected_panics();
    let index = index();
    let keys = ["a", "d"];
    let want = expected(&index, &keys);
    model(move || {
        let (shared, local) = shared();
        shared.fail_next.store(1, crate::sync::Ordering::Relaxed);
        let mut results = PoolResults::new();
        let (job, _) = results.prepare_copied(snapshot(&index), &keys, |_| 2).unwrap();
        let w = worker(&shared, local, vec![Arc::clone(&job), job]);
        let outcome = results.finish(&shared, Duration::ZERO, true);
        assert!(matches!(outcome, Err(Error::Pool(PoolError::TaskPanicked))), "{outcome:?}");
        assert!(results.is_empty());
        let (job, _) = results.prepare_copied(snapshot(&index), &keys, |_| 2).unwrap();
        drop(job);
        results.finish(&shared, Duration::ZERO, true).unwrap();
        assert_eq!(answers(&results), want);
        w.join().unwrap();
    });
}

/// A key whose bytes loom watches: reading it (hashing) is an access of
/// its cell, so a task that hashed it after its owner had moved on (the
/// owner overwrites it below) is a data race loom reports.
struct WatchedKey(UnsafeCell<[u8; 1]>);

// SAFETY: the cell is only read while the batch borrows the keys and
// written by their owner after it; loom checks exactly that.
unsafe impl Sync for WatchedKey {}

impl Key for WatchedKey {
    fn key_hash(&self, seed: u64) -> KeyHash {
        // SAFETY: a read of a plain byte array; see the `Sync` impl.
        let bytes = self.0.with(|p| unsafe { *p });
        bytes.key_hash(seed)
    }
}

/// A blocking batch lends the caller's keys to the tasks in place; once it
/// returns (or its guard is dropped) no task touches them, so the caller
/// may overwrite or free them.
#[test]
fn loom_borrowed_keys_are_released_when_the_batch_returns() {
    let index = index();
    let want = expected(&index, &["a", "c"]);
    model(move || {
        let (shared, local) = shared();
        let keys = [WatchedKey(UnsafeCell::new(*b"a")), WatchedKey(UnsafeCell::new(*b"c"))];
        let mut results = PoolResults::new();
        // SAFETY: this thread waits for the batch (`finish`, then the
        // guard) before it touches `keys` again.
        let (job, _) = unsafe { results.prepare_borrowed(snapshot(&index), &keys, |_| 2) }.unwrap();
        let guard = WaitOnDrop(Arc::clone(&job));
        let w = worker(&shared, local, vec![job]);
        results.finish(&shared, Duration::ZERO, true).unwrap();
        drop(guard);
        // The caller's buffer is its own again.
        for key in &keys {
            // SAFETY: the batch is done: no task reads the keys now.
            key.0.with_mut(|p| unsafe { *p = *b"z" });
        }
        assert_eq!(answers(&results), want);
        w.join().unwrap();
    });
}

/// A threshold batch's job goes back to the free list when its caller is
/// done with it, and another caller pops it for its own batch while a
/// worker still holds a (stale) entry of the first. The free list is a
/// mutex-guarded vector here (the pool's lock-free `ArrayQueue` hands a
/// job over with Release/Acquire, as the mutex does).
#[test]
fn loom_threshold_job_returned_to_the_free_list() {
    let index = index();
    let queries1: Vec<Vec<&str>> = vec![vec!["a", "b"], vec!["c"]];
    let queries2: Vec<Vec<&str>> = vec![vec!["d"], vec!["a", "c"]];
    let threshold = Threshold::count(1);
    let want = |queries: &[Vec<&str>]| -> Vec<Vec<(u64, u32)>> {
        queries.iter().map(|q| index.query_threshold(q, threshold)).collect()
    };
    let (want1, want2) = (want(&queries1), want(&queries2));
    model(move || {
        let (shared, local) = shared();
        let free = Arc::new(Mutex::new(Vec::<Arc<Job>>::new()));
        let job = Job::new_shared();
        // SAFETY: new, so idle and ours; this thread waits for the batch
        // before `queries1` goes.
        let prepared = unsafe { job.prepare_threshold(snapshot(&index), &queries1, threshold, 2) };
        assert_eq!(prepared.map(|(tasks, _)| tasks), Some(2));
        let w = worker(&shared, local, vec![Arc::clone(&job), Arc::clone(&job)]);
        let second = {
            let (shared, free, index, queries2, want2) =
                (Arc::clone(&shared), Arc::clone(&free), index.clone(), queries2.clone(), want2.clone());
            loom::thread::spawn(move || {
                let job = loop {
                    if let Some(job) = free.lock().unwrap().pop() {
                        break job;
                    }
                    loom::thread::yield_now();
                };
                // SAFETY: popped from the free list, so idle and ours; this
                // thread waits for the batch before `queries2` goes.
                unsafe { job.prepare_threshold(snapshot(&index), &queries2, threshold, 2) }.unwrap();
                job.help(&shared);
                job.wait(Duration::ZERO);
                let mut results = ThresholdResults::default();
                job.take_threshold(&mut results).unwrap();
                assert_eq!(results.iter().map(<[_]>::to_vec).collect::<Vec<_>>(), want2);
            })
        };
        job.help(&shared);
        job.wait(Duration::ZERO);
        let mut results = ThresholdResults::default();
        job.take_threshold(&mut results).unwrap();
        assert_eq!(results.iter().map(<[_]>::to_vec).collect::<Vec<_>>(), want1);
        free.lock().unwrap().push(job);
        second.join().unwrap();
        w.join().unwrap();
    });
}

//! One batch's shared state ([`Job`]), the caller's reusable result buffer
//! ([`PoolResults`]) and the non-blocking handle ([`Ticket`]).
//!
//! # Design note: who may touch what
//!
//! A `Job` lives as long as the [`PoolResults`] that owns it and is reused
//! for every batch, so a warm batch allocates nothing. Its batch data (keys'
//! hashes, the index snapshot, one [`BatchResults`] per task) sits in
//! `UnsafeCell`s under a hand-over protocol instead of a lock:
//!
//! 1. *Idle* (`done` is true, or the job was never submitted): only the
//!    owner of the `PoolResults` touches the batch data, through `&mut`
//!    (filling) or `&` (reading results).
//! 2. *Submitted*: the owner fills the batch data, sets `pending` to the
//!    task count, then stores `claims = (tasks, 0)` with Release. From then
//!    on a task is run by whoever *claims* its index: workers (through a
//!    queue entry, which only says "this job may have unclaimed tasks") and,
//!    in the blocking paths, the waiting owner itself. A claim is one
//!    `fetch_add` on `claims` (Acquire, pairing with that Release store), so
//!    every task index is handed out exactly once and its claimer sees the
//!    batch data. The owner gives up `&mut` access: [`Ticket`] owns the
//!    `PoolResults`, and the blocking path holds it by `&mut` until done and
//!    touches the data only through claims, like a worker. Task `c` writes
//!    only `chunks[c]`; tasks read the hashes and snapshot.
//! 3. *Finishing*: each task ends with `pending.fetch_sub(1, AcqRel)`. The
//!    task that takes it to zero has acquired every other task's writes; it
//!    drops the snapshot (so writers need not wait for an idle buffer), then
//!    stores `done = true` (SeqCst), handing everything back to the owner.
//!    After that store a worker touches only the atomics and the parking
//!    mutex and condvar, which outlive it through its `Arc<Job>`.
//!
//! **Stale entries.** A queue entry may outlive its batch (the owner ran
//! the tasks, or another worker did) and even be popped while the owner
//! refills the job for its next batch. Its claim then fails: until the
//! owner's Release store the counter still reads `next >= tasks` of the
//! finished batch. Task count and next index share *one* atomic word for
//! exactly this reason: with two separate atomics a stale claimer could
//! pair an old index with the new count and run a task whose data is not
//! published yet. A claim that wins after the Release store is an ordinary
//! claim of the new batch. Failed claims only bump the low half; each batch
//! makes at most a few per worker and the store resets it, so it cannot
//! reach the high half.

use core::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use super::{MAX_TASKS_PER_BATCH, PoolError, Shared};
use crate::error::Result;
use crate::hash::KeyHash;
use crate::sliced::{BatchResults, SlicedIndex};

/// Shared state of one in-flight batch; see the module's design note.
pub(crate) struct Job {
    /// Claim counter: task count of the current batch in the high 32 bits,
    /// next unclaimed task index in the low 32 (see "Stale entries" in the
    /// module's design note). Hot: every claim of the owner and of every
    /// worker hits it, so it has a cache line of its own.
    claims: CachePadded<AtomicU64>,
    /// Tasks of the current batch not finished yet. Hot: every task of
    /// every worker decrements it, so it has a cache line of its own.
    pending: CachePadded<AtomicUsize>,
    /// The batch is finished and handed back to the owner.
    done: AtomicBool,
    /// A task of the current batch panicked.
    panicked: AtomicBool,
    /// The owner is (about to be) parked on `cvar`.
    waiting: AtomicBool,
    /// Parking for the owner; guards nothing but the sleep/wake hand-off.
    lock: Mutex<()>,
    cvar: Condvar,
    /// Keys per task (the last task may have fewer).
    chunk_len: AtomicUsize,
    /// Keys in the batch.
    keys: AtomicUsize,
    /// Protocol state: see the module's design note.
    hashes: UnsafeCell<Vec<KeyHash>>,
    index: UnsafeCell<Option<Arc<SlicedIndex>>>,
    chunks: Box<[UnsafeCell<BatchResults>]>,
}

// SAFETY: the `UnsafeCell` fields are accessed under the hand-over protocol
// of the module's design note: exclusively by the owner while idle, and
// while submitted only read (hashes, snapshot) or written by exactly one
// task each (chunk `c` by task `c`), with the hand-overs ordered by the
// queue's Release/Acquire and by `pending` (AcqRel) and `done` (SeqCst).
// Every other field is Sync. `SlicedIndex` is Send + Sync.
unsafe impl Sync for Job {}

impl Job {
    fn new() -> Job {
        Job {
            claims: CachePadded::new(AtomicU64::new(0)),
            pending: CachePadded::new(AtomicUsize::new(0)),
            done: AtomicBool::new(true),
            panicked: AtomicBool::new(false),
            waiting: AtomicBool::new(false),
            lock: Mutex::new(()),
            cvar: Condvar::new(),
            chunk_len: AtomicUsize::new(1),
            keys: AtomicUsize::new(0),
            hashes: UnsafeCell::new(Vec::new()),
            index: UnsafeCell::new(None),
            chunks: (0..MAX_TASKS_PER_BATCH).map(|_| UnsafeCell::new(BatchResults::new())).collect(),
        }
    }

    /// Keys of task `task`.
    fn range(&self, task: usize) -> core::ops::Range<usize> {
        // Relaxed: written by the owner before its Release store of
        // `claims`, read after the claim (Acquire) that gave us this task.
        let (len, keys) = (self.chunk_len.load(Ordering::Relaxed), self.keys.load(Ordering::Relaxed));
        (task * len).min(keys)..((task + 1) * len).min(keys)
    }

    /// Claims the next unrun task of the current batch: `Some((task,
    /// tasks))`, or `None` when every task is claimed (or the job is idle).
    pub(crate) fn claim(&self) -> Option<(usize, usize)> {
        // Acquire: pairs with the owner's Release store in `prepare` (the
        // store heads the release sequence every later claim reads from),
        // so a winning claimer sees the whole batch data. Relaxed would
        // suffice for exclusivity alone: the RMW hands each index out once.
        let word = self.claims.fetch_add(1, Ordering::Acquire);
        let (tasks, next) = ((word >> 32) as usize, (word & 0xffff_ffff) as usize);
        (next < tasks).then_some((next, tasks))
    }

    /// Runs claimed task `task` under `catch_unwind` and ends it: a panic
    /// marks the batch failed and goes no further, so neither a worker nor
    /// a helping caller is lost to it.
    pub(crate) fn execute(&self, shared: &Shared, task: usize) {
        // `shared` carries only the test hook's counter.
        #[cfg(not(feature = "test-hooks"))]
        let _ = shared;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // Relaxed: a test hook counter, compiled only for tests.
            #[cfg(feature = "test-hooks")]
            if shared.fail_next.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok() {
                panic!("bloomslice pool: injected task failure");
            }
            self.run_task(task);
        }));
        if outcome.is_err() {
            self.mark_panicked();
        }
        self.finish_task();
    }

    /// Claims and runs tasks until none is left unclaimed.
    pub(crate) fn run_claims(&self, shared: &Shared) {
        while let Some((task, _)) = self.claim() {
            self.execute(shared, task);
        }
    }

    /// Runs task `task` (called once per task, by whoever claimed it).
    fn run_task(&self, task: usize) {
        let range = self.range(task);
        // SAFETY: submitted state: the hashes and the snapshot are only
        // read until `done`, and chunk `task` is written by this task alone
        // (`claim` hands each task index out once per batch).
        let (hashes, index, out) = unsafe { (&*self.hashes.get(), &*self.index.get(), &mut *self.chunks[task].get()) };
        if let Some(index) = index {
            index.query_batch_hashes(&hashes[range], out);
        }
    }

    /// Marks a task panicked; the batch will report [`PoolError::TaskPanicked`].
    fn mark_panicked(&self) {
        // Relaxed: published to the owner by the AcqRel decrement of
        // `pending` that follows and the SeqCst store of `done`.
        self.panicked.store(true, Ordering::Relaxed);
    }

    /// Ends one task; the last one hands the batch back to the owner.
    fn finish_task(&self) {
        // AcqRel: Release publishes this task's chunk; the last decrement
        // also Acquires every other task's chunk.
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: every task is finished (pending reached zero, with
            // Acquire) and the owner waits for `done`, so nobody else
            // touches the snapshot now. Dropping it early lets a writer
            // reuse that copy without waiting for this buffer.
            unsafe { *self.index.get() = None };
            self.complete();
        }
    }

    /// Hands the batch back to the owner and wakes it if it is parked.
    fn complete(&self) {
        // SeqCst store then SeqCst load of `waiting`, against the owner's
        // SeqCst store of `waiting` then load of `done` (`park`): at least
        // one side sees the other, so a parked owner is always woken.
        self.done.store(true, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) {
            // Taking the lock orders this notify after the owner's wait.
            drop(self.lock.lock().unwrap_or_else(PoisonError::into_inner));
            self.cvar.notify_all();
        }
    }

    fn is_done(&self) -> bool {
        // Acquire: pairs with the SeqCst store in `complete`, making the
        // batch's results visible to the owner.
        self.done.load(Ordering::Acquire)
    }

    /// Spins up to `spin`, then parks until the batch is done.
    fn wait(&self, spin: Duration) {
        if self.is_done() {
            return;
        }
        // Spin (no yields), then park. Measured on 2 shared cores,
        // single-key latency on `full` N = 1000: p50 18 us when the waiter
        // spun and yielded for 50 us, 6 us when it parked at once: a
        // yielding waiter loses its core to other processes, while a parked
        // one is woken with the scheduler's wake-up preference.
        let start = Instant::now();
        while start.elapsed() < spin {
            for _ in 0..16 {
                core::hint::spin_loop();
            }
            if self.is_done() {
                return;
            }
        }
        self.park();
    }

    #[cold]
    fn park(&self) {
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        // SeqCst: see `complete`.
        self.waiting.store(true, Ordering::SeqCst);
        while !self.done.load(Ordering::SeqCst) {
            guard = self.cvar.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
        // Relaxed: a stale `true` only costs a worker a spurious notify.
        self.waiting.store(false, Ordering::Relaxed);
    }
}

/// The results of one pool batch, in a buffer reused batch after batch.
///
/// Keep one per submitting thread (or per in-flight [`Ticket`]): once its
/// buffers have grown to the batch size, a batch allocates nothing. Results
/// are stored per task, so reading them copies nothing.
pub struct PoolResults {
    job: Arc<Job>,
    /// Keys of the last batch (0 after a failed batch).
    len: usize,
    chunk_len: usize,
}

impl core::fmt::Debug for PoolResults {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PoolResults").field("len", &self.len).field("total_matches", &self.total_matches()).finish()
    }
}

impl Default for PoolResults {
    fn default() -> Self {
        Self::new()
    }
}

impl PoolResults {
    /// An empty buffer (one allocation, reused by every batch).
    pub fn new() -> Self {
        PoolResults { job: Arc::new(Job::new()), len: 0, chunk_len: 1 }
    }

    /// Number of keys in the last batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the last batch had no keys (or failed).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn chunk(&self, task: usize) -> &BatchResults {
        // SAFETY: a `PoolResults` is reachable by `&` only while idle (a
        // Ticket owns it while submitted, the blocking path holds `&mut`),
        // so no task writes this chunk now.
        unsafe { &*self.job.chunks[task].get() }
    }

    /// The ids matching key `i` of the last batch (in index order).
    pub fn get(&self, i: usize) -> Option<&[u64]> {
        if i >= self.len {
            return None;
        }
        self.chunk(i / self.chunk_len).get(i % self.chunk_len)
    }

    /// Iterates over the per-key id lists of the last batch.
    pub fn iter(&self) -> impl Iterator<Item = &[u64]> + '_ {
        let tasks = self.len.div_ceil(self.chunk_len);
        (0..tasks).flat_map(move |t| self.chunk(t).iter())
    }

    /// Total matches over all keys of the last batch.
    pub fn total_matches(&self) -> usize {
        (0..self.len.div_ceil(self.chunk_len)).map(|t| self.chunk(t).total_matches()).sum()
    }

    /// Fills the batch data and arms the job for `tasks` tasks. Returns
    /// whether there is anything to queue (a zero-key batch is done at once).
    pub(crate) fn prepare(
        &mut self,
        index: Arc<SlicedIndex>,
        fill: impl FnOnce(&SlicedIndex, &mut Vec<KeyHash>),
        tasks_for: impl FnOnce(usize) -> usize,
    ) -> Option<(Arc<Job>, usize)> {
        let job = &*self.job;
        debug_assert!(job.is_done(), "a PoolResults is only reachable while idle");
        // SAFETY: idle (we hold `&mut self`; see the module's design note).
        let hashes = unsafe { &mut *job.hashes.get() };
        hashes.clear();
        fill(&index, hashes);
        let keys = hashes.len();
        let tasks = tasks_for(keys).clamp(1, MAX_TASKS_PER_BATCH);
        let chunk_len = keys.div_ceil(tasks).max(1);
        let tasks = keys.div_ceil(chunk_len);
        self.len = keys;
        self.chunk_len = chunk_len;
        if keys == 0 {
            return None;
        }
        // Relaxed: published by the queue push (Release) that follows.
        job.chunk_len.store(chunk_len, Ordering::Relaxed);
        job.keys.store(keys, Ordering::Relaxed);
        job.panicked.store(false, Ordering::Relaxed);
        job.pending.store(tasks, Ordering::Relaxed);
        job.done.store(false, Ordering::Relaxed);
        // SAFETY: idle, as above.
        unsafe { *job.index.get() = Some(index) };
        // Release: publishes everything above to whoever claims a task
        // (Acquire in `claim`); until this store, claims through stale
        // queue entries fail (see "Stale entries").
        job.claims.store((tasks as u64) << 32, Ordering::Release);
        Some((Arc::clone(&self.job), tasks))
    }

    /// If `help`, runs the submitted batch's unclaimed tasks; then waits for
    /// the tasks the workers hold, and reports the outcome.
    pub(crate) fn finish(&mut self, shared: &Shared, spin: Duration, help: bool) -> Result<()> {
        if help && !self.job.is_done() {
            self.job.run_claims(shared);
        }
        self.job.wait(spin);
        self.outcome()
    }

    fn outcome(&mut self) -> Result<()> {
        // Relaxed: ordered by the Acquire load of `done` before this call.
        if self.job.panicked.swap(false, Ordering::Relaxed) {
            self.len = 0;
            return Err(PoolError::TaskPanicked.into());
        }
        Ok(())
    }
}

/// A batch submitted with [`super::QueryPool::submit`]: owns the
/// [`PoolResults`] until the batch is done, then gives it back.
///
/// Dropping a ticket does not cancel its batch; the buffer is freed when
/// the batch ends.
#[must_use = "a ticket is how the results come back"]
pub struct Ticket {
    results: PoolResults,
    shared: Arc<Shared>,
    spin: Duration,
    /// Whether `wait` runs unclaimed tasks ([`super::PoolConfig::caller_help_work`]).
    help: bool,
}

/// A failed batch: the error and the (emptied) buffer, for reuse (as
/// `std::sync::mpsc::SendError` hands its value back). `?` turns it into
/// its [`Error`](crate::Error), dropping the buffer.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct Failed {
    /// What went wrong (an [`Error::Pool`](crate::Error::Pool)).
    #[source]
    pub error: crate::Error,
    /// The buffer, with no results.
    pub results: PoolResults,
}

impl From<Failed> for crate::Error {
    fn from(failed: Failed) -> Self {
        failed.error
    }
}

impl core::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ticket").field("done", &self.is_done()).finish_non_exhaustive()
    }
}

impl Ticket {
    pub(crate) fn new(results: PoolResults, shared: Arc<Shared>, spin: Duration, help: bool) -> Self {
        Ticket { results, shared, spin, help }
    }

    /// Whether the batch is finished (a poll: never blocks).
    pub fn is_done(&self) -> bool {
        self.results.job.is_done()
    }

    /// Waits for the batch and returns the buffer holding its results.
    /// Like the blocking [`super::QueryPool::query_batch`], the waiting
    /// thread first runs the batch's tasks no worker has claimed yet (for
    /// batches within [`super::PoolConfig::caller_help_work`]),
    /// then spins briefly and parks.
    ///
    /// # Errors
    ///
    /// [`Failed`] with [`PoolError::TaskPanicked`] if a task panicked.
    pub fn wait(mut self) -> Result<PoolResults, Failed> {
        match self.results.finish(&self.shared, self.spin, self.help) {
            Ok(()) => Ok(self.results),
            Err(error) => Err(Failed { error, results: self.results }),
        }
    }

    /// The results if the batch is done, or the ticket back if not.
    ///
    /// # Errors
    ///
    /// `Err(ticket)` while the batch runs.
    pub fn try_wait(self) -> Result<Result<PoolResults, Failed>, Ticket> {
        if self.is_done() { Ok(self.wait()) } else { Err(self) }
    }
}

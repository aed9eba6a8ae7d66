//! [`QueryPool`]: a batch scheduler with pinned worker threads, whose busy
//! paths take no lock, over a [`ConcurrentIndex`], which lets queries and
//! writes run at the same time.
//!
//! # Which paths take a lock
//!
//! - **Lock-free** (atomics and crossbeam's lock-free queues only): a
//!   submitter loading the index snapshot and pushing its batch onto the
//!   injector; a worker finding work (local deque, steal, injector) and
//!   claiming tasks; a task's end; a waiting caller's spin; and every wake-up
//!   call while no thread sleeps (a load of the sleeper count).
//! - **Mutex and condvar** (the `#[cold]` slow paths): a worker that found
//!   no work for [`PoolConfig::idle_spin`] sleeps on the pool's condvar, and
//!   a submitter or splitter that sees a non-zero sleeper count takes that
//!   mutex briefly to wake it; a caller that is still waiting after
//!   [`PoolConfig::wait_spin`] parks on its job's condvar, and the worker
//!   that finishes the batch takes the job's mutex to wake it.
//! - **Blocking by design**: a submitter whose injector is full
//!   ([`PoolConfig::queue_capacity`] batches) backs off and retries until a
//!   worker pops an entry.
//!
//! So a pool kept busy never touches a mutex; an idle one costs a wake-up
//! (a few microseconds) on the next batch.
//!
//! ```
//! use bloomslice::{BloomFilter, BloomParams, ConcurrentIndex, PoolConfig, PoolResults, QueryPool, SlicedIndex, Workers};
//!
//! let params = BloomParams::new(4096, 4)?;
//! let index = ConcurrentIndex::new(SlicedIndex::new(params));
//! let mut f = BloomFilter::new(params)?;
//! f.insert(&7u64.to_le_bytes());
//! index.insert_filter(1, &f)?;
//!
//! let pool = QueryPool::new(PoolConfig { workers: Workers::Count(2), ..PoolConfig::default() })
//!     .expect("threads start");
//! let keys: Vec<[u8; 8]> = (0..100u64).map(u64::to_le_bytes).collect();
//! let mut results = PoolResults::new();
//! pool.query_batch(&index, &keys, &mut results).expect("no task panicked");
//! assert!(results.get(7).unwrap().contains(&1));
//!
//! // Non-blocking: the ticket owns the buffer until the batch is done.
//! let ticket = pool.submit(&index, &keys, results);
//! let results = ticket.wait().expect("no task panicked");
//! assert_eq!(results.len(), 100);
//! # Ok::<(), bloomslice::Error>(())
//! ```
//!
//! # Design note: scheduling
//!
//! - **Submission.** The caller loads a snapshot of the index (one atomic
//!   load), arms the job and pushes *one* entry
//!   for the whole batch onto the bounded lock-free injector
//!   (`crossbeam_queue::ArrayQueue`: no allocation per push, unlike the
//!   unbounded `crossbeam_deque::Injector`, which allocates a block every 63
//!   pushes). When the injector is full the submitter backs off and retries.
//!   The blocking [`QueryPool::query_batch`] does not copy its keys: the
//!   tasks hash and query their ranges of the caller's slice in place, which
//!   the caller cannot leave before the batch is done (`job.rs`, "Borrowed
//!   keys"). [`QueryPool::submit`] returns at once, so it hashes the keys
//!   into the buffer's own storage first; on `full` N = 1 000 that serial
//!   copy is a small part of the batch's time.
//! - **Splitting.** A batch is split by *keys* into
//!   `min(64, workers x tasks_per_worker, ceil(keys / min_keys_per_task))`
//!   equal ranges (tasks), handed out by the claim counter below. Keys
//!   rather than shards: a key range produces each key's ids in order in
//!   its own [`BatchResults`](crate::sliced::BatchResults), so results need no merge, while a split by shards must merge every key's
//!   ids across tasks; and the default index (16 384-column shards) has a
//!   single shard up to 16 384 filters, so only keys give parallelism there.
//!   `paper query --threads` compares the two (`split rule` rows: rayon, 2
//!   threads, shard split emulated by one sub-index per thread, merge
//!   included): keys won on small and large batches alike, so the rule is
//!   keys at every index size (measured: see `bench/RESULTS.md`, section "Threads").
//! - **Finding work.** Local deque, then steal from the other workers
//!   (starting at the next one, round robin), then the injector; as in
//!   rayon-core.
//! - **Sleeping.** An idle worker spins for [`PoolConfig::idle_spin`], then
//!   sleeps on a condvar (`#[cold]` path). Sleepers are counted in a
//!   cache-padded atomic; submitters and splitters wake them only when the
//!   count is non-zero, so a busy pool never touches the mutex. The lost
//!   wake-up is excluded Dekker-style: the sleeper increments the count then
//!   re-checks the queues, the waker pushes then reads the count, all
//!   SeqCst, and the sleeper re-checks under the mutex the waker takes.
//! - **Claiming.** Which task runs is decided by the job's claim counter,
//!   not by queue entries: whoever wants work `fetch_add`s it and runs the
//!   index it got, if below the task count (`job.rs`, "Stale entries").
//!   An entry only says "this job may have unclaimed tasks": the worker
//!   that pops a batch from the injector pushes one entry per other worker
//!   (at most one per unclaimed task) and wakes them, and every worker that
//!   holds an entry claims tasks until none is left. An entry whose job has
//!   no unclaimed task left is dropped.
//! - **Waiting: the caller helps.** As in rayon's "help while waiting", the
//!   blocking [`QueryPool::query_batch`] and [`Ticket::wait`] claim and run
//!   their own batch's tasks (under `catch_unwind`, like a worker), then
//!   spin for [`PoolConfig::wait_spin`] and park on the job's condvar for
//!   the tasks the workers still hold (see `job.rs` for the hand-over
//!   protocol). [`QueryPool::submit`] never runs a task on the caller.
//!   Two rules bound it:
//!   - *Inline*: a blocking batch of fewer than [`INLINE_TASKS`] tasks'
//!     worth of keys (< 32 by default) is run by the caller alone, with no
//!     queue entry and no wake-up: handing half of it over would cost more
//!     than running it.
//!   - *Help limit*: the caller helps only batches whose work (keys x
//!     filters) is at most [`PoolConfig::caller_help_work`] (default
//!     256 keys x 1024 filters). Cheap batches are dominated by the
//!     hand-off (a wake-up costs about as much as a small batch's work), so
//!     a caller that starts at once wins; on large ones a helping caller is
//!     one thread more than there are cores and only competes with the
//!     pinned workers it waits for. Helping won on small batches and lost on
//!     large ones, and on a ten times larger index it lost at a batch size
//!     where it had won: hence a limit on work, not keys. With the limit,
//!     large batches behave as before (2 workers scale against 1).
//!     Measured: see `bench/RESULTS.md`, section "Threads".
//! - **Threshold batches.** [`QueryPool::query_threshold_batch`] runs on
//!   the same machinery: the caller arms a job popped from the pool's
//!   lock-free free list (so a warm batch allocates nothing) with its
//!   queries, borrowed like `query_batch`'s keys (a task hashes a query's
//!   keys as scoring reaches them, so pruned queries hash only the keys they
//!   read), splits the queries into ranges of about equal key counts,
//!   and hands the job over like a key batch (same inline and help rules).
//!   A task scores its range query by query with scratch its worker keeps
//!   for its lifetime (a helping caller uses the one its job keeps). Before its
//!   first task of a batch, a thread grows that scratch to what the
//!   batch's largest task needs on the snapshot (the longest query, or a
//!   key task's length for a collection; bounds from the index, not from
//!   the answers), and the caller does so at arming whether or not it will
//!   help: which thread claims which task then never decides whether a warm
//!   batch allocates.
//! - **Index types.** The pool knows no index type: it serves any
//!   [`Served`] one (a [`SlicedIndex`](crate::sliced::SlicedIndex) or a
//!   [`SetIndex`](crate::collection::SetIndex), each implementing the
//!   contract in its own module). A job stores its snapshot type-erased
//!   beside functions monomorphised for the index type, so a task makes one
//!   indirect call and everything below it is the index's own code
//!   (`served.rs`).
//! - **Faults.** Each task runs under `catch_unwind`; a panic marks its
//!   batch failed ([`PoolError::TaskPanicked`]) and the worker goes on.
//! - **Shutdown.** Dropping the pool *finishes* every queued batch, then
//!   joins every worker; outstanding [`Ticket`]s complete normally.

mod job;
#[cfg(all(test, loom))]
pub(crate) mod loom_tests;
mod score;
mod served;

use std::sync::PoisonError;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_deque::{Steal, Stealer, Worker};
use crossbeam_queue::ArrayQueue;
use crossbeam_utils::CachePadded;

pub use crate::error::PoolError;
pub use job::{Failed, PoolResults, Ticket};
pub use served::Served;
pub(crate) use served::sealed::Sealed as ServedSealed;

use crate::concurrent::{ConcurrentIndex, Replica};
use crate::error::Result;
use crate::hash::Key;
use crate::sync::{Arc, AtomicBool, AtomicUsize, Condvar, Mutex, Ordering, fence};
use job::{Job, WaitOnDrop};
use served::Scratch;

/// Most tasks one batch is split into. Bounds the per-buffer task results
/// (allocated once per [`PoolResults`]) and keeps a worker's local deque
/// within its initial capacity of 64, so splitting never allocates.
pub const MAX_TASKS_PER_BATCH: usize = 64;

/// A blocking batch of fewer than this many tasks' worth of keys
/// (`INLINE_TASKS x min_keys_per_task`) is run by the caller alone: a
/// worker's share would be smaller than the cost of waking and handing it
/// over.
pub const INLINE_TASKS: usize = 2;

/// Default [`PoolConfig::caller_help_work`]: 256 keys x 1024 filters, the
/// largest batch on `full` that ran faster with the caller helping
/// (measured: see `bench/RESULTS.md`, section "Threads").
pub const CALLER_HELP_WORK: usize = 256 * 1024;

/// Idle threshold-batch jobs a pool keeps for reuse: as many threshold
/// batches in flight at once allocate nothing once warm.
const THRESHOLD_JOBS: usize = 64;

/// How many workers, and where.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Workers {
    /// One worker per core the process may run on, each pinned to its core.
    #[default]
    PerCore,
    /// This many workers, pinned round robin over the cores (more workers
    /// than cores is allowed: cores are then shared).
    Count(usize),
    /// One worker per listed core id, pinned to it.
    Cores(Vec<usize>),
}

/// Configuration of a [`QueryPool`]. `PoolConfig::default()` gives the
/// documented defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Workers and their cores. Default [`Workers::PerCore`].
    pub workers: Workers,
    /// Pin workers to cores (`core_affinity`). Default true. Where the OS
    /// refuses, the worker runs unpinned and [`PoolStatus`] says so.
    pub pin: bool,
    /// Batches the injector holds before submitters back off. Default 1024.
    pub queue_capacity: usize,
    /// Fewest keys worth a task of their own. Default 16: scheduling a task
    /// costs about as much as querying a few keys (measured: see
    /// `bench/RESULTS.md`, section "Threads").
    pub min_keys_per_task: usize,
    /// Tasks per worker a large batch is split into, so a worker slowed by
    /// a neighbour is made up for by stealing. Default 8.
    pub tasks_per_worker: usize,
    /// How long an idle worker spins before sleeping. Default 100 us.
    pub idle_spin: Duration,
    /// How long a waiting caller spins before parking, once it has no task
    /// of its batch left to claim. Default 1 us: a helping caller waits at
    /// most for the tasks the workers hold, and spinning longer was no
    /// better with the caller helping (measured: see `bench/RESULTS.md`, section "Threads"),
    /// while it slows the workers down where cores are shared (see `job.rs`,
    /// `Job::wait`).
    pub wait_spin: Duration,
    /// A waiting caller runs unclaimed tasks of its own batch when the
    /// batch's work, keys x filters in the queried snapshot, is at most
    /// this; larger batches it leaves to the workers. Default 262 144
    /// (256 keys on 1024 filters; see the module's design note, "Waiting").
    pub caller_help_work: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            workers: Workers::PerCore,
            pin: true,
            queue_capacity: 1024,
            min_keys_per_task: 16,
            tasks_per_worker: 8,
            idle_spin: Duration::from_micros(100),
            wait_spin: Duration::from_micros(1),
            caller_help_work: CALLER_HELP_WORK,
        }
    }
}

/// What the pool's workers ended up with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolStatus {
    /// Per worker: the core it is pinned to, or `None` if it runs unpinned.
    pub cores: Vec<Option<usize>>,
    /// Pinning was asked for and refused for at least one worker, or the
    /// OS would not list the cores (those workers run unpinned). Reported
    /// here once instead of printed.
    pub pin_refused: bool,
}

/// A queue entry: "this job may have unclaimed tasks". Which task runs is
/// decided by [`Job::claim`], not by the entry, so an entry left over after
/// the caller or another worker ran the batch is simply dropped.
struct Task {
    job: Arc<Job>,
    /// Popped from the injector (the batch's only entry there): its popper
    /// recruits helpers by pushing entries onto its local deque.
    fresh: bool,
}

/// What every worker and submitter shares.
pub(crate) struct Shared {
    injector: ArrayQueue<Task>,
    stealers: Box<[Stealer<Task>]>,
    /// Workers in (or entering) the cold sleep path. Hot: read by every
    /// submission, so on its own cache line.
    sleepers: CachePadded<AtomicUsize>,
    sleep_lock: Mutex<()>,
    sleep_cvar: Condvar,
    /// Set once by `Drop`; workers leave when it is set and no work is left.
    shutdown: CachePadded<AtomicBool>,
    /// Test hook: the next this-many tasks panic (on a worker or a helping
    /// caller alike).
    #[cfg(feature = "test-hooks")]
    pub(crate) fail_next: AtomicUsize,
    idle_spin: Duration,
    /// Idle jobs for threshold batches, reused batch after batch (one per
    /// batch in flight; a job that finds the list full is freed).
    threshold_jobs: ArrayQueue<Arc<Job>>,
}

impl Shared {
    /// The state of a pool whose workers own the deques behind `stealers`,
    /// with room for `queue_capacity` batches in the injector and
    /// `threshold_jobs` idle threshold jobs; nobody sleeps yet.
    fn new(
        queue_capacity: usize,
        stealers: Box<[Stealer<Task>]>,
        idle_spin: Duration,
        threshold_jobs: usize,
    ) -> Shared {
        Shared {
            injector: ArrayQueue::new(queue_capacity),
            stealers,
            sleepers: CachePadded::new(AtomicUsize::new(0)),
            sleep_lock: Mutex::new(()),
            sleep_cvar: Condvar::new(),
            shutdown: CachePadded::new(AtomicBool::new(false)),
            #[cfg(feature = "test-hooks")]
            fail_next: AtomicUsize::new(0),
            idle_spin,
            threshold_jobs: ArrayQueue::new(threshold_jobs),
        }
    }

    /// Wakes sleeping workers if there are any (cheap when none sleep).
    fn wake(&self, all: bool) {
        // SeqCst fence then load, against the sleeper's SeqCst increment
        // then queue check (`sleep`): either we see the sleeper, or it
        // sees the work we just pushed.
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.wake_cold(all);
        }
    }

    #[cold]
    fn wake_cold(&self, all: bool) {
        // Taking the lock orders the notify after a sleeper's re-check.
        drop(self.sleep_lock.lock().unwrap_or_else(PoisonError::into_inner));
        if all {
            self.sleep_cvar.notify_all();
        } else {
            self.sleep_cvar.notify_one();
        }
    }

    fn has_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    /// Sleeps until woken (work or shutdown).
    #[cold]
    fn sleep(&self) {
        let guard = self.sleep_lock.lock().unwrap_or_else(PoisonError::into_inner);
        // SeqCst increment, fence, then check the queues: see `wake`.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        // Acquire: pairs with the Release store of `shutdown` in Drop.
        if !self.has_work() && !self.shutdown.load(Ordering::Acquire) {
            // A spurious wake-up only costs one more trip round the loop.
            drop(self.sleep_cvar.wait(guard).unwrap_or_else(PoisonError::into_inner));
        }
        // Relaxed: a stale count only costs a waker a needless notify.
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A pool of query workers, one per core by default, pinned with
/// `core_affinity`. See the module documentation.
///
/// ```
/// use bloomslice::{BloomFilter, BloomParams, ConcurrentIndex, PoolConfig, PoolResults, QueryPool, SlicedIndex, Workers};
///
/// let params = BloomParams::new(1024, 3)?;
/// let index = ConcurrentIndex::new(SlicedIndex::new(params));
/// let mut fruit = BloomFilter::new(params)?;
/// fruit.insert("apple");
/// index.insert_filter(1, &fruit)?;
///
/// let pool = QueryPool::new(PoolConfig { workers: Workers::Count(2), pin: false, ..PoolConfig::default() })?;
/// let mut results = PoolResults::new();
/// pool.query_batch(&index, &["apple", "pear", "apple"], &mut results)?;
/// assert_eq!(results.len(), 3);
/// assert_eq!(results.get(0), Some(&[1u64][..]));
/// assert_eq!(results.get(2), Some(&[1u64][..]));
/// # Ok::<(), bloomslice::Error>(())
/// ```
pub struct QueryPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    status: PoolStatus,
    workers: usize,
    min_keys_per_task: usize,
    tasks_per_worker: usize,
    wait_spin: Duration,
    caller_help_work: usize,
}

impl core::fmt::Debug for QueryPool {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QueryPool").field("status", &self.status).finish_non_exhaustive()
    }
}

impl QueryPool {
    /// Starts the workers and waits until each has tried to pin itself.
    ///
    /// # Errors
    ///
    /// [`PoolError::Config`] for zero workers, an empty core list or a zero
    /// queue capacity; [`PoolError::Spawn`] if a thread cannot be started
    /// (the threads already started are stopped and joined).
    pub fn new(config: PoolConfig) -> Result<QueryPool> {
        let cores: Vec<usize> = core_affinity::get_core_ids().unwrap_or_default().into_iter().map(|c| c.id).collect();
        let placement: Vec<Option<usize>> = match &config.workers {
            Workers::PerCore if cores.is_empty() => {
                vec![None; std::thread::available_parallelism().map_or(1, |n| n.get())]
            }
            Workers::PerCore => cores.iter().map(|&c| Some(c)).collect(),
            Workers::Count(0) => return Err(PoolError::Config("zero workers").into()),
            Workers::Count(n) => (0..*n).map(|i| (!cores.is_empty()).then(|| cores[i % cores.len()])).collect(),
            Workers::Cores(list) if list.is_empty() => return Err(PoolError::Config("empty core list").into()),
            Workers::Cores(list) => list.iter().map(|&c| Some(c)).collect(),
        };
        if config.queue_capacity == 0 {
            return Err(PoolError::Config("zero queue capacity").into());
        }
        let placement: Vec<Option<usize>> = placement.into_iter().map(|c| if config.pin { c } else { None }).collect();
        let locals: Vec<Worker<Task>> = placement.iter().map(|_| Worker::new_lifo()).collect();
        let stealers = locals.iter().map(Worker::stealer).collect();
        let shared = Arc::new(Shared::new(config.queue_capacity, stealers, config.idle_spin, THRESHOLD_JOBS));
        let workers = placement.len();
        let (report_tx, report_rx) = std::sync::mpsc::channel::<(usize, Option<usize>)>();
        let mut pool = QueryPool {
            shared: Arc::clone(&shared),
            threads: Vec::with_capacity(workers),
            status: PoolStatus { cores: vec![None; workers], pin_refused: false },
            workers,
            min_keys_per_task: config.min_keys_per_task.max(1),
            tasks_per_worker: config.tasks_per_worker.max(1),
            wait_spin: config.wait_spin,
            caller_help_work: config.caller_help_work,
        };
        for (me, (local, core)) in locals.into_iter().zip(placement.iter().copied()).enumerate() {
            let shared = Arc::clone(&shared);
            let report = report_tx.clone();
            let spawned = std::thread::Builder::new().name(format!("bloomslice-pool-{me}")).spawn(move || {
                let pinned = core.filter(|&id| pin_current_thread(id));
                // The receiver outlives startup; a send error cannot happen
                // and would only lose a status entry.
                let _ = report.send((me, pinned));
                drop(report);
                worker_main(me, &shared, &local);
            });
            match spawned {
                Ok(handle) => pool.threads.push(handle),
                // Dropping `pool` shuts down and joins the started threads.
                Err(e) => return Err(PoolError::Spawn(e.to_string()).into()),
            }
        }
        drop(report_tx);
        for (me, pinned) in report_rx.iter().take(workers) {
            pool.status.cores[me] = pinned;
        }
        // Refused: a core the OS would not pin to, or no core list at all.
        pool.status.pin_refused = (config.pin && cores.is_empty())
            || placement.iter().zip(&pool.status.cores).any(|(want, got)| want.is_some() && got.is_none());
        Ok(pool)
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Where the workers run and whether pinning was refused.
    pub fn status(&self) -> &PoolStatus {
        &self.status
    }

    /// Tasks a batch of `keys` keys is split into (see the module's design
    /// note).
    pub fn tasks_for(&self, keys: usize) -> usize {
        let by_size = keys.div_ceil(self.min_keys_per_task);
        by_size.min(self.workers * self.tasks_per_worker).clamp(1, MAX_TASKS_PER_BATCH)
    }

    /// Queries `keys` on the current state of `index` with every worker and
    /// waits for the answers, which replace the contents of `results`
    /// (equal to [`crate::sliced::SlicedIndex::query_batch`]'s, key by key,
    /// or for a collection to
    /// [`SetIndex::query_batch`](crate::collection::SetIndex::query_batch)'s).
    /// The keys are not copied: each task hashes and queries its own range
    /// of `keys` in place. Once `results` and the pool are warm (for a
    /// collection: each worker has run a task on its parts), allocates
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`PoolError::TaskPanicked`] if a task panicked; `results` is then
    /// empty and reusable.
    pub fn query_batch<K: Key + Sync>(
        &self,
        index: &ConcurrentIndex<impl Replica + Served>,
        keys: &[K],
        results: &mut PoolResults,
    ) -> Result<()> {
        let snapshot = index.snapshot();
        let work = keys.len().saturating_mul(snapshot.filters().max(1));
        // SAFETY: this call returns only once the batch is done (`finish`
        // waits for it), and if anything unwinds first the guard waits: the
        // tasks' reads of `keys` end before `keys` can go.
        let prepared = unsafe { results.prepare_borrowed(snapshot, keys, |n| self.tasks_for(n)) };
        let Some((job, _tasks)) = prepared else { return Ok(()) };
        let guard = WaitOnDrop(job);
        let help = if self.runs_inline(keys.len()) {
            // The caller's `finish` claims every task; nobody else hears
            // of the batch.
            true
        } else {
            self.push_entry(Arc::clone(&guard.0));
            work <= self.caller_help_work
        };
        let outcome = results.finish(&self.shared, self.wait_spin, help);
        drop(guard);
        outcome
    }

    /// Submits `keys` without waiting: the keys are hashed into `results`
    /// (so `keys` is free again on return) and the returned [`Ticket`] owns
    /// `results` until the batch is done. Blocks only while the injector is
    /// full ([`PoolConfig::queue_capacity`] batches).
    pub fn submit<K: Key>(
        &self,
        index: &ConcurrentIndex<impl Replica + Served>,
        keys: &[K],
        mut results: PoolResults,
    ) -> Ticket {
        let snapshot = index.snapshot();
        let work = keys.len().saturating_mul(snapshot.filters().max(1));
        let help = match results.prepare_copied(snapshot, keys, |n| self.tasks_for(n)) {
            Some((job, _tasks)) => {
                self.push_entry(job);
                work <= self.caller_help_work
            }
            None => false,
        };
        Ticket::new(results, Arc::clone(&self.shared), self.wait_spin, help)
    }

    /// Whether a blocking batch of `keys` keys is run by the caller alone,
    /// without a queue entry or a wake-up (see the module's design note).
    pub fn runs_inline(&self, keys: usize) -> bool {
        keys < INLINE_TASKS * self.min_keys_per_task
    }

    /// Pushes a prepared job's only injector entry (backing off while the
    /// injector is full) and wakes a worker.
    fn push_entry(&self, job: Arc<Job>) {
        let mut task = Task { job, fresh: true };
        let mut round = 0u32;
        // The entry carries no data: the batch is published by `prepare`'s
        // Release swap of the claim counter, acquired by each claim.
        while let Err(back) = self.shared.injector.push(task) {
            task = back;
            self.shared.wake(true);
            round += 1;
            crate::concurrent::backoff(round, [16, 64], Duration::from_micros(20));
        }
        self.shared.wake(false);
    }

    /// Test hook: the next `n` tasks panic (to test fault handling). Only
    /// with the `test-hooks` feature, which the crate's own tests enable.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn fail_next_tasks(&self, n: usize) {
        // Relaxed: a counter; tests synchronise through the batch itself.
        self.shared.fail_next.store(n, Ordering::Relaxed);
    }
}

impl Drop for QueryPool {
    /// Finishes every queued batch, then stops and joins the workers.
    fn drop(&mut self) {
        // Release: pairs with the workers' Acquire loads; every batch
        // pushed before this store is seen by a worker before it leaves.
        self.shared.shutdown.store(true, Ordering::Release);
        self.shared.wake_cold(true);
        for handle in self.threads.drain(..) {
            // Tasks catch their panics, so a worker cannot have panicked;
            // nothing useful to do if one did.
            let _ = handle.join();
        }
    }
}

/// Core ids at or above this are refused without asking the OS:
/// `core_affinity` indexes a fixed `cpu_set_t` of 1024 bits (glibc's
/// `CPU_SETSIZE`) and would panic across its FFI boundary beyond it.
const MAX_CORE_ID: usize = 1024;

/// Pins the calling thread to core `id`; false where that is refused.
fn pin_current_thread(id: usize) -> bool {
    id < MAX_CORE_ID && core_affinity::set_for_current(core_affinity::CoreId { id })
}

/// Local deque, then steal round robin, then the injector.
fn find_task(me: usize, shared: &Shared, local: &Worker<Task>) -> Option<Task> {
    if let Some(task) = local.pop() {
        return Some(task);
    }
    let n = shared.stealers.len();
    loop {
        let mut retry = false;
        for i in 1..n {
            match shared.stealers[(me + i) % n].steal() {
                Steal::Success(task) => return Some(task),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
        }
        if let Some(task) = shared.injector.pop() {
            return Some(task);
        }
        if !retry {
            return None;
        }
    }
}

fn worker_main(me: usize, shared: &Shared, local: &Worker<Task>) {
    let mut idle_since: Option<Instant> = None;
    let mut idle_rounds = 0u32;
    // This worker's scratch for threshold tasks, kept for its lifetime.
    let mut scratch = Scratch::default();
    loop {
        if let Some(task) = find_task(me, shared, local) {
            idle_since = None;
            idle_rounds = 0;
            run(shared, local, task, &mut scratch);
            continue;
        }
        // Acquire: pairs with the Release store in Drop. Checked only when
        // no work was found, so queued batches finish first.
        if shared.shutdown.load(Ordering::Acquire) {
            if shared.has_work() {
                continue;
            }
            return;
        }
        let since = *idle_since.get_or_insert_with(Instant::now);
        if since.elapsed() < shared.idle_spin {
            // Spin a little, then yield (as rayon-core's idle rounds do), so
            // an idle worker gives its core to a busy thread sharing it.
            idle_rounds += 1;
            if idle_rounds < 8 {
                for _ in 0..64 {
                    core::hint::spin_loop();
                }
            } else {
                crate::sync::yield_now();
            }
        } else {
            shared.sleep();
            idle_since = None;
            idle_rounds = 0;
        }
    }
}

/// Claims a task of the entry's job (a stale entry claims nothing and is
/// dropped); the popper of a fresh entry recruits helpers for what is left;
/// then runs claims until the job has none left.
fn run(shared: &Shared, local: &Worker<Task>, task: Task, scratch: &mut Scratch) {
    let Task { job, fresh } = task;
    let Some((first, tasks)) = job.claim() else { return };
    if fresh {
        // One entry per other worker that could help, at most one per
        // unclaimed task: each helper loops on claims, so more entries
        // would only be stale ones. At most tasks - 1 <= 63 entries, and
        // this worker pops its own deque first: the local deque stays
        // within its initial 64 slots, so recruiting never allocates.
        let helpers = (tasks - first - 1).min(shared.stealers.len() - 1);
        for _ in 0..helpers {
            local.push(Task { job: Arc::clone(&job), fresh: false });
        }
        if helpers > 0 {
            shared.wake(true);
        }
    }
    job.execute(shared, first, scratch);
    job.run_claims(shared, scratch);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BloomFilter, BloomParams, Error, SlicedIndex};

    fn pool(workers: usize) -> QueryPool {
        QueryPool::new(PoolConfig { workers: Workers::Count(workers), ..PoolConfig::default() }).unwrap()
    }

    #[test]
    fn split_rule() {
        let pool = pool(2);
        assert_eq!(pool.tasks_for(0), 1);
        assert_eq!(pool.tasks_for(1), 1);
        assert_eq!(pool.tasks_for(16), 1);
        assert_eq!(pool.tasks_for(17), 2);
        assert_eq!(pool.tasks_for(64), 4);
        assert_eq!(pool.tasks_for(100_000), 16); // workers x tasks_per_worker
        let wide = pool_with(64, 8);
        assert_eq!(wide.tasks_for(10_000_000), MAX_TASKS_PER_BATCH);
    }

    fn pool_with(workers: usize, tasks_per_worker: usize) -> QueryPool {
        QueryPool::new(PoolConfig { workers: Workers::Count(workers), tasks_per_worker, ..PoolConfig::default() })
            .unwrap()
    }

    #[test]
    fn bad_configs_are_errors() {
        let cfg = |workers, queue_capacity| PoolConfig { workers, queue_capacity, ..PoolConfig::default() };
        assert!(matches!(QueryPool::new(cfg(Workers::Count(0), 8)), Err(Error::Pool(PoolError::Config(_)))));
        assert!(matches!(QueryPool::new(cfg(Workers::Cores(vec![]), 8)), Err(Error::Pool(PoolError::Config(_)))));
        assert!(matches!(QueryPool::new(cfg(Workers::Count(1), 0)), Err(Error::Pool(PoolError::Config(_)))));
    }

    #[test]
    fn per_core_default_starts_one_worker_per_core() {
        let pool = QueryPool::new(PoolConfig::default()).unwrap();
        assert!(pool.workers() >= 1);
        assert_eq!(pool.status().cores.len(), pool.workers());
    }

    #[test]
    fn buffers_give_back_the_snapshot_when_done() {
        let params = BloomParams::new(512, 2).unwrap();
        let mut f = BloomFilter::new(params).unwrap();
        f.insert("k");
        let mut index = SlicedIndex::new(params);
        index.insert_filter(3, &f).unwrap();
        let shared = ConcurrentIndex::new(index);
        let pool = pool(1);
        let mut results = PoolResults::new();
        pool.query_batch(&shared, &["k"; 40], &mut results).unwrap();
        assert!(results.iter().all(|ids| ids == [3]));
        // The finished job dropped its snapshot: only the ArcSwap holds the
        // current copy, so writers never wait for idle buffers.
        assert_eq!(Arc::strong_count(&shared.snapshot()), 2);
        shared.remove_set(3).unwrap();
        shared.insert_key(3, "x").unwrap_err();
        pool.query_batch(&shared, &["k"; 40], &mut results).unwrap();
        assert!(results.iter().all(<[u64]>::is_empty));
    }
}

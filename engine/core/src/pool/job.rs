//! One batch's shared state ([`Job`]), the caller's reusable result buffer
//! ([`PoolResults`]) and the non-blocking handle ([`Ticket`]).
//!
//! # Design note: who may touch what
//!
//! A `Job` lives as long as the [`PoolResults`] that owns it and is reused
//! for every batch, so a warm batch allocates nothing. (A job for threshold
//! batches is owned instead by the pool's free list: whoever pops it owns it
//! until it pushes it back, as a `PoolResults` owner does.) A job carries a
//! key batch or a batch of threshold queries (`Kind`); its batch data (keys'
//! hashes, the index snapshot, one [`BatchResults`] or one scored output per
//! task, the queries' bounds and threshold) sits in `UnsafeCell`s under a
//! hand-over protocol instead of a lock:
//!
//! 1. *Idle* (`state` is `DONE`, or the job was never submitted): only the
//!    owner of the `PoolResults` touches the batch data, through `&mut`
//!    (filling) or `&` (reading results).
//! 2. *Submitted*: the owner fills the batch data, sets `pending` to the
//!    task count, then swaps `claims` to `(tasks, 0)` with Release. From then
//!    on a task is run by whoever *claims* its index: workers (through a
//!    queue entry, which only says "this job may have unclaimed tasks") and,
//!    in the blocking paths, the waiting owner itself. A claim is one
//!    `fetch_add` on `claims` (Acquire, pairing with that Release swap), so
//!    every task index is handed out exactly once and its claimer sees the
//!    batch data. The owner gives up `&mut` access: [`Ticket`] owns the
//!    `PoolResults`, and the blocking path holds it by `&mut` until done and
//!    touches the data only through claims, like a worker. Task `c` writes
//!    only `chunks[c]` (or `scored[c]`); tasks read the hashes, snapshot and
//!    threshold data.
//! 3. *Finishing*: each task ends with `pending.fetch_sub(1, AcqRel)`. The
//!    task that takes it to zero has acquired every other task's writes; it
//!    drops the snapshot (so writers need not wait for an idle buffer), then
//!    swaps `state` to `DONE` (Release), handing everything back to the
//!    owner. After that swap a worker touches only the atomics and the
//!    parking mutex and condvar, which outlive it through its `Arc<Job>`.
//!
//! **Parking.** An owner that finds the batch unfinished after its spin
//! parks: under the job's mutex it moves `state` from `RUNNING` to
//! `PARKED` with a compare-exchange, and sleeps on the condvar until it
//! reads `DONE`. Whether the owner parks and whether the last task must
//! wake it are decided by read-modify-writes of that one word, which are
//! totally ordered: either the task's swap comes first (the owner's
//! compare-exchange fails on `DONE` and it does not sleep) or the owner's
//! does (the swap returns `PARKED`, and the task takes the mutex, which the
//! owner holds until it sleeps, and notifies). No store-to-load order
//! between two locations is needed, which a two-flag handshake (store
//! mine, then load yours, on both sides, SeqCst) does rely on; the loom
//! models (`loom_tests.rs`) found that handshake's lost wake-up once
//! SeqCst accesses are weakened to AcqRel, as loom models them and as
//! qemu-user on x86 runs an ARMv8 `stlr` followed by an `ldar`.
//!
//! **Borrowed keys.** A blocking batch ([`super::QueryPool::query_batch`],
//! [`super::QueryPool::query_threshold_batch`]) does not copy the caller's
//! keys: the job keeps a type-erased pointer to the caller's slice
//! ([`Borrowed`]) and each task hashes its own range as it queries it, so
//! hashing runs on every worker instead of serially on the caller before
//! any worker starts, and a pruned threshold query hashes only the keys it
//! reads. This is sound because the blocking caller does not return (nor
//! unwind: [`WaitOnDrop`]) before `DONE`, after which no task touches the
//! slice; a stale entry's claim fails until the next batch replaces the
//! pointer. [`super::QueryPool::submit`] returns at once, so it still
//! hashes the keys into the job's own `hashes`.
//!
//! **Stale entries.** A queue entry may outlive its batch (the owner ran
//! the tasks, or another worker did) and even be popped while the owner
//! refills the job for its next batch. Its claim then fails: until the
//! owner's Release swap the counter still reads `next >= tasks` of the
//! finished batch. Task count and next index share *one* atomic word for
//! exactly this reason: with two separate atomics a stale claimer could
//! pair an old index with the new count and run a task whose data is not
//! published yet. A claim that wins after the Release swap is an ordinary
//! claim of the new batch. Failed claims only bump the low half; each batch
//! makes at most a few per worker and the swap resets it, so it cannot
//! reach the high half.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use super::served::{self, Erased, Scratch, Served};
use super::{MAX_TASKS_PER_BATCH, PoolError, Shared};
use crate::batch::BatchResults;
use crate::error::Result;
use crate::hash::{Key, KeyHash};
use crate::score::{Threshold, ThresholdResults};
use crate::sync::{Arc, AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering, UnsafeCell};

/// [`Job::state`]: a batch is running and the owner is not parked.
const RUNNING: u8 = 0;
/// [`Job::state`]: a batch is running and the owner is parked (or about to
/// sleep) on the job's condvar.
const PARKED: u8 = 1;
/// [`Job::state`]: the batch is finished and handed back to the owner.
const DONE: u8 = 2;

/// What a job's tasks do (passed once to `Job::arm`, which keeps it as
/// `Job::threshold_kind`).
#[derive(PartialEq, Eq)]
enum Kind {
    /// A key batch: task `c` queries keys `range(c)` into `chunks[c]`.
    Keys,
    /// A batch of threshold queries: task `c` scores the queries
    /// `bounds[c]..bounds[c + 1]` of `threshold` into `scored[c]`.
    Threshold,
}

/// The batch data of a threshold batch (see [`Kind::Threshold`]); the
/// queries themselves are the caller's, [`Borrowed`].
struct ThresholdData {
    threshold: Threshold,
    /// Cumulative key counts of the queries (what the split balances).
    query_ends: Vec<usize>,
    /// First query of each task, then the query count (`tasks + 1` entries).
    bounds: Vec<usize>,
    /// One output per task, written by that task alone (cache-padded, as
    /// `Job::chunks`).
    scored: Vec<CachePadded<UnsafeCell<Scored>>>,
}

/// The answers of one threshold task: its queries' passing `(id, count)`,
/// and the end of each query's answers in `hits`.
#[derive(Default)]
struct Scored {
    hits: Vec<(u64, u32)>,
    ends: Vec<usize>,
}

/// A blocking caller's keys (or threshold queries), read in place by the
/// tasks: see "Borrowed keys" in the module's design note.
#[derive(Clone, Copy)]
struct Borrowed {
    /// The caller's slice (`[K]` or `[Q]`), type-erased.
    items: *const (),
    /// Its length.
    len: usize,
    /// What a task does with its range of the slice.
    run: Run,
}

/// A task over a range of a [`Borrowed`] slice, monomorphised for the
/// index type and the slice's element type: the one indirect call of a
/// task (see `served.rs`). The `*const ()` after the range is the job's
/// [`Erased`] snapshot.
#[derive(Clone, Copy)]
enum Run {
    /// [`query_range`]: a key batch.
    Keys(unsafe fn(*const (), usize, core::ops::Range<usize>, *const (), &mut BatchResults, &mut Scratch)),
    /// [`score_range`]: a threshold batch.
    Threshold(unsafe fn(*const (), usize, core::ops::Range<usize>, *const (), Threshold, &mut Scored, &mut Scratch)),
}

/// [`Run::Keys`] for keys of type `K` on an `I`: queries keys `range` of
/// the slice.
///
/// # Safety
///
/// `items` and `len` are a live `[K]` (see "Borrowed keys"); `index` is a
/// live [`Erased`] snapshot of an `I`.
unsafe fn query_range<I: Served, K: Key + Sync>(
    items: *const (),
    len: usize,
    range: core::ops::Range<usize>,
    index: *const (),
    out: &mut BatchResults,
    scratch: &mut Scratch,
) {
    // SAFETY: the caller's contract; `K: Sync`, so reading it here is fine.
    let keys = unsafe { core::slice::from_raw_parts(items.cast::<K>(), len) };
    // SAFETY: the caller's contract.
    let index = unsafe { served::index::<I>(index) };
    index.query_batch_with(&keys[range], out, scratch.get::<I::Scratch>().0);
}

/// [`Run::Threshold`] for queries of type `Q` on an `I`: scores the
/// queries `range` of the slice one after the other.
///
/// # Safety
///
/// `items` and `len` are a live `[Q]` (see "Borrowed keys"); `index` is a
/// live [`Erased`] snapshot of an `I`.
unsafe fn score_range<I: Served, Q: AsRef<[K]> + Sync, K: Key + Sync>(
    items: *const (),
    len: usize,
    range: core::ops::Range<usize>,
    index: *const (),
    threshold: Threshold,
    Scored { hits, ends }: &mut Scored,
    scratch: &mut Scratch,
) {
    // SAFETY: the caller's contract; `Q` and `K` are `Sync`.
    let queries = unsafe { core::slice::from_raw_parts(items.cast::<Q>(), len) };
    // SAFETY: the caller's contract.
    let index = unsafe { served::index::<I>(index) };
    let (own, out) = scratch.get::<I::Scratch>();
    for query in &queries[range] {
        index.query_threshold_with(query.as_ref(), threshold, own, out);
        hits.extend_from_slice(out);
        ends.push(hits.len());
    }
}

/// Waits on drop until a job's batch is done: a blocking caller whose
/// tasks read its keys in place ([`Borrowed`]) cannot leave (or unwind)
/// while a task may still read them.
pub(crate) struct WaitOnDrop(pub(crate) Arc<Job>);

impl Drop for WaitOnDrop {
    fn drop(&mut self) {
        self.0.wait(Duration::ZERO);
    }
}

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
    /// `RUNNING`, `PARKED` (running, and the owner sleeps or is about to)
    /// or `DONE` (finished and handed back to the owner): see "Parking" in
    /// the module's design note.
    state: AtomicU8,
    /// A task of the current batch panicked.
    panicked: AtomicBool,
    /// Parking for the owner; guards nothing but the sleep/wake hand-off.
    lock: Mutex<()>,
    cvar: Condvar,
    /// Keys per task (the last task may have fewer).
    chunk_len: AtomicUsize,
    /// Keys in the batch.
    keys: AtomicUsize,
    /// The largest task input of the batch: `chunk_len` for a key batch,
    /// the longest query for a threshold batch (what [`Served::reserve`]
    /// sizes a thread's scratch for).
    max_keys: AtomicUsize,
    /// Whether the batch is a [`Kind::Threshold`] one.
    threshold_kind: AtomicBool,
    /// Protocol state: see the module's design note. A submitted key
    /// batch reads `borrowed` if set, else `hashes`.
    hashes: UnsafeCell<Vec<KeyHash>>,
    borrowed: UnsafeCell<Option<Borrowed>>,
    index: UnsafeCell<Option<Erased>>,
    /// The owner's scratch for the tasks it runs itself (only the owner
    /// touches it, idle or helping), grown at arming whether or not it
    /// helps: which thread claims which task then never decides whether a
    /// warm batch allocates.
    caller: UnsafeCell<Scratch>,
    /// One result buffer per task, each on cache lines of its own: two
    /// workers run neighbouring tasks at once, and a buffer's `Vec` headers
    /// change with every id pushed. Unpadded, that false sharing cost the
    /// pool a tenth of its throughput against rayon's two threads on
    /// `full` N = 1 000 (`bench/RESULTS.md`, section "Threads").
    chunks: Box<[CachePadded<UnsafeCell<BatchResults>>]>,
    /// Read by threshold tasks, `scored[c]` written by task `c` alone.
    threshold: UnsafeCell<ThresholdData>,
}

// SAFETY: the `UnsafeCell` fields are accessed under the hand-over protocol
// of the module's design note: exclusively by the owner while idle, and
// while submitted only read (hashes, borrowed keys, snapshot, threshold
// data) or written by exactly one task each (chunk `c` and scored output
// `c` by task `c`), with the hand-overs ordered by the queue's
// Release/Acquire and by `pending` (AcqRel) and `state` (Release/Acquire).
// Every other field is Sync. The snapshot (`Erased`) is an `Arc` of a `Send + Sync`
// index, and a `Scratch` is `Send`.
unsafe impl Sync for Job {}

// SAFETY: the one field that is not `Send` is the raw pointer of
// `borrowed`: it points to a `Sync` slice (the bounds of `query_range` and
// `score_range`) that outlives every use of it on any thread ("Borrowed
// keys" in the module's design note).
unsafe impl Send for Job {}

impl Job {
    fn new() -> Job {
        Job {
            claims: CachePadded::new(AtomicU64::new(0)),
            pending: CachePadded::new(AtomicUsize::new(0)),
            state: AtomicU8::new(DONE),
            panicked: AtomicBool::new(false),
            lock: Mutex::new(()),
            cvar: Condvar::new(),
            chunk_len: AtomicUsize::new(1),
            keys: AtomicUsize::new(0),
            max_keys: AtomicUsize::new(0),
            threshold_kind: AtomicBool::new(false),
            hashes: UnsafeCell::new(Vec::new()),
            borrowed: UnsafeCell::new(None),
            index: UnsafeCell::new(None),
            caller: UnsafeCell::new(Scratch::default()),
            chunks: (0..MAX_TASKS_PER_BATCH).map(|_| CachePadded::new(UnsafeCell::new(BatchResults::new()))).collect(),
            threshold: UnsafeCell::new(ThresholdData {
                threshold: Threshold::count(0),
                query_ends: Vec::new(),
                bounds: Vec::new(),
                scored: Vec::new(),
            }),
        }
    }

    /// A job for threshold batches, kept in the pool's free list.
    pub(crate) fn new_shared() -> Arc<Job> {
        Arc::new(Job::new())
    }

    /// Arms an idle job, whose batch data is filled, for `tasks` tasks of
    /// kind `kind` on `index`.
    ///
    /// # Safety
    ///
    /// The caller has the job idle and to itself (see the module's design
    /// note): it owns the `PoolResults` by `&mut`, or popped the job from
    /// the pool's free list, and the job is `DONE`.
    unsafe fn arm(&self, index: Erased, kind: Kind, tasks: usize) {
        // Relaxed: published by the Release swap of `claims` below.
        self.threshold_kind.store(kind == Kind::Threshold, Ordering::Relaxed);
        self.panicked.store(false, Ordering::Relaxed);
        self.pending.store(tasks, Ordering::Relaxed);
        self.state.store(RUNNING, Ordering::Relaxed);
        // SAFETY: idle and ours (the caller's contract).
        self.index.with_mut(|slot| unsafe { *slot = Some(index) });
        // Release: publishes everything above to whoever claims a task
        // (Acquire in `claim`); until this write, claims through stale
        // queue entries fail (see "Stale entries"). A swap rather than a
        // store, so that every write of the word is a read-modify-write:
        // loom (0.7) lets a plain store slip between the read and the
        // write of a concurrent claim, an execution the memory model
        // forbids, and the models would report it. One locked
        // instruction per batch.
        let _ = self.claims.swap((tasks as u64) << 32, Ordering::Release);
    }

    /// Fills an idle job with the threshold queries `queries` (borrowed:
    /// the tasks hash them as they score them), split into at most
    /// `max_tasks` ranges of about equal key counts, and arms it. Returns
    /// the task count and the keys of the batch; `None` for an empty batch
    /// (nothing armed).
    ///
    /// # Safety
    ///
    /// The job is popped from the pool's free list (or never shared): see
    /// [`Job::arm`]. The caller does not return before the batch is done,
    /// nor unwind ([`WaitOnDrop`]): the tasks read `queries` in place.
    pub(crate) unsafe fn prepare_threshold<I: Served, Q: AsRef<[K]> + Sync, K: Key + Sync>(
        &self,
        index: Arc<I>,
        queries: &[Q],
        threshold: Threshold,
        max_tasks: usize,
    ) -> Option<(usize, usize)> {
        debug_assert!(self.is_done(), "a free-list job is idle");
        if queries.is_empty() {
            return None;
        }
        // SAFETY: idle and ours: popped from the free list, so its other
        // `Arc`s are stale queue entries, whose claims fail until `arm`'s
        // Release swap (see "Stale entries").
        let (borrowed, data, caller) = unsafe {
            (
                &mut *self.borrowed.with_mut(|p| p),
                &mut *self.threshold.with_mut(|p| p),
                &mut *self.caller.with_mut(|p| p),
            )
        };
        *borrowed = Some(Borrowed {
            items: queries.as_ptr().cast(),
            len: queries.len(),
            run: Run::Threshold(score_range::<I, Q, K>),
        });
        data.query_ends.clear();
        let (mut keys, mut longest) = (0, 0);
        for query in queries {
            let len = query.as_ref().len();
            keys += len;
            longest = longest.max(len);
            data.query_ends.push(keys);
        }
        // Relaxed: published by the Release swap of `claims` in `arm`.
        self.max_keys.store(longest, Ordering::Relaxed);
        // The caller's scratch, whether or not it helps, so that helping
        // or not does not decide whether a warm batch allocates.
        let index = Erased::new(index);
        index.reserve(longest, true, caller);
        data.threshold = threshold;
        let tasks = max_tasks.clamp(1, MAX_TASKS_PER_BATCH).min(queries.len());
        split_by_keys(&data.query_ends, tasks, &mut data.bounds);
        if data.scored.len() < tasks {
            data.scored.resize_with(tasks, || CachePadded::new(UnsafeCell::new(Scored::default())));
        }
        // SAFETY: idle and ours, as above.
        unsafe { self.arm(index, Kind::Threshold, tasks) };
        Some((tasks, keys))
    }

    /// After a threshold batch is done: its answers, task after task, into
    /// `results` (cleared first), or [`PoolError::TaskPanicked`] (and
    /// `results` left empty).
    ///
    /// Only by the thread that prepared the batch, after [`Job::wait`].
    pub(crate) fn take_threshold(&self, results: &mut ThresholdResults) -> Result<()> {
        debug_assert!(self.is_done());
        results.clear();
        // Relaxed: ordered by the Acquire load of `state` in `wait`.
        if self.panicked.swap(false, Ordering::Relaxed) {
            return Err(PoolError::TaskPanicked.into());
        }
        // SAFETY: done, and the preparing thread holds the job: idle.
        let data = unsafe { &*self.threshold.with(|p| p) };
        let tasks = data.bounds.len().saturating_sub(1);
        for cell in &data.scored[..tasks] {
            // SAFETY: idle, as above: no task writes its output now.
            let part = unsafe { &*cell.with(|p| p) };
            let base = results.hits.len();
            results.hits.extend_from_slice(&part.hits);
            results.ends.extend(part.ends.iter().map(|&e| base + e));
        }
        Ok(())
    }

    /// Keys of task `task`.
    fn range(&self, task: usize) -> core::ops::Range<usize> {
        // Relaxed: written by the owner before its Release swap of
        // `claims`, read after the claim (Acquire) that gave us this task.
        let (len, keys) = (self.chunk_len.load(Ordering::Relaxed), self.keys.load(Ordering::Relaxed));
        (task * len).min(keys)..((task + 1) * len).min(keys)
    }

    /// Claims the next unrun task of the current batch: `Some((task,
    /// tasks))`, or `None` when every task is claimed (or the job is idle).
    pub(crate) fn claim(&self) -> Option<(usize, usize)> {
        // Acquire: pairs with the owner's Release swap in `arm` (the
        // swap heads the release sequence every later claim reads from),
        // so a winning claimer sees the whole batch data. Relaxed would
        // suffice for exclusivity alone: the RMW hands each index out once.
        let word = self.claims.fetch_add(1, Ordering::Acquire);
        let (tasks, next) = ((word >> 32) as usize, (word & 0xffff_ffff) as usize);
        (next < tasks).then_some((next, tasks))
    }

    /// Runs claimed task `task` under `catch_unwind` and ends it: a panic
    /// marks the batch failed and goes no further, so neither a worker nor
    /// a helping caller is lost to it.
    pub(crate) fn execute(&self, shared: &Shared, task: usize, scratch: &mut Scratch) {
        // `shared` carries only the test hook's counter.
        #[cfg(not(feature = "test-hooks"))]
        let _ = shared;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // Relaxed: a test hook counter, compiled only for tests.
            #[cfg(feature = "test-hooks")]
            if shared.fail_next.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok() {
                panic!("bloomslice pool: injected task failure");
            }
            self.run_task(task, scratch);
        }));
        if outcome.is_err() {
            self.mark_panicked();
        }
        self.finish_task();
    }

    /// Claims and runs tasks until none is left unclaimed, with the running
    /// thread's `scratch`.
    pub(crate) fn run_claims(&self, shared: &Shared, scratch: &mut Scratch) {
        let mut reserved = false;
        while let Some((task, _)) = self.claim() {
            if !reserved {
                reserved = true;
                // SAFETY: submitted state and we hold an unfinished task, so
                // the snapshot is live and only read (it is dropped by the
                // last task to finish). Relaxed: written before the Release
                // store of `claims`, read after our Acquire claim.
                if let Some(index) = unsafe { &*self.index.with(|p| p) } {
                    let threshold = self.threshold_kind.load(Ordering::Relaxed);
                    index.reserve(self.max_keys.load(Ordering::Relaxed), threshold, scratch);
                }
            }
            self.execute(shared, task, scratch);
        }
    }

    /// The owner's share of its own batch: claims and runs tasks with the
    /// job's caller scratch until none is left unclaimed.
    pub(crate) fn help(&self, shared: &Shared) {
        // SAFETY: only the owner touches `caller`, and we are the owner
        // (we hold its `PoolResults` by `&mut`, or popped the job).
        let caller = unsafe { &mut *self.caller.with_mut(|p| p) };
        self.run_claims(shared, caller);
    }

    /// Runs task `task` (called once per task, by whoever claimed it).
    fn run_task(&self, task: usize, scratch: &mut Scratch) {
        // Relaxed: written before the Release swap of `claims`, read after
        // the claim (Acquire) that gave us this task.
        if self.threshold_kind.load(Ordering::Relaxed) {
            self.run_threshold_task(task, scratch);
            return;
        }
        let range = self.range(task);
        // SAFETY: submitted state: the keys (borrowed or hashed) and the
        // snapshot are only read until `DONE`, and chunk `task` is written
        // by this task alone (`claim` hands each task index out once per
        // batch).
        let (borrowed, hashes, index, out) = unsafe {
            (
                &*self.borrowed.with(|p| p),
                &*self.hashes.with(|p| p),
                &*self.index.with(|p| p),
                &mut *self.chunks[task].with_mut(|p| p),
            )
        };
        let Some(index) = index else { return };
        match borrowed {
            // SAFETY: a borrowed batch's caller waits until `DONE` ("Borrowed
            // keys"), so the slice is live.
            Some(Borrowed { items, len, run: Run::Keys(run) }) => unsafe {
                run(*items, *len, range, index.ptr(), out, scratch);
            },
            Some(Borrowed { run: Run::Threshold(_), .. }) => unreachable!("a key batch borrows keys"),
            None => index.query_hashes(&hashes[range], out, scratch),
        }
    }

    /// Runs threshold task `task`: scores its queries one after the other.
    #[cold]
    fn run_threshold_task(&self, task: usize, scratch: &mut Scratch) {
        // SAFETY: submitted state: the borrowed queries, the snapshot and
        // the threshold data are only read until `DONE`, and scored output
        // `task` is written by this task alone (`claim` hands each task
        // index out once per batch).
        let (borrowed, index, data) =
            unsafe { (&*self.borrowed.with(|p| p), &*self.index.with(|p| p), &*self.threshold.with(|p| p)) };
        // SAFETY: as above, task `task` alone touches `scored[task]`.
        let scored = unsafe { &mut *data.scored[task].with_mut(|p| p) };
        scored.hits.clear();
        scored.ends.clear();
        let (Some(index), Some(Borrowed { items, len, run: Run::Threshold(run) })) = (index, borrowed) else {
            return;
        };
        let range = data.bounds[task]..data.bounds[task + 1];
        // SAFETY: the threshold batch's caller waits until `DONE` ("Borrowed
        // keys"), so the slice is live.
        unsafe { run(*items, *len, range, index.ptr(), data.threshold, scored, scratch) };
    }

    /// Marks a task panicked; the batch will report [`PoolError::TaskPanicked`].
    fn mark_panicked(&self) {
        // Relaxed: published to the owner by the AcqRel decrement of
        // `pending` that follows and the Release swap of `state`.
        self.panicked.store(true, Ordering::Relaxed);
    }

    /// Ends one task; the last one hands the batch back to the owner.
    fn finish_task(&self) {
        // AcqRel: Release publishes this task's chunk; the last decrement
        // also Acquires every other task's chunk.
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: every task is finished (pending reached zero, with
            // Acquire) and the owner waits for `DONE`, so nobody else
            // touches the snapshot now. Dropping it early lets a writer
            // reuse that copy without waiting for this buffer.
            self.index.with_mut(|slot| unsafe { *slot = None });
            self.complete();
        }
    }

    /// Hands the batch back to the owner and wakes it if it is parked.
    fn complete(&self) {
        // Release: hands the batch's results (acquired by the last
        // decrement of `pending`) to the owner's Acquire loads. A swap, so
        // it reads the latest state: `PARKED` if the owner's
        // compare-exchange in `park` came first (see "Parking").
        if self.state.swap(DONE, Ordering::Release) == PARKED {
            // Taking the lock orders this notify after the owner's wait.
            drop(self.lock.lock().unwrap_or_else(PoisonError::into_inner));
            self.cvar.notify_all();
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        // Acquire: pairs with the Release swap in `complete`, making the
        // batch's results visible to the owner.
        self.state.load(Ordering::Acquire) == DONE
    }

    /// Spins up to `spin`, then parks until the batch is done.
    pub(crate) fn wait(&self, spin: Duration) {
        if self.is_done() {
            return;
        }
        // Spin (no yields), then park. On shared cores a waiter that spun
        // and yielded measured a higher single-key latency than one that
        // parked at once: a yielding waiter loses its core to other
        // processes, while a parked one is woken with the scheduler's
        // wake-up preference.
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
        // Relaxed on success: the task that finishes the batch reads
        // `PARKED` in its swap and then takes the mutex we hold, which
        // orders its notify after our wait. Acquire on failure: the batch
        // is `DONE` and its results are ours (see "Parking").
        if self.state.compare_exchange(RUNNING, PARKED, Ordering::Relaxed, Ordering::Acquire).is_err() {
            return;
        }
        while !self.is_done() {
            guard = self.cvar.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
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

debug_summary!(PoolResults, |s| len: s.len, total_matches: s.total_matches());

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
        unsafe { &*self.job.chunks[task].with(|p| p) }
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

    /// Fills the batch data with `keys` hashed into the job (for a batch
    /// whose caller returns before it is done) and arms the job. Returns
    /// the job and its task count, or `None` when there is nothing to queue
    /// (a zero-key batch is done at once).
    pub(crate) fn prepare_copied<I: Served, K: Key>(
        &mut self,
        index: Arc<I>,
        keys: &[K],
        tasks_for: impl FnOnce(usize) -> usize,
    ) -> Option<(Arc<Job>, usize)> {
        let job = &*self.job;
        debug_assert!(job.is_done(), "a PoolResults is only reachable while idle");
        // SAFETY: idle (we hold `&mut self`; see the module's design note).
        let (hashes, borrowed) = unsafe { (&mut *job.hashes.with_mut(|p| p), &mut *job.borrowed.with_mut(|p| p)) };
        *borrowed = None;
        hashes.clear();
        hashes.extend(keys.iter().map(|k| index.key_hash(k)));
        self.arm_keys(Erased::new(index), keys.len(), tasks_for)
    }

    /// Fills the batch data with a pointer to `keys`, which the tasks hash
    /// and query in place, and arms the job; returns as
    /// [`PoolResults::prepare_copied`].
    ///
    /// # Safety
    ///
    /// The caller does not return before the batch is done, nor unwind
    /// ([`WaitOnDrop`]): see "Borrowed keys" in the module's design note.
    pub(crate) unsafe fn prepare_borrowed<I: Served, K: Key + Sync>(
        &mut self,
        index: Arc<I>,
        keys: &[K],
        tasks_for: impl FnOnce(usize) -> usize,
    ) -> Option<(Arc<Job>, usize)> {
        debug_assert!(self.job.is_done(), "a PoolResults is only reachable while idle");
        // SAFETY: idle (we hold `&mut self`; see the module's design note).
        let borrowed = unsafe { &mut *self.job.borrowed.with_mut(|p| p) };
        *borrowed =
            Some(Borrowed { items: keys.as_ptr().cast(), len: keys.len(), run: Run::Keys(query_range::<I, K>) });
        self.arm_keys(Erased::new(index), keys.len(), tasks_for)
    }

    /// Splits a filled key batch of `keys` keys into tasks and arms the job.
    fn arm_keys(
        &mut self,
        index: Erased,
        keys: usize,
        tasks_for: impl FnOnce(usize) -> usize,
    ) -> Option<(Arc<Job>, usize)> {
        let job = &*self.job;
        let tasks = tasks_for(keys).clamp(1, MAX_TASKS_PER_BATCH);
        let chunk_len = keys.div_ceil(tasks).max(1);
        let tasks = keys.div_ceil(chunk_len);
        // SAFETY: idle and ours (we hold `&mut self`).
        let caller = unsafe { &mut *job.caller.with_mut(|p| p) };
        // The caller's scratch, whether or not it helps (see `Job::caller`).
        index.reserve(chunk_len, false, caller);
        self.len = keys;
        self.chunk_len = chunk_len;
        if keys == 0 {
            return None;
        }
        // Relaxed: published by the Release swap of `claims` in `arm`.
        job.chunk_len.store(chunk_len, Ordering::Relaxed);
        job.keys.store(keys, Ordering::Relaxed);
        job.max_keys.store(chunk_len, Ordering::Relaxed);
        // SAFETY: idle and ours (we hold `&mut self`).
        unsafe { job.arm(index, Kind::Keys, tasks) };
        Some((Arc::clone(&self.job), tasks))
    }

    /// If `help`, runs the submitted batch's unclaimed tasks; then waits for
    /// the tasks the workers hold, and reports the outcome.
    pub(crate) fn finish(&mut self, shared: &Shared, spin: Duration, help: bool) -> Result<()> {
        if help && !self.job.is_done() {
            self.job.help(shared);
        }
        self.job.wait(spin);
        self.outcome()
    }

    fn outcome(&mut self) -> Result<()> {
        // Relaxed: ordered by the Acquire load of `state` before this call.
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
/// its [`Error`](crate::error::Error), dropping the buffer.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct Failed {
    /// What went wrong (an [`Error::Pool`](crate::error::Error::Pool)).
    #[source]
    pub error: crate::error::Error,
    /// The buffer, with no results.
    pub results: PoolResults,
}

impl From<Failed> for crate::error::Error {
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

/// Writes into `bounds` the `tasks + 1` boundaries of `tasks` contiguous
/// ranges of the queries ending at `query_ends` (cumulative key counts),
/// with about equal key counts, every range non-empty (`tasks` is at most
/// the query count, at least 1).
fn split_by_keys(query_ends: &[usize], tasks: usize, bounds: &mut Vec<usize>) {
    let n = query_ends.len();
    debug_assert!((1..=n.max(1)).contains(&tasks));
    let total = query_ends.last().copied().unwrap_or(0);
    bounds.clear();
    bounds.push(0);
    let mut end = 0;
    for p in 1..tasks {
        let goal = (total * p).div_ceil(tasks);
        // Take at least one query, leave at least one per later range.
        end += 1;
        while end < n - (tasks - p) && query_ends[end - 1] < goal {
            end += 1;
        }
        bounds.push(end);
    }
    bounds.push(n);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cover_every_query_in_order() {
        let mut bounds = Vec::new();
        for n in 1..40usize {
            let mut ends = Vec::new();
            let mut total = 0;
            for i in 0..n {
                total += (i * 37) % 11;
                ends.push(total);
            }
            for tasks in 1..=n.min(6) {
                split_by_keys(&ends, tasks, &mut bounds);
                assert_eq!(bounds.len(), tasks + 1);
                assert_eq!((bounds[0], bounds[tasks]), (0, n));
                assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{n} {tasks} {bounds:?}");
            }
        }
        // Balanced by keys: one long query, then short ones.
        split_by_keys(&[100, 101, 102, 103], 2, &mut bounds);
        assert_eq!(bounds, [0, 1, 4]);
        split_by_keys(&[1, 2, 3, 103], 2, &mut bounds);
        assert_eq!(bounds, [0, 3, 4]);
    }
}

//! [`ConcurrentIndex`]: a [`SlicedIndex`] (or a
//! [`SetIndex`](crate::collection::SetIndex)) that queries and writes
//! may use at the same time from different threads.
//!
//! The machinery below is generic over the state kept in two copies (a
//! [`Replica`]: [`SlicedIndex`], the default, with [`WriteOp`]s, or a
//! collection with [`SetOp`](crate::collection::SetOp)s);
//! every guarantee holds for both. A collection's parts are sliced indexes,
//! so its copies share shards the same way (see the collection's
//! `concurrent` module).
//!
//! # Design note: left-right copies behind an atomic pointer swap
//!
//! Two copies of the index exist. Readers load the *current* copy with one
//! atomic pointer load and keep it for the whole query or batch, so a query
//! sees one state from start to end. The query methods and
//! [`ConcurrentIndex::read`] use `arc_swap::ArcSwap::load`, whose guard
//! records the reader in a per-thread slot instead of incrementing the
//! copy's shared reference count, so readers on different cores write no
//! common cache line; [`ConcurrentIndex::snapshot`] (an `Arc` clone, one
//! shared increment) is for holding a state across calls, as the pool does
//! once per batch.
//! The single writer (writers queue on a mutex, readers never touch it)
//! edits the *standby* copy, which no reader can reach, then publishes it
//! with one atomic swap; the copy it replaced becomes the standby. Before the
//! next write the writer waits until the last reader of that copy has let go
//! (`Arc::get_mut` succeeds) and replays the writes it missed, so both copies
//! stay equal. Hence:
//!
//! - a reader is never blocked: a write costs readers one pointer swap (when
//!   the pointer is swapped, arc-swap converts the guards of readers still
//!   on the old copy into real references, so the writer's wait below sees
//!   them);
//! - a query sees a write wholly or not at all, never a half-written column,
//!   because a copy is only edited while no reader holds it;
//! - a query that loads the index after `write` returned sees the write (the
//!   swap is sequentially consistent).
//!
//! Why not plain copy-on-write (clone the index, write, swap)? A clone shares
//! the shards (`Arc<Shard>`), so the first write to a shard copies it whole:
//! on `full` (m = 100 992) a 16 384-column shard is 207 MB, and since the
//! published index always holds the shard, *every* write copies it again
//! (and clones the id map). `paper query --threads` prints both costs (the
//! `write cost` rows): a left-right write touches only the rows it changes,
//! a copy-on-write one copies the whole shard, orders of magnitude more
//! (measured: see `bench/RESULTS.md`, section "Threads").
//!
//! The left-right scheme costs each write twice (once per copy) plus the
//! wait for readers of the standby, at the price of twice the memory once
//! every shard has been written. Epochs (`crossbeam-epoch`) would still need
//! a copy per write, only reclaimed later; narrower shards
//! (`SlicedConfig::max_shard_columns`) shrink the copy but slow every query
//! (more, shorter row runs). Writers that batch many writes should use
//! [`ConcurrentIndex::apply`]: one publish, one wait.
//!
//! Readers move to the published copy at once, and the tables every query
//! reads besides its rows (used columns and column ids) were last read by
//! them a publish ago: out of their caches by now. The writer reads those
//! tables (up to `WARM_BUDGET` bytes) just before each publish, so the
//! readers' first queries on the new copy find them in a cache (the
//! writer's, or the last-level cache it shares with them) instead of
//! waiting for memory. Where the two threads sit on different dies the
//! writer's caches are as far as memory, and this gains nothing.
//!
//! A reader that keeps a snapshot for long makes the next write wait; after
//! [`DRAIN_PATIENCE`] the writer stops waiting and falls back to
//! copy-on-write for that write (correct, only slower).
//!
//! # When a write fails half-way
//!
//! - A panic inside a write (a bug, or an allocation that aborts) unwinds
//!   with the standby copy taken out of the writer's state, so that copy,
//!   possibly half-written, is dropped. The next write rebuilds the standby
//!   as a clone of the published copy: the clone shares its shards, and each
//!   write copies only the shards it touches, so it neither waits for the
//!   readers of the published copy nor costs a full copy.
//! - A missed write that succeeded on the published copy is replayed on the
//!   standby before the next write. Replay fails only when memory runs out
//!   (copying a shard). The standby is then not trusted: it is dropped and
//!   rebuilt as a clone of the published copy, as after a panic, so the two
//!   copies never diverge.

use std::sync::PoisonError;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::filter::BloomFilter;
use crate::hash::{Key, KeyHash};
use crate::params::BloomParams;
use crate::sliced::SlicedIndex;
use crate::sync::{Arc, ArcSwap, Mutex};

/// How long a writer waits for the readers of the standby copy before it
/// copies the standby instead (copy-on-write, sharing unchanged shards).
/// Longer than a 100 000-key batch on `full` N = 10 000 (about 0.15 s on
/// one core), so the fallback only fires for snapshots kept on purpose.
pub const DRAIN_PATIENCE: Duration = Duration::from_secs(1);

/// At most this many bytes of a copy's query tables (each shard's
/// used-column bitmap and column-to-id table) are read by the writer just
/// before it publishes the copy, so that readers find them in a cache near
/// them: half the second-level cache of the machines measured, the tables of
/// 32 768 shard columns. On `full` N = 10 000 (81 KB of tables) this made
/// the first query after a publish faster, at no measurable cost to the
/// publish (`bench/RESULTS.md`, section "Latency").
const WARM_BUDGET: usize = 512 * 1024;

/// One write to a [`ConcurrentIndex`]; see [`ConcurrentIndex::apply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOp {
    /// [`SlicedIndex::insert_filter`].
    InsertFilter {
        /// New filter id.
        id: u64,
        /// The filter.
        filter: BloomFilter,
    },
    /// [`SlicedIndex::remove_set`].
    RemoveSet {
        /// Filter id.
        id: u64,
    },
    /// [`SlicedIndex::update_filter`] (ORs `filter` in).
    UpdateFilter {
        /// Filter id.
        id: u64,
        /// The filter ORed into filter `id`.
        filter: BloomFilter,
    },
    /// [`SlicedIndex::replace_filter`].
    ReplaceFilter {
        /// Filter id.
        id: u64,
        /// The filter that replaces filter `id`.
        filter: BloomFilter,
    },
    /// [`SlicedIndex::insert_key_hash`].
    InsertKey {
        /// Filter id.
        id: u64,
        /// Hash of the key (see [`BloomParams::hash`]).
        hash: KeyHash,
    },
}

/// A state a [`ConcurrentIndex`] keeps two copies of: [`SlicedIndex`] (with
/// [`WriteOp`]s) or [`SetIndex`](crate::collection::SetIndex) (with
/// [`SetOp`](crate::collection::SetOp)s). Sealed: the pool
/// and the writer rely on what each implementation does.
pub trait Replica: sealed::Sealed + Clone + Send + Sync + 'static {
    /// One write, kept until it is replayed on the other copy.
    type Op: Clone + core::fmt::Debug + Send + Sync + 'static;

    /// Applies `op` to this copy. Deterministic: the same op on equal
    /// copies leaves equal copies.
    #[doc(hidden)]
    fn apply_op(&mut self, op: &Self::Op) -> Result<()>;

    /// Whether an op that failed with `error` left the copy unchanged (it
    /// is then not replayed); otherwise the writer rebuilds the other copy
    /// from the published one before the next write.
    #[doc(hidden)]
    fn failed_op_changed_nothing(error: &Error) -> bool;
}

/// What only the crate may know of a [`Replica`].
pub(crate) mod sealed {
    /// See [`super::Replica`].
    pub trait Sealed {
        /// What a [`super::ConcurrentIndex`] keeps outside the copies
        /// (for [`SlicedIndex`](crate::sliced::SlicedIndex) its
        /// parameters, for a collection its seed), never changed by a write.
        type Fixed: Copy + core::fmt::Debug + Send + Sync + 'static;
        /// This state's [`Sealed::Fixed`] part.
        fn fixed(&self) -> Self::Fixed;
        /// Brings into the caller's caches, up to `budget` bytes, what
        /// every query of this state reads besides its rows (see
        /// `SlicedIndex::warm_query_tables`); returns the bytes read.
        fn warm_query_tables(&self, budget: usize) -> usize;
    }
}

impl sealed::Sealed for SlicedIndex {
    type Fixed = BloomParams;

    fn fixed(&self) -> BloomParams {
        *self.params()
    }

    fn warm_query_tables(&self, budget: usize) -> usize {
        SlicedIndex::warm_query_tables(self, budget)
    }
}

impl Replica for SlicedIndex {
    type Op = WriteOp;

    fn apply_op(&mut self, op: &WriteOp) -> Result<()> {
        match op {
            WriteOp::InsertFilter { id, filter } => self.insert_filter(*id, filter),
            WriteOp::RemoveSet { id } => self.remove_set(*id),
            WriteOp::UpdateFilter { id, filter } => self.update_filter(*id, filter),
            WriteOp::ReplaceFilter { id, filter } => self.replace_filter(*id, filter),
            WriteOp::InsertKey { id, hash } => self.insert_key_hash(*id, *hash),
        }
    }

    /// A failed write to a [`SlicedIndex`] changes nothing.
    fn failed_op_changed_nothing(_: &Error) -> bool {
        true
    }
}

/// The writer's side: the copy no reader can load, and the writes it missed.
#[derive(Debug)]
struct WriterSide<I: Replica> {
    /// `None` only inside [`ConcurrentIndex::apply`].
    standby: Option<Arc<I>>,
    /// Writes published on the current copy and not yet on the standby.
    missed: Vec<I::Op>,
    /// A failed write may have changed the published copy: the standby is
    /// rebuilt from it before the next write instead of replaying.
    untrusted: bool,
}

/// A [`SlicedIndex`] shared by concurrent readers and writers (see the
/// module's design note): queries load a snapshot with one atomic load,
/// writes publish with one atomic swap. The same for a
/// [`SetIndex`](crate::SetIndex) as `ConcurrentIndex<SetIndex>`, whose
/// queries and writes are the set index's. Queries go through
/// [`ReadIndex`](crate::ReadIndex), each on one state.
///
/// ```
/// use bloomslice::{BatchResults, BloomFilter, BloomParams, ConcurrentIndex, ReadIndex, SlicedIndex};
///
/// let params = BloomParams::new(1024, 3)?;
/// let index = ConcurrentIndex::new(SlicedIndex::new(params));
/// let mut f = BloomFilter::new(params)?;
/// f.insert("apple");
/// index.insert_filter(1, &f)?; // &self: callable while others query
/// assert_eq!(index.query("apple"), vec![1]);
///
/// let mut results = BatchResults::new();
/// index.query_batch(&["apple", "pear"], &mut results);
/// assert_eq!(results.get(0), Some(&[1u64][..]));
/// // Several calls on one state: a guard (no shared reference count).
/// let both = index.read(|ix| (ix.len(), ix.query("apple")));
/// assert_eq!(both, (1, vec![1]));
/// # Ok::<(), bloomslice::Error>(())
/// ```
#[derive(Debug)]
pub struct ConcurrentIndex<I: Replica = SlicedIndex> {
    fixed: <I as sealed::Sealed>::Fixed,
    current: ArcSwap<I>,
    writer: Mutex<WriterSide<I>>,
    #[cfg(feature = "test-hooks")]
    hooks: Hooks,
}

/// Fault injection for the crate's own tests (`test-hooks` feature).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Default)]
struct Hooks {
    fail_next_replay: core::sync::atomic::AtomicBool,
    panic_in_next_write: core::sync::atomic::AtomicBool,
}

impl<I: Replica> ConcurrentIndex<I> {
    /// Shares `index` between readers and writers. The standby copy is a
    /// clone that shares every shard until it is first written.
    pub fn new(index: I) -> Self {
        let standby = Arc::new(index.clone());
        ConcurrentIndex {
            fixed: sealed::Sealed::fixed(&index),
            current: ArcSwap::from_pointee(index),
            writer: Mutex::new(WriterSide { standby: Some(standby), missed: Vec::new(), untrusted: false }),
            #[cfg(feature = "test-hooks")]
            hooks: Hooks::default(),
        }
    }

    /// The part of the state no write changes.
    pub(crate) fn fixed(&self) -> &<I as sealed::Sealed>::Fixed {
        &self.fixed
    }

    /// The current state, to keep across calls or hand to other threads.
    /// One atomic load and a shared reference count increment; allocates
    /// nothing. For queries prefer the query methods or
    /// [`ConcurrentIndex::read`], which touch no shared count.
    ///
    /// Keep snapshots short-lived: the second write after this load waits
    /// for it to be dropped (at most [`DRAIN_PATIENCE`]).
    pub fn snapshot(&self) -> Arc<I> {
        // ArcSwap::load_full: a SeqCst load of the pointer plus a
        // reference count increment, lock-free for readers.
        self.current.load_full()
    }

    /// Runs `f` on the current state: one atomic load, and a guard kept in
    /// this thread's arc-swap slot instead of a shared reference count (so
    /// readers on different cores do not contend on one cache line).
    /// Everything `f` reads comes from one state.
    ///
    /// Keep `f` short, as with [`ConcurrentIndex::snapshot`]: a write waits
    /// for readers of the copy it edits.
    #[inline]
    pub fn read<R>(&self, f: impl FnOnce(&I) -> R) -> R {
        // ArcSwap::load: a SeqCst pointer load, then a debt recorded in a
        // thread-local slot (a fallback to a reference count increment when
        // the thread's slots are all in use). A swap pays every debt on the
        // old pointer, turning it into a real reference before returning.
        let guard = self.current.load();
        f(&guard)
    }

    /// Applies `ops` in order and publishes them together: a query sees all
    /// of the successful ones or none. Returns each op's result; a failed op
    /// changes nothing (as in [`SlicedIndex`]) and the others still apply.
    ///
    /// Blocks other writers, never readers. May wait for readers of the
    /// standby copy (see the module's design note).
    pub fn apply(&self, ops: Vec<I::Op>) -> Vec<Result<()>> {
        // A panic while the lock was held dropped the standby copy it was
        // editing (see "When a write fails half-way"); keep going.
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let missed = core::mem::take(&mut w.missed);
        let untrusted = core::mem::take(&mut w.untrusted);
        let mut standby = match w.standby.take() {
            // A failed write may have changed the published copy in part.
            Some(_) if untrusted => self.fresh_standby(),
            Some(mut standby) => {
                if self.replay(&mut standby, missed).is_err() {
                    standby = self.fresh_standby();
                }
                standby
            }
            // Only after a panic inside a previous write.
            None => self.fresh_standby(),
        };
        let copy = exclusive(&mut standby);
        let results: Vec<Result<()>> = ops.iter().map(|op| copy.apply_op(op)).collect();
        #[cfg(feature = "test-hooks")]
        if self.hooks.panic_in_next_write.swap(false, core::sync::atomic::Ordering::Relaxed) {
            panic!("bloomslice: injected panic inside a write");
        }
        w.untrusted = results.iter().any(|r| r.as_ref().is_err_and(|e| !I::failed_op_changed_nothing(e)));
        w.missed = ops.into_iter().zip(&results).filter(|(_, r)| r.is_ok()).map(|(op, _)| op).collect();
        // Readers move to this copy at once: its query tables, which they
        // last read a publish ago, are read here first so that their first
        // queries do not wait for memory (`WARM_BUDGET`).
        sealed::Sealed::warm_query_tables(&*standby, WARM_BUDGET);
        // ArcSwap::swap is SeqCst: every load after it returns `standby`,
        // and the copy's writes above happen-before any such load.
        let old = self.current.swap(standby);
        w.standby = Some(old);
        results
    }

    /// Replays on `standby` the writes it missed (each succeeded on the
    /// published copy, whose state `standby` had then).
    fn replay(&self, standby: &mut Arc<I>, missed: Vec<I::Op>) -> Result<()> {
        #[cfg(feature = "test-hooks")]
        if !missed.is_empty() && self.hooks.fail_next_replay.swap(false, core::sync::atomic::Ordering::Relaxed) {
            return Err(crate::error::Error::CapacityOverflow("injected replay failure"));
        }
        if missed.is_empty() {
            return Ok(());
        }
        let copy = exclusive(standby);
        missed.iter().try_for_each(|op| copy.apply_op(op))
    }

    /// A new standby: a clone of the published copy that shares its shards
    /// (each later write copies the shards it touches), so it needs no wait
    /// for the published copy's readers.
    fn fresh_standby(&self) -> Arc<I> {
        Arc::new(I::clone(&self.current.load()))
    }

    /// Test hook: the next replay of missed writes fails as if memory had
    /// run out (to test that the copies do not diverge).
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn fail_next_replay(&self) {
        self.hooks.fail_next_replay.store(true, core::sync::atomic::Ordering::Relaxed);
    }

    /// Test hook: the next write panics half-way, after editing the standby
    /// copy and before publishing it.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn panic_in_next_write(&self) {
        self.hooks.panic_in_next_write.store(true, core::sync::atomic::Ordering::Relaxed);
    }

    /// Writes one op; see [`ConcurrentIndex::apply`].
    pub(crate) fn apply_one(&self, op: I::Op) -> Result<()> {
        self.apply(vec![op]).pop().unwrap_or(Ok(()))
    }
}

impl ConcurrentIndex<SlicedIndex> {
    /// The parameters every filter shares.
    pub fn params(&self) -> &BloomParams {
        &self.fixed
    }

    /// [`SlicedIndex::filter_cloned`] on the current state: a copy of the
    /// filter `id`, rebuilt from its column.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`], or
    /// [`Error::CapacityOverflow`] if the
    /// filter cannot be allocated.
    pub fn filter_cloned(&self, id: u64) -> Result<BloomFilter> {
        self.read(|ix| ix.filter_cloned(id))
    }

    /// [`SlicedIndex::insert_filter`], concurrently with queries.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::insert_filter`]; nothing is published then.
    pub fn insert_filter(&self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.apply_one(WriteOp::InsertFilter { id, filter: filter.clone() })
    }

    /// [`SlicedIndex::remove_set`], concurrently with queries.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::remove_set`].
    pub fn remove_set(&self, id: u64) -> Result<()> {
        self.apply_one(WriteOp::RemoveSet { id })
    }

    /// [`SlicedIndex::update_filter`], concurrently with queries.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::update_filter`].
    pub fn update_filter(&self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.apply_one(WriteOp::UpdateFilter { id, filter: filter.clone() })
    }

    /// [`SlicedIndex::insert_key`], concurrently with queries.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::insert_key`].
    pub fn insert_key<K: Key + ?Sized>(&self, id: u64, key: &K) -> Result<()> {
        self.apply_one(WriteOp::InsertKey { id, hash: self.fixed.hash(key) })
    }

    /// A filter of the index's parameters holding `keys`.
    fn filter_of<K: Key>(&self, keys: &[K]) -> Result<BloomFilter> {
        let mut filter = BloomFilter::new(self.fixed)?;
        for key in keys {
            filter.insert_hash(self.fixed.hash(key));
        }
        Ok(filter)
    }

    /// [`SlicedIndex::insert_set`], concurrently with queries.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::insert_set`]; nothing is published then.
    pub fn insert_set<K: Key>(&self, id: u64, keys: &[K]) -> Result<()> {
        self.apply_one(WriteOp::InsertFilter { id, filter: self.filter_of(keys)? })
    }

    /// [`SlicedIndex::add_keys`], concurrently with queries: readers see
    /// all of the keys or none.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::add_keys`].
    pub fn add_keys<K: Key>(&self, id: u64, keys: &[K]) -> Result<()> {
        self.apply_one(WriteOp::UpdateFilter { id, filter: self.filter_of(keys)? })
    }

    /// [`SlicedIndex::replace_set`], concurrently with queries: readers
    /// see the old set or the new one, never neither.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::replace_set`].
    pub fn replace_set<K: Key>(&self, id: u64, keys: &[K]) -> Result<()> {
        self.apply_one(WriteOp::ReplaceFilter { id, filter: self.filter_of(keys)? })
    }
}

/// Waits until no reader holds `copy`, then returns it mutably. After
/// [`DRAIN_PATIENCE`], clones it instead (`Arc::make_mut`: the clone shares
/// shards with the readers' copy and copies those it writes).
fn exclusive<I: Replica>(copy: &mut Arc<I>) -> &mut I {
    let start = Instant::now();
    let mut round = 0u32;
    // Arc::get_mut checks the strong and weak counts with Acquire loads, so
    // the readers' last accesses happen-before our writes.
    while Arc::get_mut(copy).is_none() {
        if crate::sync::waited_longer_than(start, DRAIN_PATIENCE) {
            break;
        }
        round += 1;
        backoff(round, [64, 128], Duration::from_micros(50));
    }
    crate::sync::make_mut(copy)
}

/// One step of waiting for another thread's progress, by round: spin below
/// `until[0]`, yield below `until[1]`, then sleep for `sleep`.
pub(crate) fn backoff(round: u32, until: [u32; 2], sleep: Duration) {
    if round < until[0] {
        crate::sync::spin_loop();
    } else if round < until[1] {
        crate::sync::yield_now();
    } else {
        crate::sync::sleep(sleep);
    }
}

#[cfg(all(test, loom))]
#[path = "concurrent_loom_tests.rs"]
mod loom_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A state whose writes can fail after a change, as a collection's can.
    #[derive(Clone, Debug, Default, PartialEq)]
    struct Log(Vec<u32>);

    #[derive(Clone, Debug)]
    enum LogOp {
        Push(u32),
        /// Pushes, then fails as if memory had run out.
        PushThenFail(u32),
        /// Fails before changing anything.
        Refuse,
    }

    impl sealed::Sealed for Log {
        type Fixed = ();

        fn fixed(&self) {}

        fn warm_query_tables(&self, budget: usize) -> usize {
            core::hint::black_box(self.0.iter().sum::<u32>());
            (self.0.len() * 4).min(budget)
        }
    }

    impl Replica for Log {
        type Op = LogOp;

        fn apply_op(&mut self, op: &LogOp) -> Result<()> {
            match op {
                LogOp::Push(x) => self.0.push(*x),
                LogOp::PushThenFail(x) => {
                    self.0.push(*x);
                    return Err(Error::CapacityOverflow("test"));
                }
                LogOp::Refuse => return Err(Error::UnknownId(0)),
            }
            Ok(())
        }

        fn failed_op_changed_nothing(error: &Error) -> bool {
            matches!(error, Error::UnknownId(_))
        }
    }

    /// A write that failed after changing the published copy is not lost
    /// on the other copy: the standby is rebuilt from the published one.
    #[test]
    fn a_write_that_failed_half_way_does_not_split_the_copies() {
        let shared = ConcurrentIndex::new(Log::default());
        let mut model = Log::default();
        let ops = [
            LogOp::Push(1),
            LogOp::PushThenFail(2),
            LogOp::Push(3),
            LogOp::Refuse,
            LogOp::Push(4),
            LogOp::PushThenFail(5),
            LogOp::PushThenFail(6),
            LogOp::Push(7),
            LogOp::Push(8),
        ];
        for op in ops {
            let expect_err = matches!(op, LogOp::PushThenFail(_) | LogOp::Refuse);
            let _ = model.apply_op(&op);
            let result = shared.apply(vec![op]).pop().unwrap();
            assert_eq!(result.is_err(), expect_err);
            assert_eq!(*shared.snapshot(), model);
        }
        // Both copies: each write swaps them.
        for x in [9, 10] {
            model.0.push(x);
            shared.apply(vec![LogOp::Push(x)]);
            assert_eq!(*shared.snapshot(), model);
        }
    }
}

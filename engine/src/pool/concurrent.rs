//! [`ConcurrentIndex`]: a [`SlicedIndex`] that queries and writes may use at
//! the same time from different threads.
//!
//! # Design note: left-right copies behind an atomic pointer swap
//!
//! Two copies of the index exist. Readers load the *current* copy with one
//! atomic pointer load (`arc_swap::ArcSwap::load_full`, an `Arc` clone) and
//! keep it for the whole batch, so a query sees one state from start to end.
//! The single writer (writers queue on a mutex, readers never touch it)
//! edits the *standby* copy, which no reader can reach, then publishes it
//! with one atomic swap; the copy it replaced becomes the standby. Before the
//! next write the writer waits until the last reader of that copy has let go
//! (`Arc::get_mut` succeeds) and replays the writes it missed, so both copies
//! stay equal. Hence:
//!
//! - a reader is never blocked: a write costs readers one pointer swap;
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
//! `write cost` rows); measured on a shared 2-core machine, per write:
//!
//! | index (one shard)         | write          | left-right | copy-on-write |
//! |---------------------------|----------------|-----------:|--------------:|
//! | `full` N = 10 000, 123 MB | `insert_key`   |   0.001 ms |      120.7 ms |
//! | `full` N = 10 000, 123 MB | `update_filter`|   0.173 ms |       46.0 ms |
//! | `full` N = 1 000, 12 MB   | `insert_key`   |   0.001 ms |       12.4 ms |
//! | `full` N = 1 000, 12 MB   | `update_filter`|   0.082 ms |        3.1 ms |
//!
//! The left-right scheme costs each write twice (once per copy) plus the
//! wait for readers of the standby, at the price of twice the memory once
//! every shard has been written. Epochs (`crossbeam-epoch`) would still need
//! a copy per write, only reclaimed later; narrower shards
//! (`SlicedConfig::max_shard_columns`) shrink the copy but slow every query
//! (more, shorter row runs). Writers that batch many writes should use
//! [`ConcurrentIndex::apply`]: one publish, one wait.
//!
//! A reader that keeps a snapshot for long makes the next write wait; after
//! [`DRAIN_PATIENCE`] the writer stops waiting and falls back to
//! copy-on-write for that write (correct, only slower).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use crate::error::Result;
use crate::filter::BloomFilter;
use crate::hash::{Key, KeyHash};
use crate::params::BloomParams;
use crate::sliced::SlicedIndex;

/// How long a writer waits for the readers of the standby copy before it
/// copies the standby instead (copy-on-write, sharing unchanged shards).
/// Longer than a 100 000-key batch on `full` N = 10 000 (about 0.15 s on
/// one core), so the fallback only fires for snapshots kept on purpose.
pub const DRAIN_PATIENCE: Duration = Duration::from_secs(1);

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
    /// [`SlicedIndex::delete_filter`].
    DeleteFilter {
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
    /// [`SlicedIndex::insert_key_hash`].
    InsertKey {
        /// Filter id.
        id: u64,
        /// Hash of the key (see [`BloomParams::hash`]).
        hash: KeyHash,
    },
}

impl WriteOp {
    fn apply_to(&self, index: &mut SlicedIndex) -> Result<()> {
        match self {
            WriteOp::InsertFilter { id, filter } => index.insert_filter(*id, filter),
            WriteOp::DeleteFilter { id } => index.delete_filter(*id),
            WriteOp::UpdateFilter { id, filter } => index.update_filter(*id, filter),
            WriteOp::InsertKey { id, hash } => index.insert_key_hash(*id, *hash),
        }
    }
}

/// The writer's side: the copy no reader can load, and the writes it missed.
#[derive(Debug)]
struct WriterSide {
    /// `None` only inside [`ConcurrentIndex::apply`].
    standby: Option<Arc<SlicedIndex>>,
    /// Writes published on the current copy and not yet on the standby.
    missed: Vec<WriteOp>,
}

/// A [`SlicedIndex`] shared by concurrent readers and writers (see the
/// module's design note): queries load a snapshot with one atomic load,
/// writes publish with one atomic swap.
///
/// ```
/// use bloomslice::{BloomFilter, BloomParams, ConcurrentIndex, SlicedIndex};
///
/// let params = BloomParams::new(1024, 3)?;
/// let index = ConcurrentIndex::new(SlicedIndex::new(params));
/// let mut f = BloomFilter::new(params)?;
/// f.insert("apple");
/// index.insert_filter(1, &f)?; // &self: callable while others query
/// assert_eq!(index.snapshot().query("apple"), vec![1]);
/// # Ok::<(), bloomslice::Error>(())
/// ```
#[derive(Debug)]
pub struct ConcurrentIndex {
    params: BloomParams,
    current: ArcSwap<SlicedIndex>,
    writer: Mutex<WriterSide>,
}

impl ConcurrentIndex {
    /// Shares `index` between readers and writers. The standby copy is a
    /// clone that shares every shard until it is first written.
    pub fn new(index: SlicedIndex) -> Self {
        let standby = Arc::new(index.clone());
        ConcurrentIndex {
            params: *index.params(),
            current: ArcSwap::from_pointee(index),
            writer: Mutex::new(WriterSide { standby: Some(standby), missed: Vec::new() }),
        }
    }

    /// The parameters every filter shares.
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// The current state, for queries. One atomic load and a reference
    /// count increment; allocates nothing.
    ///
    /// Keep snapshots short-lived: the second write after this load waits
    /// for it to be dropped (at most [`DRAIN_PATIENCE`]).
    pub fn snapshot(&self) -> Arc<SlicedIndex> {
        // ArcSwap::load_full: a SeqCst load of the pointer plus a
        // reference count increment, lock-free for readers.
        self.current.load_full()
    }

    /// Applies `ops` in order and publishes them together: a query sees all
    /// of the successful ones or none. Returns each op's result; a failed op
    /// changes nothing (as in [`SlicedIndex`]) and the others still apply.
    ///
    /// Blocks other writers, never readers. May wait for readers of the
    /// standby copy (see the module's design note).
    pub fn apply(&self, ops: Vec<WriteOp>) -> Vec<Result<()>> {
        // A panic while the lock was held can only come from a SlicedIndex
        // operation, which leaves the copy consistent; keep going.
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let missed = core::mem::take(&mut w.missed);
        let (mut standby, missed) = match w.standby.take() {
            Some(standby) => (standby, missed),
            // Only after a panic inside a previous write: restart from the
            // published copy, which already holds every missed write.
            None => (self.current.load_full(), Vec::new()),
        };
        let copy = exclusive(&mut standby);
        for op in missed {
            // Succeeded on the twin copy, whose state this copy had then.
            let replayed = op.apply_to(copy);
            debug_assert!(replayed.is_ok(), "replay diverged: {replayed:?}");
        }
        let results: Vec<Result<()>> = ops.iter().map(|op| op.apply_to(copy)).collect();
        w.missed = ops.into_iter().zip(&results).filter(|(_, r)| r.is_ok()).map(|(op, _)| op).collect();
        // ArcSwap::swap is SeqCst: every load after it returns `standby`,
        // and the copy's writes above happen-before any such load.
        let old = self.current.swap(standby);
        w.standby = Some(old);
        results
    }

    /// Writes one op; see [`ConcurrentIndex::apply`].
    fn apply_one(&self, op: WriteOp) -> Result<()> {
        self.apply(vec![op]).pop().unwrap_or(Ok(()))
    }

    /// [`SlicedIndex::insert_filter`], concurrently with queries.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::insert_filter`]; nothing is published then.
    pub fn insert_filter(&self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.apply_one(WriteOp::InsertFilter { id, filter: filter.clone() })
    }

    /// [`SlicedIndex::delete_filter`], concurrently with queries.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::delete_filter`].
    pub fn delete_filter(&self, id: u64) -> Result<()> {
        self.apply_one(WriteOp::DeleteFilter { id })
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
        self.apply_one(WriteOp::InsertKey { id, hash: self.params.hash(key) })
    }
}

/// Waits until no reader holds `copy`, then returns it mutably. After
/// [`DRAIN_PATIENCE`], clones it instead (`Arc::make_mut`: the clone shares
/// shards with the readers' copy and copies those it writes).
fn exclusive(copy: &mut Arc<SlicedIndex>) -> &mut SlicedIndex {
    let start = Instant::now();
    let mut round = 0u32;
    // Arc::get_mut checks the strong and weak counts with Acquire loads, so
    // the readers' last accesses happen-before our writes.
    while Arc::get_mut(copy).is_none() {
        if start.elapsed() > DRAIN_PATIENCE {
            break;
        }
        round += 1;
        if round < 64 {
            core::hint::spin_loop();
        } else if round < 128 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Arc::make_mut(copy)
}

//! Loom models of the left-right publish (`concurrent.rs`): a writer
//! publishing while readers, and snapshots held as the pool holds them,
//! are on the old copy. Each copy's contents sit in a loom-watched cell, so
//! a write to a copy a reader can still read, or a read of a published
//! copy that does not see the writes before its publish, is a data race
//! loom reports.
//!
//! `arc_swap::ArcSwap` is replaced by the stand-in in `crate::sync` (loom
//! cannot see into arc-swap's atomics); `Arc` and the writer's mutex are
//! loom's.

use std::time::Duration;

use super::{ConcurrentIndex, Replica, sealed};
use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};
use crate::pool::loom_tests::{model, pool_with_worker};
use crate::pool::{PoolResults, Served, ServedSealed};
use crate::score::Threshold;
use crate::sliced::BatchResults;
use crate::sync::{Arc, UnsafeCell};

/// A copy whose one value loom watches.
#[derive(Debug)]
struct Watched(UnsafeCell<u32>);

// SAFETY: the cell is read through `&` by readers and written through
// `&mut` by the writer; that these never overlap without a happens-before
// edge is what the models check.
unsafe impl Sync for Watched {}

impl Watched {
    fn get(&self) -> u32 {
        // SAFETY: a read of a `u32`; see the `Sync` impl.
        self.0.with(|p| unsafe { *p })
    }
}

impl Clone for Watched {
    fn clone(&self) -> Self {
        Watched(UnsafeCell::new(self.get()))
    }
}

impl sealed::Sealed for Watched {
    type Fixed = ();

    fn fixed(&self) {}

    fn warm_query_tables(&self, _: usize) -> usize {
        // The writer reads the copy it is about to publish.
        self.get() as usize
    }
}

impl Replica for Watched {
    /// Adds this much.
    type Op = u32;

    fn apply_op(&mut self, op: &u32) -> Result<()> {
        // SAFETY: `&mut self`: the writer holds the copy alone; see the
        // `Sync` impl.
        self.0.with_mut(|p| unsafe { *p += op });
        Ok(())
    }

    fn failed_op_changed_nothing(_: &Error) -> bool {
        true
    }
}

impl ServedSealed for Watched {}

/// A key task answers, for each key, the copy's value as its one id.
impl Served for Watched {
    type Scratch = ();

    fn filters(&self) -> usize {
        1
    }

    fn key_hash<K: Key + ?Sized>(&self, key: &K) -> KeyHash {
        key.key_hash(0)
    }

    fn query_batch_with<K: Key>(&self, keys: &[K], out: &mut BatchResults, (): &mut ()) {
        out.clear();
        for _ in keys {
            out.push_answer(&[u64::from(self.get())]);
        }
    }

    fn query_threshold_with<K: Key>(&self, _: &[K], _: Threshold, (): &mut (), out: &mut Vec<(u64, u32)>) {
        out.clear();
    }

    fn reserve(&self, _: usize, _: bool, (): &mut (), _: &mut Vec<(u64, u32)>) {}
}

/// A pool batch holds its snapshot (in its job, until its last task ends)
/// while a writer publishes twice: the second write edits the copy the
/// batch queries, so it must wait for the batch to let go; every task of
/// the batch answers from the one state the batch loaded.
#[test]
fn loom_pool_batch_holds_its_snapshot_across_publishes() {
    model(|| {
        let index = Arc::new(ConcurrentIndex::new(Watched(UnsafeCell::new(0))));
        let mut results = PoolResults::new();
        let keys = [KeyHash::from_u64(1), KeyHash::from_u64(2)];
        let (job, _) = results.prepare_copied(index.snapshot(), &keys, |_| 2).unwrap();
        let (shared, w) = pool_with_worker(vec![job]);
        let writer = {
            let index = Arc::clone(&index);
            loom::thread::spawn(move || {
                assert!(index.apply(vec![1]).iter().all(Result::is_ok));
                assert!(index.apply(vec![2]).iter().all(Result::is_ok));
            })
        };
        results.finish(&shared, Duration::ZERO, true).unwrap();
        assert!(results.iter().all(|ids| ids == [0]), "{:?}", results.iter().collect::<Vec<_>>());
        writer.join().unwrap();
        w.join().unwrap();
        assert_eq!(index.read(Watched::get), 3);
    });
}

/// Two writes while one reader queries through guards (`read`) and
/// another keeps a snapshot across calls (as a pool batch does): the
/// second write edits the copy the readers may still hold, so it must wait
/// for them; a reader sees one state per guard or snapshot, and states
/// only move forward.
#[test]
fn loom_publish_while_readers_hold_the_old_copy() {
    model(|| {
        let index = Arc::new(ConcurrentIndex::new(Watched(UnsafeCell::new(0))));
        let reader = {
            let index = Arc::clone(&index);
            loom::thread::spawn(move || {
                let first = index.read(Watched::get);
                let second = index.read(Watched::get);
                assert!(first <= second && [0, 1, 3].contains(&second), "{first} {second}");
            })
        };
        let holder = {
            let index = Arc::clone(&index);
            loom::thread::spawn(move || {
                let snapshot = index.snapshot();
                let before = snapshot.get();
                loom::thread::yield_now();
                // The same state however many writes were published since.
                assert_eq!(snapshot.get(), before);
                drop(snapshot);
                assert!(index.read(Watched::get) >= before);
            })
        };
        assert!(index.apply(vec![1]).iter().all(Result::is_ok));
        assert!(index.apply(vec![2]).iter().all(Result::is_ok));
        assert_eq!(index.read(Watched::get), 3);
        reader.join().unwrap();
        holder.join().unwrap();
        // The standby caught up: the next write publishes 3 + 4 on it.
        assert!(index.apply(vec![4]).iter().all(Result::is_ok));
        assert_eq!(index.read(Watched::get), 7);
    });
}

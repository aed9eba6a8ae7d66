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

use super::{ConcurrentIndex, Replica, sealed};
use crate::error::{Error, Result};
use crate::pool::loom_tests::model;
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

    fn pool_snapshot(_: Arc<Self>) -> crate::pool::Snapshot {
        unreachable!("the pool never sees this test state")
    }

    fn filters(&self) -> usize {
        1
    }

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

//! A writer that publishes a list of writes one at a time while readers
//! check what they see, shared by the stress tests of `pool.rs` and
//! `collection_pool.rs` (included with `#[path]`). A reader that loads
//! `done` before a batch and `started` after it knows the batch saw one of
//! the states `done..=started`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

/// How far the writer has got.
#[derive(Default)]
pub struct Progress {
    /// `j + 1` once write `j` is about to be published.
    pub started: AtomicUsize,
    /// `j + 1` once write `j` is published.
    pub done: AtomicUsize,
    /// Set once the writer has stopped (every write made, or the deadline
    /// passed).
    pub stop: AtomicBool,
}

impl Progress {
    /// Publishes `ops` in order until `deadline`, one a call of
    /// `publish(j, op)`, each recorded in `started` before and in `done`
    /// after, then runs `after_each()`; sets `stop` at the end. Every store
    /// is `SeqCst`, as the readers' loads are.
    pub fn publish_each<T>(
        &self,
        ops: &[T],
        deadline: Instant,
        mut publish: impl FnMut(usize, &T),
        mut after_each: impl FnMut(),
    ) {
        for (j, op) in ops.iter().enumerate() {
            if Instant::now() > deadline {
                break;
            }
            self.started.store(j + 1, Ordering::SeqCst);
            publish(j, op);
            self.done.store(j + 1, Ordering::SeqCst);
            after_each();
        }
        self.stop.store(true, Ordering::SeqCst);
    }
}

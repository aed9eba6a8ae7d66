//! Batches of threshold queries ([`QueryPool::query_threshold_batch`]):
//! many multi-key queries (many reads at once) scored on one state of the
//! index, split by query into tasks that run on the pool's workers.

use crate::sync::Arc;

use super::served::Served;
use super::{MAX_TASKS_PER_BATCH, QueryPool};
use crate::concurrent::{ConcurrentIndex, Replica};
use crate::hash::Key;
use crate::score::{Threshold, ThresholdResults};

use super::job::{Job, WaitOnDrop};

impl QueryPool {
    /// Runs the threshold query [`SlicedIndex::query_threshold_into`] for
    /// every query of `queries` (each a slice of keys, for example a read's
    /// k-mers) on one state of `index`, and waits for the answers, which
    /// replace the contents of `results` (query `i`'s passing filters are
    /// `results.get(i)`, `(id, count)` by ascending id; the threshold is
    /// applied to each query's own length). The answers equal those of
    /// [`SlicedIndex::query_threshold_into`] called query by query on one
    /// snapshot of `index` (for a collection, those of
    /// [`SetIndex::query_threshold`](crate::collection::SetIndex::query_threshold)).
    ///
    /// Scheduled like [`QueryPool::query_batch`]: the caller loads one
    /// snapshot of the index and arms a job the pool keeps for reuse with a
    /// pointer to `queries` (not a copy: each task hashes its queries' keys
    /// as scoring reaches them); the queries are split into contiguous ranges of about equal
    /// key counts (`min(queries, workers x tasks_per_worker, 64)` ranges),
    /// which the pool's pinned workers claim and score, each with scratch
    /// it keeps for its lifetime. The waiting caller behaves as in
    /// `query_batch`: a batch of one query or of fewer than
    /// [`INLINE_TASKS`](super::INLINE_TASKS) `x`
    /// [`PoolConfig::min_keys_per_task`](super::PoolConfig::min_keys_per_task)
    /// keys runs on the caller alone; otherwise the caller runs unclaimed
    /// ranges itself when the batch's work (keys x filters) is at most
    /// [`PoolConfig::caller_help_work`](super::PoolConfig::caller_help_work),
    /// then spins briefly and parks until the workers are done. Once
    /// `results` and the pool are warm (as many batches in flight at once
    /// have run before), a batch allocates nothing.
    ///
    /// # Errors
    ///
    /// [`crate::error::Error::Pool`] with [`PoolError::TaskPanicked`](super::PoolError::TaskPanicked)
    /// if a range panicked; `results` is then empty and reusable, and the
    /// pool keeps serving later batches.
    ///
    /// [`SlicedIndex::query_threshold_into`]: crate::sliced::SlicedIndex::query_threshold_into
    pub fn query_threshold_batch<Q, K>(
        &self,
        index: &ConcurrentIndex<impl Replica + Served>,
        queries: &[Q],
        threshold: Threshold,
        results: &mut ThresholdResults,
    ) -> crate::error::Result<()>
    where
        Q: AsRef<[K]> + Sync,
        K: Key + Sync,
    {
        results.clear();
        let snapshot = index.snapshot();
        let filters = snapshot.filters().max(1);
        let job = self.shared.threshold_jobs.pop().unwrap_or_else(Job::new_shared);
        let max_tasks = (self.workers * self.tasks_per_worker).min(MAX_TASKS_PER_BATCH);
        // SAFETY: popped from the free list (or new), so idle and ours; this
        // call returns only once the batch is done (`wait` below), and if
        // anything unwinds first the guard waits: the tasks' reads of
        // `queries` end before `queries` can go.
        let prepared = unsafe { job.prepare_threshold(snapshot, queries, threshold, max_tasks) };
        let Some((tasks, keys)) = prepared else {
            // Empty batch: nothing armed, the job is still idle.
            let _ = self.shared.threshold_jobs.push(job);
            return Ok(());
        };
        let guard = WaitOnDrop(Arc::clone(&job));
        let inline = tasks == 1 || self.runs_inline(keys);
        if !inline {
            self.push_entry(Arc::clone(&job));
        }
        let help = inline || keys.saturating_mul(filters) <= self.caller_help_work;
        if help && !job.is_done() {
            job.help(&self.shared);
        }
        job.wait(self.wait_spin);
        drop(guard);
        let outcome = job.take_threshold(results);
        // A full free list (more batches in flight than it holds) frees it.
        let _ = self.shared.threshold_jobs.push(job);
        outcome
    }
}

//! Batches of threshold queries ([`QueryPool::query_threshold_batch`]):
//! many multi-key queries (many reads at once) scored on one state of the
//! index, split across threads by query.

use super::{PoolError, QueryPool};
use crate::concurrent::ConcurrentIndex;
use crate::hash::Key;
use crate::score::{Threshold, ThresholdPart, ThresholdResults};
use crate::sliced::SlicedIndex;

impl QueryPool {
    /// Runs the threshold query [`SlicedIndex::query_threshold_into`] for
    /// every query of `queries` (each a slice of keys, for example a read's
    /// k-mers) on one state of `index`, and waits for the answers, which
    /// replace the contents of `results` (query `i`'s passing filters are
    /// `results.get(i)`, `(id, count)` by ascending id; the threshold is
    /// applied to each query's own length).
    ///
    /// The queries are split into as many contiguous ranges as the pool has
    /// workers, balanced by key count, each scored with its own scratch
    /// buffers. The ranges run on scoped threads, the calling thread taking
    /// the first, rather than on the pool's pinned workers: a multi-key
    /// query is long (hundreds of keys), so a thread start per range costs
    /// little beside it, and the pool's job hand-over carries key batches
    /// only. With one worker, or one query, everything runs on the caller.
    /// Once `results` is warm, the scoring itself allocates nothing.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Pool`] with [`PoolError::TaskPanicked`] if a range panicked; `results` is then
    /// empty and reusable. [`PoolError::Spawn`] if a thread could not be
    /// started.
    pub fn query_threshold_batch<Q, K>(
        &self,
        index: &ConcurrentIndex,
        queries: &[Q],
        threshold: Threshold,
        results: &mut ThresholdResults,
    ) -> crate::Result<()>
    where
        Q: AsRef<[K]> + Sync,
        K: Key + Sync,
    {
        results.clear();
        let snapshot = index.snapshot();
        let threads = self.workers.min(queries.len()).max(1);
        if results.parts.len() < threads {
            results.parts.resize_with(threads, ThresholdPart::default);
        }
        let ranges = split_by_keys(queries, threads);
        let parts = &mut results.parts[..threads];
        let outcome = std::thread::scope(|scope| -> Result<(), PoolError> {
            let (first, rest) = parts.split_first_mut().expect("at least one part");
            let mut handles = Vec::with_capacity(rest.len());
            for (part, range) in rest.iter_mut().zip(&ranges[1..]) {
                let (index, queries) = (&*snapshot, &queries[range.clone()]);
                let handle = std::thread::Builder::new()
                    .name("bloomslice-score".into())
                    .spawn_scoped(scope, move || score_part(index, queries, threshold, part))
                    .map_err(|e| PoolError::Spawn(e.to_string()))?;
                handles.push(handle);
            }
            let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                score_part(&snapshot, &queries[ranges[0].clone()], threshold, first);
            }));
            let mut panicked = mine.is_err();
            for handle in handles {
                panicked |= handle.join().is_err();
            }
            if panicked { Err(PoolError::TaskPanicked) } else { Ok(()) }
        });
        if let Err(e) = outcome {
            for part in &mut results.parts {
                part.hits.clear();
                part.ends.clear();
            }
            return Err(e.into());
        }
        let ThresholdResults { hits, ends, parts } = results;
        for part in &parts[..threads] {
            let base = hits.len();
            hits.extend_from_slice(&part.hits);
            ends.extend(part.ends.iter().map(|&e| base + e));
        }
        Ok(())
    }
}

/// Scores `queries` one after the other into `part`.
fn score_part<Q: AsRef<[K]>, K: Key>(
    index: &SlicedIndex,
    queries: &[Q],
    threshold: Threshold,
    part: &mut ThresholdPart,
) {
    let ThresholdPart { hits, ends, out, scratch } = part;
    hits.clear();
    ends.clear();
    for query in queries {
        index.query_threshold_into(query.as_ref(), threshold, scratch, out);
        hits.extend_from_slice(out);
        ends.push(hits.len());
    }
}

/// `parts` contiguous ranges of `queries` with about equal key counts
/// (every range non-empty when there are at least `parts` queries).
fn split_by_keys<Q: AsRef<[K]>, K>(queries: &[Q], parts: usize) -> Vec<core::ops::Range<usize>> {
    let total: usize = queries.iter().map(|q| q.as_ref().len()).sum();
    let mut ranges = Vec::with_capacity(parts);
    let mut start = 0;
    let mut seen = 0;
    for p in 0..parts {
        let left_parts = parts - p;
        let mut end = start;
        let goal = (total * (p + 1)).div_ceil(parts);
        // Take at least one query, leave at least one per later range.
        while end < queries.len() && (end == start || seen < goal) && queries.len() - end > left_parts - 1 {
            seen += queries[end].as_ref().len();
            end += 1;
        }
        if p + 1 == parts {
            end = queries.len();
        }
        ranges.push(start..end);
        start = end;
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cover_every_query_in_order() {
        for n in 0..40usize {
            let queries: Vec<Vec<u8>> = (0..n).map(|i| vec![0; (i * 37) % 11]).collect();
            for parts in 1..6 {
                let ranges = split_by_keys::<_, u8>(&queries, parts);
                assert_eq!(ranges.len(), parts);
                assert_eq!(ranges.first().map(|r| r.start), Some(0));
                assert_eq!(ranges.last().map(|r| r.end), Some(n));
                for w in ranges.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                }
                if n >= parts {
                    assert!(ranges.iter().all(|r| !r.is_empty()), "{n} {parts} {ranges:?}");
                }
            }
        }
    }
}

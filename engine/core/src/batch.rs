//! [`BatchResults`]: the per-key answers of a batch query, the output of
//! every index's `query_batch` and of the pool's key tasks. A module of its
//! own (re-exported as `sliced::BatchResults`) so that the pool, which
//! fills them, does not depend on the index types it serves.

/// The per-key results of [`SlicedIndex::query_batch`](crate::sliced::SlicedIndex::query_batch)
/// (and of every batch query of the crate), in a reusable buffer.
///
/// Keep one per thread and pass it to every batch: once its buffers have
/// grown to the batch size, a batch allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct BatchResults {
    pub(crate) ids: Vec<u64>,
    pub(crate) ends: Vec<usize>,
    pub(crate) positions: Vec<u32>,
    pub(crate) prefetch_rows: Vec<usize>,
    pub(crate) prefetch_first: Vec<usize>,
    /// The answers of each file and one key's merged ids, kept warm for
    /// an index that merges several files' batches
    /// ([`ShardedIndex`](crate::sharded::ShardedIndex)); empty otherwise.
    pub(crate) merge_parts: Vec<BatchResults>,
    pub(crate) merge_ids: Vec<u64>,
}

batch_answers!(BatchResults, ids: [u64], "key",
    /// The ids matching key `i` of the last batch (in index order, each once).
);

impl BatchResults {
    /// The whole last batch at once: every key's ids, key after key, and
    /// where each key's ids end (key `i` has `ids[ends[i - 1]..ends[i]]`,
    /// from 0 for key 0). For callers that copy a batch out in one go, such
    /// as the C ABI.
    ///
    /// ```
    /// use bloomslice::{BatchResults, BloomFilter, BloomParams, SlicedIndex};
    ///
    /// let params = BloomParams::for_capacity(100, 0.01)?;
    /// let mut index = SlicedIndex::new(params);
    /// let mut filter = BloomFilter::new(params)?;
    /// filter.insert("a");
    /// index.insert_filters(&[(3, &filter), (5, &filter)])?;
    /// let mut results = BatchResults::new();
    /// index.query_batch(&["a", "zzz-absent"], &mut results);
    /// let (ids, ends) = results.flat();
    /// assert_eq!(&ids[..ends[0]], results.get(0).unwrap());
    /// assert_eq!(&ids[ends[0]..ends[1]], results.get(1).unwrap());
    /// assert_eq!(ends.len(), 2);
    /// # Ok::<(), bloomslice::Error>(())
    /// ```
    pub fn flat(&self) -> (&[u64], &[usize]) {
        (&self.ids, &self.ends)
    }

    /// The buffers of a merge of several batches (see `merge_parts`),
    /// taken out while the parts are answered into them.
    pub(crate) fn take_merge_buffers(&mut self) -> (Vec<BatchResults>, Vec<u64>) {
        (core::mem::take(&mut self.merge_parts), core::mem::take(&mut self.merge_ids))
    }

    /// Gives back what [`BatchResults::take_merge_buffers`] took.
    pub(crate) fn put_merge_buffers(&mut self, parts: Vec<BatchResults>, ids: Vec<u64>) {
        self.merge_parts = parts;
        self.merge_ids = ids;
    }

    /// Total matches over all keys of the last batch.
    pub fn total_matches(&self) -> usize {
        self.ids.len()
    }

    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        self.ends.clear();
    }

    /// Appends the answer of the next key.
    pub(crate) fn push_answer(&mut self, ids: &[u64]) {
        self.ids.extend_from_slice(ids);
        self.ends.push(self.ids.len());
    }
}

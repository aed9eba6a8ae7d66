//! [`NaiveIndex`]: a list of [`BloomFilter`]s checked one by one.
//!
//! The reference every faster index is compared against (in tests, fuzzers
//! and benchmarks) and the baseline of every speed ratio.

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::filter::BloomFilter;
use crate::hash::KeyHash;
use crate::params::BloomParams;

/// A list of filters, each tested in turn. Simple enough to be obviously
/// right.
///
/// ```
/// use bloomslice::{BloomFilter, BloomParams, NaiveIndex};
///
/// let params = BloomParams::for_capacity(1_000, 0.01)?;
/// let mut index = NaiveIndex::new(params);
/// let mut fruit = BloomFilter::new(params)?;
/// fruit.insert("apple");
/// index.insert_filter(7, &fruit)?;
/// index.insert_key(7, "pear")?;
/// assert_eq!(index.query("apple"), vec![7]);
/// assert_eq!(index.query("pear"), vec![7]);
/// index.remove_set(7)?;
/// assert!(index.query("apple").is_empty());
/// # Ok::<(), bloomslice::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct NaiveIndex {
    params: BloomParams,
    filters: Vec<(u64, BloomFilter)>,
    by_id: HashMap<u64, usize>,
}

key_verbs!(NaiveIndex: crate::error::Error, query);

impl NaiveIndex {
    /// An empty index.
    pub fn new(params: BloomParams) -> Self {
        NaiveIndex { params, filters: Vec::new(), by_id: HashMap::new() }
    }

    /// The shared parameters.
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// Number of filters.
    pub fn len(&self) -> usize {
        self.filters.len()
    }

    /// Whether the index holds no filter.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// The filters with their ids, in insertion order (deletes swap the last
    /// filter into the hole).
    pub fn filters(&self) -> &[(u64, BloomFilter)] {
        &self.filters
    }

    /// The filter stored under `id`, borrowed.
    pub fn filter(&self, id: u64) -> Option<&BloomFilter> {
        self.by_id.get(&id).map(|&i| &self.filters[i].1)
    }

    /// Adds a filter under a new id.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::DuplicateId`]; unchanged after an error.
    pub fn insert_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        if self.by_id.contains_key(&id) {
            return Err(Error::DuplicateId(id));
        }
        self.by_id.insert(id, self.filters.len());
        self.filters.push((id, filter.clone()));
        Ok(())
    }

    /// Removes a filter.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; unchanged after an error.
    pub fn remove_set(&mut self, id: u64) -> Result<()> {
        let i = self.by_id.remove(&id).ok_or(Error::UnknownId(id))?;
        self.filters.swap_remove(i);
        if let Some((moved, _)) = self.filters.get(i) {
            self.by_id.insert(*moved, i);
        }
        Ok(())
    }

    /// ORs `filter` into filter `id`.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::UnknownId`]; unchanged after an error.
    pub fn update_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        let i = *self.by_id.get(&id).ok_or(Error::UnknownId(id))?;
        self.filters[i].1.union_with(filter)?;
        Ok(())
    }

    /// Inserts a key, by its hash, into filter `id`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`].
    pub fn insert_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<()> {
        let i = *self.by_id.get(&id).ok_or(Error::UnknownId(id))?;
        self.filters[i].1.insert_hash(hash);
        Ok(())
    }

    /// Ids of the filters that may contain the key, into `out` (cleared first).
    /// Positions are computed once and reused for every filter.
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        out.clear();
        let pos = self.params.probes(hash);
        let pos: &[u32] = &pos;
        out.extend(self.filters.iter().filter(|(_, f)| f.contains_positions(pos)).map(|(id, _)| *id));
    }

    /// Whether a filter is stored under `id`.
    pub fn contains(&self, id: u64) -> bool {
        self.filter(id).is_some()
    }

    /// The filter stored under `id` (a copy).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`].
    pub fn filter_cloned(&self, id: u64) -> Result<BloomFilter> {
        self.filter(id).cloned().ok_or(Error::UnknownId(id))
    }

    /// Checks that ids are unique and every filter has the index's
    /// parameters.
    ///
    /// # Errors
    ///
    /// A description of the first broken invariant.
    pub fn validate(&self) -> crate::error::Result<()> {
        let mut ids: Vec<u64> = self.filters.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err(invalid!("an id is stored twice"));
        }
        match self.filters.iter().find(|(_, f)| f.params() != &self.params) {
            Some((id, _)) => Err(invalid!("filter {id} has other parameters")),
            None => Ok(()),
        }
    }

    /// Bytes held: every filter plus the list and the id map.
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.filters.capacity() * core::mem::size_of::<(u64, BloomFilter)>()
            + self.filters.iter().map(|(_, f)| f.memory_bytes() - core::mem::size_of::<BloomFilter>()).sum::<usize>()
            + self.by_id.allocation_size()
    }
}

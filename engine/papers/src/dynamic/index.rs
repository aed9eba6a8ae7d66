//! [`DynamicSlicedIndex`]: a [`SlicedIndex`] of dynamic sets, each owning
//! one column per member filter and reported once by a query.

use hashbrown::HashMap;

use super::Result;
use super::{Change, DeleteOutcome, DynamicBloomFilter, DynamicDelta, DynamicError};
use bloomslice::BloomParams;
use bloomslice::Error;
use bloomslice::{BatchResults, SlicedIndex};
use bloomslice::{Key, KeyHash};

#[derive(Clone, Debug)]
struct DynamicSet {
    filter: DynamicBloomFilter,
    /// Column id of each member, in member order.
    columns: Vec<u64>,
}

/// A [`SlicedIndex`] of dynamic sets: each set owns one column per member
/// filter (holding its bit view) and is reported once by a query.
///
/// ```
/// use bloomslice::BloomParams;
/// use bloomslice_papers::DynamicSlicedIndex;
///
/// let mut index = DynamicSlicedIndex::new(BloomParams::new(2048, 4)?, 16)?;
/// index.insert_set(9)?;
/// for i in 0..100u32 {
///     index.insert_key(9, &i.to_le_bytes())?;
/// }
/// assert!(index.columns() >= 7); // ceil(100 / 16) members
/// assert_eq!(index.query(&5u32.to_le_bytes()), vec![9]);
/// # Ok::<(), bloomslice_papers::DynamicError>(())
/// ```
#[derive(Clone, Debug)]
pub struct DynamicSlicedIndex {
    index: SlicedIndex,
    capacity: u64,
    sets: HashMap<u64, DynamicSet>,
    /// Column id -> set id ([`NO_OWNER`] for a free column id): a dense
    /// table, since column ids are small and reused (`free_columns`), so a
    /// query maps its matches with one load each instead of a hash lookup.
    owner: Vec<u64>,
    /// Released column ids, reused before new ones.
    free_columns: Vec<u64>,
}

/// `owner` entry of a column id not in use.
const NO_OWNER: u64 = u64::MAX;

id_verbs!(DynamicSlicedIndex, sets);
key_verbs!(DynamicSlicedIndex: DynamicError, query);
delegate_filter_index!(
    DynamicSlicedIndex,
    DynamicBloomFilter,
    DynamicError,
    new_filter: |s| DynamicBloomFilter::new(*s.params(), s.capacity()),
    batched
);

impl DynamicSlicedIndex {
    /// An empty index of dynamic sets whose members have `params` and
    /// capacity `capacity`.
    ///
    /// # Errors
    ///
    /// [`DynamicError::ZeroCapacity`].
    pub fn new(params: BloomParams, capacity: u64) -> Result<Self> {
        if capacity == 0 {
            return Err(DynamicError::ZeroCapacity);
        }
        Ok(DynamicSlicedIndex {
            index: SlicedIndex::new(params),
            capacity,
            sets: HashMap::new(),
            owner: Vec::new(),
            free_columns: Vec::new(),
        })
    }

    /// The member filters' parameters.
    pub fn params(&self) -> &BloomParams {
        self.index.params()
    }

    /// Number of columns (member filters over all sets).
    pub fn columns(&self) -> usize {
        self.index.len()
    }

    /// The dynamic filter of set `id`.
    pub fn filter(&self, id: u64) -> Option<&DynamicBloomFilter> {
        self.sets.get(&id).map(|s| &s.filter)
    }

    /// Adds an empty dynamic set.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateId`] or an allocation failure; unchanged.
    pub fn insert_set(&mut self, id: u64) -> Result<()> {
        let filter = DynamicBloomFilter::new(*self.params(), self.capacity)?;
        self.insert_filter(id, &filter)
    }

    /// The member capacity every set's filter uses.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The dynamic filter of set `id` (a copy).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`].
    pub fn filter_cloned(&self, id: u64) -> Result<DynamicBloomFilter> {
        self.filter(id).cloned().ok_or(Error::UnknownId(id).into())
    }

    /// Bytes held: the bit-sliced index of member columns plus every set's
    /// counting members.
    pub fn memory_bytes(&self) -> usize {
        let members: usize =
            self.sets.values().flat_map(|s| s.filter.members.iter()).map(|m| m.filter.memory_bytes()).sum();
        self.index.memory_bytes() + members + self.owner.capacity() * 8
    }

    /// Adds a set given by its dynamic filter.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateId`] or [`Error::ParamsMismatch`],
    /// [`DynamicError::CapacityMismatch`]; unchanged.
    pub fn insert_filter(&mut self, id: u64, filter: &DynamicBloomFilter) -> Result<()> {
        if self.sets.contains_key(&id) {
            return Err(Error::DuplicateId(id).into());
        }
        if filter.params != *self.params() {
            return Err(Error::ParamsMismatch { expected: *self.params(), found: filter.params }.into());
        }
        if filter.capacity != self.capacity {
            return Err(DynamicError::CapacityMismatch { expected: self.capacity, found: filter.capacity });
        }
        self.sets.insert(id, DynamicSet { filter: filter.clone(), columns: Vec::new() });
        if let Err(e) = self.resync(id) {
            let set = self.sets.remove(&id).expect("just inserted");
            for col in set.columns {
                let _ = self.index.remove_set(col);
                self.owner[col as usize] = NO_OWNER;
                self.free_columns.push(col);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Removes set `id` and returns its dynamic filter.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; unchanged.
    pub fn remove_set(&mut self, id: u64) -> Result<()> {
        self.take_filter(id).map(drop)
    }

    /// Removes set `id` and returns its dynamic filter; its columns are
    /// freed for reuse.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; unchanged.
    pub fn take_filter(&mut self, id: u64) -> Result<DynamicBloomFilter> {
        let set = self.sets.remove(&id).ok_or(Error::UnknownId(id))?;
        for col in &set.columns {
            self.index.remove_set(*col)?;
            self.owner[*col as usize] = NO_OWNER;
            self.free_columns.push(*col);
        }
        Ok(set.filter)
    }

    /// Makes the set's columns exactly its members' bit views (one column
    /// per member, extra columns released).
    fn resync(&mut self, id: u64) -> Result<()> {
        let set = self.sets.get_mut(&id).ok_or(Error::UnknownId(id))?;
        let views = set.filter.bit_views()?;
        while set.columns.len() > views.len() {
            let col = set.columns.pop().expect("non-empty");
            self.index.remove_set(col)?;
            self.owner[col as usize] = NO_OWNER;
            self.free_columns.push(col);
        }
        for (i, view) in views.iter().enumerate() {
            if let Some(&col) = set.columns.get(i) {
                self.index.replace_column(col, view)?;
            } else {
                let col = self.free_columns.pop().unwrap_or(self.owner.len() as u64);
                if let Err(e) = self.index.insert_filter(col, view) {
                    if col < self.owner.len() as u64 {
                        self.free_columns.push(col);
                    }
                    return Err(e.into());
                }
                if col == self.owner.len() as u64 {
                    self.owner.push(id);
                } else {
                    self.owner[col as usize] = id;
                }
                set.columns.push(col);
            }
        }
        Ok(())
    }

    /// Inserts a key, by its hash, into set `id` (Algorithm 1; a new column when the set
    /// grows a member).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`] or an allocation failure.
    pub fn insert_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<()> {
        let set = self.sets.get_mut(&id).ok_or(Error::UnknownId(id))?;
        let before = set.filter.filter_count();
        let i = set.filter.try_insert_hash(hash)?;
        if set.filter.filter_count() != before {
            return self.resync(id);
        }
        let col = set.columns[i];
        let pos = self.index.params().probes(hash);
        self.index.set_column_bits(col, &pos, |_| true)?;
        Ok(())
    }

    /// Removes a key from set `id` (Algorithm 3) and rewrites the affected
    /// column bits (all the set's columns after a merge).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`] or [`DynamicError::NotPresent`]; unchanged.
    pub fn remove_key<K: Key + ?Sized>(&mut self, id: u64, key: &K) -> Result<DeleteOutcome> {
        let hash = self.params().hash(key);
        let set = self.sets.get_mut(&id).ok_or(Error::UnknownId(id))?;
        let (outcome, change) = set.filter.remove_tracked(hash)?;
        match change {
            Change::None => {}
            Change::All => self.resync(id)?,
            Change::Member(i) => {
                let f = &set.filter.members[i].filter;
                let pos = self.index.params().probes(hash);
                self.index.set_column_bits(set.columns[i], &pos, |p| f.counter(u64::from(p)) != 0)?;
            }
        }
        Ok(outcome)
    }

    /// Unions `other` into set `id` ([`DynamicBloomFilter::union_with`]).
    ///
    /// # Errors
    ///
    /// As [`DynamicBloomFilter::union_with`], or [`Error::UnknownId`].
    pub fn update_filter(&mut self, id: u64, other: &DynamicBloomFilter) -> Result<()> {
        let set = self.sets.get_mut(&id).ok_or(Error::UnknownId(id))?;
        set.filter.union_with(other)?;
        self.resync(id)
    }

    /// Applies a sync delta to set `id` ([`DynamicBloomFilter::apply_delta`]).
    ///
    /// # Errors
    ///
    /// As [`DynamicBloomFilter::apply_delta`], or [`Error::UnknownId`].
    pub fn apply_delta(&mut self, id: u64, delta: &DynamicDelta) -> Result<()> {
        let set = self.sets.get_mut(&id).ok_or(Error::UnknownId(id))?;
        set.filter.apply_delta(delta)?;
        self.resync(id)
    }

    /// [`DynamicSlicedIndex::query`] by hash into a caller buffer (cleared
    /// first).
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        self.index.query_hash_into(hash, out);
        for col in out.iter_mut() {
            *col = self.owner[*col as usize];
        }
        // Few matches per query: sorting them is cheaper than a seen-set.
        out.sort_unstable();
        out.dedup();
    }

    /// Queries a batch of keys ([`SlicedIndex::query_batch`], prefetching
    /// included); key `i`'s answer is `results.get(i)`: set ids, each once,
    /// ascending.
    pub fn query_batch<K: Key>(&self, keys: &[K], results: &mut BatchResults) {
        self.index.query_batch(keys, results);
        results.map_sort_dedup(|col| self.owner[col as usize]);
    }

    /// [`DynamicSlicedIndex::query_batch`] by the keys' hashes.
    pub fn query_batch_hashes(&self, hashes: &[KeyHash], results: &mut BatchResults) {
        self.index.query_batch_hashes(hashes, results);
        results.map_sort_dedup(|col| self.owner[col as usize]);
    }

    /// Checks the index, the filters, and that every column is its member's
    /// bit view.
    ///
    /// # Errors
    ///
    /// A description of the first broken invariant.
    pub fn validate(&self) -> bloomslice::Result<()> {
        self.index.validate()?;
        let total: usize = self.sets.values().map(|s| s.columns.len()).sum();
        let owned = self.owner.iter().filter(|&&o| o != NO_OWNER).count();
        if total != self.index.len() || total != owned || owned + self.free_columns.len() != self.owner.len() {
            return Err(invalid!(
                "{total} member columns, {} in the index, {owned} owners, {} free of {} column ids",
                self.index.len(),
                self.free_columns.len(),
                self.owner.len()
            ));
        }
        for (&id, set) in &self.sets {
            set.filter.validate()?;
            let views = set.filter.bit_views().map_err(|e| invalid!("{e}"))?;
            if views.len() != set.columns.len() {
                return Err(invalid!("set {id}: {} members, {} columns", views.len(), set.columns.len()));
            }
            for (view, col) in views.iter().zip(&set.columns) {
                if self.owner.get(*col as usize) != Some(&id) {
                    return Err(invalid!("set {id}: column {col} not owned"));
                }
                if self.index.filter_cloned(*col).map_err(|e| invalid!("{e}"))? != *view {
                    return Err(invalid!("set {id}: column {col} differs from its member"));
                }
            }
        }
        Ok(())
    }
}

//! [`FlatBloofiPaper`]: Flat-Bloofi exactly as Section 6 of the Bloofi paper
//! lays it out, kept as the baseline the benchmarks measure
//! [`bloomslice::SlicedIndex`] against.
//!
//! The paper's structures, one for one:
//!
//! - `ζ` *Flat-Bloofi arrays*, one per group of 64 filters, each an array of
//!   `m` 64-bit words: bit `j` of word `i` of array `g` is bit `i` of the
//!   filter at index `64 g + j`;
//! - the bitmap `β` of `L = 64 ζ` bits marking the indexes in use;
//! - a hash table from filter ids to indexes, and the array of ids by index.
//!
//! A query computes the `k` probe positions once and, for every array, ANDs
//! the `k` words they name (`k ζ` random reads in all) and reports the ids of
//! the set bits. Insert takes the first free index (a new array when there is
//! none) and ORs in the filter's set bits; update ORs in the new bits; delete
//! clears the filter's bit in all `m` words, or, when the filter was alone in
//! its array, removes the array, its 64 bits of `β` and its 64 ids and
//! shifts every later index down by 64 (the paper's compaction).
//!
//! The layout is the paper's on purpose, slow parts included (a separate
//! allocation per group, `k` scattered reads per group); the design notes
//! explain why [`bloomslice::SlicedIndex`] stores rows contiguously instead.

use hashbrown::HashMap;

use bloomslice::BloomFilter;
use bloomslice::BloomParams;
use bloomslice::KeyHash;
use bloomslice::{Error, Result};

/// Filters per Flat-Bloofi array: one per bit of a 64-bit word.
pub const FLAT_GROUP: usize = 64;

/// The Flat-Bloofi index of the Bloofi paper's Section 6, as written (see
/// the module docs).
///
/// ```
/// use bloomslice::{BloomFilter, BloomParams};
/// use bloomslice_papers::FlatBloofiPaper;
///
/// let params = BloomParams::for_capacity(1_000, 0.01)?;
/// let mut flat = FlatBloofiPaper::new(params);
/// let mut f = BloomFilter::new(params)?;
/// f.insert("apple");
/// flat.insert_filter(7, &f)?;
/// assert_eq!(flat.query("apple"), vec![7]);
/// flat.validate().unwrap();
/// # Ok::<(), bloomslice::Error>(())
/// ```
#[derive(Clone)]
pub struct FlatBloofiPaper {
    params: BloomParams,
    /// The `ζ` Flat-Bloofi arrays, `m` words each.
    arrays: Vec<Vec<u64>>,
    /// `β`: bit `j` of word `g` is set when index `64 g + j` is in use.
    beta: Vec<u64>,
    /// The id stored at each index (meaningless where `β` is clear).
    ids: Vec<u64>,
    /// Filter id to index.
    index_of: HashMap<u64, usize>,
}

debug_summary!(FlatBloofiPaper, |s| params: s.params, filters: s.len(), arrays: s.arrays.len());

id_verbs!(FlatBloofiPaper, index_of);
key_verbs!(FlatBloofiPaper: Error, query);
delegate_filter_index!(FlatBloofiPaper, BloomFilter, Error, new_filter: |s| BloomFilter::new(*s.params()));

impl FlatBloofiPaper {
    /// An empty index.
    pub fn new(params: BloomParams) -> Self {
        FlatBloofiPaper { params, arrays: Vec::new(), beta: Vec::new(), ids: Vec::new(), index_of: HashMap::new() }
    }

    /// The shared parameters.
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// Number of Flat-Bloofi arrays (the paper's `ζ`).
    pub fn arrays(&self) -> usize {
        self.arrays.len()
    }

    /// Storage cost as the paper estimates it (Section 7.1.1): the bytes of
    /// one filter times the number of filters rounded up to a multiple of
    /// 64, that is `ζ` arrays of `m` words.
    pub fn storage_bytes(&self) -> usize {
        self.arrays.len() * FLAT_GROUP * self.params.words() * 8
    }

    /// Bytes of memory actually held.
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.arrays.iter().map(|a| a.capacity() * 8).sum::<usize>()
            + self.arrays.capacity() * core::mem::size_of::<Vec<u64>>()
            + self.beta.capacity() * 8
            + self.ids.capacity() * 8
            + self.index_of.allocation_size()
    }

    fn index(&self, id: u64) -> Result<usize> {
        self.index_of.get(&id).copied().ok_or(Error::UnknownId(id))
    }

    /// ORs the set bits of `filter` into column `index`.
    fn or_column(&mut self, index: usize, filter: &BloomFilter) {
        let array = &mut self.arrays[index / FLAT_GROUP];
        let bit = 1u64 << (index % FLAT_GROUP);
        for (wi, &word) in filter.words().iter().enumerate() {
            let mut w = word;
            while w != 0 {
                array[wi * 64 + w.trailing_zeros() as usize] |= bit;
                w &= w - 1;
            }
        }
    }

    /// Adds a filter under a new id: the first free index in `β`, or a new
    /// array of `m` words when none is free; then its set bits are ORed in.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`], [`Error::DuplicateId`], or
    /// [`Error::CapacityOverflow`] if a new array cannot be allocated; the
    /// index is unchanged after an error.
    pub fn insert_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        if self.index_of.contains_key(&id) {
            return Err(Error::DuplicateId(id));
        }
        let index = match self.beta.iter().position(|&w| w != u64::MAX) {
            Some(g) => g * FLAT_GROUP + self.beta[g].trailing_ones() as usize,
            None => {
                let m = self.params.m() as usize;
                let mut array = Vec::new();
                array.try_reserve_exact(m).map_err(|_| Error::CapacityOverflow("Flat-Bloofi array"))?;
                array.resize(m, 0);
                self.arrays.push(array);
                self.beta.push(0);
                self.ids.resize(self.ids.len() + FLAT_GROUP, 0);
                (self.arrays.len() - 1) * FLAT_GROUP
            }
        };
        self.beta[index / FLAT_GROUP] |= 1 << (index % FLAT_GROUP);
        self.ids[index] = id;
        self.index_of.insert(id, index);
        self.or_column(index, filter);
        Ok(())
    }

    /// Removes a filter. Alone in its array, the array goes (with its 64
    /// bits of `β` and 64 ids) and every later index moves down by 64;
    /// otherwise its bit is cleared in every one of the array's `m` words.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged after an error.
    pub fn remove_set(&mut self, id: u64) -> Result<()> {
        let index = self.index_of.remove(&id).ok_or(Error::UnknownId(id))?;
        let (g, bit) = (index / FLAT_GROUP, 1u64 << (index % FLAT_GROUP));
        self.beta[g] &= !bit;
        if self.beta[g] == 0 {
            self.arrays.remove(g);
            self.beta.remove(g);
            self.ids.drain(g * FLAT_GROUP..(g + 1) * FLAT_GROUP);
            for i in self.index_of.values_mut() {
                if *i > index {
                    *i -= FLAT_GROUP;
                }
            }
        } else {
            for w in &mut self.arrays[g] {
                *w &= !bit;
            }
        }
        Ok(())
    }

    /// ORs `filter` into filter `id` (sets its set bits in the column).
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::UnknownId`]; the index is
    /// unchanged after an error.
    pub fn update_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        let index = self.index(id)?;
        self.or_column(index, filter);
        Ok(())
    }

    /// Inserts one key, by its hash, into filter `id`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged after an error.
    pub fn insert_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<()> {
        let index = self.index(id)?;
        let pos = self.params.probes(hash);
        let array = &mut self.arrays[index / FLAT_GROUP];
        for &p in &pos {
            array[p as usize] |= 1 << (index % FLAT_GROUP);
        }
        Ok(())
    }

    /// The filter stored under `id`, rebuilt from its column.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`], or [`Error::CapacityOverflow`] if the filter
    /// cannot be allocated.
    pub fn filter_cloned(&self, id: u64) -> Result<BloomFilter> {
        let index = self.index(id)?;
        let array = &self.arrays[index / FLAT_GROUP];
        let shift = index % FLAT_GROUP;
        let mut words = vec![0u64; self.params.words()];
        for (i, &w) in array.iter().enumerate() {
            words[i / 64] |= ((w >> shift) & 1) << (i % 64);
        }
        BloomFilter::from_words(self.params, &words)
    }

    /// Ids of the filters that may contain the key, into `out` (cleared
    /// first): for each array, the AND of the `k` words the probes name.
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        out.clear();
        let pos = self.params.probes(hash);
        let pos: &[u32] = &pos;
        for (g, array) in self.arrays.iter().enumerate() {
            let mut hits = pos.iter().fold(u64::MAX, |acc, &p| acc & array[p as usize]);
            while hits != 0 {
                out.push(self.ids[g * FLAT_GROUP + hits.trailing_zeros() as usize]);
                hits &= hits - 1;
            }
        }
    }

    /// Checks every internal invariant; tests and fuzzers call it after each
    /// operation. Costs a full scan of the arrays.
    ///
    /// # Errors
    ///
    /// A description of the first broken invariant.
    pub fn validate(&self) -> bloomslice::Result<()> {
        let m = self.params.m() as usize;
        if self.beta.len() != self.arrays.len() || self.ids.len() != self.arrays.len() * FLAT_GROUP {
            return Err(invalid!(
                "{} arrays but {} beta words and {} ids",
                self.arrays.len(),
                self.beta.len(),
                self.ids.len()
            ));
        }
        for (g, (array, &used)) in self.arrays.iter().zip(&self.beta).enumerate() {
            if array.len() != m {
                return Err(invalid!("array {g} has {} words, not m = {m}", array.len()));
            }
            if used == 0 {
                return Err(invalid!("array {g} is empty but was not compacted away"));
            }
            if let Some(i) = array.iter().position(|w| w & !used != 0) {
                return Err(invalid!("array {g} word {i} has bits in unused columns"));
            }
        }
        let in_use: usize = self.beta.iter().map(|w| w.count_ones() as usize).sum();
        if in_use != self.index_of.len() {
            return Err(invalid!("beta marks {in_use} indexes but {} ids are mapped", self.index_of.len()));
        }
        for (&id, &index) in &self.index_of {
            if index >= self.ids.len() || self.beta[index / FLAT_GROUP] >> (index % FLAT_GROUP) & 1 == 0 {
                return Err(invalid!("id {id} maps to unused index {index}"));
            }
            if self.ids[index] != id {
                return Err(invalid!("id {id} maps to index {index}, which holds id {}", self.ids[index]));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    index_test_module!(300, 3);

    #[test]
    fn groups_fill_reuse_and_compact() {
        let mut flat = FlatBloofiPaper::new(params());
        (0..130u64).try_for_each(|id| flat.insert_filter(id, &filter([id]))).unwrap();
        flat.validate().unwrap();
        assert_eq!(flat.arrays(), 3);
        assert_eq!(flat.storage_bytes(), 3 * 64 * 5 * 8);
        // Free a slot in the first group; the next insert reuses it.
        flat.remove_set(5).unwrap();
        flat.insert_filter(500, &filter([500])).unwrap();
        assert_eq!(flat.arrays(), 3);
        // Empty the middle group: it is compacted away, later ids move down.
        for id in 64..128u64 {
            flat.remove_set(id).unwrap();
            flat.validate().unwrap();
        }
        assert_eq!(flat.arrays(), 2);
        for id in [128u64, 129, 0, 500] {
            assert!(flat.query(&id.to_le_bytes()).contains(&id));
            assert_eq!(flat.filter_cloned(id).unwrap(), filter([id]));
        }
        flat.update_filter(128, &filter([9999])).unwrap();
        flat.insert_key(129, &8888u64.to_le_bytes()).unwrap();
        assert!(flat.query(&9999u64.to_le_bytes()).contains(&128));
        assert!(flat.query(&8888u64.to_le_bytes()).contains(&129));
        flat.validate().unwrap();
    }

    #[test]
    fn errors_leave_the_index_unchanged() {
        let mut flat = FlatBloofiPaper::new(params());
        flat.insert_filter(1, &filter([1])).unwrap();
        bloomslice::testing::assert_write_errors(&mut flat, 1, 2);
        assert!(flat.filter_cloned(2).is_err());
        flat.validate().unwrap();
        assert_eq!(flat.len(), 1);
        assert_eq!(flat.filter_cloned(1).unwrap(), filter([1]));
    }
}

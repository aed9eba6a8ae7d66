//! Counting Bloom filters (Fan, Cao, Almeida and Broder, *Summary Cache*,
//! "Bloom filters - the math", `summary-cache-bloom-math.txt`) and a
//! [`SlicedIndex`] of counting filters.
//!
//! A [`CountingBloomFilter`] keeps a 4-bit counter per position instead of a
//! bit. Inserting a key increments the counters of its `k` probe positions,
//! removing it decrements them, and the Bloom filter proper is the *bit
//! view*: bit `i` is set iff counter `i` is non-zero ("when a count changes
//! from 0 to 1, the corresponding bit is turned on; when a count changes
//! from 1 to 0 the corresponding bit is turned off").
//!
//! # The paper's rules and the choices it leaves open
//!
//! * **4 bits per counter**, packed two per byte (counter `i` is the low
//!   nibble of byte `i / 2` when `i` is even, the high nibble otherwise):
//!   the paper shows `P(max count >= 16) <= 1.37e-15 * m` for the optimal k.
//! * **Saturation at 15.** "If the count ever exceeds 15, we can simply let
//!   it stay at 15". The paper accepts that later deletions may then cause a
//!   false negative; here a saturated counter is **never decremented**, so a
//!   counter is always at least the number of live probes that hit it and
//!   overflow can never cause a false negative (the price: a saturated
//!   position stays set forever, a few extra false positives).
//! * **Removing a key that is not present is refused**
//!   ([`CountingError::NotPresent`]) when any of its counters is zero. With
//!   any of the hash schemes two probes of one key can land on the same position;
//!   insertion then increments that counter twice, so removal requires the
//!   counter to be at least the position's multiplicity (or saturated). A
//!   refused removal changes nothing. Removing a false positive (a key never
//!   inserted whose counters are all non-zero) cannot be detected, as in the
//!   paper; it may cause false negatives for other keys, exactly as removing
//!   a never-inserted key from any counting filter does.
//! * **Union** of two counting filters adds counters (saturating at 15): the
//!   counting filter of the multiset sum, as the dynamic Bloom filter paper's
//!   `Merge()` uses it.
//!
//! # In the sliced index
//!
//! [`CountingSlicedIndex`] keeps the counting filter of every set beside a
//! [`SlicedIndex`] column holding its bit view. Insertion sets the key's bits
//! in the column; removal decrements the counters and rewrites exactly the
//! key's `k` bits of the column from the counters, so the column is always
//! the bit view of the counters and answers are exact with respect to them.

use hashbrown::HashMap;

use bloomslice::BloomFilter;
use bloomslice::BloomParams;
use bloomslice::Error;
use bloomslice::SlicedIndex;
use bloomslice::{Key, KeyHash};

/// The largest counter value; a counter that reaches it is saturated and is
/// never decremented again (4-bit counters, as the summary-cache paper
/// recommends).
pub const COUNTER_MAX: u8 = 15;

/// What the counting filters and index fail with: their own errors, and
/// the core's [`Error`]s (ids, parameters, sizes, memory) wrapped in
/// [`CountingError::Core`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CountingError {
    /// The key cannot be in the filter: the counter at `position` is zero
    /// (or smaller than the number of the key's probes landing there).
    #[error("key not present: counter at position {position} is too small to remove it")]
    NotPresent {
        /// The first probe position whose counter refused the removal.
        position: u32,
    },
    /// Raw counters with a non-zero padding nibble (m odd, high nibble of
    /// the last byte) .
    #[error("raw counters have a non-zero padding nibble beyond position m = {m}")]
    PaddingNibbleSet {
        /// The filter length in counters.
        m: u64,
    },
    /// An error the core names (an unknown id, mismatched parameters,
    /// memory, a broken invariant).
    #[error(transparent)]
    Core(#[from] bloomslice::Error),
}

/// `Result` with [`CountingError`].
pub type Result<T, E = CountingError> = core::result::Result<T, E>;

/// A counting Bloom filter: `m` saturating 4-bit counters, `k` hash
/// functions.
///
/// ```
/// use bloomslice::BloomParams;
/// use bloomslice_papers::CountingBloomFilter;
///
/// let mut f = CountingBloomFilter::new(BloomParams::new(1024, 4)?)?;
/// f.insert("apple");
/// f.insert("apple");
/// f.remove("apple")?;
/// assert!(f.contains("apple"));
/// f.remove("apple")?;
/// assert!(f.is_empty());
/// assert!(f.remove("apple").is_err()); // refused: not present
/// # Ok::<(), bloomslice_papers::CountingError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CountingBloomFilter {
    params: BloomParams,
    /// `ceil(m / 2)` bytes, two counters per byte.
    counters: Vec<u8>,
}

debug_summary!(CountingBloomFilter, |s| params: s.params, nonzero: s.count_nonzero());

impl CountingBloomFilter {
    /// An empty counting filter.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] if the counters cannot be allocated.
    pub fn new(params: BloomParams) -> Result<Self> {
        let len = params.m().div_ceil(2);
        let len = usize::try_from(len).map_err(|_| Error::CapacityOverflow("counter bytes"))?;
        let mut counters = Vec::new();
        counters.try_reserve_exact(len).map_err(|_| Error::CapacityOverflow("counter bytes"))?;
        counters.resize(len, 0);
        Ok(CountingBloomFilter { params, counters })
    }

    /// A filter from raw packed counters as exported by
    /// [`CountingBloomFilter::counter_bytes`].
    ///
    /// # Errors
    ///
    /// [`Error::WordCountMismatch`] (counted in bytes) unless
    /// `bytes.len() == ceil(m / 2)`, [`CountingError::PaddingNibbleSet`] if m
    /// is odd and the last byte's high nibble is not zero.
    pub fn from_counter_bytes(params: BloomParams, bytes: &[u8]) -> Result<Self> {
        let mut f = CountingBloomFilter::new(params)?;
        if bytes.len() != f.counters.len() {
            return Err(Error::WordCountMismatch { expected: f.counters.len(), found: bytes.len() }.into());
        }
        if params.m() % 2 == 1 && bytes[bytes.len() - 1] >> 4 != 0 {
            return Err(CountingError::PaddingNibbleSet { m: params.m() });
        }
        f.counters.copy_from_slice(bytes);
        Ok(f)
    }

    /// The parameters.
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// The packed counters, two per byte (counter `i` in the low nibble of
    /// byte `i / 2` for even `i`, the high nibble for odd `i`).
    pub fn counter_bytes(&self) -> &[u8] {
        &self.counters
    }

    /// Counter `i` (0 for `i >= m`).
    #[inline]
    pub fn counter(&self, i: u64) -> u8 {
        if i >= self.params.m() {
            return 0;
        }
        (self.counters[(i / 2) as usize] >> ((i % 2) * 4)) & 0xf
    }

    #[cfg(test)]
    fn set_counter(&mut self, i: u32, v: u8) {
        let b = &mut self.counters[i as usize / 2];
        let shift = (i % 2) * 4;
        *b = (*b & !(0xf << shift)) | (v << shift);
    }

    /// Inserts a key: increments its `k` counters, each saturating at
    /// [`COUNTER_MAX`].
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(self.params.hash(key));
    }

    /// [`CountingBloomFilter::insert`] by the key's hash.
    pub fn insert_hash(&mut self, hash: KeyHash) {
        let pos = self.params.probes(hash);
        self.insert_positions(&pos);
    }

    /// Increments the counters at `positions` (saturating).
    pub(crate) fn insert_positions(&mut self, positions: &[u32]) {
        for &p in positions {
            // Adding 1 to a nibble below 15 never carries into the other.
            let b = &mut self.counters[p as usize / 2];
            let shift = (p % 2) * 4;
            if (*b >> shift) & 0xf < COUNTER_MAX {
                *b += 1 << shift;
            }
        }
    }

    /// Removes a key: decrements its `k` counters (saturated counters stay
    /// at [`COUNTER_MAX`]).
    ///
    /// # Errors
    ///
    /// [`CountingError::NotPresent`] if a counter of the key is zero (or
    /// below the number of the key's probes that land on it); the filter is
    /// then unchanged.
    pub fn remove<K: Key + ?Sized>(&mut self, key: &K) -> Result<()> {
        self.remove_hash(self.params.hash(key))
    }

    /// [`CountingBloomFilter::remove`] by the key's hash.
    ///
    /// # Errors
    ///
    /// As [`CountingBloomFilter::remove`].
    pub fn remove_hash(&mut self, hash: KeyHash) -> Result<()> {
        let pos = self.params.probes(hash);
        self.remove_positions(&pos)
    }

    /// Whether removing the key with these probe positions would be refused.
    pub(crate) fn check_removable(&self, positions: &[u32]) -> Result<()> {
        for (i, &p) in positions.iter().enumerate() {
            let c = self.counter(u64::from(p));
            if c == COUNTER_MAX {
                continue;
            }
            // Multiplicity of `p` among the probes (k <= 64, so quadratic is
            // cheaper than sorting); only checked at its first occurrence.
            if positions[..i].contains(&p) {
                continue;
            }
            let mult = positions[i..].iter().filter(|&&q| q == p).count();
            if usize::from(c) < mult {
                return Err(CountingError::NotPresent { position: p });
            }
        }
        Ok(())
    }

    /// Decrements the counters at `positions`, all or nothing.
    pub(crate) fn remove_positions(&mut self, positions: &[u32]) -> Result<()> {
        self.check_removable(positions)?;
        for &p in positions {
            // check_removable guarantees a non-saturated counter here is
            // >= 1, so the subtraction never borrows from the other nibble.
            let b = &mut self.counters[p as usize / 2];
            let shift = (p % 2) * 4;
            if (*b >> shift) & 0xf < COUNTER_MAX {
                *b -= 1 << shift;
            }
        }
        Ok(())
    }

    /// Whether the key may be in the filter (all its counters are non-zero).
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.params.hash(key))
    }

    /// [`CountingBloomFilter::contains`] by the key's hash.
    pub fn contains_hash(&self, hash: KeyHash) -> bool {
        let pos = self.params.probes(hash);
        self.contains_positions(&pos)
    }

    /// Whether every counter at `positions` is non-zero.
    pub fn contains_positions(&self, positions: &[u32]) -> bool {
        positions.iter().all(|&p| self.counter(u64::from(p)) != 0)
    }

    /// The bit view: a [`BloomFilter`] with bit `i` set iff counter `i` is
    /// non-zero. It answers every query exactly as this filter does.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] if the filter cannot be allocated.
    pub fn to_bloom_filter(&self) -> Result<BloomFilter> {
        let mut f = BloomFilter::new(self.params)?;
        let words = f.words_mut();
        for (j, &b) in self.counters.iter().enumerate() {
            let bits = u64::from(b & 0x0f != 0) | (u64::from(b & 0xf0 != 0) << 1);
            let i = 2 * j;
            words[i / 64] |= bits << (i % 64);
        }
        Ok(f)
    }

    /// Number of non-zero counters (set bits of the bit view).
    pub fn count_nonzero(&self) -> u64 {
        self.counters.iter().map(|&b| u64::from(b & 0x0f != 0) + u64::from(b & 0xf0 != 0)).sum()
    }

    /// Number of saturated counters (at [`COUNTER_MAX`]).
    pub fn count_saturated(&self) -> u64 {
        self.counters.iter().map(|&b| u64::from(b & 0x0f == 0x0f) + u64::from(b & 0xf0 == 0xf0)).sum()
    }

    /// Whether every counter is zero.
    pub fn is_empty(&self) -> bool {
        self.counters.iter().all(|&b| b == 0)
    }

    /// Sets every counter to zero.
    pub fn clear(&mut self) {
        self.counters.fill(0);
    }

    /// Adds `other`'s counters into `self`, saturating at [`COUNTER_MAX`]:
    /// the counting filter of the multiset sum (the union operation of the
    /// dynamic Bloom filter paper's `Merge()`).
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`]; `self` is unchanged.
    pub fn union_with(&mut self, other: &CountingBloomFilter) -> Result<()> {
        self.params.check_same(&other.params)?;
        for (a, &b) in self.counters.iter_mut().zip(&other.counters) {
            let lo = ((*a & 0xf) + (b & 0xf)).min(COUNTER_MAX);
            let hi = ((*a >> 4) + (b >> 4)).min(COUNTER_MAX);
            *a = lo | (hi << 4);
        }
        Ok(())
    }

    /// Bytes of memory the filter holds.
    pub fn memory_bytes(&self) -> usize {
        self.counters.capacity() + core::mem::size_of::<Self>()
    }

    /// Checks the invariants: `ceil(m / 2)` counter bytes, padding nibble
    /// zero.
    ///
    /// # Errors
    ///
    /// A description of the first broken invariant.
    pub fn validate(&self) -> bloomslice::Result<()> {
        if self.counters.len() as u64 != self.params.m().div_ceil(2) {
            return Err(invalid!("{} counter bytes for m = {}", self.counters.len(), self.params.m()));
        }
        if self.params.m() % 2 == 1 && self.counters[self.counters.len() - 1] >> 4 != 0 {
            return Err(invalid!("padding nibble set"));
        }
        Ok(())
    }

    /// XOR of the packed counters of `self` and `other` (same parameters),
    /// into `out`; the delta [`CountingBloomFilter::apply_xor`] applies.
    pub(crate) fn xor_bytes_into(&self, other: &CountingBloomFilter, out: &mut Vec<u8>) {
        out.clear();
        out.extend(self.counters.iter().zip(&other.counters).map(|(a, b)| a ^ b));
    }

    /// XORs raw packed bytes into the counters.
    ///
    /// # Errors
    ///
    /// [`Error::WordCountMismatch`] (in bytes) or
    /// [`CountingError::PaddingNibbleSet`]; the filter is unchanged.
    pub(crate) fn apply_xor(&mut self, delta: &[u8]) -> Result<()> {
        if delta.len() != self.counters.len() {
            return Err(Error::WordCountMismatch { expected: self.counters.len(), found: delta.len() }.into());
        }
        if self.params.m() % 2 == 1 && delta[delta.len() - 1] >> 4 != 0 {
            return Err(CountingError::PaddingNibbleSet { m: self.params.m() });
        }
        for (a, d) in self.counters.iter_mut().zip(delta) {
            *a ^= d;
        }
        Ok(())
    }
}

/// A [`SlicedIndex`] of counting Bloom filters: the counting filter of every
/// set lives beside the index, whose column for the set holds its bit view.
///
/// ```
/// use bloomslice::BloomParams;
/// use bloomslice_papers::CountingSlicedIndex;
///
/// let mut index = CountingSlicedIndex::new(BloomParams::new(4096, 5)?);
/// index.insert_set(1)?;
/// index.insert_set(2)?;
/// index.insert_key(1, "x")?;
/// index.insert_key(2, "x")?;
/// index.remove_key(1, "x")?;
/// assert_eq!(index.query("x"), vec![2]);
/// # Ok::<(), bloomslice_papers::CountingError>(())
/// ```
#[derive(Clone, Debug)]
pub struct CountingSlicedIndex {
    index: SlicedIndex,
    filters: HashMap<u64, CountingBloomFilter>,
}

id_verbs!(CountingSlicedIndex, filters);
key_verbs!(CountingSlicedIndex: CountingError);
delegate_filter_index!(
    CountingSlicedIndex,
    CountingBloomFilter,
    CountingError,
    new_filter: |s| CountingBloomFilter::new(*s.params()),
    batched
);

impl bloomslice::index::IndexedFilter for CountingBloomFilter {
    type Error = CountingError;

    fn insert_key_hash(&mut self, hash: KeyHash) -> Result<()> {
        self.insert_hash(hash);
        Ok(())
    }
}

impl CountingSlicedIndex {
    /// An empty index.
    pub fn new(params: BloomParams) -> Self {
        CountingSlicedIndex { index: SlicedIndex::new(params), filters: HashMap::new() }
    }

    /// The shared parameters.
    pub fn params(&self) -> &BloomParams {
        self.index.params()
    }

    /// The underlying bit-sliced index (the bit views).
    pub fn index(&self) -> &SlicedIndex {
        &self.index
    }

    /// The counting filter of set `id`.
    pub fn filter(&self, id: u64) -> Option<&CountingBloomFilter> {
        self.filters.get(&id)
    }

    /// Adds an empty set under a new id.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateId`] or [`Error::CapacityOverflow`]; unchanged after an error.
    pub fn insert_set(&mut self, id: u64) -> Result<()> {
        self.insert_filter(id, &CountingBloomFilter::new(*self.params())?)
    }

    /// Adds a set given by its counting filter under a new id.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`], [`Error::DuplicateId`] or
    /// [`Error::CapacityOverflow`]; unchanged after an error.
    pub fn insert_filter(&mut self, id: u64, filter: &CountingBloomFilter) -> Result<()> {
        if filter.params() != self.params() {
            return Err(Error::ParamsMismatch { expected: *self.params(), found: *filter.params() }.into());
        }
        if self.filters.contains_key(&id) {
            return Err(Error::DuplicateId(id).into());
        }
        self.filters.try_reserve(1).map_err(|_| Error::CapacityOverflow("id map"))?;
        self.index.insert_filter(id, &filter.to_bloom_filter()?)?;
        self.filters.insert(id, filter.clone());
        Ok(())
    }

    /// Removes set `id`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; unchanged.
    pub fn remove_set(&mut self, id: u64) -> Result<()> {
        self.take_filter(id).map(drop)
    }

    /// Removes set `id` and returns its counting filter.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; unchanged.
    pub fn take_filter(&mut self, id: u64) -> Result<CountingBloomFilter> {
        self.index.remove_set(id)?;
        self.filters.remove(&id).ok_or(Error::UnknownId(id).into())
    }

    /// Adds `filter`'s counters to set `id` (saturating, as
    /// [`CountingBloomFilter::union_with`]) and rewrites its column.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::UnknownId`]; unchanged.
    pub fn update_filter(&mut self, id: u64, filter: &CountingBloomFilter) -> Result<()> {
        let mut merged = self.filters.get(&id).ok_or(Error::UnknownId(id))?.clone();
        merged.union_with(filter)?;
        self.index.replace_column(id, &merged.to_bloom_filter()?)?;
        self.filters.insert(id, merged);
        Ok(())
    }

    /// The counting filter of set `id` (a copy).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`].
    pub fn filter_cloned(&self, id: u64) -> Result<CountingBloomFilter> {
        self.filters.get(&id).cloned().ok_or(Error::UnknownId(id).into())
    }

    /// Bytes held: the bit-sliced index plus every set's counters.
    pub fn memory_bytes(&self) -> usize {
        self.index.memory_bytes() + self.filters.values().map(CountingBloomFilter::memory_bytes).sum::<usize>()
    }

    /// [`SlicedIndex::query_batch_hashes`] over the sets' bit views.
    pub fn query_batch_hashes(&self, hashes: &[KeyHash], results: &mut bloomslice::BatchResults) {
        self.index.query_batch_hashes(hashes, results);
    }

    /// Inserts a key, by its hash, into set `id`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; unchanged.
    pub fn insert_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<()> {
        let f = self.filters.get_mut(&id).ok_or(Error::UnknownId(id))?;
        let pos = f.params.probes(hash);
        f.insert_positions(&pos);
        Ok(self.index.set_column_bits(id, &pos, |_| true)?)
    }

    /// Removes a key from set `id` and rewrites the key's bits of the set's
    /// column from the counters.
    ///
    /// # Errors
    ///
    /// [`CountingError::NotPresent`] or [`Error::UnknownId`];
    /// unchanged after an error.
    pub fn remove_key<K: Key + ?Sized>(&mut self, id: u64, key: &K) -> Result<()> {
        self.remove_key_hash(id, self.params().hash(key))
    }

    /// [`CountingSlicedIndex::remove_key`] by the key's hash.
    ///
    /// # Errors
    ///
    /// As [`CountingSlicedIndex::remove_key`].
    pub fn remove_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<()> {
        let f = self.filters.get_mut(&id).ok_or(Error::UnknownId(id))?;
        let pos = f.params.probes(hash);
        f.remove_positions(&pos)?;
        let f = &self.filters[&id];
        self.index.set_column_bits(id, &pos, |p| f.counter(u64::from(p)) != 0)?;
        Ok(())
    }

    /// Ids of the sets that may contain `key`, in index order.
    pub fn query<K: Key + ?Sized>(&self, key: &K) -> Vec<u64> {
        self.index.query(key)
    }

    /// [`CountingSlicedIndex::query`] into a caller buffer (cleared first).
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        self.index.query_hash_into(hash, out);
    }

    /// Checks the index's invariants and that every column is exactly the
    /// bit view of its set's counters.
    ///
    /// # Errors
    ///
    /// A description of the first broken invariant.
    pub fn validate(&self) -> bloomslice::Result<()> {
        self.index.validate()?;
        if self.index.len() != self.filters.len() {
            return Err(invalid!("{} columns for {} sets", self.index.len(), self.filters.len()));
        }
        for (&id, f) in &self.filters {
            f.validate()?;
            let column = self.index.filter_cloned(id).map_err(|e| invalid!("{e}"))?;
            if column != f.to_bloom_filter().map_err(|e| invalid!("{e}"))? {
                return Err(invalid!("set {id}: column differs from the counters' bit view"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturated_counters_stay() {
        // m = 1, k = 1: every key hits counter 0.
        let mut f = CountingBloomFilter::new(BloomParams::new(1, 1).unwrap()).unwrap();
        for i in 0u32..20 {
            f.insert(&i.to_le_bytes());
        }
        assert_eq!(f.counter(0), COUNTER_MAX);
        for i in 0u32..20 {
            f.remove(&i.to_le_bytes()).unwrap();
        }
        assert_eq!(f.counter(0), COUNTER_MAX, "a saturated counter is never decremented");
        assert!(f.contains("anything"));
        assert_eq!(f.count_saturated(), 1);
        f.validate().unwrap();
    }

    #[test]
    fn duplicate_probe_positions_need_their_multiplicity() {
        // m = 1, k = 3: all probes hit counter 0, so one insert gives 3.
        let mut f = CountingBloomFilter::new(BloomParams::new(1, 3).unwrap()).unwrap();
        f.insert("a");
        assert_eq!(f.counter(0), 3);
        f.remove("a").unwrap();
        assert_eq!(f.counter(0), 0);
        f.set_counter(0, 2);
        assert_eq!(f.remove("a"), Err(CountingError::NotPresent { position: 0 }));
        assert_eq!(f.counter(0), 2);
    }

    #[test]
    fn odd_m_padding_and_raw_round_trip() {
        let p = BloomParams::new(7, 2).unwrap();
        let mut f = CountingBloomFilter::new(p).unwrap();
        f.insert("x");
        let g = CountingBloomFilter::from_counter_bytes(p, f.counter_bytes()).unwrap();
        assert_eq!(f, g);
        assert_eq!(
            CountingBloomFilter::from_counter_bytes(p, &[0, 0, 0, 0x10]),
            Err(CountingError::PaddingNibbleSet { m: 7 })
        );
        assert_eq!(
            CountingBloomFilter::from_counter_bytes(p, &[0; 3]),
            Err(Error::WordCountMismatch { expected: 4, found: 3 }.into())
        );
        assert_eq!(f.to_bloom_filter().unwrap().count_ones(), f.count_nonzero());
    }
}

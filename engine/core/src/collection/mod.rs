//! [`SetIndex`]: named sets of any sizes behind one index, in size-classed
//! parts.
//!
//! Every filter of a [`SlicedIndex`] has the same length `m`, so one index
//! sized for a skewed collection's largest set spends that set's bits on
//! every small one. A collection keeps its sets in one or more *parts*,
//! each a [`SlicedIndex`] with its own `m` and the same `k`, hash scheme and
//! seed, so a key is hashed once ([`BloomParams::hash`] gives its
//! [`KeyHash`]) and each part derives its own probe positions from that
//! hash (`fastrange` maps the same hash words onto any `m`). Which parts
//! there are, and which sizes each takes, is chosen from the set sizes by a
//! [`Layout`] (see [`layout`] for the cost model).
//!
//! # Sets that grow
//!
//! A set is placed in the part of least capacity that holds it, and counts
//! the keys it is given (every key given counts, duplicates included, so
//! the count never falls behind the distinct keys). When
//! [`SetIndex::add_keys`] takes a filter past its capacity, the set gains
//! a filter in a larger part, as in scalable Bloom filters: its `j`-th
//! added filter (`j >= 1`) is sized for `c * 2^j` keys, `c` the capacity
//! of its first filter, at the tighter rate `p / 2^j`, and is placed in an
//! existing part whose `m` lies between the bits that needs and twice that,
//! or else in a new part of exactly those bits. Each filter is filled to at
//! most its capacity, so filter `j` has a false-positive rate at most `p_j`
//! (`p_0 = p`: the Bloofi rule's `k >= log2(1/p)` and `m >= k n / ln 2`
//! give a rate of about `2^-k <= p` at the part's capacity), and the union
//! of a set's filters, which answers for the set, has
//!
//! > false-positive rate `<= 1 - prod_j (1 - p_j) <= sum_j p_j < p * (1 + 1/2 + 1/4 + ...) = 2p`
//!
//! whatever the number of keys added. Capacities double, so a set that
//! grows to `n` keys has `O(log(n / c))` filters. [`SetIndex::fpr_bound`]
//! gives a set's `sum_j` of its filters' predicted rates at their loads.
//! A set's filters are in distinct parts (each added filter needs more bits
//! than the last) and carry the set's id as their column id.
//!
//! # Queries
//!
//! A key is hashed once and queried in every part that holds sets. A set
//! with filters in several parts is reported once: when some set has
//! grown, an answer is sorted and deduplicated. Answers are otherwise in
//! part order, each part's ids in its index's order; a collection of one
//! part answers exactly as its [`SlicedIndex`].
//!
//! A collection whose parts' rows total at most [`RESIDENT_ROWS_BYTES`]
//! (4 MiB, within the last-level cache of every CPU it is measured on)
//! reads them without prefetching: its rows stay cached between queries,
//! and a part's prefetch, issued just before its own reads, only costs
//! instructions.
//! Larger collections prefetch each part's rows as [`SlicedIndex`] does
//! ([`PartPrefetch`], a setting of each index: [`SetIndex::set_part_prefetch`]
//! forces either). A part of
//! one narrow shard read without prefetching computes its probe positions
//! as its AND reads them, so an absent key stops after the few rows that
//! clear it. Measured in `bench/RESULTS.md`, section "Collections".
//!
//! Scores count, for every set, the query keys *its filters' union* may
//! hold. For a set with one filter that is its part's count (each part is
//! scored with [`SlicedIndex::score_into`], pruned per part by
//! [`SlicedIndex::query_threshold_into`]). For a set with filters in
//! several parts the per-part counts cannot be added (a key held by two of
//! its filters would count twice), so those sets are counted key by key:
//! each key is queried in the parts that hold them, and it counts once for
//! a set if any of the set's filters reports it.
//!
//! # Memory
//!
//! A part is a [`SlicedIndex`], whose shard is as narrow as its sets: a
//! part of `w` sets holds a shard of the least power of two of columns
//! from `w` up to 512 (rows of 1 to 32 columns packed several to a word,
//! 64 to 256 columns a word or a few per row), then whole multiples of
//! 512 ([`shard_columns_for`](crate::sliced::shard_columns_for)), its
//! rows rounded up to a cache line. A part holding one large set costs
//! that set's filter. The layout's memory model is that storage rule, so
//! its predicted bits are the rows the parts hold
//! ([`SlicedIndex::rows_bytes`]); [`SetIndex::memory_bytes`] adds the id
//! maps and column owners (see [`layout`] for measured figures).
//!
//! # Files and threads
//!
//! [`crate::persist::save`], [`crate::persist::load`] and
//! [`crate::persist::open_mmap`] keep a collection in one
//! file (format 2 of `docs/FORMAT.md`: every part an embedded index, every
//! section checksummed and 64-byte aligned); an index file of format 1
//! opens as a one-part collection. [`ConcurrentIndex`](crate::ConcurrentIndex) lets readers
//! query while a writer publishes, and [`crate::QueryPool`] answers its
//! batches on pinned workers.

mod absorb;
pub mod concurrent;
pub mod layout;
pub mod levels;
mod query;
pub(crate) mod stored;

use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::filter::BloomFilter;
use crate::hash::{Key, KeyHash};
use crate::kmer::KmerLength;
use crate::params::{BloomParams, HashScheme};
use crate::sliced::SlicedIndex;
pub use crate::sliced::{PartPrefetch, RESIDENT_ROWS_BYTES};
pub use concurrent::SetOp;
pub use layout::{Layout, LayoutConfig, PartPlan};
pub use levels::{LevelConfig, LevelIndex};
pub use query::CollectionScratch;

/// One part: a sliced index and the number of keys a set placed in it by
/// size may hold at the collection's rate.
#[derive(Clone, Debug)]
struct Part {
    capacity: u64,
    index: SlicedIndex,
}

/// One filter of a set: its part, how many keys it may hold at its rate,
/// and how many it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    part: usize,
    capacity: u64,
    load: u64,
}

/// One filter of a set, as [`SetIndex::filters`] describes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FilterInfo {
    /// The parameters of the filter's part.
    pub params: BloomParams,
    /// The part (an index into [`SetIndex::parts`]).
    pub part: usize,
    /// Keys the filter may hold at its false-positive rate (`p` for a
    /// set's first filter, `p / 2^j` for its `j`-th added one).
    pub capacity: u64,
    /// Keys given to the filter (duplicates included).
    pub load: u64,
}

/// A collection of sets of any sizes, each answered as one filter, in
/// size-classed parts (see the [module documentation](self)).
///
/// ```
/// use bloomslice::{SetIndex, LayoutConfig};
///
/// // Three small sets and a large one, at 1% false positives.
/// let small: Vec<String> = (0..20).map(|i| format!("small-{i}")).collect();
/// let large: Vec<String> = (0..20_000).map(|i| format!("large-{i}")).collect();
/// let sets = vec![(1, small.clone()), (2, small.clone()), (3, small), (9, large)];
/// let mut collection = SetIndex::build(&sets, 0.01, LayoutConfig::default())?;
/// assert_eq!(collection.layout().parts().len(), 2);
/// let mut hits = collection.query("large-7");
/// hits.sort_unstable();
/// assert!(hits.contains(&9));
///
/// // A set that outgrows its part gains a filter in a larger one.
/// let more: Vec<String> = (0..30).map(|i| format!("more-{i}")).collect();
/// collection.add_keys(1, &more)?;
/// assert_eq!(collection.filter_count(1), Some(2));
/// assert!(collection.query("more-25").contains(&1));
/// assert!(collection.fpr_bound(1).unwrap() < 0.02);
/// # Ok::<(), bloomslice::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SetIndex {
    p: f64,
    k: u32,
    scheme: HashScheme,
    seed: u64,
    parts: Vec<Part>,
    sets: HashMap<u64, Vec<Slot>>,
    /// Sets with more than one filter.
    grown: usize,
    layout: Layout,
    /// The k-mer length of a sequence collection (see
    /// [`SetIndex::kmer_length`]).
    kmer_length: Option<KmerLength>,
    /// Speed settings of the collection and its parts.
    tuning: Tuning,
}

/// Settings that change only speed, kept by a [`SetIndex`] for its parts,
/// new ones included ([`SetIndex::set_look_ahead`],
/// [`SetIndex::set_part_prefetch`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tuning {
    look_ahead: crate::kernels::LookAhead,
    part_prefetch: PartPrefetch,
}

impl Tuning {
    /// The settings of `config`.
    pub(crate) fn of(config: &crate::SlicedConfig) -> Self {
        Tuning { look_ahead: config.look_ahead, part_prefetch: config.part_prefetch }
    }
}

impl SetIndex {
    /// An empty collection at false-positive rate `p`, with the default
    /// hash scheme and seed 0; sets added later each get the part that
    /// holds their size (a new part if none does).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFalsePositiveRate`], or [`Error::TooManyHashes`] for
    /// a `p` so small that `k` exceeds [`crate::params::MAX_HASHES`].
    pub fn new(p: f64) -> Result<Self> {
        Self::with_hashing(p, HashScheme::default(), 0)
    }

    /// [`SetIndex::new`] with the given hash scheme and seed.
    ///
    /// # Errors
    ///
    /// As [`SetIndex::new`].
    pub fn with_hashing(p: f64, scheme: HashScheme, seed: u64) -> Result<Self> {
        let layout = Layout::choose(&[], p, LayoutConfig::default())?;
        Ok(SetIndex {
            p,
            k: layout.k(),
            scheme,
            seed,
            parts: Vec::new(),
            sets: HashMap::new(),
            grown: 0,
            layout,
            kmer_length: None,
            tuning: Tuning::default(),
        })
    }

    /// A collection of `sets` (`(id, keys)`) at false-positive rate `p`,
    /// in the parts [`Layout::choose`] picks for their sizes (each set's
    /// number of keys, duplicates included) under `config`.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateId`] for an id given twice, the errors of
    /// [`Layout::choose`], or [`Error::CapacityOverflow`].
    pub fn build<K: Key, S: AsRef<[K]>>(sets: &[(u64, S)], p: f64, config: LayoutConfig) -> Result<Self> {
        Self::build_with_hashing(sets, p, config, HashScheme::default(), 0)
    }

    /// [`SetIndex::build`] with the given hash scheme and seed.
    ///
    /// # Errors
    ///
    /// As [`SetIndex::build`].
    pub fn build_with_hashing<K: Key, S: AsRef<[K]>>(
        sets: &[(u64, S)],
        p: f64,
        config: LayoutConfig,
        scheme: HashScheme,
        seed: u64,
    ) -> Result<Self> {
        let mut collection = Self::with_hashing(p, scheme, seed)?;
        let sizes: Vec<u64> = sets.iter().map(|(_, keys)| keys.as_ref().len() as u64).collect();
        collection.layout = Layout::choose(&sizes, p, config)?;
        for plan in collection.layout.parts() {
            let params = collection.params_with(plan.m)?;
            let capacity = plan.capacity.max(layout::capacity_of(plan.m, p, collection.k));
            collection.parts.push(Part { capacity, index: SlicedIndex::new(params) });
        }
        let mut by_part: Vec<Vec<(u64, BloomFilter)>> = vec![Vec::new(); collection.parts.len()];
        for (id, keys) in sets {
            let keys = keys.as_ref();
            if collection.sets.contains_key(id) {
                return Err(Error::DuplicateId(*id));
            }
            let size = keys.len() as u64;
            let part = collection.layout.part_for(size.max(1)).unwrap_or(collection.parts.len() - 1);
            let mut filter = BloomFilter::new(*collection.parts[part].index.params())?;
            for key in keys {
                filter.insert_hash(collection.hash(key));
            }
            by_part[part].push((*id, filter));
            let capacity = collection.parts[part].capacity;
            collection.sets.insert(*id, vec![Slot { part, capacity, load: size }]);
        }
        for (part, filters) in by_part.iter().enumerate() {
            let refs: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
            collection.parts[part].index.insert_filters(&refs)?;
        }
        Ok(collection)
    }

    /// Parameters of a part of `m` bits.
    fn params_with(&self, m: u64) -> Result<BloomParams> {
        Ok(BloomParams::new(m, self.k)?.with_scheme(self.scheme).with_seed(self.seed))
    }

    /// A key's hash, the same for every part.
    #[inline]
    fn hash<K: Key + ?Sized>(&self, key: &K) -> KeyHash {
        key.key_hash(self.seed)
    }

    /// The target false-positive rate of a set in its first filter.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// The number of hash functions of every part.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The seed every key is hashed with, the same for every part.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// How every part derives its probe positions from a key's hash.
    pub fn scheme(&self) -> HashScheme {
        self.scheme
    }

    /// The layout the collection was built with ([`SetIndex::new`]: the
    /// layout of no sets). Parts added since for sets larger than every
    /// part, or for grown sets, are not in it; [`SetIndex::parts`] has
    /// them all.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The parts' indexes, in part order (layout parts first, by ascending
    /// `m`, then parts added since, in the order they were added).
    pub fn parts(&self) -> impl ExactSizeIterator<Item = &SlicedIndex> + '_ {
        self.parts.iter().map(|part| &part.index)
    }

    /// Uses another kernel table in every part (see
    /// [`SlicedIndex::set_kernels`]); parts added later use the detected
    /// one. Answers do not change.
    pub fn set_kernels(&mut self, kernels: &'static crate::kernels::Kernels) {
        for part in &mut self.parts {
            part.index.set_kernels(kernels);
        }
    }

    /// Sets the look-ahead cache level of scoring in every part, and in
    /// parts added later ([`SlicedConfig::look_ahead`](crate::SlicedConfig::look_ahead)).
    /// Answers do not change.
    pub fn set_look_ahead(&mut self, look_ahead: crate::kernels::LookAhead) {
        self.tuning.look_ahead = look_ahead;
        for part in &mut self.parts {
            part.index.set_look_ahead(look_ahead);
        }
    }

    /// Sets whether queries prefetch the parts' rows ([`PartPrefetch`]),
    /// for the collection and each part, and for parts added later.
    /// Answers do not change.
    pub fn set_part_prefetch(&mut self, mode: PartPrefetch) {
        self.tuning.part_prefetch = mode;
        for part in &mut self.parts {
            part.index.set_part_prefetch(mode);
        }
    }

    /// Number of sets.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether the collection holds no set.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Whether a set is stored under `id`.
    pub fn contains(&self, id: u64) -> bool {
        self.sets.contains_key(&id)
    }

    /// The ids of the sets, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.sets.keys().copied()
    }

    /// How many filters set `id` has (more than one once it has grown).
    pub fn filter_count(&self, id: u64) -> Option<usize> {
        self.sets.get(&id).map(Vec::len)
    }

    /// The filters of set `id`, first first: each one's parameters, how
    /// many keys it may hold at its rate and how many it was given (the
    /// keys given to the set, in order, fill each filter to its capacity
    /// before the next is made).
    pub fn filters(&self, id: u64) -> Option<Vec<FilterInfo>> {
        let slots = self.sets.get(&id)?;
        Some(
            slots
                .iter()
                .map(|s| FilterInfo {
                    params: *self.parts[s.part].index.params(),
                    part: s.part,
                    capacity: s.capacity,
                    load: s.load,
                })
                .collect(),
        )
    }

    /// Number of sets with more than one filter.
    pub fn grown_sets(&self) -> usize {
        self.grown
    }

    /// The predicted false-positive rate bound of set `id`: the sum over
    /// its filters of [`BloomParams::expected_fpr`] at the number of keys
    /// each was given (below `2p` by construction, see the module
    /// documentation).
    pub fn fpr_bound(&self, id: u64) -> Option<f64> {
        let slots = self.sets.get(&id)?;
        Some(slots.iter().map(|s| self.parts[s.part].index.params().expected_fpr(s.load)).sum())
    }

    /// Exact bytes the collection holds: its parts'
    /// [`SlicedIndex::memory_bytes`], the set map and the part list.
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Self>()
            + self.parts.capacity() * core::mem::size_of::<Part>()
            + self.parts.iter().map(|part| part.index.memory_bytes()).sum::<usize>()
            + self.sets.allocation_size()
            + self.sets.values().map(|slots| slots.capacity() * core::mem::size_of::<Slot>()).sum::<usize>()
    }

    /// Bytes of the parts' rows that sit on transparent huge pages now
    /// ([`SlicedIndex::huge_page_bytes`] summed over the parts). Reads
    /// `/proc/self/smaps`: for reports, not queries.
    pub fn huge_page_bytes(&self) -> usize {
        self.parts.iter().map(|part| part.index.huge_page_bytes()).sum()
    }

    /// The part for a new set of `size` keys: the first (by part order)
    /// of least capacity that holds it, or a new part sized for it at `p`.
    fn part_for_size(&mut self, size: u64) -> Result<usize> {
        let fits = self
            .parts
            .iter()
            .enumerate()
            .filter(|(_, part)| part.capacity >= size)
            .min_by_key(|(_, part)| part.capacity)
            .map(|(i, _)| i);
        if let Some(i) = fits {
            return Ok(i);
        }
        let m = BloomParams::for_capacity(size.max(1), self.p)?.m();
        let capacity = size.max(1).max(layout::capacity_of(m, self.p, self.k));
        self.push_part(m, capacity)
    }

    fn push_part(&mut self, m: u64, capacity: u64) -> Result<usize> {
        let params = self.params_with(m)?;
        self.parts.try_reserve(1).map_err(|_| Error::CapacityOverflow("part list"))?;
        let mut index = SlicedIndex::new(params);
        index.set_look_ahead(self.tuning.look_ahead);
        index.set_part_prefetch(self.tuning.part_prefetch);
        self.parts.push(Part { capacity, index });
        Ok(self.parts.len() - 1)
    }

    /// Adds a set under a new id, in the part of least capacity that holds
    /// its number of keys (a new part sized for it if none does).
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateId`], or [`Error::CapacityOverflow`]; the sets
    /// are unchanged after an error (a part may have been added, empty).
    pub fn insert_set<K: Key>(&mut self, id: u64, keys: &[K]) -> Result<()> {
        if self.sets.contains_key(&id) {
            return Err(Error::DuplicateId(id));
        }
        let size = keys.len() as u64;
        let part = self.part_for_size(size)?;
        let mut filter = BloomFilter::new(*self.parts[part].index.params())?;
        for key in keys {
            filter.insert_hash(self.hash(key));
        }
        self.sets.try_reserve(1).map_err(|_| Error::CapacityOverflow("set map"))?;
        self.parts[part].index.insert_filter(id, &filter)?;
        let capacity = self.parts[part].capacity;
        self.sets.insert(id, vec![Slot { part, capacity, load: size }]);
        Ok(())
    }

    /// Removes set `id` and all its filters.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the collection is unchanged.
    pub fn remove_set(&mut self, id: u64) -> Result<()> {
        let slots = self.sets.remove(&id).ok_or(Error::UnknownId(id))?;
        if slots.len() > 1 {
            self.grown -= 1;
        }
        for slot in &slots {
            // Each filter was inserted under `id` in its part.
            self.parts[slot.part].index.remove_set(id)?;
        }
        Ok(())
    }

    /// Adds `keys` to set `id`. Keys go to the set's last filter until it
    /// holds its capacity; then the set gains a filter in a larger part
    /// (see the module documentation) and the keys go there.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`] (the collection is unchanged), or
    /// [`Error::CapacityOverflow`] / [`Error::TooManyBits`] when a larger
    /// filter cannot be had; the keys before the failure are then added.
    pub fn add_keys<K: Key>(&mut self, id: u64, keys: &[K]) -> Result<()> {
        let mut slot = *self.sets.get(&id).ok_or(Error::UnknownId(id))?.last().ok_or(Error::UnknownId(id))?;
        let mut pending = BloomFilter::new(*self.parts[slot.part].index.params())?;
        let mut pending_keys = 0u64;
        for key in keys {
            if slot.load >= slot.capacity {
                self.flush(id, slot, &pending, pending_keys)?;
                slot = self.grow(id)?;
                pending = BloomFilter::new(*self.parts[slot.part].index.params())?;
                pending_keys = 0;
            }
            pending.insert_hash(self.hash(key));
            pending_keys += 1;
            slot.load += 1;
        }
        self.flush(id, slot, &pending, pending_keys)
    }

    /// ORs `pending` into the set's last filter and records its load.
    fn flush(&mut self, id: u64, slot: Slot, pending: &BloomFilter, keys: u64) -> Result<()> {
        if keys > 0 {
            self.parts[slot.part].index.update_filter(id, pending)?;
        }
        if let Some(last) = self.sets.get_mut(&id).and_then(|slots| slots.last_mut()) {
            last.load = slot.load;
        }
        Ok(())
    }

    /// Gives set `id` its next filter (see the module documentation) and
    /// returns its slot.
    fn grow(&mut self, id: u64) -> Result<Slot> {
        let slots = self.sets.get(&id).ok_or(Error::UnknownId(id))?;
        let j = slots.len() as i32;
        let base = slots[0].capacity.max(1);
        let rate = self.p * 0.5f64.powi(j);
        let want = base.saturating_mul(1u64 << j.min(40));
        let need = layout::bits_for(want, rate, self.k)?;
        let taken: Vec<usize> = slots.iter().map(|s| s.part).collect();
        let existing = self
            .parts
            .iter()
            .enumerate()
            .filter(|(i, part)| {
                let m = part.index.params().m();
                !taken.contains(i) && m >= need && m <= need.saturating_mul(2)
            })
            .min_by_key(|(_, part)| part.index.params().m())
            .map(|(i, _)| i);
        let part = match existing {
            Some(i) => i,
            None => {
                let capacity = layout::capacity_of(need, self.p, self.k).max(1);
                self.push_part(need, capacity)?
            }
        };
        let m = self.parts[part].index.params().m();
        let capacity = layout::capacity_of(m, rate, self.k).max(1);
        let empty = BloomFilter::new(*self.parts[part].index.params())?;
        self.parts[part].index.insert_filter(id, &empty)?;
        let slot = Slot { part, capacity, load: 0 };
        let slots = self.sets.get_mut(&id).ok_or(Error::UnknownId(id))?;
        slots.push(slot);
        if slots.len() == 2 {
            self.grown += 1;
        }
        Ok(slot)
    }

    /// Checks every part ([`SlicedIndex::validate`]) and that the sets'
    /// filters and the parts' columns agree; tests call it after each
    /// operation.
    ///
    /// # Errors
    ///
    /// A description of the first broken invariant.
    pub fn validate(&self) -> Result<()> {
        let mut columns = 0;
        for (i, part) in self.parts.iter().enumerate() {
            part.index.validate()?;
            if part.index.params().k() != self.k || part.index.params().seed() != self.seed {
                return Err(invalid!("part {i}: k or seed differs from the collection's"));
            }
            columns += part.index.len();
        }
        let mut grown = 0;
        for (&id, slots) in &self.sets {
            grown += usize::from(slots.len() > 1);
            for (j, slot) in slots.iter().enumerate() {
                if !self.parts[slot.part].index.contains(id) {
                    return Err(invalid!("set {id}: filter {j} missing from part {}", slot.part));
                }
                if slot.load > slot.capacity || (j + 1 < slots.len() && slot.load != slot.capacity) {
                    return Err(invalid!("set {id}: filter {j} holds {} keys of {}", slot.load, slot.capacity));
                }
            }
        }
        if columns != self.sets.values().map(Vec::len).sum::<usize>() {
            return Err(invalid!("parts hold {columns} filters, sets name a different number"));
        }
        if grown != self.grown {
            return Err(invalid!("grown count {} but {grown} sets have several filters", self.grown));
        }
        Ok(())
    }
}

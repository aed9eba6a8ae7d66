//! Dynamic Bloom filters (Guo, Wu, Chen and Luo, *The Dynamic Bloom
//! Filters*, IEEE TKDE 22(1), 2010, `dynamic-bloom-filters.txt`), a
//! [`SlicedIndex`](bloomslice::SlicedIndex) of dynamic sets, and incremental XOR-delta sync.
//!
//! A [`DynamicBloomFilter`] (DBF) represents a set of changing cardinality by
//! `s` homogeneous [`CountingBloomFilter`]s (the paper's SBFs, "counting
//! Bloom filters for the sake of supporting the item deletion operation"),
//! each of capacity `c` items.
//!
//! # Mapping to the paper
//!
//! | Paper                                              | Here                                           |
//! |----------------------------------------------------|------------------------------------------------|
//! | Algorithm 1 `Insert`, `GetActiveStandardBF`        | [`DynamicBloomFilter::insert`]                 |
//! | Section 3.5.1 insert with a membership query first | [`DynamicBloomFilter::insert_if_absent`]       |
//! | Algorithm 2 `Query`                                | [`DynamicBloomFilter::contains`]               |
//! | Algorithm 3 `Delete` and `Merge()`                 | [`DynamicBloomFilter::remove`]                 |
//! | union of DBFs                                      | [`DynamicBloomFilter::union_with`]             |
//! | eq. (3) / eq. (12) false-match probability         | [`false_positive_rate`], [`DynamicBloomFilter::expected_fpr`] |
//! | Section 4.2 memory-optimal `s` for a known pmf     | [`optimal_design`]                             |
//! | Section 4.4 distributed DBFs                       | [`DynamicDelta`] (XOR-delta sync)               |
//! | a set owning several filters in an index           | [`DynamicSlicedIndex`]                         |
//!
//! # Choices the paper leaves open
//!
//! * **Initial state.** "The initial value of s is one, and the initial SBF
//!   is active": a new DBF holds one empty member, and `Merge()` never drops
//!   the last member.
//! * **Active member** is the *first* member with `nr < c`
//!   (`GetActiveStandardBF` scans `j = 1..s`), so after deletions an older
//!   member is refilled before a new one is added.
//! * **Delete with several matching members** (the item "may appear to be
//!   in multiple SBFs") removes nothing and reports
//!   [`DeleteOutcome::Ambiguous`] with the number of matches, as Algorithm 3
//!   keeps the membership information to avoid false negatives. Delete with
//!   no matching member is refused with [`DynamicError::NotPresent`].
//! * **Merge condition.** The text says two members are merged when "the
//!   addition of their nr is not greater than the capacity c", the
//!   pseudocode uses `<`; the text (`nr_j + nr_k <= c`) is followed. Merging
//!   adds counters, saturating at 15 (see [`crate::counting`]).
//! * **Union of two DBFs** (same parameters and capacity) appends the other
//!   DBF's members and then runs `Merge()`; the result answers `true` for
//!   every key either operand answers `true` for.
//! * **Insert with query** (Section 3.5.1) skips the insertion when the key
//!   is already reported present (set semantics; a false positive is then
//!   not inserted, which is the point: it saves members). Plain
//!   [`DynamicBloomFilter::insert`] is Algorithm 1 (multiset semantics).
//! * **Section 4.2** uses `m = (N/s) log(f) / log(0.6185)` bits per member;
//!   [`optimal_design`] minimises the paper's objective over `s = 1..=max_s`
//!   exactly as written (with the real-valued m), then rounds `m` up to whole
//!   bits and sets `k = ceil((m / c) ln 2)` as Section 4.3 does.
//! * **Incremental sync** (Section 4.4 only asks that nodes exchange DBFs
//!   with a common configuration): the sender keeps the version it last
//!   sent; [`DynamicBloomFilter::delta_since`] lists, per member index, the
//!   XOR of the packed counters for members that changed, whole counters for
//!   members that were added, and the new member count (members removed by
//!   merges are truncated). A delta carries a fingerprint of its base and of
//!   its result; [`DynamicBloomFilter::apply_delta`] refuses a delta whose
//!   base does not match and checks the result, so a successful apply is
//!   bit-identical to a full copy.
//! * **Queries of [`DynamicSlicedIndex`]** map each matching column to its
//!   set through a dense `Vec` indexed by column id (column ids are reused
//!   after deletes, so the table stays as long as the most columns ever
//!   live), then sort and dedupe the few set ids of each answer;
//!   [`DynamicSlicedIndex::query_batch`] does the same on the plain index's
//!   prefetched batch, in place. Over the same member columns it answers
//!   a little slower than a plain [`SlicedIndex`](bloomslice::SlicedIndex) (measured: see
//!   `bench/RESULTS.md`, section "Papers: dynamic and counting"); a seen-array would need interior mutability in
//!   `&self` queries and was not needed.

//!
//! The module is split by concern: the filter here, [`DynamicSlicedIndex`]
//! in `index.rs`, the [`DynamicDelta`] wire format in `delta.rs` and the
//! paper's formulas in `formulas.rs`.

mod delta;
mod formulas;
mod index;

pub use delta::{DELTA_MAGIC, DELTA_VERSION, DynamicDelta, MemberDelta};
pub use formulas::{DynamicDesign, OPTIMAL_BASE, false_positive_rate, optimal_design, standard_false_positive_rate};
pub use index::DynamicSlicedIndex;

use crate::counting::{CountingBloomFilter, CountingError};
use bloomslice::BloomParams;
use bloomslice::Error;
use bloomslice::{Key, KeyHash};

/// What the dynamic filters and index fail with: their own errors, a
/// member's [`CountingError`] in [`DynamicError::Counting`], and the core's
/// [`Error`]s (ids, parameters, sizes, memory) wrapped in
/// [`DynamicError::Core`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DynamicError {
    /// The capacity `c` of a member filter must be at least 1.
    #[error("the capacity of a member filter must be at least 1")]
    ZeroCapacity,
    /// Two DBFs with different member capacities cannot be combined.
    #[error("capacity mismatch: expected {expected}, found {found}")]
    CapacityMismatch {
        /// The receiving DBF's capacity.
        expected: u64,
        /// The offered capacity.
        found: u64,
    },
    /// Delete of a key that no member filter reports (Algorithm 3 rejects it).
    #[error("key not present in any member filter")]
    NotPresent,
    /// A delta computed against another version than the receiver's.
    #[error("delta base does not match this filter (expected fingerprint {expected:#x}, found {found:#x})")]
    DeltaBaseMismatch {
        /// The fingerprint the delta was computed against.
        expected: u64,
        /// The receiver's fingerprint.
        found: u64,
    },
    /// A delta that is inconsistent (bad member index or length, or a result
    /// whose fingerprint is not the one the sender computed).
    #[error("malformed delta: {0}")]
    MalformedDelta(&'static str),
    /// Invalid input to the Section 4.2 optimiser or to the formulas.
    #[error("invalid design input: {0}")]
    InvalidDesign(&'static str),
    /// An error the core names (an unknown id, mismatched parameters,
    /// memory, a broken invariant).
    #[error(transparent)]
    Core(#[from] bloomslice::Error),
    /// An error of a member's counting filter.
    #[error(transparent)]
    Counting(#[from] CountingError),
}

/// `Result` with [`DynamicError`].
pub type Result<T, E = DynamicError> = core::result::Result<T, E>;

impl bloomslice::index::IndexedFilter for DynamicBloomFilter {
    type Error = DynamicError;

    fn insert_key_hash(&mut self, hash: KeyHash) -> Result<()> {
        self.try_insert_hash(hash).map(drop)
    }
}

/// What [`DynamicBloomFilter::remove`] did with a key some member reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// Exactly one member matched; the key was removed from it (its
    /// counters decremented, `nr` decreased, `Merge()` run).
    Removed,
    /// `matching` (>= 2) members report the key; it was kept to avoid false
    /// negatives (Algorithm 3).
    Ambiguous {
        /// How many members report the key.
        matching: usize,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Member {
    filter: CountingBloomFilter,
    /// The paper's `nr`: items accommodated by this member.
    items: u64,
}

/// A dynamic Bloom filter: `s >= 1` counting filters of capacity `c`.
///
/// ```
/// use bloomslice::BloomParams;
/// use bloomslice_papers::{DeleteOutcome, DynamicBloomFilter};
///
/// let mut dbf = DynamicBloomFilter::new(BloomParams::new(1024, 4)?, 50)?;
/// for i in 0..120u32 {
///     dbf.insert(&i.to_le_bytes());
/// }
/// assert_eq!(dbf.filter_count(), 3); // ceil(120 / 50)
/// assert!(dbf.contains(&7u32.to_le_bytes()));
/// assert!(matches!(dbf.remove(&7u32.to_le_bytes())?, DeleteOutcome::Removed | DeleteOutcome::Ambiguous { .. }));
/// # Ok::<(), bloomslice_papers::DynamicError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamicBloomFilter {
    params: BloomParams,
    capacity: u64,
    members: Vec<Member>,
}

/// What a mutation changed, for the sliced index.
enum Change {
    /// Only member `i`'s counters at the key's positions changed.
    Member(usize),
    /// Members were merged or added: resync every column.
    All,
    /// Nothing changed.
    None,
}

impl DynamicBloomFilter {
    /// A DBF with one empty member filter of `params` and capacity
    /// `capacity` items per member.
    ///
    /// # Errors
    ///
    /// [`DynamicError::ZeroCapacity`], or an allocation failure.
    pub fn new(params: BloomParams, capacity: u64) -> Result<Self> {
        if capacity == 0 {
            return Err(DynamicError::ZeroCapacity);
        }
        let first = Member { filter: CountingBloomFilter::new(params)?, items: 0 };
        Ok(DynamicBloomFilter { params, capacity, members: vec![first] })
    }

    /// The member filters' parameters.
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// The capacity `c` of each member filter.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The number `s` of member filters.
    pub fn filter_count(&self) -> usize {
        self.members.len()
    }

    /// Member filter `i` and its item count `nr`.
    pub fn member(&self, i: usize) -> Option<(&CountingBloomFilter, u64)> {
        self.members.get(i).map(|m| (&m.filter, m.items))
    }

    /// Total items accommodated (the sum of the members' `nr`).
    pub fn items(&self) -> u64 {
        self.members.iter().map(|m| m.items).sum()
    }

    /// Algorithm 1: inserts into the first member with `nr < c`, adding a
    /// member first if all are full. Returns the member index used.
    ///
    /// # Panics
    ///
    /// Only if a new member cannot be allocated (as `Vec` growth does); use
    /// [`DynamicBloomFilter::try_insert`] to get an error instead.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> usize {
        self.try_insert_hash(self.params.hash(key)).expect("allocating a member filter")
    }

    /// Algorithm 1 by the key's hash, with allocation failure as an error.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] if a member cannot be allocated;
    /// unchanged then.
    pub fn try_insert_hash(&mut self, hash: KeyHash) -> Result<usize> {
        let pos = self.params.probes(hash);
        let i = self.active_member()?;
        let m = &mut self.members[i];
        m.filter.insert_positions(&pos);
        m.items += 1;
        Ok(i)
    }

    /// [`DynamicBloomFilter::try_insert_hash`] for a key.
    ///
    /// # Errors
    ///
    /// As [`DynamicBloomFilter::try_insert_hash`].
    pub fn try_insert<K: Key + ?Sized>(&mut self, key: &K) -> Result<usize> {
        self.try_insert_hash(self.params.hash(key))
    }

    /// `GetActiveStandardBF`, creating a member when none is active.
    fn active_member(&mut self) -> Result<usize> {
        if let Some(i) = self.members.iter().position(|m| m.items < self.capacity) {
            return Ok(i);
        }
        self.members.try_reserve(1).map_err(|_| Error::CapacityOverflow("member list"))?;
        self.members.push(Member { filter: CountingBloomFilter::new(self.params)?, items: 0 });
        Ok(self.members.len() - 1)
    }

    /// Section 3.5.1: inserts the key only if the DBF does not already
    /// report it. Returns the member used, or `None` if the key was reported
    /// present and nothing was inserted.
    ///
    /// # Errors
    ///
    /// As [`DynamicBloomFilter::try_insert_hash`].
    pub fn insert_if_absent<K: Key + ?Sized>(&mut self, key: &K) -> Result<Option<usize>> {
        let hash = self.params.hash(key);
        if self.contains_hash(hash) {
            return Ok(None);
        }
        self.try_insert_hash(hash).map(Some)
    }

    /// Algorithm 2: whether any member reports the key.
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.params.hash(key))
    }

    /// [`DynamicBloomFilter::contains`] by the key's hash.
    pub fn contains_hash(&self, hash: KeyHash) -> bool {
        let pos = self.params.probes(hash);
        self.members.iter().any(|m| m.filter.contains_positions(&pos))
    }

    /// Algorithm 3: removes the key if exactly one member reports it, then
    /// runs `Merge()`.
    ///
    /// # Errors
    ///
    /// [`DynamicError::NotPresent`] if no member reports the key; unchanged.
    pub fn remove<K: Key + ?Sized>(&mut self, key: &K) -> Result<DeleteOutcome> {
        self.remove_hash(self.params.hash(key))
    }

    /// [`DynamicBloomFilter::remove`] by the key's hash.
    ///
    /// # Errors
    ///
    /// As [`DynamicBloomFilter::remove`].
    pub fn remove_hash(&mut self, hash: KeyHash) -> Result<DeleteOutcome> {
        self.remove_tracked(hash).map(|(outcome, _)| outcome)
    }

    fn remove_tracked(&mut self, hash: KeyHash) -> Result<(DeleteOutcome, Change)> {
        let pos = self.params.probes(hash);
        let pos: &[u32] = &pos;
        let mut matching = self.members.iter().enumerate().filter(|(_, m)| m.filter.contains_positions(pos));
        let Some((index, _)) = matching.next() else {
            return Err(DynamicError::NotPresent);
        };
        let more = matching.count();
        if more > 0 {
            return Ok((DeleteOutcome::Ambiguous { matching: more + 1 }, Change::None));
        }
        let member = &mut self.members[index];
        // All counters are non-zero; with repeated probe positions the
        // counting filter may still refuse (the key cannot be in it).
        member.filter.remove_positions(pos).map_err(|e| match e {
            CountingError::NotPresent { .. } => DynamicError::NotPresent,
            other => other.into(),
        })?;
        member.items = member.items.saturating_sub(1);
        let merged = self.merge();
        Ok((DeleteOutcome::Removed, if merged { Change::All } else { Change::Member(index) }))
    }

    /// The paper's `Merge()`: for each member `j` with `nr_j < c`, the first
    /// later member `k` with `nr_j + nr_k <= c` is unioned into `j` and
    /// removed. Returns whether anything was merged.
    fn merge(&mut self) -> bool {
        let mut merged = false;
        let mut j = 0;
        while j < self.members.len() {
            if self.members[j].items < self.capacity {
                let found = (j + 1..self.members.len())
                    .find(|&k| self.members[j].items + self.members[k].items <= self.capacity);
                if let Some(k) = found {
                    let other = self.members.remove(k);
                    let target = &mut self.members[j];
                    // Same parameters by construction.
                    let _ = target.filter.union_with(&other.filter);
                    target.items += other.items;
                    merged = true;
                }
            }
            j += 1;
        }
        merged
    }

    /// Union: appends `other`'s members and runs `Merge()`. Every key either
    /// operand reports is reported by the result.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or
    /// [`DynamicError::CapacityMismatch`]; unchanged.
    pub fn union_with(&mut self, other: &DynamicBloomFilter) -> Result<()> {
        self.params.check_same(&other.params)?;
        if self.capacity != other.capacity {
            return Err(DynamicError::CapacityMismatch { expected: self.capacity, found: other.capacity });
        }
        self.members.try_reserve(other.members.len()).map_err(|_| Error::CapacityOverflow("member list"))?;
        self.members.extend(other.members.iter().cloned());
        self.merge();
        Ok(())
    }

    /// The bit views of the members, in member order.
    ///
    /// # Errors
    ///
    /// An allocation failure.
    pub fn bit_views(&self) -> Result<Vec<bloomslice::BloomFilter>> {
        self.members.iter().map(|m| m.filter.to_bloom_filter().map_err(Into::into)).collect()
    }

    /// Eq. (3) at this DBF's parameters and current item count.
    pub fn expected_fpr(&self) -> f64 {
        false_positive_rate(self.params.m(), self.params.k(), self.capacity, self.items())
    }

    /// Checks the invariants: at least one member, every member valid and
    /// with the DBF's parameters, `nr <= c`.
    ///
    /// # Errors
    ///
    /// A description of the first broken invariant.
    pub fn validate(&self) -> bloomslice::Result<()> {
        if self.members.is_empty() {
            return Err(invalid!("no member filter"));
        }
        for (i, m) in self.members.iter().enumerate() {
            m.filter.validate()?;
            if *m.filter.params() != self.params {
                return Err(invalid!("member {i}: other parameters"));
            }
            if m.items > self.capacity {
                return Err(invalid!("member {i}: nr {} > c {}", m.items, self.capacity));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq3_reduces_to_eq1_and_eq12() {
        let (m, k, c) = (1000, 5, 100);
        assert!((false_positive_rate(m, k, c, 50) - standard_false_positive_rate(m, k, 50)).abs() < 1e-15);
        let f = standard_false_positive_rate(m, k, c);
        let eq12 = 1.0 - (1.0 - f).powi(4);
        assert!((false_positive_rate(m, k, c, 400) - eq12).abs() < 1e-12);
        assert!(false_positive_rate(m, k, c, 1000) < standard_false_positive_rate(m, k, 1000));
    }

    #[test]
    fn merge_follows_the_text() {
        let mut d = DynamicBloomFilter::new(BloomParams::new(512, 3).unwrap(), 2).unwrap();
        for i in 0u32..6 {
            d.insert(&i.to_le_bytes());
        }
        assert_eq!(d.filter_count(), 3);
        // Removing one item from members 0 and 1 lets them merge (1 + 1 <= 2).
        let mut removed = 0;
        for i in 0u32..6 {
            if removed < 2 && matches!(d.remove(&i.to_le_bytes()), Ok(DeleteOutcome::Removed)) {
                removed += 1;
                if removed == 1 {
                    assert_eq!(d.filter_count(), 3);
                }
            }
        }
        d.validate().unwrap();
        assert_eq!(d.filter_count(), 2);
        assert_eq!(d.items(), 4);
    }
}

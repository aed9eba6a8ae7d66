//! Dynamic Bloom filters (Guo, Wu, Chen and Luo, *The Dynamic Bloom
//! Filters*, IEEE TKDE 22(1), 2010, `dynamic-bloom-filters.txt`), a
//! [`SlicedIndex`] of dynamic sets, and incremental XOR-delta sync.
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
//!   a little slower than a plain [`SlicedIndex`] (measured: see
//!   `bench/RESULTS.md`); a seen-array would need interior mutability in
//!   `&self` queries and was not needed.

use hashbrown::HashMap;

use crate::counting::{CountingBloomFilter, CountingError};
use crate::error::Error;
use crate::error::Result;
use crate::hash::{Key, KeyHash};
use crate::params::{BloomParams, MAX_HASHES};
use crate::sliced::{BatchResults, SlicedIndex};

/// The constant of the paper's optimal sizing `m = n log(f) / log(0.6185)`
/// (`0.6185 ~ (1/2)^(ln 2)`), as Section 4.2 prints it.
pub const OPTIMAL_BASE: f64 = 0.6185;

/// The errors of dynamic Bloom filters themselves, nested in
/// [`Error::Dynamic`] (ids, parameters and sizes are plain [`Error`]s).
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
/// use bloomslice::{BloomParams, DeleteOutcome, DynamicBloomFilter};
///
/// let mut dbf = DynamicBloomFilter::new(BloomParams::new(1024, 4)?, 50)?;
/// for i in 0..120u32 {
///     dbf.insert(&i.to_le_bytes());
/// }
/// assert_eq!(dbf.filter_count(), 3); // ceil(120 / 50)
/// assert!(dbf.contains(&7u32.to_le_bytes()));
/// assert!(matches!(dbf.remove(&7u32.to_le_bytes())?, DeleteOutcome::Removed | DeleteOutcome::Ambiguous { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
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
            return Err(DynamicError::ZeroCapacity.into());
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
            return Err(DynamicError::NotPresent.into());
        };
        let more = matching.count();
        if more > 0 {
            return Ok((DeleteOutcome::Ambiguous { matching: more + 1 }, Change::None));
        }
        let member = &mut self.members[index];
        // All counters are non-zero; with repeated probe positions the
        // counting filter may still refuse (the key cannot be in it).
        member.filter.remove_positions(pos).map_err(|e| match e {
            Error::Counting(CountingError::NotPresent { .. }) => DynamicError::NotPresent.into(),
            other => other,
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
        if self.params != other.params {
            return Err(Error::ParamsMismatch { expected: self.params, found: other.params });
        }
        if self.capacity != other.capacity {
            return Err(DynamicError::CapacityMismatch { expected: self.capacity, found: other.capacity }.into());
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
    pub fn bit_views(&self) -> Result<Vec<crate::BloomFilter>> {
        self.members.iter().map(|m| m.filter.to_bloom_filter()).collect()
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
    pub fn validate(&self) -> crate::Result<()> {
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

    /// A 64-bit fingerprint of the whole state (parameters, capacity, every
    /// member's counters and `nr`), used to check deltas.
    pub fn fingerprint(&self) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(&self.params.m().to_le_bytes());
        h.update(&self.params.k().to_le_bytes());
        h.update(&self.params.seed().to_le_bytes());
        h.update(&self.capacity.to_le_bytes());
        h.update(&(self.members.len() as u64).to_le_bytes());
        for m in &self.members {
            h.update(&m.items.to_le_bytes());
            h.update(m.filter.counter_bytes());
        }
        h.digest()
    }

    /// The delta that turns `previous` (an earlier version of this DBF, as
    /// the receiver holds it) into `self`: XOR of the packed counters of the
    /// members that changed, whole counters of added members.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`DynamicError::CapacityMismatch`].
    pub fn delta_since(&self, previous: &DynamicBloomFilter) -> Result<DynamicDelta> {
        if self.params != previous.params {
            return Err(Error::ParamsMismatch { expected: self.params, found: previous.params });
        }
        if self.capacity != previous.capacity {
            return Err(DynamicError::CapacityMismatch { expected: previous.capacity, found: self.capacity }.into());
        }
        let mut changes = Vec::new();
        for (i, m) in self.members.iter().enumerate() {
            match previous.members.get(i) {
                Some(old) if old == m => {}
                Some(old) => {
                    let mut xor = Vec::new();
                    m.filter.xor_bytes_into(&old.filter, &mut xor);
                    changes.push(MemberDelta { index: i, items: m.items, xor });
                }
                None => {
                    changes.push(MemberDelta { index: i, items: m.items, xor: m.filter.counter_bytes().to_vec() });
                }
            }
        }
        Ok(DynamicDelta {
            base: previous.fingerprint(),
            result: self.fingerprint(),
            filter_count: self.members.len(),
            changes,
        })
    }

    /// Applies a delta from [`DynamicBloomFilter::delta_since`]; afterwards
    /// `self` is bit-identical to the sender's DBF. All or nothing.
    ///
    /// # Errors
    ///
    /// [`DynamicError::DeltaBaseMismatch`] if `self` is not the delta's base,
    /// [`DynamicError::MalformedDelta`] if the delta is inconsistent;
    /// unchanged after an error.
    pub fn apply_delta(&mut self, delta: &DynamicDelta) -> Result<()> {
        let found = self.fingerprint();
        if found != delta.base {
            return Err(DynamicError::DeltaBaseMismatch { expected: delta.base, found }.into());
        }
        if delta.filter_count == 0 {
            return Err(DynamicError::MalformedDelta("zero member filters").into());
        }
        // Every added member travels whole in the delta, so the member count
        // can grow by at most the number of changes (this also bounds what a
        // hostile delta can make the receiver allocate).
        if delta.filter_count > self.members.len() + delta.changes.len() {
            return Err(DynamicError::MalformedDelta("more new members than changes").into());
        }
        let mut next = self.clone();
        next.members.truncate(delta.filter_count);
        for change in &delta.changes {
            if change.index >= delta.filter_count || change.items > self.capacity {
                return Err(DynamicError::MalformedDelta("member index or item count out of range").into());
            }
            while next.members.len() <= change.index {
                next.members.push(Member { filter: CountingBloomFilter::new(self.params)?, items: 0 });
            }
            let m = &mut next.members[change.index];
            m.filter.apply_xor(&change.xor).map_err(|_| DynamicError::MalformedDelta("bad counter bytes"))?;
            m.items = change.items;
        }
        if next.members.len() != delta.filter_count || next.fingerprint() != delta.result {
            return Err(DynamicError::MalformedDelta("result does not match the sender's fingerprint").into());
        }
        *self = next;
        Ok(())
    }
}

/// One changed member in a [`DynamicDelta`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberDelta {
    /// Member index.
    pub index: usize,
    /// The member's new `nr`.
    pub items: u64,
    /// XOR of the new and old packed counters (the whole counters for a
    /// member the base does not have).
    pub xor: Vec<u8>,
}

/// The changes that turn one version of a DBF into a later one (Section 4.4
/// incremental sync); see [`DynamicBloomFilter::delta_since`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamicDelta {
    /// Fingerprint of the version the delta applies to.
    pub base: u64,
    /// Fingerprint of the version it produces.
    pub result: u64,
    /// Member count of the result (members beyond it are dropped).
    pub filter_count: usize,
    /// The changed or added members.
    pub changes: Vec<MemberDelta>,
}

/// Magic bytes that open a serialized [`DynamicDelta`].
pub const DELTA_MAGIC: [u8; 4] = *b"BSDD";

/// Version of the [`DynamicDelta`] wire format.
pub const DELTA_VERSION: u8 = 1;

impl DynamicDelta {
    /// Bytes of counter payload the delta carries (what would be sent).
    pub fn payload_bytes(&self) -> usize {
        self.changes.iter().map(|c| c.xor.len()).sum()
    }

    /// The wire format, little-endian: magic `BSDD`, version 1, base and
    /// result fingerprints (u64), member count (u32), change count (u32),
    /// then per change its member index (u32), `nr` (u64), payload length
    /// (u32) and payload bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(29 + self.changes.len() * 16 + self.payload_bytes());
        out.extend_from_slice(&DELTA_MAGIC);
        out.push(DELTA_VERSION);
        out.extend_from_slice(&self.base.to_le_bytes());
        out.extend_from_slice(&self.result.to_le_bytes());
        out.extend_from_slice(&(self.filter_count as u32).to_le_bytes());
        out.extend_from_slice(&(self.changes.len() as u32).to_le_bytes());
        for c in &self.changes {
            out.extend_from_slice(&(c.index as u32).to_le_bytes());
            out.extend_from_slice(&c.items.to_le_bytes());
            out.extend_from_slice(&(c.xor.len() as u32).to_le_bytes());
            out.extend_from_slice(&c.xor);
        }
        out
    }

    /// Parses [`DynamicDelta::to_bytes`] output. Checked: a wrong magic or
    /// version, truncation, trailing bytes, a zero member count, or member
    /// indices that are out of range or not strictly increasing are errors,
    /// never panics. (Payload lengths are checked against the receiver's
    /// parameters by [`DynamicBloomFilter::apply_delta`].)
    ///
    /// # Errors
    ///
    /// [`DynamicError::MalformedDelta`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        struct Reader<'a>(&'a [u8]);
        impl<'a> Reader<'a> {
            fn take(&mut self, n: usize) -> Result<&'a [u8]> {
                if self.0.len() < n {
                    return Err(DynamicError::MalformedDelta("truncated").into());
                }
                let (head, rest) = self.0.split_at(n);
                self.0 = rest;
                Ok(head)
            }
            fn u32(&mut self) -> Result<u32> {
                Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
            }
            fn u64(&mut self) -> Result<u64> {
                Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
            }
        }
        let mut r = Reader(bytes);
        if r.take(4)? != DELTA_MAGIC {
            return Err(DynamicError::MalformedDelta("bad magic").into());
        }
        if r.take(1)?[0] != DELTA_VERSION {
            return Err(DynamicError::MalformedDelta("unsupported version").into());
        }
        let base = r.u64()?;
        let result = r.u64()?;
        let filter_count = r.u32()? as usize;
        if filter_count == 0 {
            return Err(DynamicError::MalformedDelta("zero member filters").into());
        }
        let n = r.u32()? as usize;
        if n > filter_count {
            return Err(DynamicError::MalformedDelta("more changes than members").into());
        }
        let mut changes = Vec::new();
        for _ in 0..n {
            let index = r.u32()? as usize;
            if index >= filter_count || changes.last().is_some_and(|c: &MemberDelta| c.index >= index) {
                return Err(DynamicError::MalformedDelta("member indices out of range or not increasing").into());
            }
            let items = r.u64()?;
            let len = r.u32()? as usize;
            let xor = r.take(len)?.to_vec();
            changes.push(MemberDelta { index, items, xor });
        }
        if !r.0.is_empty() {
            return Err(DynamicError::MalformedDelta("trailing bytes").into());
        }
        Ok(DynamicDelta { base, result, filter_count, changes })
    }
}

/// Eq. (1) of the paper: false-match probability of one filter of `m` bits
/// and `k` hashes holding `n` items, `(1 - e^(-k n / m))^k`.
pub fn standard_false_positive_rate(m: u64, k: u32, n: u64) -> f64 {
    if m == 0 {
        return 1.0;
    }
    (1.0 - (-(f64::from(k)) * n as f64 / m as f64).exp()).powi(k as i32)
}

/// Eq. (3): false-match probability of a DBF of members with `m` bits, `k`
/// hashes and capacity `c` holding `n` items:
/// `1 - (1 - f(c))^floor(n/c) * (1 - f(n - c floor(n/c)))` with `f` of
/// eq. (1). For `n <= c` it is eq. (1); for `n` a multiple of `c` it is
/// eq. (12), `1 - (1 - (1 - e^(-k c / m))^k)^(n/c)`.
pub fn false_positive_rate(m: u64, k: u32, c: u64, n: u64) -> f64 {
    if c == 0 {
        return 1.0;
    }
    let full = n / c;
    let last = n - c * full;
    let keep = (1.0 - standard_false_positive_rate(m, k, c)).powf(full as f64)
        * (1.0 - standard_false_positive_rate(m, k, last));
    1.0 - keep
}

/// The result of the Section 4.2 optimisation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DynamicDesign {
    /// Number of member filters `s`.
    pub filters: usize,
    /// Capacity `c = ceil(N / s)` of each member.
    pub capacity: u64,
    /// Per-member false-match bound `f = 1 - (1 - F)^(1/s)`.
    pub member_fpr: f64,
    /// Bits per member, `ceil(c log f / log 0.6185)`.
    pub m: u64,
    /// Hash functions, `ceil((m / c) ln 2)`.
    pub k: u32,
    /// The minimised objective `sum_i r_i (N/s) log f / log 0.6185`: the
    /// expected number of bits the DBF uses.
    pub expected_bits: f64,
}

/// Section 4.2: the memory-optimal number of members `s` for a set whose
/// cardinality `i` has probability `pmf[i - 1]` (`i = 1..=N`, `N =
/// pmf.len()`), under an overall false-match bound `bound` (the paper's
/// `F`). Minimises `sum_{i=1..s} r_i (N/s) log(f) / log(0.6185)` with
/// `f = 1 - (1 - F)^(1/s)`, `r_1 = 1`, `r_i = sum_{j = c(i-1)+1..N} p_j`
/// over `s = 1..=max_s`.
///
/// # Errors
///
/// [`DynamicError::InvalidDesign`] for an empty or negative pmf, a bound
/// outside (0, 1), or `max_s == 0`.
pub fn optimal_design(pmf: &[f64], bound: f64, max_s: usize) -> Result<DynamicDesign> {
    let n = pmf.len();
    if n == 0 {
        return Err(DynamicError::InvalidDesign("empty cardinality distribution").into());
    }
    if pmf.iter().any(|p| !p.is_finite() || *p < 0.0) || pmf.iter().sum::<f64>() <= 0.0 {
        return Err(DynamicError::InvalidDesign("probabilities must be finite, non-negative, not all zero").into());
    }
    if !(bound > 0.0 && bound < 1.0) {
        return Err(DynamicError::InvalidDesign("false-match bound outside (0, 1)").into());
    }
    if max_s == 0 {
        return Err(DynamicError::InvalidDesign("max_s must be at least 1").into());
    }
    let total: f64 = pmf.iter().sum();
    // tail[j] = P(cardinality >= j + 1) (normalised), tail[n] = 0.
    let mut tail = vec![0.0; n + 1];
    for j in (0..n).rev() {
        tail[j] = tail[j + 1] + pmf[j] / total;
    }
    let mut best: Option<DynamicDesign> = None;
    for s in 1..=max_s.min(n) {
        let c = n.div_ceil(s);
        let f = 1.0 - (1.0 - bound).powf(1.0 / s as f64);
        let per_item = f.ln() / OPTIMAL_BASE.ln();
        let r_sum: f64 = 1.0 + (2..=s).map(|i| tail[(c * (i - 1)).min(n)]).sum::<f64>();
        let bits = r_sum * (n as f64 / s as f64) * per_item;
        if best.is_none_or(|b| bits < b.expected_bits) {
            let m = (c as f64 * per_item).ceil().max(1.0) as u64;
            let k = ((m as f64 / c as f64) * core::f64::consts::LN_2).ceil().clamp(1.0, f64::from(MAX_HASHES)) as u32;
            best = Some(DynamicDesign { filters: s, capacity: c as u64, member_fpr: f, m, k, expected_bits: bits });
        }
    }
    best.ok_or(DynamicError::InvalidDesign("no design").into())
}

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
/// use bloomslice::{BloomParams, DynamicSlicedIndex};
///
/// let mut index = DynamicSlicedIndex::new(BloomParams::new(2048, 4)?, 16)?;
/// index.insert_set(9)?;
/// for i in 0..100u32 {
///     index.insert_key(9, &i.to_le_bytes())?;
/// }
/// assert!(index.columns() >= 7); // ceil(100 / 16) members
/// assert_eq!(index.query(&5u32.to_le_bytes()), vec![9]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
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

impl DynamicSlicedIndex {
    /// An empty index of dynamic sets whose members have `params` and
    /// capacity `capacity`.
    ///
    /// # Errors
    ///
    /// [`DynamicError::ZeroCapacity`].
    pub fn new(params: BloomParams, capacity: u64) -> Result<Self> {
        if capacity == 0 {
            return Err(DynamicError::ZeroCapacity.into());
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

    /// Number of sets.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether there is no set.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Number of columns (member filters over all sets).
    pub fn columns(&self) -> usize {
        self.index.len()
    }

    /// The dynamic filter of set `id`.
    pub fn get(&self, id: u64) -> Option<&DynamicBloomFilter> {
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

    /// Whether a set is stored under `id`.
    pub fn contains_id(&self, id: u64) -> bool {
        self.sets.contains_key(&id)
    }

    /// The dynamic filter of set `id` (a copy).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`].
    pub fn get_filter(&self, id: u64) -> Result<DynamicBloomFilter> {
        self.get(id).cloned().ok_or(Error::UnknownId(id))
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
            return Err(Error::DuplicateId(id));
        }
        if filter.params != *self.params() {
            return Err(Error::ParamsMismatch { expected: *self.params(), found: filter.params });
        }
        if filter.capacity != self.capacity {
            return Err(DynamicError::CapacityMismatch { expected: self.capacity, found: filter.capacity }.into());
        }
        self.sets.insert(id, DynamicSet { filter: filter.clone(), columns: Vec::new() });
        if let Err(e) = self.resync(id) {
            let set = self.sets.remove(&id).expect("just inserted");
            for col in set.columns {
                let _ = self.index.delete_filter(col);
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
    pub fn delete_filter(&mut self, id: u64) -> Result<()> {
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
            self.index.delete_filter(*col)?;
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
            self.index.delete_filter(col)?;
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
                    return Err(e);
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

    /// Inserts a key into set `id` (Algorithm 1; a new column when the set
    /// grows a member).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`] or an allocation failure.
    pub fn insert_key<K: Key + ?Sized>(&mut self, id: u64, key: &K) -> Result<()> {
        self.insert_key_hash(id, self.params().hash(key))
    }

    /// [`DynamicSlicedIndex::insert_key`] by the key's hash.
    ///
    /// # Errors
    ///
    /// As [`DynamicSlicedIndex::insert_key`].
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

    /// Ids of the sets that may contain `key`, each once, ascending.
    pub fn query<K: Key + ?Sized>(&self, key: &K) -> Vec<u64> {
        let mut out = Vec::new();
        self.query_hash_into(self.params().hash(key), &mut out);
        out
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
    pub fn validate(&self) -> crate::Result<()> {
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
                if self.index.get_filter(*col).map_err(|e| invalid!("{e}"))? != *view {
                    return Err(invalid!("set {id}: column {col} differs from its member"));
                }
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

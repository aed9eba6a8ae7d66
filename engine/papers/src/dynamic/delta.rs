//! The [`DynamicDelta`] of Section 4.4 incremental sync: what changed
//! between two versions of a [`DynamicBloomFilter`], how to apply it, and
//! its little-endian wire format (read with the bounded reader of the index
//! file format, [`crate::persist`]).

use super::Result;
use super::{DynamicBloomFilter, DynamicError, Member};
use crate::counting::CountingBloomFilter;

impl DynamicBloomFilter {
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
    /// [`Error::ParamsMismatch`](bloomslice::Error::ParamsMismatch) or
    /// [`DynamicError::CapacityMismatch`].
    pub fn delta_since(&self, previous: &DynamicBloomFilter) -> Result<DynamicDelta> {
        self.params.check_same(&previous.params)?;
        if self.capacity != previous.capacity {
            return Err(DynamicError::CapacityMismatch { expected: previous.capacity, found: self.capacity });
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
            return Err(DynamicError::DeltaBaseMismatch { expected: delta.base, found });
        }
        if delta.filter_count == 0 {
            return Err(DynamicError::MalformedDelta("zero member filters"));
        }
        // Every added member travels whole in the delta, so the member count
        // can grow by at most the number of changes (this also bounds what a
        // hostile delta can make the receiver allocate).
        if delta.filter_count > self.members.len() + delta.changes.len() {
            return Err(DynamicError::MalformedDelta("more new members than changes"));
        }
        let mut next = self.clone();
        next.members.truncate(delta.filter_count);
        for change in &delta.changes {
            if change.index >= delta.filter_count || change.items > self.capacity {
                return Err(DynamicError::MalformedDelta("member index or item count out of range"));
            }
            while next.members.len() <= change.index {
                next.members.push(Member { filter: CountingBloomFilter::new(self.params)?, items: 0 });
            }
            let m = &mut next.members[change.index];
            m.filter.apply_xor(&change.xor).map_err(|_| DynamicError::MalformedDelta("bad counter bytes"))?;
            m.items = change.items;
        }
        if next.members.len() != delta.filter_count || next.fingerprint() != delta.result {
            return Err(DynamicError::MalformedDelta("result does not match the sender's fingerprint"));
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
        let truncated = || DynamicError::MalformedDelta("truncated");
        let mut r = LeReader(bytes);
        if r.take(4).ok_or_else(truncated)? != DELTA_MAGIC {
            return Err(DynamicError::MalformedDelta("bad magic"));
        }
        if r.take(1).ok_or_else(truncated)?[0] != DELTA_VERSION {
            return Err(DynamicError::MalformedDelta("unsupported version"));
        }
        let base = r.u64().ok_or_else(truncated)?;
        let result = r.u64().ok_or_else(truncated)?;
        let filter_count = r.u32().ok_or_else(truncated)? as usize;
        if filter_count == 0 {
            return Err(DynamicError::MalformedDelta("zero member filters"));
        }
        let n = r.u32().ok_or_else(truncated)? as usize;
        if n > filter_count {
            return Err(DynamicError::MalformedDelta("more changes than members"));
        }
        let mut changes = Vec::new();
        for _ in 0..n {
            let index = r.u32().ok_or_else(truncated)? as usize;
            if index >= filter_count || changes.last().is_some_and(|c: &MemberDelta| c.index >= index) {
                return Err(DynamicError::MalformedDelta("member indices out of range or not increasing"));
            }
            let items = r.u64().ok_or_else(truncated)?;
            let len = r.u32().ok_or_else(truncated)? as usize;
            let xor = r.take(len).ok_or_else(truncated)?.to_vec();
            changes.push(MemberDelta { index, items, xor });
        }
        if !r.is_empty() {
            return Err(DynamicError::MalformedDelta("trailing bytes"));
        }
        Ok(DynamicDelta { base, result, filter_count, changes })
    }
}

/// A bounded little-endian reader over the bytes of a delta: every read
/// checks the length first, so short input is `None`, never a panic.
struct LeReader<'a>(&'a [u8]);

impl<'a> LeReader<'a> {
    /// The next `n` bytes, or `None` if fewer are left.
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let head = self.0.get(..n)?;
        self.0 = &self.0[n..];
        Some(head)
    }

    /// The next little-endian `u32`.
    fn u32(&mut self) -> Option<u32> {
        self.take(4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes)
    }

    /// The next little-endian `u64`.
    fn u64(&mut self) -> Option<u64> {
        self.take(8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes)
    }

    /// Whether every byte has been read.
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

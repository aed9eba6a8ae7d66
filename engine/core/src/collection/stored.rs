//! What files need of a [`SetIndex`]: its parts and filters as plain
//! data and a collection rebuilt from them (checked), a one-part collection
//! of an existing [`SlicedIndex`] (how a format-1 index file opens as a
//! collection), the k-mer label of a sequence collection, and
//! [`SetIndex::replace_set`].

use hashbrown::HashMap;

use super::layout::{self, Layout, PartPlan};
use super::{Part, SetIndex, Slot, Tuning};
use crate::error::{Error, Result};
use crate::filter::BloomFilter;
use crate::hash::Key;
use crate::kmer::KmerLength;
use crate::params::HashScheme;
use crate::sliced::SlicedIndex;

/// One filter of a set as a collection file stores it: the set, which of
/// its filters (0 for its first), its part, capacity and load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StoredFilter {
    pub(crate) id: u64,
    pub(crate) number: u32,
    pub(crate) part: usize,
    pub(crate) capacity: u64,
    pub(crate) load: u64,
}

/// Everything of a collection but its parts' indexes, as a file holds it.
#[derive(Clone, Debug)]
pub(crate) struct StoredHead {
    pub(crate) p: f64,
    pub(crate) k: u32,
    pub(crate) scheme: HashScheme,
    pub(crate) seed: u64,
    pub(crate) kmer_length: Option<KmerLength>,
    pub(crate) layout: Layout,
}

/// Keys a Bloom filter of `m` bits and `k` hash functions holding `ones`
/// set bits was most likely given: `-(m / k) ln(1 - ones / m)` (Swamidass
/// and Baldi), `u64::MAX` for a full filter.
fn estimated_load(ones: u64, m: u64, k: u32) -> u64 {
    let fill = ones as f64 / m as f64;
    if fill >= 1.0 {
        return u64::MAX;
    }
    let n = -(m as f64 / f64::from(k)) * (-fill).ln_1p();
    // `as` saturates; the estimate is finite and non-negative here.
    n.round() as u64
}

impl SetIndex {
    /// A collection of one part, `index` (kept as it is: a mapped index
    /// stays mapped), at target false-positive rate `p`. The part's
    /// capacity is the keys a filter of its `m` bits and `k` hash
    /// functions holds at rate `p`; each set's load is estimated from the
    /// set bits of its column (`-(m / k) ln(1 - bits / m)`), capped at
    /// that capacity, so a set whose filter is over-full gains a filter on
    /// its next [`SetIndex::add_keys`]. The collection takes the index's
    /// `k`, hash scheme, seed and k-mer length. Answers, scores and
    /// thresholds are the index's.
    ///
    /// A format-1 index file opens as such a collection, at
    /// `p = 2^-k` (the rate whose Bloofi rule `k = ceil(log2(1/p))` gives
    /// the file's `k`).
    ///
    /// ```
    /// use bloomslice::{BloomFilter, BloomParams, SetIndex, SlicedIndex};
    ///
    /// let params = BloomParams::for_capacity(100, 0.01)?;
    /// let mut index = SlicedIndex::new(params);
    /// let mut filter = BloomFilter::new(params)?;
    /// for key in 0..60u64 {
    ///     filter.insert(&key.to_le_bytes());
    /// }
    /// index.insert_filter(7, &filter)?;
    /// let collection = SetIndex::from_index(index, 0.01)?;
    /// assert_eq!(collection.query(&3u64.to_le_bytes()), [7]);
    /// let load = collection.filters(7).unwrap()[0].load;
    /// assert!((50..=70).contains(&load), "{load}");
    /// # Ok::<(), bloomslice::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidFalsePositiveRate`] for a `p` outside (0, 1).
    pub fn from_index(index: SlicedIndex, p: f64) -> Result<SetIndex> {
        Self::from_index_estimated(index, p, true)
    }

    /// [`SetIndex::from_index`]; with `exact` false, each set's load is
    /// estimated from its shard's recorded bit count shared evenly among
    /// the shard's sets, which reads no row (for a mapped index whose rows
    /// are not verified yet; [`SetIndex::estimate_loads`] refines it).
    pub(crate) fn from_index_estimated(index: SlicedIndex, p: f64, exact: bool) -> Result<SetIndex> {
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::InvalidFalsePositiveRate(p));
        }
        let params = *index.params();
        let (m, k) = (params.m(), params.k());
        let capacity = layout::capacity_of(m, p, k).max(1);
        let ones: Vec<(u64, u64)> = if exact {
            index.ones_per_filter()
        } else {
            let shards: Vec<u64> = index.shard_views().map(|(_, ones, _)| ones).collect();
            let mut per_shard = vec![0u64; shards.len()];
            let entries = index.column_entries();
            for &(_, shard, _) in &entries {
                per_shard[shard as usize] += 1;
            }
            entries.iter().map(|&(id, shard, _)| (id, shards[shard as usize] / per_shard[shard as usize])).collect()
        };
        let mut sets = HashMap::new();
        sets.try_reserve(ones.len()).map_err(|_| Error::CapacityOverflow("set map"))?;
        let mut loads = Vec::with_capacity(ones.len());
        for &(id, bits) in &ones {
            let load = estimated_load(bits, m, k).min(capacity);
            loads.push(load);
            sets.insert(id, vec![Slot { part: 0, capacity, load }]);
        }
        let plan = PartPlan { min_size: 0, capacity, m, sets: ones.len(), bits: m.saturating_mul(ones.len() as u64) };
        let layout = Layout::of_plans(p, k, vec![plan], &loads)?;
        let kmer_length = index.kmer_length();
        let tuning = Tuning::of(index.config());
        Ok(SetIndex {
            p,
            k,
            scheme: params.scheme(),
            seed: params.seed(),
            parts: vec![Part { capacity, index }],
            sets,
            grown: 0,
            layout,
            kmer_length,
            tuning,
        })
    }

    /// Re-estimates the loads of a collection made by
    /// [`SetIndex::from_index_estimated`] from every column's bits, as
    /// [`SetIndex::from_index`] does (one pass over the rows).
    pub(crate) fn estimate_loads(&mut self) {
        for (i, part) in self.parts.iter().enumerate() {
            let (m, k) = (part.index.params().m(), part.index.params().k());
            for (id, bits) in part.index.ones_per_filter() {
                if let Some(slots) = self.sets.get_mut(&id)
                    && let [slot] = slots.as_mut_slice()
                    && slot.part == i
                {
                    slot.load = estimated_load(bits, m, k).min(slot.capacity);
                }
            }
        }
    }

    /// The k-mer length when this is a sequence collection: its keys are
    /// the canonical k-mers of [`crate::kmer`] and queries must use the
    /// same length. `None` for a collection of other keys. Saved in
    /// collection files.
    pub fn kmer_length(&self) -> Option<KmerLength> {
        self.kmer_length
    }

    /// Records (or clears) the k-mer length of a sequence collection, in
    /// the collection and in every part. The filters are not touched: this
    /// labels what their keys are.
    pub fn set_kmer_length(&mut self, k: Option<KmerLength>) {
        self.kmer_length = k;
        for part in &mut self.parts {
            part.index.set_kmer_length(k);
        }
    }

    /// Replaces the keys of set `id` with `keys`: afterwards the set
    /// answers for exactly `keys` (up to false positives), in one filter
    /// in the part of least capacity that holds their number (a new part
    /// sized for them if none does), as [`SetIndex::insert_set`] places
    /// a new set. The set keeps its id; its other filters are removed.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`], or [`Error::CapacityOverflow`]; the sets are
    /// unchanged after an error (a part may have been added, empty).
    pub fn replace_set<K: Key>(&mut self, id: u64, keys: &[K]) -> Result<()> {
        let old = self.sets.get(&id).ok_or(Error::UnknownId(id))?.clone();
        let size = keys.len() as u64;
        let part = self.part_for_size(size)?;
        let mut filter = BloomFilter::new(*self.parts[part].index.params())?;
        for key in keys {
            filter.insert_hash(self.hash(key));
        }
        // Copies of the set's filters, put back if a step below fails.
        let saved: Vec<BloomFilter> =
            old.iter().map(|slot| self.parts[slot.part].index.filter_cloned(id)).collect::<Result<_>>()?;
        for (done, slot) in old.iter().enumerate() {
            if let Err(e) = self.parts[slot.part].index.remove_set(id) {
                self.restore(id, &old[..done], &saved);
                return Err(e);
            }
        }
        if let Err(e) = self.parts[part].index.insert_filter(id, &filter) {
            self.restore(id, &old, &saved);
            return Err(e);
        }
        let capacity = self.parts[part].capacity;
        if old.len() > 1 {
            self.grown -= 1;
        }
        self.sets.insert(id, vec![Slot { part, capacity, load: size }]);
        Ok(())
    }

    /// Puts back the filters `saved` of set `id` into the parts of
    /// `slots` (after a failed [`SetIndex::replace_set`]). Only an
    /// allocation failure can stop it, and then the first error is the
    /// one reported.
    fn restore(&mut self, id: u64, slots: &[Slot], saved: &[BloomFilter]) {
        for (slot, filter) in slots.iter().zip(saved) {
            let _ = self.parts[slot.part].index.insert_filter(id, filter);
        }
    }

    /// Adds a set under a new id holding `filter` as it is: in the first
    /// part of the filter's parameters, or in a new part of them. Its
    /// capacity is the keys the filter holds at rate `p`, its load
    /// estimated from its bits (as [`SetIndex::from_index`] does).
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateId`]; [`Error::ParamsMismatch`] for a filter
    /// whose `k`, hash scheme or seed differ from the collection's;
    /// [`Error::CapacityOverflow`]. The sets are unchanged after an error
    /// (a part may have been added, empty).
    pub(crate) fn insert_filter_set(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        if self.sets.contains_key(&id) {
            return Err(Error::DuplicateId(id));
        }
        let params = *filter.params();
        let wanted = self.params_with(params.m())?;
        if params != wanted {
            return Err(Error::ParamsMismatch { expected: wanted, found: params });
        }
        let capacity = layout::capacity_of(params.m(), self.p, self.k).max(1);
        let part = match self.parts.iter().position(|part| *part.index.params() == params) {
            Some(i) => i,
            None => self.push_part(params.m(), capacity)?,
        };
        self.sets.try_reserve(1).map_err(|_| Error::CapacityOverflow("set map"))?;
        self.parts[part].index.insert_filter(id, filter)?;
        let load = estimated_load(filter.count_ones(), params.m(), params.k()).min(capacity);
        self.sets.insert(id, vec![Slot { part, capacity, load }]);
        Ok(())
    }

    /// The one part that holds filters, when exactly one does: its answers
    /// are then the collection's (callers use it to skip the collection's
    /// own buffers).
    pub(crate) fn only_part(&self) -> Option<&SlicedIndex> {
        self.single_part()
    }

    /// [`SetIndex::query_hash_into`] appending to `out` (what was there
    /// stays): every live part appends its ids, and when some set has
    /// grown the appended ids are sorted and deduplicated.
    #[inline]
    pub(crate) fn query_hash_append(&self, hash: crate::hash::KeyHash, out: &mut Vec<u64>) {
        // One part (every format-1 file): its answer as it is, without
        // the walk over the parts.
        if let [part] = self.parts.as_slice() {
            part.index.query_hash_append(hash, out);
            return;
        }
        let start = out.len();
        let resident = self.rows_resident();
        for (_, index) in self.live_parts() {
            Self::part_append(index, hash, out, resident);
        }
        if self.grown > 0 {
            let tail = &mut out[start..];
            tail.sort_unstable();
            let mut kept = 0;
            for i in 0..tail.len() {
                if kept == 0 || tail[i] != tail[kept - 1] {
                    tail[kept] = tail[i];
                    kept += 1;
                }
            }
            out.truncate(start + kept);
        }
    }

    /// Every part as `(capacity, index)`, in part order.
    pub(crate) fn stored_parts(&self) -> impl ExactSizeIterator<Item = (u64, &SlicedIndex)> + '_ {
        self.parts.iter().map(|part| (part.capacity, &part.index))
    }

    /// Every filter of every set, by ascending id and then filter number.
    pub(crate) fn stored_filters(&self) -> Vec<StoredFilter> {
        let mut ids: Vec<u64> = self.sets.keys().copied().collect();
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            for (number, slot) in self.sets[&id].iter().enumerate() {
                out.push(StoredFilter {
                    id,
                    number: number as u32,
                    part: slot.part,
                    capacity: slot.capacity,
                    load: slot.load,
                });
            }
        }
        out
    }

    /// Everything but the parts' indexes and the sets.
    pub(crate) fn stored_head(&self) -> StoredHead {
        StoredHead {
            p: self.p,
            k: self.k,
            scheme: self.scheme,
            seed: self.seed,
            kmer_length: self.kmer_length,
            layout: self.layout.clone(),
        }
    }

    /// A collection from what a file stores, checked without reading any
    /// row: the parts share `k`, scheme and seed; `filters` are in
    /// (id, number) order, each set's numbered from 0 without gaps; every
    /// filter names an existing part that holds its set's column, no set
    /// has two filters in one part, and the parts hold no other column;
    /// loads are within capacities and every filter but a set's last is
    /// full. The parts' own invariants ([`SlicedIndex::validate`]) are the
    /// caller's to check.
    ///
    /// # Errors
    ///
    /// [`Error::CorruptFile`] naming the first thing that is wrong.
    pub(crate) fn from_stored(
        head: StoredHead,
        parts: Vec<(u64, SlicedIndex)>,
        filters: &[StoredFilter],
    ) -> Result<SetIndex> {
        let bad = |msg: String| Err(Error::CorruptFile(msg));
        let StoredHead { p, k, scheme, seed, kmer_length, layout } = head;
        if !(p > 0.0 && p < 1.0) {
            return bad(format!("false-positive rate {p} is outside (0, 1)"));
        }
        for (i, (capacity, index)) in parts.iter().enumerate() {
            let params = index.params();
            if params.k() != k || params.scheme() != scheme || params.seed() != seed {
                return bad(format!("part {i}: k, hash scheme or seed differs from the collection's"));
            }
            if *capacity == 0 {
                return bad(format!("part {i}: capacity 0"));
            }
        }
        let mut sets: HashMap<u64, Vec<Slot>> = HashMap::new();
        sets.try_reserve(filters.len()).map_err(|_| Error::CapacityOverflow("set map"))?;
        let mut grown = 0;
        let mut current: Option<(u64, Vec<Slot>)> = None;
        for f in filters {
            let Some((_, index)) = parts.get(f.part) else {
                return bad(format!("set {}: filter {} is in part {} of {}", f.id, f.number, f.part, parts.len()));
            };
            if !index.contains(f.id) {
                return bad(format!("set {}: filter {} is missing from part {}", f.id, f.number, f.part));
            }
            if f.load > f.capacity || f.capacity == 0 {
                return bad(format!("set {}: filter {} holds {} keys of {}", f.id, f.number, f.load, f.capacity));
            }
            let slot = Slot { part: f.part, capacity: f.capacity, load: f.load };
            match &mut current {
                Some((id, slots)) if *id == f.id => {
                    if f.number as usize != slots.len() {
                        return bad(format!("set {}: filter {} follows filter {}", f.id, f.number, slots.len() - 1));
                    }
                    if slots.iter().any(|s| s.part == f.part) {
                        return bad(format!("set {}: two filters in part {}", f.id, f.part));
                    }
                    let last = slots.last().copied().unwrap_or(slot);
                    if last.load != last.capacity {
                        return bad(format!(
                            "set {}: filter {} grew before filter {} was full",
                            f.id,
                            f.number,
                            f.number - 1
                        ));
                    }
                    slots.push(slot);
                }
                _ => {
                    if let Some((id, slots)) = current.take() {
                        if id > f.id {
                            return bad(format!("set table: set {} follows set {id} (not by ascending id)", f.id));
                        }
                        grown += usize::from(slots.len() > 1);
                        sets.insert(id, slots);
                    }
                    if sets.contains_key(&f.id) {
                        return bad(format!("set table: set id {} appears twice", f.id));
                    }
                    if f.number != 0 {
                        return bad(format!("set {}: its first filter is numbered {}", f.id, f.number));
                    }
                    current = Some((f.id, vec![slot]));
                }
            }
        }
        if let Some((id, slots)) = current.take() {
            grown += usize::from(slots.len() > 1);
            sets.insert(id, slots);
        }
        let columns: usize = parts.iter().map(|(_, index)| index.len()).sum();
        if columns != filters.len() {
            return bad(format!("parts hold {columns} filters but the set table lists {}", filters.len()));
        }
        Ok(SetIndex {
            p,
            k,
            scheme,
            seed,
            parts: parts.into_iter().map(|(capacity, index)| Part { capacity, index }).collect(),
            sets,
            grown,
            layout,
            kmer_length,
            tuning: Tuning::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::BloomParams;

    #[test]
    fn load_estimate_inverts_the_fill() {
        let params = BloomParams::for_capacity(1000, 0.01).unwrap();
        for n in [0u64, 1, 10, 500, 1000, 3000] {
            let mut f = BloomFilter::new(params).unwrap();
            for key in 0..n {
                f.insert(&key.to_le_bytes());
            }
            let got = estimated_load(f.count_ones(), params.m(), params.k());
            let tolerance = 5.0 + 0.1 * n as f64;
            assert!((got as f64 - n as f64).abs() <= tolerance, "{n}: {got}");
        }
        assert_eq!(estimated_load(64, 64, 3), u64::MAX);
    }

    #[test]
    fn replace_set_replaces_keys_and_drops_grown_filters() {
        let keys = |r: std::ops::Range<u64>| -> Vec<[u8; 8]> { r.map(u64::to_le_bytes).collect() };
        let small = keys(0..20);
        let sets = vec![(1u64, small.clone()), (2, small)];
        let mut c = SetIndex::build(&sets, 0.01, crate::LayoutConfig::default()).unwrap();
        c.add_keys(1, &keys(100..400)).unwrap();
        assert!(c.filter_count(1).unwrap() > 1);
        assert_eq!(c.grown_sets(), 1);
        c.replace_set(1, &keys(1000..1010)).unwrap();
        c.validate().unwrap();
        assert_eq!((c.filter_count(1), c.grown_sets()), (Some(1), 0));
        assert!(c.query(&1005u64.to_le_bytes()).contains(&1));
        assert_eq!(c.filters(1).unwrap()[0].load, 10);
        let big = keys(0..5000);
        c.replace_set(2, &big).unwrap();
        c.validate().unwrap();
        assert!(big.iter().all(|k| c.query(k).contains(&2)));
        assert_eq!(c.replace_set(9, &big), Err(Error::UnknownId(9)));
    }
}

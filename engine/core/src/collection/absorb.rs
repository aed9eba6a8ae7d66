//! [`SetIndex::absorb`]: the sets of one collection added to another as
//! their filters are, without their keys (merging shard files, adding the
//! sets of another file).

use super::{Part, SetIndex, Slot};
use crate::error::{Error, Result};
use crate::filter::BloomFilter;
use crate::params::BloomParams;

impl SetIndex {
    /// Adds every set of `other` under its own id, each filter as it is (no
    /// key is hashed again): a filter goes to this collection's first part
    /// of the same parameters and capacity, or else to a new part like its
    /// own. A set keeps its filters, their capacities and loads, so its
    /// false-positive bound ([`SetIndex::fpr_bound`]) is unchanged.
    ///
    /// ```
    /// use bloomslice::{SetIndex, LayoutConfig};
    ///
    /// let small: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
    /// let large: Vec<String> = (0..5000).map(|i| format!("l{i}")).collect();
    /// let mut a = SetIndex::build(&[(1, small.clone())], 0.01, LayoutConfig::default())?;
    /// let b = SetIndex::build(&[(2, small), (3, large)], 0.01, LayoutConfig::default())?;
    /// a.absorb(&b)?;
    /// assert_eq!(a.len(), 3);
    /// assert!(a.query("l42").contains(&3));
    /// # Ok::<(), bloomslice::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] when `k`, the hash scheme or the seed
    /// differ, [`Error::Invalid`] when the target rates differ,
    /// [`Error::DuplicateId`] for an id both hold; the collection is then
    /// unchanged. [`Error::CapacityOverflow`] when memory runs out.
    pub fn absorb(&mut self, other: &SetIndex) -> Result<()> {
        self.absorb_with(other, |id| id)
    }

    /// [`SetIndex::absorb`], set `id` of `other` becoming set `new_id(id)`
    /// here (for example the next free ids, when the ids of two files
    /// overlap).
    ///
    /// # Errors
    ///
    /// As [`SetIndex::absorb`]; [`Error::DuplicateId`] also when `new_id`
    /// maps two sets to one id.
    pub fn absorb_with(&mut self, other: &SetIndex, new_id: impl Fn(u64) -> u64) -> Result<()> {
        if other.k != self.k || other.scheme != self.scheme || other.seed != self.seed {
            let mine = self.params_with(64)?;
            let theirs = BloomParams::new(64, other.k)?.with_scheme(other.scheme).with_seed(other.seed);
            return Err(Error::ParamsMismatch { expected: mine, found: theirs });
        }
        if other.p.to_bits() != self.p.to_bits() {
            return Err(invalid!("target false-positive rates differ: {} and {}", self.p, other.p));
        }
        let mut taken = hashbrown::HashSet::with_capacity(other.sets.len());
        for &id in other.sets.keys() {
            let id = new_id(id);
            if self.sets.contains_key(&id) || !taken.insert(id) {
                return Err(Error::DuplicateId(id));
            }
        }
        // Where each of `other`'s parts goes.
        let mut target = Vec::with_capacity(other.parts.len());
        for part in &other.parts {
            let params = *part.index.params();
            let same =
                self.parts.iter().position(|mine| *mine.index.params() == params && mine.capacity == part.capacity);
            let i = match same {
                Some(i) => i,
                None => {
                    self.parts.try_reserve(1).map_err(|_| Error::CapacityOverflow("part list"))?;
                    self.parts.push(Part {
                        capacity: part.capacity,
                        index: crate::sliced::SlicedIndex::with_config(params, *part.index.config()),
                    });
                    self.parts.len() - 1
                }
            };
            target.push(i);
        }
        for (j, part) in other.parts.iter().enumerate() {
            let mut ids: Vec<u64> = part.index.ids().collect();
            ids.sort_unstable();
            let filters: Vec<(u64, BloomFilter)> =
                ids.iter().map(|&id| part.index.filter_cloned(id).map(|f| (new_id(id), f))).collect::<Result<_>>()?;
            let refs: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
            self.parts[target[j]].index.insert_filters(&refs)?;
        }
        self.sets.try_reserve(other.sets.len()).map_err(|_| Error::CapacityOverflow("set map"))?;
        for (&id, slots) in &other.sets {
            let moved: Vec<Slot> = slots.iter().map(|s| Slot { part: target[s.part], ..*s }).collect();
            if moved.len() > 1 {
                self.grown += 1;
            }
            self.sets.insert(new_id(id), moved);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collection::LayoutConfig;

    fn keys(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}-{i}")).collect()
    }

    #[test]
    fn absorbed_sets_answer_as_before_and_grown_sets_stay_grown() {
        let mut a = SetIndex::build(&[(1, keys("a", 10)), (2, keys("b", 900))], 0.01, LayoutConfig::default()).unwrap();
        let mut b =
            SetIndex::build(&[(7, keys("c", 10)), (8, keys("d", 40_000))], 0.01, LayoutConfig::default()).unwrap();
        b.add_keys(7, &keys("grow", 500)).unwrap();
        let bound = b.fpr_bound(7).unwrap();
        let before = a.parts.len();
        a.absorb(&b).unwrap();
        a.validate().unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!(a.grown_sets(), 1);
        assert_eq!(a.fpr_bound(7), Some(bound));
        assert!(a.parts.len() > before);
        for (id, prefix, n) in [(1, "a", 10), (2, "b", 900), (7, "c", 10), (7, "grow", 500), (8, "d", 40_000)] {
            for key in keys(prefix, n).iter().step_by(7) {
                assert!(a.query(key).contains(&id), "{key}");
            }
        }
        // Counted once per key across its filters.
        let mut scores = crate::score::Scores::new();
        a.score_into(&keys("grow", 500), &mut scores);
        assert_eq!(scores.iter().find(|&(id, _)| id == 7).map(|(_, c)| c), Some(500));
    }

    #[test]
    fn collisions_and_other_parameters_leave_the_collection_unchanged() {
        let mut a = SetIndex::build(&[(1, keys("a", 10))], 0.01, LayoutConfig::default()).unwrap();
        let same_id = SetIndex::build(&[(1, keys("b", 10))], 0.01, LayoutConfig::default()).unwrap();
        assert!(matches!(a.absorb(&same_id), Err(Error::DuplicateId(1))));
        assert!(matches!(a.absorb_with(&same_id, |_| 1), Err(Error::DuplicateId(1))));
        let two = SetIndex::build(&[(5, keys("b", 10)), (6, keys("c", 10))], 0.01, LayoutConfig::default()).unwrap();
        assert!(matches!(a.absorb_with(&two, |_| 9), Err(Error::DuplicateId(9))));
        let other_rate = SetIndex::build(&[(2, keys("b", 10))], 0.001, LayoutConfig::default()).unwrap();
        assert!(matches!(a.absorb(&other_rate), Err(Error::ParamsMismatch { .. })));
        let other_seed = SetIndex::build_with_hashing(
            &[(2, keys("b", 10))],
            0.01,
            LayoutConfig::default(),
            crate::params::HashScheme::default(),
            5,
        )
        .unwrap();
        assert!(matches!(a.absorb(&other_seed), Err(Error::ParamsMismatch { .. })));
        let near_rate = SetIndex::build(&[(2, keys("b", 10))], 0.0101, LayoutConfig::default()).unwrap();
        assert!(matches!(a.absorb(&near_rate), Err(Error::Invalid(_))));
        assert_eq!(a.len(), 1);
        a.validate().unwrap();
        a.absorb_with(&same_id, |id| id + 10).unwrap();
        assert!(a.query("b-3").contains(&11));
        a.validate().unwrap();
    }
}

//! The set verbs every index a user can hold shares (`insert_set`,
//! `add_keys`, `replace_set`, `remove_set`), for a [`SlicedIndex`]: each
//! set is one filter of the index's parameters, built from its keys.

use super::SlicedIndex;
use crate::error::{Error, Result};
use crate::filter::BloomFilter;
use crate::hash::Key;

impl SlicedIndex {
    /// A filter of this index's parameters holding `keys`.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] if the filter cannot be allocated.
    pub fn filter_of<K: Key>(&self, keys: &[K]) -> Result<BloomFilter> {
        let mut filter = BloomFilter::new(*self.params())?;
        for key in keys {
            filter.insert_hash(self.params().hash(key));
        }
        Ok(filter)
    }

    /// Stores the set `keys` under the new id `id`, as one filter of the
    /// index's parameters ([`SlicedIndex::insert_filter`]).
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateId`] or memory; the index is unchanged.
    pub fn insert_set<K: Key>(&mut self, id: u64, keys: &[K]) -> Result<()> {
        let filter = self.filter_of(keys)?;
        self.insert_filter(id, &filter)
    }

    /// Adds `keys` to set `id`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged.
    pub fn add_keys<K: Key>(&mut self, id: u64, keys: &[K]) -> Result<()> {
        if !self.contains(id) {
            return Err(Error::UnknownId(id));
        }
        for key in keys {
            self.insert_key_hash(id, self.params().hash(key))?;
        }
        Ok(())
    }

    /// Replaces set `id`'s keys with `keys` (its column is rewritten).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`] or memory; the index is unchanged.
    pub fn replace_set<K: Key>(&mut self, id: u64, keys: &[K]) -> Result<()> {
        let filter = self.filter_of(keys)?;
        self.replace_filter(id, &filter)
    }

    /// Replaces the filter `id` with `filter`.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::UnknownId`]; the index is
    /// unchanged.
    pub fn replace_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params().check_same(filter.params())?;
        if !self.contains(id) {
            return Err(Error::UnknownId(id));
        }
        self.remove_set(id)?;
        self.insert_filter(id, filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::BloomParams;

    #[test]
    fn set_verbs_answer_as_filters() {
        let mut index = SlicedIndex::new(BloomParams::new(4096, 5).unwrap());
        index.insert_set(1, &["a", "b"]).unwrap();
        assert_eq!(index.insert_set(1, &["c"]), Err(Error::DuplicateId(1)));
        index.add_keys(1, &["c"]).unwrap();
        assert!(["a", "b", "c"].iter().all(|k| index.query(k).contains(&1)));
        assert_eq!(index.add_keys(2, &["c"]), Err(Error::UnknownId(2)));
        index.replace_set(1, &["d"]).unwrap();
        assert_eq!(index.filter_cloned(1).unwrap(), index.filter_of(&["d"]).unwrap());
        assert_eq!(index.replace_set(3, &["d"]), Err(Error::UnknownId(3)));
        index.remove_set(1).unwrap();
        assert!(index.is_empty());
        index.validate().unwrap();
    }
}

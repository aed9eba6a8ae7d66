//! [`FilterIndex`]: what every all-membership index of the crate shares
//! (insert, delete and update a filter under an id, insert a key, query one
//! key or a batch, size and invariants), so that tests, fuzz targets and
//! benchmarks are written once for all of them.
//!
//! Each index keeps its own inherent methods with the same names and
//! signatures (so calling them needs no import); the trait is for code that
//! is generic over indexes. Answers list each matching id once; the order
//! is the index's own (sort to compare two indexes).

use crate::error::Error;
use crate::filter::BloomFilter;
use crate::hash::{Key, KeyHash};
use crate::params::BloomParams;
use crate::sliced::BatchResults;

/// A filter that an index stores under an id: something keys can be
/// inserted into. Implemented by [`BloomFilter`] here and by the counting
/// and dynamic filters of the `bloomslice-papers` crate.
pub trait IndexedFilter: Clone + core::fmt::Debug {
    /// What inserting a key can fail with ([`Error`] for a plain filter,
    /// which never fails).
    type Error: std::error::Error + From<Error> + Send + Sync + 'static;

    /// Inserts a key given by its hash (see [`BloomParams::hash`]).
    ///
    /// # Errors
    ///
    /// Only filters that can run out of room fail (a dynamic filter past
    /// its member limit); the filter is unchanged then.
    fn insert_key_hash(&mut self, hash: KeyHash) -> Result<(), Self::Error>;
}

impl IndexedFilter for BloomFilter {
    type Error = Error;

    fn insert_key_hash(&mut self, hash: KeyHash) -> Result<(), Error> {
        self.insert_hash(hash);
        Ok(())
    }
}

/// An index of many filters that share one [`BloomParams`], answering
/// *which filters may contain this key?*
///
/// ```
/// use bloomslice::{BloomParams, FilterIndex, NaiveIndex, SlicedIndex};
///
/// /// Works the same on every index type.
/// fn load<I: FilterIndex>(index: &mut I) -> Result<(), I::Error> {
///     for id in 0..10u64 {
///         let mut filter = index.new_filter()?;
///         index.insert_filter(id, &filter)?;
///         index.insert_key(id, &id.to_le_bytes())?;
///     }
///     Ok(())
/// }
/// let params = BloomParams::new(4096, 4)?;
/// let (mut a, mut b) = (SlicedIndex::new(params), NaiveIndex::new(params));
/// load(&mut a)?;
/// load(&mut b)?;
/// assert!(FilterIndex::query(&a, &3u64.to_le_bytes()).contains(&3));
/// assert_eq!(FilterIndex::len(&a), FilterIndex::len(&b));
/// # Ok::<(), bloomslice::Error>(())
/// ```
pub trait FilterIndex {
    /// The filter stored under each id.
    type Filter: IndexedFilter;

    /// What the index's writes fail with: [`Error`] for the core's
    /// indexes; the indexes of the `bloomslice-papers` crate have their own
    /// error types, which wrap [`Error`] (hence `From<Error>`).
    type Error: std::error::Error + From<Error> + Send + Sync + 'static;

    /// The parameters every filter shares.
    fn params(&self) -> &BloomParams;

    /// Number of filters.
    fn len(&self) -> usize;

    /// Whether the index holds no filter.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a filter is stored under `id`.
    fn contains(&self, id: u64) -> bool;

    /// An empty filter that fits this index (its parameters, and for a
    /// dynamic index its member capacity).
    ///
    /// # Errors
    ///
    /// When the filter cannot be allocated.
    fn new_filter(&self) -> Result<Self::Filter, Self::Error>;

    /// Adds `filter` under a new id.
    ///
    /// # Errors
    ///
    /// A duplicate id, a filter with other parameters, or memory; the index
    /// is unchanged after an error.
    fn insert_filter(&mut self, id: u64, filter: &Self::Filter) -> Result<(), Self::Error>;

    /// Removes the filter `id`.
    ///
    /// # Errors
    ///
    /// An unknown id; the index is unchanged.
    fn remove_set(&mut self, id: u64) -> Result<(), Self::Error>;

    /// Merges `filter` into the filter `id` (adds its keys).
    ///
    /// # Errors
    ///
    /// An unknown id or a filter with other parameters; the index is
    /// unchanged.
    fn update_filter(&mut self, id: u64, filter: &Self::Filter) -> Result<(), Self::Error>;

    /// A copy of the filter stored under `id` (rebuilt from its column by
    /// the sliced indexes). Indexes that keep each filter whole also have
    /// an inherent `filter(id) -> Option<&Filter>` that borrows it.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`], or memory.
    fn filter_cloned(&self, id: u64) -> Result<Self::Filter, Self::Error>;

    /// Inserts one key, by its hash, into the filter `id`.
    ///
    /// # Errors
    ///
    /// An unknown id; the index is unchanged.
    fn insert_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<(), Self::Error>;

    /// Ids of the filters that may contain the key hashed as `hash`, into
    /// `out` (cleared first), each once.
    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>);

    /// Answers for every hash of `hashes`, in order, into `results`
    /// (replacing its contents). The default queries one key at a time;
    /// the sliced indexes batch (hash first, prefetch rows ahead).
    fn query_batch_hashes(&self, hashes: &[KeyHash], results: &mut BatchResults) {
        results.clear();
        let mut out = Vec::new();
        for &hash in hashes {
            self.query_hash_into(hash, &mut out);
            results.push_answer(&out);
        }
    }

    /// Bytes of memory the index holds.
    fn memory_bytes(&self) -> usize;

    /// Checks every invariant (tests and fuzz targets call it after each
    /// operation).
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] describing the first broken invariant.
    fn validate(&self) -> Result<(), Error>;

    /// Inserts `key` into the filter `id`.
    ///
    /// # Errors
    ///
    /// As [`FilterIndex::insert_key_hash`].
    fn insert_key<K: Key + ?Sized>(&mut self, id: u64, key: &K) -> Result<(), Self::Error>
    where
        Self: Sized,
    {
        let hash = self.params().hash(key);
        self.insert_key_hash(id, hash)
    }

    /// Ids of the filters that may contain `key`, into `out` (cleared first).
    fn query_into<K: Key + ?Sized>(&self, key: &K, out: &mut Vec<u64>)
    where
        Self: Sized,
    {
        self.query_hash_into(self.params().hash(key), out);
    }

    /// Ids of the filters that may contain `key`.
    fn query<K: Key + ?Sized>(&self, key: &K) -> Vec<u64>
    where
        Self: Sized,
    {
        collected(|out| self.query_into(key, out))
    }

    /// Answers for every key of `keys`, in order, into `results`.
    fn query_batch<K: Key>(&self, keys: &[K], results: &mut BatchResults)
    where
        Self: Sized,
    {
        let hashes: Vec<KeyHash> = keys.iter().map(|k| self.params().hash(k)).collect();
        self.query_batch_hashes(&hashes, results);
    }
}

/// The allocating form of an `_into` method: a new `Vec` that `fill` fills
/// (as `query` is `query_into` into a new `Vec`).
#[inline]
pub(crate) fn collected<T>(fill: impl FnOnce(&mut Vec<T>)) -> Vec<T> {
    let mut out = Vec::new();
    fill(&mut out);
    out
}

/// The verbs that take a key rather than its hash, written once for every
/// index type as inherent methods (so calling them needs no trait import):
/// `insert_key`, and with `query` also `query`. They hash the key with the
/// index's parameters and call `insert_key_hash` / `query_hash_into`;
/// `$error` is what `insert_key_hash` fails with. Exported (hidden) for the
/// indexes of the `bloomslice-papers` crate.
#[doc(hidden)]
#[macro_export]
macro_rules! key_verbs {
    ($index:ident: $error:ty $(, $query:ident)?) => {
        impl $index {
            /// Inserts `key` into the filter `id`: [`Self::insert_key_hash`]
            /// of the key's hash under the index's parameters.
            ///
            /// # Errors
            ///
            /// As [`Self::insert_key_hash`]; the index is unchanged.
            pub fn insert_key<K: $crate::hash::Key + ?Sized>(&mut self, id: u64, key: &K) -> ::core::result::Result<(), $error> {
                let hash = self.params().hash(key);
                self.insert_key_hash(id, hash)
            }
        }
        $($crate::key_verbs!(@$query $index);)?
    };
    (@query $index:ident) => {
        impl $index {
            /// Ids of the filters that may contain `key`, as
            /// [`Self::query_hash_into`] gives them.
            pub fn query<K: $crate::hash::Key + ?Sized>(&self, key: &K) -> Vec<u64> {
                let mut out = Vec::new();
                self.query_hash_into(self.params().hash(key), &mut out);
                out
            }
        }
    };
}

/// The id verbs of an index whose ids are the keys of one map field,
/// written once: `len`, `is_empty`, `contains`, and with `ids` also
/// `ids`. Exported (hidden) for the `bloomslice-papers` crate.
#[doc(hidden)]
#[macro_export]
macro_rules! id_verbs {
    ($index:ident, $map:ident $(, $ids:ident)?) => {
        impl $index {
            /// Number of filters (sets).
            pub fn len(&self) -> usize {
                self.$map.len()
            }

            /// Whether the index holds no filter.
            pub fn is_empty(&self) -> bool {
                self.$map.is_empty()
            }

            /// Whether a filter is stored under `id`.
            pub fn contains(&self, id: u64) -> bool {
                self.$map.contains_key(&id)
            }
        }
        $($crate::id_verbs!(@$ids $index, $map);)?
    };
    (@ids $index:ident, $map:ident) => {
        impl $index {
            /// The ids of the stored filters, in no particular order.
            pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
                self.$map.keys().copied()
            }
        }
    };
}

/// Implements [`FilterIndex`] by delegating to the inherent methods of the
/// same names (which keep the documentation of each type's behaviour);
/// `batched` also delegates [`FilterIndex::query_batch_hashes`] to the
/// index's own batched query. Exported (hidden) for the
/// `bloomslice-papers` crate.
#[doc(hidden)]
#[macro_export]
macro_rules! delegate_filter_index {
    ($index:ty, $filter:ty, $error:ty, new_filter: |$s:ident| $new:expr $(, $batched:ident)?) => {
        impl $crate::index::FilterIndex for $index {
            type Filter = $filter;
            type Error = $error;
            fn params(&self) -> &$crate::params::BloomParams {
                <$index>::params(self)
            }
            fn len(&self) -> usize {
                <$index>::len(self)
            }
            fn contains(&self, id: u64) -> bool {
                <$index>::contains(self, id)
            }
            fn new_filter(&self) -> ::core::result::Result<$filter, $error> {
                let $s = self;
                ($new).map_err(::core::convert::Into::into)
            }
            fn insert_filter(&mut self, id: u64, filter: &$filter) -> ::core::result::Result<(), $error> {
                <$index>::insert_filter(self, id, filter).map_err(::core::convert::Into::into)
            }
            fn remove_set(&mut self, id: u64) -> ::core::result::Result<(), $error> {
                <$index>::remove_set(self, id).map_err(::core::convert::Into::into)
            }
            fn update_filter(&mut self, id: u64, filter: &$filter) -> ::core::result::Result<(), $error> {
                <$index>::update_filter(self, id, filter).map_err(::core::convert::Into::into)
            }
            fn filter_cloned(&self, id: u64) -> ::core::result::Result<$filter, $error> {
                <$index>::filter_cloned(self, id).map_err(::core::convert::Into::into)
            }
            fn insert_key_hash(&mut self, id: u64, hash: $crate::hash::KeyHash) -> ::core::result::Result<(), $error> {
                <$index>::insert_key_hash(self, id, hash).map_err(::core::convert::Into::into)
            }
            fn query_hash_into(&self, hash: $crate::hash::KeyHash, out: &mut Vec<u64>) {
                <$index>::query_hash_into(self, hash, out)
            }
            $($crate::delegate_filter_index!(@$batched $index);)?
            fn memory_bytes(&self) -> usize {
                <$index>::memory_bytes(self)
            }
            fn validate(&self) -> ::core::result::Result<(), $crate::error::Error> {
                <$index>::validate(self)
            }
        }
    };
    (@batched $index:ty) => {
        fn query_batch_hashes(&self, hashes: &[$crate::hash::KeyHash], results: &mut $crate::sliced::BatchResults) {
            <$index>::query_batch_hashes(self, hashes, results)
        }
    };
}

delegate_filter_index!(crate::sliced::SlicedIndex, BloomFilter, Error, new_filter: |s| BloomFilter::new(*s.params()), batched);
delegate_filter_index!(crate::NaiveIndex, BloomFilter, Error, new_filter: |s| BloomFilter::new(*s.params()));

/// Every public index type can be shared across threads (checked at
/// compile time, so a change that breaks it fails the build).
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<crate::sliced::SlicedIndex>();
    assert_send_sync::<crate::NaiveIndex>();
    assert_send_sync::<crate::concurrent::ConcurrentIndex>();
    assert_send_sync::<crate::pool::QueryPool>();
    assert_send_sync::<crate::sliced::BatchResults>();
};

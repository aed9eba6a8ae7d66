//! [`ReadIndex`]: the read verbs every index a user can hold shares, with
//! the same names, result types and errors: the front door
//! [`SetIndex`](crate::SetIndex), the expert [`SlicedIndex`], a
//! [`ConcurrentIndex`] of either, the
//! [`ShardedIndex`](crate::sharded::ShardedIndex) of a manifest's files,
//! loaded and mapped files (through the index they hold) and the
//! [`NaiveIndex`](crate::NaiveIndex) baseline.
//!
//! The methods that take keys already hashed ([`KeyHash`]) are
//! object-safe, so the bindings (C, Python) hold any index as one
//! `dyn ReadIndex`; the generic ones take any [`Key`] and are the fast
//! paths of each index. Every answer lists each set once.
//!
//! ```
//! use bloomslice::{BatchResults, LayoutConfig, ReadIndex, SetIndex, Threshold};
//!
//! /// Works the same on every index a user can hold.
//! fn report(index: &dyn ReadIndex, keys: &[&str]) -> Vec<usize> {
//!     let hashes: Vec<_> = keys.iter().map(|key| index.hash_bytes(key.as_bytes())).collect();
//!     let mut results = BatchResults::new();
//!     index.query_batch_hashes(&hashes, &mut results);
//!     results.iter().map(<[u64]>::len).collect()
//! }
//! let sets = [(1u64, vec!["apple", "pear"]), (2, vec!["pear", "plum"])];
//! let index = SetIndex::build(&sets, 0.01, LayoutConfig::default())?;
//! assert_eq!(report(&index, &["pear"]), [2]);
//! assert!(index.contains(2));
//! assert_eq!(ReadIndex::query_threshold(&index, &["pear", "plum"], Threshold::count(2)), [(2, 2)]);
//! # Ok::<(), bloomslice::Error>(())
//! ```

use crate::concurrent::{ConcurrentIndex, Replica};
use crate::hash::{Key, KeyHash};
use crate::index::collected;
use crate::params::HashScheme;
use crate::score::{Scores, Threshold};
use crate::sliced::{BatchResults, SlicedIndex};

/// The read side of an index of sets: which sets may contain a key, a
/// batch of keys, or most of a query's keys.
///
/// Every index a user can hold implements it; generic code and the
/// bindings are written once against it. The hashed-key methods are
/// object-safe (`&dyn ReadIndex`); the generic methods hash each key with
/// [`ReadIndex::seed`] first (as [`ReadIndex::hash`] does) and are
/// overridden by each index with its own fast path.
pub trait ReadIndex {
    /// The number of hash functions of every filter.
    fn k(&self) -> u32;

    /// The seed every key is hashed with ([`Key::key_hash`]).
    fn seed(&self) -> u64;

    /// How each filter derives its probe positions from a key's hash.
    fn scheme(&self) -> HashScheme;

    /// Number of sets.
    fn len(&self) -> usize;

    /// Whether the index holds no set.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a set is stored under `id`.
    fn contains(&self, id: u64) -> bool;

    /// The ids of the sets, ascending.
    fn ids(&self) -> Vec<u64>;

    /// Bytes of memory the index holds (mapped rows included).
    fn memory_bytes(&self) -> usize;

    /// The hash of the key whose bytes are `bytes`, as every query of this
    /// index computes it (object-safe; see [`ReadIndex::hash`]).
    fn hash_bytes(&self, bytes: &[u8]) -> KeyHash {
        KeyHash::from_bytes(bytes, self.seed())
    }

    /// Ids of the sets that may contain the key hashed as `hash`, into
    /// `out` (cleared first), each once.
    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>);

    /// Answers for every hash of `hashes`, in order, into `results`
    /// (replacing its contents).
    fn query_batch_hashes(&self, hashes: &[KeyHash], results: &mut BatchResults);

    /// Scores the keys hashed as `hashes` against every set: afterwards
    /// `scores` holds, for every set, how many of the keys it may contain
    /// (a key repeated counts once per occurrence), ascending id, non-zero
    /// counts only. The default counts the answers of
    /// [`ReadIndex::query_batch_hashes`].
    fn score_hashes_into(&self, hashes: &[KeyHash], scores: &mut Scores) {
        let mut results = BatchResults::new();
        self.query_batch_hashes(hashes, &mut results);
        let mut ids: Vec<u64> = results.flat().0.to_vec();
        ids.sort_unstable();
        scores.entries.clear();
        for run in ids.chunk_by(|a, b| a == b) {
            scores.entries.push((run[0], run.len() as u32));
        }
        scores.keys = hashes.len();
    }

    /// The sets whose count for the keys hashed as `hashes` reaches
    /// `threshold`, as `(id, count)` by ascending id, into `out` (cleared
    /// first), with `scratch` as working memory (its scores afterwards are
    /// unspecified). A `min_count` of 0 returns every set.
    fn query_threshold_hashes_into(
        &self,
        hashes: &[KeyHash],
        threshold: Threshold,
        scratch: &mut Scores,
        out: &mut Vec<(u64, u32)>,
    ) {
        out.clear();
        let min_count = threshold.min_count(hashes.len());
        if min_count == 0 {
            self.score_hashes_into(hashes, scratch);
            let counts = &scratch.entries;
            out.extend(self.ids().into_iter().map(|id| {
                let count = counts.binary_search_by_key(&id, |&(i, _)| i).map_or(0, |at| counts[at].1);
                (id, count)
            }));
            return;
        }
        self.score_hashes_into(hashes, scratch);
        out.extend(scratch.entries.iter().copied().filter(|&(_, count)| count >= min_count));
    }

    /// `key`'s hash under this index's seed.
    fn hash<K: Key + ?Sized>(&self, key: &K) -> KeyHash
    where
        Self: Sized,
    {
        key.key_hash(self.seed())
    }

    /// Ids of the sets that may contain `key`, each once.
    fn query<K: Key + ?Sized>(&self, key: &K) -> Vec<u64>
    where
        Self: Sized,
    {
        collected(|out| self.query_into(key, out))
    }

    /// [`ReadIndex::query`] into `out` (cleared first): no allocation once
    /// `out` is warm.
    fn query_into<K: Key + ?Sized>(&self, key: &K, out: &mut Vec<u64>)
    where
        Self: Sized,
    {
        self.query_hash_into(self.hash(key), out);
    }

    /// Answers for every key of `keys`, in order, into `results`
    /// (replacing its contents). Keys already hashed are [`KeyHash`]es.
    fn query_batch<K: Key>(&self, keys: &[K], results: &mut BatchResults)
    where
        Self: Sized,
    {
        let hashes: Vec<KeyHash> = keys.iter().map(|key| self.hash(key)).collect();
        self.query_batch_hashes(&hashes, results);
    }

    /// Scores the query `keys` against every set (see
    /// [`ReadIndex::score_hashes_into`]).
    fn score_into<K: Key>(&self, keys: &[K], scores: &mut Scores)
    where
        Self: Sized,
    {
        let hashes: Vec<KeyHash> = keys.iter().map(|key| self.hash(key)).collect();
        self.score_hashes_into(&hashes, scores);
    }

    /// The sets whose count for the query `keys` reaches `threshold`, as
    /// `(id, count)` by ascending id.
    fn query_threshold<K: Key>(&self, keys: &[K], threshold: Threshold) -> Vec<(u64, u32)>
    where
        Self: Sized,
    {
        collected(|out| self.query_threshold_into(keys, threshold, &mut Scores::new(), out))
    }

    /// [`ReadIndex::query_threshold`] into `out` (cleared first), with
    /// `scratch` as working memory.
    fn query_threshold_into<K: Key>(
        &self,
        keys: &[K],
        threshold: Threshold,
        scratch: &mut Scores,
        out: &mut Vec<(u64, u32)>,
    ) where
        Self: Sized,
    {
        let hashes: Vec<KeyHash> = keys.iter().map(|key| self.hash(key)).collect();
        self.query_threshold_hashes_into(&hashes, threshold, scratch, out);
    }
}

/// Writes the [`ReadIndex`] methods that a forwarding impl overrides, one
/// table row each: `[generics] trait_method / inherent_method (arguments)
/// -> result`, generics and result where the method has them.
/// Each body is `$forward!({ $context } self, trait_method, inherent_method,
/// (arguments))`, so one table serves the impls that call an index's
/// inherent fast paths and those that reach the index a wrapper holds.
macro_rules! read_index_forwarded_methods {
    ($forward:ident $context:tt) => {
        read_index_forwarded_methods! {
            @rows $forward $context
            len / len () -> usize;
            contains / contains (id: u64) -> bool;
            memory_bytes / memory_bytes () -> usize;
            query_hash_into / query_hash_into (hash: KeyHash, out: &mut Vec<u64>);
            query_batch_hashes / query_batch_hashes (hashes: &[KeyHash], results: &mut BatchResults);
            score_hashes_into / score_into (hashes: &[KeyHash], scores: &mut Scores);
            query_threshold_hashes_into / query_threshold_into
                (hashes: &[KeyHash], threshold: Threshold, scratch: &mut Scores, out: &mut Vec<(u64, u32)>);
            [K: Key + ?Sized] query_into / query_into (key: &K, out: &mut Vec<u64>);
            [K: Key] query_batch / query_batch (keys: &[K], results: &mut BatchResults);
            [K: Key] score_into / score_into (keys: &[K], scores: &mut Scores);
            [K: Key] query_threshold_into / query_threshold_into
                (keys: &[K], threshold: Threshold, scratch: &mut Scores, out: &mut Vec<(u64, u32)>);
        }
    };
    (@rows $forward:ident $context:tt $(
        $([$($generics:tt)*])? $method:ident / $inherent:ident ($($arg:ident: $arg_ty:ty),*) $(-> $result:ty)?;
    )*) => {
        $(
            fn $method $(<$($generics)*>)? (&self, $($arg: $arg_ty),*) $(-> $result)? {
                $forward!($context self, $method, $inherent, ($($arg),*))
            }
        )*
    };
}

/// A forwarded method's body that calls the inherent method of `$index`.
macro_rules! forward_to_inherent {
    ({ $index:ty } $this:ident, $method:ident, $inherent:ident, ($($arg:ident),*)) => {
        <$index>::$inherent($this, $($arg),*)
    };
}

/// A forwarded method's body that runs the trait method on the index the
/// wrapper's `$with` hands out.
macro_rules! forward_through {
    ({ $with:ident } $this:ident, $method:ident, $inherent:ident, ($($arg:ident),*)) => {
        $this.$with(|index| ReadIndex::$method(index, $($arg),*))
    };
}

/// Implements [`ReadIndex`] for an index type by calling its inherent
/// methods of the same names (its fast paths). `$this` names `self` in
/// the three hashing expressions, which give `k`, `seed` and `scheme`.
macro_rules! read_index_by_inherent {
    ($index:ty, |$this:ident| k: $k:expr, seed: $seed:expr, scheme: $scheme:expr) => {
        impl ReadIndex for $index {
            fn k(&self) -> u32 {
                let $this = self;
                $k
            }
            fn seed(&self) -> u64 {
                let $this = self;
                $seed
            }
            fn scheme(&self) -> HashScheme {
                let $this = self;
                $scheme
            }
            fn ids(&self) -> Vec<u64> {
                let mut ids: Vec<u64> = <$index>::ids(self).collect();
                ids.sort_unstable();
                ids
            }
            read_index_forwarded_methods!(forward_to_inherent { $index });
        }
    };
}

read_index_by_inherent!(SlicedIndex, |ix| k: ix.params().k(), seed: ix.params().seed(), scheme: ix.params().scheme());
read_index_by_inherent!(crate::SetIndex, |ix| k: ix.k(), seed: ix.seed(), scheme: ix.scheme());
read_index_by_inherent!(crate::sharded::ShardedIndex, |ix| k: ix.params().k(), seed: ix.params().seed(),
    scheme: ix.params().scheme());

/// The baseline: one filter after another, no fast path but its own
/// single-key query (scores count the answers of each key).
impl ReadIndex for crate::NaiveIndex {
    fn k(&self) -> u32 {
        self.params().k()
    }
    fn seed(&self) -> u64 {
        self.params().seed()
    }
    fn scheme(&self) -> HashScheme {
        self.params().scheme()
    }
    fn len(&self) -> usize {
        crate::NaiveIndex::len(self)
    }
    fn contains(&self, id: u64) -> bool {
        crate::NaiveIndex::contains(self, id)
    }
    fn ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.filters().iter().map(|&(id, _)| id).collect();
        ids.sort_unstable();
        ids
    }
    fn memory_bytes(&self) -> usize {
        crate::NaiveIndex::memory_bytes(self)
    }
    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        crate::NaiveIndex::query_hash_into(self, hash, out);
    }
    fn query_batch_hashes(&self, hashes: &[KeyHash], results: &mut BatchResults) {
        crate::FilterIndex::query_batch_hashes(self, hashes, results);
    }
}

/// Implements [`ReadIndex`] for a wrapper whose method `$with` runs a
/// closure on the index it wraps, every method through it (one state per
/// call for a [`ConcurrentIndex`]).
macro_rules! read_index_through {
    ([$($generics:tt)*] $ty:ty, $with:ident) => {
        impl<$($generics)*> ReadIndex for $ty {
            fn k(&self) -> u32 {
                self.$with(ReadIndex::k)
            }
            fn seed(&self) -> u64 {
                self.$with(ReadIndex::seed)
            }
            fn scheme(&self) -> HashScheme {
                self.$with(ReadIndex::scheme)
            }
            fn ids(&self) -> Vec<u64> {
                self.$with(ReadIndex::ids)
            }
            read_index_forwarded_methods!(forward_through { $with });
        }
    };
}

// A shared index answers from its current state, one state per call.
read_index_through!([I: Replica + ReadIndex] ConcurrentIndex<I>, read);
// A loaded or mapped file answers as the index it holds.
read_index_through!([I: ReadIndex] crate::persist::Loaded<I>, with_index);

impl<I> crate::persist::Loaded<I> {
    /// Runs `f` on the index (what [`ReadIndex`] of a loaded file does).
    #[inline]
    fn with_index<R>(&self, f: impl FnOnce(&I) -> R) -> R {
        f(&self.index)
    }
}

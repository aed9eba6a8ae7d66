//! A [`SetIndex`] shared by concurrent readers and writers
//! (a [`ConcurrentIndex`] of a [`SetIndex`]).
//!
//! # Design note: one generic wrapper, two copies of the collection
//!
//! [`ConcurrentIndex`] is generic over the state it keeps in two copies
//! (default [`SlicedIndex`](crate::sliced::SlicedIndex), so code naming `ConcurrentIndex` alone is
//! unchanged); a collection is one more such state, with its own writes
//! ([`SetOp`]). The left-right machinery (one atomic load per
//! reader, one swap per write, the standby edited in place and the missed
//! writes replayed) is shared as it is, so a reader of a collection never
//! waits for a writer and sees one published state, as with a sliced
//! index. A separate concurrent set-index type would have repeated that
//! machinery; the generic one costs the sliced path nothing (its
//! monomorphised code is the code it was).
//!
//! **What a write copies.** A write edits the standby copy in place: the
//! rows and id map of the one part it touches, and the collection's set
//! map. The two copies share nothing once each has been written, so a
//! write never copies a part. A copy is cloned only when the standby must
//! be rebuilt (after a panic inside a write, a failed replay, a write that
//! failed half-way, or a reader that kept the standby past
//! [`DRAIN_PATIENCE`](crate::concurrent::DRAIN_PATIENCE)); the clone
//! shares every part's shards (`Arc`) and copies only the set map, and
//! later writes copy only the shards they touch.
//!
//! **Writes that fail half-way.** A failed write to a [`SlicedIndex`](crate::sliced::SlicedIndex)
//! changes nothing, so it is not replayed. A collection's write can fail
//! after a change (a new, empty part; keys added before a larger filter
//! could not be had); any failure but [`Error::UnknownId`] and
//! [`Error::DuplicateId`] (checked before anything changes) marks the
//! standby untrusted, and the next write rebuilds it from the published
//! copy, so the copies never diverge.
//!

use super::SetIndex;
use super::levels::LevelIndex;
use crate::ReadIndex;
use crate::concurrent::{ConcurrentIndex, Replica, sealed::Sealed};
use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};

/// One write to a [`ConcurrentIndex`] of a [`SetIndex`]; see [`ConcurrentIndex::apply`].
/// Keys are carried as their hashes (under the collection's seed), so a
/// write can be replayed on the other copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetOp {
    /// [`SetIndex::insert_set`].
    InsertSet {
        /// New set id.
        id: u64,
        /// The set's keys, hashed.
        hashes: Vec<KeyHash>,
    },
    /// [`SetIndex::remove_set`].
    RemoveSet {
        /// Set id.
        id: u64,
    },
    /// [`SetIndex::add_keys`] (the set may gain a filter in a larger
    /// part).
    AddKeys {
        /// Set id.
        id: u64,
        /// The keys added, hashed.
        hashes: Vec<KeyHash>,
    },
    /// Replaces set `id`'s keys ([`SetIndex::replace_set`]: re-placed by
    /// size, the old filters put back if a step fails). Fails with
    /// [`Error::UnknownId`] (changing nothing) when there is no set `id`.
    ReplaceSet {
        /// Set id.
        id: u64,
        /// The set's new keys, hashed.
        hashes: Vec<KeyHash>,
    },
}

impl Sealed for SetIndex {
    type Fixed = u64;

    fn fixed(&self) -> u64 {
        self.seed
    }

    /// Each live part's tables in part order, within one budget.
    fn warm_query_tables(&self, budget: usize) -> usize {
        self.live_parts().fold(0, |done, (_, index)| done + index.warm_query_tables(budget - done))
    }
}

/// A [`SetIndex`] shared by concurrent readers and writers (see the
/// [module documentation](self)).
///
/// ```
/// use bloomslice::{BatchResults, ConcurrentIndex, LayoutConfig, ReadIndex, SetIndex};
///
/// let small: Vec<String> = (0..20).map(|i| format!("small-{i}")).collect();
/// let large: Vec<String> = (0..5_000).map(|i| format!("large-{i}")).collect();
/// let collection = SetIndex::build(&[(1, small), (9, large)], 0.01, LayoutConfig::default())?;
/// let shared = ConcurrentIndex::new(collection);
/// shared.insert_set(4, &["pear", "plum"])?; // &self: callable while others query
/// shared.add_keys(1, &["apple"])?;
/// assert!(shared.query("pear").contains(&4));
/// let mut results = BatchResults::new();
/// shared.query_batch(&["apple", "large-3"], &mut results);
/// assert!(results.get(0).unwrap().contains(&1));
/// assert!(results.get(1).unwrap().contains(&9));
/// # Ok::<(), bloomslice::Error>(())
/// ```
/// `$index` as a [`Replica`] whose writes are [`SetOp`]s, and the set
/// writes of a [`ConcurrentIndex`] of it (its fixed part is its seed),
/// concurrently with queries. A [`LevelIndex`]'s writes go beside its
/// levels ([`LevelIndex::insert_set`]).
macro_rules! concurrent_set_writes {
    ($index:ident) => {
        impl Replica for $index {
            type Op = SetOp;

            fn apply_op(&mut self, op: &SetOp) -> Result<()> {
                match op {
                    SetOp::InsertSet { id, hashes } => self.insert_set(*id, hashes),
                    SetOp::RemoveSet { id } => self.remove_set(*id),
                    SetOp::AddKeys { id, hashes } => self.add_keys(*id, hashes),
                    SetOp::ReplaceSet { id, hashes } => self.replace_set(*id, hashes),
                }
            }

            /// Unknown and duplicate ids are checked before anything changes.
            fn failed_op_changed_nothing(error: &Error) -> bool {
                matches!(error, Error::UnknownId(_) | Error::DuplicateId(_))
            }
        }

        impl ConcurrentIndex<$index> {
            /// The seed every key is hashed with (the index's).
            pub fn seed(&self) -> u64 {
                *self.fixed()
            }

            /// `keys` hashed as the index hashes them.
            fn hashes<K: Key>(&self, keys: &[K]) -> Vec<KeyHash> {
                let seed = self.seed();
                keys.iter().map(|key| key.key_hash(seed)).collect()
            }

            #[doc = concat!("[`", stringify!($index), "::insert_set`], concurrently with queries.")]
            ///
            /// # Errors
            ///
            #[doc = concat!("As [`", stringify!($index), "::insert_set`]; nothing is published then.")]
            pub fn insert_set<K: Key>(&self, id: u64, keys: &[K]) -> Result<()> {
                self.apply_one(SetOp::InsertSet { id, hashes: self.hashes(keys) })
            }

            #[doc = concat!("[`", stringify!($index), "::remove_set`], concurrently with queries.")]
            ///
            /// # Errors
            ///
            #[doc = concat!("As [`", stringify!($index), "::remove_set`].")]
            pub fn remove_set(&self, id: u64) -> Result<()> {
                self.apply_one(SetOp::RemoveSet { id })
            }

            #[doc = concat!("[`", stringify!($index), "::add_keys`], concurrently with queries: readers see")]
            /// all of the keys or none, and the set's new filter with them.
            ///
            /// # Errors
            ///
            #[doc = concat!("As [`", stringify!($index), "::add_keys`].")]
            pub fn add_keys<K: Key>(&self, id: u64, keys: &[K]) -> Result<()> {
                self.apply_one(SetOp::AddKeys { id, hashes: self.hashes(keys) })
            }

            /// Replaces set `id`'s keys with `keys` ([`SetOp::ReplaceSet`]):
            /// readers see the old set or the new one, never neither.
            ///
            /// # Errors
            ///
            #[doc = concat!("[`Error::UnknownId`], or as [`", stringify!($index), "::insert_set`].")]
            pub fn replace_set<K: Key>(&self, id: u64, keys: &[K]) -> Result<()> {
                self.apply_one(SetOp::ReplaceSet { id, hashes: self.hashes(keys) })
            }
        }
    };
}

concurrent_set_writes!(SetIndex);
concurrent_set_writes!(LevelIndex);

impl Sealed for LevelIndex {
    type Fixed = u64;

    fn fixed(&self) -> u64 {
        ReadIndex::seed(self)
    }

    /// The levels' tables are read as the queries go.
    fn warm_query_tables(&self, _budget: usize) -> usize {
        0
    }
}

//! # bloomslice
//!
//! Answers *which of these N sets may contain this key?* at memory speed.
//! [`SetIndex`] is the index to pick: it sizes each set from its own keys
//! at a false-positive rate, in size-classed parts (one part when the
//! sets share a size). Each part is a [`SlicedIndex`], filters that share
//! one [`BloomParams`] stored transposed in cache-aligned bit slices
//! (Flat-Bloofi made fast), so one SIMD instruction tests hundreds of
//! filters; the kernels are dispatched at run time and each is verified
//! against a scalar twin (`bloomslice-kernels`). Every index a user can
//! hold answers through one read trait, [`ReadIndex`]. Services that query
//! from many threads while sets change use a [`QueryPool`] of pinned
//! workers over a [`ConcurrentIndex`].
//!
//! ```
//! use bloomslice::{BatchResults, LayoutConfig, SetIndex};
//!
//! // Set id -> its keys; each set sized from its own keys at 1% FP.
//! let sites: Vec<(u64, Vec<String>)> = (0..100u64)
//!     .map(|site| (site, (0..10 + site * 50).map(|doc| format!("doc-{}", site * 10_000 + doc)).collect()))
//!     .collect();
//! let mut index = SetIndex::build(&sites, 0.01, LayoutConfig::default())?;
//! // Which sites may hold document 42 017?
//! assert!(index.query("doc-420017").contains(&42));
//!
//! // Batches hash every key first; the buffer is reused.
//! let keys: Vec<String> = (0..1000u64).map(|d| format!("doc-{}", d * 7)).collect();
//! let mut results = BatchResults::new();
//! index.query_batch(&keys, &mut results);
//! assert_eq!(results.len(), 1000);
//! assert!(results.get(1).unwrap().contains(&0)); // doc-7 is document 7 of site 0
//!
//! index.insert_set(100, &["doc-x", "doc-y"])?; // the set verbs every index shares
//! index.add_keys(100, &["doc-z"])?;
//! index.remove_set(0)?;
//! assert!(!index.contains(0));
//! # Ok::<(), bloomslice::Error>(())
//! ```
//!
//! Most queries are a *set* of keys (a DNA read's k-mers, a document's
//! terms) and ask which sets hold at least a share of them. [`score`]
//! answers that without a per-set counter: counts are kept as bit-planes
//! beside the rows, added to with a ripple carry per key, compared with the
//! threshold across planes, and chunks of filters that can no longer pass
//! stop being read. Duplicated keys count once per occurrence.
//!
//! ```
//! use bloomslice::{LayoutConfig, Scores, SetIndex, Threshold};
//!
//! // Samples of 300 k-mers, each sharing 200 with its neighbours.
//! let samples: Vec<(u64, Vec<[u8; 8]>)> =
//!     (0..20u64).map(|s| (s, (s * 100..s * 100 + 300).map(u64::to_le_bytes).collect())).collect();
//! let index = SetIndex::build(&samples, 0.01, LayoutConfig::default())?;
//! // A "read" of 50 k-mers of sample 7: who holds at least 80% of them?
//! let read: Vec<[u8; 8]> = (750..800u64).map(u64::to_le_bytes).collect();
//! let hits = index.query_threshold(&read, Threshold::fraction(0.8)?);
//! assert!(hits.iter().any(|&(id, count)| id == 7 && count == 50));
//! let mut scores = Scores::new();
//! index.score_into(&read, &mut scores);
//! assert_eq!(scores.get(7), 50);
//! # Ok::<(), bloomslice::Error>(())
//! ```
//!
//! # Where things are
//!
//! The crate root holds what a user of the index needs: the front door
//! [`SetIndex`] (with [`LayoutConfig`]) and the read trait [`ReadIndex`]
//! every index implements; [`BatchResults`], the scoring types
//! [`Scores`], [`Threshold`] and [`ThresholdResults`]; [`ConcurrentIndex`]
//! (writes as [`SetOp`] or [`WriteOp`]) and [`QueryPool`] with its
//! configuration and results; keys ([`Key`], [`KeyHash`], [`Prehashed`]);
//! [`Error`] and [`Result`]; files ([`Loaded`],
//! [`SetNames`], [`Manifest`], [`Verify`]). The expert layer beneath the
//! front door: [`SlicedIndex`] ([`SlicedConfig`]) of filters that share one
//! [`BloomParams`] ([`HashScheme`], [`BloomFilter`]), the [`FilterIndex`]
//! trait of filter-level writes, and the [`NaiveIndex`] baseline.
//! Everything else is reached through its module: [`params`] (limits,
//! probe positions), [`hash`], [`sliced`] (shard constants, and
//! [`sliced::hooks`], the hooks for filter variants), [`score`],
//! [`concurrent`], [`pool`], [`persist`] (files, manifests), [`sharded`]
//! (a manifest's shard files as one index), [`collection`] (the set
//! index's layout), [`read`], [`kmer`], [`storage`], [`index`] and
//! [`error`].
//!
//! The structures of the papers this crate builds on (Bloofi trees, the
//! Flat-Bloofi paper layout, counting, dynamic, popularity-conscious,
//! stable and importance-aware filters) are in the `bloomslice-papers`
//! crate, built on this one through [`sliced::hooks`].
//!
//! Sequence search: [`kmer`] turns DNA into canonical k-mer keys, and an
//! index records its k-mer length ([`SlicedIndex::kmer_length`]).
#![warn(missing_docs)]

// First, so that their macros (`invalid!`, `key_verbs!`, `setters!`) are in
// scope in every module below.
#[macro_use]
mod macros;
mod batch;
#[macro_use]
pub mod error;
#[macro_use]
pub mod index;
pub mod collection;
pub mod concurrent;
mod filter;
pub mod hash;
pub mod kmer;
mod naive;
pub mod params;
pub mod persist;
pub mod pool;
pub mod read;
pub mod score;
pub mod sharded;
pub mod sliced;
pub mod storage;
pub(crate) mod sync;
#[cfg(feature = "testing")]
pub mod testing;

pub use bloomslice_kernels as kernels;
pub use collection::{LayoutConfig, LevelConfig, LevelIndex, SetIndex, SetOp};
pub use concurrent::{ConcurrentIndex, WriteOp};
pub use error::{Error, Result};
pub use filter::BloomFilter;
pub use hash::{Key, KeyHash, Prehashed};
pub use index::FilterIndex;
pub use naive::NaiveIndex;
pub use params::{BloomParams, HashScheme};
pub use persist::manifest::Manifest;
pub use persist::{Loaded, SetNames, Verify};
pub use pool::{Failed, PoolConfig, PoolError, PoolResults, PoolStatus, QueryPool, Ticket, Workers};
pub use read::ReadIndex;
pub use score::{Scores, Threshold, ThresholdResults};
pub use sliced::{BatchResults, SlicedConfig, SlicedIndex};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

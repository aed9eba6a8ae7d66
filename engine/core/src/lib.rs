//! # bloomslice
//!
//! Answers *which of these N Bloom filters may contain this key?* at memory
//! speed. Filters that share one [`BloomParams`] are stored transposed in
//! cache-aligned bit slices ([`SlicedIndex`], Flat-Bloofi made fast), so one
//! SIMD instruction tests hundreds of filters; the kernels are dispatched at
//! run time and each is verified against a scalar twin
//! (`bloomslice-kernels`). Services that query from many threads while
//! filters change use a [`QueryPool`] of pinned workers over a
//! [`ConcurrentIndex`] (see [`pool`] and [`ConcurrentIndex`]); a
//! [`SetIndex`] is served the same way (a [`ConcurrentIndex`] of it).
//!
//! ```
//! use bloomslice::{BatchResults, BloomFilter, BloomParams, NaiveIndex, SlicedIndex};
//!
//! // 10 000 expected keys per filter at 1% false positives: m = 100 992, k = 7.
//! let params = BloomParams::for_capacity(10_000, 0.01)?;
//! let mut index = SlicedIndex::new(params);
//! for site in 0..100u64 {
//!     let mut filter = BloomFilter::new(params)?;
//!     for doc in 0..50u64 {
//!         filter.insert(&(site * 1000 + doc).to_le_bytes());
//!     }
//!     index.insert_filter(site, &filter)?;
//! }
//! // Which sites may hold document 42 017?
//! assert!(index.query(&42_017u64.to_le_bytes()).contains(&42));
//!
//! // Batches hash every key first and prefetch rows ahead.
//! let keys: Vec<[u8; 8]> = (0..1000u64).map(|d| (d * 7).to_le_bytes()).collect();
//! let mut results = BatchResults::new();
//! index.query_batch(&keys, &mut results);
//! assert_eq!(results.len(), 1000);
//! assert!(results.get(1).unwrap().contains(&0)); // key 7 is document 7 of site 0
//! # Ok::<(), bloomslice::Error>(())
//! ```
//!
//! Most queries are a *set* of keys (a DNA read's k-mers, a document's
//! terms) and ask which filters hold at least a share of them. [`score`]
//! answers that without a per-filter counter: counts are kept as bit-planes
//! beside the rows, added to with a ripple carry per key, compared with the
//! threshold across planes, and chunks of filters that can no longer pass
//! stop being read. Duplicated keys count once per occurrence.
//!
//! ```
//! use bloomslice::{BloomFilter, BloomParams, Scores, SlicedIndex, Threshold};
//!
//! let params = BloomParams::for_capacity(1_000, 0.01)?;
//! let mut index = SlicedIndex::new(params);
//! for sample in 0..20u64 {
//!     let mut filter = BloomFilter::new(params)?;
//!     for kmer in sample * 100..sample * 100 + 300 {
//!         filter.insert(&kmer.to_le_bytes());
//!     }
//!     index.insert_filter(sample, &filter)?;
//! }
//! // A "read" of 50 k-mers of sample 7 (which shares 200 k-mers with its
//! // neighbours): who holds at least 80% of them?
//! let read: Vec<[u8; 8]> = (750..800u64).map(|k| k.to_le_bytes()).collect();
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
//! The crate root holds what a user of the index needs: [`BloomParams`]
//! and [`HashScheme`], [`BloomFilter`], [`SlicedIndex`] (with
//! [`SlicedConfig`] and [`BatchResults`]), the scoring types [`Scores`],
//! [`Threshold`] and [`ThresholdResults`], [`ConcurrentIndex`] and
//! [`WriteOp`], [`QueryPool`] and its configuration and results,
//! [`NaiveIndex`], the [`FilterIndex`] trait, [`Error`] and [`Result`],
//! keys ([`Key`], [`KeyHash`], [`Prehashed`]) and index files
//! ([`LoadedIndex`], [`SetNames`], [`Manifest`], [`Verify`]), and
//! [`SetIndex`] (sets of any sizes in parts of their own `m`, in memory;
//! [`LayoutConfig`] tunes its layout; [`ConcurrentIndex`] and
//! [`SetOp`] share it between readers, writers and the pool). Everything else is reached through
//! its module: [`params`] (limits, probe positions), [`hash`], [`sliced`]
//! (shard constants, and [`sliced::hooks`], the hooks for filter
//! variants), [`score`], [`concurrent`], [`pool`], [`persist`] (files,
//! manifests), [`sharded`] (a manifest's shard files as one index),
//! [`collection`] (and its layout), [`kmer`], [`storage`], [`index`] and
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
pub mod score;
pub mod sharded;
pub mod sliced;
pub mod storage;
pub(crate) mod sync;
#[cfg(feature = "testing")]
pub mod testing;

pub use bloomslice_kernels as kernels;
pub use collection::{LayoutConfig, SetIndex, SetOp};
pub use concurrent::{ConcurrentIndex, WriteOp};
pub use error::{Error, Result};
pub use filter::BloomFilter;
pub use hash::{Key, KeyHash, Prehashed};
pub use index::FilterIndex;
pub use naive::NaiveIndex;
pub use params::{BloomParams, HashScheme};
pub use persist::manifest::Manifest;
pub use persist::{LoadedIndex, LoadedSetIndex, SetNames, Verify};
pub use pool::{Failed, PoolConfig, PoolError, PoolResults, PoolStatus, QueryPool, Ticket, Workers};
pub use score::{Scores, Threshold, ThresholdResults};
pub use sliced::{BatchResults, SlicedConfig, SlicedIndex};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

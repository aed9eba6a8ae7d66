//! # bloomslice-papers
//!
//! The Bloom filter structures of the papers that [`bloomslice`] builds on,
//! each kept as its paper describes it (the module docs map the paper's
//! algorithms and symbols to the code, and name the choices the paper
//! leaves open), so that they can be measured beside the core's
//! [`SlicedIndex`](bloomslice::SlicedIndex) and reused where a workload
//! needs what they add (deletes, growth, per-key hash counts, streams).
//!
//! | module | structures | paper |
//! |---|---|---|
//! | [`bloofi`] | [`BloofiTree`] | Crainiceanu and Lemire, *Bloofi: Multidimensional Bloom Filters*, Sections 4 and 5 |
//! | [`flat_paper`] | [`FlatBloofiPaper`] | the same paper, Section 6 (Flat-Bloofi) |
//! | [`counting`] | [`CountingBloomFilter`], [`CountingSlicedIndex`] | Fan, Cao, Almeida and Broder, *Summary Cache* |
//! | [`dynamic`] | [`DynamicBloomFilter`], [`DynamicSlicedIndex`], [`DynamicDelta`] | Guo, Wu, Chen and Luo, *The Dynamic Bloom Filters* |
//! | [`popularity`] | [`PopularityScheme`] | Zhong, Lu, Shen and Seiferas, *Optimizing Data Popularity Conscious Bloom Filters* |
//! | [`stable`] | [`StableBloomFilter`] ([`Policy`]: BF, SBF, IBF-2C, IBF-MC, IBF-H) | Kulkarni et al., *Importance-aware Bloom Filter for Set Membership Queries in Streaming Data* |
//!
//! The indexes implement the core's [`FilterIndex`](bloomslice::FilterIndex)
//! trait, so generic code (the differential harness, the benchmarks) runs
//! on them as on the core's indexes. Each module has its own error type,
//! which wraps the core's [`bloomslice::Error`] for what the core already
//! names (unknown ids, mismatched parameters, memory).
//!
//! ```
//! use bloomslice::BloomParams;
//! use bloomslice_papers::{CountingSlicedIndex, DynamicSlicedIndex};
//!
//! let params = BloomParams::new(4096, 4)?;
//! // Counting filters: keys can be removed again.
//! let mut counting = CountingSlicedIndex::new(params);
//! counting.insert_set(1)?;
//! counting.insert_key(1, "apple")?;
//! assert_eq!(counting.query("apple"), vec![1]);
//! counting.remove_key(1, "apple")?;
//! assert!(counting.query("apple").is_empty());
//!
//! // Dynamic sets: a set grows past its capacity by adding members.
//! let mut dynamic = DynamicSlicedIndex::new(params, 100)?;
//! dynamic.insert_set(7)?;
//! for key in 0..500u64 {
//!     dynamic.insert_key(7, &key.to_le_bytes())?;
//! }
//! assert!(dynamic.query(&499u64.to_le_bytes()).contains(&7));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

// The core's crate-internal macros (`invalid!`, `key_verbs!`, `id_verbs!`,
// `setters!`, `debug_summary!`, `delegate_filter_index!`), shared rather
// than copied.
#[macro_use]
extern crate bloomslice;

pub mod bloofi;
pub mod counting;
pub mod dynamic;
pub mod flat_paper;
pub mod popularity;
pub mod stable;
#[cfg(feature = "testing")]
pub mod testing;

pub use bloofi::{BloofiConfig, BloofiError, BloofiTree, BulkOrder, MaintenanceStats, Metric};
pub use counting::{CountingBloomFilter, CountingError, CountingSlicedIndex};
pub use dynamic::{DeleteOutcome, DynamicBloomFilter, DynamicDelta, DynamicError, DynamicSlicedIndex};
pub use flat_paper::FlatBloofiPaper;
pub use popularity::{PopularityError, PopularityScheme};
pub use stable::{Policy, StableBloomFilter, StableError, StableParams};

/// Every public index type can be shared across threads (checked at
/// compile time, so a change that breaks it fails the build).
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<FlatBloofiPaper>();
    assert_send_sync::<BloofiTree>();
    assert_send_sync::<CountingSlicedIndex>();
    assert_send_sync::<DynamicSlicedIndex>();
};

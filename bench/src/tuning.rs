//! The speed settings the benchmarks take from the environment (the
//! library reads none): `BLOOMSLICE_LOOKAHEAD=l1|l2`, the cache level of
//! scoring's look-ahead prefetches (else the CPU's choice), and
//! `BLOOMSLICE_COLLECTION_PREFETCH=auto|always|never`, whether a
//! collection's queries prefetch its parts' rows (else `auto`). Unknown
//! values are ignored. Neither changes an answer.

use bloomslice::collection::PartPrefetch;
use bloomslice::kernels::LookAhead;
use bloomslice::{SetIndex, SlicedConfig};

/// `BLOOMSLICE_LOOKAHEAD` if it names a level, else the CPU's choice.
pub fn look_ahead() -> LookAhead {
    std::env::var("BLOOMSLICE_LOOKAHEAD").ok().and_then(|v| LookAhead::from_name(&v)).unwrap_or_default()
}

/// `BLOOMSLICE_COLLECTION_PREFETCH` if it names a mode, else `auto`.
pub fn part_prefetch() -> PartPrefetch {
    std::env::var("BLOOMSLICE_COLLECTION_PREFETCH").ok().and_then(|v| PartPrefetch::from_name(&v)).unwrap_or_default()
}

/// `config` with the environment's speed settings.
pub fn config(config: SlicedConfig) -> SlicedConfig {
    SlicedConfig { look_ahead: look_ahead(), part_prefetch: part_prefetch(), ..config }
}

/// Gives `collection` the environment's speed settings.
pub fn set_index(collection: &mut SetIndex) {
    collection.set_look_ahead(look_ahead());
    collection.set_part_prefetch(part_prefetch());
}

//! The named workloads: which keys each filter holds and which keys are
//! queried. All share `n_exp = 10 000`, `p = 0.01` (`m = 100 992`, `k = 7`):
//!
//! - `paper`: `N` = 1 000 by default; filter `i` holds keys
//!   `[i * 100, (i + 1) * 100)` (sparse rows, the Bloofi paper's default);
//!   100 000 queries, half present.
//! - `full`: `N` = 1 000 or 10 000; every filter holds 10 000 random keys
//!   (filters at capacity, rows about half ones); 100 000 queries, half
//!   present.
//! - `large`: `N` = 100 000 filters of 100 keys each, laid out like `paper`;
//!   100 000 queries, half present.
//! - `multi`: the filters of `full`, asked 1 000 queries of 100 keys and 100
//!   of 1 000 keys at threshold 0.8; half are drawn from one filter's keys
//!   (5% replaced by absent keys), half are random absent keys.
//! - `skewed`: sets of skewed sizes in a collection (see [`crate::skewed`],
//!   which has its own sizes, keys and queries; only [`WorkloadKind`] names
//!   it here).
//!
//! Everything here is a pure function of the [`WorkloadSpec`] (including its
//! seed), so two runs with the same arguments build the same filters and ask
//! the same queries. Keys never need to be stored: the `j`-th key of filter
//! `i` is recomputed by [`WorkloadSpec::key`].
//!
//! Present keys always have the top bit clear and absent keys always have it
//! set, so an "absent" query is outside every inserted range by
//! construction, not merely with high probability.

use bloomslice::{BloomFilter, BloomParams, KeyHash, SlicedConfig, SlicedIndex};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// Expected keys per filter of every workload (`n_exp` of the Bloofi paper).
pub const CAPACITY: u64 = 10_000;

/// Target false-positive rate at [`CAPACITY`] keys.
pub const FALSE_POSITIVE_RATE: f64 = 0.01;

/// Top bit of a key: set on absent query keys, clear on inserted keys.
const ABSENT_BIT: u64 = 1 << 63;

/// The parameters every workload shares: `n_exp = 10 000`, `p = 0.01`, which
/// gives `m = 100 992`, `k = 7`.
pub fn params() -> BloomParams {
    BloomParams::for_capacity(CAPACITY, FALSE_POSITIVE_RATE).expect("the workload parameters are valid")
}

/// The named workloads (described in the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    /// Filter `i` holds keys `[i * 100, (i + 1) * 100)`: filters far below
    /// capacity, so rows are sparse (the Bloofi paper's default).
    Paper,
    /// Every filter holds 10 000 random keys: filters at capacity, rows
    /// about half ones.
    Full,
    /// 100 000 filters of 100 keys each, laid out like `paper`.
    Large,
    /// The filters of `full`, asked multi-key threshold queries (see
    /// [`crate::multi`]).
    Multi,
    /// Sets of heavy-tailed sizes in a collection (see [`crate::skewed`]).
    Skewed,
}

impl WorkloadKind {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Paper => "paper",
            WorkloadKind::Full => "full",
            WorkloadKind::Large => "large",
            WorkloadKind::Multi => "multi",
            WorkloadKind::Skewed => "skewed",
        }
    }

    /// Number of filters when `--filters` is not given.
    pub fn default_filters(self) -> usize {
        match self {
            WorkloadKind::Paper | WorkloadKind::Full | WorkloadKind::Multi => 1_000,
            WorkloadKind::Large => 100_000,
            WorkloadKind::Skewed => 730,
        }
    }

    /// Keys inserted into each filter (`skewed`: the median of its sizes;
    /// its sets have their own sizes, see [`crate::skewed`]).
    pub fn keys_per_filter(self) -> usize {
        match self {
            WorkloadKind::Paper | WorkloadKind::Large => 100,
            WorkloadKind::Skewed => 18,
            WorkloadKind::Full | WorkloadKind::Multi => CAPACITY as usize,
        }
    }
}

impl core::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// One fully specified workload: kind, size and seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadSpec {
    /// Which workload.
    pub kind: WorkloadKind,
    /// Number of filters (filter ids are `0..filters`).
    pub filters: usize,
    /// Keys inserted into each filter.
    pub keys_per_filter: usize,
    /// Number of queries (half present, half absent).
    pub queries: usize,
    /// Seed of the random keys (`full`) and of the query set.
    pub seed: u64,
    /// The filters' parameters: [`params`] unless overridden
    /// (`paper query --m/--k`).
    pub params: BloomParams,
}

/// One query key and, when it was inserted, the filter that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    /// The key; hashed as its 8 little-endian bytes.
    pub key: u64,
    /// The filter the key was inserted into (`None` for an absent key).
    pub owner: Option<u64>,
}

impl WorkloadSpec {
    /// A spec with the workload's default number of filters and keys per filter.
    pub fn new(kind: WorkloadKind, queries: usize, seed: u64) -> Self {
        WorkloadSpec {
            kind,
            filters: kind.default_filters(),
            keys_per_filter: kind.keys_per_filter(),
            queries,
            seed,
            params: params(),
        }
    }

    /// The same spec with another number of filters.
    #[must_use]
    pub fn with_filters(mut self, filters: usize) -> Self {
        self.filters = filters;
        self
    }

    /// The same spec with other filter parameters (for example another
    /// hash count, to compare with a peer at its `k`).
    #[must_use]
    pub fn with_params(mut self, params: BloomParams) -> Self {
        self.params = params;
        self
    }

    /// The `j`-th key inserted into filter `filter` (`j < keys_per_filter`).
    #[inline]
    pub fn key(&self, filter: usize, j: usize) -> u64 {
        let serial = (filter * self.keys_per_filter + j) as u64;
        match self.kind {
            WorkloadKind::Paper | WorkloadKind::Large => serial,
            // A bijective mix of (seed, serial): distinct serials give
            // distinct keys before the top bit is dropped, and random-looking
            // keys after.
            WorkloadKind::Full | WorkloadKind::Multi | WorkloadKind::Skewed => {
                splitmix64(serial ^ splitmix64(self.seed)) & !ABSENT_BIT
            }
        }
    }

    /// The query set: `queries / 2` present keys (a uniformly random filter,
    /// then a uniformly random key of it) and the rest absent (random keys
    /// with the top bit set), shuffled together. Deterministic per seed.
    pub fn queries(&self) -> Vec<Query> {
        let mut rng = SmallRng::seed_from_u64(self.seed ^ 0x5eed_0f9e_e1e5);
        let present = self.queries / 2;
        let mut out = Vec::with_capacity(self.queries);
        for _ in 0..present {
            let filter = rng.random_range(0..self.filters);
            let j = rng.random_range(0..self.keys_per_filter);
            out.push(Query { key: self.key(filter, j), owner: Some(filter as u64) });
        }
        for _ in present..self.queries {
            out.push(Query { key: rng.random::<u64>() | ABSENT_BIT, owner: None });
        }
        out.shuffle(&mut rng);
        out
    }
}

/// The hash of a workload key, as every engine that uses bloomslice's
/// hashing sees it: seeded xxh3 of the key's 8 little-endian bytes.
#[inline]
pub fn key_hash(params: &BloomParams, key: u64) -> KeyHash {
    params.hash(&key.to_le_bytes())
}

/// The random stand-in for `full` filters of `benches/iai_full.rs` and
/// the `perkey` and `scoreprobe` examples (through [`random_full_index`]):
/// `filters` filters of random words (every bit set
/// with probability 1/2, the density of a `full` filter) from a
/// [`SmallRng`] seeded with `seed`, plus the owners' bits of the present
/// keys among the `queries` query keys of the `full` workload with that
/// seed. Returns the filters, the queries and their keys as 8
/// little-endian bytes.
pub fn random_full_filters(filters: usize, queries: usize, seed: u64) -> (Vec<BloomFilter>, Vec<Query>, Vec<[u8; 8]>) {
    let p = params();
    let queries = WorkloadSpec::new(WorkloadKind::Full, queries, seed).with_filters(filters).queries();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut words = vec![0u64; p.words()];
    let mut built: Vec<BloomFilter> = (0..filters)
        .map(|_| {
            rng.fill(&mut words[..]);
            BloomFilter::from_words(p, &words).expect("words of the right length")
        })
        .collect();
    let keys: Vec<[u8; 8]> = queries.iter().map(|q| q.key.to_le_bytes()).collect();
    for (q, key) in queries.iter().zip(&keys) {
        if let Some(owner) = q.owner {
            built[owner as usize].insert(key);
        }
    }
    (built, queries, keys)
}

/// [`random_full_filters`] indexed in a [`SlicedIndex`] with `config`
/// (filter `i` has id `i`; kernels detected). Returns the index, the
/// filters, the queries and their keys. Not timed by its callers.
pub fn random_full_index(
    filters: usize,
    queries: usize,
    seed: u64,
    config: SlicedConfig,
) -> (SlicedIndex, Vec<BloomFilter>, Vec<Query>, Vec<[u8; 8]>) {
    let (built, queries, keys) = random_full_filters(filters, queries, seed);
    let mut index = SlicedIndex::with_config(params(), config);
    index.reserve(filters).expect("memory");
    let refs: Vec<(u64, &BloomFilter)> = built.iter().enumerate().map(|(i, f)| (i as u64, f)).collect();
    index.insert_filters(&refs).expect("insert");
    drop(refs);
    (index, built, queries, keys)
}

/// Checks every key's `query_into` answer against `query_batch` on `index`
/// (the single-key probes do this before they time anything).
///
/// # Panics
///
/// On the first key whose two answers disagree.
pub fn assert_query_into_matches_batch(index: &SlicedIndex, keys: &[[u8; 8]]) {
    let mut out = Vec::new();
    let mut batch = bloomslice::BatchResults::new();
    index.query_batch(keys, &mut batch);
    for (i, key) in keys.iter().enumerate() {
        index.query_into(key, &mut out);
        assert_eq!(Some(&out[..]), batch.get(i), "key {i}: query_into and query_batch disagree");
    }
}

/// xorshift64: a small generator for fixed orders and picks, so that runs
/// compare. `s` must not be zero.
#[inline]
pub fn xorshift64(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// SplitMix64's first output from state `x` (`rand_xoshiro`'s generator,
/// the tests' and benches' one): a bijection of `u64` with full avalanche.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    use rand_xoshiro::rand_core::{RngCore, SeedableRng};
    rand_xoshiro::SplitMix64::seed_from_u64(x).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_the_papers() {
        let p = params();
        assert_eq!((p.m(), p.k()), (100_992, 7));
    }

    #[test]
    fn queries_are_deterministic_per_seed() {
        let spec = WorkloadSpec::new(WorkloadKind::Full, 1000, 7).with_filters(20);
        assert_eq!(spec.queries(), spec.queries());
        let other = WorkloadSpec { seed: 8, ..spec };
        assert_ne!(spec.queries(), other.queries());
        assert_ne!(spec.key(3, 4), other.key(3, 4), "full keys depend on the seed");
    }

    #[test]
    fn half_present_and_absent_keys_are_outside() {
        for kind in [WorkloadKind::Paper, WorkloadKind::Full, WorkloadKind::Large] {
            let spec = WorkloadSpec::new(kind, 1001, 1).with_filters(30);
            let queries = spec.queries();
            assert_eq!(queries.len(), 1001);
            assert_eq!(queries.iter().filter(|q| q.owner.is_some()).count(), 500);
            for q in &queries {
                match q.owner {
                    Some(owner) => {
                        let owner = owner as usize;
                        assert!(owner < 30);
                        assert!((0..spec.keys_per_filter).any(|j| spec.key(owner, j) == q.key), "{kind}");
                    }
                    None => assert!(q.key & ABSENT_BIT != 0),
                }
            }
        }
        let paper = WorkloadSpec::new(WorkloadKind::Paper, 10, 1);
        assert_eq!((paper.key(0, 0), paper.key(3, 99), paper.key(4, 0)), (0, 399, 400));
    }
}

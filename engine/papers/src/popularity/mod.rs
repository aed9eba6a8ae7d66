//! Popularity-conscious Bloom filters (Zhong, Lu, Shen and Seiferas,
//! *Optimizing Data Popularity Conscious Bloom Filters*, PODC 2008,
//! `popularity-conscious-bloom-filters.txt`): a per-key number of hash
//! functions `k_i` chosen from the membership popularity `p` and the
//! non-member query popularity `q'` of each key.
//!
//! # Mapping to the paper
//!
//! | Paper                                               | Here                                              |
//! |-----------------------------------------------------|---------------------------------------------------|
//! | eq. (14) real-number solution                       | [`optimize::real_solution`]                       |
//! | "real-rounding" baseline of Section 5               | [`optimize::rounded_solution`]                    |
//! | eq. (15) optimal+ bound                             | [`optimize::optimal_plus`]                        |
//! | Section 4.4 `(2 + eps)` dynamic program, eq. (26)   | [`optimize::integer_solution`]                    |
//! | Section 6 limited optimization                      | [`optimize::limited_integer_solution`]            |
//! | eq. (5) false-positive probability                  | [`optimize::predicted_fpr`]                       |
//! | the hash scheme (lookup table key -> k_i)           | [`PopularityScheme`]                              |
//! | Section 5.1 Zipf experiment                         | `bloomslice_bench::popularity_experiment`         |
//!
//! # Choices the paper leaves open
//!
//! * **Per-key probes.** Key `x` with `k_i` hashes probes the first `k_i`
//!   positions of its double-hashing sequence `h1 + j h2` (the same sequence
//!   standard filters use, continued or cut), so a filter of standard keys
//!   and one of popularity-conscious keys share parameters and layout.
//! * **The lookup table** is keyed by the key's 64-bit hash `h1` under the
//!   parameters' seed (8 + 1 bytes of payload per optimised key; a
//!   collision of two keys' `h1` among a few million keys has probability
//!   about `2^-23`, and only changes a hash count, never correctness of
//!   "no false negatives" as inserts and queries use the same table).
//!   Keys not in the table use the default `k` of the [`BloomParams`].
//! * **The dynamic program** indexes the paper's `S_{i,j,w}` with the prefix
//!   form `S_{i,j,w} = min(S_{i,j-1,w}, P_j + S_{i-1,j,w - f(2^-(i+1) Q_j)})`,
//!   equivalent to eq. (26)'s `min over y <= j`, which makes it
//!   `O(k_max N W)` time with `W = (k_max - 1) 2^k_max / eps` value units
//!   (the paper's `O(N^2 / eps)` bound counts the min over `y` separately),
//!   and keeps one bit per `(i, j, w)` for the walk back: whole when it fits
//!   in [`optimize::FULL_TABLE_BYTES`], otherwise one block of keys at a time,
//!   recomputed from checkpoints of the DP rows (see
//!   [`optimize::integer_solution`]; capped by [`optimize::MAX_DP_MEMORY_BYTES`]). The cut points may be 0 or N (empty
//!   groups), as in the paper (`0 <= l_1 <= ... <= N`).
//! * **Importance ties** (`q'/p` equal) keep input order; keys with
//!   `p = 0` are most important, keys with `p = q' = 0` least.
//! * **Limited optimization**: the middle keys keep the default `k`; the
//!   optimised keys share the rest of the hash budget `(m/n) ln 2`.
//! * **Rounding baseline**: nearest integer, then `[1, k_max]`, as Section 5
//!   describes; it may exceed the hash budget, which eq. (5) then charges as
//!   a fuller filter.

pub mod optimize;

use hashbrown::HashMap;

use bloomslice::BloomFilter;
use bloomslice::BloomParams;
use bloomslice::Error;
use bloomslice::SlicedIndex;
use bloomslice::params::MAX_HASHES;
use bloomslice::{Key, KeyHash};

/// What the popularity-conscious optimisers and schemes fail with: their
/// own errors, and the core's [`Error`]s (parameters, ids, memory) wrapped
/// in [`PopularityError::Core`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PopularityError {
    /// `p` and `q'` (or hash counts) over universes of different sizes.
    #[error("popularity vectors of different lengths: {p} and {q}")]
    LengthMismatch {
        /// Length of the first vector.
        p: usize,
        /// Length of the second vector.
        q: usize,
    },
    /// Popularities that are empty, negative, not finite or all zero (or
    /// another invalid real input).
    #[error("invalid popularity input: {0}")]
    InvalidPopularity(&'static str),
    /// `k_max` (or a default k) outside `1..=MAX_HASHES` (or above `k_max`).
    #[error("invalid hash count {0} (must be in 1..=64 and within k_max)")]
    InvalidMaxHashes(u32),
    /// The approximation parameter must be positive and finite.
    #[error("epsilon {0} must be positive and finite")]
    InvalidEpsilon(f64),
    /// The hash budget `(m/n) ln 2` cannot even give every key one hash.
    #[error("hash budget of {hashes_per_key} hashes per key cannot give every key one hash")]
    InfeasibleBudget {
        /// The budget per unit of membership mass.
        hashes_per_key: f64,
    },
    /// The dynamic program's table would exceed
    /// [`optimize::MAX_DP_MEMORY_BYTES`].
    #[error(
        "dynamic program needs {table_bits} bits of memory, too many (use limited optimization or a larger epsilon)"
    )]
    ProblemTooLarge {
        /// The bits (8 per byte) of working memory the dynamic program would need.
        table_bits: u64,
    },
    /// A broken internal invariant (a bug; never expected).
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// An error the core names (an unknown id, mismatched parameters,
    /// memory, a broken invariant).
    #[error(transparent)]
    Core(#[from] bloomslice::Error),
}

/// `Result` with [`PopularityError`].
pub type Result<T, E = PopularityError> = core::result::Result<T, E>;

/// A popularity-conscious hash scheme: a table key -> `k_i` with the
/// parameters' `k` as default. It plugs into [`BloomFilter`] and
/// [`SlicedIndex`]: insert and query a key with its own hash count.
///
/// ```
/// use bloomslice::{BloomFilter, BloomParams, SlicedIndex};
/// use bloomslice_papers::PopularityScheme;
///
/// let params = BloomParams::new(8192, 5)?;
/// let mut scheme = PopularityScheme::new(params);
/// scheme.set("hot-miss", 10)?; // often queried, rarely stored
/// scheme.set("stored-a-lot", 1)?;
/// let mut f = BloomFilter::new(params)?;
/// scheme.insert(&mut f, "stored-a-lot")?;
/// assert!(scheme.contains(&f, "stored-a-lot")?);
/// let mut index = SlicedIndex::new(params);
/// index.insert_filter(3, &f)?;
/// let mut out = Vec::new();
/// scheme.query_index(&index, "stored-a-lot", &mut out)?;
/// assert_eq!(out, vec![3]);
/// # Ok::<(), bloomslice_papers::PopularityError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PopularityScheme {
    params: BloomParams,
    table: HashMap<u64, u8>,
}

impl PopularityScheme {
    /// An empty scheme: every key uses `params.k()` hashes.
    pub fn new(params: BloomParams) -> Self {
        PopularityScheme { params, table: HashMap::new() }
    }

    /// A scheme from keys and their hash counts (e.g. the output of
    /// [`optimize::integer_solution`] over `keys`).
    ///
    /// # Errors
    ///
    /// [`PopularityError::LengthMismatch`] or
    /// [`PopularityError::InvalidMaxHashes`] for a count outside `1..=64`.
    pub fn from_assignment<K: Key>(params: BloomParams, keys: &[K], ks: &[u32]) -> Result<Self> {
        if keys.len() != ks.len() {
            return Err(PopularityError::LengthMismatch { p: keys.len(), q: ks.len() });
        }
        let mut scheme = PopularityScheme::new(params);
        scheme.table.try_reserve(keys.len()).map_err(|_| Error::CapacityOverflow("scheme table"))?;
        for (key, &k) in keys.iter().zip(ks) {
            scheme.set(key, k)?;
        }
        Ok(scheme)
    }

    /// The parameters (filter length, default `k`, seed).
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// Number of keys with their own hash count.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether every key uses the default.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Gives `key` its own hash count `k` (a `k` equal to the default is
    /// stored too; it is simply redundant). Set counts before inserting:
    /// raising the count of a key already inserted somewhere makes queries
    /// probe positions that were never set (false negatives).
    ///
    /// # Errors
    ///
    /// [`PopularityError::InvalidMaxHashes`] unless `1 <= k <= 64`.
    pub fn set<K: Key + ?Sized>(&mut self, key: &K, k: u32) -> Result<()> {
        if k == 0 || k > MAX_HASHES {
            return Err(PopularityError::InvalidMaxHashes(k));
        }
        self.table.insert(self.params.hash(key).h1, k as u8);
        Ok(())
    }

    /// The hash count of a key.
    pub fn hashes<K: Key + ?Sized>(&self, key: &K) -> u32 {
        self.hashes_for(self.params.hash(key))
    }

    /// The hash count of a key by its hash.
    #[inline]
    pub fn hashes_for(&self, hash: KeyHash) -> u32 {
        self.table.get(&hash.h1).map_or(self.params.k(), |&k| u32::from(k))
    }

    fn check(&self, params: &BloomParams) -> Result<()> {
        Ok(self.params.check_same(params)?)
    }

    /// Inserts `key` into `filter` with its own hash count.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`]; unchanged.
    pub fn insert<K: Key + ?Sized>(&self, filter: &mut BloomFilter, key: &K) -> Result<()> {
        self.check(filter.params())?;
        let hash = self.params.hash(key);
        filter.insert_hash_with_hashes(hash, self.hashes_for(hash));
        Ok(())
    }

    /// Whether `filter` may contain `key`, probing its own hash count.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`].
    pub fn contains<K: Key + ?Sized>(&self, filter: &BloomFilter, key: &K) -> Result<bool> {
        self.check(filter.params())?;
        let hash = self.params.hash(key);
        Ok(filter.contains_hash_with_hashes(hash, self.hashes_for(hash)))
    }

    /// Inserts `key` into filter `id` of `index` with its own hash count.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::UnknownId`]; unchanged.
    pub fn insert_into_index<K: Key + ?Sized>(&self, index: &mut SlicedIndex, id: u64, key: &K) -> Result<()> {
        self.check(index.params())?;
        let hash = self.params.hash(key);
        index.insert_key_hash_with_hashes(id, hash, self.hashes_for(hash))?;
        Ok(())
    }

    /// Ids of the filters of `index` that may contain `key`: the AND of the
    /// key's own `k_i` rows. `out` is cleared first.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`].
    pub fn query_index<K: Key + ?Sized>(&self, index: &SlicedIndex, key: &K, out: &mut Vec<u64>) -> Result<()> {
        self.check(index.params())?;
        let hash = self.params.hash(key);
        index.query_hash_with_hashes(hash, self.hashes_for(hash), out);
        Ok(())
    }
}

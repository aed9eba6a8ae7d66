//! Stable and importance-aware Bloom filters for duplicate detection on
//! unbounded streams (Kulkarni et al., *Importance-aware Bloom Filter for Set
//! Membership Queries in Streaming Data*, `importance-aware-bloom-filter.txt`).
//!
//! # Mapping to the paper
//!
//! | Paper (Table III)                              | Here                                   |
//! |------------------------------------------------|----------------------------------------|
//! | BF: M-insert with M = 1                        | [`Policy::Bf`] (no decrements)         |
//! | SBF: M-insert + random delete (Section II-A)   | [`Policy::Sbf`]                        |
//! | IBF-2C: M/2-insert + random delete (Alg. 1)    | [`Policy::Ibf2c`]                      |
//! | IBF-MC: imp-insert + random delete (Alg. 2)    | [`Policy::IbfMc`]                      |
//! | IBF-H: imp-insert + probabilistic-delete-val   | [`Policy::IbfH`]                       |
//! | m cells of d bits, max value M, K hashes, P    | [`StableParams`]                       |
//! | Markov chain of Section III, V0, FPS bound     | [`theory`]                             |
//! | Section IV-D synthetic streams, Table I metrics| `bloomslice_bench::stable_experiment`  |
//!
//! Every filter processes a stream item with [`StableBloomFilter::observe`],
//! which follows Algorithms 1 and 2 in the paper's order:
//!
//! 1. probe the K cells of the key; the item is reported as a duplicate iff
//!    none of them is zero (the pseudocode's unconditional `DupFlag = no`
//!    after the `if` is read as the `else` branch it obviously is);
//! 2. decrement P cells chosen uniformly at random (with replacement), each
//!    by one unless it is already zero ([`Policy::IbfH`] chooses them with
//!    probability inversely proportional to their value instead);
//! 3. raise each of the K cells to the policy's insert value `v`:
//!    `cell = max(cell, v)` (Algorithm 2's `if cell < f(imp) then cell = f(imp)`).
//!
//! # Choices the paper leaves open
//!
//! * **Importance** is an integer in `1..=max_importance` (the paper's
//!   synthetic streams use 1..=50). IBF-MC maps it to
//!   `f(imp) = ceil(imp * M / max_importance)`, which lies in `1..=M` and is
//!   `M` exactly for the most important items.
//! * **IBF-2C** calls an item important when `2 * imp > max_importance` (the
//!   upper half of the range) and then sets its cells to `M`; other items
//!   raise their cells to `ceil(M / 2)` (M = 2^d - 1 is odd, so `M / 2` is not
//!   an integer; rounding up keeps it >= 1 for M = 1).
//! * **IBF-H** draws each of its P decrements exactly from the paper's
//!   distribution: a non-zero cell of value `v` with probability
//!   proportional to `1 / v`. The filter keeps its non-zero cells grouped by
//!   value (8 bytes per cell, updated in O(1) whenever a cell changes), picks
//!   a value class with probability `count_v / v` over the total, then a
//!   uniform member of it, from one random word. (An earlier version drew
//!   uniformly random cells and accepted one of value `v` with probability
//!   `1 / v`: the same distribution, but about ten draws per decrement at the
//!   paper's parameters; see `bench/RESULTS.md`, section "Papers: stable and importance-aware".) When every cell is zero
//!   there is nothing to decrement.
//! * **P = 0** is allowed (a filter that never forgets; handy as a model in
//!   tests); **P > m** is rejected because it cannot mean "P distinct cells".
//! * Random cells come from a seeded wyrand generator (64-bit state, defined
//!   here so that a run is reproducible given the seed on every platform).
//! * The cell index is drawn with 32-bit fast range reduction
//!   (`(r * m) >> 32`), whose bias is below `m / 2^32`, negligible for the
//!   filter sizes of the paper.

mod classes;
pub mod theory;

use classes::ValueClasses;

use bloomslice::params::Probes;
use bloomslice::{BloomParams, Key, KeyHash};

/// The largest cell value: cells are stored as `u8`.
pub const MAX_CELL_VALUE: u32 = u8::MAX as u32;

/// What the stable and importance-aware filters fail with: their own
/// errors, and the core's [`Error`](bloomslice::Error)s (parameters,
/// memory) wrapped in [`StableError::Core`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StableError {
    /// The maximum cell value M must be at least 1.
    #[error("the maximum cell value M must be at least 1 (M = 0)")]
    ZeroMax,
    /// The maximum cell value does not fit a `u8` cell.
    #[error("the maximum cell value M = {max} is more than {MAX_CELL_VALUE}")]
    MaxTooLarge {
        /// The requested M.
        max: u32,
    },
    /// At least one hash function (K >= 1) is needed.
    #[error("a stable filter needs at least one hash function (K = 0)")]
    ZeroHashes,
    /// More decrements per item than there are cells.
    #[error("P = {decrements} decrements per item is more than the m = {cells} cells")]
    DecrementsExceedCells {
        /// The requested P.
        decrements: u32,
        /// The number of cells m.
        cells: u64,
    },
    /// The importance range must be at least `1..=1`.
    #[error("the largest importance must be at least 1")]
    ZeroMaxImportance,
    /// An importance outside `1..=max_importance`.
    #[error("importance {importance} is outside 1..={max}")]
    ImportanceOutOfRange {
        /// The importance that was offered.
        importance: u32,
        /// The largest importance of the filter.
        max: u32,
    },
    /// A cell holds a value above M (only reported by
    /// [`StableBloomFilter::validate`]; it indicates a bug).
    #[error("cell {index} holds {value}, more than the maximum {max}")]
    CellOutOfRange {
        /// The cell index.
        index: usize,
        /// Its value.
        value: u8,
        /// The filter's M.
        max: u8,
    },
    /// IBF-H's cells-by-value lists disagree with the cells (only
    /// reported by [`StableBloomFilter::validate`]; it indicates a bug).
    #[error("IBF-H's cells-by-value lists disagree with the cells")]
    ValueListsCorrupt,
    /// An error the core names (an unknown id, mismatched parameters,
    /// memory, a broken invariant).
    #[error(transparent)]
    Core(#[from] bloomslice::Error),
}

/// `Result` with [`StableError`].
pub type Result<T, E = StableError> = core::result::Result<T, E>;

/// The parameters of a stable filter: m cells, K hashes, P decrements per
/// item, cell maximum M and the importance range `1..=max_importance`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StableParams {
    bloom: BloomParams,
    decrements: u32,
    max_value: u8,
    max_importance: u32,
}

impl StableParams {
    /// Validates and builds parameters with importance range `1..=1`
    /// (change it with [`with_max_importance`](Self::with_max_importance)).
    ///
    /// Errors: `max_value` of 0 or above [`MAX_CELL_VALUE`], `hashes` of 0,
    /// `decrements > cells`, and whatever [`BloomParams::new`] rejects
    /// (m = 0, m or K too large).
    pub fn new(cells: u64, hashes: u32, decrements: u32, max_value: u32) -> Result<Self> {
        if max_value == 0 {
            return Err(StableError::ZeroMax);
        }
        if max_value > MAX_CELL_VALUE {
            return Err(StableError::MaxTooLarge { max: max_value });
        }
        if hashes == 0 {
            return Err(StableError::ZeroHashes);
        }
        let bloom = BloomParams::new(cells, hashes)?;
        if u64::from(decrements) > cells {
            return Err(StableError::DecrementsExceedCells { decrements, cells });
        }
        Ok(StableParams { bloom, decrements, max_value: max_value as u8, max_importance: 1 })
    }

    /// The parameters of the paper's experiments (Table II): 16 KB at one byte
    /// per cell (m = 16 384), M = 7, K = 5, P = 10, importance 1..=50.
    pub fn paper() -> Self {
        StableParams::new(16 * 1024, 5, 10, 7)
            .and_then(|p| p.with_max_importance(50))
            .expect("the paper's parameters are valid")
    }

    /// The same parameters with importance range `1..=max_importance`.
    pub fn with_max_importance(mut self, max_importance: u32) -> Result<Self> {
        if max_importance == 0 {
            return Err(StableError::ZeroMaxImportance);
        }
        self.max_importance = max_importance;
        Ok(self)
    }

    /// The same parameters with another hash seed (see
    /// [`BloomParams::with_seed`]).
    pub fn with_hash_seed(mut self, seed: u64) -> Self {
        self.bloom = self.bloom.with_seed(seed);
        self
    }

    /// The number of cells m.
    pub fn cells(&self) -> u64 {
        self.bloom.m()
    }

    /// The number of hash functions K.
    pub fn hashes(&self) -> u32 {
        self.bloom.k()
    }

    /// The number of random decrements per item P.
    pub fn decrements(&self) -> u32 {
        self.decrements
    }

    /// The maximum cell value M.
    pub fn max_value(&self) -> u8 {
        self.max_value
    }

    /// The largest importance; importances are `1..=max_importance`.
    pub fn max_importance(&self) -> u32 {
        self.max_importance
    }

    /// The hashing parameters (m, K, seed) shared with [`bloomslice::BloomFilter`].
    pub fn bloom(&self) -> &BloomParams {
        &self.bloom
    }
}

/// Insert and delete procedures of Table III.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Plain Bloom filter: sets its K cells to 1 and never decrements (M and
    /// P are ignored); it fills up on an unbounded stream.
    Bf,
    /// Stable Bloom filter: P random decrements, K cells set to M.
    Sbf,
    /// IBF-2C: P random decrements, K cells set to M (important items) or
    /// raised to `ceil(M / 2)` (the others).
    Ibf2c,
    /// IBF-MC: P random decrements, K cells raised to `f(imp)` in `1..=M`.
    IbfMc,
    /// IBF-H: like IBF-MC but each decrement picks a non-zero cell with
    /// probability inversely proportional to its value.
    IbfH,
}

impl Policy {
    /// All policies in the order of the paper's Table I.
    pub const ALL: [Policy; 5] = [Policy::Bf, Policy::Sbf, Policy::Ibf2c, Policy::IbfMc, Policy::IbfH];

    /// The name used in the paper's tables.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Bf => "BF",
            Policy::Sbf => "SBF",
            Policy::Ibf2c => "IBF-2C",
            Policy::IbfMc => "IBF-MC",
            Policy::IbfH => "IBF-H",
        }
    }

    /// The value this policy raises a cell to for an item of `importance`
    /// (assumed to be in `1..=params.max_importance()`).
    pub fn insert_value(self, params: &StableParams, importance: u32) -> u8 {
        let max = params.max_value;
        match self {
            Policy::Bf => 1,
            Policy::Sbf => max,
            Policy::Ibf2c => {
                if u64::from(importance) * 2 > u64::from(params.max_importance) {
                    max
                } else {
                    max.div_ceil(2)
                }
            }
            Policy::IbfMc | Policy::IbfH => {
                let scaled = u64::from(importance) * u64::from(max);
                // ceil(imp * M / max_imp): 1 for imp = 1 when max_imp >= M,
                // M for imp = max_imp; clamped so out-of-range input stays in 1..=M.
                scaled.div_ceil(u64::from(params.max_importance)).clamp(1, u64::from(max)) as u8
            }
        }
    }

    /// Whether this policy decrements cells at all.
    pub fn forgets(self) -> bool {
        self != Policy::Bf
    }
}

/// A stable or importance-aware Bloom filter over a stream (see the module
/// documentation for the algorithm and the paper mapping).
///
/// ```
/// use bloomslice_papers::{Policy, StableBloomFilter, StableParams};
///
/// let params = StableParams::paper();
/// let mut filter = StableBloomFilter::new(params, Policy::IbfMc, 42);
/// assert!(!filter.observe(b"AAPL", 50)?); // first sighting
/// assert!(filter.observe(b"AAPL", 50)?); // duplicate
/// # Ok::<(), bloomslice_papers::StableError>(())
/// ```
#[derive(Clone, Debug)]
pub struct StableBloomFilter {
    params: StableParams,
    policy: Policy,
    cells: Vec<u8>,
    rng: WyRand,
    /// IBF-H only: the cells grouped by value, for its weighted delete.
    classes: Option<Box<ValueClasses>>,
}

impl StableBloomFilter {
    /// An empty filter (every cell 0) whose random decrements are drawn from
    /// a generator seeded with `seed`.
    pub fn new(params: StableParams, policy: Policy, seed: u64) -> Self {
        let m = params.cells() as usize;
        let classes = (policy == Policy::IbfH).then(|| Box::new(ValueClasses::new(m, params.max_value)));
        StableBloomFilter { params, policy, cells: vec![0; m], rng: WyRand(seed), classes }
    }

    /// The parameters.
    pub fn params(&self) -> &StableParams {
        &self.params
    }

    /// The insert/delete policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The cell values, each in `0..=M` (`0..=1` for [`Policy::Bf`]).
    pub fn cells(&self) -> &[u8] {
        &self.cells
    }

    /// The fraction of cells that are zero (the quantity V0 predicts).
    pub fn zero_fraction(&self) -> f64 {
        let zeros = self.cells.iter().filter(|&&c| c == 0).count();
        zeros as f64 / self.cells.len() as f64
    }

    /// Sets every cell to zero (the random generator keeps its state).
    pub fn clear(&mut self) {
        self.cells.fill(0);
        if let Some(classes) = &mut self.classes {
            classes.clear();
        }
    }

    /// Checks that every cell is within `0..=M`; tests and fuzzers call this
    /// after every operation.
    pub fn validate(&self) -> Result<()> {
        let max = if self.policy == Policy::Bf { 1 } else { self.params.max_value };
        if let Some(index) = self.cells.iter().position(|&c| c > max) {
            return Err(StableError::CellOutOfRange { index, value: self.cells[index], max });
        }
        if self.classes.as_ref().is_some_and(|classes| !classes.agrees_with(&self.cells)) {
            return Err(StableError::ValueListsCorrupt);
        }
        Ok(())
    }

    /// Processes one stream item: reports whether it is a duplicate (all K
    /// cells non-zero), then decrements P cells and raises the K cells to the
    /// policy's insert value, in the paper's order.
    ///
    /// Errors (leaving the filter unchanged) when `importance` is outside
    /// `1..=max_importance`.
    #[inline]
    pub fn observe<K: Key + ?Sized>(&mut self, key: &K, importance: u32) -> Result<bool> {
        self.observe_hash(self.params.bloom.hash(key), importance)
    }

    /// [`observe`](Self::observe) for a key hashed with
    /// [`StableParams::bloom`]'s [`BloomParams::hash`].
    #[inline]
    pub fn observe_hash(&mut self, hash: KeyHash, importance: u32) -> Result<bool> {
        let value = self.checked_insert_value(importance)?;
        let positions = self.positions(hash);
        let duplicate = positions.iter().all(|&p| self.cells[p as usize] != 0);
        self.decrement();
        self.raise(&positions, value);
        Ok(duplicate)
    }

    /// Whether `key` would be reported as a duplicate now (all its K cells are
    /// non-zero). Does not change the filter.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.params.bloom.hash(key))
    }

    /// [`contains`](Self::contains) for a pre-computed hash.
    #[inline]
    pub fn contains_hash(&self, hash: KeyHash) -> bool {
        let positions = self.positions(hash);
        positions.iter().all(|&p| self.cells[p as usize] != 0)
    }

    /// The update half of [`observe`](Self::observe) without the query: P
    /// decrements, then the K cells are raised to the insert value.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K, importance: u32) -> Result<()> {
        let value = self.checked_insert_value(importance)?;
        let positions = self.positions(self.params.bloom.hash(key));
        self.decrement();
        self.raise(&positions, value);
        Ok(())
    }

    fn checked_insert_value(&self, importance: u32) -> Result<u8> {
        let max = self.params.max_importance;
        if importance == 0 || importance > max {
            return Err(StableError::ImportanceOutOfRange { importance, max });
        }
        Ok(self.policy.insert_value(&self.params, importance))
    }

    #[inline]
    fn positions(&self, hash: KeyHash) -> Probes {
        self.params.bloom.probes_n(hash, self.params.hashes() as usize)
    }

    #[inline]
    fn raise(&mut self, positions: &[u32], value: u8) {
        if let Some(classes) = &mut self.classes {
            for &p in positions {
                let cell = &mut self.cells[p as usize];
                let old = *cell;
                *cell = old.max(value);
                classes.moved(p, old, *cell);
            }
            return;
        }
        for &p in positions {
            let cell = &mut self.cells[p as usize];
            *cell = (*cell).max(value);
        }
    }

    /// Step 2 of the algorithm: P decrements.
    #[inline]
    fn decrement(&mut self) {
        match self.policy {
            Policy::Bf => {}
            Policy::Sbf | Policy::Ibf2c | Policy::IbfMc => self.decrement_uniform(),
            Policy::IbfH => self.decrement_inverse_value(),
        }
    }

    /// P cells uniformly at random, two 32-bit draws per 64-bit random word.
    #[inline]
    fn decrement_uniform(&mut self) {
        let m = self.cells.len() as u64;
        let cells = &mut self.cells[..];
        let decrements = self.params.decrements;
        // A local copy of the generator stays in registers; through `self`
        // its state would be reloaded after every (possibly aliasing) store
        // to a cell, putting a store-forwarding round trip on the chain.
        let mut rng = self.rng.clone();
        for _ in 0..decrements / 2 {
            let r = rng.next_u64();
            let first = fastrange32(r as u32, m);
            cells[first] = cells[first].saturating_sub(1);
            let second = fastrange32((r >> 32) as u32, m);
            cells[second] = cells[second].saturating_sub(1);
        }
        if decrements % 2 == 1 {
            let last = fastrange32(rng.next_u64() as u32, m);
            cells[last] = cells[last].saturating_sub(1);
        }
        self.rng = rng;
    }

    /// IBF-H's probabilistic delete: each of the P decrements picks a
    /// non-zero cell with probability proportional to `1 / value` (see
    /// `classes`); with every cell zero there is nothing to decrement.
    fn decrement_inverse_value(&mut self) {
        let Some(classes) = &mut self.classes else { return };
        for _ in 0..self.params.decrements {
            let Some(cell) = classes.sample(self.rng.next_u64()) else { break };
            let value = &mut self.cells[cell as usize];
            classes.moved(cell, *value, *value - 1);
            *value -= 1;
        }
    }
}

/// The wyrand generator (Wang Yi): one 64-bit word of state, one 128-bit
/// multiply per output, passes BigCrush and PractRand. Its output is fully
/// determined by the seed on every platform and independent of the `rand`
/// version, which is what reproducible runs need.
#[derive(Clone, Debug)]
struct WyRand(u64);

impl WyRand {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        (t >> 64) as u64 ^ t as u64
    }
}

/// Maps a uniform 32-bit `r` to `[0, n)` for `n <= 2^32`.
#[inline]
fn fastrange32(r: u32, n: u64) -> usize {
    ((u64::from(r) * n) >> 32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_values_follow_the_policies() {
        let params = StableParams::paper();
        assert_eq!(Policy::Sbf.insert_value(&params, 1), 7);
        assert_eq!(Policy::Bf.insert_value(&params, 50), 1);
        assert_eq!(Policy::Ibf2c.insert_value(&params, 25), 4);
        assert_eq!(Policy::Ibf2c.insert_value(&params, 26), 7);
        assert_eq!(Policy::IbfMc.insert_value(&params, 1), 1);
        assert_eq!(Policy::IbfMc.insert_value(&params, 50), 7);
        for imp in 1..=50 {
            let v = Policy::IbfMc.insert_value(&params, imp);
            assert!((1..=7).contains(&v));
            assert!(v >= Policy::IbfMc.insert_value(&params, imp.saturating_sub(1).max(1)));
        }
    }

    #[test]
    fn fastrange32_stays_in_range() {
        assert_eq!(fastrange32(u32::MAX, 7), 6);
        assert_eq!(fastrange32(0, 7), 0);
        assert_eq!(fastrange32(u32::MAX, 1), 0);
    }

    #[test]
    fn ibf_h_picks_cells_inversely_to_their_value() {
        // Cells 1, 2, 4 and 0: a decrement must pick them with probability
        // 4/7, 2/7, 1/7 and never the zero cell.
        let params = StableParams::new(4, 1, 1, 7).unwrap();
        let mut base = StableBloomFilter::new(params, Policy::IbfH, 3);
        for (cell, value) in [(0u32, 1u8), (1, 2), (2, 4)] {
            base.raise(&[cell], value);
        }
        base.validate().unwrap();
        let trials = 70_000;
        let mut hits = [0u32; 4];
        for seed in 0..trials {
            let mut f = base.clone();
            f.rng = WyRand(seed);
            f.decrement_inverse_value();
            f.validate().unwrap();
            let changed: Vec<usize> = (0..4).filter(|&c| f.cells[c] != base.cells[c]).collect();
            assert_eq!(changed.len(), 1);
            hits[changed[0]] += 1;
        }
        assert_eq!(hits[3], 0);
        for (cell, expected) in [(0, 4.0 / 7.0), (1, 2.0 / 7.0), (2, 1.0 / 7.0)] {
            let n = f64::from(trials as u32);
            let sigma = (n * expected * (1.0 - expected)).sqrt();
            let got = f64::from(hits[cell]);
            assert!((got - n * expected).abs() < 5.0 * sigma, "cell {cell}: {got} hits, expected {}", n * expected);
        }
    }

    #[test]
    fn ibf_h_list_follows_cells_to_zero_and_back() {
        let params = StableParams::new(8, 2, 8, 2).unwrap().with_max_importance(50).unwrap();
        let mut f = StableBloomFilter::new(params, Policy::IbfH, 11);
        for round in 0..200u64 {
            f.observe_hash(bloomslice::KeyHash { h1: round, h2: round * 2 + 1 }, 1 + (round % 50) as u32).unwrap();
            f.validate().unwrap();
        }
        // With P = m = 8 decrements per item and M = 2, cells keep emptying.
        let mut empty = StableBloomFilter::new(params, Policy::IbfH, 1);
        empty.decrement_inverse_value();
        empty.validate().unwrap();
        f.clear();
        f.validate().unwrap();
        assert!(f.cells().iter().all(|&c| c == 0));
    }

    #[test]
    fn decrements_hit_roughly_uniformly() {
        let params = StableParams::new(64, 1, 64, 255).unwrap();
        let mut filter = StableBloomFilter::new(params, Policy::Sbf, 7);
        filter.cells.fill(255);
        filter.decrement_uniform();
        filter.decrement_uniform();
        let total: u32 = filter.cells.iter().map(|&c| u32::from(255 - c)).sum();
        assert_eq!(total, 128);
    }
}

//! Choosing a collection's parts (size classes) from its set sizes.
//!
//! A [`SlicedIndex`](crate::SlicedIndex) gives every filter one length `m`,
//! so a skewed collection sized for its largest set spends that set's bits
//! on every small one. A [`Layout`] splits the sets, sorted by size, into
//! contiguous *parts*; each part gets its own `m`, sized by
//! [`BloomParams::for_capacity`] for the largest set it holds at the target
//! false-positive rate `p`. Every part has the same `k`
//! (`ceil(-ln p / ln 2)`, which depends on `p` only), so a key hashed once
//! serves every part.
//!
//! # Cost model
//!
//! For a part `j` holding `w_j` sets, the largest of `n_j` keys:
//!
//! - **memory**: `bits_j` = the row storage of a
//!   [`SlicedIndex`](crate::SlicedIndex) of `w_j` filters of
//!   `m_j = for_capacity(n_j, p).m()` bits
//!   ([`rows_bytes_for`](crate::sliced::rows_bytes_for)): one shard of
//!   `c = shard_columns_for(w_j)` columns (the least power of two up to
//!   512, then the least multiple of 512; full shards of 16 384 columns
//!   first above that), whose `m_j * c` bits are rounded up to whole cache
//!   lines. This is what the part really holds
//!   ([`SlicedIndex::rows_bytes`](crate::SlicedIndex::rows_bytes) of a
//!   built collection's parts equals it). The layout's memory is
//!   `sum_j bits_j`.
//! - **query**: a key reads `k` row runs in every part, each
//!   `ceil(w_j / 512)` cache lines long, so `sum_j k * ceil(w_j / 512)`
//!   lines and `parts * k` runs ([`Layout::row_runs`],
//!   [`Layout::query_lines`]). Since the widths add up to the number of
//!   sets `N`, the lines are between `k * ceil(N / 512)` and
//!   `k * (N / 512 + parts)`: each part adds at most `k` runs of one line,
//!   whatever its width. The query cost is therefore priced per part.
//!
//! The layout minimises `bits(P) * (1 + w)^(P - 1)` over the number of
//! parts `P <= max_parts`, with `w` = [`LayoutConfig::query_cost_weight`]
//! and `bits(P)` the least memory of any split into `P` parts: one more
//! part (`k` more row runs per key) is taken only if it saves more than
//! the fraction `w / (1 + w)` of the memory. `bits(P)` comes from a dynamic
//! program over the sorted distinct sizes `v_0 < ... < v_{d-1}`:
//! `best[P][j] = min_i best[P - 1][i - 1] + cost(i..=j)`, a part always
//! being a run of consecutive sizes (an optimal part holds every set whose
//! size lies between its smallest and its largest: moving a set into the
//! part whose `m` covers it never costs more). That is `O(max_parts * d^2)`
//! time. When there are more than [`MAX_DISTINCT_SIZES`] distinct sizes,
//! every size is first rounded *up* to its six leading binary digits (at
//! most 3.2% more, so a part sized for a rounded size still holds the set),
//! which leaves the 64 values below 64 and at most 32 distinct values per
//! power of two above (under 2 048 in all).
//!
//! # Default
//!
//! `max_parts = 8`, `query_cost_weight = 0.05`: a part must save about 5%
//! of the memory to be worth `k` more row runs per key. On a collection
//! shaped like the Debian package file lists (730 sets, median 18 keys,
//! 90th percentile 200, 99th 1 574, largest 50 576; the tests
//! `package_list_shape_is_within_1_6x_of_the_optimum` and
//! `model_matches_built_collections`), at `p` = 1%, memory measured on the
//! built collection (rows: the parts' [`SlicedIndex::rows_bytes`](crate::SlicedIndex::rows_bytes),
//! equal to the model's bits; all: `SetIndex::memory_bytes`, with the
//! id maps and column owners):
//!
//! | config | parts | row runs per key | rows | rows vs per-set optimum | all |
//! | --- | ---: | ---: | ---: | ---: | ---: |
//! | one part (`max_parts = 1`) | 1 | 7 | 65.4 MB | 275x | 65.5 MB |
//! | weight 0.2 | 5 | 35 | 502 KB | 2.11x | 582 KB |
//! | weight 0.1 | 7 | 49 | 384 KB | 1.62x | 465 KB |
//! | **default** (weight 0.05; weight 0 alike) | 8 | 56 | 360 KB | 1.52x | 441 KB |
//!
//! The per-set optimum is `n * log2(1/p) / ln 2` bits per set (9.6 bits a
//! key at 1%); part filters cost more because `k` is a whole number
//! (`k / ln 2` = 10.1 bits a key at `k` = 7), `m` is whole words (a set of
//! one key costs 64 bits), a part is sized for its largest set, and a
//! part's width is a power of two up to 512 columns (a part of 402 sets
//! holds 512 columns). Eight parts bound a query at `8k` row runs. The
//! default weight is the largest that keeps the target of 1.6x the
//! optimum on that shape: at 0.1 the layout drops to 7 parts and 1.62x.
//! Its first part is the same as weight 0.1's (sets of up to 24 keys in
//! 256-bit filters); the eighth part splits the two largest sets apart.
//!
//! On the real package lists (the 731 `/var/lib/dpkg/info/*.list` files of
//! the machine it was measured on, 120 000 distinct paths), under the
//! earlier model without width rounding, the layout at weight 0.1 was
//! 6 parts, 218 KB, 1.51x the optimum; with every
//! path of the other sets as absent keys, the measured false-positive rate
//! per set was at most 0.0086 and 0.00066 on average at `p` = 1%, with no
//! false negative. Weight 0 gave 8 parts at 1.32x, but two sets measured
//! above 1.5x their target (0.0163 at most): its first part had filters
//! of 192 bits for sets of up to 19 keys, and the rate of so small a
//! filter varies widely around its expectation with the bits its keys
//! happen to set.
//!
//! # Extremes
//!
//! Measured on built collections at 1% (`model_matches_built_collections`):
//!
//! - **All sets of one size** (or of sizes whose `m` rounds to the same
//!   number of words): one part; more parts cannot save memory. 100 sets
//!   of 1 000 keys: 162 KB of rows, 1.35x the optimum (the 100 columns
//!   round up to 128).
//! - **All sets tiny**: sizes of up to a few keys give `m` of one or two
//!   64-bit words, so every split saves little and the layout is one part.
//!   5 000 sets of 1 to 4 keys: 64-bit filters in 5 120 columns, 41 KB of
//!   rows, 2.73x the optimum (a 64-bit filter for a set of one key is
//!   6.7x its optimum); the id map and column owners (613 KB in all) then
//!   outweigh the rows. Two sets of 10 keys: one 2-column shard, 64 bytes
//!   of rows (one cache line).
//! - **One huge set among thousands of tiny ones**: two parts, the huge
//!   set alone in a one-column part (its filter, padded to a cache line)
//!   and the tiny sets together. 5 000 sets of 5 keys and one of
//!   2 000 000: 2.57 MB of rows, 1.06x the optimum.

use crate::error::{Error, Result};
use crate::params::BloomParams;

/// More distinct set sizes than this are rounded up to six binary digits
/// before the dynamic program runs (see the module documentation).
pub const MAX_DISTINCT_SIZES: usize = 2048;

/// Cache-line width of a row run, in columns (bits).
const LINE_COLUMNS: u64 = 512;

/// The knobs of [`Layout::choose`]; see the module documentation for the
/// cost model and the reasoning behind the default.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayoutConfig {
    /// Most parts a layout may have (at least 1). Default 8.
    pub max_parts: usize,
    /// The price of one more part, as a fraction of the memory: a layout of
    /// `P` parts and `bits` bits costs `bits * (1 + w)^(P - 1)`. 0 takes
    /// the least memory within `max_parts`; large values give one part.
    /// Default 0.05.
    pub query_cost_weight: f64,
}

impl Default for LayoutConfig {
    fn default() -> Self {
        LayoutConfig { max_parts: 8, query_cost_weight: 0.05 }
    }
}

/// One part of a [`Layout`]: the sets whose sizes lie in
/// `min_size..=capacity`, in filters of `m` bits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PartPlan {
    /// Smallest set size this part takes (one more than the previous
    /// part's capacity; 0 for the first part).
    pub min_size: u64,
    /// Largest set size this part takes: its `m` is sized for it at `p`.
    pub capacity: u64,
    /// Filter length of the part, `BloomParams::for_capacity(capacity, p).m()`.
    pub m: u64,
    /// Number of sets in the part.
    pub sets: usize,
    /// Bits of the part's rows by the cost model (the storage rule of its
    /// shards: see the module documentation).
    pub bits: u64,
}

/// The parts chosen for a collection (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    p: f64,
    k: u32,
    parts: Vec<PartPlan>,
    optimum_bits: f64,
    mean_fpr: f64,
    max_fpr: f64,
}

impl Layout {
    /// The layout for sets of the given sizes (expected key counts; 0 is
    /// taken as 1) at false-positive rate `p`.
    ///
    /// ```
    /// use bloomslice::collection::{Layout, LayoutConfig};
    ///
    /// let mut sizes = vec![10u64; 1000];
    /// sizes.push(1_000_000);
    /// let layout = Layout::choose(&sizes, 0.01, LayoutConfig::default())?;
    /// assert_eq!(layout.parts().len(), 2);
    /// assert_eq!(layout.parts()[1].sets, 1);
    /// assert!(layout.bits() as f64 <= 1.2 * layout.optimum_bits());
    /// # Ok::<(), bloomslice::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The errors of [`BloomParams::for_capacity`] for `p` or for the
    /// largest size.
    pub fn choose(sizes: &[u64], p: f64, config: LayoutConfig) -> Result<Layout> {
        let k = BloomParams::for_capacity(1, p)?.k();
        let max_parts = config.max_parts.max(1);
        let mut sorted: Vec<u64> = sizes.iter().map(|&n| n.max(1)).collect();
        sorted.sort_unstable();
        let mut values = distinct_counts(&sorted);
        if values.len() > MAX_DISTINCT_SIZES {
            let rounded: Vec<u64> = sorted.iter().map(|&n| round_up_six_digits(n)).collect();
            values = distinct_counts(&rounded);
        }
        let d = values.len();
        // m of a part whose largest size is values[j].
        let m_of: Vec<u64> =
            values.iter().map(|&(v, _)| BloomParams::for_capacity(v, p).map(|b| b.m())).collect::<Result<_>>()?;
        // starts[j] = sets with a size below values[j].
        let mut starts = Vec::with_capacity(d + 1);
        starts.push(0usize);
        for &(_, c) in &values {
            starts.push(starts.last().copied().unwrap_or(0) + c);
        }
        let cost = |i: usize, j: usize| -> u64 { part_bits(m_of[j], (starts[j + 1] - starts[i]) as u64) };
        // best[j] for the current number of parts; from[P][j] the start of
        // the last part of the best split of values[..=j] into P parts.
        let mut best: Vec<u64> = (0..d).map(|j| cost(0, j)).collect();
        let mut from: Vec<Vec<usize>> = vec![vec![0; d]];
        let mut frontier = vec![best.last().copied().unwrap_or(0)];
        for parts in 2..=max_parts.min(d) {
            let mut next = vec![u64::MAX; d];
            let mut arg = vec![0; d];
            for j in parts - 1..d {
                for i in parts - 1..=j {
                    let c = best[i - 1].saturating_add(cost(i, j));
                    if c < next[j] {
                        next[j] = c;
                        arg[j] = i;
                    }
                }
            }
            best = next;
            from.push(arg);
            frontier.push(best[d - 1]);
        }
        // The number of parts with the least priced cost (fewest on ties).
        let w = config.query_cost_weight.max(0.0);
        let priced = |parts: usize| frontier[parts - 1] as f64 * (1.0 + w).powi(parts as i32 - 1);
        let chosen = (1..=frontier.len()).fold(1, |b, q| if priced(q) < priced(b) { q } else { b });
        // Walk the splits back.
        let mut bounds = Vec::with_capacity(chosen);
        let mut j = d;
        for parts in (1..=chosen).rev() {
            if j == 0 {
                break;
            }
            let i = from[parts - 1][j - 1];
            bounds.push((i, j - 1));
            j = i;
        }
        bounds.reverse();
        let mut plans = Vec::with_capacity(bounds.len());
        for &(i, j) in &bounds {
            let min_size = if i == 0 { 0 } else { values[i - 1].0 + 1 };
            let sets = starts[j + 1] - starts[i];
            plans.push(PartPlan { min_size, capacity: values[j].0, m: m_of[j], sets, bits: cost(i, j) });
        }
        if plans.is_empty() {
            // No sets: one part for sets of one key, so that the layout can
            // place later sets.
            let m = BloomParams::for_capacity(1, p)?.m();
            plans.push(PartPlan { min_size: 0, capacity: 1, m, sets: 0, bits: 0 });
        }
        let mut layout = Layout { p, k, parts: plans, optimum_bits: 0.0, mean_fpr: 0.0, max_fpr: 0.0 };
        let mut sum = 0.0;
        for &n in &sorted {
            layout.optimum_bits += n as f64 * (1.0 / p).log2() / core::f64::consts::LN_2;
            let part = &layout.parts[layout.part_for(n).unwrap_or(layout.parts.len() - 1)];
            let fpr = BloomParams::new(part.m, k)?.expected_fpr(n);
            sum += fpr;
            layout.max_fpr = layout.max_fpr.max(fpr);
        }
        layout.mean_fpr = if sorted.is_empty() { 0.0 } else { sum / sorted.len() as f64 };
        Ok(layout)
    }

    /// The target false-positive rate.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// The number of hash functions every part uses.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The parts, by ascending capacity.
    pub fn parts(&self) -> &[PartPlan] {
        &self.parts
    }

    /// The part a set of `size` keys goes to: the first whose capacity
    /// holds it, or `None` if it is larger than every part's.
    pub fn part_for(&self, size: u64) -> Option<usize> {
        self.parts.iter().position(|part| part.capacity >= size)
    }

    /// Memory of the layout by the cost model, in bits.
    pub fn bits(&self) -> u64 {
        self.parts.iter().map(|part| part.bits).sum()
    }

    /// [`Layout::bits`] in bytes (rounded up).
    pub fn bytes(&self) -> u64 {
        self.bits().div_ceil(8)
    }

    /// The per-set optimum: `n * log2(1/p) / ln 2` bits summed over the
    /// sets (each in a filter of its own, of exactly the bits it needs).
    pub fn optimum_bits(&self) -> f64 {
        self.optimum_bits
    }

    /// Row runs a query reads per key: `parts * k`.
    pub fn row_runs(&self) -> usize {
        self.parts.len() * self.k as usize
    }

    /// Cache lines of rows a query reads per key before early exit:
    /// `sum_j k * ceil(w_j / 512)`.
    pub fn query_lines(&self) -> u64 {
        self.parts.iter().map(|part| u64::from(self.k) * (part.sets as u64).div_ceil(LINE_COLUMNS)).sum()
    }

    /// Predicted false-positive rate averaged over the sets, each holding
    /// as many keys as its size in its part's filter
    /// ([`BloomParams::expected_fpr`]).
    pub fn mean_fpr(&self) -> f64 {
        self.mean_fpr
    }

    /// The largest predicted false-positive rate of a set.
    pub fn max_fpr(&self) -> f64 {
        self.max_fpr
    }
}

/// Layouts that were not chosen by [`Layout::choose`]: read back from a
/// collection file, or describing an index that already exists.
impl Layout {
    /// A layout as a collection file stores it: its parts and its
    /// [`Layout::stored_stats`].
    pub(crate) fn from_stored(p: f64, k: u32, parts: Vec<PartPlan>, stats: [f64; 3]) -> Layout {
        let [optimum_bits, mean_fpr, max_fpr] = stats;
        Layout { p, k, parts, optimum_bits, mean_fpr, max_fpr }
    }

    /// The statistics a collection file stores with the parts: optimum
    /// bits, mean and largest predicted false-positive rate.
    pub(crate) fn stored_stats(&self) -> [f64; 3] {
        [self.optimum_bits, self.mean_fpr, self.max_fpr]
    }

    /// A layout of the given parts (by ascending capacity) for sets of
    /// `sizes` keys, its statistics computed as [`Layout::choose`] does.
    ///
    /// # Errors
    ///
    /// The errors of [`BloomParams::new`] for a part's `m` and `k`.
    pub(crate) fn of_plans(p: f64, k: u32, parts: Vec<PartPlan>, sizes: &[u64]) -> Result<Layout> {
        let mut layout = Layout { p, k, parts, optimum_bits: 0.0, mean_fpr: 0.0, max_fpr: 0.0 };
        let mut sum = 0.0;
        for &n in sizes {
            let n = n.max(1);
            layout.optimum_bits += n as f64 * (1.0 / p).log2() / core::f64::consts::LN_2;
            let Some(part) = layout.parts.get(layout.part_for(n).unwrap_or(layout.parts.len().saturating_sub(1)))
            else {
                break;
            };
            let fpr = BloomParams::new(part.m, k)?.expected_fpr(n);
            sum += fpr;
            layout.max_fpr = layout.max_fpr.max(fpr);
        }
        layout.mean_fpr = if sizes.is_empty() { 0.0 } else { sum / sizes.len() as f64 };
        Ok(layout)
    }
}

impl core::fmt::Display for Layout {
    /// One line per part, then the totals.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, part) in self.parts.iter().enumerate() {
            writeln!(
                f,
                "part {i}: sizes {}..={}, {} sets, m = {}, {} bytes",
                part.min_size,
                part.capacity,
                part.sets,
                part.m,
                part.bits.div_ceil(8)
            )?;
        }
        write!(
            f,
            "{} parts, k = {}, {} bytes ({:.2}x the per-set optimum), {} row runs per key, \
             predicted false-positive rate {:.4} mean, {:.4} max",
            self.parts.len(),
            self.k,
            self.bytes(),
            self.bits() as f64 / self.optimum_bits.max(1.0),
            self.row_runs(),
            self.mean_fpr,
            self.max_fpr
        )
    }
}

/// `(value, count)` of a sorted slice.
fn distinct_counts(sorted: &[u64]) -> Vec<(u64, usize)> {
    let mut out: Vec<(u64, usize)> = Vec::new();
    for &v in sorted {
        match out.last_mut() {
            Some((last, c)) if *last == v => *c += 1,
            _ => out.push((v, 1)),
        }
    }
    out
}

/// `n` rounded up to its six leading binary digits.
fn round_up_six_digits(n: u64) -> u64 {
    let bits = 64 - n.leading_zeros();
    if bits <= 6 {
        return n;
    }
    let unit = 1u64 << (bits - 6);
    n.div_ceil(unit).saturating_mul(unit)
}

/// Least bits (a whole number of 64-bit words) with which a filter of `k`
/// hash functions holds `n` keys at [`BloomParams::expected_fpr`] at most
/// `rate`: the inverse of [`capacity_of`], so `capacity_of(bits_for(n)) >= n`.
/// From `k n (-ln(1 - 1/m)) <= -ln(1 - rate^(1/k))`:
/// `m >= 1 / (1 - exp(-x))`, `x = -ln(1 - rate^(1/k)) / (k n)`.
pub(crate) fn bits_for(n: u64, rate: f64, k: u32) -> Result<u64> {
    let n = n.max(1);
    let too_many = Error::TooManyBits { m: u64::MAX, max: crate::params::MAX_BITS };
    let per = -(1.0 - rate.powf(1.0 / f64::from(k))).ln();
    let x = per / (f64::from(k) * n as f64);
    let m = (1.0 / -(-x).exp_m1()).ceil();
    if !m.is_finite() || m > crate::params::MAX_BITS as f64 {
        return Err(too_many);
    }
    let mut m = (m as u64).max(1).div_ceil(64) * 64;
    // Floating-point rounding may leave the capacity one key short.
    while capacity_of(m, rate, k) < n {
        m += 64;
        if m > crate::params::MAX_BITS {
            return Err(too_many);
        }
    }
    Ok(m)
}

/// Bits of row storage of a part of `sets` filters of `m` bits: the
/// storage rule of [`SlicedIndex`](crate::SlicedIndex) shards at the
/// default widest shard ([`rows_bytes_for`](crate::sliced::rows_bytes_for)).
pub(crate) fn part_bits(m: u64, sets: u64) -> u64 {
    let max = crate::sliced::SlicedConfig::default().max_shard_columns;
    crate::sliced::rows_bytes_for(m, sets, max).map_or(u64::MAX, |b| b.saturating_mul(8))
}

/// Most keys a filter of `m` bits and `k` hash functions holds with
/// [`BloomParams::expected_fpr`] at most `rate`:
/// `floor(ln(1 - rate^(1/k)) / (k ln(1 - 1/m)))`.
pub(crate) fn capacity_of(m: u64, rate: f64, k: u32) -> u64 {
    let top = (1.0 - rate.powf(1.0 / f64::from(k))).ln();
    let per_key = f64::from(k) * (-1.0 / m as f64).ln_1p();
    (top / per_key).floor().max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Least priced cost over every split of the sorted sizes into at most
    /// `max_parts` runs, by enumeration.
    fn brute_force(sizes: &[u64], p: f64, config: LayoutConfig) -> f64 {
        let mut sorted: Vec<u64> = sizes.iter().map(|&n| n.max(1)).collect();
        sorted.sort_unstable();
        let values = distinct_counts(&sorted);
        let d = values.len();
        let mut best = f64::INFINITY;
        // Each subset of the d - 1 gaps between distinct sizes is a split.
        for mask in 0u32..(1 << (d - 1)) {
            let parts = mask.count_ones() as usize + 1;
            if parts > config.max_parts {
                continue;
            }
            let (mut bits, mut start, mut width) = (0u64, 0, 0u64);
            for (j, &(v, c)) in values.iter().enumerate() {
                width += c as u64;
                if j == d - 1 || mask & (1 << j) != 0 {
                    let m = BloomParams::for_capacity(v, p).unwrap().m();
                    bits += crate::sliced::rows_bytes_for(m, width, 16_384).unwrap() * 8;
                    start = j + 1;
                    width = 0;
                }
            }
            assert_eq!(start, d);
            let priced = bits as f64 * (1.0 + config.query_cost_weight).powi(parts as i32 - 1);
            best = best.min(priced);
        }
        best
    }

    fn priced(layout: &Layout, config: LayoutConfig) -> f64 {
        layout.bits() as f64 * (1.0 + config.query_cost_weight).powi(layout.parts().len() as i32 - 1)
    }

    proptest::proptest! {
        /// The dynamic program finds the cheapest split that enumeration
        /// finds, for every weight and part limit.
        #[test]
        fn dp_equals_brute_force(
            sizes in proptest::collection::vec(1u64..5_000, 1..12),
            max_parts in 1usize..6,
            weight in 0.0f64..0.5,
        ) {
            let config = LayoutConfig { max_parts, query_cost_weight: weight };
            let layout = Layout::choose(&sizes, 0.01, config).unwrap();
            let brute = brute_force(&sizes, 0.01, config);
            proptest::prop_assert!((priced(&layout, config) - brute).abs() <= 1e-9 * brute, "{} vs {brute}", priced(&layout, config));
            proptest::prop_assert_eq!(layout.parts().iter().map(|p| p.sets).sum::<usize>(), sizes.len());
            for &n in &sizes {
                let part = layout.part_for(n).unwrap();
                proptest::prop_assert!(layout.parts()[part].min_size <= n);
            }
        }
    }

    #[test]
    fn equal_sizes_make_one_part() {
        for n in [1u64, 18, 10_000] {
            let layout = Layout::choose(&vec![n; 500], 0.01, LayoutConfig::default()).unwrap();
            assert_eq!(layout.parts().len(), 1);
            assert_eq!(layout.parts()[0].sets, 500);
            assert_eq!(layout.parts()[0].m, BloomParams::for_capacity(n, 0.01).unwrap().m());
            assert!(layout.max_fpr() <= 0.01);
        }
    }

    /// All sets tiny: m is a word or two whatever the size, so one part.
    #[test]
    fn tiny_sets_make_one_part() {
        let sizes: Vec<u64> = (0..5_000).map(|i| 1 + i % 4).collect();
        let layout = Layout::choose(&sizes, 0.01, LayoutConfig::default()).unwrap();
        assert_eq!(layout.parts().len(), 1, "{layout}");
        assert_eq!(layout.parts()[0].m, 64);
        assert_eq!(layout.row_runs(), 7);
    }

    /// One huge set among thousands of tiny ones: two parts, the huge set
    /// alone, near the optimum; with a column step of 64 still two parts,
    /// the huge one costing 64 of its filters.
    #[test]
    fn one_huge_set_among_tiny_ones_gets_its_own_part() {
        let mut sizes = vec![5u64; 5_000];
        sizes.push(2_000_000);
        let layout = Layout::choose(&sizes, 0.01, LayoutConfig::default()).unwrap();
        assert_eq!(layout.parts().len(), 2, "{layout}");
        assert_eq!((layout.parts()[0].sets, layout.parts()[1].sets), (5_000, 1));
        assert!((layout.bits() as f64) < 1.2 * layout.optimum_bits(), "{layout}");
        // The huge set's part is one column: its filter, to a cache line.
        let huge = layout.parts()[1];
        assert_eq!(huge.bits, huge.m.next_multiple_of(512));
    }

    #[test]
    fn empty_sizes_give_one_empty_part() {
        let layout = Layout::choose(&[], 0.01, LayoutConfig::default()).unwrap();
        assert_eq!(layout.parts().len(), 1);
        assert_eq!(layout.bits(), 0);
        assert_eq!(layout.part_for(1), Some(0));
    }

    /// Many distinct sizes are rounded up before the program runs; every
    /// set still fits its part.
    #[test]
    fn many_distinct_sizes_are_bucketed() {
        let sizes: Vec<u64> = (1..=20_000u64).map(|i| i * 7).collect();
        let layout = Layout::choose(&sizes, 0.01, LayoutConfig::default()).unwrap();
        assert_eq!(layout.parts().iter().map(|p| p.sets).sum::<usize>(), sizes.len());
        assert_eq!(layout.part_for(140_000), Some(layout.parts().len() - 1));
        assert!(layout.max_fpr() <= 0.0101, "{layout}");
        assert_eq!(round_up_six_digits(63), 63);
        assert_eq!(round_up_six_digits(129), 132);
    }

    /// A heavy-tailed collection shaped like the Debian package file lists:
    /// 730 sets, median 18, 90th percentile 200, 99th 1 574, largest 50 576.
    pub(crate) fn package_list_sizes() -> Vec<u64> {
        // Log-linear interpolation between the quantiles.
        let anchors: [(f64, f64); 5] = [(0.0, 1.0), (0.5, 18.0), (0.9, 200.0), (0.99, 1_574.0), (1.0, 50_576.0)];
        (0..730)
            .map(|i| {
                let q = i as f64 / 729.0;
                let seg = anchors.windows(2).find(|w| q <= w[1].0).unwrap();
                let ((q0, a), (q1, b)) = (seg[0], seg[1]);
                let t = (q - q0) / (q1 - q0);
                (a.ln() + t * (b.ln() - a.ln())).exp().round() as u64
            })
            .collect()
    }

    #[test]
    fn package_list_shape_is_within_1_6x_of_the_optimum() {
        let sizes = package_list_sizes();
        let mut sorted = sizes.clone();
        sorted.sort_unstable();
        assert_eq!((sorted[365], sorted[729]), (18, 50_576));
        let layout = Layout::choose(&sizes, 0.01, LayoutConfig::default()).unwrap();
        let ratio = layout.bits() as f64 / layout.optimum_bits();
        assert!(ratio <= 1.6, "{ratio}: {layout}");
        assert!(layout.parts().len() <= 8);
        assert!(layout.max_fpr() <= 0.01 && layout.mean_fpr() < 0.01, "{layout}");
        // The weight trades memory for row runs.
        let cheap =
            Layout::choose(&sizes, 0.01, LayoutConfig { query_cost_weight: 0.0, ..LayoutConfig::default() }).unwrap();
        let fewer =
            Layout::choose(&sizes, 0.01, LayoutConfig { query_cost_weight: 0.2, ..LayoutConfig::default() }).unwrap();
        assert!(cheap.bits() <= layout.bits() && layout.bits() <= fewer.bits());
        assert!(cheap.row_runs() >= layout.row_runs() && layout.row_runs() >= fewer.row_runs());
        let one = Layout::choose(&sizes, 0.01, LayoutConfig { max_parts: 1, ..LayoutConfig::default() }).unwrap();
        assert!(one.bits() as f64 > 100.0 * layout.bits() as f64);
    }

    /// Builds a collection of sets of the given sizes (distinct `u64` keys)
    /// with `config` at 1%; returns its layout and the bytes of rows its
    /// parts hold, and checks that those are the layout's bits and that
    /// every set answers its keys.
    fn built(sizes: &[u64], config: LayoutConfig) -> (Layout, u64, usize) {
        let mut next = 0u64;
        let sets: Vec<(u64, Vec<u64>)> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let keys: Vec<u64> = (next..next + n).collect();
                next += n;
                (i as u64, keys)
            })
            .collect();
        let sets: Vec<(u64, Vec<[u8; 8]>)> =
            sets.iter().map(|(id, keys)| (*id, keys.iter().map(|k| k.to_le_bytes()).collect())).collect();
        let collection = crate::collection::SetIndex::build(&sets, 0.01, config).unwrap();
        let rows: u64 = collection.parts().map(|ix| ix.rows_bytes() as u64).sum();
        let layout = collection.layout().clone();
        assert_eq!(rows * 8, layout.bits(), "{layout}");
        for (id, keys) in sets.iter().step_by(97) {
            assert!(collection.query(&keys[0]).contains(id));
        }
        (layout, rows, collection.memory_bytes())
    }

    /// The memory model is the parts' real storage, on the package-list
    /// shape and at the extremes, and the figures of the module
    /// documentation's tables.
    #[test]
    fn model_matches_built_collections() {
        let report = |name: &str, sizes: &[u64], config: LayoutConfig| {
            let (layout, rows, memory) = built(sizes, config);
            let optimum = layout.optimum_bits() / 8.0;
            eprintln!(
                "{name}: {} parts, {} runs, rows {rows} B ({:.2}x optimum {optimum:.0} B), memory_bytes {memory} ({:.2}x)",
                layout.parts().len(),
                layout.row_runs(),
                rows as f64 / optimum,
                memory as f64 / optimum
            );
            (layout, rows as f64 / optimum)
        };
        let sizes = package_list_sizes();
        let (_, ratio) = report("package lists, default", &sizes, LayoutConfig::default());
        assert!(ratio <= 1.6, "{ratio}");
        report("package lists, weight 0.1", &sizes, LayoutConfig { query_cost_weight: 0.1, ..LayoutConfig::default() });
        report("package lists, weight 0.2", &sizes, LayoutConfig { query_cost_weight: 0.2, ..LayoutConfig::default() });
        report("package lists, weight 0", &sizes, LayoutConfig { query_cost_weight: 0.0, ..LayoutConfig::default() });
        report("package lists, one part", &sizes, LayoutConfig { max_parts: 1, ..LayoutConfig::default() });
        let mut huge = vec![5u64; 5_000];
        huge.push(2_000_000);
        let (layout, ratio) = report("one huge among 5000 of 5", &huge, LayoutConfig::default());
        assert_eq!(layout.parts().len(), 2);
        assert!(ratio < 1.3, "{ratio}");
        let tiny: Vec<u64> = (0..5_000).map(|i| 1 + i % 4).collect();
        let (layout, _) = report("5000 tiny (1..=4)", &tiny, LayoutConfig::default());
        assert_eq!(layout.parts().len(), 1);
        report("2 sets of 10", &[10, 10], LayoutConfig::default());
        report("100 sets of 1000", &[1000; 100], LayoutConfig::default());
    }

    #[test]
    fn capacity_and_bits_agree() {
        let mut cases = vec![(100u64, 0.01, 7u32), (10_000, 0.005, 7), (1, 0.001, 10), (8750, 0.025, 5)];
        for n in (1..20_000u64).step_by(97).chain([4375 * 2, 1 << 20, 3 << 24]) {
            for (rate, k) in [(0.2, 3), (0.05, 5), (0.025, 5), (0.01, 7), (0.0025, 9)] {
                cases.push((n, rate, k));
            }
        }
        for (n, rate, k) in cases {
            let m = bits_for(n, rate, k).unwrap();
            let cap = capacity_of(m, rate, k);
            assert!(cap >= n, "{n} {rate} {k}: {cap}");
            // Least: 64 bits fewer would not hold n.
            assert!(m == 64 || capacity_of(m - 64, rate, k) < n, "{n} {rate} {k}: {m} not least");
            assert!(BloomParams::new(m, k).unwrap().expected_fpr(cap) <= rate * (1.0 + 1e-9));
        }
    }
}

//! The synthetic streams of Section IV-D and the metrics of Section IV-B
//! (the quantities of Table I and of Figures 11 to 19) of the importance-aware
//! Bloom filter paper, over the filters of [`bloomslice_papers::stable`].
//!
//! # Streams
//!
//! A stream has `distinct` elements, each with an importance drawn uniformly
//! from `1..=max_importance` (the paper: 1..=50). A fraction
//! `repeat_fraction` of the stream's items are repeats (the paper: 10, 30 and
//! 50 % "of the elements repeating"): every element occurs once, and
//! `distinct * r / (1 - r)` further occurrences are drawn with probability
//! per element that is equal ([`Distribution::Uniform`], Fig. 11),
//! proportional to importance ([`Distribution::Proportional`], Fig. 17) or
//! inversely proportional to it ([`Distribution::Inverse`], Fig. 14). The
//! occurrences are then shuffled (the paper averages over permutations). The
//! paper does not give the stream length; it is `distinct / (1 - r)` here.
//!
//! # Metrics
//!
//! The truth is exact: an item is a duplicate iff its element occurred
//! before in the stream.
//!
//! * FP rate: distinct (first) occurrences reported as duplicates / first
//!   occurrences. FN rate: repeats reported as distinct / repeats.
//! * Weighted FP and FN: the paper defines `wFP = sum imp_k [Q_k is a FP]`
//!   but prints percentages in Table I, so both are normalised here by the
//!   total importance of the queries that could err:
//!   `wFP = sum imp [FP] / sum imp over first occurrences`, and likewise wFN
//!   over repeats.
//! * Importance rate arrays `I_fp[i]` and `I_fn[i]`: the same rates among
//!   items of importance `i` ([`Metrics::fp_by_importance`]).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use bloomslice_papers::{Policy, StableBloomFilter, StableError, StableParams};

/// Why a synthetic stream or an experiment run is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// A synthetic stream needs at least one distinct element.
    #[error("a synthetic stream needs at least one distinct element")]
    EmptyStream,
    /// A probability (such as a stream's repeat fraction) that is not a
    /// finite number in the allowed interval.
    #[error("probability {value} for {what} is outside {allowed}")]
    InvalidProbability {
        /// What the probability describes.
        what: &'static str,
        /// The offered value.
        value: f64,
        /// The allowed interval, for the message.
        allowed: &'static str,
    },
    /// An error of the filters (parameters, importance out of range).
    #[error(transparent)]
    Engine(#[from] StableError),
}

/// How often an element repeats, relative to its importance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// Every element is equally likely to repeat (Fig. 11, synthetic data 1).
    Uniform,
    /// Repeat probability proportional to importance (Fig. 17, data 2).
    Proportional,
    /// Repeat probability inversely proportional to importance (Fig. 14,
    /// data 3).
    Inverse,
}

impl Distribution {
    /// The three distributions in the paper's order (data 1, 2, 3).
    pub const ALL: [Distribution; 3] = [Distribution::Uniform, Distribution::Proportional, Distribution::Inverse];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Proportional => "proportional",
            Distribution::Inverse => "inverse",
        }
    }

    fn weight(self, importance: u32) -> f64 {
        match self {
            Distribution::Uniform => 1.0,
            Distribution::Proportional => f64::from(importance),
            Distribution::Inverse => 1.0 / f64::from(importance),
        }
    }
}

/// One synthetic stream's recipe.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamConfig {
    /// Number of distinct elements (>= 1).
    pub distinct: usize,
    /// Fraction of the stream's items that are repeats, in `[0, 1)`.
    pub repeat_fraction: f64,
    /// Which elements repeat.
    pub distribution: Distribution,
    /// Importances are uniform in `1..=max_importance` (>= 1).
    pub max_importance: u32,
    /// Seed of the stream generator.
    pub seed: u64,
}

/// One stream item: an element id (the key is its little-endian bytes) and
/// its importance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamItem {
    /// The element id, `0..distinct`.
    pub element: u32,
    /// The element's importance.
    pub importance: u32,
}

/// Generates the stream described by `config` (see the module documentation).
pub fn synthetic_stream(config: &StreamConfig) -> Result<Vec<StreamItem>, StreamError> {
    if config.distinct == 0 || config.distinct > u32::MAX as usize {
        return Err(StreamError::EmptyStream);
    }
    if config.max_importance == 0 {
        return Err(StableError::ZeroMaxImportance.into());
    }
    let r = config.repeat_fraction;
    if !(0.0..1.0).contains(&r) {
        return Err(StreamError::InvalidProbability { what: "repeat fraction", value: r, allowed: "[0, 1)" });
    }
    let mut rng = SmallRng::seed_from_u64(config.seed);
    let importance: Vec<u32> = (0..config.distinct).map(|_| rng.random_range(1..=config.max_importance)).collect();
    let mut stream: Vec<StreamItem> = importance
        .iter()
        .enumerate()
        .map(|(element, &importance)| StreamItem { element: element as u32, importance })
        .collect();
    let repeats = (config.distinct as f64 * r / (1.0 - r)).round() as usize;
    // Cumulative weights for sampling repeats by inverse transform.
    let mut cumulative = Vec::with_capacity(config.distinct);
    let mut total = 0.0;
    for &imp in &importance {
        total += config.distribution.weight(imp);
        cumulative.push(total);
    }
    for _ in 0..repeats {
        let target = rng.random::<f64>() * total;
        let element = cumulative.partition_point(|&c| c <= target).min(config.distinct - 1);
        stream.push(StreamItem { element: element as u32, importance: importance[element] });
    }
    // Fisher-Yates shuffle.
    for i in (1..stream.len()).rev() {
        let j = rng.random_range(0..=i);
        stream.swap(i, j);
    }
    Ok(stream)
}

/// Error counts of one filter on one stream, overall and per importance.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    /// The filter's policy.
    pub policy: Policy,
    /// Queries (their rates: the FP and FN rates).
    pub count: Tally,
    /// Total importance of the queries (their rates: the weighted ones).
    pub importance: Tally,
    /// Per importance `i` (index `i - 1`): queries.
    pub by_importance: Vec<Tally>,
    /// Fraction of zero cells at the end of the stream.
    pub final_zero_fraction: f64,
}

/// The queries of a stream (or their total importance) by what they were
/// and how the filter answered them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// First occurrences (queries that can be false positives).
    pub distinct: u64,
    /// Repeats (queries that can be false negatives).
    pub repeats: u64,
    /// First occurrences reported as duplicates.
    pub false_positives: u64,
    /// Repeats reported as distinct.
    pub false_negatives: u64,
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 { 0.0 } else { num as f64 / den as f64 }
}

impl Tally {
    /// FP rate (0 when there were no first occurrences).
    pub fn fp_rate(&self) -> f64 {
        ratio(self.false_positives, self.distinct)
    }

    /// FN rate (0 when there were no repeats).
    pub fn fn_rate(&self) -> f64 {
        ratio(self.false_negatives, self.repeats)
    }

    /// Adds `n` to the repeats (`repeat`) or the first occurrences, and to
    /// their errors too when the filter answered `wrong`.
    fn add(&mut self, n: u64, repeat: bool, wrong: bool) {
        let (all, errors) = if repeat {
            (&mut self.repeats, &mut self.false_negatives)
        } else {
            (&mut self.distinct, &mut self.false_positives)
        };
        *all += n;
        if wrong {
            *errors += n;
        }
    }
}

impl Metrics {
    /// `I_fp`: the FP rate among items of importance `i` at index `i - 1`
    /// (0 where there were none).
    pub fn fp_by_importance(&self) -> Vec<f64> {
        self.by_importance.iter().map(Tally::fp_rate).collect()
    }

    /// `I_fn`: the FN rate among items of importance `i` at index `i - 1`.
    pub fn fn_by_importance(&self) -> Vec<f64> {
        self.by_importance.iter().map(Tally::fn_rate).collect()
    }

    /// FP and FN rates over the items whose importance lies in `range`
    /// (pooled counts, not an average of rates).
    pub fn rates_in(&self, range: core::ops::RangeInclusive<u32>) -> (f64, f64) {
        let levels = || range.clone().filter_map(|i| self.by_importance.get(i.checked_sub(1)? as usize));
        let sum = |f: fn(&Tally) -> u64| -> u64 { levels().map(f).sum() };
        (ratio(sum(|t| t.false_positives), sum(|t| t.distinct)), ratio(sum(|t| t.false_negatives), sum(|t| t.repeats)))
    }
}

/// Runs one filter over `stream` and measures it against the exact truth.
///
/// Errors when an item's importance is outside the parameters' range.
pub fn measure(
    params: &StableParams,
    policy: Policy,
    seed: u64,
    stream: &[StreamItem],
) -> Result<Metrics, StreamError> {
    let mut filter = StableBloomFilter::new(*params, policy, seed);
    let levels = params.max_importance() as usize;
    let elements = stream.iter().map(|s| s.element as usize + 1).max().unwrap_or(0);
    let mut seen = vec![false; elements];
    let mut metrics = Metrics {
        policy,
        count: Tally::default(),
        importance: Tally::default(),
        by_importance: vec![Tally::default(); levels],
        final_zero_fraction: 0.0,
    };
    for item in stream {
        let reported = filter.observe(&item.element.to_le_bytes(), item.importance)?;
        let level = item.importance as usize - 1;
        let imp = u64::from(item.importance);
        let truth = core::mem::replace(&mut seen[item.element as usize], true);
        let wrong = reported != truth;
        metrics.count.add(1, truth, wrong);
        metrics.importance.add(imp, truth, wrong);
        metrics.by_importance[level].add(1, truth, wrong);
    }
    metrics.final_zero_fraction = filter.zero_fraction();
    Ok(metrics)
}

/// The result of every policy on one synthetic stream: one block of a Table
/// I-style table.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamResult {
    /// The stream's recipe.
    pub config: StreamConfig,
    /// Metrics per policy, in [`Policy::ALL`] order.
    pub metrics: Vec<Metrics>,
}

/// Runs every policy of [`Policy::ALL`] on the stream of `config` with
/// filter `params` (whose importance range must cover the stream's) and
/// decrement seed `seed`.
pub fn run(params: &StableParams, config: &StreamConfig, seed: u64) -> Result<StreamResult, StreamError> {
    if config.max_importance > params.max_importance() {
        return Err(StableError::ImportanceOutOfRange {
            importance: config.max_importance,
            max: params.max_importance(),
        }
        .into());
    }
    let stream = synthetic_stream(config)?;
    let metrics =
        Policy::ALL.iter().map(|&policy| measure(params, policy, seed, &stream)).collect::<Result<Vec<_>, _>>()?;
    Ok(StreamResult { config: *config, metrics })
}

/// The paper's full grid (Section IV-D): the three distributions times
/// repeat fractions 10, 30 and 50 %, importance 1..=50, with
/// [`StableParams::paper`] filters and `distinct` elements per stream.
pub fn paper_grid(distinct: usize, seed: u64) -> Result<Vec<StreamResult>, StreamError> {
    let params = StableParams::paper();
    let mut results = Vec::new();
    for distribution in Distribution::ALL {
        for repeat_fraction in [0.1, 0.3, 0.5] {
            let config = StreamConfig { distinct, repeat_fraction, distribution, max_importance: 50, seed };
            results.push(run(&params, &config, seed ^ 0x5ab1e)?);
        }
    }
    Ok(results)
}

/// Formats results as a Table I-style text table (percentages), with the FP
/// and FN rates of the top fifth of the importance range beside the totals.
pub fn format_table(results: &[StreamResult]) -> String {
    use core::fmt::Write;
    let mut out = String::new();
    for result in results {
        let c = &result.config;
        let top = (c.max_importance * 4 / 5 + 1)..=c.max_importance;
        let _ = writeln!(
            out,
            "{} repeats {:.0}% ({} distinct): top importance {}..={}",
            c.distribution.name(),
            c.repeat_fraction * 100.0,
            c.distinct,
            top.start(),
            top.end()
        );
        let _ = writeln!(
            out,
            "  {:<7} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7} {:>6}",
            "algo", "FP", "FN", "wFP", "wFN", "FP-top", "FN-top", "zeros"
        );
        for m in &result.metrics {
            let (fp_top, fn_top) = m.rates_in(top.clone());
            let _ = writeln!(
                out,
                "  {:<7} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>7.2} {:>7.2} {:>6.3}",
                m.policy.name(),
                100.0 * m.count.fp_rate(),
                100.0 * m.count.fn_rate(),
                100.0 * m.importance.fp_rate(),
                100.0 * m.importance.fn_rate(),
                100.0 * fp_top,
                100.0 * fn_top,
                m.final_zero_fraction
            );
        }
    }
    out
}

//! The paper's formulas: the false-match probability of one filter and of a
//! dynamic filter (eqs. (1), (3) and (12)), and the Section 4.2 memory-optimal
//! design.

use super::DynamicError;
use super::Result;
use bloomslice::params::MAX_HASHES;

/// The constant of the paper's optimal sizing `m = n log(f) / log(0.6185)`
/// (`0.6185 ~ (1/2)^(ln 2)`), as Section 4.2 prints it.
pub const OPTIMAL_BASE: f64 = 0.6185;

/// Eq. (1) of the paper: false-match probability of one filter of `m` bits
/// and `k` hashes holding `n` items, `(1 - e^(-k n / m))^k`.
pub fn standard_false_positive_rate(m: u64, k: u32, n: u64) -> f64 {
    if m == 0 {
        return 1.0;
    }
    (1.0 - (-(f64::from(k)) * n as f64 / m as f64).exp()).powi(k as i32)
}

/// Eq. (3): false-match probability of a DBF of members with `m` bits, `k`
/// hashes and capacity `c` holding `n` items:
/// `1 - (1 - f(c))^floor(n/c) * (1 - f(n - c floor(n/c)))` with `f` of
/// eq. (1). For `n <= c` it is eq. (1); for `n` a multiple of `c` it is
/// eq. (12), `1 - (1 - (1 - e^(-k c / m))^k)^(n/c)`.
pub fn false_positive_rate(m: u64, k: u32, c: u64, n: u64) -> f64 {
    if c == 0 {
        return 1.0;
    }
    let full = n / c;
    let last = n - c * full;
    let keep = (1.0 - standard_false_positive_rate(m, k, c)).powf(full as f64)
        * (1.0 - standard_false_positive_rate(m, k, last));
    1.0 - keep
}

/// The result of the Section 4.2 optimisation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DynamicDesign {
    /// Number of member filters `s`.
    pub filters: usize,
    /// Capacity `c = ceil(N / s)` of each member.
    pub capacity: u64,
    /// Per-member false-match bound `f = 1 - (1 - F)^(1/s)`.
    pub member_fpr: f64,
    /// Bits per member, `ceil(c log f / log 0.6185)`.
    pub m: u64,
    /// Hash functions, `ceil((m / c) ln 2)`.
    pub k: u32,
    /// The minimised objective `sum_i r_i (N/s) log f / log 0.6185`: the
    /// expected number of bits the DBF uses.
    pub expected_bits: f64,
}

/// Section 4.2: the memory-optimal number of members `s` for a set whose
/// cardinality `i` has probability `pmf[i - 1]` (`i = 1..=N`, `N =
/// pmf.len()`), under an overall false-match bound `bound` (the paper's
/// `F`). Minimises `sum_{i=1..s} r_i (N/s) log(f) / log(0.6185)` with
/// `f = 1 - (1 - F)^(1/s)`, `r_1 = 1`, `r_i = sum_{j = c(i-1)+1..N} p_j`
/// over `s = 1..=max_s`.
///
/// # Errors
///
/// [`DynamicError::InvalidDesign`] for an empty or negative pmf, a bound
/// outside (0, 1), or `max_s == 0`.
pub fn optimal_design(pmf: &[f64], bound: f64, max_s: usize) -> Result<DynamicDesign> {
    let n = pmf.len();
    if n == 0 {
        return Err(DynamicError::InvalidDesign("empty cardinality distribution"));
    }
    if pmf.iter().any(|p| !p.is_finite() || *p < 0.0) || pmf.iter().sum::<f64>() <= 0.0 {
        return Err(DynamicError::InvalidDesign("probabilities must be finite, non-negative, not all zero"));
    }
    if !(bound > 0.0 && bound < 1.0) {
        return Err(DynamicError::InvalidDesign("false-match bound outside (0, 1)"));
    }
    if max_s == 0 {
        return Err(DynamicError::InvalidDesign("max_s must be at least 1"));
    }
    let total: f64 = pmf.iter().sum();
    // tail[j] = P(cardinality >= j + 1) (normalised), tail[n] = 0.
    let mut tail = vec![0.0; n + 1];
    for j in (0..n).rev() {
        tail[j] = tail[j + 1] + pmf[j] / total;
    }
    let mut best: Option<DynamicDesign> = None;
    for s in 1..=max_s.min(n) {
        let c = n.div_ceil(s);
        let f = 1.0 - (1.0 - bound).powf(1.0 / s as f64);
        let per_item = f.ln() / OPTIMAL_BASE.ln();
        let r_sum: f64 = 1.0 + (2..=s).map(|i| tail[(c * (i - 1)).min(n)]).sum::<f64>();
        let bits = r_sum * (n as f64 / s as f64) * per_item;
        if best.is_none_or(|b| bits < b.expected_bits) {
            let m = (c as f64 * per_item).ceil().max(1.0) as u64;
            let k = ((m as f64 / c as f64) * core::f64::consts::LN_2).ceil().clamp(1.0, f64::from(MAX_HASHES)) as u32;
            best = Some(DynamicDesign { filters: s, capacity: c as u64, member_fpr: f, m, k, expected_bits: bits });
        }
    }
    best.ok_or(DynamicError::InvalidDesign("no design"))
}

//! The stable state of Section III: the Markov chain of one cell, its
//! limiting zero probability V0 and the false-positive bound
//! `FPS = (1 - V0)^K` (Corollaries III.4 and III.8).
//!
//! # The chain
//!
//! As in the paper, one iteration (one stream item) is one time step, items
//! and importances are uniform, and a cell is decremented with probability
//! `p = P / m` and set with probability `k = K / m` (Theorem III.3 prints
//! `P / M` and `K / M`, a typo: those exceed 1 at the paper's own
//! parameters). A set draws its value `s` from the policy's insert values
//! over uniform importance ([`set_value_distribution`]).
//!
//! The transition is the algorithm's order of operations: from state `i`,
//! decrement (`i - 1`, floored at 0) with probability `p`, then, with
//! probability `k`, go to `max(i', s)`. For SBF this is exactly the chain of
//! [Deng and Rafiei] whose closed form is [`sbf_zero_fraction_closed_form`];
//! for IBF-2C and IBF-MC it is the chain of Figures 1 and 3 except for the
//! O(p k) event "decremented and set to a lower value in the same step",
//! which the figures drop. The stationary distribution is found exactly by
//! Gaussian elimination on the (M + 1)-state chain, instead of the paper's
//! hand-derived recurrences (Figures 2 and 4), whose printed forms contain
//! typos (e.g. `A_2 = var_1 + U_2`).
//!
//! IBF-H's decrement probability depends on the whole filter: a cell of value
//! `v > 0` is chosen with probability `(1/v) / (m Z)` with
//! `Z = sum_{u >= 1} V_u / u`. The paper gives no analysis; here it is a
//! mean-field fixed point (solve the chain, recompute Z, repeat).
//!
//! The plain BF has no stable state: its zero fraction tends to 0 and the
//! bound is 1.
//!
//! [Deng and Rafiei]: https://doi.org/10.1145/1142473.1142477

use super::{Policy, StableParams};

/// The probability of each insert value `s` in `0..=M` (index = value) when
/// importance is uniform over `1..=max_importance`.
pub fn set_value_distribution(params: &StableParams, policy: Policy) -> Vec<f64> {
    let max = usize::from(params.max_value());
    let mut distribution = vec![0.0; max + 1];
    let n = params.max_importance();
    for importance in 1..=n {
        distribution[usize::from(policy.insert_value(params, importance))] += 1.0 / f64::from(n);
    }
    distribution
}

/// The limiting distribution `V_0..=V_M` of one cell's value (see the module
/// documentation). Solved in `f64`: probabilities below about 1e-15 (e.g. V0
/// for very large M) are only accurate to that absolute level. For [`Policy::Bf`] it is the point mass on 1 (the filter
/// fills up).
pub fn stationary_distribution(params: &StableParams, policy: Policy) -> Vec<f64> {
    let max = usize::from(params.max_value());
    let m = params.cells() as f64;
    let k = f64::from(params.hashes()) / m;
    let p = f64::from(params.decrements()) / m;
    let set = set_value_distribution(params, policy);
    match policy {
        Policy::Bf => {
            let mut v = vec![0.0; max + 1];
            v[1] = 1.0;
            v
        }
        Policy::Sbf | Policy::Ibf2c | Policy::IbfMc => solve_chain(&vec![p; max + 1], k, &set),
        Policy::IbfH => {
            // Mean-field fixed point on the per-value decrement probability.
            let mut v = solve_chain(&vec![p; max + 1], k, &set);
            for _ in 0..500 {
                let z: f64 = (1..=max).map(|u| v[u] / u as f64).sum();
                let per_value: Vec<f64> =
                    (0..=max).map(|u| if u == 0 || z <= 0.0 { 0.0 } else { (p / (z * u as f64)).min(1.0) }).collect();
                let next = solve_chain(&per_value, k, &set);
                let change: f64 = next.iter().zip(&v).map(|(a, b)| (a - b).abs()).sum();
                v = next;
                if change < 1e-13 {
                    break;
                }
            }
            v
        }
    }
}

/// The expected stable fraction of zero cells V0 (Theorems III.3 and III.7).
pub fn stable_zero_fraction(params: &StableParams, policy: Policy) -> f64 {
    stationary_distribution(params, policy)[0]
}

/// The stable false-positive bound `FPS = (1 - V0)^K` (Corollaries III.4 and
/// III.8).
pub fn false_positive_bound(params: &StableParams, policy: Policy) -> f64 {
    (1.0 - stable_zero_fraction(params, policy)).powi(params.hashes() as i32)
}

/// Deng and Rafiei's closed form of SBF's V0,
/// `(1 / (1 + 1 / (P (1/K - 1/m))))^M`, which is `(p' / (p' + k))^M` with
/// `p' = p (1 - k)` in the notation of Section III.
pub fn sbf_zero_fraction_closed_form(params: &StableParams) -> f64 {
    let m = params.cells() as f64;
    let k = f64::from(params.hashes());
    let p = f64::from(params.decrements());
    (1.0 / (1.0 + 1.0 / (p * (1.0 / k - 1.0 / m)))).powi(i32::from(params.max_value()))
}

/// Solves the stationary distribution of the one-cell chain where a cell of
/// value `i` is decremented with probability `decrement[i]`, then set with
/// probability `k` to `max(value, s)` with `s ~ set`.
fn solve_chain(decrement: &[f64], k: f64, set: &[f64]) -> Vec<f64> {
    let n = set.len();
    // transition[i][j]: probability of going from i to j.
    let mut transition = vec![vec![0.0; n]; n];
    for (i, row) in transition.iter_mut().enumerate() {
        let d = decrement[i];
        for (after, weight) in [(i.saturating_sub(1), d), (i, 1.0 - d)] {
            row[after] += weight * (1.0 - k);
            for (s, &q) in set.iter().enumerate() {
                row[after.max(s)] += weight * k * q;
            }
        }
    }
    // Solve V (T - I) = 0 with sum V = 1: rows of the system are columns of
    // T - I, the last equation replaced by the normalisation.
    let mut a: Vec<Vec<f64>> = (0..n)
        .map(|j| {
            let mut eq: Vec<f64> = (0..n).map(|i| transition[i][j] - if i == j { 1.0 } else { 0.0 }).collect();
            eq.push(0.0);
            eq
        })
        .collect();
    a[n - 1] = vec![1.0; n + 1];
    gaussian_solve(a)
}

/// Solves the augmented system `a` (n rows of n + 1) by Gaussian elimination
/// with partial pivoting.
fn gaussian_solve(mut a: Vec<Vec<f64>>) -> Vec<f64> {
    let n = a.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs())).unwrap_or(col);
        a.swap(col, pivot);
        let lead = a[col][col];
        if lead == 0.0 {
            continue;
        }
        let pivot_row = a[col].clone();
        for (row, equation) in a.iter_mut().enumerate() {
            let factor = equation[col] / lead;
            if row != col && factor != 0.0 {
                for (x, p) in equation[col..].iter_mut().zip(&pivot_row[col..]) {
                    *x -= factor * p;
                }
            }
        }
    }
    (0..n).map(|i| if a[i][i] == 0.0 { 0.0 } else { (a[i][n] / a[i][i]).max(0.0) }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbf_chain_matches_closed_form() {
        for (m, k, p, max) in [(16_384, 5, 10, 7), (1000, 3, 7, 1), (5000, 4, 2, 15), (200, 2, 3, 255)] {
            let params = StableParams::new(m, k, p, max).unwrap();
            let chain = stable_zero_fraction(&params, Policy::Sbf);
            let closed = sbf_zero_fraction_closed_form(&params);
            assert!((chain - closed).abs() < 1e-12 + 1e-9 * closed, "{m} {k} {p} {max}: {chain} vs {closed}");
        }
    }

    #[test]
    fn distributions_sum_to_one_and_order_policies() {
        let params = StableParams::paper();
        let mut v0 = Vec::new();
        for policy in [Policy::Sbf, Policy::Ibf2c, Policy::IbfMc, Policy::IbfH] {
            let v = stationary_distribution(&params, policy);
            assert!((v.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            assert!(v.iter().all(|&x| x >= 0.0));
            v0.push(v[0]);
        }
        // Lower insert values leave more zeros: SBF < 2C < MC.
        assert!(v0[0] < v0[1] && v0[1] < v0[2], "{v0:?}");
        assert_eq!(false_positive_bound(&params, Policy::Bf), 1.0);
    }
}

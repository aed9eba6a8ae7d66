//! The per-key hash-count optimisers of the paper: the real-number solution
//! (eq. 14) and its rounding baseline, the optimal+ bound (eq. 15), the
//! `(2 + eps)`-approximate dynamic program of Section 4.4 (eq. 23 to 26),
//! and the "limited optimization" of Section 6.
//!
//! All functions take the membership popularity `p` and the non-member
//! query popularity `q'` as two slices over the same key universe (index
//! `i` is key `x_i`); they need not be normalised (they are scaled to sum 1).

use super::PopularityError;
use super::Result;

/// Hard cap on the dynamic program's working memory, in bytes: 768 MiB.
/// Larger problems are refused with [`PopularityError::ProblemTooLarge`]
/// (before anything is allocated); use [`limited_integer_solution`] or a
/// larger `eps`. See [`dp_memory_plan`] for how the memory is computed.
pub const MAX_DP_MEMORY_BYTES: u64 = 768 << 20;

/// Problems whose full decision table (one bit per stage, key and value)
/// fits in this many bytes are solved in one forward pass keeping the whole
/// table (no checkpoints, no recomputation): 64 MiB.
pub const FULL_TABLE_BYTES: u64 = 64 << 20;

/// How the dynamic program of [`integer_solution`] lays out its memory for
/// `N` keys (see [`dp_memory_plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpPlan {
    /// Stages `k_max - 1`.
    pub stages: u64,
    /// Value units `W = floor((k_max - 1) 2^k_max / eps) + 1`.
    pub width: u64,
    /// Keys (table rows `j = 0..=N`, so `N + 1` rows) per walk-back block.
    pub block: u64,
    /// Saved `size` checkpoints (one per block but the last).
    pub checkpoints: u64,
    /// Total bytes: the live `size` rows, the checkpoints and one block of
    /// decision bits.
    pub bytes: u64,
}

/// The memory plan of the dynamic program for `n` keys, `k_max`, `eps`,
/// with the block size chosen automatically (`None`), or forced (for
/// tests). See the "Memory" paragraph of [`integer_solution`].
pub fn dp_memory_plan(n: usize, k_max: u32, eps: f64, block: Option<usize>) -> DpPlan {
    let stages = u64::from(k_max.saturating_sub(1)).max(1);
    // Same arithmetic as the solver: W = floor((Q/2) / u) + 1.
    let u = eps / 2.0 / stages as f64 * 0.5f64.powi(k_max as i32);
    let width = ((0.5 / u).floor()).min(1e18) as u64 + 1;
    plan_for(n as u64 + 1, stages, width, block.map(|b| b as u64))
}

fn plan_for(rows: u64, stages: u64, width: u64, block: Option<u64>) -> DpPlan {
    let row_bytes = stages.saturating_mul(width.div_ceil(64)).saturating_mul(8); // decision bits of one j
    let size_bytes = (stages + 1).saturating_mul(width).saturating_mul(8); // one `size` array
    let checkpoint_bytes = stages.saturating_mul(width).saturating_mul(8); // rows 1..=stages
    let block = match block {
        Some(b) => b.clamp(1, rows),
        None if rows.saturating_mul(row_bytes) <= FULL_TABLE_BYTES => rows,
        None => {
            // Minimise (rows / B) * checkpoint + B * row: B = sqrt(rows * checkpoint / row).
            let b = ((rows as f64) * (checkpoint_bytes as f64) / (row_bytes.max(1) as f64)).sqrt().ceil();
            (b as u64).clamp(1, rows)
        }
    };
    let checkpoints = rows.div_ceil(block) - 1;
    let bytes = size_bytes
        .saturating_add(checkpoints.saturating_mul(checkpoint_bytes))
        .saturating_add(block.saturating_mul(row_bytes));
    DpPlan { stages, width, block, checkpoints, bytes }
}

/// Validated, normalised popularities.
struct Popularity {
    p: Vec<f64>,
    q: Vec<f64>,
}

fn normalise(p: &[f64], q: &[f64]) -> Result<Popularity> {
    if p.len() != q.len() {
        return Err(PopularityError::LengthMismatch { p: p.len(), q: q.len() });
    }
    if p.is_empty() {
        return Err(PopularityError::InvalidPopularity("empty key universe"));
    }
    let check = |v: &[f64]| v.iter().all(|x| x.is_finite() && *x >= 0.0) && v.iter().sum::<f64>() > 0.0;
    if !check(p) || !check(q) {
        return Err(PopularityError::InvalidPopularity("popularities must be finite, non-negative, not all zero"));
    }
    let (sp, sq) = (p.iter().sum::<f64>(), q.iter().sum::<f64>());
    Ok(Popularity { p: p.iter().map(|x| x / sp).collect(), q: q.iter().map(|x| x / sq).collect() })
}

fn check_common(bits_per_key: f64, k_max: u32) -> Result<()> {
    if !(bits_per_key.is_finite() && bits_per_key > 0.0) {
        return Err(PopularityError::InvalidPopularity("bits per key m/n must be positive and finite"));
    }
    if k_max == 0 || k_max > bloomslice::params::MAX_HASHES {
        return Err(PopularityError::InvalidMaxHashes(k_max));
    }
    Ok(())
}

/// `D(p || q') = sum p(i) log2(p(i) / q'(i))` (terms with `p(i) = 0` are
/// 0; `+inf` if some `q'(i) = 0 < p(i)`), on normalised inputs.
fn kl_divergence(pop: &Popularity) -> f64 {
    pop.p.iter().zip(&pop.q).filter(|(p, _)| **p > 0.0).map(|(p, q)| p * (p / q).log2()).sum()
}

/// The Kullback-Leibler divergence `D(p || q')` in bits (eq. 11), after
/// normalising both.
///
/// # Errors
///
/// [`PopularityError::LengthMismatch`] or
/// [`PopularityError::InvalidPopularity`].
pub fn divergence(p: &[f64], q: &[f64]) -> Result<f64> {
    Ok(kl_divergence(&normalise(p, q)?))
}

/// Eq. (14): the optimal real-number hash counts
/// `k_i = (m/n) ln 2 + D(p||q') + log2(q'(i) / p(i))` (unbounded; `+inf`
/// for keys never in sets, `-inf` for keys never queried).
///
/// # Errors
///
/// [`PopularityError::LengthMismatch`], [`PopularityError::InvalidPopularity`].
pub fn real_solution(p: &[f64], q: &[f64], bits_per_key: f64) -> Result<Vec<f64>> {
    check_common(bits_per_key, 1)?;
    let pop = normalise(p, q)?;
    let base = bits_per_key * core::f64::consts::LN_2 + kl_divergence(&pop);
    Ok(pop.p.iter().zip(&pop.q).map(|(p, q)| base + (q / p).log2()).collect())
}

/// The rounding baseline of Section 5: eq. (14) rounded to the nearest
/// integer, then clamped to `[1, k_max]` (NaN, from a key with `p = q' = 0`,
/// becomes 1).
///
/// # Errors
///
/// As [`real_solution`], and [`PopularityError::InvalidMaxHashes`].
pub fn rounded_solution(p: &[f64], q: &[f64], bits_per_key: f64, k_max: u32) -> Result<Vec<u32>> {
    check_common(bits_per_key, k_max)?;
    Ok(real_solution(p, q, bits_per_key)?
        .into_iter()
        .map(|k| if k.is_nan() { 1 } else { k.round().clamp(1.0, f64::from(k_max)) as u32 })
        .collect())
}

/// Eq. (15), the optimal+ bound: `(1/2)^((m/n) ln 2) * (1/2)^D(p||q')`, the
/// false-positive rate of the unconstrained real-number solution. No
/// ranged integer solution is expected to reach it.
///
/// # Errors
///
/// As [`real_solution`].
pub fn optimal_plus(p: &[f64], q: &[f64], bits_per_key: f64) -> Result<f64> {
    check_common(bits_per_key, 1)?;
    let pop = normalise(p, q)?;
    Ok(0.5f64.powf(bits_per_key * core::f64::consts::LN_2 + kl_divergence(&pop)))
}

/// The objective of problems (16) to (18): `sum q'(i) (1/2)^k_i` on
/// normalised `q'`, the false-positive rate when a bit is set with
/// probability 1/2.
///
/// # Errors
///
/// [`PopularityError::LengthMismatch`], [`PopularityError::InvalidPopularity`].
pub fn half_fill_fpr(q: &[f64], ks: &[u32]) -> Result<f64> {
    if q.len() != ks.len() {
        return Err(PopularityError::LengthMismatch { p: ks.len(), q: q.len() });
    }
    let pop = normalise(q, q)?;
    Ok(pop.q.iter().zip(ks).map(|(q, &k)| q * 0.5f64.powi(k as i32)).sum())
}

/// Eq. (5) with eq. (1): the predicted false-positive rate of hash counts
/// `ks` for a filter of `m` bits holding `n` keys drawn by `p`:
/// `B = 1 - (1 - 1/m)^(n sum p(i) k_i)`, `FPR = sum q'(i) B^k_i`.
///
/// # Errors
///
/// [`PopularityError::LengthMismatch`], [`PopularityError::InvalidPopularity`].
pub fn predicted_fpr(p: &[f64], q: &[f64], ks: &[u32], m: u64, n: u64) -> Result<f64> {
    let pop = normalise(p, q)?;
    if ks.len() != pop.p.len() {
        return Err(PopularityError::LengthMismatch { p: pop.p.len(), q: ks.len() });
    }
    if m == 0 {
        return Err(PopularityError::InvalidPopularity("m must be at least 1"));
    }
    let hashes: f64 = pop.p.iter().zip(ks).map(|(p, &k)| p * f64::from(k)).sum::<f64>() * n as f64;
    let b = 1.0 - (hashes * (-1.0 / m as f64).ln_1p()).exp();
    Ok(pop.q.iter().zip(ks).map(|(q, &k)| q * b.powi(k as i32)).sum())
}

/// Keys sorted by importance score `q'(i) / p(i)` ascending (Section 4.2),
/// compared by cross-multiplication so that `p = 0` is infinitely important
/// and ties keep index order.
fn importance_order(pop: &Popularity) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pop.p.len()).collect();
    order.sort_by(|&a, &b| {
        let (lhs, rhs) = (pop.q[a] * pop.p[b], pop.q[b] * pop.p[a]);
        // Keys with p = q' = 0 compare as 0 / 0: put them first (fewest hashes).
        let za = pop.p[a] == 0.0 && pop.q[a] == 0.0;
        let zb = pop.p[b] == 0.0 && pop.q[b] == 0.0;
        zb.cmp(&za).then(lhs.partial_cmp(&rhs).unwrap_or(core::cmp::Ordering::Equal)).then(a.cmp(&b))
    });
    order
}

/// One step `j` of the forward pass of eq. (26), on `size` (rows
/// `0..=stages` of `width` values; row 0 is the empty solution). With
/// `took` (the `stages` bit rows of this `j`), records which candidates
/// were taken. Both variants do the same comparisons, so the `size` values
/// are bit-identical whether or not bits are recorded.
#[inline]
fn dp_step(size: &mut [f64], width: usize, stages: usize, pj: f64, values: &[usize], took: Option<&mut [u64]>) {
    let row_bits = width.div_ceil(64);
    match took {
        None => {
            for i in 1..=stages {
                let v = values[i];
                if v >= width {
                    continue;
                }
                let (lower, upper) = size.split_at_mut(i * width);
                let prev = &lower[(i - 1) * width..(i - 1) * width + width - v];
                let cur = &mut upper[v..width];
                for (c, &pv) in cur.iter_mut().zip(prev) {
                    let cand = pj + pv;
                    *c = if cand < *c { cand } else { *c };
                }
            }
        }
        Some(took) => {
            for i in 1..=stages {
                let v = values[i];
                if v >= width {
                    continue;
                }
                let (lower, upper) = size.split_at_mut(i * width);
                let prev = &lower[(i - 1) * width..];
                let cur = &mut upper[..width];
                let took_row = &mut took[(i - 1) * row_bits..][..row_bits];
                for w in v..width {
                    let cand = pj + prev[w - v];
                    if cand < cur[w] {
                        cur[w] = cand;
                        took_row[w / 64] |= 1 << (w % 64);
                    }
                }
            }
        }
    }
}

/// The Section 4.4 dynamic program on keys already in importance order,
/// with masses `p`, `q` (any scale) and the hash budget
/// `sum p(i) k_i <= budget`. Returns the hash count of each key, in the
/// given order. `block` forces the walk-back block size (tests).
fn dp_in_order(p: &[f64], q: &[f64], budget: f64, k_max: u32, eps: f64, block: Option<usize>) -> Result<Vec<u32>> {
    let n = p.len();
    // Reverse cumulative sums: P_y = sum_{j > y} p(j), y = 0..=n.
    let mut big_p = vec![0.0; n + 1];
    let mut big_q = vec![0.0; n + 1];
    for y in (0..n).rev() {
        big_p[y] = big_p[y + 1] + p[y];
        big_q[y] = big_q[y + 1] + q[y];
    }
    // Eq. (23): sum_i i * (mass of group i) = P_0 + sum_{i < k_max} P_{l_i}.
    let capacity = budget - big_p[0];
    if capacity < -1e-12 * big_p[0].max(1.0) {
        return Err(PopularityError::InfeasibleBudget { hashes_per_key: budget / big_p[0].max(f64::MIN_POSITIVE) });
    }
    if k_max == 1 {
        return Ok(vec![1; n]);
    }
    let stages = (k_max - 1) as usize;
    // u = (eps / 2) (1 / (k_max - 1)) (1/2)^k_max, scaled by Q_0 so that the
    // relative guarantee of Theorem 2 holds for unnormalised q.
    let u = eps / 2.0 / stages as f64 * 0.5f64.powi(k_max as i32) * big_q[0];
    let width_f = ((big_q[0] / 2.0) / u).floor();
    if width_f.is_nan() || width_f >= 1e15 {
        return Err(PopularityError::ProblemTooLarge { table_bits: u64::MAX });
    }
    let plan = plan_for(n as u64 + 1, stages as u64, width_f as u64 + 1, block.map(|b| b as u64));
    if plan.bytes > MAX_DP_MEMORY_BYTES {
        return Err(PopularityError::ProblemTooLarge { table_bits: plan.bytes.saturating_mul(8) });
    }
    let width = plan.width as usize;
    let rows = n + 1;
    let block = plan.block as usize;
    let value = |i: usize, y: usize| -> usize {
        // f(2^-(i+1) Q_y) in units of u (eq. 26), i = 1..=stages.
        ((0.5f64.powi(i as i32 + 1) * big_q[y]) / u).floor() as usize
    };
    let mut values = vec![0usize; stages + 1];
    let row_bits = width.div_ceil(64);
    let row_words = stages * row_bits;
    // Blocks of rows [b * block, min((b + 1) * block, rows)); the last is
    // recorded during the forward pass, the others are recomputed from
    // their checkpoint (the `size` rows 1..=stages before their first j).
    let blocks = rows.div_ceil(block);
    let cp_len = stages * width;
    let mut checkpoints = vec![0.0f64; (blocks - 1) * cp_len];
    let mut size = vec![f64::INFINITY; (stages + 1) * width];
    size[0] = 0.0;
    let mut took = vec![0u64; block * row_words];
    let last_start = (blocks - 1) * block;
    for j in 0..rows {
        if j % block == 0 && j < last_start {
            checkpoints[(j / block) * cp_len..][..cp_len].copy_from_slice(&size[width..]);
        }
        for (i, v) in values.iter_mut().enumerate().skip(1) {
            *v = value(i, j);
        }
        let bits = (j >= last_start).then(|| &mut took[(j - last_start) * row_words..][..row_words]);
        dp_step(&mut size, width, stages, big_p[j], &values, bits);
    }
    let last = &size[stages * width..];
    let tolerance = 1e-12 * big_p[0].max(1.0);
    let best = (0..width).rev().find(|&w| last[w] <= capacity + tolerance);
    let Some(mut w) = best else {
        return Err(PopularityError::InfeasibleBudget { hashes_per_key: budget / big_p[0].max(f64::MIN_POSITIVE) });
    };
    // Walk back: l_i is the last j <= (current j) whose candidate was taken.
    // `took` holds the bits of block `loaded`; j only decreases, so each
    // earlier block is recomputed (from its checkpoint) at most once.
    let mut loaded = blocks - 1;
    let mut bounds = vec![0usize; stages + 1]; // bounds[i] = l_i, i = 1..=stages
    let mut j = n;
    for i in (1..=stages).rev() {
        loop {
            if j / block != loaded {
                loaded = j / block;
                let start = loaded * block;
                size[width..].copy_from_slice(&checkpoints[loaded * cp_len..][..cp_len]);
                took.fill(0);
                for jj in start..(start + block).min(rows) {
                    for (ii, v) in values.iter_mut().enumerate().skip(1) {
                        *v = value(ii, jj);
                    }
                    let bits = &mut took[(jj - start) * row_words..][..row_words];
                    dp_step(&mut size, width, stages, big_p[jj], &values, Some(bits));
                }
            }
            let row = &took[(j - loaded * block) * row_words + (i - 1) * row_bits..][..row_bits];
            if row[w / 64] >> (w % 64) & 1 == 1 {
                break;
            }
            j = j.checked_sub(1).ok_or(PopularityError::Internal("dynamic program walk-back fell off"))?;
        }
        bounds[i] = j;
        w -= value(i, j);
    }
    let mut ks = vec![k_max; n];
    let mut start = 0;
    for (i, &end) in bounds.iter().enumerate().skip(1) {
        for k in ks.iter_mut().take(end).skip(start) {
            *k = i as u32;
        }
        start = start.max(end);
    }
    Ok(ks)
}

/// The `(2 + eps)`-approximate ranged integer solution of Section 4.4: keys
/// in importance order are cut into `k_max` groups (group `i` gets `i`
/// hashes) by the dynamic program of eq. (26) over value-rounded
/// knapsack items, under `sum p(i) k_i <= (m/n) ln 2` (problem 18).
/// Returns `k_i` per key, in input order. Time `O(k_max N W)`,
/// `W = (k_max - 1) 2^k_max / eps` value units.
///
/// # Memory
///
/// The walk-back needs one decision bit per (stage, key, value), that is
/// `(k_max - 1) (N + 1) W` bits, 1 GB for `N = 10 000`, `k_max = 10`, `eps = 0.1`.
/// When that full table fits in [`FULL_TABLE_BYTES`] it is kept whole (one
/// forward pass). Otherwise the forward pass keeps only the live `size`
/// rows and saves them (a checkpoint of `(k_max - 1) W` f64) before every
/// block of `B` keys; it records the decision bits of the last block only.
/// The walk-back then goes block by block from the last, recomputing each
/// earlier block's bits from its checkpoint (once each, since the walk-back
/// only moves to smaller keys): about twice the time, and memory
/// `(N / B) (k_max - 1) W 8 + B (k_max - 1) W / 8` bytes, minimised at
/// `B = sqrt(64 (N + 1))` (800 keys and 162 MiB for `N = 10 000`,
/// `k_max = 10`, `eps = 0.1`). The recomputation repeats the same float
/// operations, so the result is identical to the full-table one.
/// [`dp_memory_plan`] gives the figures; more than [`MAX_DP_MEMORY_BYTES`]
/// is refused before allocating.
///
/// # Errors
///
/// [`PopularityError::LengthMismatch`], [`PopularityError::InvalidPopularity`],
/// [`PopularityError::InvalidMaxHashes`], [`PopularityError::InvalidEpsilon`],
/// [`PopularityError::InfeasibleBudget`] if `(m/n) ln 2 < 1` (one hash per key
/// already exceeds it), [`PopularityError::ProblemTooLarge`].
pub fn integer_solution(p: &[f64], q: &[f64], bits_per_key: f64, k_max: u32, eps: f64) -> Result<Vec<u32>> {
    integer_solution_with_block(p, q, bits_per_key, k_max, eps, None)
}

/// [`integer_solution`] with the walk-back block size forced (`None`:
/// automatic; `Some(N + 1)`: the full table), to test that the
/// checkpointed walk-back equals the full-table one.
///
/// # Errors
///
/// As [`integer_solution`].
#[doc(hidden)]
pub fn integer_solution_with_block(
    p: &[f64],
    q: &[f64],
    bits_per_key: f64,
    k_max: u32,
    eps: f64,
    block: Option<usize>,
) -> Result<Vec<u32>> {
    check_common(bits_per_key, k_max)?;
    if !(eps.is_finite() && eps > 0.0) {
        return Err(PopularityError::InvalidEpsilon(eps));
    }
    let pop = normalise(p, q)?;
    let order = importance_order(&pop);
    let ps: Vec<f64> = order.iter().map(|&i| pop.p[i]).collect();
    let qs: Vec<f64> = order.iter().map(|&i| pop.q[i]).collect();
    let ks = dp_in_order(&ps, &qs, bits_per_key * core::f64::consts::LN_2, k_max, eps, block)?;
    let mut out = vec![0; pop.p.len()];
    for (&i, k) in order.iter().zip(ks) {
        out[i] = k;
    }
    Ok(out)
}

/// Section 6's limited optimization: only the `bottom` keys of lowest and
/// the `top` keys of highest importance `q'/p` are optimised (by the
/// dynamic program, with the hash budget left after the others); all other
/// keys keep `default_k`. Returns `(key index, k_i)` for the optimised keys
/// only, so a universe of millions of keys costs a sort plus a dynamic
/// program over `top + bottom` keys.
///
/// The paper does not say how the budget is shared: here the middle keys
/// use `default_k` hashes each, and the optimised keys get the rest of
/// `(m/n) ln 2`, so the whole scheme satisfies constraint (18).
///
/// # Errors
///
/// As [`integer_solution`], and [`PopularityError::InvalidMaxHashes`] if
/// `default_k` is outside `[1, k_max]`; [`PopularityError::InfeasibleBudget`]
/// if the middle keys alone exceed the budget.
#[expect(
    clippy::too_many_arguments,
    reason = "the paper's parameters plus the two group sizes; a struct would only rename them"
)]
pub fn limited_integer_solution(
    p: &[f64],
    q: &[f64],
    bits_per_key: f64,
    k_max: u32,
    eps: f64,
    default_k: u32,
    bottom: usize,
    top: usize,
) -> Result<Vec<(usize, u32)>> {
    check_common(bits_per_key, k_max)?;
    if default_k == 0 || default_k > k_max {
        return Err(PopularityError::InvalidMaxHashes(default_k));
    }
    if !(eps.is_finite() && eps > 0.0) {
        return Err(PopularityError::InvalidEpsilon(eps));
    }
    let pop = normalise(p, q)?;
    let n = pop.p.len();
    let order = importance_order(&pop);
    let (bottom, top) = if bottom + top >= n { (n, 0) } else { (bottom, top) };
    let chosen: Vec<usize> = order[..bottom].iter().chain(&order[n - top..]).copied().collect();
    let middle_mass: f64 = order[bottom..n - top].iter().map(|&i| pop.p[i]).sum();
    let budget = bits_per_key * core::f64::consts::LN_2 - f64::from(default_k) * middle_mass;
    let ps: Vec<f64> = chosen.iter().map(|&i| pop.p[i]).collect();
    let qs: Vec<f64> = chosen.iter().map(|&i| pop.q[i]).collect();
    if chosen.is_empty() {
        return Ok(Vec::new());
    }
    if qs.iter().sum::<f64>() == 0.0 {
        // Nothing to gain: fewest hashes for all optimised keys.
        return Ok(chosen.into_iter().map(|i| (i, 1)).collect());
    }
    let ks = dp_in_order(&ps, &qs, budget, k_max, eps, None)?;
    Ok(chosen.into_iter().zip(ks).collect())
}

/// The exact optimum of the importance-ordered problem (22) by brute force
/// over all cut points (`O(N^(k_max - 1))`), for tests on tiny universes.
#[doc(hidden)]
pub fn brute_force_ordered(p: &[f64], q: &[f64], bits_per_key: f64, k_max: u32) -> Option<(Vec<u32>, f64)> {
    let pop = normalise(p, q).ok()?;
    let order = importance_order(&pop);
    let n = p.len();
    let budget = bits_per_key * core::f64::consts::LN_2;
    let mut best: Option<(Vec<u32>, f64)> = None;
    let mut ks_sorted = vec![1u32; n];
    // Enumerate non-decreasing sequences of k over the sorted keys.
    fn rec(pos: usize, lo: u32, k_max: u32, ks: &mut Vec<u32>, f: &mut dyn FnMut(&[u32])) {
        if pos == ks.len() {
            f(ks);
            return;
        }
        for k in lo..=k_max {
            ks[pos] = k;
            rec(pos + 1, k, k_max, ks, f);
        }
    }
    rec(0, 1, k_max, &mut ks_sorted, &mut |ks| {
        let hashes: f64 = ks.iter().zip(&order).map(|(&k, &i)| pop.p[i] * f64::from(k)).sum();
        if hashes <= budget + 1e-12 {
            let fpr: f64 = ks.iter().zip(&order).map(|(&k, &i)| pop.q[i] * 0.5f64.powi(k as i32)).sum();
            if best.as_ref().is_none_or(|b| fpr < b.1) {
                let mut out = vec![0; n];
                for (&k, &i) in ks.iter().zip(&order) {
                    out[i] = k;
                }
                best = Some((out, fpr));
            }
        }
    });
    best
}

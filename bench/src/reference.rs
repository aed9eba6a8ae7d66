//! Answer checking: the reference answers every engine is compared against
//! before it is timed, and the statistical check for `fastbloom`.
//!
//! The reference is the naive engine's own filters ([`BloomFilter::contains_positions`],
//! the definition a Bloom filter answers by), evaluated *filter-major*: each
//! filter is tested against every query while it sits in cache. The answers
//! are those of `naive` by construction, but computing them costs seconds
//! instead of the minutes a query-major naive pass takes at N = 100 000, so
//! the sliced engines can be checked on every query at every size.
//!
//! `fastbloom` probes other bit positions, so its answers cannot equal ours.
//! It is checked for no false negatives, and its false-positive count is
//! compared with ours: both are sums of independent Bernoulli trials (one per
//! query and non-owning filter) whose probabilities follow from each filter's
//! fill ratio, so their difference must lie within a few standard deviations.

use bloomslice::BloomFilter;

use crate::workload::Query;

/// Per-query sorted id sets, stored compactly (CSR: offsets into one id array).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reference {
    offsets: Vec<usize>,
    ids: Vec<u64>,
}

impl Reference {
    /// Reference answers from per-query id lists (sorted here).
    pub fn from_answers(answers: &[Vec<u64>]) -> Self {
        let mut offsets = Vec::with_capacity(answers.len() + 1);
        let mut ids = Vec::new();
        offsets.push(0);
        for a in answers {
            let start = ids.len();
            ids.extend_from_slice(a);
            ids[start..].sort_unstable();
            offsets.push(ids.len());
        }
        Reference { offsets, ids }
    }

    /// Computes the answers of `filters` for every query, filter-major, on
    /// `threads` threads. `positions` holds the `k` probe positions of query
    /// `q` at `positions[q * k..(q + 1) * k]`.
    pub fn compute(filters: &[(u64, BloomFilter)], positions: &[u32], k: usize, threads: usize) -> Self {
        let queries = positions.len() / k;
        let threads = threads.clamp(1, filters.len().max(1));
        let per_thread = filters.len().div_ceil(threads).max(1);
        // Each thread returns (query, id) pairs for its share of the filters.
        let hits: Vec<Vec<(u32, u64)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = filters
                .chunks(per_thread)
                .map(|chunk| {
                    scope.spawn(move || {
                        let mut hits = Vec::new();
                        for (id, filter) in chunk {
                            for (q, pos) in positions.chunks_exact(k).enumerate() {
                                if filter.contains_positions(pos) {
                                    hits.push((q as u32, *id));
                                }
                            }
                        }
                        hits
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("reference thread panicked")).collect()
        });
        // Counting sort by query into CSR.
        let mut offsets = vec![0usize; queries + 1];
        for &(q, _) in hits.iter().flatten() {
            offsets[q as usize + 1] += 1;
        }
        for q in 0..queries {
            offsets[q + 1] += offsets[q];
        }
        let mut fill = offsets.clone();
        let mut ids = vec![0u64; offsets[queries]];
        for &(q, id) in hits.iter().flatten() {
            ids[fill[q as usize]] = id;
            fill[q as usize] += 1;
        }
        for q in 0..queries {
            ids[offsets[q]..offsets[q + 1]].sort_unstable();
        }
        Reference { offsets, ids }
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Whether there are no queries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sorted ids matching query `q`.
    pub fn get(&self, q: usize) -> &[u64] {
        &self.ids[self.offsets[q]..self.offsets[q + 1]]
    }

    /// Total matches over all queries.
    pub fn total_matches(&self) -> usize {
        self.ids.len()
    }

    /// Checks that `got` (in any order) is exactly the answer of query `q`.
    /// `scratch` is a reusable sort buffer.
    ///
    /// # Errors
    ///
    /// A [`Mismatch`] naming the engine, the query and the differing ids.
    pub fn check(&self, engine: &str, q: usize, key: u64, got: &[u64], scratch: &mut Vec<u64>) -> Result<(), Mismatch> {
        scratch.clear();
        scratch.extend_from_slice(got);
        scratch.sort_unstable();
        let expected = self.get(q);
        if scratch.as_slice() == expected {
            return Ok(());
        }
        Err(Mismatch { engine: engine.to_owned(), query: q, key, expected: expected.to_vec(), got: scratch.clone() })
    }
}

/// An engine's answer differs from the reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The engine (and mode) that answered.
    pub engine: String,
    /// Index of the query in the query set.
    pub query: usize,
    /// The query key.
    pub key: u64,
    /// Sorted reference ids.
    pub expected: Vec<u64>,
    /// Sorted ids the engine returned.
    pub got: Vec<u64>,
}

impl core::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Mismatch { engine, query, key, expected, got } = self;
        let missing: Vec<u64> = expected.iter().filter(|i| got.binary_search(i).is_err()).copied().collect();
        let extra: Vec<u64> = got.iter().filter(|i| expected.binary_search(i).is_err()).copied().collect();
        write!(
            f,
            "engine {engine} disagrees with naive on query {query} (key {key:#x}): expected {} ids, got {}; \
             missing {:?}, extra {:?}",
            expected.len(),
            got.len(),
            &missing[..missing.len().min(8)],
            &extra[..extra.len().min(8)],
        )
    }
}

impl std::error::Error for Mismatch {}

/// False-positive bookkeeping of one engine over a set of queries.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FpStats {
    /// Queries counted.
    pub queries: usize,
    /// Present queries whose owner was missing from the answer.
    pub false_negatives: usize,
    /// Ids returned that are not the query's owner.
    pub false_positives: u64,
    /// Expected false positives: the sum over (query, non-owning filter) of
    /// `fill^k`.
    pub expected: f64,
    /// Variance of the false-positive count: the sum of `p (1 - p)`.
    pub variance: f64,
}

impl FpStats {
    /// Statistics of `answers[q]` for `queries[q]`, for filters whose
    /// per-key false-positive probabilities (`fill^k`) are `fp_prob[id]`
    /// (ids are `0..fp_prob.len()`).
    pub fn collect<'a>(queries: &[Query], answers: impl IntoIterator<Item = &'a [u64]>, fp_prob: &[f64]) -> Self {
        let total: f64 = fp_prob.iter().sum();
        let total_var: f64 = fp_prob.iter().map(|p| p * (1.0 - p)).sum();
        let mut s = FpStats::default();
        for (query, answer) in queries.iter().zip(answers) {
            s.queries += 1;
            let owner_hit = query.owner.is_some_and(|o| answer.contains(&o));
            if query.owner.is_some() && !owner_hit {
                s.false_negatives += 1;
            }
            s.false_positives += answer.len() as u64 - u64::from(owner_hit);
            let (p_owner, v_owner) = match query.owner {
                Some(o) => {
                    let p = fp_prob[o as usize];
                    (p, p * (1.0 - p))
                }
                None => (0.0, 0.0),
            };
            s.expected += total - p_owner;
            s.variance += total_var - v_owner;
        }
        s
    }

    /// Standard score of the observed count against the expectation.
    pub fn z(&self) -> f64 {
        if self.variance > 0.0 { (self.false_positives as f64 - self.expected) / self.variance.sqrt() } else { 0.0 }
    }

    /// Whether `self` and `other` are statistically close: their
    /// false-positive counts differ by at most `sigmas` standard deviations
    /// of the difference, plus 2 for discreteness (workloads whose
    /// expectation is far below one false positive).
    pub fn close_to(&self, other: &FpStats, sigmas: f64) -> bool {
        let diff = (self.false_positives as f64 - other.false_positives as f64).abs();
        diff <= sigmas * (self.variance + other.variance).sqrt() + 2.0
    }
}

/// Per-key false-positive probability of a filter with `ones` of `m` bits
/// set and `k` probes: `(ones / m)^k`.
pub fn fp_probability(ones: u64, m: u64, k: u32) -> f64 {
    (ones as f64 / m as f64).powi(k as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{WorkloadKind, WorkloadSpec, key_hash, params};

    fn small_filters(spec: &WorkloadSpec) -> Vec<(u64, BloomFilter)> {
        let p = params();
        (0..spec.filters)
            .map(|i| {
                let mut f = BloomFilter::new(p).unwrap();
                for j in 0..spec.keys_per_filter {
                    f.insert_hash(key_hash(&p, spec.key(i, j)));
                }
                (i as u64, f)
            })
            .collect()
    }

    #[test]
    fn filter_major_reference_equals_query_major_naive() {
        let spec = WorkloadSpec::new(WorkloadKind::Paper, 500, 3).with_filters(40);
        let p = params();
        let filters = small_filters(&spec);
        let queries = spec.queries();
        let k = p.k() as usize;
        let mut positions = vec![0u32; queries.len() * k];
        for (q, pos) in queries.iter().zip(positions.chunks_exact_mut(k)) {
            p.positions_into(key_hash(&p, q.key), pos);
        }
        let reference = Reference::compute(&filters, &positions, k, 2);
        assert_eq!(reference.len(), queries.len());
        let mut naive = bloomslice::NaiveIndex::new(p);
        for (id, f) in &filters {
            naive.insert_filter(*id, f).unwrap();
        }
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        for (i, q) in queries.iter().enumerate() {
            naive.query_hash_into(key_hash(&p, q.key), &mut out);
            reference.check("naive", i, q.key, &out, &mut scratch).unwrap();
        }
        let from_lists =
            Reference::from_answers(&(0..queries.len()).map(|q| reference.get(q).to_vec()).collect::<Vec<_>>());
        assert_eq!(from_lists, reference);
    }

    #[test]
    fn check_detects_a_mismatch() {
        let reference = Reference::from_answers(&[vec![3, 1], vec![], vec![7]]);
        let mut scratch = Vec::new();
        assert!(reference.check("x", 0, 0, &[1, 3], &mut scratch).is_ok());
        assert!(reference.check("x", 1, 0, &[], &mut scratch).is_ok());
        let err = reference.check("sliced", 0, 5, &[3], &mut scratch).unwrap_err();
        assert_eq!((err.expected.clone(), err.got.clone()), (vec![1, 3], vec![3]));
        assert!(err.to_string().contains("missing [1]"), "{err}");
        assert!(reference.check("x", 2, 0, &[7, 8], &mut scratch).is_err());
    }

    #[test]
    fn fp_stats_count_and_compare() {
        let queries =
            [Query { key: 1, owner: Some(0) }, Query { key: 2, owner: None }, Query { key: 3, owner: Some(1) }];
        let answers: [&[u64]; 3] = [&[0, 1], &[1], &[0]];
        let s = FpStats::collect(&queries, answers, &[0.5, 0.5]);
        assert_eq!((s.queries, s.false_negatives, s.false_positives), (3, 1, 3));
        assert!((s.expected - 2.0).abs() < 1e-12);
        let far = FpStats { false_positives: 1000, ..s };
        assert!(s.close_to(&s, 4.0));
        assert!(!s.close_to(&far, 4.0));
    }
}

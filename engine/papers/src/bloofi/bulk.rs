//! Orders for bulk construction: put filters that are close under the
//! tree's [`Metric`] next to each other, so that the runs the bottom-up
//! build groups under one parent are similar (Section 7.1.2 of the paper).
//!
//! Costs, with `N` filters of `w = ceil(m / 64)` words:
//!
//! - [`BulkOrder::PaperGreedy`], the paper's sort, computed exactly: start
//!   from the filter closest to the empty filter, then repeatedly take the
//!   remaining filter closest to the last one taken (ties to the lowest
//!   index). Two engines give the same permutation and the cheaper one by a
//!   cost model runs:
//!   - *direct*, as the paper does it: `N (N - 1) / 2` distances of `w`
//!     words, `O(N^2 w)` time, `O(N)` extra memory. Right for dense filters;
//!     at `m = 100 992` it streams every remaining filter from memory at
//!     every step, so it is hours at `N = 100 000`.
//!   - *inverted*: every metric depends only on `|A|`, `|B|` and
//!     `|A and B|`, so each step counts the bits the current filter shares
//!     with the others by walking the posting lists (filters per bit) of its
//!     set bits. `O(sum over bits of len(bit)^2)` time, one `u32` per set bit
//!     of memory. For sparse filters this is far less: the paper's default
//!     workload at `N = 100 000` (about 700 of 100 992 bits set per
//!     filter) is about `2.4e10` list entries against about `8e12` words
//!     for the direct sort (minutes, not hours; measured: see
//!     `bench/RESULTS.md`, section "Papers: Bloofi").
//! - [`BulkOrder::MinHashChain`], approximate, for when neither exact engine
//!   is affordable (many dense filters): the same greedy chain, but the next
//!   filter is chosen among a few candidates proposed by MinHash sort orders.
//!   Each filter gets a one-pass MinHash signature of its set bits
//!   ([`MINHASH_BINS`] bins, one hash per set bit); [`CHAIN_ORDERS`] sort
//!   orders of the signatures (each starting at another bin) are kept as
//!   linked lists of the filters not yet taken; the candidates for the next
//!   step are the [`CHAIN_WINDOW`] nearest untaken filters on each side of
//!   the current one in each order, and the exact metric picks among them.
//!   Time `O(N (ones + R log N + 2 R W w))` for `R` orders and window `W`.
//!   Its chains are longer than the exact greedy's when filters overlap
//!   (a higher search cost; measured: see `bench/RESULTS.md`, section "Papers: Bloofi"), so it is
//!   only the fallback.
//! - [`BulkOrder::Auto`] (the default): the exact greedy when the cost model
//!   estimates its cheaper engine under two minutes, the MinHash chain
//!   otherwise (seconds at `N = 100 000`; measured: see `bench/RESULTS.md`, section "Papers: Bloofi").

use bloomslice::kernels::{Kernels, prefetch_line};

use super::Metric;

/// MinHash bins per signature (one-permutation hashing: each set bit is
/// hashed once and lands in one bin). Eight bins separate filters that
/// share no key while keeping signatures one cache line long.
const MINHASH_BINS: usize = 8;

/// Sort orders the MinHash chain draws candidates from, each sorting the
/// signatures lexicographically from another starting bin, so that filters
/// agreeing on any of the first few bins meet in some order.
const CHAIN_ORDERS: usize = 4;

/// Untaken neighbours taken from each side of the current filter in each
/// order: `2 * CHAIN_ORDERS * CHAIN_WINDOW` = 32 exact distances per step.
const CHAIN_WINDOW: usize = 4;

/// How [`super::BloofiTree::bulk_build`] orders the filters before building
/// bottom-up (see the module docs of `bloofi::bulk` for the costs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BulkOrder {
    /// Keep the order the filters were given in.
    AsGiven,
    /// The paper's greedy sort, exactly; `O(N^2 w)` for dense filters,
    /// much less for sparse ones (inverted index of set bits).
    PaperGreedy,
    /// An approximate greedy chain over MinHash-proposed candidates:
    /// `O(N log N + N w)`.
    MinHashChain,
    /// [`BulkOrder::PaperGreedy`] when it is estimated under two minutes,
    /// [`BulkOrder::MinHashChain`] otherwise.
    #[default]
    Auto,
}

impl BulkOrder {
    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            BulkOrder::AsGiven => "as-given",
            BulkOrder::PaperGreedy => "paper-greedy",
            BulkOrder::MinHashChain => "minhash-chain",
            BulkOrder::Auto => "auto",
        }
    }
}

/// A permutation of `0..filters.len()` placing close filters side by side.
pub(crate) fn order(filters: &[&[u64]], metric: Metric, kernels: &Kernels, how: BulkOrder) -> Vec<usize> {
    match how {
        BulkOrder::AsGiven => (0..filters.len()).collect(),
        BulkOrder::PaperGreedy => paper_greedy(filters, metric, kernels, GreedyCosts::estimate(filters)),
        BulkOrder::MinHashChain => minhash_chain(filters, metric, kernels),
        BulkOrder::Auto => {
            let costs = GreedyCosts::estimate(filters);
            if costs.direct.min(costs.inverted) <= EXACT_BUDGET_NS {
                paper_greedy(filters, metric, kernels, costs)
            } else {
                minhash_chain(filters, metric, kernels)
            }
        }
    }
}

/// The paper's first filter: the one closest to the empty filter (ties to
/// the lowest index).
fn closest_to_empty(filters: &[&[u64]], metric: Metric, kernels: &Kernels) -> Option<usize> {
    let zero = vec![0u64; filters.first()?.len()];
    let mut best = (f64::INFINITY, 0);
    for (i, f) in filters.iter().enumerate() {
        let d = metric.distance_words(kernels, f, &zero);
        if d < best.0 {
            best = (d, i);
        }
    }
    Some(best.1)
}

/// The paper's greedy sort, exactly, by whichever of the two engines the
/// cost model says is cheaper (both give the same permutation).
fn paper_greedy(filters: &[&[u64]], metric: Metric, kernels: &Kernels, costs: GreedyCosts) -> Vec<usize> {
    if costs.inverted < costs.direct {
        greedy_inverted(filters, metric, kernels)
    } else {
        greedy_direct(filters, metric, kernels)
    }
}

/// Estimated time of the two exact greedy engines, in nanoseconds on the
/// development machine (the constants were measured there on the paper's
/// workload; only their ratio and the order of magnitude matter).
#[derive(Clone, Copy, Debug)]
struct GreedyCosts {
    /// `N (N - 1) / 2` distances of `w` words each.
    direct: f64,
    /// One scattered posting-list visit per set bit of every filter, the
    /// list entries (`sum over bits of len(bit)^2 / 2`), and one candidate
    /// per remaining filter per step (`N^2 / 2`).
    inverted: f64,
}

/// One word of an exact distance in the direct greedy (AVX2 popcount
/// kernels, filters streamed from memory).
const DIRECT_NS_PER_WORD: f64 = 0.25;

/// Reaching one posting list (scattered over `m` bits: cache misses).
const INVERTED_NS_PER_LIST: f64 = 200.0;

/// One posting-list entry (compaction and a scattered counter increment).
const INVERTED_NS_PER_ENTRY: f64 = 3.0;

/// One candidate distance from counts.
const INVERTED_NS_PER_CANDIDATE: f64 = 2.0;

/// [`BulkOrder::Auto`] runs the exact greedy when its cheaper engine is
/// estimated under this many nanoseconds (two minutes), and the MinHash
/// chain otherwise.
const EXACT_BUDGET_NS: f64 = 120e9;

impl GreedyCosts {
    fn estimate(filters: &[&[u64]]) -> Self {
        let n = filters.len() as f64;
        let w = filters.first().map_or(0, |f| f.len());
        let mut per_bit = vec![0u32; w * 64];
        for f in filters {
            for_each_set_bit(f, |b| per_bit[b] += 1);
        }
        let lists: f64 = per_bit.iter().map(|&c| f64::from(c)).sum();
        let entries: f64 = per_bit.iter().map(|&c| f64::from(c) * f64::from(c) / 2.0).sum();
        GreedyCosts {
            direct: n * (n - 1.0) / 2.0 * w as f64 * DIRECT_NS_PER_WORD,
            inverted: lists * INVERTED_NS_PER_LIST
                + entries * INVERTED_NS_PER_ENTRY
                + n * n / 2.0 * INVERTED_NS_PER_CANDIDATE,
        }
    }
}

fn for_each_set_bit(words: &[u64], mut f: impl FnMut(usize)) {
    for (wi, &word) in words.iter().enumerate() {
        let mut w = word;
        while w != 0 {
            f(wi * 64 + w.trailing_zeros() as usize);
            w &= w - 1;
        }
    }
}

/// The greedy sort as the paper runs it: every step computes the distance
/// from the last filter taken to every remaining one.
fn greedy_direct(filters: &[&[u64]], metric: Metric, kernels: &Kernels) -> Vec<usize> {
    let Some(mut current) = closest_to_empty(filters, metric, kernels) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(filters.len());
    // Remaining filters in index order, so that ties go to the lowest index.
    let mut remaining: Vec<usize> = (0..filters.len()).filter(|&i| i != current).collect();
    out.push(current);
    while !remaining.is_empty() {
        let mut best = (f64::INFINITY, 0);
        for (slot, &i) in remaining.iter().enumerate() {
            let d = metric.distance_words(kernels, filters[current], filters[i]);
            if d < best.0 {
                best = (d, slot);
            }
        }
        current = remaining.remove(best.1);
        out.push(current);
    }
    out
}

/// The same greedy sort through an inverted index (for each bit, the
/// filters that have it set). Each step counts `|A and B|` for every
/// remaining filter `B` that shares a bit with the current `A` by walking
/// the posting lists of `A`'s bits (dropping taken filters from them as it
/// goes); the metric follows from `|A|`, `|B|` and that count
/// ([`Metric::distance_from_counts`]). Filters sharing no bit with `A` all
/// have `|A and B| = 0`, so the best of them is the first untaken one in
/// (popcount, index) order for Hamming, or in index order for Jaccard and
/// cosine (whose distance is then 1, or 0 for two empty filters); a shared
/// bit always beats none for those two, and for Hamming the walk stops as
/// soon as `|A| + |B|` exceeds the best distance found. Ties go
/// to the lowest index, as in [`greedy_direct`], and the distances are the
/// same `f64` values, so the permutation is identical. Total work is about
/// `sum over bits of len(bit)^2 / 2` increments: for sparse filters (the
/// paper's default workload) far below the `N^2 w / 2` words of the direct
/// sort.
fn greedy_inverted(filters: &[&[u64]], metric: Metric, kernels: &Kernels) -> Vec<usize> {
    let n = filters.len();
    let Some(start) = closest_to_empty(filters, metric, kernels) else {
        return Vec::new();
    };
    let bits = filters[0].len() * 64;
    let ones: Vec<u64> = filters.iter().map(|f| kernels.popcount(f)).collect();
    // Posting lists in one buffer: list b is postings[begin..begin + len] of
    // lists[b]; the header is one 16-byte record so that reaching a list
    // costs one cache miss, not two.
    let mut lists = vec![PostingList { begin: 0, len: 0 }; bits];
    for f in filters {
        for_each_set_bit(f, |b| lists[b].len += 1);
    }
    let mut total = 0usize;
    for list in &mut lists {
        list.begin = total;
        total += list.len as usize;
        list.len = 0;
    }
    let mut postings = vec![0u32; total];
    for (i, f) in filters.iter().enumerate() {
        for_each_set_bit(f, |b| {
            let list = &mut lists[b];
            postings[list.begin + list.len as usize] = i as u32;
            list.len += 1;
        });
    }
    let mut current_bits: Vec<usize> = Vec::new();
    // Filters by (popcount, index), and cursors to the first untaken filter
    // in that order and in index order; both only move forward, since
    // filters are only ever taken.
    let mut by_ones: Vec<u32> = (0..n as u32).collect();
    by_ones.sort_unstable_by_key(|&i| (ones[i as usize], i));
    let (mut ones_cursor, mut index_cursor) = (0usize, 0usize);
    let mut taken = vec![false; n];
    let mut common = vec![0u32; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut out = Vec::with_capacity(n);
    let mut current = start;
    loop {
        taken[current] = true;
        out.push(current);
        if out.len() == n {
            break;
        }
        while taken[by_ones[ones_cursor] as usize] {
            ones_cursor += 1;
        }
        while taken[index_cursor] {
            index_cursor += 1;
        }
        current_bits.clear();
        for_each_set_bit(filters[current], |b| current_bits.push(b));
        for (i, &b) in current_bits.iter().enumerate() {
            // The bits are scattered over m: fetch list headers
            // PREFETCH_AHEAD bits ahead and list contents half as far.
            if let Some(&ahead) = current_bits.get(i + PREFETCH_AHEAD) {
                prefetch_line(core::ptr::from_ref(&lists[ahead]).cast());
            }
            if let Some(&ahead) = current_bits.get(i + PREFETCH_AHEAD / 2) {
                prefetch_line(postings.as_ptr().wrapping_add(lists[ahead].begin).cast());
            }
            let PostingList { begin, len } = lists[b];
            let list = &mut postings[begin..begin + len as usize];
            let mut kept = 0;
            for j in 0..list.len() {
                let e = list[j];
                if taken[e as usize] {
                    continue;
                }
                list[kept] = e;
                kept += 1;
                if common[e as usize] == 0 {
                    touched.push(e);
                }
                common[e as usize] += 1;
            }
            lists[b].len = kept as u32;
        }
        let a = ones[current];
        let mut best = (f64::INFINITY, u32::MAX);
        for &e in &touched {
            consider(&mut best, metric.distance_from_counts(a, ones[e as usize], u64::from(common[e as usize])), e);
        }
        // The untaken filters sharing no bit with `current`.
        if metric == Metric::Hamming {
            // Their distance is a + |B|: walk up in popcount order while that
            // can still beat (or tie) the best, to the first untouched one.
            for &e in &by_ones[ones_cursor..] {
                let d = (a + ones[e as usize]) as f64;
                if d > best.0 {
                    break;
                }
                if !taken[e as usize] && common[e as usize] == 0 {
                    consider(&mut best, d, e);
                    break;
                }
            }
        } else if touched.is_empty() {
            // Jaccard and cosine: any shared bit gives a distance below 1,
            // so only with none touched can an untouched filter win: the
            // lowest-index one at distance 1, or the lowest-index empty one
            // at distance 0 when `current` is empty too.
            let e = by_ones[ones_cursor];
            consider(&mut best, metric.distance_from_counts(a, ones[e as usize], 0), e);
            consider(&mut best, metric.distance_from_counts(a, ones[index_cursor], 0), index_cursor as u32);
        }
        for &e in &touched {
            common[e as usize] = 0;
        }
        touched.clear();
        current = best.1 as usize;
    }
    out
}

/// One posting list of the inverted greedy: the filters (not yet taken, as
/// far as the list has been compacted) that have one bit set.
#[derive(Clone, Copy)]
struct PostingList {
    begin: usize,
    len: u32,
}

/// How many set bits ahead the inverted greedy prefetches posting-list
/// headers (contents: half as far).
const PREFETCH_AHEAD: usize = 8;

/// Keeps the smaller `(distance, index)` pair.
#[inline]
fn consider(best: &mut (f64, u32), d: f64, e: u32) {
    if d < best.0 || (d == best.0 && e < best.1) {
        *best = (d, e);
    }
}

/// SplitMix64's finaliser: a bijective mix with full avalanche.
#[inline]
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One-permutation MinHash of the set bit positions of `words`: each set
/// bit is hashed once; the top bits pick its bin, the rest compete for the
/// bin's minimum. Empty bins stay `u64::MAX`.
fn signature(words: &[u64]) -> [u64; MINHASH_BINS] {
    const BIN_SHIFT: u32 = 64 - MINHASH_BINS.trailing_zeros();
    let mut sig = [u64::MAX; MINHASH_BINS];
    for (wi, &word) in words.iter().enumerate() {
        let mut w = word;
        while w != 0 {
            let bit = (wi as u64) * 64 + u64::from(w.trailing_zeros());
            w &= w - 1;
            let h = mix(bit);
            let bin = (h >> BIN_SHIFT) as usize;
            let value = h & (u64::MAX >> MINHASH_BINS.trailing_zeros());
            if value < sig[bin] {
                sig[bin] = value;
            }
        }
    }
    sig
}

const NONE: u32 = u32::MAX;

/// A doubly linked list over one sort order of the untaken filters.
struct Order {
    prev: Vec<u32>,
    next: Vec<u32>,
}

impl Order {
    fn new(sorted: &[u32], n: usize) -> Self {
        let (mut prev, mut next) = (vec![NONE; n], vec![NONE; n]);
        for pair in sorted.windows(2) {
            next[pair[0] as usize] = pair[1];
            prev[pair[1] as usize] = pair[0];
        }
        Order { prev, next }
    }

    fn unlink(&mut self, i: u32) {
        let (p, n) = (self.prev[i as usize], self.next[i as usize]);
        if p != NONE {
            self.next[p as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
    }

    fn neighbours(&self, i: u32, out: &mut Vec<u32>) {
        for links in [&self.prev, &self.next] {
            let mut j = links[i as usize];
            for _ in 0..CHAIN_WINDOW {
                if j == NONE {
                    break;
                }
                out.push(j);
                j = links[j as usize];
            }
        }
    }
}

fn minhash_chain(filters: &[&[u64]], metric: Metric, kernels: &Kernels) -> Vec<usize> {
    let n = filters.len();
    let Some(start) = closest_to_empty(filters, metric, kernels) else {
        return Vec::new();
    };
    let sigs: Vec<[u64; MINHASH_BINS]> = filters.iter().map(|f| signature(f)).collect();
    let mut orders: Vec<Order> = (0..CHAIN_ORDERS)
        .map(|r| {
            let mut sorted: Vec<u32> = (0..n as u32).collect();
            sorted.sort_by(|&a, &b| {
                let (sa, sb) = (&sigs[a as usize], &sigs[b as usize]);
                (0..MINHASH_BINS)
                    .map(|j| (r + j) % MINHASH_BINS)
                    .map(|bin| sa[bin].cmp(&sb[bin]))
                    .find(|o| o.is_ne())
                    .unwrap_or(a.cmp(&b))
            });
            Order::new(&sorted, n)
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    let mut candidates = Vec::with_capacity(2 * CHAIN_ORDERS * CHAIN_WINDOW);
    let mut current = start as u32;
    loop {
        out.push(current as usize);
        // Every list holds exactly the untaken filters plus `current`, so
        // the neighbours gathered before unlinking are all untaken, and
        // there is one as long as any filter is left.
        candidates.clear();
        for order in &orders {
            order.neighbours(current, &mut candidates);
        }
        for order in &mut orders {
            order.unlink(current);
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut best = (f64::INFINITY, NONE);
        for &c in &candidates {
            let d = metric.distance_words(kernels, filters[current as usize], filters[c as usize]);
            if d < best.0 {
                best = (d, c);
            }
        }
        if best.1 == NONE {
            break;
        }
        current = best.1;
    }
    debug_assert_eq!(out.len(), n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomslice::{BloomFilter, BloomParams};

    fn is_permutation(p: &[usize], n: usize) -> bool {
        let mut seen = vec![false; n];
        p.len() == n && p.iter().all(|&i| i < n && !std::mem::replace(&mut seen[i], true))
    }

    fn tour(filters: &[&[u64]], p: &[usize]) -> f64 {
        let k = Kernels::detect();
        p.windows(2).map(|w| Metric::Hamming.distance_words(k, filters[w[0]], filters[w[1]])).sum()
    }

    /// Filters in clusters of shared keys, shuffled: a good order brings each
    /// cluster together.
    fn clustered(n: u64) -> Vec<BloomFilter> {
        let params = BloomParams::new(4096, 4).unwrap();
        (0..n)
            .map(|i| {
                let cluster = (i * 7919) % (n / 8);
                let mut f = BloomFilter::new(params).unwrap();
                for k in 0..40 {
                    f.insert(&(cluster * 1_000_000 + k).to_le_bytes());
                }
                for k in 0..5 {
                    f.insert(&(i * 1_000 + k + 500_000_000).to_le_bytes());
                }
                f
            })
            .collect()
    }

    #[test]
    fn every_order_is_a_permutation() {
        let filters = clustered(120);
        let words: Vec<&[u64]> = filters.iter().map(|f| f.words()).collect();
        for metric in Metric::ALL {
            for how in [BulkOrder::AsGiven, BulkOrder::PaperGreedy, BulkOrder::MinHashChain, BulkOrder::Auto] {
                let p = order(&words, metric, Kernels::detect(), how);
                assert!(is_permutation(&p, words.len()), "{how:?} {metric:?}");
            }
        }
        assert!(order(&[], Metric::Hamming, Kernels::detect(), BulkOrder::MinHashChain).is_empty());
        let one = [filters[0].words()];
        assert_eq!(order(&one, Metric::Hamming, Kernels::detect(), BulkOrder::PaperGreedy), vec![0]);
    }

    #[test]
    fn greedy_starts_nearest_empty_and_chains_nearest() {
        let params = BloomParams::new(128, 1).unwrap();
        let mut fs: Vec<BloomFilter> = Vec::new();
        for bits in [&[1u64, 2, 3, 4][..], &[1], &[100, 101, 102], &[1, 2]] {
            fs.push(BloomFilter::from_words(params, &[bits.iter().fold(0, |a, &b| a | 1 << (b % 64)), 0]).unwrap());
        }
        let words: Vec<&[u64]> = fs.iter().map(|f| f.words()).collect();
        assert_eq!(order(&words, Metric::Hamming, Kernels::detect(), BulkOrder::PaperGreedy), vec![1, 3, 0, 2]);
    }

    #[test]
    fn both_greedy_engines_give_the_same_permutation() {
        let k = Kernels::detect();
        let params = BloomParams::new(256, 2).unwrap();
        let mut sets = clustered(90);
        // Empty filters and duplicates exercise the ties and the
        // no-shared-bit candidates.
        let big = *sets[0].params();
        sets.extend((0..4).map(|_| BloomFilter::new(big).unwrap()));
        sets.push(sets[3].clone());
        let small: Vec<BloomFilter> = (0..60u64)
            .map(|i| {
                let mut f = BloomFilter::new(params).unwrap();
                for key in 0..(i % 7) {
                    f.insert(&(i / 3 * 10 + key).to_le_bytes());
                }
                f
            })
            .collect();
        for set in [&sets, &small] {
            let words: Vec<&[u64]> = set.iter().map(|f| f.words()).collect();
            for metric in Metric::ALL {
                let direct = greedy_direct(&words, metric, k);
                assert!(is_permutation(&direct, words.len()));
                assert_eq!(direct, greedy_inverted(&words, metric, k), "{metric:?}");
            }
        }
    }

    #[test]
    fn minhash_chain_is_about_as_short_as_the_greedy_sort() {
        let filters = clustered(400);
        let words: Vec<&[u64]> = filters.iter().map(|f| f.words()).collect();
        let k = Kernels::detect();
        let given = tour(&words, &order(&words, Metric::Hamming, k, BulkOrder::AsGiven));
        let greedy = tour(&words, &order(&words, Metric::Hamming, k, BulkOrder::PaperGreedy));
        let chain = tour(&words, &order(&words, Metric::Hamming, k, BulkOrder::MinHashChain));
        assert!(greedy < given * 0.5, "greedy {greedy} vs given {given}");
        assert!(chain < greedy * 1.15, "chain {chain} vs greedy {greedy}");
    }
}

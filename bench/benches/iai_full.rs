//! iai-callgrind bench: instructions per key of `SlicedIndex::query_into`
//! (one key at a time) and `SlicedIndex::query_batch` (one batch) on the
//! shape of the `full` workload (`m = 100 992`, `k = 7`, filters about half
//! ones) at N = 1 000 and N = 10 000 filters, for the scalar, AVX2 and
//! dispatched kernels. Each measured call handles [`KEYS`] keys of 8 bytes
//! (hashing included); divide the reported instructions by [`KEYS`] for
//! instructions per key.
//!
//! # The filters
//!
//! Building 10 000 real `full` filters (10 000 keys each) takes minutes
//! under valgrind, so the filters are random words instead: every bit is
//! set with probability 1/2, which is the density of a `full` filter
//! (`1 - (1 - 1/m)^(k n) = 1 - e^(-70 000 / 100 992) = 0.5000`), and
//! density is all a query's cost depends on (how many 512-bit chunks die
//! after how many rows, and how many columns match: 1 in 2^7 per key and
//! filter, as for `full`'s false positives). Like `full`, half of the query
//! keys are present in one filter: their `k` bits are set in their owner's
//! words, so the owner is in the answer. The query keys are those of
//! `paper query --workload full` (same seed rule, hashed as their 8
//! little-endian bytes). The index is built with one `insert_filters`
//! (64x64 bit transposes), the fastest way in through the public API.
//!
//! Setup (not measured) checks every answer against a scalar recomputation
//! from the filters' words ([`BloomFilter::contains_hash`]), so a bench
//! that got faster by answering wrongly fails.
//!
//! Valgrind 3.19 does not run AVX-512: under it the CPU reports AVX2 at
//! most, so `dispatched` measures the AVX2 kernels (as `avx2` does).
//!
//! Run with `cargo bench -p bloomslice-bench --bench iai_full` (needs
//! `iai-callgrind-runner` 0.16.1 and valgrind).
#![expect(missing_docs, reason = "iai-callgrind's macros generate undocumented public items")]

use std::hint::black_box;

use bloomslice::kernels::{Backend, Kernels};
use bloomslice::{BatchResults, SlicedConfig, SlicedIndex};
use bloomslice_bench::workload::{params, random_full_index};
use iai_callgrind::{library_benchmark, library_benchmark_group, main};

/// Keys per measured call.
const KEYS: usize = 1000;
/// Seed of the query keys (as `paper query`'s default) and of the words.
const SEED: u64 = 11;

/// The index, the query keys and warm output buffers.
type Input = (SlicedIndex, Vec<[u8; 8]>, Vec<u64>, BatchResults);

/// Builds `filters` random half-full filters plus the owners' bits of the
/// present query keys, indexes them, checks every answer of both query
/// paths against the filters themselves, and warms the output buffers (so
/// the measured calls allocate nothing). Not measured.
fn setup(filters: usize, backend: Option<Backend>) -> Input {
    let p = params();
    let (mut index, built, queries, keys) = random_full_index(filters, KEYS, SEED, SlicedConfig::default());
    let density = index.count_ones() as f64 / (p.m() as f64 * filters as f64);
    assert!((density - 0.5).abs() < 0.001, "density {density}");
    let kernels = backend.map_or_else(Kernels::detect, |b| Kernels::for_backend(b).expect("backend available"));
    index.set_kernels(kernels);

    let mut results = BatchResults::new();
    index.query_batch(&keys, &mut results);
    let mut out = Vec::new();
    let mut expected = Vec::new();
    for ((key, q), batched) in keys.iter().zip(&queries).zip(results.iter()) {
        let h = p.hash(key);
        expected.clear();
        expected.extend(built.iter().enumerate().filter(|(_, f)| f.contains_hash(h)).map(|(i, _)| i as u64));
        index.query_into(key, &mut out);
        let mut got = out.clone();
        got.sort_unstable();
        assert_eq!(got, expected, "query_into disagrees with the filters");
        let mut got = batched.to_vec();
        got.sort_unstable();
        assert_eq!(got, expected, "query_batch disagrees with the filters");
        assert!(q.owner.is_none_or(|o| expected.contains(&o)), "a present key misses its owner");
    }
    out.reserve(filters);
    (index, keys, out, results)
}

/// A library benchmark on each of the six cases: N = 1 000 and 10 000,
/// scalar, AVX2 and dispatched kernels, its input from [`setup`].
macro_rules! on_every_case {
    ($bench:item) => {
        #[library_benchmark]
        #[bench::n1000_scalar(args = (1_000, Some(Backend::Scalar)), setup = setup)]
        #[bench::n1000_avx2(args = (1_000, Some(Backend::Avx2)), setup = setup)]
        #[bench::n1000_dispatched(args = (1_000, None), setup = setup)]
        #[bench::n10000_scalar(args = (10_000, Some(Backend::Scalar)), setup = setup)]
        #[bench::n10000_avx2(args = (10_000, Some(Backend::Avx2)), setup = setup)]
        #[bench::n10000_dispatched(args = (10_000, None), setup = setup)]
        $bench
    };
}

on_every_case! {
    fn query_into_1000_keys(input: Input) -> usize {
        let (index, keys, mut out, results) = input;
        let mut matches = 0;
        for key in black_box(&keys) {
            index.query_into(key, &mut out);
            matches += out.len();
        }
        // Freeing the index is not part of the query.
        core::mem::forget((index, keys, out, results));
        matches
    }
}

on_every_case! {
    fn query_batch_1000_keys(input: Input) -> usize {
        let (index, keys, out, mut results) = input;
        index.query_batch(black_box(&keys), &mut results);
        let matches = results.total_matches();
        core::mem::forget((index, keys, out, results));
        matches
    }
}

library_benchmark_group!(name = full; benchmarks = query_into_1000_keys, query_batch_1000_keys);

main!(library_benchmark_groups = full);

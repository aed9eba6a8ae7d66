//! iai-callgrind bench: instructions per key of `query_batch_hashes` on a
//! cache-resident index (the `paper` workload at N = 256, a batch of 1000
//! keys), for the scalar and the dispatched kernels. Instruction counts are
//! repeatable where wall-clock times on a shared machine are not.
//!
//! Run with `cargo bench -p bloomslice-bench --bench iai` (needs
//! `iai-callgrind-runner` 0.16.1 and valgrind). Divide the reported
//! instructions by [`KEYS`] for instructions per key.
#![expect(missing_docs, reason = "iai-callgrind's macros generate undocumented public items")]

use std::hint::black_box;

use bloomslice::kernels::{Backend, Kernels};
use bloomslice::{BatchResults, KeyHash, SlicedConfig, SlicedIndex};
use bloomslice_bench::engines;
use bloomslice_bench::workload::{WorkloadKind, WorkloadSpec, key_hash, params};
use iai_callgrind::{library_benchmark, library_benchmark_group, main};

/// Filters in the index: 256 columns x 100 992 rows, 3 MiB.
const FILTERS: usize = 512;
/// Keys per measured batch.
const KEYS: usize = 1000;

type Input = (SlicedIndex, Vec<KeyHash>, BatchResults);

/// Builds the index, checks it against naive, and warms the result buffers
/// (so the measured batch allocates nothing). Not measured.
fn setup(backend: Option<Backend>) -> Input {
    let spec = WorkloadSpec::new(WorkloadKind::Paper, KEYS, 11).with_filters(FILTERS);
    let p = params();
    let naive = engines::naive_index(p, engines::build_filters(&spec, p, 1).expect("filters")).expect("naive");
    let mut index = engines::sliced_index(&naive, SlicedConfig::default()).expect("sliced");
    let kernels = backend.map_or_else(Kernels::detect, |b| Kernels::for_backend(b).expect("backend available"));
    index.set_kernels(kernels);
    let hashes: Vec<KeyHash> = spec.queries().iter().map(|q| key_hash(&p, q.key)).collect();
    let mut results = BatchResults::new();
    index.query_batch_hashes(&hashes, &mut results);
    let mut expected = Vec::new();
    for (h, got) in hashes.iter().zip(results.iter()) {
        naive.query_hash_into(*h, &mut expected);
        let mut got = got.to_vec();
        got.sort_unstable();
        expected.sort_unstable();
        assert_eq!(got, expected, "sliced disagrees with naive");
    }
    (index, hashes, results)
}

#[library_benchmark]
#[bench::scalar(args = (Some(Backend::Scalar)), setup = setup)]
#[bench::dispatched(args = (None), setup = setup)]
fn query_batch_1000_keys(input: Input) -> usize {
    let (index, hashes, mut results) = input;
    index.query_batch_hashes(black_box(&hashes), &mut results);
    let matches = results.total_matches();
    // Freeing the index is not part of the query.
    core::mem::forget((index, hashes, results));
    matches
}

library_benchmark_group!(name = sliced; benchmarks = query_batch_1000_keys);

main!(library_benchmark_groups = sliced);

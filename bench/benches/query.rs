//! Criterion benches: wall-clock time of sliced queries (scalar vs
//! dispatched kernels, one key at a time vs batched) next to the naive
//! engines, on small `paper` and `full` indexes, and of the kernels the
//! queries spend their time in, per available backend.
//!
//! Every query bench checks its answers against the naive index before it
//! is timed. Measurement times are short (2 s, 20 samples): these are for
//! spotting regressions; the `paper` binary gives the reference figures.

use std::hint::black_box;
use std::time::Duration;

use bloomslice::kernels::Kernels;
use bloomslice::{BatchResults, KeyHash, NaiveIndex, SlicedConfig, SlicedIndex};
use bloomslice_bench::engines::{self, EngineKind, FastbloomIndex};
use bloomslice_bench::experiment::fastbloom_check;
use bloomslice_bench::tuning;
use bloomslice_bench::workload::{WorkloadKind, WorkloadSpec, key_hash, params};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Filters in each bench index.
const FILTERS: usize = 1000;
/// Keys per timed iteration of the sliced engines (one batch).
const KEYS: usize = 1024;
/// Keys per timed iteration of the naive engines (each key reads every filter).
const NAIVE_KEYS: usize = 64;

struct Setup {
    name: &'static str,
    naive: NaiveIndex,
    fastbloom: FastbloomIndex,
    sliced: SlicedIndex,
    hashes: Vec<KeyHash>,
}

fn setup(kind: WorkloadKind) -> Setup {
    let spec = WorkloadSpec::new(kind, KEYS, 7).with_filters(FILTERS);
    let p = params();
    let naive = engines::naive_index(p, engines::build_filters(&spec, p, 2).expect("filters")).expect("naive");
    let fastbloom = engines::build_fastbloom(&spec, p, 2);
    let sliced = engines::sliced_index(&naive, SlicedConfig::default()).expect("sliced");
    let queries = spec.queries();
    let hashes: Vec<KeyHash> = queries.iter().map(|q| key_hash(&p, q.key)).collect();
    // Check before timing: naive-fastbloom (other hashing) has no false
    // negative and our false-positive rate on the timed sample ...
    let few = &hashes[..NAIVE_KEYS];
    let naive_answers: Vec<Vec<u64>> = few
        .iter()
        .map(|h| {
            let mut out = Vec::new();
            naive.query_hash_into(*h, &mut out);
            out
        })
        .collect();
    let our_fp: Vec<f64> = naive
        .filters()
        .iter()
        .map(|(_, f)| bloomslice_bench::reference::fp_probability(f.count_ones(), p.m(), p.k()))
        .collect();
    fastbloom_check(&queries[..NAIVE_KEYS], naive_answers.iter().map(Vec::as_slice), &our_fp, &fastbloom, few)
        .expect("naive-fastbloom answers");
    // ... and every engine that shares our hashing agrees with naive.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut results = BatchResults::new();
    let mut sliced_check = sliced.clone();
    for kernels in Kernels::available() {
        sliced_check.set_kernels(kernels);
        sliced_check.query_batch_hashes(&hashes, &mut results);
        for (h, got) in hashes.iter().zip(results.iter()) {
            naive.query_hash_into(*h, &mut a);
            sliced_check.query_hash_into(*h, &mut b);
            let (mut x, mut y) = (got.to_vec(), b.clone());
            x.sort_unstable();
            y.sort_unstable();
            a.sort_unstable();
            assert!(x == a && y == a, "sliced ({}) disagrees with naive", kernels.backend());
        }
    }
    Setup { name: kind.name(), naive, fastbloom, sliced, hashes }
}

fn queries(c: &mut Criterion) {
    for kind in [WorkloadKind::Paper, WorkloadKind::Full] {
        let mut s = setup(kind);
        let mut group = c.benchmark_group(format!("query/{}-{FILTERS}", s.name));
        group.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500)).sample_size(20);
        group.throughput(Throughput::Elements(KEYS as u64));
        for engine in [EngineKind::SlicedScalar, EngineKind::Sliced] {
            s.sliced.set_kernels(engine.kernels());
            let index = &s.sliced;
            let mut results = BatchResults::new();
            group.bench_with_input(BenchmarkId::new("query_batch", engine.name()), &s.hashes, |bench, hashes| {
                bench.iter(|| {
                    index.query_batch_hashes(black_box(hashes), &mut results);
                    results.total_matches()
                });
            });
            let mut out = Vec::new();
            group.bench_with_input(BenchmarkId::new("query_hash_into", engine.name()), &s.hashes, |bench, hashes| {
                bench.iter(|| engines::single_pass(black_box(hashes), &mut out, |h, o| index.query_hash_into(h, o)));
            });
        }
        group.throughput(Throughput::Elements(NAIVE_KEYS as u64));
        let few = &s.hashes[..NAIVE_KEYS];
        let mut out = Vec::new();
        group.bench_with_input(BenchmarkId::new("naive", "query_hash_into"), few, |bench, hashes| {
            bench.iter(|| engines::single_pass(black_box(hashes), &mut out, |h, o| s.naive.query_hash_into(h, o)));
        });
        group.bench_with_input(BenchmarkId::new("naive-fastbloom", "contains_hash"), few, |bench, hashes| {
            bench.iter(|| {
                engines::single_pass(black_box(hashes), &mut out, |h, o| s.fastbloom.query_hash_into(h.h1, o))
            });
        });
        group.finish();
    }
}

/// Deterministic pseudo-random words with about half the bits set.
fn random_words(n: usize, seed: u64) -> Vec<u64> {
    (0..n as u64).map(|i| bloomslice_bench::workload::splitmix64(seed.wrapping_mul(0x1_0000_0001) ^ i)).collect()
}

fn kernels(c: &mut Criterion) {
    let mut group = c.benchmark_group("kernels");
    group.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500)).sample_size(20);
    // Rows of a 1024- and a 4096-column shard, k = 7, half ones: every chunk
    // survives every row (the `full` workload's case).
    for words in [16usize, 64] {
        let rows: Vec<Vec<u64>> = (0..7).map(|r| random_words(words, r + 1)).collect();
        let runs: Vec<&[u64]> = rows.iter().map(Vec::as_slice).collect();
        let mut out = vec![0u64; words];
        group.throughput(Throughput::Bytes((7 * words * 8) as u64));
        for k in Kernels::available() {
            let id = BenchmarkId::new(format!("and_rows/7x{words}w"), k.backend().name());
            group.bench_function(id, |bench| bench.iter(|| k.and_rows(black_box(&runs), &mut out)));
        }
    }
    // One filter of the benchmark parameters.
    let filter = random_words(params().words(), 99);
    group.throughput(Throughput::Bytes((filter.len() * 8) as u64));
    for k in Kernels::available() {
        let id = BenchmarkId::new(format!("popcount/{}w", filter.len()), k.backend().name());
        group.bench_function(id, |bench| bench.iter(|| k.popcount(black_box(&filter))));
    }
    // Multi-key scoring: 100 keys of k = 7 half-ones rows of a 10 240-column
    // shard into 7 counter planes (every chunk live, no early exit). The
    // counts are checked against the scalar reference once per backend.
    let words = 160;
    let rows: Vec<u64> = (0..64).flat_map(|r| random_words(words, 1000 + r)).collect();
    let keys: Vec<[u32; 7]> = (0..100u32).map(|q| core::array::from_fn(|i| (q * 7 + i as u32 * 13) % 64)).collect();
    let live = [!0u64];
    let mut want = vec![0u64; 7 * words];
    for key in &keys {
        bloomslice::kernels::arch::all::count_runs(
            &rows,
            words,
            key,
            1,
            words,
            &live,
            &mut want,
            &[],
            tuning::look_ahead(),
        );
    }
    group.throughput(Throughput::Bytes((keys.len() * 7 * words * 8) as u64));
    for k in Kernels::available() {
        let mut planes = vec![0u64; 7 * words];
        let pass = |planes: &mut [u64]| {
            planes.fill(0);
            // Eight keys per call, as the engine scores.
            for group in keys.chunks(8) {
                k.count_runs(
                    black_box(&rows),
                    words,
                    group.as_flattened(),
                    group.len(),
                    words,
                    &live,
                    planes,
                    &[],
                    tuning::look_ahead(),
                );
            }
        };
        pass(&mut planes);
        assert_eq!(planes, want, "count_runs ({}) disagrees with the scalar reference", k.backend());
        let id = BenchmarkId::new(format!("count_runs/100x7x{words}w"), k.backend().name());
        group.bench_function(id, |bench| bench.iter(|| pass(&mut planes)));
    }
    group.finish();
}

criterion_group!(benches, queries, kernels);
criterion_main!(benches);

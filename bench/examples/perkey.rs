//! Exploration helper for per-key instruction counts under callgrind: the
//! index of `benches/iai_full.rs` (random half-full filters, `full` shape),
//! queried once for all keys in a function that callgrind can toggle on.
//!
//! ```text
//! cargo build --release -p bloomslice-bench --example perkey
//! valgrind --tool=callgrind --toggle-collect='*perkey::measure*' \
//!     target/release/examples/perkey 1000 avx2 into
//! ```
//!
//! Arguments: filters, backend (`scalar`, `avx2`, `avx512`, `auto`), mode
//! (`into` for `query_into` key by key, `batch` for one `query_batch`),
//! and optionally `SlicedConfig::max_shard_columns` (to measure several
//! shards).

use std::hint::black_box;

use bloomslice::kernels::{Backend, Kernels};
use bloomslice::{BatchResults, SlicedConfig, SlicedIndex};
use bloomslice_bench::workload::{params, random_full_index};

const KEYS: usize = 1000;

/// The output buffers of `query_into` and `query_batch`.
type Buffers = (Vec<u64>, BatchResults);

/// The first pass (not counted): warms the output buffers.
#[inline(never)]
fn warm(index: &SlicedIndex, keys: &[[u8; 8]], batch: bool, buffers: &mut Buffers) -> usize {
    // Distinct from `measure`, so that the linker does not fold the two.
    black_box("warm");
    measure_body(index, keys, batch, buffers)
}

/// The counted pass.
#[inline(never)]
fn measure(index: &SlicedIndex, keys: &[[u8; 8]], batch: bool, buffers: &mut Buffers) -> usize {
    measure_body(index, keys, batch, buffers)
}

#[inline(always)]
fn measure_body(index: &SlicedIndex, keys: &[[u8; 8]], batch: bool, (out, results): &mut Buffers) -> usize {
    if batch {
        index.query_batch(keys, results);
        results.total_matches()
    } else {
        let mut matches = 0;
        for key in keys {
            index.query_into(key, out);
            matches += out.len();
        }
        matches
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let filters: usize = args.get(1).map_or(1000, |a| a.parse().expect("filters"));
    let backend = args.get(2).map_or("auto", String::as_str);
    let batch = args.get(3).is_some_and(|m| m == "batch");
    let config = match args.get(4) {
        Some(cols) => {
            SlicedConfig { max_shard_columns: cols.parse().expect("shard columns"), ..SlicedConfig::default() }
        }
        None => SlicedConfig::default(),
    };
    let p = params();
    let (mut index, built, _, keys) = random_full_index(filters, KEYS, 11, config);
    if backend != "auto" {
        index.set_kernels(Kernels::for_backend(Backend::from_name(backend).expect("backend")).expect("available"));
    }
    let mut buffers = (Vec::with_capacity(filters), BatchResults::new());
    // Warm the buffers, then check the answers.
    let expect = warm(&index, &keys, batch, &mut buffers);
    let mut total = 0;
    for key in &keys {
        let h = p.hash(key);
        total += built.iter().filter(|f| f.contains_hash(h)).count();
    }
    assert_eq!(expect, total, "wrong answers");
    let got = measure(black_box(&index), black_box(&keys), batch, &mut buffers);
    println!(
        "{} filters, {} kernels, {}: {got} matches",
        filters,
        index.kernels().backend(),
        if batch { "batch" } else { "into" }
    );
}

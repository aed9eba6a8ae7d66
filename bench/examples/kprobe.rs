//! Exploration helper for the scoring kernel alone (`Kernels::count_runs`):
//! random rows (bit density 0.5, as a full filter's), queries of random
//! positions, no hashing and no engine. With few rows (`ROWS` 1 000 at
//! 16 words a row: 128 KB) every run is in the second-level cache and the
//! figure is the kernel's own cost per key; with `ROWS` 100 992 (a `full`
//! filter's m) the runs come from the third-level cache or memory.
//!
//! ```text
//! cargo build --release -p bloomslice-bench --example kprobe
//! target/release/examples/kprobe avx512 1000 7 100 1 16
//! ```
//!
//! Arguments: backend (`scalar`, `avx2`, `avx512`, `portable`), rows, hashes
//! per key, keys per call, look-ahead (`1`: each call prefetches the next
//! call's first eight keys, as the engine does; `0`: none), words per row
//! (a multiple of 8 up to 512; 16 is `N = 1 000`, 160 is `N = 10 240`).
//! The first call of every query is checked against the scalar kernel
//! before anything is timed.

use std::hint::black_box;
use std::time::Instant;

use bloomslice::kernels::{Backend, Kernels};
use bloomslice_bench::tuning;
use bloomslice_bench::workload::splitmix64;

/// Distinct queries the timed loop cycles through.
const QUERIES: usize = 64;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: &str| args.get(i).map_or(default, String::as_str).to_owned();
    let backend = arg(1, "auto");
    let m: usize = arg(2, "1000").parse().expect("rows");
    let k: usize = arg(3, "7").parse().expect("hashes per key");
    let keys: usize = arg(4, "100").parse().expect("keys per call");
    let look_ahead = arg(5, "1") == "1";
    let wpr: usize = arg(6, "16").parse().expect("words per row");
    assert!(m > 0 && k > 0 && keys > 0, "rows, hashes and keys must be positive");
    assert!(wpr > 0 && wpr.is_multiple_of(8) && wpr <= 512, "words per row: a multiple of 8 up to 512");
    let kernels = match backend.as_str() {
        "auto" => Kernels::detect(),
        name => Kernels::for_backend(Backend::from_name(name).expect("backend")).expect("backend available"),
    };
    let scalar = Kernels::for_backend(Backend::Scalar).expect("scalar");

    let mut state = 0x5eed_u64;
    let rows: Vec<u64> = (0..m * wpr)
        .map(|_| {
            state = splitmix64(state);
            state
        })
        .collect();
    let per_query = keys * k;
    let positions: Vec<u32> =
        (0..QUERIES * per_query).map(|i| (splitmix64(i as u64 ^ 0xabcd) % m as u64) as u32).collect();
    let chunks = wpr / 8;
    let live: Vec<u64> = (0..chunks.div_ceil(64))
        .map(|w| if chunks - 64 * w >= 64 { !0 } else { (1u64 << (chunks - 64 * w)) - 1 })
        .collect();
    let n_planes = (usize::BITS - keys.leading_zeros()) as usize;
    let query = |q: usize| &positions[q * per_query..(q + 1) * per_query];
    let ahead = |q: usize| {
        let next = query((q + 1) % QUERIES);
        if look_ahead { &next[..8.min(keys) * k] } else { &next[..0] }
    };

    // Every query's counts against the scalar kernel's.
    let (mut planes, mut want) = (vec![0u64; n_planes * wpr], vec![0u64; n_planes * wpr]);
    for q in 0..QUERIES {
        planes.fill(0);
        want.fill(0);
        kernels.count_runs(&rows, wpr, query(q), keys, wpr, &live, &mut planes, ahead(q), tuning::look_ahead());
        scalar.count_runs(&rows, wpr, query(q), keys, wpr, &live, &mut want, &[], tuning::look_ahead());
        assert_eq!(planes, want, "query {q}: counts differ from the scalar kernel's");
    }

    let calls: usize = std::env::var("KPROBE_CALLS").map_or(2_000, |v| v.parse().expect("KPROBE_CALLS"));
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        for call in 0..calls {
            let q = call % QUERIES;
            planes.fill(0);
            black_box(kernels.count_runs(
                &rows,
                wpr,
                query(q),
                keys,
                wpr,
                &live,
                &mut planes,
                ahead(q),
                tuning::look_ahead(),
            ));
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!(
        "{} kernels, {m} rows of {wpr} words, k = {k}, {keys} keys per call, look-ahead {}: {:.1} ns per key",
        kernels.backend(),
        if look_ahead { "on" } else { "off" },
        best * 1e9 / (calls * keys) as f64
    );
}

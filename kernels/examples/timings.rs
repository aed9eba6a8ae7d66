//! Rough per-call timings of every available backend, for a quick look
//! (the real benchmarks live in `bench/`). Each kernel's answer is checked
//! against the scalar reference before it is timed.
//!
//! ```text
//! cargo run --release -p bloomslice-kernels --example timings
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use bloomslice_kernels::arch::all;
use bloomslice_kernels::{Kernels, LookAhead};
use rand_xoshiro::SplitMix64;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

/// SplitMix64, so the inputs are the same on every run.
fn words(n: usize, seed: u64, density_shift: u32) -> Vec<u64> {
    let mut rng = SplitMix64::seed_from_u64(seed);
    let mut next = move || rng.next_u64();
    (0..n)
        .map(|_| {
            // Each extra AND halves the density; each OR of a fresh word
            // (negative shifts are not needed here) keeps it at one half.
            (0..density_shift).fold(next(), |w, _| w & next())
        })
        .collect()
}

/// Nanoseconds per call of `f`, the best of five runs of ~20 ms each.
fn time(mut f: impl FnMut()) -> f64 {
    let mut calls = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..calls {
            f();
        }
        if start.elapsed() > Duration::from_millis(20) {
            break;
        }
        calls *= 2;
    }
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls {
                f();
            }
            start.elapsed().as_nanos() as f64 / calls as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    // `and_rows`: 7 rows of 160 words (20 lines). Dense rows (each bit set
    // with probability 7/8) keep every line alive to the last row; sparse
    // rows (1/16) let most lines stop after two rows.
    let dense_rows: Vec<Vec<u64>> = (0..7)
        .map(|r| words(160, r, 0).iter().zip(words(160, r + 50, 0)).map(|(a, b)| a | b | (b << 1)).collect())
        .collect();
    let sparse_rows: Vec<Vec<u64>> = (0..7).map(|r| words(160, r + 100, 4)).collect();
    let a = words(1600, 200, 0);
    let b = words(1600, 201, 0);
    let sparse = words(1600, 202, 5);
    // `count_runs`: seven rows of 160 words back to back, dense (7/8).
    let counter_words: Vec<u64> = dense_rows.iter().flatten().copied().collect();

    let kernels = Kernels::available();
    let mut table: Vec<(&str, Vec<f64>)> = Vec::new();
    let mut row = |name: &'static str, mut bench: Box<dyn FnMut(&Kernels) -> f64>| {
        table.push((name, kernels.iter().map(|k| bench(k)).collect()));
    };

    for (name, rows) in [("and_rows 7x160 dense", &dense_rows), ("and_rows 7x160 sparse", &sparse_rows)] {
        let refs: Vec<&[u64]> = rows.iter().map(Vec::as_slice).collect();
        let mut want = vec![0; 160];
        all::and_rows(&refs, &mut want);
        row(
            name,
            Box::new(move |k| {
                let mut out = vec![0; 160];
                k.and_rows(&refs, &mut out);
                assert_eq!(out, want, "{}", k.backend());
                time(|| {
                    black_box(k.and_rows(black_box(&refs), black_box(&mut out)));
                })
            }),
        );
    }
    let (a2, b2) = (a.clone(), b.clone());
    row(
        "popcount 1600",
        Box::new(move |k| {
            assert_eq!(k.popcount(&a2), all::popcount(&a2));
            time(|| {
                black_box(k.popcount(black_box(&a2)));
            })
        }),
    );
    let a3 = a.clone();
    row(
        "and_popcount 1600",
        Box::new(move |k| {
            assert_eq!(k.and_popcount(&a3, &b2), all::and_popcount(&a3, &b2));
            time(|| {
                black_box(k.and_popcount(black_box(&a3), black_box(&b2)));
            })
        }),
    );
    let (a4, s4) = (a.clone(), sparse.clone());
    row(
        "or_into 1600",
        Box::new(move |k| {
            let mut dst = s4.clone();
            let mut want = s4.clone();
            assert_eq!(k.or_into(&mut dst, &a4), all::or_into(&mut want, &a4));
            time(|| {
                dst.copy_from_slice(&s4);
                black_box(k.or_into(black_box(&mut dst), black_box(&a4)));
            })
        }),
    );
    let very_sparse = words(1600, 204, 11);
    for (name, input) in
        [("append_mapped_bits 1600 (1/32)", sparse.clone()), ("append_mapped_bits 1600 (1/2048)", very_sparse)]
    {
        let s5 = input;
        let ones = vec![u64::MAX; s5.len()];
        let table: Vec<u64> = (0..64 * s5.len() as u64).map(|c| c * 3 + 1).collect();
        row(
            name,
            Box::new(move |k| {
                let mut out = Vec::with_capacity(4096);
                k.append_mapped_bits(&s5, &ones, &table, &mut out);
                let mut want = Vec::new();
                all::append_mapped_bits(&s5, &ones, &table, &mut want);
                assert_eq!(out, want);
                time(|| {
                    out.clear();
                    k.append_mapped_bits(black_box(&s5), &ones, &table, &mut out);
                    black_box(&out);
                })
            }),
        );
    }
    row(
        "count_runs 7x160w 8 planes (7/8)",
        Box::new(move |k| {
            let width = 160;
            let mut planes = vec![0u64; 8 * width];
            let live = [!0u64; 1];
            time(|| {
                black_box(k.count_runs(
                    black_box(&counter_words),
                    width,
                    &[0, 1, 2, 3, 4, 5, 6],
                    1,
                    width,
                    &live,
                    &mut planes,
                    &[],
                    LookAhead::default(),
                ));
            })
        }),
    );
    print!("{:<30}", "ns per call");
    for k in &kernels {
        print!("{:>12}", k.backend().name());
    }
    println!();
    for (name, ns) in table {
        print!("{name:<30}");
        for t in ns {
            print!("{t:>12.1}");
        }
        println!();
    }
}

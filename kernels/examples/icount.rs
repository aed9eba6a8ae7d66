//! One kernel of one backend called `reps` times on a fixed, representative
//! input, for counting the instructions it executes under an emulator
//! (`kernels/examples/icount_aarch64.sh` runs it under `qemu-aarch64` and
//! counts those executed inside the kernel's entry point; the figures are in
//! `bench/RESULTS.md`, section "Kernels"). Prints the address of `main`, so
//! the script can place the binary's symbols in memory, and a checksum of
//! the answers, which it compares across backends.
//!
//! ```text
//! icount <backend> <kernel> <reps>
//! ```
//!
//! Kernels and inputs (rows of a shard at a Bloom filter's usual fill, each
//! bit set with probability 1/2, so the AND of seven runs keeps about four
//! bits a line and no line exits early):
//!
//! - `and_runs`: 7 runs of 4 lines (32 words) each, at 7 positions of a
//!   shard of 64 rows: a query key's AND.
//! - `append_mapped_bits`: 64 words (one group) holding about one set bit
//!   in every two words, mask of ones, identity table: a query's answer.
//! - `count_runs`: 3 keys of 7 runs over 8 lines (64 words) into 4
//!   counter planes, every chunk live: a scoring group.
//! - `popcount`: 64 lines (512 words) of random bits.

use std::hint::black_box;

use bloomslice_kernels::{Backend, Kernels, LookAhead};
use rand_xoshiro::SplitMix64;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

/// Rows of a shard: `rows` rows of `stride` words, every bit set with
/// probability 1/2 (SplitMix64, so the inputs are the same on every run
/// and backend).
fn shard(rows: usize, stride: usize, rng: &mut SplitMix64) -> Vec<u64> {
    (0..rows * stride).map(|_| rng.next_u64()).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, backend, kernel, reps] = &args[..] else {
        eprintln!("usage: icount <backend> <kernel> <reps>");
        std::process::exit(2);
    };
    let backend = Backend::from_name(backend).expect("a backend name");
    let k = Kernels::for_backend(backend).expect("a backend this CPU runs");
    let reps: usize = reps.parse().expect("a number of calls");
    println!("main {:#x}", main as fn() as usize);
    let mut rng = SplitMix64::seed_from_u64(7);
    let mut check = 0u64;
    match kernel.as_str() {
        "and_runs" => {
            let stride = 32;
            let rows = shard(64, stride, &mut rng);
            let positions: [u32; 7] = [3, 17, 22, 40, 41, 58, 63];
            let mut out = vec![0u64; 32];
            for _ in 0..reps {
                let any = k.and_runs(black_box(&rows), stride, black_box(&positions), &mut out);
                check = check.wrapping_mul(31).wrapping_add(u64::from(any) + out.iter().fold(0, |a, &w| a ^ w));
            }
        }
        "append_mapped_bits" => {
            // The AND of seven random words: each bit set with probability
            // 1/128, about one bit in every two words.
            let words: Vec<u64> = (0..64).map(|_| (0..7).fold(!0, |w, _| w & rng.next_u64())).collect();
            let mask = vec![!0u64; 64];
            let table: Vec<u64> = (0..64 * 64).collect();
            let mut out = Vec::with_capacity(64 * 64);
            for _ in 0..reps {
                out.clear();
                k.append_mapped_bits(black_box(&words), black_box(&mask), &table, &mut out);
                check = check.wrapping_mul(31).wrapping_add(out.iter().fold(out.len() as u64, |a, &w| a ^ w));
            }
        }
        "count_runs" => {
            let width = 64;
            let rows = shard(64, width, &mut rng);
            let positions: [u32; 21] = [1, 5, 9, 14, 20, 33, 60, 2, 8, 13, 21, 34, 47, 55, 0, 7, 19, 28, 36, 44, 62];
            let live = [!0u64];
            let mut planes = vec![0u64; 4 * width];
            for _ in 0..reps {
                let any = k.count_runs(
                    black_box(&rows),
                    width,
                    black_box(&positions),
                    3,
                    width,
                    &live,
                    &mut planes,
                    &[],
                    LookAhead::default(),
                );
                check = check.wrapping_mul(31).wrapping_add(u64::from(any));
            }
            check ^= planes.iter().fold(0u64, |a, &w| a.wrapping_mul(3) ^ w);
        }
        "popcount" => {
            let words: Vec<u64> = (0..512).map(|_| rng.next_u64()).collect();
            for _ in 0..reps {
                check = check.wrapping_mul(31).wrapping_add(k.popcount(black_box(&words)));
            }
        }
        other => panic!("unknown kernel {other}"),
    }
    println!("check {check:#x}");
}

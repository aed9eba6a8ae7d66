//! SplitMix64 (`rand_xoshiro`) with the draws the sequence tests need, so
//! test failures reproduce and generated data is the same on every run.
//! Shared by the sequence tests and the `seqs_bench` example (`#[path]`).

use rand_xoshiro::SplitMix64;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

/// The generator.
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator whose state starts at `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::seed_from_u64(seed))
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }

    /// A number in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

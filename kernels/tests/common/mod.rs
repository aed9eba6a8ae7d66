//! Shared helpers for the backend tests: deterministic patterns and padded,
//! 64-byte-aligned arenas so every start offset inside a cache line can be
//! tested and writes outside the slice are caught.

#![allow(dead_code)] // each test binary uses a different subset

use bloomslice_kernels::Kernels;
use proptest::prelude::*;
use rand_xoshiro::SplitMix64;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

/// Guard words placed on both sides of every slice under test.
pub const PAD: usize = 16;
/// The value of guard words; a kernel that writes outside its slice
/// changes them.
pub const GUARD: u64 = 0xdead_beef_cafe_f00d;

/// SplitMix64 (`rand_xoshiro`): tiny, deterministic, good enough for patterns.
#[derive(Clone, Debug)]
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator whose state starts at `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::seed_from_u64(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `kernels`, or `None` after printing "skipped" when the CPU cannot run
/// the backend `name`; panics instead if `BLOOMSLICE_REQUIRE_BACKENDS`
/// names it, so CI on a machine with the backend cannot silently skip it.
pub fn backend_or_skip(name: &str, kernels: Option<&'static Kernels>) -> Option<&'static Kernels> {
    if kernels.is_none() {
        assert!(
            !bloomslice_kernels::dispatch::backend_required(name),
            "{name} is required by BLOOMSLICE_REQUIRE_BACKENDS but not available on this CPU"
        );
        println!("skipped: {name} is not available on this CPU");
    }
    kernels
}

/// The kinds of word patterns the exhaustive tests sweep.
#[derive(Clone, Copy, Debug)]
pub enum Pattern {
    /// Uniform random bits.
    Random,
    /// Every bit set.
    Ones,
    /// Every bit clear.
    Zeros,
    /// About one bit in sixteen.
    Sparse,
    /// Mostly zero words with an occasional single bit.
    VerySparse,
    /// Random words with whole 8-word chunks zeroed (early exit, skipping).
    ZeroChunks,
}

impl Pattern {
    /// Every pattern.
    pub const ALL: [Pattern; 6] =
        [Pattern::Random, Pattern::Ones, Pattern::Zeros, Pattern::Sparse, Pattern::VerySparse, Pattern::ZeroChunks];

    /// `len` words of this pattern.
    pub fn words(self, len: usize, rng: &mut Rng) -> Vec<u64> {
        (0..len)
            .map(|i| match self {
                Pattern::Random => rng.next_u64(),
                Pattern::Ones => !0,
                Pattern::Zeros => 0,
                Pattern::Sparse => rng.next_u64() & rng.next_u64() & rng.next_u64() & rng.next_u64(),
                Pattern::VerySparse => {
                    if rng.below(5) == 0 {
                        1 << rng.below(64)
                    } else {
                        0
                    }
                }
                Pattern::ZeroChunks => {
                    let w = rng.next_u64();
                    if (i / 8 + (w as usize & 1)).is_multiple_of(3) { 0 } else { w }
                }
            })
            .collect()
    }
}

/// Words laid out in a buffer whose element `PAD` is 64-byte aligned, with
/// at least `PAD` guard words before and after the data.
pub struct Arena {
    buf: Vec<u64>,
    base: usize,
    len: usize,
}

impl Arena {
    /// An arena holding `data` starting `offset` words after a 64-byte
    /// boundary.
    pub fn new(data: &[u64], offset: usize) -> Arena {
        let mut buf = vec![GUARD; data.len() + offset + 2 * PAD + 8];
        let align = buf.as_ptr().align_offset(64);
        assert!(align < 8, "u64 buffers are at least 8-byte aligned");
        let base = align + PAD + offset;
        buf[base..base + data.len()].copy_from_slice(data);
        Arena { buf, base, len: data.len() }
    }

    /// The data.
    pub fn words(&self) -> &[u64] {
        &self.buf[self.base..self.base + self.len]
    }

    /// The data, mutably.
    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.buf[self.base..self.base + self.len]
    }

    /// The first `len` words of the data.
    pub fn prefix(&self, len: usize) -> &[u64] {
        &self.words()[..len]
    }

    /// Panics if any word outside the data changed.
    pub fn check_guards(&self) {
        let (before, rest) = self.buf.split_at(self.base);
        let after = &rest[self.len..];
        assert!(before.iter().chain(after).all(|&w| w == GUARD), "write outside the slice");
    }
}

/// Proptest words biased towards the interesting cases: zero, all ones,
/// one bit.
pub fn word() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => any::<u64>(),
        3 => Just(0u64),
        1 => Just(!0u64),
        2 => (0..64u32).prop_map(|b| 1u64 << b),
    ]
}

/// Instantiates `$tests!(name, table)` once for every SIMD backend, each
/// table taken directly from its backend module (`None` where this CPU or
/// target cannot run it), not through dispatch.
#[allow(unused_macros, reason = "each test binary uses a different subset")]
macro_rules! for_each_simd_backend {
    ($tests:ident) => {
        $tests!(portable, Some(bloomslice_kernels::arch::portable::kernels()));
        #[cfg(target_arch = "x86_64")]
        $tests!(avx2, bloomslice_kernels::arch::x86_64::avx2::kernels());
        #[cfg(target_arch = "x86_64")]
        $tests!(avx512, bloomslice_kernels::arch::x86_64::avx512::kernels());
        #[cfg(target_arch = "aarch64")]
        $tests!(neon, bloomslice_kernels::Kernels::for_backend(bloomslice_kernels::Backend::Neon));
    };
}

//! Kernel backends, one module per instruction set (the memchr shape).
//!
//! - [`all`]: the scalar reference of record, plain and portable.
//! - `generic`: the SIMD algorithms written once over a 512-bit line
//!   trait, instantiated by each SIMD backend below (crate-private).
//! - [`portable`]: those algorithms over `wide` vectors (SSE2 on x86-64,
//!   NEON on aarch64, chosen at compile time), always available.
//! - `x86_64::avx2` and `x86_64::avx512`: `core::arch` kernels behind
//!   `#[target_feature]`, reachable only through capability tokens that
//!   exist when the CPU reports the feature.
//! - `aarch64::neon`: `core::arch` NEON kernels, the aarch64 default;
//!   NEON is part of that target's baseline, so its token always exists
//!   there and no run-time check is made.
//!
//! `all` and `generic` hold one concept per file, under the same file
//! names (`and`, `popcount`, `or_into`, `extract`, `count`, `threshold`;
//! `generic` adds `line`, the line trait), so a kernel's reference and its
//! SIMD algorithm sit side by side. A backend holds only its line type
//! and the glue that instantiates the algorithms with it: for
//! `aarch64::neon`, a line of four `uint64x2_t` implementing the line
//! trait, entry points that instantiate `generic` with it (generated from
//! the list of kernel signatures, as `x86_64`'s `x86_backend!` macro
//! does), and a [`crate::Backend`] with its table in [`crate::dispatch`].

/// In a backend's unit tests: its capability token's own methods
/// (`popcount`, the AND/OR/XOR popcounts and `and_rows`) agree with the
/// scalar reference on one irregular input.
#[cfg(test)]
macro_rules! token_matches_reference {
    ($token:expr) => {{
        let token = $token;
        let a: Vec<u64> = (0..77u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        let b: Vec<u64> = (0..77u64).map(|i| (i * 31) ^ (i << 40)).collect();
        assert_eq!(token.popcount(&a), crate::arch::all::popcount(&a));
        assert_eq!(token.and_popcount(&a, &b), crate::arch::all::and_popcount(&a, &b));
        assert_eq!(token.or_popcount(&a, &b), crate::arch::all::or_popcount(&a, &b));
        assert_eq!(token.xor_popcount(&a, &b), crate::arch::all::xor_popcount(&a, &b));
        let (mut out, mut expected) = (vec![0; 77], vec![0; 77]);
        assert_eq!(token.and_rows(&[&a, &b], &mut out), crate::arch::all::and_rows(&[&a, &b], &mut expected));
        assert_eq!(out, expected);
    }};
}

#[cfg(target_arch = "aarch64")]
pub mod aarch64;
pub mod all;
pub(crate) mod generic;
pub mod portable;
#[cfg(target_arch = "x86_64")]
pub mod x86_64;

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

pub mod all;
pub(crate) mod generic;
pub mod portable;
#[cfg(target_arch = "x86_64")]
pub mod x86_64;

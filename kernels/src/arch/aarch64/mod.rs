//! aarch64 backends: [`neon`]. NEON (Advanced SIMD) is part of the
//! aarch64 baseline (every `aarch64-unknown-linux-gnu` CPU has it), so the
//! backend is compiled whenever the target enables the `neon` feature,
//! which it does by default, and needs no run-time feature check. It is
//! reached through its capability token ([`neon::Neon`]) or its
//! `kernels()` table, as the x86-64 backends are.

#[cfg(target_feature = "neon")]
pub mod neon;

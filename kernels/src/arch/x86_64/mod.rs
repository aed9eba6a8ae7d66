//! x86-64 backends behind runtime feature detection: [`avx2`] and
//! [`avx512`] (the latter unverified on hardware). Each is reached only
//! through its capability token ([`avx2::Avx2`], [`avx512::Avx512`]) or
//! its `kernels()` table, both of which exist only on a CPU with the
//! features.

pub mod avx2;
pub mod avx512;

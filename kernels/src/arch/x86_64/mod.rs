//! x86-64 backends behind runtime feature detection.

pub mod avx2;
pub mod avx512;

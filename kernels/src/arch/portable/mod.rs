//! Portable SIMD kernels written with `wide` (compile-time width).
//!
//! Placeholder: the scalar reference until the `wide` kernels land.

use crate::dispatch::{Backend, Kernels, SCALAR_TABLE};

static PORTABLE: Kernels = Kernels { backend: Backend::Portable, ..SCALAR_TABLE };

/// The portable table (always available).
pub fn kernels() -> &'static Kernels {
    &PORTABLE
}

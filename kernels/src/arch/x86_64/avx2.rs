//! AVX2 kernels. Placeholder: not yet available.

use crate::dispatch::Kernels;

/// The AVX2 table, when the CPU has AVX2.
pub fn kernels() -> Option<&'static Kernels> {
    None
}

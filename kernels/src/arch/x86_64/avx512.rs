//! AVX-512 kernels. Placeholder: not yet available.

use crate::dispatch::Kernels;

/// The AVX-512 table, when the CPU has AVX-512.
pub fn kernels() -> Option<&'static Kernels> {
    None
}

//! Runtime dispatch: pick the best backend once, then call through a table.
//!
//! [`Kernels::detect`] reads `BLOOMSLICE_KERNELS` and the CPU's features the
//! first time it is called and caches the chosen table in a `OnceLock`; every
//! later call returns the same `&'static Kernels`. Hot loops take the table
//! once and call its function pointers, so no per-word feature test exists.

use std::sync::OnceLock;

use crate::table::SCALAR;
pub use crate::table::{Backend, Kernels, backend_required};

impl Kernels {
    /// The table for `backend`, or `None` when this CPU (or this target)
    /// cannot run it.
    pub fn for_backend(backend: Backend) -> Option<&'static Kernels> {
        match backend {
            Backend::Scalar => Some(&SCALAR),
            Backend::Portable => Some(crate::arch::portable::kernels()),
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2 => crate::arch::x86_64::avx2::kernels(),
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512 => crate::arch::x86_64::avx512::kernels(),
            #[cfg(not(target_arch = "x86_64"))]
            Backend::Avx2 | Backend::Avx512 => None,
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            Backend::Neon => crate::arch::aarch64::neon::kernels(),
            #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
            Backend::Neon => None,
        }
    }

    /// Every backend this CPU can run, the scalar one first.
    pub fn available() -> Vec<&'static Kernels> {
        Backend::ALL.into_iter().filter_map(Kernels::for_backend).collect()
    }

    /// The best table for this CPU, honouring `BLOOMSLICE_KERNELS`.
    ///
    /// Decided once per process. If the variable names a backend this CPU
    /// cannot run, the best available backend ranked before it in
    /// [`Backend::ALL`] is used (for example `avx512` on an AVX2 machine
    /// gives AVX2). On aarch64 the default is NEON.
    pub fn detect() -> &'static Kernels {
        static CHOSEN: OnceLock<&'static Kernels> = OnceLock::new();
        CHOSEN.get_or_init(|| {
            let wanted = std::env::var("BLOOMSLICE_KERNELS")
                .ok()
                .and_then(|v| Backend::from_name(&v))
                .unwrap_or(Backend::ALL[Backend::ALL.len() - 1]);
            Backend::ALL
                .into_iter()
                .rev()
                .filter(|b| (*b as usize) <= (wanted as usize))
                .find_map(Kernels::for_backend)
                .unwrap_or(&SCALAR)
        })
    }
}

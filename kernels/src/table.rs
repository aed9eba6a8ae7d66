//! The kernel table: the [`Backend`] tiers and [`Kernels`], one function
//! pointer per kernel of `with_kernel_signatures`, with the scalar table
//! that is always there. The backends (`crate::arch`) build their tables
//! from it; choosing one at run time is [`crate::dispatch`]'s.

/// Whether `BLOOMSLICE_REQUIRE_BACKENDS` (a comma-separated list of backend
/// names, for example `avx512,avx2`) names `backend`. A test of a backend
/// the CPU lacks prints "skipped" and passes, unless the backend is
/// required: then it fails. CI sets the variable from the CPU's flags, so a
/// machine with AVX-512 can never silently skip the AVX-512 tests.
pub fn backend_required(backend: &str) -> bool {
    std::env::var("BLOOMSLICE_REQUIRE_BACKENDS")
        .is_ok_and(|list| list.split(',').any(|name| name.trim().eq_ignore_ascii_case(backend)))
}

/// The instruction-set tier a [`Kernels`] table was built for.
/// `#[non_exhaustive]`: a new tier (SVE, for example) is not a breaking
/// change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Plain `u64` code, the reference of record ([`crate::arch::all`]).
    Scalar,
    /// `wide` vectors, selected at compile time (SSE2 on x86-64, NEON on aarch64).
    Portable,
    /// NEON `core::arch` kernels, on aarch64 (part of its baseline, so
    /// always available there and never elsewhere).
    Neon,
    /// AVX2 `core::arch` kernels, chosen only when the CPU reports AVX2.
    Avx2,
    /// AVX-512 kernels (F + BW + CD + VPOPCNTDQ, with BMI2), chosen only
    /// when the CPU reports them.
    Avx512,
}

impl Backend {
    /// Every backend, in the order [`Kernels::detect`] ranks them: it
    /// takes the last one this CPU can run, and a backend named in
    /// `BLOOMSLICE_KERNELS` rules out those after it. A target runs at most
    /// one of the `core::arch` tiers' families (NEON on aarch64, AVX2 and
    /// AVX-512 on x86-64), so their relative order across families only
    /// decides what a name from the other family means: `neon` on x86-64
    /// gives the portable tier, `avx2` or `avx512` on aarch64 gives NEON.
    pub const ALL: [Backend; 5] = [Backend::Scalar, Backend::Portable, Backend::Neon, Backend::Avx2, Backend::Avx512];

    /// The lowercase name used by `BLOOMSLICE_KERNELS` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Scalar => "scalar",
            Backend::Portable => "portable",
            Backend::Neon => "neon",
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
        }
    }

    /// Parses a name as accepted by `BLOOMSLICE_KERNELS` (`auto` is not a backend).
    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name().eq_ignore_ascii_case(name.trim()))
    }
}

impl core::fmt::Display for Backend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Generates [`Kernels`] (one function pointer and one method per kernel)
/// and the scalar table from the list in `with_kernel_signatures`.
macro_rules! kernel_table {
    ({} $($name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {
        /// A table of kernels for one backend. Every method has the contract of
        /// the scalar function of the same name in [`crate::arch::all`].
        ///
        /// A table for a SIMD backend can only be obtained when the running CPU has
        /// the features it needs ([`Kernels::for_backend`] returns `None` otherwise),
        /// which is what makes its function pointers safe to call. The pointers are
        /// private, behind one method per kernel, so adding a kernel or a backend is
        /// not a breaking change.
        #[derive(Clone, Copy, Debug)]
        pub struct Kernels {
            pub(crate) backend: Backend,
            $(pub(crate) $name: fn($($ty),*) $(-> $ret)?,)*
        }

        /// The scalar table, always available.
        pub(crate) static SCALAR: Kernels = Kernels {
            backend: Backend::Scalar,
            $($name: crate::arch::all::$name,)*
        };

        impl Kernels {
            $(
                #[doc = concat!("See [`crate::arch::all::", stringify!($name), "`].")]
                #[allow(clippy::too_many_arguments, reason = "the kernel's own arguments, plus the receiver")]
                #[inline]
                pub fn $name(&self, $($arg: $ty),*) $(-> $ret)? {
                    (self.$name)($($arg),*)
                }
            )*
        }
    };
}

with_kernel_signatures! { kernel_table! {} }

impl Kernels {
    /// The backend these kernels run on.
    #[inline]
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The scalar reference table.
    pub fn scalar() -> &'static Kernels {
        &SCALAR
    }
}

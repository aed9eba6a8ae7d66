//! x86-64 backends behind runtime feature detection: [`avx2`] and
//! [`avx512`]. Each is reached only through its capability token
//! ([`avx2::Avx2`], [`avx512::Avx512`]) or its `kernels()` table, both of
//! which exist only on a CPU with the features.

/// Generates the parts of an x86-64 backend that differ only in names: the
/// token's kernel methods, the safe `#[target_feature]` entry points that
/// instantiate `arch::generic` with the backend's line type, the kernel
/// table, `kernels()`, the token's constructors (`new` checks every feature
/// in `detect`, which must be those of `features`), the table's token and a
/// test of the token's methods. Each backend module keeps what is its own:
/// the token type, the line type, docs and tests.
macro_rules! x86_backend {
    (
        token: $token:ident,
        line: $line:ty,
        features: $features:literal,
        detect: [$($feature:tt),+],
        backend: $backend:expr,
        table: $table:ident $(,)?
    ) => {
        impl $token {
            #[doc = concat!("Returns the token if this CPU reports ", $("`", $feature, "` ",)+ "(the features `", $features, "`).")]
            ///
            /// The check is cached by the standard library, so this is cheap,
            /// but hot loops should still keep the token (or a [`Kernels`]
            /// table).
            #[inline]
            pub fn new() -> Option<$token> {
                if $(is_x86_feature_detected!($feature))&&+ {
                    Some($token { _private: () })
                } else {
                    None
                }
            }

            /// Returns the token without checking the CPU.
            ///
            /// # Safety
            ///
            #[doc = concat!("The running CPU must support `", $features, "`.")]
            #[inline]
            pub unsafe fn new_unchecked() -> $token {
                $token { _private: () }
            }
        }

        with_kernel_signatures! { x86_kernels! { $token, $line, $features, $backend, $table } }

        /// The backend's table, when the CPU has its features (see the
        /// token's `new`).
        pub fn kernels() -> Option<&'static Kernels> {
            $token::new().map(|_| &$table)
        }

        /// The token for the table entries.
        #[inline(always)]
        fn detected() -> $token {
            // SAFETY: only called from the table, which is reachable only
            // through `kernels()`, which returns it only when the token's
            // `new()` is `Some`.
            unsafe { $token::new_unchecked() }
        }

        #[cfg(test)]
        mod token_tests {
            use super::*;

            #[test]
            fn token_methods_match_the_reference() {
                assert_eq!([$($feature),+].join(","), $features, "`detect` must list the features compiled in");
                let name = $backend.name();
                let Some(token) = $token::new() else {
                    assert!(!crate::table::backend_required(name), "{name} is required but this CPU lacks it");
                    println!("skipped: this CPU cannot run {name}");
                    return;
                };
                token_matches_reference!(token);
            }
        }
    };
}

/// The per-kernel part of [`x86_backend`], over the list of kernel
/// signatures.
macro_rules! x86_kernels {
    (
        { $token:ident, $line:ty, $features:literal, $backend:expr, $table:ident }
        $($name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*
    ) => {
        impl $token {
            $(
                #[doc = concat!("See [`crate::arch::all::", stringify!($name), "`].")]
                #[allow(clippy::too_many_arguments, reason = "the kernel's own arguments, plus the receiver")]
                #[inline]
                pub fn $name(self, $($arg: $ty),*) $(-> $ret)? {
                    // SAFETY: the token proves the CPU has the entry point's features.
                    unsafe { entry::$name($($arg),*) }
                }
            )*
        }

        /// Every entry re-enters through a token. The table is only handed
        /// out by [`kernels`] after the token's `new` succeeded, which is
        /// what makes these plain, safe `fn` pointers sound.
        static $table: Kernels = Kernels {
            backend: $backend,
            $($name: |$($arg),*| detected().$name($($arg),*),)*
        };

        /// The entry points: safe `#[target_feature]` functions (Rust
        /// 1.86); calling one from code not compiled with the same features
        /// is `unsafe`, which the token methods discharge.
        mod entry {
            use super::*;
            use crate::arch::generic;

            $(
                #[target_feature(enable = $features)]
                #[allow(clippy::too_many_arguments, reason = "the kernel's own signature (`count_runs` has nine)")]
                pub(super) fn $name($($arg: $ty),*) $(-> $ret)? {
                    // SAFETY: compiled with, and only run with, the features.
                    unsafe { generic::$name::<$line>($($arg),*) }
                }
            )*
        }
    };
}

pub mod avx2;
pub mod avx512;

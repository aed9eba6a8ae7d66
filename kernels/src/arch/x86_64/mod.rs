//! x86-64 backends behind runtime feature detection: [`avx2`] and
//! [`avx512`] (verified on AMD Zen 4: see its module docs). Each is reached only
//! through its capability token ([`avx2::Avx2`], [`avx512::Avx512`]) or
//! its `kernels()` table, both of which exist only on a CPU with the
//! features.

/// Generates the parts of an x86-64 backend that differ only in names: the
/// token's kernel methods, the safe `#[target_feature]` entry points that
/// instantiate `arch::generic` with the backend's line type, the kernel
/// table, `kernels()` and the table's token. Each backend module keeps what
/// is its own: the token type and its detection, the line type, docs and
/// tests.
macro_rules! x86_backend {
    (
        token: $token:ident,
        line: $line:ty,
        features: $features:literal,
        backend: $backend:expr,
        table: $table:ident $(,)?
    ) => {
        impl $token {
            /// See [`crate::arch::all::and_rows`].
            #[inline]
            pub fn and_rows(self, rows: &[&[u64]], out: &mut [u64]) -> bool {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::and_rows(rows, out) }
            }

            /// See [`crate::arch::all::and_runs`].
            #[inline]
            pub fn and_runs(self, rows: &[u64], stride: usize, positions: &[u32], out: &mut [u64]) -> bool {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::and_runs(rows, stride, positions, out) }
            }

            /// See [`crate::arch::all::append_set_bits`].
            #[inline]
            pub fn append_set_bits(self, words: &[u64], offset: u64, out: &mut Vec<u64>) {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::append_set_bits(words, offset, out) }
            }

            /// See [`crate::arch::all::or_into`].
            #[inline]
            pub fn or_into(self, dst: &mut [u64], src: &[u64]) -> u64 {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::or_into(dst, src) }
            }

            /// See [`crate::arch::all::popcount`].
            #[inline]
            pub fn popcount(self, words: &[u64]) -> u64 {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::popcount(words) }
            }

            /// See [`crate::arch::all::and_popcount`].
            #[inline]
            pub fn and_popcount(self, a: &[u64], b: &[u64]) -> u64 {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::and_popcount(a, b) }
            }

            /// See [`crate::arch::all::or_popcount`].
            #[inline]
            pub fn or_popcount(self, a: &[u64], b: &[u64]) -> u64 {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::or_popcount(a, b) }
            }

            /// See [`crate::arch::all::xor_popcount`].
            #[inline]
            pub fn xor_popcount(self, a: &[u64], b: &[u64]) -> u64 {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::xor_popcount(a, b) }
            }

            /// See [`crate::arch::all::count_runs`].
            #[inline]
            pub fn count_runs(
                self,
                rows: &[u64],
                stride: usize,
                positions: &[u32],
                width: usize,
                live: &[u64],
                planes: &mut [u64],
            ) -> usize {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::count_runs(rows, stride, positions, width, live, planes) }
            }

            /// See [`crate::arch::all::count_at_least`].
            #[inline]
            pub fn count_at_least(self, planes: &[u64], threshold: u32, out: &mut [u64]) -> bool {
                // SAFETY: the token proves the CPU has the entry point's features.
                unsafe { entry::count_at_least(planes, threshold, out) }
            }
        }

        /// The backend's table, when the CPU has its features (see the
        /// token's `new`).
        pub fn kernels() -> Option<&'static Kernels> {
            $token::new().map(|_| &$table)
        }

        /// Every entry re-enters through a token. The table is only handed
        /// out by [`kernels`] after the token's `new` succeeded, which is
        /// what makes these plain, safe `fn` pointers sound.
        static $table: Kernels = Kernels {
            backend: $backend,
            and_rows: |rows, out| detected().and_rows(rows, out),
            and_runs: |rows, stride, positions, out| detected().and_runs(rows, stride, positions, out),
            append_set_bits: |words, offset, out| detected().append_set_bits(words, offset, out),
            or_into: |dst, src| detected().or_into(dst, src),
            popcount: |words| detected().popcount(words),
            and_popcount: |a, b| detected().and_popcount(a, b),
            or_popcount: |a, b| detected().or_popcount(a, b),
            xor_popcount: |a, b| detected().xor_popcount(a, b),
            count_runs: |rows, stride, positions, width, live, planes| {
                detected().count_runs(rows, stride, positions, width, live, planes)
            },
            count_at_least: |planes, threshold, out| detected().count_at_least(planes, threshold, out),
        };

        /// The token for the table entries above.
        #[inline(always)]
        fn detected() -> $token {
            // SAFETY: only called from the table, which is reachable only
            // through `kernels()`, which returns it only when the token's
            // `new()` is `Some`.
            unsafe { $token::new_unchecked() }
        }

        /// The entry points: safe `#[target_feature]` functions (Rust
        /// 1.86); calling one from code not compiled with the same features
        /// is `unsafe`, which the token methods discharge.
        mod entry {
            use super::*;
            use crate::arch::generic;

            #[target_feature(enable = $features)]
            pub(super) fn and_rows(rows: &[&[u64]], out: &mut [u64]) -> bool {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::and_rows::<$line>(rows, out) }
            }

            #[target_feature(enable = $features)]
            pub(super) fn and_runs(rows: &[u64], stride: usize, positions: &[u32], out: &mut [u64]) -> bool {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::and_runs::<$line>(rows, stride, positions, out) }
            }

            #[target_feature(enable = $features)]
            pub(super) fn append_set_bits(words: &[u64], offset: u64, out: &mut Vec<u64>) {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::append_set_bits::<$line>(words, offset, out) }
            }

            #[target_feature(enable = $features)]
            pub(super) fn or_into(dst: &mut [u64], src: &[u64]) -> u64 {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::or_into::<$line>(dst, src) }
            }

            #[target_feature(enable = $features)]
            pub(super) fn popcount(words: &[u64]) -> u64 {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::popcount::<$line>(words) }
            }

            #[target_feature(enable = $features)]
            pub(super) fn and_popcount(a: &[u64], b: &[u64]) -> u64 {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::and_popcount::<$line>(a, b) }
            }

            #[target_feature(enable = $features)]
            pub(super) fn or_popcount(a: &[u64], b: &[u64]) -> u64 {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::or_popcount::<$line>(a, b) }
            }

            #[target_feature(enable = $features)]
            pub(super) fn xor_popcount(a: &[u64], b: &[u64]) -> u64 {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::xor_popcount::<$line>(a, b) }
            }

            #[target_feature(enable = $features)]
            pub(super) fn count_runs(
                rows: &[u64],
                stride: usize,
                positions: &[u32],
                width: usize,
                live: &[u64],
                planes: &mut [u64],
            ) -> usize {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::count_runs::<$line>(rows, stride, positions, width, live, planes) }
            }

            #[target_feature(enable = $features)]
            pub(super) fn count_at_least(planes: &[u64], threshold: u32, out: &mut [u64]) -> bool {
                // SAFETY: compiled with, and only run with, the features.
                unsafe { generic::count_at_least::<$line>(planes, threshold, out) }
            }
        }
    };
}

pub mod avx2;
pub mod avx512;

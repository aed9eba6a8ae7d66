//! The SIMD algorithms, written once over a 512-bit [`Line`] of eight words.
//!
//! Every SIMD backend (AVX2, AVX-512, NEON, portable `wide`) implements
//! [`Line`] with its own registers (two `__m256i`, one `__m512i`, four
//! `uint64x2_t`, one `wide::u64x8`) and instantiates these functions inside
//! functions compiled with its features (`#[target_feature]` on x86-64; on
//! aarch64 NEON is part of the target's baseline). Everything here is `#[inline(always)]` so that the line
//! operations are inlined into a function compiled with the backend's
//! features (the same trick as memchr's `arch/generic`); called from anywhere
//! else they would still be correct but slow.
//!
//! A line is the unit of the engine's layout (one cache line, one 512-bit
//! chunk of [`crate::arch::all::and_rows`]), so the chunked early exit of
//! `and_rows` maps onto one `is_zero` test per line and row. Words past the
//! last full line (fewer than eight) are handled with scalar code that
//! follows the reference exactly.
//!
//! One concept per file, each mirrored by the file of the same name in
//! `arch::all` (the scalar reference), except `line`:
//!
//! - `line`: the [`Line`] trait and the line of all ones.
//! - `and`: the AND of row runs with an early exit ([`and_rows`],
//!   [`and_runs`]), and the per-key run walk that scoring reuses.
//! - `popcount`: [`popcount()`], [`and_popcount`], [`or_popcount`],
//!   [`xor_popcount`], over one Harley-Seal loop.
//! - `or_into`: [`or_into()`], OR with a count of the new bits.
//! - `extract`: [`append_mapped_bits`], the ids of the set bits, and
//!   [`and_runs_mapped`], the AND of a key's runs and its ids in one pass
//!   (its ids through [`Line::append_mapped_lines`], which a backend with
//!   vector bit scans overrides: AVX-512).
//! - `count`: [`count_runs`], keys' ANDs added to bit-sliced counters.
//! - `threshold`: [`count_at_least`], the counters compared with a
//!   threshold.
//!
//! A backend plugs in by implementing [`Line`] for its register type and
//! calling each kernel here with that type from a function compiled with
//! its features: `arch::x86_64`'s `x86_backend!` macro generates those
//! functions, the capability token and the [`crate::Kernels`] table from
//! the list of kernel signatures; `arch::portable` does the same without a
//! token; `arch::aarch64::neon` generates them with its own macro (no
//! `#[target_feature]`, NEON being part of the target's baseline).

mod and;
mod count;
mod extract;
mod line;
mod or_into;
mod popcount;
mod threshold;

pub(crate) use and::{and_rows, and_runs};
pub(crate) use count::count_runs;
pub(crate) use extract::{and_runs_mapped, append_mapped_bits};
// The word walk, for the AVX-512 extraction's fallback.
#[cfg(target_arch = "x86_64")]
pub(crate) use extract::append_lines;
pub(crate) use line::Line;
pub(crate) use or_into::or_into;
pub(crate) use popcount::{and_popcount, or_popcount, popcount, xor_popcount};
pub(crate) use threshold::count_at_least;

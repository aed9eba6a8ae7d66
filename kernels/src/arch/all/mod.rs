//! Scalar reference kernels: the definition of record for every kernel.
//!
//! These are deliberately plain: one `u64` at a time, the same chunking and
//! early-exit rules the SIMD backends follow. Every other backend is tested
//! bit for bit against them.
//!
//! One concept per file, mirrored by the SIMD algorithms of
//! `arch::generic` (files of the same names):
//!
//! - `and`: [`and_rows`] and [`and_runs`], the AND of row runs with an
//!   early exit, and [`and_runs_mapped`], that AND with the ids of its set
//!   bits (one key's query of one shard).
//! - `popcount`: [`popcount()`], [`and_popcount`], [`or_popcount`],
//!   [`xor_popcount`].
//! - `or_into`: [`or_into()`], OR with a count of the new bits.
//! - `extract`: [`append_mapped_bits`] and [`for_each_set_bit`], the set
//!   bits of a slice.
//! - `count`: [`count_runs`], keys' ANDs added to bit-sliced counters.
//! - `threshold`: [`count_at_least`], the counters compared with a
//!   threshold.
//!
//! The crate-private helpers re-exported here (argument checks, the
//! one-chunk scoring step, the look-ahead prefetch) are shared with the
//! SIMD algorithms, so every backend checks its arguments and handles a
//! last, partial line exactly as the reference does.

mod and;
mod count;
mod extract;
mod or_into;
mod popcount;
mod threshold;

pub(crate) use and::{and_of_no_rows, max_position, run_fits};
pub use and::{and_rows, and_runs, and_runs_mapped};
pub use count::count_runs;
pub(crate) use count::{check_count_args, count_chunk, prefetch_chunk};
pub(crate) use extract::check_mapped_bits;
pub use extract::{append_mapped_bits, for_each_set_bit};
pub use or_into::or_into;
pub use popcount::{and_popcount, or_popcount, popcount, xor_popcount};
pub use threshold::count_at_least;
pub(crate) use threshold::{at_least_planes, at_least_word};

//! Bit-level kernels over `u64` words, the inner loops of bloomslice.
//!
//! Every kernel has a scalar reference of record in [`arch::all`]. SIMD
//! backends (AVX2 and AVX-512 on x86-64 and NEON on aarch64 with
//! `core::arch`, a portable tier written with `wide`) must give
//! bit-identical results and are tested against the scalar reference
//! directly, on every length and alignment.
//!
//! The SIMD algorithms are written once, in `arch::generic`, over a
//! 512-bit line type that each backend implements with its own registers.
//! The `core::arch` backends are reached through capability tokens
//! (`arch::x86_64::avx2::Avx2`, `arch::x86_64::avx512::Avx512`,
//! `arch::aarch64::neon::Neon`) that exist only on a CPU with the features
//! (NEON is part of the aarch64 baseline, so its token always exists
//! there).
//!
//! Each kernel's signature is written once, in the private macro
//! `with_kernel_signatures`, from which the dispatch table, the portable
//! backend and the `core::arch` backends' token methods and entry points are
//! generated; a kernel's code lives in its scalar reference and its SIMD
//! algorithm only.
//!
//! Callers normally go through [`Kernels`], a table of function pointers
//! chosen once per process by [`Kernels::detect`] (see [`dispatch`]). The
//! environment variable `BLOOMSLICE_KERNELS` (`scalar`, `portable`, `neon`,
//! `avx2`, `avx512` or `auto`) overrides the choice, so the whole test
//! suite can run with SIMD turned off on a machine that has it.
#![deny(missing_docs)]
#![warn(unsafe_op_in_unsafe_fn)]

/// Calls `$then! { { $ctx } name(arg: Type, ..) -> Ret; .. }` with the
/// signature of every kernel, so the dispatch table, the portable backend
/// and the `core::arch` backends are generated from one list: a kernel's
/// signature is written here and in its two implementations (the scalar
/// reference in `arch::all` and the SIMD algorithm in `arch::generic`),
/// nowhere else.
macro_rules! with_kernel_signatures {
    ($then:ident! { $($ctx:tt)* }) => {
        $then! {
            { $($ctx)* }
            and_rows(rows: &[&[u64]], out: &mut [u64]) -> bool;
            and_runs(rows: &[u64], stride: usize, positions: &[u32], out: &mut [u64]) -> bool;
            append_mapped_bits(words: &[u64], mask: &[u64], table: &[u64], out: &mut Vec<u64>);
            and_runs_mapped(rows: &[u64], stride: usize, positions: &[u32], mask: &[u64], table: &[u64], out: &mut Vec<u64>);
            or_into(dst: &mut [u64], src: &[u64]) -> u64;
            popcount(words: &[u64]) -> u64;
            and_popcount(a: &[u64], b: &[u64]) -> u64;
            or_popcount(a: &[u64], b: &[u64]) -> u64;
            xor_popcount(a: &[u64], b: &[u64]) -> u64;
            count_runs(rows: &[u64], stride: usize, positions: &[u32], keys: usize, width: usize, live: &[u64], planes: &mut [u64], ahead: &[u32], into: crate::LookAhead) -> bool;
            count_at_least(planes: &[u64], threshold: u32, out: &mut [u64]) -> bool;
        }
    };
}

pub mod arch;
pub mod dispatch;
mod table;
#[cfg(feature = "testing")]
pub mod testing;

pub use dispatch::{Backend, Kernels};

/// Number of `u64` words in one 64-byte cache line (and one 512-bit chunk).
pub const WORDS_PER_LINE: usize = 8;

/// Row runs a grouped scoring walk ([`arch::all::count_runs`]) reads side
/// by side, at most, when it sums keys in registers: each key's `k` runs
/// are one stream of lines, and past about 21 streams (3 keys of 7 runs)
/// the walk outruns what the memory system keeps in flight: on long runs
/// groups of 8 keys (56 streams) scored markedly slower than groups of 3
/// or 4 with either backend, and on short runs 3 was no slower than 8
/// (`bench/RESULTS.md`, section "Scoring").
pub const SCORE_STREAMS: usize = 21;

/// Most keys a grouped scoring walk sums in registers: its carry-save sum
/// has at most four digits (it keeps only as many as the group can reach:
/// two for up to 3 keys, three for up to 7).
pub const SCORE_GROUP_MAX: usize = 8;

/// Keys a grouped scoring walk sums at once when each key reads
/// `runs_per_key` runs: [`SCORE_STREAMS`] runs, at least 2 keys (one
/// carry-save pair) and at most [`SCORE_GROUP_MAX`]. Seven runs a key
/// gives 3; a screen of two runs a key, 8.
#[must_use]
pub const fn score_group_keys(runs_per_key: usize) -> usize {
    let keys = SCORE_STREAMS / if runs_per_key == 0 { 1 } else { runs_per_key };
    if keys < 2 {
        2
    } else if keys > SCORE_GROUP_MAX {
        SCORE_GROUP_MAX
    } else {
        keys
    }
}

/// The cache that a scoring walk's look-ahead prefetches fill: the row
/// runs the next kernel call will read ([`arch::all::count_runs`]'s
/// `ahead`), a chunk of each per chunk scored.
///
/// Which is faster depends on the CPU, so the default is chosen by vendor
/// ([`LookAhead::detect`]); a caller passes its choice to every
/// [`count_runs`](arch::all::count_runs) call (the engine keeps it in its
/// index configuration). On the AMD CPU measured, L2 scored
/// short runs faster than L1 (L1 filled with lines not needed yet). On the
/// Intel CPU measured, L1 scored them faster with either SIMD backend, and
/// L2 was no faster on long runs: there an L2 prefetch holds a first-level
/// miss buffer all the same, so it saves nothing and the demand load still
/// misses L1 (`bench/RESULTS.md`, section "Scoring").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LookAhead {
    /// `prefetcht0`: into every cache level, the first included.
    L1,
    /// `prefetcht1`: into the second level (and beyond), not the first.
    L2,
}

impl LookAhead {
    /// The lowercase name of the choice (what [`LookAhead::from_name`] reads).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            LookAhead::L1 => "l1",
            LookAhead::L2 => "l2",
        }
    }

    /// Parses `l1` or `l2` (any case, surrounding spaces ignored).
    #[must_use]
    pub fn from_name(name: &str) -> Option<LookAhead> {
        [LookAhead::L1, LookAhead::L2].into_iter().find(|c| c.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The choice measured faster for this CPU's vendor: [`LookAhead::L1`]
    /// on Intel (`GenuineIntel`), [`LookAhead::L2`] on any other CPU.
    #[must_use]
    pub fn for_this_cpu() -> LookAhead {
        if cpu_vendor_is_intel() { LookAhead::L1 } else { LookAhead::L2 }
    }

    /// [`LookAhead::for_this_cpu`], decided at the first call (one CPUID)
    /// and cached. The choice changes only where prefetched lines land,
    /// never a result.
    pub fn detect() -> LookAhead {
        static CHOSEN: std::sync::OnceLock<LookAhead> = std::sync::OnceLock::new();
        *CHOSEN.get_or_init(LookAhead::for_this_cpu)
    }
}

impl Default for LookAhead {
    /// [`LookAhead::detect`]: the choice measured faster on this CPU.
    fn default() -> Self {
        LookAhead::detect()
    }
}

/// Whether CPUID names the vendor `GenuineIntel`.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn cpu_vendor_is_intel() -> bool {
    // SAFETY: CPUID leaf 0 exists on every x86-64 CPU and only reads
    // identification registers.
    #[allow(unused_unsafe)]
    let id = unsafe { core::arch::x86_64::__cpuid(0) };
    let mut vendor = [0u8; 12];
    vendor[..4].copy_from_slice(&id.ebx.to_le_bytes());
    vendor[4..8].copy_from_slice(&id.edx.to_le_bytes());
    vendor[8..].copy_from_slice(&id.ecx.to_le_bytes());
    &vendor == b"GenuineIntel"
}

/// Whether CPUID names the vendor `GenuineIntel` (never, off x86-64, nor
/// under Miri, which runs no CPUID).
#[cfg(any(not(target_arch = "x86_64"), miri))]
fn cpu_vendor_is_intel() -> bool {
    false
}

/// Issues a read prefetch for every cache line covered by `words`.
///
/// A prefetch is a hint: it never faults and has no visible effect, so this
/// is safe for any slice. On targets without a prefetch instruction it does
/// nothing.
#[inline]
pub fn prefetch_lines(words: &[u64]) {
    let ptr = words.as_ptr();
    let mut i = 0;
    while i < words.len() {
        prefetch_line(ptr.wrapping_add(i));
        i += WORDS_PER_LINE;
    }
}

/// Issues a read prefetch into the second-level cache (`prefetcht1`) for the
/// line holding `ptr`: for data needed a few microseconds from now, so it
/// does not hold a first-level miss buffer or evict the first-level data in
/// use. Like [`prefetch_line`], safe for any address.
#[inline(always)]
pub fn prefetch_line_l2(ptr: *const u64) {
    prefetch_hint::<HINT_T1>(ptr);
}

/// Issues a read prefetch (into all cache levels) for the line holding `ptr`.
///
/// Any address is allowed: a prefetch never dereferences its operand in a
/// way that can fault, so this is safe even for dangling or null pointers.
#[inline(always)]
pub fn prefetch_line(ptr: *const u64) {
    prefetch_hint::<HINT_T0>(ptr);
}

#[cfg(target_arch = "x86_64")]
const HINT_T0: i32 = core::arch::x86_64::_MM_HINT_T0;
#[cfg(target_arch = "x86_64")]
const HINT_T1: i32 = core::arch::x86_64::_MM_HINT_T1;
#[cfg(not(target_arch = "x86_64"))]
const HINT_T0: i32 = 0;
#[cfg(not(target_arch = "x86_64"))]
const HINT_T1: i32 = 0;

/// No prefetch instruction on this target: a no-op.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn prefetch_hint<const HINT: i32>(_ptr: *const u64) {}

/// `prefetcht0/1/2` or `prefetchnta` (by `HINT`) of the line holding `ptr`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_hint<const HINT: i32>(ptr: *const u64) {
    // SAFETY: `_mm_prefetch` needs only SSE, which is part of the x86-64
    // baseline, and a prefetch never faults whatever the address.
    unsafe { core::arch::x86_64::_mm_prefetch::<HINT>(ptr.cast::<i8>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_ahead_names_round_trip_and_detection_is_stable() {
        for c in [LookAhead::L1, LookAhead::L2] {
            assert_eq!(LookAhead::from_name(c.name()), Some(c));
            assert_eq!(LookAhead::from_name(&format!(" {} ", c.name().to_uppercase())), Some(c));
        }
        assert_eq!(LookAhead::from_name("l3"), None);
        assert_eq!(LookAhead::from_name(""), None);
        let first = LookAhead::detect();
        assert_eq!(LookAhead::detect(), first);
        assert_eq!(first, LookAhead::for_this_cpu());
        assert_eq!(LookAhead::default(), first);
        #[cfg(target_arch = "x86_64")]
        {
            let intel = std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| c.contains("GenuineIntel"));
            if std::path::Path::new("/proc/cpuinfo").exists() {
                assert_eq!(LookAhead::for_this_cpu() == LookAhead::L1, intel);
            }
        }
    }

    #[test]
    fn score_groups_keep_within_the_stream_budget() {
        assert_eq!(score_group_keys(7), 3);
        assert_eq!(score_group_keys(2), 8);
        assert_eq!(score_group_keys(0), SCORE_GROUP_MAX);
        for runs in 0..64 {
            let keys = score_group_keys(runs);
            assert!((2..=SCORE_GROUP_MAX).contains(&keys), "{runs} runs: {keys} keys");
            // Within the budget, unless one carry-save pair already
            // exceeds it; and as many keys as the budget and cap allow.
            assert!(keys == 2 || keys * runs <= SCORE_STREAMS, "{runs} runs: {keys} keys");
            assert!(keys == SCORE_GROUP_MAX || (keys + 1) * runs.max(1) > SCORE_STREAMS, "{runs} runs: {keys} keys");
        }
    }
}

//! The memory roofline a query engine is held against, measured in the same
//! run as the engines.
//!
//! Over a buffer at least as large as the sliced index (and at least
//! [`MIN_BUFFER_BYTES`]), backed by transparent huge pages like the index's
//! rows, two figures are measured single-threaded:
//!
//! 1. `ns_per_random_read`: throughput time of one random, 128-byte aligned,
//!    128-byte read (two cache lines) when the offsets are known ahead and
//!    prefetched `D` reads ahead, the access pattern of a batched sliced
//!    query (the best of a few `D`);
//! 2. `seq_gb_per_s`: sequential read bandwidth (summing every word).
//!
//! A third figure is measured for information: `ns_per_random_run`, the
//! throughput time of one random read of `run_bytes` contiguous bytes (the
//! mean row-run length of the sliced index), prefetched whole a few runs
//! ahead. It shows how far a single core is from streaming when the stream
//! is cut into runs of that length.
//!
//! The roofline time of a query that must touch `bytes` bytes in `runs`
//! separate contiguous runs is `max(bytes / seq_bandwidth, runs *
//! ns_per_random_read)`: it can go no faster than streaming its bytes, and
//! no faster than paying one random access per run.

use std::hint::black_box;
use std::time::Duration;

use bloomslice::storage::HUGE_PAGE_BYTES;
use bloomslice::storage::Words;
use bloomslice_kernels::prefetch_lines;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::engines::{fastest_pass, timed};
use crate::workload::xorshift64;

/// Smallest buffer measured: far larger than the 32 MiB L3 of the
/// development machine, so the figures are DRAM figures.
pub const MIN_BUFFER_BYTES: usize = 64 << 20;

/// Bytes of one random read: two cache lines, the row run of a 1024-column
/// shard.
pub const RANDOM_READ_BYTES: usize = 128;

const WORDS_PER_READ: usize = RANDOM_READ_BYTES / 8;

/// Random reads per timed pass.
const RANDOM_READS: usize = 1 << 22;

/// Prefetch distances tried for the random-read figure (the best is kept).
const PREFETCH_DISTANCES: [usize; 4] = [4, 8, 16, 32];

/// The measured roofline.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Roofline {
    /// Size of the measured buffer.
    pub buffer_bytes: usize,
    /// Bytes of the buffer the kernel backed with huge pages (from
    /// `/proc/self/smaps`), when known.
    pub huge_page_bytes: Option<u64>,
    /// Nanoseconds per random 128-byte read, prefetched.
    pub ns_per_random_read: f64,
    /// Prefetch distance that gave `ns_per_random_read`.
    pub random_read_prefetch: usize,
    /// Sequential read bandwidth in GB/s (10^9 bytes per second, which is
    /// bytes per nanosecond).
    pub seq_gb_per_s: f64,
    /// Length of the runs of `ns_per_random_run` (a multiple of 64 bytes).
    pub run_bytes: usize,
    /// Nanoseconds per random read of `run_bytes` contiguous bytes, prefetched.
    pub ns_per_random_run: f64,
}

impl Roofline {
    /// Measures the roofline over a buffer of at least `bytes` bytes
    /// (rounded up to [`MIN_BUFFER_BYTES`] and to whole huge pages), with
    /// random runs of `run_bytes` (rounded up to whole cache lines).
    ///
    /// # Panics
    ///
    /// When the buffer cannot be allocated.
    pub fn measure(bytes: usize, run_bytes: usize) -> Self {
        let buffer = huge_buffer(bytes.max(MIN_BUFFER_BYTES));
        let words: &[u64] = &buffer;
        let huge_page_bytes = crate::sysinfo::anon_huge_page_bytes(words.as_ptr() as usize);
        let blocks = words.len() / WORDS_PER_READ;
        let mut rng = SmallRng::seed_from_u64(0x00f1_00f1);
        let offsets: Vec<u32> = (0..RANDOM_READS).map(|_| rng.random_range(0..blocks as u32)).collect();
        let mut best_random = (f64::INFINITY, 0);
        for &d in &PREFETCH_DISTANCES {
            let time = fastest_pass(2, 2, Duration::ZERO, || timed(|| black_box(random_reads(words, &offsets, d))).1);
            let ns = time.as_nanos() as f64 / offsets.len() as f64;
            if ns < best_random.0 {
                best_random = (ns, d);
            }
        }
        let seq = fastest_pass(3, 3, Duration::ZERO, || timed(|| black_box(sum_words(black_box(words)))).1);
        let best_seq = (words.len() * 8) as f64 / seq.as_nanos() as f64;
        let run_words = run_bytes.clamp(64, 1 << 20).next_multiple_of(64) / 8;
        let runs = ((256usize << 20) / (run_words * 8)).clamp(1 << 14, 1 << 22);
        let lines = (words.len() - run_words) / 8;
        let starts: Vec<u32> = (0..runs).map(|_| rng.random_range(0..=lines as u32)).collect();
        let run = [1usize, 2, 4, 8].map(|d| timed(|| black_box(random_runs(words, &starts, run_words, d))).1);
        let best_run = run.iter().min().map_or(f64::INFINITY, |t| t.as_nanos() as f64 / starts.len() as f64);
        Roofline {
            run_bytes: run_words * 8,
            ns_per_random_run: best_run,
            buffer_bytes: words.len() * 8,
            huge_page_bytes,
            ns_per_random_read: best_random.0,
            random_read_prefetch: best_random.1,
            seq_gb_per_s: best_seq,
        }
    }

    /// Roofline nanoseconds of a query touching `bytes` bytes in `runs`
    /// contiguous runs.
    pub fn query_ns(&self, bytes: f64, runs: f64) -> f64 {
        (bytes / self.seq_gb_per_s).max(runs * self.ns_per_random_read)
    }
}

/// Reads the 128-byte blocks at `offsets` (in blocks), prefetching `d` ahead.
fn random_reads(words: &[u64], offsets: &[u32], d: usize) -> u64 {
    prefetched_fold(
        offsets.len(),
        d,
        |i| &words[offsets[i] as usize * WORDS_PER_READ..][..WORDS_PER_READ],
        |acc, block| block.iter().fold(acc, |a, &w| a.wrapping_add(w)),
    )
}

/// Reads runs of `run_words` words starting at the cache lines `starts`,
/// prefetching whole runs `d` ahead.
fn random_runs(words: &[u64], starts: &[u32], run_words: usize, d: usize) -> u64 {
    prefetched_fold(
        starts.len(),
        d,
        |i| &words[starts[i] as usize * 8..][..run_words],
        |acc, run| acc.wrapping_add(sum_words(run)),
    )
}

/// Folds `fold` over `chunk(0)` to `chunk(n - 1)` in order, prefetching the
/// chunk `d` ahead of the one read.
#[inline(always)]
fn prefetched_fold<'a>(
    n: usize,
    d: usize,
    chunk: impl Fn(usize) -> &'a [u64],
    fold: impl Fn(u64, &'a [u64]) -> u64,
) -> u64 {
    let mut acc = 0u64;
    for i in 0..d.min(n) {
        prefetch_lines(chunk(i));
    }
    for i in 0..n {
        if i + d < n {
            prefetch_lines(chunk(i + d));
        }
        acc = fold(acc, chunk(i));
    }
    acc
}

/// Sums every word, with independent lanes so the adds do not serialise.
fn sum_words(words: &[u64]) -> u64 {
    let mut lanes = [0u64; 8];
    let chunks = words.chunks_exact(8);
    let tail = chunks.remainder().iter().fold(0u64, |a, &w| a.wrapping_add(w));
    for c in chunks {
        for (l, &w) in lanes.iter_mut().zip(c) {
            *l = l.wrapping_add(w);
        }
    }
    lanes.iter().fold(tail, |a, &l| a.wrapping_add(l))
}

/// The measured buffer: at least `bytes` bytes, rounded up to whole huge
/// pages, in the engine's own word storage (2 MiB aligned and advised to use
/// transparent huge pages before it is first touched, as the index's rows
/// are), every word holding its index.
///
/// # Panics
///
/// When the buffer cannot be allocated.
fn huge_buffer(bytes: usize) -> Words {
    let len = bytes.next_multiple_of(HUGE_PAGE_BYTES) / 8;
    let mut words = Words::zeroed(len).unwrap_or_else(|e| panic!("roofline buffer of {len} words: {e}"));
    for (i, w) in words.iter_mut().enumerate() {
        *w = i as u64;
    }
    words
}

/// A pointer-chase buffer of `lines` cache lines (at least 2) in a random
/// cyclic order drawn from `seed` ([`xorshift64`]): each line's first word
/// names the next line of the chase, its second word its own number.
/// Returns the buffer and the line the chase starts at.
///
/// # Panics
///
/// When the buffer cannot be allocated.
pub fn chase_buffer(lines: usize, seed: &mut u64) -> (Words, usize) {
    let mut buf = Words::zeroed(lines * 8).expect("memory for the chase buffer");
    let mut order: Vec<usize> = (0..lines).collect();
    for i in (1..lines).rev() {
        order.swap(i, xorshift64(seed) as usize % (i + 1));
    }
    for (i, &line) in order.iter().enumerate() {
        buf[line * 8] = order[(i + 1) % lines] as u64;
        buf[line * 8 + 1] = line as u64;
    }
    (buf, order[0])
}

/// One key's row reads with no engine: `k` runs of `run_lines` lines at
/// places of `words` drawn from `x`, runs of more than 4 lines requested
/// first line by line across the runs (into the second level), as the
/// engine requests them, then one word of every line read. Returns a word
/// that depends on every line read. The memory floor of one key's query
/// (`keyprobe`'s `chase runs`, `paper latency --memory-control`).
///
/// # Panics
///
/// If `k` is over 64 or `words` holds fewer than `run_lines + 1` lines.
#[inline(never)]
pub fn read_key_runs(words: &[u64], k: usize, run_lines: usize, x: u64) -> u64 {
    let lines = words.len() / 8;
    let mut starts = [0usize; 64];
    for (r, start) in starts[..k].iter_mut().enumerate() {
        let h = x.wrapping_mul(0x9e37_79b9_7f4a_7c15 + 2 * r as u64);
        *start = ((u128::from(h) * (lines - run_lines) as u128) >> 64) as usize;
    }
    if run_lines > 4 {
        for l in 0..run_lines {
            for &start in &starts[..k] {
                bloomslice_kernels::prefetch_line_l2(words[(start + l) * 8..].as_ptr());
            }
        }
    }
    let mut acc = 0u64;
    for &start in &starts[..k] {
        for l in 0..run_lines {
            acc ^= words[(start + l) * 8 + 1];
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_ns_is_the_larger_bound() {
        let r = Roofline {
            buffer_bytes: 0,
            huge_page_bytes: None,
            ns_per_random_read: 10.0,
            random_read_prefetch: 8,
            seq_gb_per_s: 20.0,
            run_bytes: 512,
            ns_per_random_run: 30.0,
        };
        assert_eq!(r.query_ns(2000.0, 7.0), 100.0);
        assert_eq!(r.query_ns(200.0, 7.0), 70.0);
    }

    #[test]
    fn buffer_is_whole_huge_pages_aligned_and_numbered() {
        let words = huge_buffer(HUGE_PAGE_BYTES + 1);
        assert_eq!(words.len() * 8, 2 * HUGE_PAGE_BYTES);
        assert_eq!(words.as_ptr() as usize % HUGE_PAGE_BYTES, 0);
        assert!(words.iter().enumerate().all(|(i, &w)| w == i as u64));
    }

    #[test]
    fn kernels_of_the_measurement_compute_sums() {
        let words: Vec<u64> = (0..100).collect();
        assert_eq!(sum_words(&words), 4950);
        let offsets = [0u32, 2];
        assert_eq!(random_reads(&words, &offsets, 1), (0..16).sum::<u64>() + (32..48).sum::<u64>());
        assert_eq!(random_runs(&words, &[1, 3], 8, 1), (8..16).sum::<u64>() + (24..32).sum::<u64>());
    }
}

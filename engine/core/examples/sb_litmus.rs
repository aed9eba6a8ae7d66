//! Store buffering, the litmus test: two threads, two locations, both
//! zero; thread A stores 1 to `x` then loads `y`, thread B stores 1 to `y`
//! then loads `x`. Both loads returning 0 is the *forbidden* outcome when
//! all four accesses are SeqCst (the Rust and C++ memory models, and ARMv8,
//! whose `stlr` / `ldar` are ordered against each other), and when a SeqCst
//! fence separates each store from its load; it is allowed, and a machine
//! with store buffers shows it, when the accesses are Relaxed (the control:
//! it shows the harness can see a reordering at all).
//!
//! No engine code: this checks the platform (or an emulator) the pool's
//! tests run on. `.ci/run` once pinned the pool's tests to one core under
//! qemu-aarch64 on the claim that qemu lets a SeqCst store and a later
//! SeqCst load of another location reorder; run this there to see it:
//!
//! ```text
//! cargo build --release --example sb_litmus --target aarch64-unknown-linux-gnu
//! qemu-aarch64 -L /usr/aarch64-linux-gnu target/aarch64-unknown-linux-gnu/release/examples/sb_litmus
//! ```
//!
//! Prints, per mode, the iterations and how many ended with both loads 0.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering, fence};
use std::thread;

/// How a thread orders its store before its load.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// SeqCst store, SeqCst load: both-zero forbidden.
    SeqCst,
    /// Relaxed store, SeqCst fence, Relaxed load: both-zero forbidden.
    Fenced,
    /// Relaxed store, Relaxed load: both-zero allowed (the control).
    Relaxed,
}

/// One side of one iteration: store 1 to `mine`, then load `theirs`.
#[inline(never)]
fn side(mode: Mode, mine: &AtomicU32, theirs: &AtomicU32) -> u32 {
    match mode {
        Mode::SeqCst => {
            mine.store(1, Ordering::SeqCst);
            theirs.load(Ordering::SeqCst)
        }
        Mode::Fenced => {
            mine.store(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            theirs.load(Ordering::Relaxed)
        }
        Mode::Relaxed => {
            mine.store(1, Ordering::Relaxed);
            theirs.load(Ordering::Relaxed)
        }
    }
}

/// Runs `n` iterations on fresh locations, the two threads meeting at a
/// spin barrier before each; returns how many ended with both loads 0.
fn run(mode: Mode, n: usize) -> usize {
    let xs: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let ys: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let arrived = AtomicUsize::new(0);
    let (xs, ys, arrived) = (&xs, &ys, &arrived);
    let barrier = move |i: usize| {
        // SeqCst barrier: each iteration starts after both threads arrive.
        arrived.fetch_add(1, Ordering::SeqCst);
        while arrived.load(Ordering::SeqCst) < 2 * (i + 1) {
            std::hint::spin_loop();
        }
    };
    thread::scope(|s| {
        let a = s.spawn(move || (0..n).map(|i| (barrier(i), side(mode, &xs[i], &ys[i])).1).collect::<Vec<_>>());
        let b = s.spawn(move || (0..n).map(|i| (barrier(i), side(mode, &ys[i], &xs[i])).1).collect::<Vec<_>>());
        let (ra, rb) = (a.join().expect("thread A"), b.join().expect("thread B"));
        ra.iter().zip(&rb).filter(|&(&r1, &r2)| r1 == 0 && r2 == 0).count()
    })
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    println!("store buffering, {n} iterations per mode (both loads 0 is forbidden unless Relaxed)");
    for mode in [Mode::SeqCst, Mode::Fenced, Mode::Relaxed] {
        let both_zero = run(mode, n);
        let verdict = match mode {
            Mode::Relaxed => "allowed",
            _ if both_zero == 0 => "none seen",
            _ => "FORBIDDEN outcome seen",
        };
        println!("{:<8} both zero: {both_zero:>8}  ({verdict})", format!("{mode:?}"));
    }
}

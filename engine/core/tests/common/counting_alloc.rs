//! A global allocator that counts allocation calls, shared by the tests that
//! prove a warm path allocates nothing. Including this file (`#[path =
//! "common/counting_alloc.rs"] mod counting_alloc;`) installs it as the test
//! crate's global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Held by every test of a crate whose tests count allocations, so they run
/// one at a time (the counter is global; a test that panicked while holding
/// it does not stop the others).
static SERIAL: Mutex<()> = Mutex::new(());

/// Takes [`SERIAL`] for the rest of the calling test.
#[allow(dead_code, reason = "no_alloc.rs has a single test and needs no lock; an `expect` would fail where it is used")]
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The system allocator, counting `alloc` and `realloc` calls in
/// [`ALLOCATIONS`].
pub struct Counting;

/// Allocation calls so far (all threads).
pub static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// Allocation calls so far.
pub fn allocations() -> usize {
    ALLOCATIONS.load(Ordering::Relaxed)
}

// SAFETY: forwards to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

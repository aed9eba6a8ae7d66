//! The synchronisation primitives of the pool's hand-over (`pool/job.rs`)
//! and of the left-right publish (`concurrent.rs`): `std`'s in every
//! normal build, [loom]'s model-checked ones under `--cfg loom`.
//!
//! The pattern is tokio's and crossbeam's: code names its atomics, locks,
//! `Arc`, `UnsafeCell` and spin hints through this module, so the same
//! source runs under loom's scheduler, which explores every interleaving
//! (and every value a weak load may return) up to a preemption bound.
//! Without `--cfg loom` everything here is a re-export or an `#[inline]`
//! wrapper of one `std` call, so the normal build is the code it was.
//!
//! Two differences of API are papered over:
//!
//! - loom's [`UnsafeCell`] hands out its pointer through `with` /
//!   `with_mut` closures (each call is an access loom checks against the
//!   other threads' accesses); the `std` side gets the same API.
//! - `arc_swap::ArcSwap` is built on `std` atomics loom cannot see into. Under
//!   loom it is replaced by [`ArcSwap`] here: a small pointer swap with
//!   the same contract as far as `ConcurrentIndex` relies on it (a load
//!   after a swap returns the new `Arc`; a reader that loaded the old one
//!   holds a real strong reference once the swap has returned, so
//!   `Arc::get_mut` sees it). arc-swap itself is therefore not model-checked.
//!
//! Run the models with
//! `RUSTFLAGS="--cfg loom" cargo test -p bloomslice --release --lib loom_`
//! (see `.ci/run`).
//!
//! [loom]: https://docs.rs/loom

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex};

#[cfg(not(loom))]
pub(crate) use arc_swap::ArcSwap;
#[cfg(loom)]
pub(crate) use model::ArcSwap;

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `core::cell::UnsafeCell` with loom's closure API.
#[cfg(not(loom))]
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct UnsafeCell<T: ?Sized>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    #[inline]
    pub(crate) const fn new(data: T) -> UnsafeCell<T> {
        UnsafeCell(core::cell::UnsafeCell::new(data))
    }
}

#[cfg(not(loom))]
impl<T: ?Sized> UnsafeCell<T> {
    /// Calls `f` with a pointer to the contents, for reading.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a pointer to the contents, for writing.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Defines `fn $name()`, which calls `$std` in a normal build and `$loom`
/// under loom.
macro_rules! std_or_loom {
    ($(#[$attr:meta])* fn $name:ident() => $std:path, $loom:path) => {
        $(#[$attr])*
        pub(crate) fn $name() {
            #[cfg(not(loom))]
            $std();
            #[cfg(loom)]
            $loom();
        }
    };
}

std_or_loom! {
    /// One turn of a busy-wait loop (under loom, a yield to the scheduler,
    /// which a spinning model needs to make progress).
    #[inline(always)]
    fn spin_loop() => core::hint::spin_loop, loom::hint::spin_loop
}

std_or_loom! {
    /// `std::thread::yield_now` (loom's under loom).
    #[inline]
    fn yield_now() => std::thread::yield_now, loom::thread::yield_now
}

/// `std::thread::sleep` (a yield under loom, which has no clock).
#[inline]
pub(crate) fn sleep(duration: core::time::Duration) {
    #[cfg(not(loom))]
    std::thread::sleep(duration);
    #[cfg(loom)]
    {
        let _ = duration;
        loom::thread::yield_now();
    }
}

/// `Arc::make_mut` (loom's `Arc` has none: clone unless unique).
#[inline]
pub(crate) fn make_mut<T: Clone>(this: &mut Arc<T>) -> &mut T {
    #[cfg(not(loom))]
    {
        Arc::make_mut(this)
    }
    #[cfg(loom)]
    {
        if Arc::get_mut(this).is_none() {
            *this = Arc::new(T::clone(this));
        }
        Arc::get_mut(this).expect("a fresh Arc is unique")
    }
}

/// Whether a wait that started at `start` has gone on longer than
/// `patience`. Never under loom: a model has no clock, and a timeout
/// would make its executions depend on the host's speed.
#[inline]
pub(crate) fn waited_longer_than(start: std::time::Instant, patience: core::time::Duration) -> bool {
    !cfg!(loom) && start.elapsed() > patience
}

#[cfg(loom)]
mod model {
    //! The stand-in for `arc_swap::ArcSwap` under loom.

    use super::{Arc, AtomicPtr, AtomicUsize, Ordering, fence, spin_loop};

    /// An `Arc<T>` swapped atomically. Readers count themselves in
    /// `readers` while they turn the loaded pointer into a strong
    /// reference; a swap waits for the count to drop to zero before it
    /// hands the old `Arc` back, so no reader is left half-way on it.
    pub(crate) struct ArcSwap<T> {
        /// From `Arc::into_raw`; owns one strong count.
        current: AtomicPtr<T>,
        readers: AtomicUsize,
    }

    // SAFETY: an `Arc<T>` in an atomic; `Arc<T>` is Send + Sync for these T.
    unsafe impl<T: Send + Sync> Send for ArcSwap<T> {}
    // SAFETY: as above.
    unsafe impl<T: Send + Sync> Sync for ArcSwap<T> {}

    impl<T> ArcSwap<T> {
        pub(crate) fn from_pointee(value: T) -> Self {
            ArcSwap { current: AtomicPtr::new(Arc::into_raw(Arc::new(value)).cast_mut()), readers: AtomicUsize::new(0) }
        }

        pub(crate) fn load_full(&self) -> Arc<T> {
            // Dekker with `swap`: increment, SeqCst fence, load the pointer,
            // against swap the pointer, SeqCst fence, load the count. Either
            // the swap sees this reader and waits for it, or this reader
            // loads the new pointer.
            self.readers.fetch_add(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            // Acquire: the writer's edits of the copy it published.
            let ptr = self.current.load(Ordering::Acquire);
            // SAFETY: `ptr` came from `Arc::into_raw` and its count is kept
            // by `current` or, once swapped out, by the swapper, which
            // waits for `readers` to reach zero before it lets go.
            let arc = unsafe {
                Arc::increment_strong_count(ptr);
                Arc::from_raw(ptr)
            };
            // Release: the strong reference taken above happens-before the
            // swapper's return.
            self.readers.fetch_sub(1, Ordering::Release);
            arc
        }

        /// A read guard: here simply a strong reference (arc-swap turns its
        /// guards into strong references on a swap, which is what a writer
        /// waiting on `Arc::get_mut` relies on).
        pub(crate) fn load(&self) -> Arc<T> {
            self.load_full()
        }

        pub(crate) fn swap(&self, new: Arc<T>) -> Arc<T> {
            // AcqRel: Release publishes the new copy's contents to readers'
            // Acquire loads; Acquire takes the old copy's.
            let old = self.current.swap(Arc::into_raw(new).cast_mut(), Ordering::AcqRel);
            fence(Ordering::SeqCst);
            // Acquire: pairs with the readers' Release decrements.
            while self.readers.load(Ordering::Acquire) != 0 {
                spin_loop();
            }
            // SAFETY: `old` came from `Arc::into_raw` and owned the count
            // `current` held; every reader of it holds its own by now.
            unsafe { Arc::from_raw(old) }
        }
    }

    impl<T> Drop for ArcSwap<T> {
        fn drop(&mut self) {
            // SAFETY: `current` owns one strong count of this pointer.
            drop(unsafe { Arc::from_raw(self.current.load(Ordering::Relaxed)) });
        }
    }

    impl<T: core::fmt::Debug> core::fmt::Debug for ArcSwap<T> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.debug_tuple("ArcSwap").field(&*self.load_full()).finish()
        }
    }
}

#[cfg(loom)]
use loom::sync::atomic::AtomicPtr;

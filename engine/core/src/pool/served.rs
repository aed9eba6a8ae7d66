//! [`Served`]: the contract an index type implements to be queried by the
//! pool's tasks, and the type-erased snapshot a job holds.
//!
//! # Design note: one contract, dispatched once per task
//!
//! The pool does not know the index types it serves: each one (the
//! [`SlicedIndex`](crate::sliced::SlicedIndex) and the
//! [`SetIndex`](crate::collection::SetIndex), in their own modules)
//! implements [`Served`], whose methods are what a task calls (a key
//! range's batch query, a threshold query, the hash of a copied key) and
//! whose [`Served::Scratch`] is the working memory it keeps between tasks.
//! A job is not generic over the index type: a [`PoolResults`](super::PoolResults)
//! serves any index, batch after batch. So when a batch is armed, its
//! `Arc<I>` snapshot is stored as a raw pointer beside functions
//! monomorphised for `I` ([`Erased`]); a task makes one indirect call
//! through them, and everything below that call is static (the index's own
//! batch query, as called without the pool).
//!
//! Scratch lives with whoever runs tasks: each worker, and each job for its
//! helping caller, keeps a [`Scratch`] holding one `I::Scratch` per index
//! type it has served (looked up once per task, by type), so a warm task
//! allocates nothing whichever index it queries.

use core::any::Any;

use crate::batch::BatchResults;
use crate::hash::{Key, KeyHash};
use crate::score::Threshold;
use crate::sync::Arc;

/// An index type the [`QueryPool`](super::QueryPool) can query: a
/// [`SlicedIndex`](crate::sliced::SlicedIndex) or a
/// [`SetIndex`](crate::collection::SetIndex). Sealed; its methods are the
/// pool's, not part of the public API.
pub trait Served: sealed::Sealed + Send + Sync + 'static {
    /// Working memory of the queries below, kept between tasks by each
    /// thread that runs them.
    #[doc(hidden)]
    type Scratch: Default + Send + 'static;

    /// Filters a key is tested against (the pool's work estimate: keys
    /// times filters).
    #[doc(hidden)]
    fn filters(&self) -> usize;

    /// A key's hash, as this index's own queries hash it.
    #[doc(hidden)]
    fn key_hash<K: Key + ?Sized>(&self, key: &K) -> KeyHash;

    /// The batch query of `keys` into `out`, as the index's `query_batch`.
    #[doc(hidden)]
    fn query_batch_with<K: Key>(&self, keys: &[K], out: &mut BatchResults, scratch: &mut Self::Scratch);

    /// The threshold query of `keys` into `out` (cleared first), as the
    /// index's `query_threshold`.
    #[doc(hidden)]
    fn query_threshold_with<K: Key>(
        &self,
        keys: &[K],
        threshold: Threshold,
        scratch: &mut Self::Scratch,
        out: &mut Vec<(u64, u32)>,
    );

    /// Grows `scratch` (and `out`, for threshold queries) to what any task
    /// of a batch whose largest task input is `max_keys` keys needs on this
    /// index, so that which thread claims which task does not decide
    /// whether a warm batch allocates. Bounds come from the index, not from
    /// the answers.
    #[doc(hidden)]
    fn reserve(&self, max_keys: usize, threshold: bool, scratch: &mut Self::Scratch, out: &mut Vec<(u64, u32)>);
}

/// What only the crate may implement.
pub(crate) mod sealed {
    /// See [`super::Served`].
    pub trait Sealed {}
}

/// The scratch of one thread that runs tasks: one [`Served::Scratch`] per
/// index type it has served, and a threshold query's answer.
#[derive(Default)]
pub(crate) struct Scratch {
    /// One threshold query's passing `(id, count)`.
    pub(super) out: Vec<(u64, u32)>,
    /// One `I::Scratch` per index type `I`, found by type. A worker serves
    /// every index type, so these are type-erased; there are one or two.
    slots: Vec<Box<dyn Any + Send>>,
}

impl Scratch {
    /// This thread's `S` (made on first use) and its answer buffer.
    pub(super) fn get<S: Default + Send + 'static>(&mut self) -> (&mut S, &mut Vec<(u64, u32)>) {
        let at = match self.slots.iter().position(|slot| slot.is::<S>()) {
            Some(at) => at,
            None => {
                self.slots.push(Box::new(S::default()));
                self.slots.len() - 1
            }
        };
        let scratch = self.slots[at].downcast_mut::<S>().expect("the slot found holds an S");
        (scratch, &mut self.out)
    }
}

/// A snapshot `Arc<I>` of a served index, its type erased, with the calls
/// a job makes on it monomorphised for `I`.
pub(super) struct Erased {
    /// From `Arc::<I>::into_raw`; owns one strong count.
    ptr: *const (),
    drop: unsafe fn(*const ()),
    query_hashes: unsafe fn(*const (), &[KeyHash], &mut BatchResults, &mut Scratch),
    reserve: unsafe fn(*const (), usize, bool, &mut Scratch),
}

// SAFETY: `ptr` is an `Arc<I>` with `I: Send + Sync` (`Served`).
unsafe impl Send for Erased {}
// SAFETY: as above; the functions only read through `ptr`.
unsafe impl Sync for Erased {}

impl Erased {
    pub(super) fn new<I: Served>(index: Arc<I>) -> Erased {
        Erased {
            ptr: Arc::into_raw(index).cast(),
            drop: drop_arc::<I>,
            query_hashes: query_hashes::<I>,
            reserve: reserve::<I>,
        }
    }

    /// The pointer the `run` functions of a borrowed batch take.
    pub(super) fn ptr(&self) -> *const () {
        self.ptr
    }

    /// [`Served::query_batch_with`] of hashed keys.
    pub(super) fn query_hashes(&self, hashes: &[KeyHash], out: &mut BatchResults, scratch: &mut Scratch) {
        // SAFETY: `ptr` and the function were made for the same `I`.
        unsafe { (self.query_hashes)(self.ptr, hashes, out, scratch) }
    }

    /// [`Served::reserve`] of this thread's scratch.
    pub(super) fn reserve(&self, max_keys: usize, threshold: bool, scratch: &mut Scratch) {
        // SAFETY: as in `query_hashes`.
        unsafe { (self.reserve)(self.ptr, max_keys, threshold, scratch) }
    }
}

impl Drop for Erased {
    fn drop(&mut self) {
        // SAFETY: as in `query_hashes`; dropped once.
        unsafe { (self.drop)(self.ptr) }
    }
}

/// The index behind an [`Erased`] pointer.
///
/// # Safety
///
/// `ptr` is an [`Erased`]'s, made for `I`, and that `Erased` is alive.
pub(super) unsafe fn index<'a, I: Served>(ptr: *const ()) -> &'a I {
    // SAFETY: the caller's contract: an `Arc<I>`'s pointer, still owned.
    unsafe { &*ptr.cast::<I>() }
}

/// # Safety
///
/// As [`index`]; called once, by `Erased::drop`.
unsafe fn drop_arc<I: Served>(ptr: *const ()) {
    // SAFETY: the caller's contract: from `Arc::<I>::into_raw`, once.
    drop(unsafe { Arc::from_raw(ptr.cast::<I>()) });
}

/// # Safety
///
/// As [`index`].
unsafe fn query_hashes<I: Served>(ptr: *const (), hashes: &[KeyHash], out: &mut BatchResults, scratch: &mut Scratch) {
    // SAFETY: the caller's contract.
    let index = unsafe { self::index::<I>(ptr) };
    index.query_batch_with(hashes, out, scratch.get::<I::Scratch>().0);
}

/// # Safety
///
/// As [`index`].
unsafe fn reserve<I: Served>(ptr: *const (), max_keys: usize, threshold: bool, scratch: &mut Scratch) {
    // SAFETY: the caller's contract.
    let index = unsafe { self::index::<I>(ptr) };
    let (own, out) = scratch.get::<I::Scratch>();
    index.reserve(max_keys, threshold, own, out);
}

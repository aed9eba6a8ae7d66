//! Writes to an index whose rows are a window of a memory-mapped file copy
//! the touched shard first. That copy is the one allocation a write makes,
//! and it is fallible: when it cannot be had, the write returns
//! `Error::CapacityOverflow` and the index is unchanged (no panic).
//!
//! The global allocator of this test binary refuses, while armed, every
//! allocation of at least [`LIMIT`] bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

use bloomslice::persist::Loaded;
use bloomslice::persist::{self, Verify};
use bloomslice::testing::{filter_of_u64_keys as filter_of, index_of_u64_runs};
use bloomslice::{BloomFilter, BloomParams, Error, SetNames, SlicedIndex};

/// Allocations of at least this many bytes fail while [`ARMED`].
const LIMIT: usize = 1 << 20;
static ARMED: AtomicBool = AtomicBool::new(false);

struct FailLarge;

// SAFETY: forwards to the system allocator, or returns null (which the
// `GlobalAlloc` contract allows for any failure).
unsafe impl GlobalAlloc for FailLarge {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED.load(Ordering::SeqCst) && layout.size() >= LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ARMED.load(Ordering::SeqCst) && new_size >= LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: FailLarge = FailLarge;

/// Every write to a mapped index, with the shard copy refused, is a typed
/// error that leaves the index answering as before; disarmed, it succeeds.
#[test]
fn writes_to_a_mapped_index_fail_cleanly_when_the_copy_cannot_be_allocated() {
    // m = 2 097 152 bits x 4 columns (3 sets) = 1 MiB of rows in one shard.
    let params = BloomParams::new(1 << 21, 4).unwrap();
    let index = index_of_u64_runs(params, 3, 100, 100);
    let mut names = SetNames::new();
    (0..3).for_each(|id| names.insert(id, format!("set-{id}")).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.bsi");
    persist::save(&path, &index, &names).unwrap();
    let probe: Vec<[u8; 8]> = (0..400u64).map(u64::to_le_bytes).collect();
    let answers = |ix: &SlicedIndex| probe.iter().map(|k| ix.query(k)).collect::<Vec<_>>();
    let want = answers(&index);

    let extra = filter_of(params, 1000..1010);
    type Write = fn(&mut SlicedIndex, &BloomFilter) -> bloomslice::Result<()>;
    let writes: [(&str, Write); 6] = [
        ("insert_key", |ix, _| ix.insert_key(1, "new key")),
        ("insert_filter", |ix, f| ix.insert_filter(9, f)),
        ("insert_filters", |ix, f| ix.insert_filters(&[(9, f), (10, f)])),
        ("update_filter", |ix, f| ix.update_filter(2, f)),
        ("remove_set", |ix, _| ix.remove_set(0)),
        ("delete then insert", |ix, f| ix.remove_set(1).and_then(|()| ix.insert_filter(1, f))),
    ];
    for (what, write) in writes {
        // SAFETY: a private temporary file that nothing writes while mapped.
        let mut mapped = unsafe { Loaded::<SlicedIndex>::open_mmap(&path, Verify::Full) }.unwrap();
        assert!(mapped.is_mapped());
        ARMED.store(true, Ordering::SeqCst);
        let result = write(&mut mapped.index, &extra);
        ARMED.store(false, Ordering::SeqCst);
        assert!(matches!(result, Err(Error::CapacityOverflow(_))), "{what}: {result:?}");
        assert!(mapped.is_mapped(), "{what}: still reading the file in place");
        assert_eq!(answers(&mapped.index), want, "{what}: index changed by a failed write");
        assert_eq!(mapped.index.len(), 3, "{what}");
        mapped.index.validate().unwrap();

        write(&mut mapped.index, &extra).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(!mapped.is_mapped(), "{what}: the written shard is now in memory");
        mapped.index.validate().unwrap();
    }
}

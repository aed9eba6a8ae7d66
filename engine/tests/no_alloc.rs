//! `query_into` and `query_batch` allocate nothing once their buffers are
//! warm, checked with a counting global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use bloomslice::{BatchResults, BloomFilter, BloomParams, SlicedIndex};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

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

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn warm_queries_do_not_allocate() {
    let params = BloomParams::new(4096, 4).unwrap();
    let mut index = SlicedIndex::new(params);
    for id in 0..5000u64 {
        let mut f = BloomFilter::new(params).unwrap();
        for key in id * 3..id * 3 + 40 {
            f.insert(&key.to_le_bytes());
        }
        index.insert_filter(id, &f).unwrap();
    }
    let keys: Vec<[u8; 8]> = (0..20_000u64).map(u64::to_le_bytes).collect();
    let mut out = Vec::new();
    let mut results = BatchResults::new();
    // Warm up: grow every buffer to the largest answer.
    for key in &keys {
        index.query_into(key, &mut out);
    }
    index.query_batch(&keys, &mut results);
    assert!(results.total_matches() > 0);

    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for key in &keys {
        index.query_into(key, &mut out);
    }
    index.query_batch(&keys, &mut results);
    index.query_batch(&keys[..100], &mut results);
    index.query_batch(&keys, &mut results);
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed) - before, 0, "a warm query allocated");
}

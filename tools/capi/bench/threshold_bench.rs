//! Threshold scoring through the C ABI against the library, in one process
//! (`bench/RESULTS.md`, section "Bindings"): a skewed collection (set `i`
//! of `SETS` holds `20 000 / (i + 1)` keys, at least 2: one set of 20 000,
//! a long tail of small ones) is built once by the library
//! (`SetIndex::build`) and once through `bloomslice_index_build` from the
//! same keys and seed, and the same reads (each `READ` keys of one set, the
//! sets taken in turn) are scored at a fraction of 0.5 by
//! `SetIndex::query_threshold` and by `bloomslice_query_threshold`,
//! alternating, best of `R` passes; the answers must agree. The same is
//! done for one sliced index of one filter length sized for the largest set
//! (`SlicedIndex`, and `bloomslice_query_threshold` on a handle of
//! `bloomslice_index_new_sliced`). A third timing is the library scoring
//! hashes with one scratch kept across reads, as the C ABI does.
//!
//! `cargo run --release -p bloomslice-capi --example threshold-bench -- [SETS] [READS] [R]`
//! prints one line per engine: nanoseconds per read for the library and
//! the C ABI, their ratio, and the library with a kept scratch.

use std::hint::black_box;
use std::ptr;
use std::time::Instant;

use bloomslice::{
    BloomFilter, BloomParams, HashScheme, KeyHash, LayoutConfig, Scores, SetIndex, SlicedIndex, Threshold,
};
use bloomslice_capi::{
    BloomsliceIndex, BloomsliceStatus, bloomslice_index_add_set_hashes, bloomslice_index_build, bloomslice_index_free,
    bloomslice_index_new_sliced, bloomslice_query_threshold,
};

const READ: usize = 200;
const FRACTION: f64 = 0.5;

fn arg(i: usize, default: usize) -> usize {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// Best time of `repeat` passes of `f` over every read, in ns per read.
fn best(repeat: usize, reads: usize, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::INFINITY;
    let mut hits = 0;
    for _ in 0..repeat {
        let start = Instant::now();
        hits = black_box(f());
        best = best.min(start.elapsed().as_nanos() as f64 / reads as f64);
    }
    (best, hits)
}

/// One read through `bloomslice_query_threshold` at [`FRACTION`] on
/// `handle` (a live index), its answers into `ids` and `counts` (of one
/// length, the capacity): the status and the number of sets returned.
#[inline]
fn capi_threshold(
    handle: *const BloomsliceIndex, key_ptrs: &[*const u8], key_lens: &[usize], ids: &mut [u64], counts: &mut [u32],
) -> (BloomsliceStatus, usize) {
    debug_assert_eq!(ids.len(), counts.len(), "one capacity");
    let mut n = 0;
    // SAFETY: `handle` is live (the caller's word), the key pointers and
    // lengths are those of live keys, and the outputs hold `ids.len()` each.
    let st = unsafe {
        bloomslice_query_threshold(
            handle,
            key_ptrs.as_ptr(),
            key_lens.as_ptr(),
            key_ptrs.len(),
            FRACTION,
            ids.as_mut_ptr(),
            counts.as_mut_ptr(),
            ids.len(),
            &mut n,
        )
    };
    (st, n)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (sets, reads, repeat) = (arg(1, 2000), arg(2, 400), arg(3, 7));
    let keys: Vec<Vec<Vec<u8>>> = (0..sets)
        .map(|i| (0..(20_000 / (i + 1)).max(2)).map(|j| format!("set{i}-key{j}").into_bytes()).collect())
        .collect();
    let seed = 9;
    let p = 0.01;
    // The reads: READ keys of set r % sets (cycling through a small set).
    let read_keys: Vec<Vec<&[u8]>> = (0..reads)
        .map(|r| {
            let set = &keys[(r * 7) % sets];
            (0..READ).map(|j| set[j % set.len()].as_slice()).collect()
        })
        .collect();
    let threshold = Threshold::fraction(FRACTION)?;

    // The library's collection and the C ABI's, from the same keys.
    let hashed: Vec<(u64, Vec<KeyHash>)> = keys
        .iter()
        .enumerate()
        .map(|(i, set)| (i as u64, set.iter().map(|k| KeyHash::from_bytes(k, seed)).collect()))
        .collect();
    let library = SetIndex::build_with_hashing(&hashed, p, LayoutConfig::default(), HashScheme::default(), seed)?;
    let names: Vec<Vec<u8>> = (0..sets).map(|i| format!("set{i}").into_bytes()).collect();
    let name_ptrs: Vec<*const u8> = names.iter().map(|n| n.as_ptr()).collect();
    let name_lens: Vec<usize> = names.iter().map(Vec::len).collect();
    let flat: Vec<&Vec<u8>> = keys.iter().flatten().collect();
    let key_ptrs: Vec<*const u8> = flat.iter().map(|k| k.as_ptr()).collect();
    let key_lens: Vec<usize> = flat.iter().map(|k| k.len()).collect();
    let ends: Vec<usize> = keys.iter().scan(0, |end, set| Some(*end + set.len()).inspect(|&e| *end = e)).collect();
    let mut handle: *mut BloomsliceIndex = ptr::null_mut();
    // SAFETY: every pointer describes a live buffer of the stated length.
    let st = unsafe {
        bloomslice_index_build(
            p,
            seed,
            name_ptrs.as_ptr(),
            name_lens.as_ptr(),
            sets,
            key_ptrs.as_ptr(),
            key_lens.as_ptr(),
            ends.as_ptr(),
            &mut handle,
        )
    };
    if st != BloomsliceStatus::Ok {
        return Err(format!("bloomslice_index_build: {st:?}").into());
    }

    // One filter length, sized for the largest set.
    let params = BloomParams::for_capacity(20_000, p)?.with_seed(seed);
    let mut index = SlicedIndex::new(params);
    let mut index_handle: *mut BloomsliceIndex = ptr::null_mut();
    // SAFETY: a valid out pointer.
    let st = unsafe { bloomslice_index_new_sliced(params.m(), params.k(), seed, &mut index_handle) };
    if st != BloomsliceStatus::Ok {
        return Err(format!("bloomslice_index_new_sliced: {st:?}").into());
    }
    for (id, set) in &hashed {
        let mut filter = BloomFilter::new(params)?;
        set.iter().for_each(|&h| filter.insert_hash(h));
        index.insert_filter(*id, &filter)?;
        let raw: Vec<u64> = set.iter().map(|h| h.h1).collect();
        // SAFETY: live buffers of the stated lengths.
        let st = unsafe {
            bloomslice_index_add_set_hashes(
                index_handle,
                names[*id as usize].as_ptr(),
                names[*id as usize].len(),
                raw.as_ptr(),
                raw.len(),
                ptr::null_mut(),
            )
        };
        if st != BloomsliceStatus::Ok {
            return Err(format!("bloomslice_index_add_set_hashes: {st:?}").into());
        }
    }

    let read_ptrs: Vec<Vec<*const u8>> = read_keys.iter().map(|r| r.iter().map(|k| k.as_ptr()).collect()).collect();
    let read_lens: Vec<Vec<usize>> = read_keys.iter().map(|r| r.iter().map(|k| k.len()).collect()).collect();
    let (mut ids, mut counts) = (vec![0u64; sets], vec![0u32; sets]);
    let (mut scratch, mut out) = (Scores::new(), Vec::new());
    // The answers agree before anything is timed.
    for (r, keys) in read_keys.iter().enumerate() {
        let (st, n) = capi_threshold(handle, &read_ptrs[r], &read_lens[r], &mut ids, &mut counts);
        let got: Vec<(u64, u32)> = ids[..n].iter().copied().zip(counts[..n].iter().copied()).collect();
        if st != BloomsliceStatus::Ok || got != library.query_threshold(keys, threshold) {
            return Err(format!("read {r}: the C ABI and the library disagree").into());
        }
    }
    for (name, lib, capi) in [("collection", true, handle), ("one-m index", false, index_handle)] {
        let mut rows = Vec::new();
        for _ in 0..2 {
            // Alternating library and C ABI, twice each.
            let (lib_ns, lib_hits) = best(repeat, reads, || {
                read_keys
                    .iter()
                    .map(|keys| {
                        if lib {
                            library.query_threshold(keys, threshold).len()
                        } else {
                            index.query_threshold(keys, threshold).len()
                        }
                    })
                    .sum()
            });
            // The library with one scratch kept across reads, as the C ABI
            // keeps one per thread.
            let (kept_ns, kept_hits) = best(repeat, reads, || {
                read_keys
                    .iter()
                    .map(|keys| {
                        let hashes: Vec<KeyHash> = keys.iter().map(|k| KeyHash::from_bytes(k, seed)).collect();
                        if lib {
                            library.query_threshold(&hashes, threshold).len()
                        } else {
                            index.query_threshold_into(&hashes, threshold, &mut scratch, &mut out);
                            out.len()
                        }
                    })
                    .sum()
            });
            let (capi_ns, capi_hits) = best(repeat, reads, || {
                (0..reads).map(|r| capi_threshold(capi, &read_ptrs[r], &read_lens[r], &mut ids, &mut counts).1).sum()
            });
            if lib_hits != capi_hits || kept_hits != lib_hits {
                return Err(format!("{name}: {lib_hits} hits by the library, {capi_hits} by the C ABI").into());
            }
            rows.push((lib_ns, capi_ns, kept_ns));
        }
        let lib_ns = rows.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
        let capi_ns = rows.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
        let kept_ns = rows.iter().map(|r| r.2).fold(f64::INFINITY, f64::min);
        println!(
            "{name}: sets {sets} reads {reads} x {READ} keys, fraction {FRACTION}: library {lib_ns:.0} ns/read, \
             C ABI {capi_ns:.0} ns/read, ratio {:.3}; library from hashes with a kept scratch {kept_ns:.0} ns/read",
            capi_ns / lib_ns
        );
    }
    println!(
        "memory: collection {} bytes in {} parts, one-m index {} bytes",
        library.memory_bytes(),
        library.parts().filter(|part| !part.is_empty()).count(),
        index.memory_bytes()
    );
    // SAFETY: live handles, freed once.
    unsafe {
        bloomslice_index_free(handle);
        bloomslice_index_free(index_handle);
    }
    Ok(())
}

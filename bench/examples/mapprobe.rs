//! A mapped index file against the same index loaded into memory, warm, in
//! alternating rounds: the index of `benches/iai_full.rs` (`full` shape, N
//! filters) is saved into DIR, then opened twice, mapped
//! (`persist::open_mmap`, checksums verified, so every page has been read)
//! and loaded (`persist::load`, owned rows on huge pages when the kernel
//! allows). Each round times `query_batch` (1 024 keys a call) and
//! `query_into` over the same keys on both, loaded first in even rounds and
//! mapped first in odd ones, and prints `mapped / loaded`. It also says how
//! many row bytes of each sit on huge pages (for the mapped one, what the
//! kernel made of the `MADV_HUGEPAGE` advice on the file's pages).
//!
//! ```text
//! cargo run --release -p bloomslice-bench --example mapprobe -- 1000 DIR [ROUNDS]
//! ```

use std::hint::black_box;
use std::time::Instant;

use bloomslice::persist::{self, SetNames};
use bloomslice::{BatchResults, Loaded, SlicedConfig, SlicedIndex, Verify};
use bloomslice_bench::args::positional;
use bloomslice_bench::workload::random_full_index;

/// Query keys per timed pass.
const KEYS: usize = 100_000;

/// Nanoseconds per key of a batched and of a single-key pass.
fn time(index: &SlicedIndex, keys: &[[u8; 8]], batch: &mut BatchResults, out: &mut Vec<u64>) -> (f64, f64) {
    let start = Instant::now();
    for chunk in keys.chunks(1024) {
        index.query_batch(black_box(chunk), batch);
        black_box(&*batch);
    }
    let batched = start.elapsed().as_nanos() as f64 / keys.len() as f64;
    let start = Instant::now();
    for key in keys {
        index.query_into(black_box(key), out);
        black_box(&*out);
    }
    (batched, start.elapsed().as_nanos() as f64 / keys.len() as f64)
}

fn main() {
    let filters = positional("mapprobe", 1, 1000, |n| n > 0, "a filter count (a positive integer)");
    let Some(dir) = std::env::args().nth(2) else {
        eprintln!("mapprobe: argument 2 must be a directory to write the index file into");
        std::process::exit(2);
    };
    let rounds = positional("mapprobe", 3, 6, |n| n > 0, "a round count (a positive integer)");
    let (index, _, _, keys) = random_full_index(filters, KEYS, 11, SlicedConfig::default());
    let path = std::path::Path::new(&dir).join(format!("mapprobe-{filters}.bls"));
    if let Err(e) = persist::save(&path, &index, &SetNames::new()) {
        eprintln!("mapprobe: cannot save {}: {e}", path.display());
        std::process::exit(1);
    }
    drop(index);
    // SAFETY: a file this process just wrote and nobody else writes.
    let mapped = match unsafe { Loaded::<SlicedIndex>::open_mmap(&path, Verify::Full) } {
        Ok(m) => m.index,
        Err(e) => {
            eprintln!("mapprobe: cannot map {}: {e}", path.display());
            std::process::exit(1);
        }
    };
    let loaded = match Loaded::<SlicedIndex>::load(&path) {
        Ok(l) => l.index,
        Err(e) => {
            eprintln!("mapprobe: cannot load {}: {e}", path.display());
            std::process::exit(1);
        }
    };
    let (mut a, mut b) = (BatchResults::new(), BatchResults::new());
    loaded.query_batch(&keys, &mut a);
    mapped.query_batch(&keys, &mut b);
    assert!(a.iter().eq(b.iter()), "the mapped and the loaded index disagree");
    let mut out = Vec::new();
    // Warm both.
    time(&loaded, &keys, &mut a, &mut out);
    time(&mapped, &keys, &mut a, &mut out);
    println!(
        "{filters} filters, {} kernels, file {} ({:.1} MB); rows on huge pages: loaded {:.1} MB, mapped {:.1} MB; ns per key",
        loaded.kernels().backend(),
        path.display(),
        std::fs::metadata(&path).map_or(0, |m| m.len()) as f64 / 1e6,
        loaded.huge_page_bytes() as f64 / 1e6,
        mapped.huge_page_bytes() as f64 / 1e6,
    );
    for round in 0..rounds {
        let (lb, ls, mb, ms) = if round % 2 == 0 {
            let (lb, ls) = time(&loaded, &keys, &mut a, &mut out);
            let (mb, ms) = time(&mapped, &keys, &mut a, &mut out);
            (lb, ls, mb, ms)
        } else {
            let (mb, ms) = time(&mapped, &keys, &mut a, &mut out);
            let (lb, ls) = time(&loaded, &keys, &mut a, &mut out);
            (lb, ls, mb, ms)
        };
        println!(
            "round {round}: batched loaded {lb:.1} mapped {mb:.1} (mapped / loaded {:.2}); single loaded {ls:.1} mapped {ms:.1} ({:.2})",
            mb / lb,
            ms / ls
        );
    }
    let _ = std::fs::remove_file(&path);
}

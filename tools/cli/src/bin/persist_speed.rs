//! `persist-speed`: the persistence speed figures, in one run.
//!
//! 1. A ~1 GB index (the `large` layout: filters of 100 keys, paper
//!    parameters) is saved, read into memory, and memory-mapped (deferred
//!    and fully verified); answers of the mapped and loaded index are
//!    checked equal before anything is reported.
//! 2. A TSV of `set<TAB>key` lines (1000 sets x 10 000 keys by default) is
//!    written, and the same keys are inserted through the library directly
//!    (filters, then `insert_filters`); `bench/scripts/persist-speed.sh`
//!    then times `bloomslice build` on the TSV.
//!
//! ```text
//! persist-speed --dir /tmp/speed --gib 1 --tsv-lines 10000000
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use bloomslice::persist::{self, Verify};
use bloomslice::{BatchResults, BloomFilter, BloomParams, Loaded, SetNames, SlicedIndex};
use clap::Parser;

/// Persistence speed figures.
#[derive(Parser, Debug)]
struct Args {
    /// Directory for the files (on the disk being measured).
    #[arg(long)]
    dir: PathBuf,
    /// Approximate index size in GiB.
    #[arg(long, default_value_t = 1.0)]
    gib: f64,
    /// Lines of the TSV for the build comparison (0: skip).
    #[arg(long, default_value_t = 10_000_000)]
    tsv_lines: u64,
    /// Memory-mapped opens timed (the best is reported).
    #[arg(long, default_value_t = 5)]
    open_repeat: u32,
    /// Sets in the TSV.
    #[arg(long, default_value_t = 1000)]
    tsv_sets: u64,
}

/// [`persist::open_mmap`] on this program's own scratch file.
fn open_mmap(path: &std::path::Path, verify: Verify) -> bloomslice::Result<Loaded<SlicedIndex>> {
    // SAFETY: the file is this program's own scratch index in `--dir`: it
    // is written once, by this program, before it is mapped, and never
    // changed while a map of it is alive.
    unsafe { Loaded::<SlicedIndex>::open_mmap(path, verify) }
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Drops a file's (clean) pages from the page cache: `POSIX_FADV_DONTNEED`
/// touches only this file, needs no privilege, and leaves other processes'
/// caches alone.
fn evict(path: &std::path::Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path)?;
        file.sync_all()?;
        // SAFETY: `posix_fadvise` only reads its arguments; the descriptor
        // is open for the duration of the call.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.dir)?;
    let p = BloomParams::for_capacity(10_000, 0.01)?;
    let shard_bytes = p.m() as f64 * 16_384.0 / 8.0;
    let filters = ((args.gib * f64::from(1u32 << 30) / shard_bytes).round().max(1.0) as u64) * 16_384;
    let mut index = SlicedIndex::new(p);
    let mut names = SetNames::new();
    let t = Instant::now();
    index.reserve(filters as usize)?;
    for chunk in (0..filters).collect::<Vec<_>>().chunks(4096) {
        let built: Vec<(u64, BloomFilter)> = chunk
            .iter()
            .map(|&i| {
                let mut f = BloomFilter::new(p).expect("params are valid");
                for j in 0..100u64 {
                    f.insert(&(i * 100 + j).to_le_bytes());
                }
                (i, f)
            })
            .collect();
        let refs: Vec<(u64, &BloomFilter)> = built.iter().map(|(i, f)| (*i, f)).collect();
        index.insert_filters(&refs)?;
    }
    for i in 0..filters {
        names.insert(i, format!("set-{i}"))?;
    }
    println!("index: {filters} filters, m = {}, k = {}, built in {:.1} s", p.m(), p.k(), secs(t));
    let path = args.dir.join("speed.bsi");
    let t = Instant::now();
    persist::save(&path, &index, &names)?;
    let save_s = secs(t);
    let bytes = std::fs::metadata(&path)?.len();
    let mb = bytes as f64 / 1e6;
    println!("file: {:.1} MB", mb);
    println!("save (write + fsync + rename): {save_s:.3} s = {:.0} MB/s", mb / save_s);
    drop(index);
    // Cold: the file's pages dropped from the page cache (it was synced by
    // `save`, so they are clean), as after a reboot or on another machine.
    evict(&path)?;
    let t = Instant::now();
    let cold = Loaded::<SlicedIndex>::load(&path)?;
    let cold_s = secs(t);
    println!(
        "load cold (read from disk into memory, all checksums + validate): {cold_s:.3} s = {:.0} MB/s",
        mb / cold_s
    );
    drop(cold);
    let t = Instant::now();
    let loaded = Loaded::<SlicedIndex>::load(&path)?;
    let load_s = secs(t);
    println!("load warm (from the page cache, all checksums + validate): {load_s:.3} s = {:.0} MB/s", mb / load_s);
    evict(&path)?;
    let t = Instant::now();
    let cold_map = open_mmap(&path, Verify::Deferred)?;
    println!(
        "open_mmap cold (Verify::Deferred): {:.3} ms = {:.4}% of a cold load",
        secs(t) * 1e3,
        100.0 * secs(t) / cold_s
    );
    drop(cold_map);
    // Best of a few opens: one open is a few milliseconds, where a
    // scheduler hiccup on a shared machine would dominate.
    let mut mmap_s = f64::INFINITY;
    for _ in 0..args.open_repeat {
        let t = Instant::now();
        let mapped = open_mmap(&path, Verify::Deferred)?;
        mmap_s = mmap_s.min(secs(t));
        drop(mapped);
    }
    let mapped = open_mmap(&path, Verify::Deferred)?;
    println!(
        "open_mmap (Verify::Deferred, best of {}): {:.3} ms = {:.4}% of load",
        args.open_repeat,
        mmap_s * 1e3,
        100.0 * mmap_s / load_s
    );
    let t = Instant::now();
    let verified = open_mmap(&path, Verify::Full)?;
    println!("open_mmap (Verify::Full): {:.3} s", secs(t));
    drop(verified);
    let keys: Vec<[u8; 8]> = (0..20_000u64).map(|i| (i * 7919 % (filters * 200)).to_le_bytes()).collect();
    let (mut a, mut b) = (BatchResults::new(), BatchResults::new());
    loaded.index.query_batch(&keys, &mut a);
    mapped.index.query_batch(&keys, &mut b);
    assert!(a.iter().eq(b.iter()), "mapped and loaded answers differ");
    println!("checked: mapped == loaded on {} queries ({} matches)", keys.len(), a.total_matches());
    drop((loaded, mapped));
    std::fs::remove_file(&path)?;

    if args.tsv_lines == 0 {
        return Ok(());
    }
    let per_set = args.tsv_lines / args.tsv_sets;
    let tsv = args.dir.join("keys.tsv");
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tsv)?);
    let mut lines: Vec<(u64, String)> = Vec::with_capacity(args.tsv_lines as usize);
    for s in 0..args.tsv_sets {
        for j in 0..per_set {
            let key = format!("key-{}", s * per_set + j);
            writeln!(w, "set-{s}\t{key}")?;
            lines.push((s, key));
        }
    }
    w.flush()?;
    drop(w);
    let n = lines.len() as f64;
    let t = Instant::now();
    let mut built: Vec<BloomFilter> = (0..args.tsv_sets).map(|_| BloomFilter::new(p)).collect::<Result<_, _>>()?;
    for (s, key) in &lines {
        built[*s as usize].insert(key.as_bytes());
    }
    let mut index = SlicedIndex::new(p);
    let refs: Vec<(u64, &BloomFilter)> = built.iter().enumerate().map(|(i, f)| (i as u64, f)).collect();
    index.insert_filters(&refs)?;
    let lib_s = secs(t);
    println!("library direct: {} keys in {lib_s:.3} s = {:.0} keys/s", lines.len(), n / lib_s);
    println!("tsv: {} ({} lines)", tsv.display(), lines.len());
    Ok(())
}

//! Index files: round trips (save, load, mmap: same answers, ids and names),
//! atomic save, and hostile files (every byte flipped, every truncation,
//! wrong magic and version, absurd counts) giving typed errors.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bloomslice::kmer::KmerLength;
use bloomslice::persist::Loaded;
use bloomslice::persist::Verify;
use bloomslice::persist::{self, FORMAT_MAJOR, FORMAT_MINOR, HEADER_BYTES, MAGIC};
use bloomslice::{BloomFilter, BloomParams, Error, HashScheme, SetNames, SlicedConfig, SlicedIndex};
use proptest::prelude::*;

/// [`Loaded::open_mmap`] for these tests.
fn open_mmap(path: &std::path::Path, verify: Verify) -> bloomslice::Result<Loaded<SlicedIndex>> {
    // SAFETY: each test maps files in its own temporary directory, and only
    // ever replaces a mapped file by rename (`persist::save`); a file is
    // rewritten in place only after every map of it has been dropped.
    unsafe { Loaded::<SlicedIndex>::open_mmap(path, verify) }
}

/// The system allocator, recording the largest single allocation made by
/// the current thread while tracking is on (tests run on several threads).
struct Tracking;

thread_local! {
    static TRACK: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: the thread-locals may be gone while a thread exits.
    let _ = TRACK.try_with(|t| {
        if t.get() {
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

// SAFETY: forwards every call to the system allocator; the bookkeeping
// touches only const-initialised thread-locals (no allocation, no reentry).
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// The largest single allocation `f` makes on this thread.
fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.with(|l| l.set(0));
    TRACK.with(|t| t.set(true));
    f();
    TRACK.with(|t| t.set(false));
    LARGEST.with(Cell::get)
}

fn build(params: BloomParams, sets: &[(u64, Vec<u64>)], config: SlicedConfig) -> (SlicedIndex, SetNames) {
    let mut index = SlicedIndex::with_config(params, config);
    let mut names = SetNames::new();
    for (id, keys) in sets {
        let mut f = BloomFilter::new(params).unwrap();
        for k in keys {
            f.insert(&k.to_le_bytes());
        }
        index.insert_filter(*id, &f).unwrap();
        if id % 3 != 0 {
            names.insert(*id, format!("set-{id}").into_bytes()).unwrap();
        }
    }
    (index, names)
}

/// A few-KB index: m = 64, 10 sets in one 512-column shard.
fn small() -> (SlicedIndex, SetNames) {
    small_with(BloomParams::new(64, 2).unwrap().with_seed(5))
}

fn small_with(params: BloomParams) -> (SlicedIndex, SetNames) {
    let sets: Vec<(u64, Vec<u64>)> = (0..10u64).map(|i| (i * 11, (i * 3..i * 3 + 3).collect())).collect();
    build(params, &sets, SlicedConfig::default())
}

fn same(a: &SlicedIndex, b: &SlicedIndex, keys: impl IntoIterator<Item = u64>) {
    assert_eq!(a.params(), b.params());
    let (mut ia, mut ib): (Vec<u64>, Vec<u64>) = (a.ids().collect(), b.ids().collect());
    ia.sort_unstable();
    ib.sort_unstable();
    assert_eq!(ia, ib);
    for key in keys {
        assert_eq!(a.query(&key.to_le_bytes()), b.query(&key.to_le_bytes()), "key {key}");
    }
}

/// Every byte natively; under Miri, which interprets every access, every
/// `MIRI_STRIDE`-th, which still reaches every section of a small file.
const MIRI_STRIDE: usize = if cfg!(miri) { 97 } else { 1 };

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// `index` and `names` saved as `name` in a new temporary directory.
fn saved(name: &str, index: &SlicedIndex, names: &SetNames) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempdir();
    let path = dir.path().join(name);
    persist::save(&path, index, names).unwrap();
    (dir, path)
}

#[test]
fn save_load_mmap_round_trip() {
    let (index, names) = small();
    let (_dir, path) = saved("small.bsi", &index, &names);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, persist::to_bytes(&index, &names).unwrap());
    assert!(bytes.len() < 8192, "{}", bytes.len());
    let loaded = Loaded::<SlicedIndex>::load(&path).unwrap();
    assert!(!loaded.is_mapped() && loaded.info.rows_verified);
    for verify in [Verify::Full, Verify::Deferred] {
        let mut mapped = open_mmap(&path, verify).unwrap();
        assert!(mapped.is_mapped());
        assert_eq!(mapped.info.rows_verified, verify == Verify::Full);
        mapped.verify().unwrap();
        same(&index, &mapped.index, 0..200);
        assert_eq!(mapped.names, names);
    }
    same(&index, &loaded.index, 0..200);
    assert_eq!(loaded.names, names);
    assert_eq!(loaded.info.version, (FORMAT_MAJOR, FORMAT_MINOR));
    assert_eq!(loaded.info.file_bytes, bytes.len() as u64);
    assert_eq!(persist::to_bytes(&loaded.index, &loaded.names).unwrap(), bytes, "a loaded index saves identically");
}

/// Indexes of every shard width (1 to 256 columns, a 512-column shard
/// beside a narrow one), with `m` whose rows fill no whole cache line:
/// bytes, file and map (both checks) round-trip, every shard's rows start
/// at a multiple of 64 (the map would refuse them otherwise), the file
/// size is the estimate, and a mapped narrow index copies on write.
#[test]
#[cfg_attr(miri, ignore = "45 indexes, each saved, loaded and mapped twice: too many to interpret")]
fn narrow_shards_round_trip_through_bytes_files_and_maps() {
    let config = SlicedConfig { max_shard_columns: 512, ..SlicedConfig::default() };
    for m in [61u64, 200, 1000] {
        let p = BloomParams::new(m, 3).unwrap().with_seed(2);
        for n in [1u64, 2, 3, 4, 7, 8, 16, 20, 32, 40, 64, 100, 128, 256, 520] {
            let sets: Vec<(u64, Vec<u64>)> = (0..n).map(|i| (i * 5, (i * 2..i * 2 + 4).collect())).collect();
            let (mut index, names) = build(p, &sets, config);
            if n > 3 {
                index.remove_set(5).unwrap();
            }
            let case = format!("m {m}, {n} sets");
            let bytes = persist::to_bytes(&index, &names).unwrap();
            let name_bytes: u64 = index.ids().filter_map(|id| names.name(id)).map(|b| b.len() as u64).sum();
            if n <= 3 {
                assert_eq!(
                    persist::estimated_file_bytes(&p, &config, n, name_bytes),
                    Some(bytes.len() as u64),
                    "{case}"
                );
            }
            let back = Loaded::<SlicedIndex>::from_bytes(&bytes).unwrap();
            same(&index, &back.index, 0..300);
            assert_eq!(back.index.rows_bytes(), index.rows_bytes(), "{case}");
            assert_eq!(persist::to_bytes(&back.index, &back.names).unwrap(), bytes, "{case}");
            let (_dir, path) = saved("narrow.bsi", &index, &names);
            same(&index, &Loaded::<SlicedIndex>::load(&path).unwrap().index, 0..300);
            for verify in [Verify::Full, Verify::Deferred] {
                let mut mapped = open_mmap(&path, verify).unwrap();
                assert!(mapped.is_mapped(), "{case}");
                mapped.verify().unwrap();
                same(&index, &mapped.index, 0..300);
                mapped.index.insert_key(0, "late").unwrap();
                mapped.index.validate().unwrap();
                assert!(mapped.index.query("late").contains(&0), "{case}");
            }
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{case}: the file is untouched");
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "seven files of a 512-column shard read back: too slow to interpret")]
fn the_kmer_length_is_saved_and_minor_0_files_still_open() {
    let (mut index, names) = small();
    assert_eq!(index.kmer_length(), None);
    let plain = persist::to_bytes(&index, &names).unwrap();
    assert_eq!(&plain[104..108], &[0; 4], "an index of plain keys has k-mer length 0");
    index.set_kmer_length(Some(KmerLength::new(21).unwrap()));
    let (_dir, path) = saved("seqs.bsi", &index, &names);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(u32::from_le_bytes(bytes[104..108].try_into().unwrap()), 21);
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), FORMAT_MINOR);
    let loaded = Loaded::<SlicedIndex>::load(&path).unwrap();
    assert_eq!(loaded.index.kmer_length().map(KmerLength::get), Some(21));
    for verify in [Verify::Full, Verify::Deferred] {
        assert_eq!(open_mmap(&path, verify).unwrap().index.kmer_length().map(KmerLength::get), Some(21));
    }
    assert_eq!(persist::to_bytes(&loaded.index, &names).unwrap(), bytes, "the length survives a load and save");
    // A file written by a minor-0 build: the old hash scheme (the only one
    // minor 0 knows), minor 0, reserved bytes zero.
    // Its shards are multiples of 512 columns (minor 2 added narrower ones).
    let (narrow, old_names) = small_with(index.params().with_scheme(HashScheme::Xxh3Double));
    let mut old_index = SlicedIndex::new(*narrow.params());
    old_index.reserve(512).unwrap();
    for id in narrow.ids() {
        old_index.insert_filter(id, &narrow.filter_cloned(id).unwrap()).unwrap();
    }
    assert_eq!(old_index.columns(), 512);
    let narrow_bytes = persist::to_bytes(&narrow, &old_names).unwrap();
    for minor in [0u16, 1] {
        let err = Loaded::<SlicedIndex>::from_bytes(&forge(&narrow_bytes, 10, &minor.to_le_bytes())).unwrap_err();
        assert!(matches!(err, Error::CorruptFile(_)), "a narrow shard in a 1.{minor} file: {err:?}");
    }
    let old = forge(&persist::to_bytes(&old_index, &old_names).unwrap(), 10, &0u16.to_le_bytes());
    let loaded = Loaded::<SlicedIndex>::from_bytes(&old).unwrap();
    assert_eq!(loaded.info.version, (1, 0));
    assert_eq!(loaded.index.kmer_length(), None);
    same(&old_index, &loaded.index, 0..200);
    // Minor 0 reserves the bytes that minor 1 uses.
    let err = Loaded::<SlicedIndex>::from_bytes(&forge(&bytes, 10, &0u16.to_le_bytes())).unwrap_err();
    assert!(matches!(err, Error::CorruptFile(_)), "{err:?}");
    // A later minor may use the reserved bytes after the k-mer length.
    let later = forge(&forge(&bytes, 10, &(FORMAT_MINOR + 1).to_le_bytes()), 108, &[7; 12]);
    assert_eq!(Loaded::<SlicedIndex>::from_bytes(&later).unwrap().index.kmer_length().map(KmerLength::get), Some(21));
}

#[test]
fn a_mapped_index_is_writable_by_copy_and_the_file_is_untouched() {
    let (index, names) = small();
    let (_dir, path) = saved("cow.bsi", &index, &names);
    let before = std::fs::read(&path).unwrap();
    let mut mapped = open_mmap(&path, Verify::Deferred).unwrap();
    let p = *index.params();
    let mut f = BloomFilter::new(p).unwrap();
    f.insert("new key");
    mapped.index.insert_filter(999, &f).unwrap();
    mapped.index.remove_set(0).unwrap();
    mapped.index.validate().unwrap();
    assert!(mapped.index.query("new key").contains(&999));
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Saving over a mapped file replaces it by rename: the old map stays valid.
    let old = open_mmap(&path, Verify::Full).unwrap();
    persist::save(&path, &mapped.index, &mapped.names).unwrap();
    same(&index, &old.index, 0..100);
    let new = Loaded::<SlicedIndex>::load(&path).unwrap();
    same(&mapped.index, &new.index, 0..100);
}

#[test]
fn save_is_atomic_and_leaves_no_temporary_file() {
    let (index, names) = small();
    let (dir, path) = saved("a.bsi", &index, &names);
    let first = std::fs::read(&path).unwrap();
    // A failing save (the target is a directory) keeps the old file and
    // cleans up its temporary.
    let target_dir = dir.path().join("sub");
    std::fs::create_dir(&target_dir).unwrap();
    std::fs::write(target_dir.join("x"), b"x").unwrap();
    assert!(matches!(persist::save(&target_dir, &index, &names), Err(Error::Io { .. })));
    assert!(matches!(persist::save(dir.path().join("missing/a.bsi"), &index, &names), Err(Error::Io { .. })));
    // Every save takes the target's writer lock: the lock files stay.
    let mut listing: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    listing.sort();
    assert_eq!(listing, [".a.bsi.lock", ".sub.lock", "a.bsi", "sub"], "{listing:?}");
    assert_eq!(std::fs::read(&path).unwrap(), first);
}

#[test]
fn every_flipped_byte_and_every_truncation_is_a_typed_error() {
    let (index, names) = small();
    let bytes = persist::to_bytes(&index, &names).unwrap();
    let mut copy = bytes.clone();
    for i in (0..bytes.len()).step_by(MIRI_STRIDE) {
        for flip in [0xffu8, 1 << (i % 8)] {
            copy[i] ^= flip;
            let err =
                Loaded::<SlicedIndex>::from_bytes(&copy).expect_err(&format!("byte {i} ^ {flip:#x} was accepted"));
            assert!(
                matches!(
                    err,
                    Error::BadMagic
                        | Error::UnsupportedVersion { .. }
                        | Error::ChecksumMismatch { .. }
                        | Error::CorruptFile(_)
                        | Error::Truncated { .. }
                ),
                "byte {i}: {err:?}"
            );
            copy[i] ^= flip;
        }
    }
    for len in (0..bytes.len()).step_by(MIRI_STRIDE) {
        let err =
            Loaded::<SlicedIndex>::from_bytes(&bytes[..len]).expect_err(&format!("truncated at {len} was accepted"));
        assert!(matches!(err, Error::BadMagic | Error::Truncated { .. }), "len {len}: {err:?}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(Loaded::<SlicedIndex>::from_bytes(&longer), Err(Error::CorruptFile(_))));
}

#[test]
fn flipped_bytes_through_mmap_are_caught_by_verify() {
    let (index, names) = small();
    let bytes = persist::to_bytes(&index, &names).unwrap();
    let dir = tempdir();
    let path = dir.path().join("flip.bsi");
    for i in (0..bytes.len()).step_by(97) {
        let mut copy = bytes.clone();
        copy[i] ^= 0x10;
        std::fs::write(&path, &copy).unwrap();
        assert!(open_mmap(&path, Verify::Full).is_err(), "byte {i}");
        if let Ok(mut lazy) = open_mmap(&path, Verify::Deferred) {
            assert!(i as u64 >= HEADER_BYTES, "byte {i}: only row bytes may pass a deferred open");
            assert!(matches!(lazy.verify(), Err(Error::ChecksumMismatch { .. })), "byte {i}");
        }
    }
    std::fs::write(&path, b"").unwrap();
    assert_eq!(open_mmap(&path, Verify::Full).unwrap_err(), Error::BadMagic);
    assert!(matches!(Loaded::<SlicedIndex>::load(dir.path().join("nope")), Err(Error::Io { op: "open", .. })));
}

/// Rewrites the header fields at `at` and fixes the header checksum, the way
/// a hostile (not merely corrupt) file would.
fn forge(bytes: &[u8], at: usize, value: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at..at + value.len()].copy_from_slice(value);
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..120]);
    b[120..128].copy_from_slice(&sum.to_le_bytes());
    b
}

#[test]
fn no_allocation_beyond_what_the_file_implies() {
    let (index, names) = small();
    let bytes = persist::to_bytes(&index, &names).unwrap();
    // The bound of docs/FORMAT.md: per-column owner tables are at most 64x
    // the row bytes; the rest is proportional to the file.
    let bound = 64 * bytes.len() + 4096;
    for (at, value) in [
        (56usize, u64::MAX / 64),
        (56, 1 << 40),
        (64, u64::MAX / 64),
        (64, 1 << 40),
        (72, 1 << 50),
        (16, 1 << 40),
        (24, (1 << 32) - 512),
    ] {
        let hostile = forge(&bytes, at, &value.to_le_bytes());
        let largest =
            largest_allocation(|| assert!(Loaded::<SlicedIndex>::from_bytes(&hostile).is_err(), "field at {at}"));
        assert!(largest <= bound, "field at {at}: allocated {largest} bytes for a {}-byte file", bytes.len());
    }
    let mut copy = bytes.clone();
    let largest = largest_allocation(|| {
        for i in (0..copy.len()).step_by(MIRI_STRIDE) {
            copy[i] ^= 0x80;
            let _ = Loaded::<SlicedIndex>::from_bytes(&copy);
            copy[i] ^= 0x80;
        }
    });
    assert!(largest > 0 && largest <= bound, "allocated {largest} bytes for a {}-byte file", bytes.len());
}

#[test]
fn hostile_headers_are_typed_errors() {
    let (index, names) = small();
    let bytes = persist::to_bytes(&index, &names).unwrap();
    assert_eq!(&bytes[..8], &MAGIC);
    let mut wrong_magic = bytes.clone();
    wrong_magic[0] = b'X';
    assert_eq!(Loaded::<SlicedIndex>::from_bytes(&wrong_magic).unwrap_err(), Error::BadMagic);
    let v2 = forge(&bytes, 8, &2u16.to_le_bytes());
    let err = Loaded::<SlicedIndex>::from_bytes(&v2).unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { major: 2, supported: 1, .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("version 2.{FORMAT_MINOR} is not supported")), "{err}");
    let minor = forge(&bytes, 10, &7u16.to_le_bytes());
    assert_eq!(Loaded::<SlicedIndex>::from_bytes(&minor).unwrap().info.version, (1, 7), "newer minors are read");
    for (at, value) in [
        (16usize, u64::MAX.to_le_bytes().to_vec()), // file length
        (24, 0u64.to_le_bytes().to_vec()),          // m = 0
        (24, u64::MAX.to_le_bytes().to_vec()),      // absurd m
        (32, 1000u32.to_le_bytes().to_vec()),       // absurd k
        (36, 9u32.to_le_bytes().to_vec()),          // unknown scheme
        (48, 100u32.to_le_bytes().to_vec()),        // shard width
        (56, u64::MAX.to_le_bytes().to_vec()),      // absurd shard count
        (56, (1u64 << 40).to_le_bytes().to_vec()),  // shard count beyond the file
        (64, u64::MAX.to_le_bytes().to_vec()),      // absurd set count
        (64, 1_000_000u64.to_le_bytes().to_vec()),  // set count beyond the file
        (72, (1u64 << 50).to_le_bytes().to_vec()),  // names beyond the file
        (80, 136u64.to_le_bytes().to_vec()),        // misaligned id map
        (96, 65u64.to_le_bytes().to_vec()),         // misaligned rows
        (104, 33u32.to_le_bytes().to_vec()),        // k-mer length above 32
        (108, 1u64.to_le_bytes().to_vec()),         // reserved
    ] {
        let err = Loaded::<SlicedIndex>::from_bytes(&forge(&bytes, at, &value)).unwrap_err();
        assert!(matches!(err, Error::CorruptFile(_) | Error::Truncated { .. }), "field at {at}: {err:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    #[cfg_attr(miri, ignore = "indexes of up to 1200 sets: too large to interpret")]
    fn round_trip_keeps_answers_ids_and_names(
        params in (1u64..3000, 1u32..8, any::<u64>())
            .prop_map(|(m, k, seed)| BloomParams::new(m, k).unwrap().with_seed(seed)),
        shard_cols in prop::sample::select(vec![512usize, 1024, 2048]),
        sets in prop::collection::btree_map(any::<u64>(), prop::collection::vec(0u64..500, 0..20), 0..1200),
        deletes in prop::collection::vec(any::<prop::sample::Index>(), 0..50),
    ) {
        let sets: Vec<(u64, Vec<u64>)> = sets.into_iter().collect();
        let config = SlicedConfig { max_shard_columns: shard_cols, prefetch_distance: 3, ..SlicedConfig::default() };
        let (mut index, mut names) = build(params, &sets, config);
        for d in &deletes {
            if !sets.is_empty() {
                let id = sets[d.index(sets.len())].0;
                if index.remove_set(id).is_ok() {
                    names.remove(id);
                }
            }
        }
        let bytes = persist::to_bytes(&index, &names).unwrap();
        let loaded = Loaded::<SlicedIndex>::from_bytes(&bytes).unwrap();
        same(&index, &loaded.index, 0..600);
        prop_assert_eq!(&loaded.names, &names);
        prop_assert_eq!(loaded.index.config(), index.config());
        let (_dir, path) = saved("p.bsi", &index, &names);
        let mapped = open_mmap(&path, Verify::Full).unwrap();
        same(&index, &mapped.index, 0..600);
        prop_assert_eq!(&mapped.names, &names);
        for id in index.ids() {
            prop_assert_eq!(mapped.index.filter_cloned(id).unwrap(), index.filter_cloned(id).unwrap());
        }
    }
}

/// Writes the fuzz target's seed corpus (valid files of several shapes):
/// `BLOOMSLICE_CORPUS_DIR=fuzz/corpus/load cargo test -p bloomslice --test persist -- --ignored`.
#[test]
#[ignore = "writes the fuzz seed corpus when asked"]
fn write_fuzz_seed_corpus() {
    let Ok(dir) = std::env::var("BLOOMSLICE_CORPUS_DIR") else { return };
    std::fs::create_dir_all(&dir).unwrap();
    let (index, names) = small();
    let mut seeds = vec![("small", persist::to_bytes(&index, &names).unwrap())];
    let empty = SlicedIndex::new(BloomParams::new(100, 3).unwrap());
    seeds.push(("empty", persist::to_bytes(&empty, &SetNames::new()).unwrap()));
    let sets: Vec<(u64, Vec<u64>)> = (0..600u64).map(|i| (i, vec![i])).collect();
    let config = SlicedConfig { max_shard_columns: 512, prefetch_distance: 2, ..SlicedConfig::default() };
    let (two, names) = build(BloomParams::new(16, 1).unwrap(), &sets, config);
    seeds.push(("two-shards", persist::to_bytes(&two, &names).unwrap()));
    let (mut holes, names) = build(BloomParams::new(7, 3).unwrap(), &sets[..40], SlicedConfig::default());
    for id in (0..40).step_by(3) {
        holes.remove_set(id).unwrap();
    }
    seeds.push(("holes", persist::to_bytes(&holes, &names).unwrap()));
    for (name, bytes) in seeds {
        std::fs::write(std::path::Path::new(&dir).join(name), bytes).unwrap();
    }
}

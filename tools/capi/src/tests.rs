//! The C ABI called from Rust as C calls it, against the library's own
//! answers, on every layout.

use std::ffi::{CStr, CString};
use std::ptr;

use bloomslice::score::{Scores, Threshold};
use bloomslice::{HashScheme, KeyHash, LayoutConfig, SetIndex};

use super::*;

fn last_error() -> String {
    // SAFETY: `bloomslice_last_error` returns a NUL-terminated string.
    unsafe { CStr::from_ptr(bloomslice_last_error()) }.to_string_lossy().into_owned()
}

/// Pointers and lengths of `keys`, as the C functions take them.
fn c_keys<K: AsRef<[u8]>>(keys: &[K]) -> (Vec<*const u8>, Vec<usize>) {
    (keys.iter().map(|k| k.as_ref().as_ptr()).collect(), keys.iter().map(|k| k.as_ref().len()).collect())
}

/// An empty index of one filter length (m = 10 112, k = 7, seed 3).
fn new_sliced() -> *mut BloomsliceIndex {
    let mut h = ptr::null_mut();
    // SAFETY: `h` is a valid out pointer.
    assert_eq!(unsafe { bloomslice_index_new_sliced_for_capacity(1000, 0.01, 3, &mut h) }, BloomsliceStatus::Ok);
    h
}

/// `bloomslice_index_add_set`: the status and the id.
fn try_add<K: AsRef<[u8]>>(h: *mut BloomsliceIndex, name: &str, keys: &[K]) -> (BloomsliceStatus, u64) {
    let (ptrs, lens) = c_keys(keys);
    let mut id = u64::MAX;
    // SAFETY: all pointers describe live buffers of the stated lengths.
    let st = unsafe {
        bloomslice_index_add_set(h, name.as_ptr(), name.len(), ptrs.as_ptr(), lens.as_ptr(), keys.len(), &mut id)
    };
    (st, id)
}

fn add<K: AsRef<[u8]>>(h: *mut BloomsliceIndex, name: &str, keys: &[K]) -> u64 {
    let (st, id) = try_add(h, name, keys);
    assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
    id
}

fn add_keys<K: AsRef<[u8]>>(h: *mut BloomsliceIndex, name: &str, keys: &[K]) -> BloomsliceStatus {
    let (ptrs, lens) = c_keys(keys);
    // SAFETY: live buffers of the stated lengths.
    unsafe { bloomslice_index_add_keys(h, name.as_ptr(), name.len(), ptrs.as_ptr(), lens.as_ptr(), keys.len()) }
}

fn remove(h: *mut BloomsliceIndex, name: &str) -> BloomsliceStatus {
    // SAFETY: a live handle and name.
    unsafe { bloomslice_index_remove_set(h, name.as_ptr(), name.len()) }
}

fn query(h: *const BloomsliceIndex, key: &[u8]) -> Vec<u64> {
    let mut ids = vec![0u64; 64];
    let mut n = 0;
    // SAFETY: live buffers of the stated lengths.
    let st = unsafe { bloomslice_query(h, key.as_ptr(), key.len(), ids.as_mut_ptr(), ids.len(), &mut n) };
    assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
    ids.truncate(n);
    ids
}

fn hash_key(h: *const BloomsliceIndex, key: &[u8]) -> u64 {
    let mut x = 0;
    // SAFETY: live buffers.
    assert_eq!(unsafe { bloomslice_hash_key(h, key.as_ptr(), key.len(), &mut x) }, BloomsliceStatus::Ok);
    x
}

/// A batch's answers: ids, offsets and total.
type Batch = (Vec<u64>, Vec<usize>, usize);

/// A batch call of `n` keys with room for `cap` ids: `call` gets the
/// caller's buffers (ids, offsets, total).
fn batch_with(
    n: usize, cap: usize, call: impl FnOnce(*mut u64, *mut usize, *mut usize) -> BloomsliceStatus,
) -> (BloomsliceStatus, Batch) {
    let (mut ids, mut offsets, mut total) = (vec![0u64; cap], vec![0usize; n + 1], 0);
    let st = call(ids.as_mut_ptr(), offsets.as_mut_ptr(), &mut total);
    ids.truncate(total.min(cap));
    (st, (ids, offsets, total))
}

/// `bloomslice_query_batch` of `keys` with room for `cap` ids.
fn batch<K: AsRef<[u8]>>(h: *const BloomsliceIndex, keys: &[K], cap: usize) -> (BloomsliceStatus, Batch) {
    let (ptrs, lens) = c_keys(keys);
    batch_with(keys.len(), cap, |ids, offsets, total| {
        // SAFETY: live buffers of the stated lengths.
        unsafe { bloomslice_query_batch(h, ptrs.as_ptr(), lens.as_ptr(), keys.len(), ids, cap, offsets, total) }
    })
}

/// `bloomslice_query_batch_hashes` of `hashes` with room for `cap` ids.
fn batch_hashes(h: *const BloomsliceIndex, hashes: &[u64], cap: usize) -> (BloomsliceStatus, Batch) {
    batch_with(hashes.len(), cap, |ids, offsets, total| {
        // SAFETY: live buffers of the stated lengths.
        unsafe { bloomslice_query_batch_hashes(h, hashes.as_ptr(), hashes.len(), ids, cap, offsets, total) }
    })
}

/// `keys` as one batch of byte keys and, hashed, as one batch of hashes,
/// each with room for `cap` ids: both succeed with the same answers, and
/// key `i`'s ids are those of a single query. Returns the batch and the
/// hashes.
fn batches_agree(h: *const BloomsliceIndex, keys: &[Vec<u8>], cap: usize) -> (Batch, Vec<u64>) {
    let (st, (ids, offsets, total)) = batch(h, keys, cap);
    assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
    let hashes: Vec<u64> = keys.iter().map(|k| hash_key(h, k)).collect();
    let (st, by_hash) = batch_hashes(h, &hashes, cap);
    assert_eq!(st, BloomsliceStatus::Ok);
    assert_eq!((&ids, &offsets, total), (&by_hash.0, &by_hash.1, by_hash.2));
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(&ids[offsets[i]..offsets[i + 1]], query(h, key).as_slice(), "key {i}");
    }
    ((ids, offsets, total), hashes)
}

/// Scores (`fraction` `None`) or thresholds `keys` with room for `cap`
/// sets: the status, the pairs written and the number reported.
fn try_score<K: AsRef<[u8]>>(
    h: *const BloomsliceIndex, keys: &[K], fraction: Option<f64>, cap: usize,
) -> (BloomsliceStatus, Vec<(u64, u32)>, usize) {
    let (ptrs, lens) = c_keys(keys);
    let (mut ids, mut counts, mut n) = (vec![0u64; cap], vec![0u32; cap], 0);
    let (ids_out, counts_out) = (ids.as_mut_ptr(), counts.as_mut_ptr());
    let (keys_in, lens_in) = (ptrs.as_ptr(), lens.as_ptr());
    // SAFETY: live buffers of the stated lengths.
    let st = unsafe {
        match fraction {
            None => bloomslice_score(h, keys_in, lens_in, keys.len(), ids_out, counts_out, cap, &mut n),
            Some(f) => bloomslice_query_threshold(h, keys_in, lens_in, keys.len(), f, ids_out, counts_out, cap, &mut n),
        }
    };
    let room = n.min(cap);
    (st, ids[..room].iter().copied().zip(counts[..room].iter().copied()).collect(), n)
}

fn score<K: AsRef<[u8]>>(h: *const BloomsliceIndex, keys: &[K], fraction: Option<f64>) -> Vec<(u64, u32)> {
    let (st, pairs, _) = try_score(h, keys, fraction, 64);
    assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
    pairs
}

fn info(h: *const BloomsliceIndex) -> BloomsliceInfo {
    let mut info = BloomsliceInfo::default();
    // SAFETY: live handle, valid out pointer.
    assert_eq!(unsafe { bloomslice_index_info(h, &mut info) }, BloomsliceStatus::Ok, "{}", last_error());
    info
}

/// The library's index behind a handle.
fn library<'a>(h: *const BloomsliceIndex) -> &'a Engine {
    // SAFETY: a live handle, not changed while the reference is used.
    unsafe { &(*h).engine }
}

fn free(handles: &[*mut BloomsliceIndex]) {
    for &h in handles {
        // SAFETY: live handles, each freed once.
        unsafe { bloomslice_index_free(h) };
    }
}

/// Sets of skewed sizes: set `i` holds `sizes[i]` keys `"{i}-{j}"`.
fn skewed(sizes: &[usize]) -> Vec<Vec<Vec<u8>>> {
    sizes.iter().enumerate().map(|(i, &n)| (0..n).map(|j| format!("{i}-{j}").into_bytes()).collect()).collect()
}

/// `bloomslice_index_build` of `sets` (named `set-{i}`) at `fp`, seed 5.
fn build(sets: &[Vec<Vec<u8>>], fp: f64) -> *mut BloomsliceIndex {
    let names: Vec<Vec<u8>> = (0..sets.len()).map(|i| format!("set-{i}").into_bytes()).collect();
    let (name_ptrs, name_lens) = c_keys(&names);
    let keys: Vec<&Vec<u8>> = sets.iter().flatten().collect();
    let (key_ptrs, key_lens) = c_keys(&keys);
    let ends: Vec<usize> = sets.iter().scan(0, |end, set| Some(*end + set.len()).inspect(|&e| *end = e)).collect();
    let mut h = ptr::null_mut();
    // SAFETY: live buffers of the stated lengths.
    let st = unsafe {
        bloomslice_index_build(
            fp,
            5,
            name_ptrs.as_ptr(),
            name_lens.as_ptr(),
            sets.len(),
            key_ptrs.as_ptr(),
            key_lens.as_ptr(),
            ends.as_ptr(),
            &mut h,
        )
    };
    assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
    h
}

#[test]
fn build_query_remove_and_batch_agree_with_the_library() {
    let h = new_sliced();
    let a = add(h, "a", &[&b"apple"[..], b"pear", b""]);
    let b = add(h, "b", &[b"pear", b"plum"]);
    assert_ne!(a, b);
    assert_eq!(query(h, b"apple"), vec![a]);
    let mut both = query(h, b"pear");
    both.sort_unstable();
    assert_eq!(both, vec![a, b]);
    assert!(query(h, b"").contains(&a));

    // The batch of byte keys and of hashes answer as single queries do.
    let keys: Vec<Vec<u8>> = (0..5000u32).map(|i| format!("k{i}").into_bytes()).chain([b"pear".to_vec()]).collect();
    let ((_, offsets, total), hashes) = batches_agree(h, &keys, 2 * keys.len());
    assert_eq!(offsets[keys.len()], total);

    // A short buffer: complete offsets and total, BUFFER_TOO_SMALL.
    let (st, short) = batch_hashes(h, &hashes, 0);
    assert_eq!(st, BloomsliceStatus::BufferTooSmall);
    assert_eq!((short.1, short.2), (offsets, total));

    let (mut len, mut has) = (0, false);
    // SAFETY: a live handle and valid out pointers.
    unsafe {
        assert_eq!(bloomslice_index_len(h, &mut len), BloomsliceStatus::Ok);
        assert_eq!(bloomslice_index_contains(h, a, &mut has), BloomsliceStatus::Ok);
    }
    assert_eq!((len, has), (2, true));
    assert_eq!(remove(h, "a"), BloomsliceStatus::Ok);
    assert_eq!(query(h, b"pear"), vec![b]);
    assert_eq!(remove(h, "a"), BloomsliceStatus::NotFound);
    assert!(last_error().contains("no set named"), "{}", last_error());
    // SAFETY: a live handle and valid out pointers.
    unsafe {
        assert_eq!(bloomslice_index_len(h, &mut len), BloomsliceStatus::Ok);
        assert_eq!(bloomslice_index_contains(h, a, &mut has), BloomsliceStatus::Ok);
    }
    assert_eq!((len, has), (1, false));

    // Keys added to a set of one filter length are found.
    assert_eq!(add_keys(h, "b", &[b"quince"]), BloomsliceStatus::Ok);
    assert!(query(h, b"quince").contains(&b));
    assert_eq!(add_keys(h, "a", &[b"quince"]), BloomsliceStatus::NotFound);
    free(&[h]);
}

#[test]
fn scores_and_thresholds_of_an_index_are_the_librarys() {
    let h = new_sliced();
    let sets: Vec<Vec<Vec<u8>>> =
        (0..6).map(|i| (0..200).map(|k| format!("{}", i * 50 + k).into_bytes()).collect()).collect();
    for (i, keys) in sets.iter().enumerate() {
        add(h, &format!("s{i}"), keys);
    }
    let read = &sets[3][..120];
    let Engine::Sliced(lib) = library(h) else { panic!("not sliced") };
    let mut scores = Scores::new();
    lib.score_into(read, &mut scores);
    assert_eq!(score(h, read, None), scores.iter().collect::<Vec<_>>());
    let mut pairs = Vec::new();
    for fraction in [0.0, 0.5, 0.9, 1.0] {
        pairs = score(h, read, Some(fraction));
        assert_eq!(pairs, lib.query_threshold(read, Threshold::fraction(fraction).unwrap()), "{fraction}");
    }
    // Set 3 holds every key read (the fraction 1.0 answer above).
    assert!(pairs.contains(&(3, 120)));
    // A short buffer reports how many sets there are; a bad fraction is an error.
    let (st, _, n) = try_score(h, read, None, 1);
    assert_eq!((st, n), (BloomsliceStatus::BufferTooSmall, scores.iter().count()));
    assert_eq!(try_score(h, read, Some(1.5), 6).0, BloomsliceStatus::InvalidArgument);
    free(&[h]);
}

#[test]
fn a_panic_becomes_a_status_and_a_message() {
    let status = entry(|| panic!("boom"));
    assert_eq!(status, BloomsliceStatus::Internal);
    assert!(last_error().contains("internal error") && last_error().contains("boom"), "{}", last_error());
    assert_eq!(entry(|| Err(Failure::invalid("a\0b"))), BloomsliceStatus::InvalidArgument);
    assert_eq!(last_error(), "a\\0b");
}

#[test]
fn bad_arguments_are_errors_not_crashes() {
    let h = new_sliced();
    let mut n = 0;
    let mut out = ptr::null_mut();
    // SAFETY: every pointer below is null, misaligned on purpose or
    // live; the functions must reject the bad ones without reading them.
    unsafe {
        assert_eq!(
            bloomslice_query(ptr::null(), b"x".as_ptr(), 1, ptr::null_mut(), 0, &mut n),
            BloomsliceStatus::InvalidArgument
        );
        assert!(last_error().contains("index is null"));
        assert_eq!(bloomslice_query(h, ptr::null(), 3, ptr::null_mut(), 0, &mut n), BloomsliceStatus::InvalidArgument);
        assert_eq!(
            bloomslice_query(h, b"x".as_ptr(), 1, ptr::null_mut(), 0, ptr::null_mut()),
            BloomsliceStatus::InvalidArgument
        );
        assert_eq!(bloomslice_index_new_sliced(0, 3, 0, &mut out), BloomsliceStatus::InvalidArgument);
        assert!(last_error().contains("m = 0"), "{}", last_error());
        assert_eq!(bloomslice_index_new_sliced_for_capacity(10, 1.5, 0, &mut out), BloomsliceStatus::InvalidArgument);
        assert_eq!(bloomslice_index_new_sliced(64, 3, 0, ptr::null_mut()), BloomsliceStatus::InvalidArgument);
        assert_eq!(bloomslice_index_new(1.5, 0, &mut out), BloomsliceStatus::InvalidArgument);
        assert_eq!(bloomslice_index_new(0.01, 0, ptr::null_mut()), BloomsliceStatus::InvalidArgument);
        assert_eq!(bloomslice_index_load(ptr::null(), &mut out), BloomsliceStatus::InvalidArgument);
        assert_eq!(bloomslice_index_load(c"/nonexistent/x.bsi".as_ptr(), &mut out), BloomsliceStatus::Io);
        assert_eq!(
            bloomslice_index_open_manifest(ptr::null(), false, false, &mut out),
            BloomsliceStatus::InvalidArgument
        );
        assert!(out.is_null());
        assert_eq!(
            bloomslice_index_add_set(h, b"".as_ptr(), 0, ptr::null(), ptr::null(), 0, ptr::null_mut()),
            BloomsliceStatus::InvalidArgument
        );
        let storage = [0u64; 2];
        let misaligned = storage.as_ptr().cast::<u8>().wrapping_add(1).cast::<u64>();
        assert_eq!(
            bloomslice_query_batch_hashes(h, misaligned, 1, ptr::null_mut(), 0, ptr::null_mut(), &mut n),
            BloomsliceStatus::InvalidArgument
        );
        assert!(last_error().contains("aligned"), "{}", last_error());
        let words = [0u64; 3];
        assert_eq!(
            bloomslice_index_add_filter(h, b"f".as_ptr(), 1, words.as_ptr(), 3, ptr::null_mut()),
            BloomsliceStatus::InvalidArgument
        );
        assert!(last_error().contains("words"), "{}", last_error());
        // A misaligned `id_out` fails the call before the index changes.
        let bad_id = storage.as_ptr().cast::<u8>().wrapping_add(1).cast::<u64>().cast_mut();
        let (ptrs, lens) = c_keys(&[b"k"]);
        assert_eq!(
            bloomslice_index_add_set(h, b"g".as_ptr(), 1, ptrs.as_ptr(), lens.as_ptr(), 1, bad_id),
            BloomsliceStatus::InvalidArgument
        );
        assert!(last_error().contains("id_out"), "{}", last_error());
        let mut len = u64::MAX;
        assert_eq!(bloomslice_index_len(h, &mut len), BloomsliceStatus::Ok);
        assert_eq!(len, 0);
        assert_eq!(bloomslice_index_len(h, ptr::null_mut()), BloomsliceStatus::InvalidArgument);
        assert_eq!(bloomslice_index_contains(ptr::null(), 0, ptr::null_mut()), BloomsliceStatus::InvalidArgument);

        // Two sets of one name, and ends out of order.
        let names = [b"n".as_ptr(), b"n".as_ptr()];
        let lens = [1usize, 1];
        let build = |ends: [usize; 2], out: &mut *mut BloomsliceIndex| {
            let (names, lens, ends) = (names.as_ptr(), lens.as_ptr(), ends.as_ptr());
            bloomslice_index_build(0.01, 0, names, lens, 2, ptr::null(), ptr::null(), ends, out)
        };
        assert_eq!(build([0, 0], &mut out), BloomsliceStatus::AlreadyExists, "{}", last_error());
        assert_eq!(build([2, 1], &mut out), BloomsliceStatus::InvalidArgument);
        assert!(last_error().contains("set_ends"), "{}", last_error());
        assert!(out.is_null());
        bloomslice_index_free(ptr::null_mut());
        bloomslice_index_free(h);
    }
}

#[test]
fn save_load_and_map_answer_alike_and_corrupt_files_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.bsi");
    let cpath = CString::new(path.to_str().unwrap()).unwrap();
    let h = new_sliced();
    let a = add(h, "a", &[b"one", b"two"]);
    let mut loaded = ptr::null_mut();
    let mut mapped = ptr::null_mut();
    // SAFETY: live handles, NUL-terminated paths, valid out pointers.
    unsafe {
        assert_eq!(bloomslice_index_save(h, cpath.as_ptr()), BloomsliceStatus::Ok);
        assert_eq!(bloomslice_index_load(cpath.as_ptr(), &mut loaded), BloomsliceStatus::Ok);
        assert_eq!(bloomslice_index_open_mapped(cpath.as_ptr(), true, &mut mapped), BloomsliceStatus::Ok);
    }
    let i = info(mapped);
    assert_eq!(
        (i.layout, i.m, i.k, i.seed, i.sets, i.parts, i.mapped),
        (BloomsliceLayout::Sliced, 10112, 7, 3, 1, 1, true)
    );
    assert_eq!(info(loaded).layout, BloomsliceLayout::Sliced);
    // SAFETY: live handles, live buffers.
    unsafe {
        let mut id = 0;
        assert_eq!(bloomslice_index_set_id(loaded, b"a".as_ptr(), 1, &mut id), BloomsliceStatus::Ok);
        assert_eq!(id, a);
        let mut name = [0u8; 4];
        let mut len = 0;
        assert_eq!(bloomslice_index_set_name(mapped, a, name.as_mut_ptr(), 4, &mut len), BloomsliceStatus::Ok);
        assert_eq!(&name[..len], b"a");
        assert_eq!(
            bloomslice_index_set_name(mapped, a, name.as_mut_ptr(), 0, &mut len),
            BloomsliceStatus::BufferTooSmall
        );
        assert_eq!(len, 1);
    }
    for key in [&b"one"[..], b"two", b"three"] {
        assert_eq!(query(loaded, key), query(h, key));
        assert_eq!(query(mapped, key), query(h, key));
    }
    let bad_path = dir.path().join("bad.bsi");
    std::fs::write(&bad_path, b"definitely not an index file, but long enough to have a header of some sort......")
        .unwrap();
    let cpath = CString::new(bad_path.to_str().unwrap()).unwrap();
    let mut bad = ptr::null_mut();
    // SAFETY: as above.
    unsafe {
        assert_eq!(bloomslice_index_load(cpath.as_ptr(), &mut bad), BloomsliceStatus::CorruptFile);
        assert!(last_error().contains("magic"), "{}", last_error());
        assert_eq!(bloomslice_index_open_mapped(cpath.as_ptr(), false, &mut bad), BloomsliceStatus::CorruptFile);
    }
    assert!(bad.is_null());
    free(&[h, loaded, mapped]);
}

#[test]
fn a_skewed_index_answers_as_the_library_with_no_false_negatives() {
    let sizes = [3, 5, 8, 10, 12, 20, 40, 100, 400, 3000];
    let sets = skewed(&sizes);
    let h = build(&sets, 0.01);
    let i = info(h);
    assert_eq!(
        (i.layout, i.sets, i.k, i.seed, i.fp, i.m, i.mapped),
        (BloomsliceLayout::Sets, 10, 7, 5, 0.01, 0, false)
    );
    assert!(i.parts >= 2, "{i:?}");
    // The library's index of the same sets, hashed alike.
    let lib_sets: Vec<(u64, Vec<KeyHash>)> = sets
        .iter()
        .enumerate()
        .map(|(i, keys)| (i as u64, keys.iter().map(|k| KeyHash::from_bytes(k, 5)).collect()))
        .collect();
    let lib = SetIndex::build_with_hashing(&lib_sets, 0.01, LayoutConfig::default(), HashScheme::default(), 5).unwrap();
    for (i, keys) in sets.iter().enumerate() {
        for key in keys {
            assert!(query(h, key).contains(&(i as u64)), "set {i} lost {key:?}");
        }
    }
    // Batches of byte keys and of hashes answer as single queries.
    let probe: Vec<Vec<u8>> = sets
        .iter()
        .flat_map(|s| s.iter().take(7).cloned())
        .chain((0..500).map(|j| format!("absent-{j}").into_bytes()))
        .collect();
    batches_agree(h, &probe, 4 * probe.len());
    for (i, key) in probe.iter().enumerate() {
        assert_eq!(query(h, key), lib.query(key.as_slice()), "key {i}");
    }
    // Scores and thresholds are the library's.
    let read: Vec<Vec<u8>> = sets[8][..200].iter().cloned().chain(sets[2].iter().cloned()).collect();
    let hashed: Vec<KeyHash> = read.iter().map(|k| KeyHash::from_bytes(k, 5)).collect();
    let mut scores = Scores::new();
    lib.score_into(&hashed, &mut scores);
    assert_eq!(score(h, &read, None), scores.iter().collect::<Vec<_>>());
    let want = lib.query_threshold(&hashed, Threshold::fraction(0.9).unwrap());
    let got = score(h, &read, Some(0.9));
    assert_eq!(got, want);
    assert!(got.iter().any(|&(id, c)| id == 8 && c >= 200), "{got:?}");
    free(&[h]);
}

#[test]
fn sets_are_added_grown_and_removed() {
    let mut h = ptr::null_mut();
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { bloomslice_index_new(0.01, 0, &mut h) }, BloomsliceStatus::Ok);
    let small = skewed(&[10])[0].clone();
    let a = add(h, "a", &small);
    assert_eq!(try_add(h, "a", &small).0, BloomsliceStatus::AlreadyExists);
    assert_eq!(try_add(h, "", &small).0, BloomsliceStatus::InvalidArgument);
    let b = add(h, "b", &skewed(&[0, 2000])[1]);
    assert_ne!(a, b);
    // Growing "a" far past its capacity keeps every key.
    let more: Vec<Vec<u8>> = (0..500).map(|j| format!("more-{j}").into_bytes()).collect();
    assert_eq!(add_keys(h, "a", &more), BloomsliceStatus::Ok, "{}", last_error());
    assert_eq!(add_keys(h, "zz", &more[..1]), BloomsliceStatus::NotFound);
    let i = info(h);
    assert_eq!((i.sets, i.grown_sets), (2, 1));
    for key in small.iter().chain(&more) {
        assert!(query(h, key).contains(&a), "{key:?}");
    }
    // A grown set is reported once, and scored once per key.
    assert_eq!(query(h, &more[3]).iter().filter(|&&id| id == a).count(), 1);
    let counts = score(h, &more[..100], Some(1.0));
    assert!(counts.contains(&(a, 100)), "{counts:?}");
    // A ready filter needs an index of one filter length.
    let words = [0u64; 2];
    // SAFETY: live buffers.
    let st = unsafe { bloomslice_index_add_filter(h, b"f".as_ptr(), 1, words.as_ptr(), 2, ptr::null_mut()) };
    assert_eq!(st, BloomsliceStatus::Unsupported);
    assert!(last_error().contains("one filter length"), "{}", last_error());
    let mut name = [0u8; 8];
    let mut len = 0;
    // SAFETY: live buffers.
    unsafe {
        assert_eq!(bloomslice_index_set_name(h, b, name.as_mut_ptr(), 8, &mut len), BloomsliceStatus::Ok);
        assert_eq!(&name[..len], b"b");
        let mut id = 0;
        assert_eq!(bloomslice_index_set_id(h, b"a".as_ptr(), 1, &mut id), BloomsliceStatus::Ok);
        assert_eq!(id, a);
    }
    assert_eq!(remove(h, "a"), BloomsliceStatus::Ok);
    assert_eq!(remove(h, "a"), BloomsliceStatus::NotFound);
    assert!(!query(h, &small[0]).contains(&a));
    free(&[h]);
}

#[test]
fn files_of_both_layouts_open_as_they_were_saved() {
    let dir = tempfile::tempdir().unwrap();
    let sets = skewed(&[2, 30, 700, 4000]);
    let h = build(&sets, 0.01);
    let more: Vec<Vec<u8>> = (0..900).map(|j| format!("more-{j}").into_bytes()).collect();
    assert_eq!(add_keys(h, "set-0", &more), BloomsliceStatus::Ok, "{}", last_error());
    let path = CString::new(dir.path().join("c.bsc").to_str().unwrap()).unwrap();
    let (mut loaded, mut mapped) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: live handles, NUL-terminated paths, valid out pointers.
    unsafe {
        assert_eq!(bloomslice_index_save(h, path.as_ptr()), BloomsliceStatus::Ok, "{}", last_error());
        assert_eq!(bloomslice_index_load(path.as_ptr(), &mut loaded), BloomsliceStatus::Ok);
        assert_eq!(bloomslice_index_open_mapped(path.as_ptr(), true, &mut mapped), BloomsliceStatus::Ok);
    }
    let i = info(mapped);
    assert_eq!((i.layout, i.sets, i.grown_sets, i.seed, i.mapped), (BloomsliceLayout::Sets, 4, 1, 5, true));
    assert_eq!(info(loaded).layout, BloomsliceLayout::Sets);
    let probe: Vec<Vec<u8>> =
        sets.iter().flatten().step_by(3).chain(&more).cloned().chain([b"absent".to_vec()]).collect();
    for key in &probe {
        assert_eq!(query(loaded, key), query(h, key));
        assert_eq!(query(mapped, key), query(h, key));
    }
    assert_eq!(score(mapped, &more, Some(1.0)), score(h, &more, Some(1.0)));
    // A loaded index of sets grows as the one it was saved from.
    assert_eq!(add_keys(loaded, "set-1", &more[..50]), BloomsliceStatus::Ok);
    assert!(query(loaded, &more[49]).contains(&1));

    let bad = dir.path().join("bad.bsc");
    std::fs::write(&bad, vec![7u8; 300]).unwrap();
    let bad = CString::new(bad.to_str().unwrap()).unwrap();
    let mut none = ptr::null_mut();
    // SAFETY: as above.
    unsafe {
        assert_eq!(bloomslice_index_load(bad.as_ptr(), &mut none), BloomsliceStatus::CorruptFile);
        assert_eq!(bloomslice_index_open_mapped(bad.as_ptr(), false, &mut none), BloomsliceStatus::CorruptFile);
        assert_eq!(bloomslice_index_load(c"/nonexistent/x.bsc".as_ptr(), &mut none), BloomsliceStatus::Io);
    }
    assert!(none.is_null());
    free(&[h, loaded, mapped]);
}

#[test]
fn a_manifests_shard_files_answer_as_the_unsplit_index_and_are_read_only() {
    use bloomslice::persist::manifest::{MANIFEST_FILE, Manifest, ManifestParams, ShardFile};
    let dir = tempfile::tempdir().unwrap();
    let h = new_sliced();
    let keys_of = |i: usize| -> Vec<Vec<u8>> { (0..300).map(|k| format!("{}", i * 100 + k).into_bytes()).collect() };
    for i in 0..12 {
        add(h, &format!("set-{i}"), &keys_of(i));
    }
    let Engine::Sliced(whole) = library(h) else { panic!("not sliced") };
    // SAFETY: a live handle.
    let names = unsafe { &(*h).names };
    let mut files = Vec::new();
    for (f, range) in [(0, 0..5u64), (1, 5..12)] {
        let mut part = whole.clone();
        let mut part_names = names.clone();
        for id in (0..12).filter(|id| !range.contains(id)) {
            part.remove_set(id).unwrap();
            part_names.remove(id);
        }
        let file = format!("part-{f}.bsi");
        bloomslice::persist::save(dir.path().join(&file), &part, &part_names).unwrap();
        files.push(ShardFile::describe(dir.path(), &file, &part, &part_names).unwrap());
    }
    let manifest = Manifest { params: ManifestParams::of(whole.params()), files };
    manifest.write(&dir.path().join(MANIFEST_FILE)).unwrap();
    let cdir = CString::new(dir.path().to_str().unwrap()).unwrap();
    let (mut s, mut read) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: a NUL-terminated path and valid out pointers.
    unsafe {
        assert_eq!(bloomslice_index_open_manifest(cdir.as_ptr(), true, true, &mut s), BloomsliceStatus::Ok);
        assert_eq!(bloomslice_index_open_manifest(cdir.as_ptr(), false, true, &mut read), BloomsliceStatus::Ok);
    }
    let i = info(s);
    assert_eq!((i.layout, i.sets, i.shards, i.m, i.mapped), (BloomsliceLayout::Sharded, 12, 2, 10112, true));
    assert!(!info(read).mapped);

    let queries: Vec<Vec<u8>> = (0..1500u32).map(|k| format!("{k}").into_bytes()).collect();
    let (st, (ids, offsets, _)) = batch(s, &queries, 12 * queries.len());
    assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
    for (i, key) in queries.iter().enumerate() {
        let got = &ids[offsets[i]..offsets[i + 1]];
        assert_eq!(query(s, key), got, "key {i}");
        assert_eq!(query(read, key), got, "key {i}");
        let mut got = got.to_vec();
        got.sort_unstable();
        let mut want = query(h, key);
        want.sort_unstable();
        assert_eq!(got, want, "key {i}");
    }

    // Scores and thresholds: those of the library's unsplit index.
    let keys = keys_of(7)[..100].to_vec();
    let mut scores = Scores::new();
    whole.score_into(&keys, &mut scores);
    assert_eq!(score(s, &keys, None), scores.iter().collect::<Vec<_>>());
    let pairs = score(s, &keys, Some(0.9));
    assert_eq!(pairs, whole.query_threshold(&keys, Threshold::fraction(0.9).unwrap()));
    assert!(pairs.iter().any(|&(id, c)| id == 7 && c == 100));

    // Every change is refused with a clear status; the index is unchanged.
    let (st, _) = try_add(s, "new", &keys);
    assert_eq!(st, BloomsliceStatus::Unsupported);
    assert!(last_error().contains("read-only"), "{}", last_error());
    assert_eq!(add_keys(s, "set-1", &keys), BloomsliceStatus::Unsupported);
    assert_eq!(remove(s, "set-1"), BloomsliceStatus::Unsupported);
    let out = CString::new(dir.path().join("copy.bsi").to_str().unwrap()).unwrap();
    // SAFETY: a live handle and a NUL-terminated path.
    assert_eq!(unsafe { bloomslice_index_save(s, out.as_ptr()) }, BloomsliceStatus::Unsupported);
    assert_eq!(info(s).sets, 12);
    free(&[s, read, h]);
}

/// Sets of heavy-tailed sizes, keys `"{i}-{j}"`: every 40th set of 3 000
/// keys, the others of 1 to 30 (enough sets that levels pay).
fn level_sets() -> Vec<(u64, Vec<Vec<u8>>)> {
    (0..400u64)
        .map(|i| {
            let n = if i % 40 == 0 { 3_000 } else { 1 + (i * 7919) % 30 };
            (i, (0..n).map(|j| format!("{i}-{j}").into_bytes()).collect())
        })
        .collect()
}

/// `v` sorted, for answers whose order a layout does not fix.
fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v
}

#[test]
fn a_level_index_file_answers_as_the_library_and_takes_writes() {
    use bloomslice::persist::{self, SetNames};
    use bloomslice::{LevelConfig, LevelIndex, ReadIndex};

    let dir = tempfile::tempdir().unwrap();
    let sets = level_sets();
    let index = LevelIndex::build_with_hashing(&sets, 0.01, LevelConfig::default(), HashScheme::default(), 9).unwrap();
    assert!(index.depth() >= 2, "levels do not pay on this shape");
    let mut names = SetNames::new();
    for (id, _) in &sets {
        names.insert(*id, format!("set-{id}")).unwrap();
    }
    let file = dir.path().join("levels.bsl");
    persist::save(&file, &index, &names).unwrap();
    let path = CString::new(file.to_str().unwrap()).unwrap();
    let (mut loaded, mut mapped, mut verified) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: NUL-terminated paths and valid out pointers; nothing writes
    // the file while it is mapped.
    unsafe {
        assert_eq!(bloomslice_index_load(path.as_ptr(), &mut loaded), BloomsliceStatus::Ok, "{}", last_error());
        assert_eq!(bloomslice_index_open_mapped(path.as_ptr(), false, &mut mapped), BloomsliceStatus::Ok);
        assert_eq!(bloomslice_index_open_mapped(path.as_ptr(), true, &mut verified), BloomsliceStatus::Ok);
    }
    for h in [loaded, mapped, verified] {
        let i = info(h);
        assert_eq!(
            (i.layout, i.sets, i.fp, i.k, i.seed, i.m, i.parts, i.shards, i.mapped),
            (BloomsliceLayout::Levels, 400, 0.01, index.k(), 9, 0, 0, 0, false)
        );
        assert!(i.memory_bytes > 0);
    }

    // Every key of every set (no false negative) and as many absent keys,
    // one at a time and batched: the library's answers.
    let mut keys: Vec<Vec<u8>> = sets.iter().flat_map(|(_, keys)| keys.iter().step_by(7).cloned()).collect();
    keys.extend((0..3_000).map(|j| format!("absent-{j}").into_bytes()));
    for h in [loaded, mapped, verified] {
        let ((ids, offsets, _), hashes) = batches_agree(h, &keys, 400 * keys.len());
        for (i, key) in keys.iter().enumerate() {
            let got = sorted(ids[offsets[i]..offsets[i + 1]].to_vec());
            assert_eq!(got, sorted(index.query(key.as_slice())), "key {i}");
            assert_eq!(hashes[i], KeyHash::from_bytes(key, 9).h1);
        }
    }
    for (id, set) in &sets {
        for key in set {
            assert!(query(mapped, key).contains(id), "false negative: set {id}");
        }
    }

    // Scores and thresholds: the library's.
    for (id, set) in sets.iter().step_by(37) {
        let mut probe: Vec<Vec<u8>> = set.iter().take(50).cloned().collect();
        probe.extend((0..20).map(|j| format!("absent-{id}-{j}").into_bytes()));
        let (st, pairs, n) = try_score(loaded, &probe, None, 400);
        assert_eq!(st, BloomsliceStatus::Ok, "{}", last_error());
        assert_eq!(pairs.len(), n);
        let mut scores = Scores::new();
        index.score_into(&probe, &mut scores);
        assert_eq!(sorted(pairs), sorted(scores.iter().collect()));
        // The set's own keys: it reaches any threshold.
        let own = &probe[..set.len().min(50)];
        let threshold = Threshold::fraction(0.5).unwrap();
        let (st, pairs, _) = try_score(mapped, own, Some(0.5), 400);
        assert_eq!(st, BloomsliceStatus::Ok);
        assert_eq!(sorted(pairs.clone()), sorted(ReadIndex::query_threshold(&index, own, threshold)));
        assert!(pairs.contains(&(*id, own.len() as u32)), "set {id}");
    }

    // Names, ids and membership.
    let mut id = 0;
    let mut name = [0u8; 16];
    let mut len = 0;
    let mut has = false;
    // SAFETY: live handles and buffers of the stated lengths.
    unsafe {
        assert_eq!(bloomslice_index_set_id(mapped, b"set-123".as_ptr(), 7, &mut id), BloomsliceStatus::Ok);
        assert_eq!(id, 123);
        assert_eq!(
            bloomslice_index_set_name(loaded, 40, name.as_mut_ptr(), name.len(), &mut len),
            BloomsliceStatus::Ok
        );
        assert_eq!(&name[..len], b"set-40");
        assert_eq!(bloomslice_index_contains(loaded, 399, &mut has), BloomsliceStatus::Ok);
        assert!(has);
        assert_eq!(bloomslice_index_contains(loaded, 400, &mut has), BloomsliceStatus::Ok);
        assert!(!has);
    }

    // Saved unchanged: a level index file with the same bytes.
    let copy = dir.path().join("copy.bsl");
    let copy_c = CString::new(copy.to_str().unwrap()).unwrap();
    // SAFETY: a live handle and a NUL-terminated path.
    assert_eq!(unsafe { bloomslice_index_save(mapped, copy_c.as_ptr()) }, BloomsliceStatus::Ok, "{}", last_error());
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&file).unwrap());

    // Writes go beside the levels, with the names in step: they answer as
    // the library's own writes do.
    let mut model = index.clone();
    let new_keys: Vec<Vec<u8>> = (0..60).map(|j| format!("new-{j}").into_bytes()).collect();
    let grown: Vec<Vec<u8>> = (0..40).map(|j| format!("grown-{j}").into_bytes()).collect();
    assert_eq!(add(mapped, "new", &new_keys), 400);
    model.insert_set(400, &new_keys).unwrap();
    assert_eq!(add_keys(mapped, "set-1", &grown), BloomsliceStatus::Ok, "{}", last_error());
    model.add_keys(1, &grown).unwrap();
    assert_eq!(add_keys(mapped, "new", &grown[..5]), BloomsliceStatus::Ok);
    model.add_keys(400, &grown[..5]).unwrap();
    assert_eq!(remove(mapped, "set-40"), BloomsliceStatus::Ok, "{}", last_error());
    model.remove_set(40).unwrap();
    let hashed = [7u64, 8, 9];
    let mut hashed_id = 0;
    // SAFETY: a live handle and buffers of the stated lengths.
    let st =
        unsafe { bloomslice_index_add_set_hashes(mapped, b"hashed".as_ptr(), 6, hashed.as_ptr(), 3, &mut hashed_id) };
    assert_eq!((st, hashed_id), (BloomsliceStatus::Ok, 401), "{}", last_error());
    model.insert_set(401, &hashed.map(KeyHash::from_u64)).unwrap();
    assert_eq!(info(mapped).sets, 401);
    assert_eq!(model.delta().len(), 3);
    assert_eq!(model.hidden(), &[40]);

    // The errors of a set index: a name in use, an unknown name, a ready
    // filter (levels size each set from its keys); the index is unchanged.
    assert_eq!(try_add(mapped, "new", &grown).0, BloomsliceStatus::AlreadyExists);
    assert_eq!(add_keys(mapped, "set-40", &grown), BloomsliceStatus::NotFound);
    assert_eq!(remove(mapped, "set-40"), BloomsliceStatus::NotFound);
    let word = 0u64;
    // SAFETY: a live handle and buffers of the stated lengths.
    let st = unsafe { bloomslice_index_add_filter(mapped, b"ready".as_ptr(), 5, &word, 1, ptr::null_mut()) };
    assert_eq!(st, BloomsliceStatus::Unsupported);
    assert!(last_error().contains("level index"), "{}", last_error());
    assert_eq!(info(mapped).sets, 401);

    let mut probes = keys.clone();
    probes.extend(new_keys.iter().cloned());
    probes.extend(grown.iter().cloned());
    let answers = |h: *const BloomsliceIndex| -> Vec<Vec<u64>> {
        let ((ids, offsets, _), _) = batches_agree(h, &probes, 400 * probes.len());
        (0..probes.len()).map(|i| sorted(ids[offsets[i]..offsets[i + 1]].to_vec())).collect()
    };
    let after = answers(mapped);
    for (i, key) in probes.iter().enumerate() {
        assert_eq!(after[i], sorted(model.query(key.as_slice())), "key {i}");
    }
    for key in &new_keys {
        assert!(query(mapped, key).contains(&400));
    }
    for key in &grown {
        assert!(query(mapped, key).contains(&1));
    }
    let answered_40 = sets[40].1.iter().filter(|key| query(mapped, key).contains(&40)).count();
    assert_eq!(answered_40, 0, "a removed set answers");
    let (mut found, mut n) = ([0u64; 64], 0);
    // SAFETY: live buffers of the stated lengths.
    assert_eq!(unsafe { bloomslice_query_hash(mapped, 8, found.as_mut_ptr(), 64, &mut n) }, BloomsliceStatus::Ok);
    assert!(found[..n].contains(&401));
    let (mut id, mut has) = (0, true);
    // SAFETY: live handles and buffers of the stated lengths.
    unsafe {
        assert_eq!(bloomslice_index_set_id(mapped, b"new".as_ptr(), 3, &mut id), BloomsliceStatus::Ok);
        assert_eq!(id, 400);
        assert_eq!(bloomslice_index_set_id(mapped, b"set-40".as_ptr(), 6, &mut id), BloomsliceStatus::NotFound);
        assert_eq!(bloomslice_index_contains(mapped, 40, &mut has), BloomsliceStatus::Ok);
        assert!(!has);
    }

    // Saved with its writes (a 3.1 level file) and opened again, loaded
    // and mapped: the same answers, names and counts.
    // SAFETY: a live handle and a NUL-terminated path.
    assert_eq!(unsafe { bloomslice_index_save(mapped, copy_c.as_ptr()) }, BloomsliceStatus::Ok, "{}", last_error());
    let (mut reloaded, mut remapped) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: a NUL-terminated path and valid out pointers; nothing writes
    // the file while it is mapped.
    unsafe {
        assert_eq!(bloomslice_index_load(copy_c.as_ptr(), &mut reloaded), BloomsliceStatus::Ok, "{}", last_error());
        assert_eq!(bloomslice_index_open_mapped(copy_c.as_ptr(), true, &mut remapped), BloomsliceStatus::Ok);
    }
    for h in [reloaded, remapped] {
        assert_eq!((info(h).layout, info(h).sets), (BloomsliceLayout::Levels, 401));
        assert_eq!(answers(h), after);
        // SAFETY: live handles and buffers of the stated lengths.
        unsafe {
            assert_eq!(bloomslice_index_set_id(h, b"hashed".as_ptr(), 6, &mut id), BloomsliceStatus::Ok);
            assert_eq!(id, 401);
            assert_eq!(bloomslice_index_set_id(h, b"set-40".as_ptr(), 6, &mut id), BloomsliceStatus::NotFound);
        }
    }
    free(&[reloaded, remapped]);

    // The id of a set of the levels given again: the highest set removed,
    // a new set takes its id; its keys answer with it, the old ones do
    // not, before and after a save.
    let mut model = index.clone();
    assert_eq!(remove(loaded, "set-399"), BloomsliceStatus::Ok);
    model.remove_set(399).unwrap();
    assert_eq!(add(loaded, "again", &new_keys), 399);
    model.insert_set(399, &new_keys).unwrap();
    assert_eq!(model.hidden(), &[399]);
    assert!(new_keys.iter().all(|key| query(loaded, key).contains(&399)));
    assert!(sets[399].1.iter().all(|key| sorted(query(loaded, key)) == sorted(model.query(key.as_slice()))));
    let before = answers(loaded);
    // SAFETY: a live handle and a NUL-terminated path.
    assert_eq!(unsafe { bloomslice_index_save(loaded, copy_c.as_ptr()) }, BloomsliceStatus::Ok, "{}", last_error());
    let mut again = ptr::null_mut();
    // SAFETY: a NUL-terminated path and a valid out pointer.
    assert_eq!(unsafe { bloomslice_index_load(copy_c.as_ptr(), &mut again) }, BloomsliceStatus::Ok);
    assert_eq!(answers(again), before);
    for (i, key) in probes.iter().enumerate() {
        assert_eq!(before[i], sorted(model.query(key.as_slice())), "key {i}");
    }
    free(&[again]);

    // A damaged level file is a typed error, never a panic.
    let bytes = std::fs::read(&file).unwrap();
    let bad = dir.path().join("bad.bsl");
    let bad_c = CString::new(bad.to_str().unwrap()).unwrap();
    for cut in [12, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&bad, &bytes[..cut]).unwrap();
        let mut none = ptr::null_mut();
        // SAFETY: as above.
        unsafe {
            assert_eq!(bloomslice_index_load(bad_c.as_ptr(), &mut none), BloomsliceStatus::CorruptFile, "cut {cut}");
            assert_eq!(bloomslice_index_open_mapped(bad_c.as_ptr(), false, &mut none), BloomsliceStatus::CorruptFile);
        }
        assert!(none.is_null());
    }
    free(&[loaded, mapped, verified]);
}

//! SetIndex files (format 2): a collection of several parts, with grown
//! sets, names and a k-mer length, comes back from bytes, from a file and
//! from a memory map (verified at once or later) with the same sets,
//! filters, answers, scores and thresholds; a format-1 index file (the
//! committed fixture among them) opens as a collection of one part that
//! answers as the index; and damaged files (every section's checksum,
//! every truncation, bad offsets, overlapping sections, sets naming missing
//! parts, duplicate ids) are typed errors, never panics.

use bloomslice::kmer::KmerLength;
use bloomslice::persist::{self, Loaded, Verify};
use bloomslice::{
    BatchResults, BloomFilter, BloomParams, Error, HashScheme, LayoutConfig, Scores, SetIndex, SetNames, SlicedIndex,
    Threshold,
};
use xxhash_rust::xxh3::xxh3_64;

/// The committed format-1.0 index file (see `tests/hash_scheme.rs`): 12
/// sets (ids 100..112, names `set-0`..) of 40 keys `id * 1000 + key` each.
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/xxh3double-1.0.blms");
/// Its total matches over keys `0..12 000`.
const FIXTURE_MATCHES: usize = 984;

fn keys(range: std::ops::Range<u64>) -> Vec<[u8; 8]> {
    range.map(u64::to_le_bytes).collect()
}

/// A collection of skewed sets in several parts, one set grown over three
/// filters, one inserted after the build and one removed; named, with a
/// k-mer length.
fn sample() -> (SetIndex, SetNames) {
    let mut sets: Vec<(u64, Vec<[u8; 8]>)> = Vec::new();
    for id in 0..40u64 {
        let size = match id {
            0..30 => 5 + id,
            30..38 => 300 + 10 * id,
            _ => 4000,
        };
        sets.push((id, keys(id * 100_000..id * 100_000 + size)));
    }
    let mut c = SetIndex::build_with_hashing(&sets, 0.01, LayoutConfig::default(), HashScheme::Xxh3Triple, 3).unwrap();
    assert!(c.parts().len() >= 2, "{}", c.parts().len());
    c.add_keys(3, &keys(3_000_000..3_000_400)).unwrap();
    assert!(c.filter_count(3).unwrap() >= 3, "{:?}", c.filters(3));
    c.insert_set(77, &keys(7_700_000..7_700_050)).unwrap();
    c.remove_set(12).unwrap();
    c.set_kmer_length(Some(KmerLength::new(21).unwrap()));
    let mut names = SetNames::new();
    for id in c.ids() {
        if id % 3 != 0 {
            names.insert(id, format!("set-{id}")).unwrap();
        }
    }
    names.insert(12, "removed").unwrap();
    c.validate().unwrap();
    (c, names)
}

/// Probe keys: members of several sets, the grown set's later keys, and
/// absent keys.
fn probes() -> Vec<[u8; 8]> {
    let mut out = Vec::new();
    for id in [0u64, 3, 12, 29, 31, 39, 77] {
        out.extend(keys(id * 100_000..id * 100_000 + 40));
    }
    out.extend(keys(3_000_000..3_000_400));
    out.extend(keys(9_000_000..9_000_500));
    out
}

/// Asserts that index `$got` scores every window of `$windows` as `$want`
/// does, and answers each threshold query (at every threshold of
/// `$thresholds`) as `$want` does, allocating and into warm buffers. A
/// macro, so that each index's own methods answer (not the generic
/// [`ReadIndex`](bloomslice::ReadIndex) ones).
macro_rules! assert_scores_agree {
    ($got:expr, $want:expr, $windows:expr, $thresholds:expr) => {
        let (mut a, mut b) = (Scores::new(), Scores::new());
        let (mut scratch, mut out) = (Scores::new(), Vec::new());
        for window in $windows {
            $got.score_into(window, &mut a);
            $want.score_into(window, &mut b);
            assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
            for t in $thresholds {
                let expected = $want.query_threshold(window, t);
                assert_eq!($got.query_threshold(window, t), expected, "{t:?}");
                $got.query_threshold_into(window, t, &mut scratch, &mut out);
                assert_eq!(out, expected, "{t:?} (warm)");
            }
        }
    };
}

/// Everything a reader sees of a collection, for comparison.
fn assert_same(got: &SetIndex, want: &SetIndex) {
    got.validate().unwrap();
    assert_eq!((got.len(), got.p(), got.k(), got.grown_sets()), (want.len(), want.p(), want.k(), want.grown_sets()));
    assert_eq!(got.kmer_length(), want.kmer_length());
    assert_eq!(got.layout(), want.layout());
    assert_eq!(got.parts().len(), want.parts().len());
    for (a, b) in got.parts().zip(want.parts()) {
        assert_eq!((a.params(), a.len()), (b.params(), b.len()));
    }
    let mut ids: Vec<u64> = got.ids().collect();
    ids.sort_unstable();
    let mut want_ids: Vec<u64> = want.ids().collect();
    want_ids.sort_unstable();
    assert_eq!(ids, want_ids);
    for id in ids {
        assert_eq!(got.filters(id), want.filters(id), "set {id}");
    }
    let probes = probes();
    for key in &probes {
        assert_eq!(got.query(key), want.query(key));
    }
    let (mut a, mut b) = (BatchResults::new(), BatchResults::new());
    got.query_batch(&probes, &mut a);
    want.query_batch(&probes, &mut b);
    assert!(a.iter().eq(b.iter()));
    let thresholds = [Threshold::count(1), Threshold::count(30), Threshold::fraction(0.5).unwrap()];
    assert_scores_agree!(got, want, probes.chunks(100), thresholds);
}

/// Every way to read a collection file at `path` holding `bytes`.
fn every_reader(path: &std::path::Path, bytes: &[u8]) -> Vec<(&'static str, Loaded)> {
    let mut out = vec![("bytes", persist::from_bytes(bytes).unwrap()), ("file", persist::load(path).unwrap())];
    // SAFETY: a private temporary file that nothing writes while mapped.
    let full = unsafe { persist::open_mmap(path, Verify::Full) }.unwrap();
    assert!(full.info.rows_verified);
    out.push(("mmap", full));
    // SAFETY: as above.
    let mut deferred = unsafe { persist::open_mmap(path, Verify::Deferred) }.unwrap();
    assert!(!deferred.info.rows_verified);
    out.push(("deferred, unverified", deferred.clone()));
    deferred.verify().unwrap();
    assert!(deferred.info.rows_verified);
    out.push(("deferred, verified", deferred));
    out
}

#[test]
fn collections_round_trip_through_bytes_files_and_maps() {
    let (c, names) = sample();
    let bytes = persist::to_bytes(&c, &names).unwrap();
    assert_eq!(bytes[8..10], persist::COLLECTION_FORMAT_MAJOR.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.bsc");
    persist::save(&path, &c, &names).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let mut written = Vec::new();
    assert_eq!(persist::write_to(&mut written, &c, &names).unwrap(), bytes.len() as u64);
    assert_eq!(written, bytes);
    for (how, loaded) in every_reader(&path, &bytes) {
        assert_same(&loaded.index, &c);
        assert_eq!(loaded.names.id(b"set-4"), Some(4), "{how}");
        assert_eq!(loaded.names.name(12), None, "{how}: names of removed sets are not written");
        assert_eq!(loaded.names.len(), c.ids().filter(|id| id % 3 != 0).count(), "{how}");
        assert_eq!(loaded.info.version, (persist::COLLECTION_FORMAT_MAJOR, persist::COLLECTION_FORMAT_MINOR));
        assert_eq!(loaded.info.file_bytes, bytes.len() as u64);
        assert_eq!(loaded.is_mapped(), how.starts_with("mmap") || how.starts_with("deferred"), "{how}");
        assert_eq!(persist::to_bytes(&loaded.index, &loaded.names).unwrap(), bytes, "{how}");
        // A loaded collection keeps working: it grows, changes and saves.
        let mut changed = loaded.index.clone();
        changed.add_keys(5, &keys(5_500_000..5_502_000)).unwrap();
        changed.replace_set(31, &keys(0..3)).unwrap();
        changed.validate().unwrap();
        let again = persist::from_bytes(&persist::to_bytes(&changed, &names).unwrap()).unwrap();
        assert_same(&again.index, &changed);
    }
}

#[test]
fn empty_and_one_part_collections_round_trip() {
    let empty = SetIndex::new(0.05).unwrap();
    let bytes = persist::to_bytes(&empty, &SetNames::new()).unwrap();
    let back = persist::from_bytes(&bytes).unwrap();
    assert_same(&back.index, &empty);
    assert_eq!(back.index.parts().len(), 0);
    let mut grown = back.index;
    grown.insert_set(1, &keys(0..10)).unwrap();
    assert_eq!(grown.query(&5u64.to_le_bytes()), [1]);

    let sets: Vec<(u64, Vec<[u8; 8]>)> = (0..10).map(|id| (id, keys(id * 100..id * 100 + 50))).collect();
    let one = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
    assert_eq!(one.parts().len(), 1);
    let back = persist::from_bytes(&persist::to_bytes(&one, &SetNames::new()).unwrap()).unwrap();
    assert_same(&back.index, &one);
}

/// The fixture's index and names, as format 1 reads them.
fn fixture() -> (SlicedIndex, SetNames) {
    let loaded = Loaded::<SlicedIndex>::load(FIXTURE).unwrap();
    (loaded.index, loaded.names)
}

#[test]
fn format_1_files_open_as_one_part_collections() {
    let (index, names) = fixture();
    let bytes = std::fs::read(FIXTURE).unwrap();
    for (how, loaded) in every_reader(FIXTURE.as_ref(), &bytes) {
        let c = &loaded.index;
        c.validate().unwrap();
        assert_eq!(loaded.info.version, (1, 0), "{how}");
        assert_eq!(loaded.names, names, "{how}");
        assert_eq!((c.parts().len(), c.len(), c.k()), (1, 12, 6), "{how}");
        assert_eq!(c.p(), 0.5f64.powi(6));
        assert_eq!(c.parts().next().unwrap().params(), index.params());
        let mut total = 0;
        for key in keys(0..12_000) {
            let got = c.query(&key);
            assert_eq!(got, index.query(&key), "{how}");
            total += got.len();
        }
        assert_eq!(total, FIXTURE_MATCHES, "{how}");
        let query = keys(3_000..3_040);
        assert_eq!(
            c.query_threshold(&query, Threshold::count(40)),
            index.query_threshold(&query, Threshold::count(40))
        );
        // Loads are estimated from the columns (each set has 40 keys).
        if how != "deferred, unverified" {
            for id in c.ids() {
                let f = c.filters(id).unwrap();
                assert!(f[0].load.abs_diff(40) <= 12 || f[0].load == f[0].capacity, "{how}: {f:?}");
            }
        }
        // Saved as a collection file, it answers the same.
        let again = persist::to_bytes(c, &loaded.names).unwrap();
        let back = persist::from_bytes(&again).unwrap();
        assert_same(&back.index, c);
        assert_eq!(back.names, names);
    }
}

#[test]
fn from_index_answers_as_the_index() {
    let params = BloomParams::for_capacity(500, 0.01).unwrap().with_seed(9);
    let mut index = SlicedIndex::new(params);
    for id in 0..700u64 {
        let mut f = BloomFilter::new(params).unwrap();
        for key in id * 10..id * 10 + 200 {
            f.insert(&key.to_le_bytes());
        }
        index.insert_filter(id, &f).unwrap();
    }
    index.set_kmer_length(Some(KmerLength::new(5).unwrap()));
    let c = SetIndex::from_index(index.clone(), 0.01).unwrap();
    c.validate().unwrap();
    assert_eq!(c.kmer_length(), index.kmer_length());
    let probes = keys(0..8_000);
    let (mut a, mut b) = (BatchResults::new(), BatchResults::new());
    c.query_batch(&probes, &mut a);
    index.query_batch(&probes, &mut b);
    assert!(a.iter().eq(b.iter()));
    let (mut sa, mut sb) = (Scores::new(), Scores::new());
    c.score_into(&probes[..300], &mut sa);
    index.score_into(&probes[..300], &mut sb);
    assert_eq!(sa.iter().collect::<Vec<_>>(), sb.iter().collect::<Vec<_>>());
    for id in [0u64, 350, 699] {
        let load = c.filters(id).unwrap()[0].load;
        assert!(load.abs_diff(200) <= 30, "{id}: {load}");
    }
    assert_eq!(SetIndex::from_index(index, 1.5).unwrap_err(), Error::InvalidFalsePositiveRate(1.5));
}

// ---------------------------------------------------------------------
// Damaged files.

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn set_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// `(name, start, end)` of the checksummed sections before the parts
/// (each ends with its xxh3), from the header's offsets and counts.
fn sections(b: &[u8]) -> Vec<(&'static str, usize, usize)> {
    let count = |i: usize| u64_at(b, 56 + 8 * i) as usize;
    let offset = |i: usize| u64_at(b, 104 + 8 * i) as usize;
    let (parts, plans, filters, named, name_bytes) = (count(0), count(1), count(2), count(4), count(5));
    vec![
        ("header", 0, 192),
        ("part table", offset(0), offset(0) + parts * 64 + 8),
        ("layout", offset(1), offset(1) + 32 + plans * 40 + 8),
        ("set table", offset(2), offset(2) + filters * 32 + 8),
        ("names", offset(3), offset(3) + named * 16 + name_bytes + 8),
    ]
}

/// Recomputes the checksum of the section `start..end` (and the header's).
fn reseal(b: &mut [u8], start: usize, end: usize) {
    let sum = xxh3_64(&b[start..end - 8]);
    set_u64(b, end - 8, sum);
    let sum = xxh3_64(&b[..184]);
    set_u64(b, 184, sum);
}

/// `(offset, bytes)` of every part, from the part table.
fn parts(b: &[u8]) -> Vec<(usize, usize)> {
    let (start, n) = (u64_at(b, 104) as usize, u64_at(b, 56) as usize);
    (0..n).map(|i| (u64_at(b, start + 64 * i) as usize, u64_at(b, start + 64 * i + 8) as usize)).collect()
}

/// Opens `bytes` every way; all must fail, and each with an error `ok`
/// accepts (the map only when `verify` finds it, for rows).
fn assert_rejected(bytes: &[u8], what: &str, ok: impl Fn(&Error) -> bool) {
    let err = persist::from_bytes(bytes).unwrap_err();
    assert!(ok(&err), "{what}: from bytes: {err:?}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.bsc");
    std::fs::write(&path, bytes).unwrap();
    let err = persist::load(&path).unwrap_err();
    assert!(ok(&err), "{what}: from the file: {err:?}");
    // SAFETY: a private temporary file that nothing writes while mapped.
    let err = unsafe { persist::open_mmap(&path, Verify::Full) }.unwrap_err();
    assert!(ok(&err), "{what}: mapped: {err:?}");
    // SAFETY: as above.
    match unsafe { persist::open_mmap(&path, Verify::Deferred) } {
        Ok(mut loaded) => {
            let err = loaded.verify().unwrap_err();
            assert!(ok(&err), "{what}: mapped, verified later: {err:?}");
        }
        Err(err) => assert!(ok(&err), "{what}: mapped, deferred: {err:?}"),
    }
}

#[test]
fn every_section_checksum_is_checked() {
    let (c, names) = sample();
    let bytes = persist::to_bytes(&c, &names).unwrap();
    for (name, start, end) in sections(&bytes) {
        // (The header's first bytes are the magic and version, checked first.)
        let start = if name == "header" { 16 } else { start };
        for at in [start, (start + end) / 2, end - 9] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert_rejected(&bad, name, |e| matches!(e, Error::ChecksumMismatch { section } if section == name));
        }
    }
    // Every section of every part: its header, tables and each shard's rows.
    for (i, (offset, len)) in parts(&bytes).into_iter().enumerate() {
        for at in [offset + 20, offset + 128 + 4, offset + len - 1, offset + len / 2] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x01;
            let prefix = format!("part {i} ");
            assert_rejected(
                &bad,
                &format!("part {i} at {}", at - offset),
                |e| matches!(e, Error::ChecksumMismatch { section } if section.starts_with(&prefix)),
            );
        }
    }
}

#[test]
fn every_truncation_is_a_typed_error() {
    let (c, names) = sample();
    let bytes = persist::to_bytes(&c, &names).unwrap();
    for cut in 0..bytes.len() {
        let err = persist::from_bytes(&bytes[..cut]).unwrap_err();
        assert!(matches!(err, Error::Truncated { .. } | Error::BadMagic), "cut at {cut}: {err:?}");
    }
    // Section boundaries, every reader.
    let mut cuts: Vec<usize> = sections(&bytes).iter().flat_map(|&(_, s, e)| [s, e]).collect();
    cuts.extend(parts(&bytes).iter().flat_map(|&(o, l)| [o, o + 128, o + l - 64]));
    for cut in cuts {
        assert_rejected(&bytes[..cut], &format!("cut at {cut}"), |e| {
            matches!(e, Error::Truncated { .. } | Error::BadMagic)
        });
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_rejected(&longer, "a trailing byte", |e| matches!(e, Error::CorruptFile(_)));
}

#[test]
fn inconsistent_tables_are_corrupt_files() {
    let (c, names) = sample();
    let bytes = persist::to_bytes(&c, &names).unwrap();
    let corrupt = |e: &Error| matches!(e, Error::CorruptFile(_));
    let secs = sections(&bytes);
    let (_, sets_at, sets_end) = secs[3];
    let (_, table_at, table_end) = secs[1];

    // A set naming a part that does not exist.
    let mut bad = bytes.clone();
    bad[sets_at + 8..sets_at + 12].copy_from_slice(&99u32.to_le_bytes());
    reseal(&mut bad, sets_at, sets_end);
    assert_rejected(&bad, "missing part", corrupt);

    // A set in a part that does not hold its column.
    let mut bad = bytes.clone();
    let part = u32::from_le_bytes(bad[sets_at + 8..sets_at + 12].try_into().unwrap());
    bad[sets_at + 8..sets_at + 12].copy_from_slice(&((part + 1) % 2).to_le_bytes());
    reseal(&mut bad, sets_at, sets_end);
    assert_rejected(&bad, "wrong part", corrupt);

    // Two sets with one id.
    let mut bad = bytes.clone();
    let first = u64_at(&bad, sets_at);
    set_u64(&mut bad, sets_at + 32, first);
    reseal(&mut bad, sets_at, sets_end);
    assert_rejected(&bad, "duplicate id", corrupt);

    // A load above its capacity.
    let mut bad = bytes.clone();
    set_u64(&mut bad, sets_at + 24, u64::MAX);
    reseal(&mut bad, sets_at, sets_end);
    assert_rejected(&bad, "overfull filter", corrupt);

    // A section offset off the canonical layout (misaligned, overlapping).
    for (field, delta) in [(1usize, 64i64), (2, -64), (3, 8), (4, 64)] {
        let mut bad = bytes.clone();
        let at = 104 + 8 * field;
        let v = u64_at(&bad, at).wrapping_add_signed(delta);
        set_u64(&mut bad, at, v);
        reseal(&mut bad, 0, 192);
        assert_rejected(&bad, &format!("offset {field} moved by {delta}"), corrupt);
    }

    // A part declared where the one before it lies (overlap), or at an
    // offset past the end.
    for v in [u64_at(&bytes, table_at), u64::MAX - 10] {
        let mut bad = bytes.clone();
        set_u64(&mut bad, table_at + 64, v);
        reseal(&mut bad, table_at, table_end);
        assert_rejected(&bad, "part offset", |e| corrupt(e) || matches!(e, Error::Truncated { .. }));
    }

    // Absurd counts.
    for field in 0..6 {
        let mut bad = bytes.clone();
        set_u64(&mut bad, 56 + 8 * field, u64::MAX / 3);
        reseal(&mut bad, 0, 192);
        assert_rejected(&bad, &format!("count {field}"), |e| corrupt(e) || matches!(e, Error::Truncated { .. }));
    }

    // Another major version; not a bloomslice file.
    let mut bad = bytes.clone();
    bad[8] = 3;
    reseal(&mut bad, 0, 192);
    assert_rejected(&bad, "version 3", |e| matches!(e, Error::UnsupportedVersion { major: 3, .. }));
    let mut bad = bytes.clone();
    bad[0] = b'X';
    assert_rejected(&bad, "magic", |e| matches!(e, Error::BadMagic));
}

// ---------------------------------------------------------------------
// Sharded directories of collection files.

use bloomslice::persist::manifest::{self, MANIFEST_FILE, Manifest, ManifestParams, ShardFile};
use bloomslice::sharded::ShardedIndex;

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// `whole` split into a manifest in `dir`: file 0 a format-1 index file of
/// some one-filter sets of the first part, then collection files of the
/// other sets (every id `% 3`), each keeping every part.
fn split(dir: &std::path::Path, whole: &SetIndex, names: &SetNames) {
    let first = whole.parts().next().unwrap();
    let params = *first.params();
    let mut ids: Vec<u64> = whole.ids().collect();
    ids.sort_unstable();
    let in_v1: Vec<u64> = ids
        .iter()
        .copied()
        .filter(|&id| {
            let f = whole.filters(id).unwrap();
            f.len() == 1 && f[0].part == 0 && id % 2 == 0
        })
        .take(4)
        .collect();
    assert_eq!(in_v1.len(), 4);
    let mut files = Vec::new();
    let mut index = SlicedIndex::new(params);
    let mut v1_names = SetNames::new();
    for &id in &in_v1 {
        index.insert_filter(id, &first.filter_cloned(id).unwrap()).unwrap();
        if let Some(n) = names.name(id) {
            v1_names.insert(id, n.to_vec()).unwrap();
        }
    }
    index.set_kmer_length(whole.kmer_length());
    persist::save(dir.join("v1.bsi"), &index, &v1_names).unwrap();
    files.push(ShardFile::describe(dir, "v1.bsi", &index, &v1_names).unwrap());
    for group in 0..3u64 {
        let mut part = whole.clone();
        let mut part_names = SetNames::new();
        for &id in &ids {
            if in_v1.contains(&id) || id % 3 != group {
                part.remove_set(id).unwrap();
            } else if let Some(n) = names.name(id) {
                part_names.insert(id, n.to_vec()).unwrap();
            }
        }
        let file = format!("c{group}.bsc");
        persist::save(dir.join(&file), &part, &part_names).unwrap();
        files.push(ShardFile::describe_collection(dir, &file, &part, &part_names).unwrap());
    }
    Manifest { params: ManifestParams::of(&params), files }.write(&dir.join(MANIFEST_FILE)).unwrap();
}

fn sharded_every_way(dir: &std::path::Path) -> Vec<ShardedIndex> {
    // SAFETY: the test's files are not changed while mapped.
    let mapped = |v| unsafe { ShardedIndex::open_mmap(dir, v) }.unwrap();
    let out = vec![
        ShardedIndex::load(dir, Verify::Full).unwrap(),
        ShardedIndex::load(dir, Verify::Deferred).unwrap(),
        mapped(Verify::Full),
        mapped(Verify::Deferred),
    ];
    assert!(!out[0].is_mapped() && out[3].is_mapped());
    out
}

#[test]
fn sharded_manifests_of_collection_files_answer_as_the_collection() {
    let (whole, names) = sample();
    let dir = tempfile::tempdir().unwrap();
    split(dir.path(), &whole, &names);
    let probes = probes();
    let mut want = BatchResults::new();
    whole.query_batch(&probes, &mut want);
    for sharded in sharded_every_way(dir.path()) {
        assert_eq!((sharded.shard_count(), sharded.len()), (4, whole.len()));
        assert_eq!(sharded.kmer_length(), whole.kmer_length());
        assert_eq!(sharded.params(), whole.parts().next().unwrap().params());
        assert_eq!(sorted(sharded.ids().collect()), sorted(whole.ids().collect()));
        assert_eq!(sharded.names().id(b"set-4"), names.id(b"set-4"));
        assert_eq!(sharded.shards()[0].index.parts().len(), 1);
        assert!(sharded.shards()[1].index.parts().len() >= 2);
        let mut got = BatchResults::new();
        sharded.query_batch(&probes, &mut got);
        for (i, key) in probes.iter().enumerate() {
            let expected = sorted(want.get(i).unwrap().to_vec());
            assert_eq!(sorted(got.get(i).unwrap().to_vec()), expected, "key {i}");
            assert_eq!(sorted(sharded.query(key)), expected, "key {i}");
        }
        let thresholds = [Threshold::count(0), Threshold::count(2), Threshold::fraction(0.25).unwrap()];
        assert_scores_agree!(sharded, whole, probes.chunks(150), thresholds);
    }
}

#[test]
fn manifest_writers_change_collection_files_in_place_of_index_files() {
    let (whole, names) = sample();
    let dir = tempfile::tempdir().unwrap();
    split(dir.path(), &whole, &names);
    let path = dir.path().join(MANIFEST_FILE);
    let wait = std::time::Duration::from_secs(5);
    let params = *whole.parts().next().unwrap().params();
    let mut filter = BloomFilter::new(params).unwrap();
    for key in 8_800_000..8_800_010u64 {
        filter.insert(&key.to_le_bytes());
    }
    for shard in [0usize, 2] {
        let name = format!("added-{shard}");
        let id = manifest::add_set(&path, shard, name.as_bytes(), &filter, wait).unwrap();
        let m = Manifest::read(&path).unwrap();
        m.verify_files(dir.path()).unwrap();
        assert_eq!(m.owner_of(name.as_bytes()), Some(shard));
        let sharded = ShardedIndex::load(dir.path(), Verify::Full).unwrap();
        assert!(sharded.query(&8_800_005u64.to_le_bytes()).contains(&id));
        assert_eq!(sharded.names().id(name.as_bytes()), Some(id));
        // The index file stays an index file, the collection file a collection file.
        let bytes = std::fs::read(m.file_path(dir.path(), shard)).unwrap();
        assert_eq!(bytes[8], if shard == 0 { 1 } else { 2 });
    }
    let named = names.name(5).map(<[u8]>::to_vec).unwrap();
    let owner = manifest::remove_set(&path, &named, wait).unwrap();
    assert_eq!(owner, 1 + (5 % 3) as usize);
    let sharded = ShardedIndex::load(dir.path(), Verify::Full).unwrap();
    assert!(!sharded.ids().any(|id| id == 5));
    assert_eq!(sharded.len(), whole.len() + 1);
    sharded.shards().iter().for_each(|s| s.index.validate().unwrap());
    // Parameters that differ from the manifest's are refused.
    let other = BloomFilter::new(params.with_seed(99)).unwrap();
    assert!(manifest::add_set(&path, 1, b"other", &other, wait).is_err());
}

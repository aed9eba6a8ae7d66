//! Hash schemes across the library: every structure that combines filters
//! rejects a different scheme with the same typed error a different `m` or
//! `k` gives, index files keep their scheme, and a file written before the
//! second scheme existed (format minor 0, [`HashScheme::Xxh3Double`]) still
//! opens and answers as it did.

use bloomslice::persist;
use bloomslice::persist::Loaded;
use bloomslice::{BloomFilter, BloomParams, Error, FilterIndex, HashScheme, NaiveIndex, SetNames, SlicedIndex};

/// The committed file of format 1.0: `persist::save` of
/// `fixture_index(fixture_params())`, written by the engine at `27f794c`,
/// before `HashScheme::Xxh3Triple` existed. Never regenerate it: it stands
/// for the files users already have.
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/xxh3double-1.0.blms");

/// Sets of the fixture: 12 sets of 40 keys each, m = 512, k = 6, seed 7.
fn fixture_params() -> BloomParams {
    BloomParams::new(512, 6).unwrap().with_scheme(HashScheme::Xxh3Double).with_seed(7)
}

fn fixture_index(params: BloomParams) -> (SlicedIndex, SetNames) {
    let mut index = SlicedIndex::new(params);
    let mut names = SetNames::new();
    for id in 0..12u64 {
        let mut f = BloomFilter::new(params).unwrap();
        for key in 0..40u64 {
            f.insert(&(id * 1000 + key).to_le_bytes());
        }
        index.insert_filter(100 + id, &f).unwrap();
        names.insert(100 + id, format!("set-{id}")).unwrap();
    }
    (index, names)
}

/// Total matches of the fixture over keys `0..12 000` (480 members and the
/// false positives), as the engine at `27f794c` answered when it wrote the
/// fixture.
const FIXTURE_MATCHES: usize = 984;

/// The format 1.0 file opens with its scheme, and answers exactly as an
/// index built now with that scheme, and as it did when it was written.
#[test]
fn old_scheme_fixture_still_opens_and_answers_as_before() {
    let bytes = std::fs::read(FIXTURE).unwrap();
    assert_eq!((bytes[10], bytes[11]), (0, 0), "the fixture is a minor 0 file");
    for loaded in [Loaded::<SlicedIndex>::load(FIXTURE).unwrap(), Loaded::<SlicedIndex>::from_bytes(&bytes).unwrap()] {
        assert_eq!(loaded.info.version, (1, 0));
        assert_eq!(*loaded.index.params(), fixture_params());
        assert_eq!(loaded.index.params().scheme(), HashScheme::Xxh3Double);
        let (rebuilt, names) = fixture_index(fixture_params());
        assert_eq!(loaded.names, names);
        let mut total = 0;
        for key in 0..12_000u64 {
            let mut got = loaded.index.query(&key.to_le_bytes());
            let mut want = rebuilt.query(&key.to_le_bytes());
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "key {key}");
            total += got.len();
        }
        assert_eq!(total, FIXTURE_MATCHES);
    }
}

/// A new index keeps its scheme through a file, and a file's scheme is what
/// decides its answers: the same sets under the other scheme answer
/// differently.
#[test]
fn index_files_keep_their_scheme() {
    for scheme in HashScheme::ALL {
        let params = fixture_params().with_scheme(scheme);
        let (index, names) = fixture_index(params);
        let bytes = persist::to_bytes(&index, &names).unwrap();
        let loaded = Loaded::<SlicedIndex>::from_bytes(&bytes).unwrap();
        assert_eq!(loaded.index.params().scheme(), scheme);
        assert_eq!(loaded.info.version, (persist::FORMAT_MAJOR, persist::FORMAT_MINOR));
        for key in 0..2_000u64 {
            assert_eq!(loaded.index.query(&key.to_le_bytes()), index.query(&key.to_le_bytes()));
        }
    }
    assert_eq!(BloomParams::new(512, 6).unwrap().scheme(), HashScheme::Xxh3Triple);
    let a = fixture_index(fixture_params()).0;
    let b = fixture_index(fixture_params().with_scheme(HashScheme::Xxh3Triple)).0;
    let differ = (0..12_000u64).filter(|k| a.query(&k.to_le_bytes()) != b.query(&k.to_le_bytes())).count();
    assert!(differ > 0, "the schemes set the same bits");
}

/// A header with an unknown scheme code, or a minor 0 header with a code
/// only minor 1 defines, is a corrupt file (checksum fixed up so that the
/// scheme check is what fails).
#[test]
fn unknown_scheme_codes_are_corrupt_files() {
    let (index, names) = fixture_index(fixture_params().with_scheme(HashScheme::Xxh3Triple));
    let good = persist::to_bytes(&index, &names).unwrap();
    let patch = |minor: u16, code: u32| {
        let mut b = good.clone();
        b[10..12].copy_from_slice(&minor.to_le_bytes());
        b[36..40].copy_from_slice(&code.to_le_bytes());
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..120]);
        b[120..128].copy_from_slice(&sum.to_le_bytes());
        b
    };
    let minor = persist::FORMAT_MINOR;
    assert!(Loaded::<SlicedIndex>::from_bytes(&patch(minor, 1)).is_ok());
    assert!(matches!(Loaded::<SlicedIndex>::from_bytes(&patch(minor, 2)), Err(Error::CorruptFile(_))));
    assert!(matches!(Loaded::<SlicedIndex>::from_bytes(&patch(minor, u32::MAX)), Err(Error::CorruptFile(_))));
    assert!(matches!(Loaded::<SlicedIndex>::from_bytes(&patch(0, 1)), Err(Error::CorruptFile(_))));
}

/// Every index type refuses a filter of the other scheme with
/// `Error::ParamsMismatch`, as for a different `m` or `k` (the indexes of
/// `bloomslice-papers` are checked in its `filter_index` test).
fn rejects_other_scheme<I>(mut index: I, what: &str)
where
    I: FilterIndex<Filter = BloomFilter, Error = Error>,
{
    let params = *index.params();
    let other = BloomFilter::new(params.with_scheme(HashScheme::Xxh3Double)).unwrap();
    let same = BloomFilter::new(params).unwrap();
    let err = index.insert_filter(1, &other).unwrap_err();
    assert!(matches!(err, Error::ParamsMismatch { .. }), "{what}: {err:?}");
    index.insert_filter(1, &same).unwrap();
    let err = index.update_filter(1, &other).unwrap_err();
    assert!(matches!(err, Error::ParamsMismatch { .. }), "{what}: {err:?}");
}

#[test]
fn a_different_scheme_is_a_params_mismatch_everywhere() {
    let params = BloomParams::new(1024, 5).unwrap();
    assert_eq!(params.scheme(), HashScheme::default());
    rejects_other_scheme(SlicedIndex::new(params), "sliced");
    rejects_other_scheme(NaiveIndex::new(params), "naive");

    let old = params.with_scheme(HashScheme::Xxh3Double);
    let mut a = BloomFilter::new(params).unwrap();
    let b = BloomFilter::new(old).unwrap();
    assert_eq!(a.union_with(&b), Err(Error::ParamsMismatch { expected: params, found: old }));
    assert_eq!(a.intersect_with(&b), Err(Error::ParamsMismatch { expected: params, found: old }));
}

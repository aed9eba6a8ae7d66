//! [`LevelIndex`] against its naive model (every set's path of filters,
//! [`LevelIndex::paths`]), against the ground truth (no false negative),
//! and against a flat [`SetIndex`] of the same sets (fewer false sets per
//! absent key at comparable memory on a skewed shape).

use bloomslice::collection::levels::PathStep;
use bloomslice::{
    BatchResults, Key, KeyHash, LayoutConfig, LevelConfig, LevelIndex, ReadIndex, Scores, SetIndex, Threshold,
};
use proptest::prelude::*;

/// Sets of heavy-tailed sizes: most of 1 to `small` keys, every
/// `every`-th of `large` keys or more; keys distinct across sets.
fn skewed(n: u64, small: u64, every: u64, large: u64, seed: u64) -> Vec<(u64, Vec<[u8; 8]>)> {
    let mut state = seed | 1;
    (0..n)
        .map(|id| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let size = if every > 0 && id % every == 0 { large + state % large } else { 1 + state % small };
            (id * 3 + 1, (0..size).map(|i| (((id * 3 + 1) << 32) | i).to_le_bytes()).collect())
        })
        .collect()
}

fn oracle(paths: &[(u64, Vec<PathStep>)], hash: KeyHash) -> Vec<u64> {
    paths.iter().filter(|(_, path)| path.iter().all(|step| step.passes(hash))).map(|(id, _)| *id).collect()
}

fn check_against_paths(sets: &[(u64, Vec<[u8; 8]>)], index: &LevelIndex, absent: u64) {
    let paths = index.paths().unwrap();
    assert_eq!(paths.len(), sets.len());
    let mut keys: Vec<[u8; 8]> = sets.iter().flat_map(|(_, keys)| keys.iter().step_by(3).copied()).collect();
    keys.extend((0..absent).map(|i| ((1u64 << 63) | i).to_le_bytes()));
    let hashes: Vec<KeyHash> = keys.iter().map(|key| key.key_hash(index.seed())).collect();
    let mut batch = BatchResults::new();
    index.query_batch_hashes(&hashes, &mut batch);
    let mut got = Vec::new();
    for (i, &hash) in hashes.iter().enumerate() {
        index.query_hash_into(hash, &mut got);
        got.sort_unstable();
        assert_eq!(got, oracle(&paths, hash), "key {:?}", keys[i]);
        let mut from_batch = batch.get(i).unwrap().to_vec();
        from_batch.sort_unstable();
        assert_eq!(from_batch, got);
    }
    for (id, keys) in sets {
        for key in keys {
            assert!(index.query(key).contains(id), "false negative: set {id}");
        }
    }
    // Scores and thresholds: the oracle's counts over query keys drawn
    // from a few sets and absent keys.
    for (q, chunk) in hashes.chunks(40).enumerate().take(30) {
        let mut want: Vec<(u64, u32)> = paths
            .iter()
            .map(|(id, path)| (*id, chunk.iter().filter(|&&h| path.iter().all(|s| s.passes(h))).count() as u32))
            .filter(|&(_, c)| c > 0)
            .collect();
        want.sort_unstable();
        let mut scores = Scores::new();
        index.score_hashes_into(chunk, &mut scores);
        assert_eq!(scores.iter().collect::<Vec<_>>(), want, "scores of query {q}");
        for min in [1u32, 3, 20] {
            let got = ReadIndex::query_threshold(index, chunk, Threshold::count(min));
            let expected: Vec<(u64, u32)> = want.iter().copied().filter(|&(_, c)| c >= min).collect();
            assert_eq!(got, expected, "threshold {min} of query {q}");
        }
        let all = ReadIndex::query_threshold(index, chunk, Threshold::count(0));
        assert_eq!(all.len(), sets.len());
    }
}

#[test]
fn levels_answer_as_their_paths() {
    let sets = skewed(1_500, 40, 50, 3_000, 11);
    let index = LevelIndex::build(&sets, 0.01, LevelConfig::default()).unwrap();
    assert!(index.depth() >= 2);
    check_against_paths(&sets, &index, 20_000);
    let deep = LevelIndex::build(&sets, 0.01, LevelConfig { leaf_sets: 64, ..LevelConfig::default() }).unwrap();
    assert!(deep.depth() >= 3);
    check_against_paths(&sets, &deep, 20_000);
}

#[test]
fn read_index_surface() {
    let sets = skewed(300, 20, 30, 2_000, 5);
    let index = LevelIndex::build(&sets, 0.01, LevelConfig::default()).unwrap();
    let dyn_index: &dyn ReadIndex = &index;
    assert_eq!(dyn_index.len(), 300);
    let ids = dyn_index.ids();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(ids.iter().all(|&id| dyn_index.contains(id)));
    assert!(!dyn_index.contains(0));
    // Scores count, for every set, the query keys it may hold.
    let (id, keys) = &sets[7];
    let scores = ReadIndex::query_threshold(&index, keys, Threshold::fraction(1.0).unwrap());
    assert!(scores.contains(&(*id, keys.len() as u32)));
}

/// On a skewed shape, levels answer far fewer false sets per absent key
/// than the flat collection, in at most 1.5x its rows.
#[test]
fn levels_beat_flat_on_false_sets() {
    let sets = skewed(2_000, 60, 40, 4_000, 3);
    let levels = LevelIndex::build(&sets, 0.01, LevelConfig::default()).unwrap();
    let flat = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
    assert!(levels.depth() >= 2);
    let flat_rows: usize = flat.parts().map(|part| part.rows_bytes()).sum();
    assert!(levels.rows_bytes() as f64 <= 1.5 * flat_rows as f64, "{} vs {flat_rows}", levels.rows_bytes());
    let (mut level_hits, mut flat_hits) = (0usize, 0usize);
    let absent = 100_000u64;
    for key in (0..absent).map(|i| ((1u64 << 63) | i).to_le_bytes()) {
        level_hits += levels.query(&key).len();
        flat_hits += flat.query(&key).len();
    }
    assert!(level_hits * 3 < flat_hits, "levels {level_hits}, flat {flat_hits} false sets in {absent} keys");
}

/// Files: a level index saved and loaded (bytes, a file, a map) answers
/// as before with its names; every truncation and every flipped byte of
/// the file is an error, never a panic or a different index.
#[test]
fn level_files_round_trip_and_reject_damage() {
    use bloomslice::persist::{self, Loaded, SetNames, Verify};
    let sets = skewed(600, 30, 40, 2_000, 9);
    let index = LevelIndex::build(&sets, 0.01, LevelConfig { leaf_sets: 64, ..LevelConfig::default() }).unwrap();
    assert!(index.depth() >= 2);
    let mut names = SetNames::new();
    for (id, _) in sets.iter().step_by(3) {
        names.insert(*id, format!("set-{id}")).unwrap();
    }
    let bytes = persist::to_bytes(&index, &names).unwrap();
    let loaded = Loaded::<LevelIndex>::from_bytes(&bytes).unwrap();
    assert_eq!(loaded.names, names);
    assert_eq!(loaded.info.version, (bloomslice::collection::levels::LEVELS_FORMAT_MAJOR, 0));
    assert_eq!(loaded.index.ids(), index.ids());
    check_against_paths(&sets, &loaded.index, 2_000);
    assert_eq!(persist::to_bytes(&loaded.index, &loaded.names).unwrap(), bytes);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("levels.bsl");
    persist::save(&path, &index, &names).unwrap();
    assert_eq!(Loaded::<LevelIndex>::load(&path).unwrap().index.ids(), index.ids());
    // SAFETY: the file is this test's own and nothing writes it while mapped.
    let mapped = unsafe { Loaded::<LevelIndex>::open_mmap(&path, Verify::Deferred) }.unwrap();
    assert_eq!(mapped.index.paths().unwrap(), index.paths().unwrap());
    // Not a set index file.
    assert!(matches!(persist::load(&path), Err(bloomslice::Error::UnsupportedVersion { major: 3, .. })));

    for len in (0..bytes.len()).step_by(97) {
        assert!(Loaded::<LevelIndex>::from_bytes(&bytes[..len]).is_err(), "truncated to {len}");
    }
    for at in (0..bytes.len()).step_by(89) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        assert!(Loaded::<LevelIndex>::from_bytes(&bad).is_err(), "byte {at} flipped");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any shape and any column count: answers as the paths, no false
    /// negative.
    #[test]
    fn any_shape_answers_as_its_paths(
        n in 1u64..400,
        small in 1u64..50,
        every in 0u64..40,
        large in 1u64..2_000,
        columns in 1usize..80,
        leaf in 1usize..200,
        seed in any::<u64>(),
    ) {
        let sets = skewed(n, small, every, large, seed);
        let config = LevelConfig { top_columns: columns, leaf_sets: leaf, ..LevelConfig::default() };
        let index = LevelIndex::build(&sets, 0.05, config).unwrap();
        check_against_paths(&sets, &index, 500);
    }
}

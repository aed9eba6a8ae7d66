//! [`LevelIndex`] against its naive model (every set's path of filters,
//! [`LevelIndex::paths`]), against the ground truth (no false negative),
//! and against a flat [`SetIndex`] of the same sets (fewer false sets per
//! absent key at comparable memory on a skewed shape).

use std::collections::BTreeMap;

use bloomslice::collection::levels::{LEVELS_FORMAT_MAJOR, LEVELS_FORMAT_MINOR, PathStep};
use bloomslice::persist::{self, Loaded, SetNames};
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
    let mut keys: Vec<[u8; 8]> = sets.iter().flat_map(|(_, keys)| keys.iter().step_by(11).copied()).collect();
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
    check_against_paths(&sets, &index, 4_000);
    let deep = LevelIndex::build(&sets, 0.01, LevelConfig { leaf_sets: 64, ..LevelConfig::default() }).unwrap();
    assert!(deep.depth() >= 3);
    check_against_paths(&sets, &deep, 4_000);
}

/// A build on several threads is the build on one, byte for byte.
#[test]
fn threads_build_the_same_index() {
    let sets = skewed(3_000, 40, 50, 3_000, 23);
    let config = LevelConfig { leaf_sets: 64, ..LevelConfig::default() };
    let one = LevelIndex::build(&sets, 0.01, LevelConfig { threads: 1, ..config }).unwrap();
    assert!(one.depth() >= 3);
    let bytes = persist::to_bytes(&one, &SetNames::new()).unwrap();
    for threads in [2, 3, 8] {
        let many = LevelIndex::build(&sets, 0.01, LevelConfig { threads, ..config }).unwrap();
        assert!(persist::to_bytes(&many, &SetNames::new()).unwrap() == bytes, "{threads} threads");
    }
}

/// The pool and the concurrent index answer as the index: batches and
/// threshold batches through a pool of two workers, and a shared index
/// written concurrently (the same writes as a plain one) between them.
#[test]
fn pool_and_concurrent_answer_as_the_index() {
    use bloomslice::{ConcurrentIndex, PoolConfig, PoolResults, QueryPool, ThresholdResults, Workers};
    let sets = skewed(1_000, 30, 40, 2_000, 29);
    let mut plain = LevelIndex::build(&sets, 0.01, LevelConfig { leaf_sets: 64, ..LevelConfig::default() }).unwrap();
    assert!(plain.depth() >= 2);
    let shared = ConcurrentIndex::new(plain.clone());
    let pool = QueryPool::new(PoolConfig { workers: Workers::Count(2), ..PoolConfig::default() }).unwrap();
    let mut keys: Vec<[u8; 8]> = sets.iter().flat_map(|(_, keys)| keys.iter().step_by(13).copied()).collect();
    keys.extend((0..1_000u64).map(|i| ((1u64 << 63) | i).to_le_bytes()));
    let queries: Vec<Vec<[u8; 8]>> =
        sets.iter().step_by(50).map(|(_, keys)| keys.iter().take(40).copied().collect()).collect();
    let (mut results, mut scored) = (PoolResults::new(), ThresholdResults::new());
    for round in 0..3u64 {
        let mut want = BatchResults::new();
        plain.query_batch(&keys, &mut want);
        for key in keys.iter().step_by(17) {
            assert_eq!(ReadIndex::query(&shared, key), ReadIndex::query(&plain, key));
        }
        pool.query_batch(&shared, &keys, &mut results).unwrap();
        assert!(results.iter().eq(want.iter()), "pool batch, round {round}");
        let threshold = Threshold::fraction(0.5).unwrap();
        let expected: Vec<Vec<(u64, u32)>> =
            queries.iter().map(|q| ReadIndex::query_threshold(&plain, q, threshold)).collect();
        pool.query_threshold_batch(&shared, &queries, threshold, &mut scored).unwrap();
        assert!(scored.iter().eq(expected.iter().map(Vec::as_slice)), "pool thresholds, round {round}");
        // The same writes on both.
        let id = 7_000_000 + round;
        let new_keys = written_keys(round, 30);
        plain.insert_set(id, &new_keys).unwrap();
        shared.insert_set(id, &new_keys).unwrap();
        let old = sets[(round * 11) as usize].0;
        plain.add_keys(old, &written_keys(100 + round, 5)).unwrap();
        shared.add_keys(old, &written_keys(100 + round, 5)).unwrap();
        let gone = sets[(round * 13 + 1) as usize].0;
        plain.remove_set(gone).unwrap();
        shared.remove_set(gone).unwrap();
        assert!(matches!(shared.remove_set(gone), Err(bloomslice::Error::UnknownId(_))));
        keys.extend(new_keys);
    }
    assert_eq!(ReadIndex::ids(&shared), plain.ids());
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

/// The per-set bound: every set answers an absent key at most at rate
/// `p` (its own filter's, or its key's piece's, sized for `p` at its load;
/// a small set must also pass its group's column, so it answers at about
/// `p * p`). Checked set by set over 200 000 absent keys, with five
/// binomial standard deviations of slack.
#[test]
fn every_set_within_its_rate() {
    let p = 0.01;
    let sets = skewed(1_200, 60, 30, 5_000, 17);
    let index = LevelIndex::build(&sets, p, LevelConfig { leaf_sets: 64, ..LevelConfig::default() }).unwrap();
    assert!(index.depth() >= 3);
    let absent = 200_000u64;
    let mut hits: BTreeMap<u64, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for i in 0..absent {
        index.query_hash_into(((1u64 << 63) | i).to_le_bytes().key_hash(0), &mut out);
        for &id in &out {
            *hits.entry(id).or_default() += 1;
        }
    }
    let n = absent as f64;
    let bound = n * p + 5.0 * (n * p * (1.0 - p)).sqrt();
    let worst = hits.iter().max_by_key(|&(_, &h)| h).map(|(&id, &h)| (id, h)).unwrap_or_default();
    assert!((worst.1 as f64) <= bound, "set {} answered {} of {absent} absent keys", worst.0, worst.1);
    let mean = hits.values().sum::<u64>() as f64 / n / sets.len() as f64;
    assert!(mean < p / 4.0, "mean rate {mean}");
}

/// Files: a level index saved and loaded (bytes, a file, a map) answers
/// as before with its names; every truncation and every flipped byte of
/// the file is an error, never a panic or a different index.
#[test]
fn level_files_round_trip_and_reject_damage() {
    use bloomslice::persist::Verify;
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
    assert_eq!(loaded.info.version, (LEVELS_FORMAT_MAJOR, LEVELS_FORMAT_MINOR));
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

/// One write to a level index and to its model.
#[derive(Clone, Debug)]
enum Write {
    Insert(u64, u64),
    Remove(u64),
    Replace(u64, u64),
    AddKeys(u64, u64),
}

/// `n` keys of a set written since the build, distinct from every other.
fn written_keys(tag: u64, n: u64) -> Vec<[u8; 8]> {
    (0..n).map(|i| ((1u64 << 62) | (tag << 20) | i).to_le_bytes()).collect()
}

/// Applies `write` to `index` and to `model`; a write the model refuses
/// (an id taken or unknown) must be refused by the index with the same
/// error and change nothing.
fn apply(index: &mut LevelIndex, model: &mut BTreeMap<u64, Vec<[u8; 8]>>, write: &Write, tag: u64) {
    let before = index.ids().to_vec();
    match *write {
        Write::Insert(id, n) => {
            let keys = written_keys(tag, n);
            if let std::collections::btree_map::Entry::Vacant(slot) = model.entry(id) {
                index.insert_set(id, &keys).unwrap();
                slot.insert(keys);
            } else {
                assert!(matches!(index.insert_set(id, &keys), Err(bloomslice::Error::DuplicateId(i)) if i == id));
            }
        }
        Write::Remove(id) => match model.remove(&id) {
            Some(_) => index.remove_set(id).unwrap(),
            None => assert!(matches!(index.remove_set(id), Err(bloomslice::Error::UnknownId(i)) if i == id)),
        },
        Write::Replace(id, n) => {
            let keys = written_keys(tag, n);
            match model.get_mut(&id) {
                Some(old) => {
                    index.replace_set(id, &keys).unwrap();
                    *old = keys;
                }
                None => assert!(matches!(index.replace_set(id, &keys), Err(bloomslice::Error::UnknownId(_)))),
            }
        }
        Write::AddKeys(id, n) => {
            let keys = written_keys(tag, n);
            match model.get_mut(&id) {
                Some(old) => {
                    index.add_keys(id, &keys).unwrap();
                    old.extend(keys);
                }
                None => assert!(matches!(index.add_keys(id, &keys), Err(bloomslice::Error::UnknownId(_)))),
            }
        }
    }
    if !model.keys().copied().eq(index.ids().iter().copied()) {
        panic!("after {write:?} the ids differ from the model's (before: {} ids)", before.len());
    }
}

/// Writes after the build (new sets, removals, replacements, added keys,
/// and refused ones) answer as the paths say with no false negative, and
/// survive a file round trip; a file of format 3.0 (before bins and writes)
/// is still read.
#[test]
fn writes_after_the_build_answer_and_persist() {
    let sets = skewed(800, 30, 40, 2_000, 21);
    let mut index = LevelIndex::build(&sets, 0.01, LevelConfig { leaf_sets: 64, ..LevelConfig::default() }).unwrap();
    assert!(index.depth() >= 2);

    // A file of format 3.0 (written by the build before bins and writes:
    // `skewed(300, 20, 30, 500, 11)`, leaf_sets 16, a name for set 4).
    let old =
        Loaded::<LevelIndex>::load(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/levels-3.0.bsl")).unwrap();
    assert_eq!(old.info.version, (LEVELS_FORMAT_MAJOR, 0));
    assert!(old.index.depth() >= 3);
    assert_eq!(old.names.name(4), Some(&b"four"[..]));
    let old_sets = skewed(300, 20, 30, 500, 11);
    check_against_paths(&old_sets, &old.index, 2_000);

    let mut model: BTreeMap<u64, Vec<[u8; 8]>> = sets.iter().cloned().collect();
    let ids: Vec<u64> = sets.iter().map(|(id, _)| *id).collect();
    for i in 0..400u64 {
        let old = ids[(i * 7 % ids.len() as u64) as usize];
        let write = match i % 5 {
            0 => Write::Insert(if i % 15 == 0 { old } else { 5_000_000 + i }, 1 + i % 300),
            1 => Write::Remove(if i % 10 == 1 { 9_999_999 } else { old }),
            2 => Write::Replace(old, i % 40),
            3 => Write::AddKeys(old, 1 + i % 50),
            _ => Write::AddKeys(5_000_000 + i - 4, 1 + i % 7),
        };
        apply(&mut index, &mut model, &write, i);
    }
    assert!(!index.hidden().is_empty() && !index.delta().is_empty());
    let live: Vec<(u64, Vec<[u8; 8]>)> = model.into_iter().collect();
    check_against_paths(&live, &index, 5_000);

    let bytes = persist::to_bytes(&index, &SetNames::new()).unwrap();
    let loaded = Loaded::<LevelIndex>::from_bytes(&bytes).unwrap();
    assert_eq!(loaded.index.ids(), index.ids());
    assert_eq!(loaded.index.hidden(), index.hidden());
    check_against_paths(&live, &loaded.index, 2_000);
    assert_eq!(persist::to_bytes(&loaded.index, &SetNames::new()).unwrap(), bytes);
    for at in (0..bytes.len()).step_by(61) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x08;
        assert!(Loaded::<LevelIndex>::from_bytes(&bad).is_err(), "byte {at} flipped");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any writes after any build: the ids are the model's, answers are
    /// the paths', no written key is lost.
    #[test]
    fn any_writes_answer_as_their_paths(
        n in 65u64..300,
        writes in proptest::collection::vec((0u8..4, 0u64..400, 0u64..60), 1..60),
        seed in any::<u64>(),
    ) {
        let sets = skewed(n, 20, 25, 800, seed);
        let mut index = LevelIndex::build(&sets, 0.05, LevelConfig { leaf_sets: 32, ..LevelConfig::default() }).unwrap();
        let mut model: BTreeMap<u64, Vec<[u8; 8]>> = sets.iter().cloned().collect();
        for (tag, &(kind, id, keys)) in writes.iter().enumerate() {
            let write = match kind {
                0 => Write::Insert(id, keys),
                1 => Write::Remove(id),
                2 => Write::Replace(id, keys),
                _ => Write::AddKeys(id, keys),
            };
            apply(&mut index, &mut model, &write, tag as u64);
        }
        let live: Vec<(u64, Vec<[u8; 8]>)> = model.into_iter().collect();
        check_against_paths(&live, &index, 300);
    }

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

//! Fuzzing of the level index file reader (format 3): arbitrary bytes must
//! load or give a typed error, never panic, hang or over-allocate. To
//! reach the structural checks behind the body's checksum, the input also
//! shapes a small level index (set sizes from its first bytes), whose file
//! is then damaged at positions the input names and its body checksum
//! recomputed. Before that, writes the input names (new sets, removals,
//! added keys, replacements) run against a model: the ids must be the
//! model's and every key of every live set must answer with its set. A
//! file that loads must answer, name only its own sets, and save back to
//! the same bytes.
#![no_main]

use std::collections::BTreeMap;

use bloomslice::persist::{self, Loaded};
use bloomslice::{LevelConfig, LevelIndex};
use libfuzzer_sys::fuzz_target;
use xxhash_rust::xxh3::xxh3_64;

/// Bytes of the level file's header (magic, versions, reserved, body length).
const HEADER: usize = 24;

fn check(bytes: &[u8]) {
    let Ok(loaded) = Loaded::<LevelIndex>::from_bytes(bytes) else { return };
    let index = &loaded.index;
    for key in [&b"a"[..], b"set-0-key-1", b"zz"] {
        let ids = index.query(key);
        assert!(ids.iter().all(|&id| index.contains(id)));
    }
    let again = persist::to_bytes(index, &loaded.names).expect("a loaded index saves");
    let reloaded = Loaded::<LevelIndex>::from_bytes(&again).expect("a saved index loads");
    assert_eq!(reloaded.index.ids(), index.ids());
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let Some((&n, rest)) = data.split_first() else { return };
    let (shape, damage) = rest.split_at(rest.len().min(usize::from(n % 64) + 2));
    let sets: Vec<(u64, Vec<Vec<u8>>)> = shape
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let size = if b > 240 { usize::from(b) * 8 } else { usize::from(b % 16) + 1 };
            (i as u64 * 5, (0..size).map(|j| format!("set-{i}-key-{j}").into_bytes()).collect())
        })
        .collect();
    let config = LevelConfig { top_columns: 4, leaf_sets: 3, ..LevelConfig::default() };
    let Ok(mut index) = LevelIndex::build(&sets, 0.05, config) else { return };
    let (ops, damage) = damage.split_at(damage.len().min(usize::from(n / 64) * 6));
    let mut model: BTreeMap<u64, Vec<Vec<u8>>> = sets.into_iter().collect();
    for (t, op) in ops.chunks(2).enumerate() {
        let [kind, x] = *op else { continue };
        let id = u64::from(x % 16) * 5;
        let keys: Vec<Vec<u8>> = (0..x % 5).map(|j| format!("w-{t}-{j}").into_bytes()).collect();
        let known = model.contains_key(&id);
        match kind % 4 {
            0 => {
                assert_eq!(index.insert_set(id, &keys).is_ok(), !known);
                model.entry(id).or_insert(keys);
            }
            1 => {
                assert_eq!(index.remove_set(id).is_ok(), known);
                model.remove(&id);
            }
            2 => {
                assert_eq!(index.add_keys(id, &keys).is_ok(), known);
                if let Some(old) = model.get_mut(&id) {
                    old.extend(keys);
                }
            }
            _ => {
                assert_eq!(index.replace_set(id, &keys).is_ok(), known);
                if let Some(old) = model.get_mut(&id) {
                    *old = keys;
                }
            }
        }
        assert!(index.ids().iter().copied().eq(model.keys().copied()), "ids after write {t}");
    }
    for (id, keys) in &model {
        for key in keys {
            assert!(index.query(key).contains(id), "set {id} lost a key");
        }
    }
    let mut bytes = persist::to_bytes(&index, &persist::SetNames::new()).expect("a built index saves");
    if bytes.len() < HEADER + 8 {
        return;
    }
    for pair in damage.chunks(3) {
        if let [a, b, v] = *pair {
            let at = HEADER + (usize::from(a) << 8 | usize::from(b)) % (bytes.len() - HEADER - 8);
            bytes[at] ^= v;
        }
    }
    let end = bytes.len() - 8;
    let sum = xxh3_64(&bytes[HEADER..end]);
    bytes[end..].copy_from_slice(&sum.to_le_bytes());
    check(&bytes);
});

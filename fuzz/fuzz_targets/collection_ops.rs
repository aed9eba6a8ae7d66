//! Differential fuzzing of `SetIndex` against a naive model: the input
//! picks the false-positive rate and the layout knobs, then an operation
//! sequence (build, insert sets of 0 to 4 999 keys, replace, remove, add
//! keys so sets grow, single-key and batched queries, scores, thresholds).
//! The model keeps each set's keys and its own list of `BloomFilter`s,
//! filled as the collection's documentation says (keys go to the last
//! filter until it holds its capacity, then to a new one, whose parameters
//! and capacity the model takes from `SetIndex::filters`), so the loads
//! the collection reports are checked. After every step: `validate()`, the
//! set count and ids; on query steps, every answer equals the model's union
//! of filters (each set once), no key of a set is missed, and scores and
//! threshold answers equal the model's counts. Keys are drawn from a small
//! space so that sets share keys and repeat them. The kernel backend is the
//! detected one (`BLOOMSLICE_KERNELS` chooses it for a run): a collection's
//! parts take the detected kernels and the collection cannot be given
//! others.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};

use arbitrary::Arbitrary;
use bloomslice::collection::FilterInfo;
use bloomslice::{BatchResults, LayoutConfig, Scores, SetIndex, Threshold};
use libfuzzer_sys::fuzz_target;

#[path = "../../engine/core/tests/common/set_model.rs"]
mod set_model;
use set_model::ModelFilters;

/// Keys are `u64`s below this, so sets share keys.
const KEY_SPACE: u64 = 20_000;

/// Sets have fewer keys than this.
const MAX_SET: u16 = 5_000;

#[derive(Arbitrary, Debug)]
enum Op {
    Insert { id: u8, start: u16, len: u16 },
    Replace { id: u8, start: u16, len: u16 },
    Remove { id: u8 },
    Add { id: u8, start: u16, len: u16 },
    Query { keys: Vec<u16> },
    Batch { keys: Vec<u16> },
    Score { keys: Vec<u16> },
    Threshold { keys: Vec<u16>, count: u8, fraction: u8 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    p: u8,
    max_parts: u8,
    weight: u8,
    initial: Vec<(u16, u16)>,
    ops: Vec<Op>,
}

/// One set of the model: its keys and its filters with each one's
/// capacity and load.
struct ModelSet {
    keys: BTreeSet<u64>,
    filters: ModelFilters,
}

type Model = BTreeMap<u64, ModelSet>;

/// `len % MAX_SET` keys from `start`, wrapping in the key space.
fn run(start: u16, len: u16) -> Vec<u64> {
    (0..u64::from(len % MAX_SET)).map(|i| (u64::from(start) * 7 + i) % KEY_SPACE).collect()
}

fn bytes(keys: &[u64]) -> Vec<[u8; 8]> {
    keys.iter().map(|k| k.to_le_bytes()).collect()
}

/// Gives `keys` to the model's set `id` as the collection fills filters,
/// and checks the loads and capacities the collection reports.
fn model_add(model: &mut Model, id: u64, keys: &[u64], infos: &[FilterInfo]) {
    let set = model.entry(id).or_insert_with(|| ModelSet { keys: BTreeSet::new(), filters: Vec::new() });
    set.keys.extend(keys);
    set_model::fill_filters(id, &mut set.filters, keys, infos, None);
}

fn insert(collection: &mut SetIndex, model: &mut Model, id: u64, keys: &[u64]) {
    let result = collection.insert_set(id, &bytes(keys));
    if model.contains_key(&id) {
        assert!(result.is_err(), "insert of existing set {id}");
    } else {
        result.unwrap();
        model_add(model, id, keys, &collection.filters(id).unwrap());
    }
}

/// Which sets the model's filters say may hold `key`, ascending.
fn answer(model: &Model, key: u64) -> Vec<u64> {
    model
        .iter()
        .filter(|(_, set)| set.filters.iter().any(|(f, _, _)| f.contains(&key.to_le_bytes())))
        .map(|(&id, _)| id)
        .collect()
}

/// The model's count of `keys` for every set.
fn counts(model: &Model, keys: &[u64]) -> BTreeMap<u64, u32> {
    let mut counts: BTreeMap<u64, u32> = model.keys().map(|&id| (id, 0)).collect();
    for &key in keys {
        for id in answer(model, key) {
            *counts.get_mut(&id).unwrap() += 1;
        }
    }
    counts
}

fn check_single(collection: &SetIndex, model: &Model, keys: &[u64]) {
    let mut out = Vec::new();
    for &key in keys {
        collection.query_into(&key.to_le_bytes(), &mut out);
        let mut got = out.clone();
        got.sort_unstable();
        assert!(got.windows(2).all(|w| w[0] < w[1]), "a set reported twice: {out:?}");
        assert_eq!(got, answer(model, key), "key {key}");
        for (id, set) in model {
            assert!(!set.keys.contains(&key) || got.contains(id), "false negative: set {id}, key {key}");
        }
    }
}

fuzz_target!(|input: Input| {
    let p = [0.01, 0.05, 0.2, 0.5][usize::from(input.p % 4)];
    let config = LayoutConfig {
        max_parts: 1 + usize::from(input.max_parts % 8),
        query_cost_weight: f64::from(input.weight) / 64.0,
    };
    let initial: Vec<(u64, Vec<u64>)> =
        input.initial.iter().take(16).enumerate().map(|(i, &(start, len))| (i as u64, run(start, len))).collect();
    let encoded: Vec<(u64, Vec<[u8; 8]>)> = initial.iter().map(|(id, keys)| (*id, bytes(keys))).collect();
    let mut collection = SetIndex::build(&encoded, p, config).unwrap();
    let mut model = Model::new();
    for (id, keys) in &initial {
        model_add(&mut model, *id, keys, &collection.filters(*id).unwrap());
    }
    collection.validate().unwrap();
    for op in input.ops.iter().take(48) {
        match *op {
            Op::Insert { id, start, len } => insert(&mut collection, &mut model, u64::from(id % 24), &run(start, len)),
            Op::Replace { id, start, len } => {
                let id = u64::from(id % 24);
                assert_eq!(collection.remove_set(id).is_ok(), model.remove(&id).is_some());
                insert(&mut collection, &mut model, id, &run(start, len));
            }
            Op::Remove { id } => {
                let id = u64::from(id % 24);
                assert_eq!(collection.remove_set(id).is_ok(), model.remove(&id).is_some());
            }
            Op::Add { id, start, len } => {
                let id = u64::from(id % 24);
                let keys = run(start, len);
                let result = collection.add_keys(id, &bytes(&keys));
                if model.contains_key(&id) {
                    result.unwrap();
                    model_add(&mut model, id, &keys, &collection.filters(id).unwrap());
                } else {
                    assert!(result.is_err());
                }
            }
            Op::Query { ref keys } => {
                let keys: Vec<u64> = keys.iter().take(256).map(|&k| u64::from(k) % KEY_SPACE).collect();
                check_single(&collection, &model, &keys);
            }
            Op::Batch { ref keys } => {
                let keys: Vec<u64> = keys.iter().take(512).map(|&k| u64::from(k) % KEY_SPACE).collect();
                let mut batch = BatchResults::new();
                collection.query_batch(&bytes(&keys), &mut batch);
                assert_eq!(batch.len(), keys.len());
                for (i, &key) in keys.iter().enumerate() {
                    let mut got = batch.get(i).unwrap().to_vec();
                    got.sort_unstable();
                    assert_eq!(got, answer(&model, key), "batched key {key}");
                }
            }
            Op::Score { ref keys } => {
                let keys: Vec<u64> = keys.iter().take(256).map(|&k| u64::from(k) % KEY_SPACE).collect();
                let mut scores = Scores::new();
                collection.score_into(&bytes(&keys), &mut scores);
                let want: Vec<(u64, u32)> = counts(&model, &keys).into_iter().filter(|&(_, c)| c > 0).collect();
                assert_eq!(scores.iter().collect::<Vec<_>>(), want);
            }
            Op::Threshold { ref keys, count, fraction } => {
                let keys: Vec<u64> = keys.iter().take(256).map(|&k| u64::from(k) % KEY_SPACE).collect();
                let counts = counts(&model, &keys);
                let fraction = Threshold::fraction(f64::from(fraction % 101) / 100.0).unwrap();
                for t in [Threshold::count(u32::from(count)), fraction, fraction.unpruned()] {
                    let min = t.min_count(keys.len());
                    let want: Vec<(u64, u32)> =
                        counts.iter().filter(|&(_, &c)| c >= min).map(|(&id, &c)| (id, c)).collect();
                    assert_eq!(collection.query_threshold(&bytes(&keys), t), want, "{t:?}");
                }
            }
        }
        collection.validate().unwrap();
        assert_eq!(collection.len(), model.len());
        assert_eq!(collection.ids().collect::<BTreeSet<_>>(), model.keys().copied().collect::<BTreeSet<_>>());
    }
});

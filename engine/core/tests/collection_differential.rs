//! `SetIndex` against a naive model under random operation sequences,
//! under every kernel backend.
//!
//! The model keeps, for every set, its keys and its own list of plain
//! [`BloomFilter`](bloomslice::BloomFilter)s, filled as the collection's documentation says a set's
//! filters fill: keys go to the last filter until it holds its capacity,
//! then to a new one. The model takes only each filter's parameters and
//! capacity from [`SetIndex::filters`] (the part a filter lands in is the
//! collection's choice); it places the keys itself, so the loads the
//! collection reports are checked, not copied. Checked after every
//! operation: [`SetIndex::validate`], the set count, the loads, that a
//! set's filters lie in distinct parts and that its `j`-th added filter holds
//! at least `c * 2^j` keys (`c` the first filter's capacity) at its rate
//! (`p / 2^j`),
//! and, on query operations, single-key and batched answers (each set once,
//! exactly the sets whose model filters' union holds the key, never a false
//! negative), `score_into` and `query_threshold` (pruned, unpruned and at
//! zero) against the model's counts.
//!
//! Sets have 0 to 5 000 keys. The collection has no replace operation: a
//! replace is a remove (if the set exists) then an insert, as a caller
//! would do it.
//!
//! The kernel backend is chosen once per process ([`Kernels::detect`],
//! honouring `BLOOMSLICE_KERNELS`), and a collection's parts take the
//! detected one, so `every_backend_in_a_child_process` re-runs the model
//! test in a child process per available backend.

use std::collections::{BTreeMap, BTreeSet};

use bloomslice::collection::FilterInfo;
use bloomslice::kernels::Kernels;
use bloomslice::{BatchResults, LayoutConfig, Scores, SetIndex, Threshold};
use bloomslice_kernels::testing::assert_passes_with_kernels;
use proptest::prelude::*;

#[path = "common/set_model.rs"]
mod set_model;
use set_model::ModelFilters;
#[path = "common/set_keys.rs"]
mod set_keys;
use set_keys::{FreshKeys, bytes, rates};

/// One set of the model: its keys, in order given, and its filters with
/// the capacity of each and the keys each holds.
#[derive(Debug)]
struct ModelSet {
    keys: Vec<u64>,
    filters: ModelFilters,
}

impl ModelSet {
    fn contains(&self, key: u64) -> bool {
        self.filters.iter().any(|(f, _, _)| f.contains(&key.to_le_bytes()))
    }
}

type Model = BTreeMap<u64, ModelSet>;

/// Gives `keys` to the model's set `id`, taking new filters' parameters and
/// capacities from the collection's `infos`, and checks the loads.
fn model_add(model: &mut Model, id: u64, keys: &[u64], infos: &[FilterInfo], p: f64) {
    let set = model.get_mut(&id).expect("set in the model");
    set.keys.extend_from_slice(keys);
    set_model::fill_filters(id, &mut set.filters, keys, infos, Some(p));
}

/// Which model sets may hold `key`, ascending.
fn model_answer(model: &Model, key: u64) -> Vec<u64> {
    model.iter().filter(|(_, set)| set.contains(key)).map(|(&id, _)| id).collect()
}

/// Single-key and batched answers, scores and thresholds on `keys`.
fn check_queries(collection: &SetIndex, model: &Model, keys: &[u64], fraction: f64) {
    let expected: Vec<Vec<u64>> = keys.iter().map(|&key| model_answer(model, key)).collect();
    let encoded = bytes(keys);
    let mut out = Vec::new();
    for (i, key) in encoded.iter().enumerate() {
        collection.query_into(key, &mut out);
        let mut got = out.clone();
        got.sort_unstable();
        assert_eq!(got, expected[i], "key {}", keys[i]);
        assert!(got.windows(2).all(|w| w[0] < w[1]), "a set reported twice: {out:?}");
        for (&id, set) in model {
            if set.keys.contains(&keys[i]) {
                assert!(got.contains(&id), "false negative: set {id}, key {}", keys[i]);
            }
        }
    }
    let mut batch = BatchResults::new();
    collection.query_batch(&encoded, &mut batch);
    assert_eq!(batch.len(), keys.len());
    for (i, want) in expected.iter().enumerate() {
        let mut got = batch.get(i).unwrap().to_vec();
        got.sort_unstable();
        assert_eq!(&got, want, "batched key {}", keys[i]);
    }
    let mut counts: BTreeMap<u64, u32> = model.keys().map(|&id| (id, 0)).collect();
    for hits in &expected {
        for id in hits {
            *counts.get_mut(id).unwrap() += 1;
        }
    }
    let mut scores = Scores::new();
    collection.score_into(&encoded, &mut scores);
    let nonzero: Vec<(u64, u32)> = counts.iter().filter(|&(_, &c)| c > 0).map(|(&id, &c)| (id, c)).collect();
    assert_eq!(scores.iter().collect::<Vec<_>>(), nonzero, "scores");
    assert_eq!(scores.keys(), keys.len());
    let threshold = Threshold::fraction(fraction).unwrap();
    for t in [threshold, threshold.unpruned(), Threshold::count(0), Threshold::count(1)] {
        let min = t.min_count(keys.len());
        let want: Vec<(u64, u32)> = counts.iter().filter(|&(_, &c)| c >= min).map(|(&id, &c)| (id, c)).collect();
        assert_eq!(collection.query_threshold(&encoded, t), want, "{t:?} (at least {min} of {})", keys.len());
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert {
        id: u64,
        size: usize,
    },
    Replace {
        id: u64,
        size: usize,
    },
    Remove {
        id: u64,
    },
    Add {
        id: u64,
        count: usize,
        repeat: bool,
    },
    /// Query keys: `picks` select present keys (a set, then a key of it),
    /// plus `absent` keys never given to any set.
    Query {
        picks: Vec<(usize, usize)>,
        absent: usize,
        fraction: f64,
    },
}

/// Any size up to 5 000, most of them small.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0usize..20, 3 => 20usize..400, 1 => 400usize..5_000]
}

fn op() -> impl Strategy<Value = Op> {
    let picks = proptest::collection::vec((any::<usize>(), any::<usize>()), 0..40);
    prop_oneof![
        3 => (0u64..12, size()).prop_map(|(id, size)| Op::Insert { id, size }),
        1 => (0u64..12, size()).prop_map(|(id, size)| Op::Replace { id, size }),
        1 => (0u64..12).prop_map(|id| Op::Remove { id }),
        4 => (0u64..12, size(), any::<bool>()).prop_map(|(id, count, repeat)| Op::Add { id, count, repeat }),
        3 => (picks, 0usize..40, 0.0f64..=1.0).prop_map(|(picks, absent, fraction)| Op::Query { picks, absent, fraction }),
    ]
}

/// Inserts a set into both; an existing id is an error in the collection.
fn insert(collection: &mut SetIndex, model: &mut Model, id: u64, keys: Vec<u64>, p: f64) {
    let result = collection.insert_set(id, &bytes(&keys));
    if model.contains_key(&id) {
        assert!(result.is_err(), "insert of existing set {id}");
        return;
    }
    result.unwrap();
    model.insert(id, ModelSet { keys: Vec::new(), filters: Vec::new() });
    let infos = collection.filters(id).unwrap();
    model_add(model, id, &keys, &infos, p);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The collection answers as the model after every operation, on the
    /// kernel backend this process detected.
    #[test]
    fn model_under_detected_kernels(
        initial in proptest::collection::vec(size(), 0..10),
        ops in proptest::collection::vec(op(), 1..24),
        p in rates(),
        max_parts in 1usize..6,
        weight in proptest::sample::select(vec![0.0, 0.1, 1.0]),
    ) {
        if let Ok(wanted) = std::env::var("BLOOMSLICE_KERNELS") {
            prop_assert_eq!(Kernels::detect().backend().name(), wanted.as_str());
        }
        let mut fresh = FreshKeys::default();
        let mut model = Model::new();
        let sets: Vec<(u64, Vec<u64>)> =
            initial.iter().enumerate().map(|(i, &n)| (i as u64, fresh.take(n))).collect();
        let encoded: Vec<(u64, Vec<[u8; 8]>)> = sets.iter().map(|(id, keys)| (*id, bytes(keys))).collect();
        let config = LayoutConfig { max_parts, query_cost_weight: weight };
        let mut collection = SetIndex::build(&encoded, p, config).unwrap();
        for (id, keys) in &sets {
            model.insert(*id, ModelSet { keys: Vec::new(), filters: Vec::new() });
            let infos = collection.filters(*id).unwrap();
            model_add(&mut model, *id, keys, &infos, p);
        }
        let mut absent_key = u64::MAX;
        for op in ops {
            match op {
                Op::Insert { id, size } => insert(&mut collection, &mut model, id, fresh.take(size), p),
                Op::Replace { id, size } => {
                    let removed = collection.remove_set(id);
                    prop_assert_eq!(removed.is_ok(), model.remove(&id).is_some());
                    insert(&mut collection, &mut model, id, fresh.take(size), p);
                }
                Op::Remove { id } => {
                    let result = collection.remove_set(id);
                    prop_assert_eq!(result.is_ok(), model.remove(&id).is_some());
                }
                Op::Add { id, count, repeat } => {
                    let keys = match (repeat, model.get(&id)) {
                        (true, Some(old)) if !old.keys.is_empty() => old.keys.iter().cycle().take(count).copied().collect(),
                        _ => fresh.take(count),
                    };
                    let result = collection.add_keys(id, &bytes(&keys));
                    if model.contains_key(&id) {
                        result.unwrap();
                        let infos = collection.filters(id).unwrap();
                        model_add(&mut model, id, &keys, &infos, p);
                    } else {
                        prop_assert!(result.is_err());
                    }
                }
                Op::Query { picks, absent, fraction } => {
                    let sets: Vec<&ModelSet> = model.values().filter(|s| !s.keys.is_empty()).collect();
                    let mut keys: Vec<u64> = if sets.is_empty() {
                        Vec::new()
                    } else {
                        picks.iter().map(|&(s, k)| { let set = sets[s % sets.len()]; set.keys[k % set.keys.len()] }).collect()
                    };
                    for _ in 0..absent {
                        absent_key -= 1;
                        keys.push(absent_key);
                    }
                    check_queries(&collection, &model, &keys, fraction);
                }
            }
            collection.validate().unwrap();
            prop_assert_eq!(collection.len(), model.len());
            prop_assert_eq!(collection.ids().collect::<BTreeSet<_>>(), model.keys().copied().collect::<BTreeSet<_>>());
        }
        // Finally every key of every set, and as many absent ones.
        let mut keys: Vec<u64> = model.values().flat_map(|s| s.keys.iter().copied()).take(4_000).collect();
        keys.extend((0..keys.len().min(2_000) as u64).map(|i| absent_key - 1 - i));
        check_queries(&collection, &model, &keys, 0.5);
    }
}

/// Re-runs `model_under_detected_kernels` in a child process per
/// available backend (`BLOOMSLICE_KERNELS` is read once per process).
#[test]
fn every_backend_in_a_child_process() {
    for kernels in Kernels::available() {
        assert_passes_with_kernels("model_under_detected_kernels", kernels.backend().name(), &[]);
    }
}

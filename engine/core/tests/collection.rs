//! `SetIndex` against a model: for every set, the keys it was given in
//! order and, from [`SetIndex::filters`], how they fill its filters
//! (each filter to its capacity before the next). The model's filters are
//! plain [`BloomFilter`]s of the same parameters, so the collection must
//! answer *exactly* as their union for every key: no false negatives ever,
//! every set reported once, scores equal to the model's counts, threshold
//! answers equal to the model's, after any sequence of builds, inserts,
//! removes and key additions. A collection of one part answers as its
//! `SlicedIndex`, and a set grown far past its part stays under its
//! false-positive bound of `2p`.

use std::collections::{BTreeMap, BTreeSet};

use bloomslice::{BatchResults, BloomFilter, Error, LayoutConfig, Scores, SetIndex, SlicedIndex, Threshold};
use proptest::prelude::*;

/// z for a one-sided 99.99% interval.
const Z: f64 = 3.72;

#[path = "common/set_keys.rs"]
mod set_keys;
use set_keys::{FreshKeys, bytes, rates};

type Model = BTreeMap<u64, Vec<u64>>;

/// The model's filters of set `id`: its keys, in order, cut by the loads
/// the collection reports.
fn model_filters(collection: &SetIndex, id: u64, keys: &[u64]) -> Vec<BloomFilter> {
    let infos = collection.filters(id).expect("set in the collection");
    let mut rest = keys;
    let mut out = Vec::new();
    for info in &infos {
        let (mine, later) = rest.split_at(info.load as usize);
        let mut filter = BloomFilter::new(info.params).unwrap();
        for key in mine {
            filter.insert(&key.to_le_bytes());
        }
        out.push(filter);
        rest = later;
    }
    assert!(rest.is_empty(), "set {id}: loads {:?} do not cover its {} keys", infos, keys.len());
    out
}

/// Checks every query of `collection` against the model on `probes`.
fn check(collection: &SetIndex, model: &Model, probes: &[u64], threshold: u32) {
    collection.validate().unwrap();
    assert_eq!(collection.len(), model.len());
    let filters: BTreeMap<u64, Vec<BloomFilter>> =
        model.iter().map(|(&id, keys)| (id, model_filters(collection, id, keys))).collect();
    // Which sets the model's union says may hold each probe.
    let expected: Vec<BTreeSet<u64>> = probes
        .iter()
        .map(|key| {
            filters
                .iter()
                .filter(|(_, fs)| fs.iter().any(|f| f.contains(&key.to_le_bytes())))
                .map(|(&id, _)| id)
                .collect()
        })
        .collect();
    let keys = bytes(probes);
    let mut batch = BatchResults::new();
    collection.query_batch(&keys, &mut batch);
    assert_eq!(batch.len(), keys.len());
    let mut out = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        collection.query_into(key, &mut out);
        let got: BTreeSet<u64> = out.iter().copied().collect();
        assert_eq!(got.len(), out.len(), "a set reported twice: {out:?}");
        assert_eq!(got, expected[i], "key {}", probes[i]);
        let mut from_batch = batch.get(i).unwrap().to_vec();
        from_batch.sort_unstable();
        assert_eq!(from_batch, out.iter().copied().collect::<BTreeSet<_>>().into_iter().collect::<Vec<_>>());
    }
    // No false negatives: every key of a set finds it.
    for (&id, set_keys) in model {
        for key in set_keys {
            assert!(collection.query(&key.to_le_bytes()).contains(&id), "false negative: set {id}, key {key}");
        }
    }
    // Scores: per set, the probes its union may hold (duplicates count).
    let counts: BTreeMap<u64, u32> =
        model.keys().map(|&id| (id, expected.iter().filter(|hits| hits.contains(&id)).count() as u32)).collect();
    let mut scores = Scores::new();
    collection.score_into(&keys, &mut scores);
    let nonzero: Vec<(u64, u32)> = counts.iter().filter(|&(_, &c)| c > 0).map(|(&id, &c)| (id, c)).collect();
    assert_eq!(scores.iter().collect::<Vec<_>>(), nonzero);
    assert_eq!(scores.keys(), keys.len());
    for t in [Threshold::count(threshold), Threshold::count(threshold).unpruned(), Threshold::count(0)] {
        let min = t.min_count(keys.len());
        let want: Vec<(u64, u32)> = counts.iter().filter(|&(_, &c)| c >= min).map(|(&id, &c)| (id, c)).collect();
        assert_eq!(collection.query_threshold(&keys, t), want, "threshold {min}");
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert { id: u64, size: usize },
    Remove { id: u64 },
    Add { id: u64, count: usize, repeat: bool },
}

/// Skewed sizes: mostly small, some large.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0usize..20, 2 => 20usize..200, 1 => 200usize..1500]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0u64..10, size()).prop_map(|(id, size)| Op::Insert { id, size }),
        1 => (0u64..10).prop_map(|id| Op::Remove { id }),
        4 => (0u64..10, size(), any::<bool>()).prop_map(|(id, count, repeat)| Op::Add { id, count, repeat }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The collection answers as the model after every operation.
    #[test]
    fn collection_matches_the_model(
        initial in proptest::collection::vec(size(), 0..8),
        ops in proptest::collection::vec(op(), 1..12),
        p in rates(),
        config in (1usize..5).prop_map(|max_parts| LayoutConfig { max_parts, ..LayoutConfig::default() }),
        threshold in 0u32..40,
    ) {
        let mut fresh = FreshKeys::default();
        let mut model = Model::new();
        let sets: Vec<(u64, Vec<[u8; 8]>)> = initial
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let keys = fresh.take(n);
                model.insert(i as u64, keys.clone());
                (i as u64, bytes(&keys))
            })
            .collect();
        let mut collection = SetIndex::build(&sets, p, config).unwrap();
        // Absent keys: never given to any set.
        let absent: Vec<u64> = (0..60).map(|i| u64::MAX - i).collect();
        let probes = |model: &Model| -> Vec<u64> {
            // Up to eight keys of every set, the last given among them.
            let mut probes: Vec<u64> = model
                .values()
                .flat_map(|keys| keys.iter().rev().step_by((keys.len() / 8).max(1)).take(8).copied())
                .collect();
            probes.extend_from_slice(&absent);
            if let Some(&first) = probes.first() {
                probes.push(first); // a repeated key counts twice
            }
            probes
        };
        check(&collection, &model, &probes(&model), threshold);
        for op in ops {
            match op {
                Op::Insert { id, size } => {
                    let keys = fresh.take(size);
                    let result = collection.insert_set(id, &bytes(&keys));
                    match model.entry(id) {
                        std::collections::btree_map::Entry::Occupied(_) => prop_assert!(result.is_err()),
                        std::collections::btree_map::Entry::Vacant(slot) => {
                            result.unwrap();
                            slot.insert(keys);
                        }
                    }
                }
                Op::Remove { id } => {
                    let result = collection.remove_set(id);
                    prop_assert_eq!(result.is_ok(), model.remove(&id).is_some());
                }
                Op::Add { id, count, repeat } => {
                    let keys = match (repeat, model.get(&id)) {
                        (true, Some(old)) if !old.is_empty() => old.iter().cycle().take(count).copied().collect(),
                        _ => fresh.take(count),
                    };
                    let result = collection.add_keys(id, &bytes(&keys));
                    match model.get_mut(&id) {
                        Some(old) => {
                            result.unwrap();
                            old.extend_from_slice(&keys);
                        }
                        None => prop_assert!(result.is_err()),
                    }
                }
            }
            check(&collection, &model, &probes(&model), threshold);
        }
    }
}

/// Equal sizes make one part, and the collection answers exactly as a
/// `SlicedIndex` of the same filters: the same ids in the same order, the
/// same batches, scores and threshold answers.
#[test]
fn one_part_answers_as_its_sliced_index() {
    let sets: Vec<(u64, Vec<[u8; 8]>)> =
        (0..700u64).map(|id| (id * 3, bytes(&(0..50).map(|j| (id * 50 + j) % 20_000).collect::<Vec<_>>()))).collect();
    let collection = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
    assert_eq!(collection.parts().len(), 1);
    let params = *collection.parts().next().unwrap().params();
    let mut index = SlicedIndex::new(params);
    for (id, keys) in &sets {
        let mut filter = BloomFilter::new(params).unwrap();
        for key in keys {
            filter.insert(key);
        }
        index.insert_filter(*id, &filter).unwrap();
    }
    let probes = bytes(&(0..25_000u64).step_by(3).collect::<Vec<_>>());
    for key in &probes {
        assert_eq!(collection.query(key), index.query(key));
    }
    let (mut a, mut b) = (BatchResults::new(), BatchResults::new());
    collection.query_batch(&probes, &mut a);
    index.query_batch(&probes, &mut b);
    assert_eq!(a.flat(), b.flat());
    let read = &probes[..200];
    let (mut sa, mut sb) = (Scores::new(), Scores::new());
    collection.score_into(read, &mut sa);
    index.score_into(read, &mut sb);
    assert_eq!(sa.iter().collect::<Vec<_>>(), sb.iter().collect::<Vec<_>>());
    for t in [Threshold::count(3), Threshold::fraction(0.05).unwrap(), Threshold::count(0)] {
        assert_eq!(collection.query_threshold(read, t), index.query_threshold(read, t));
    }
}

/// A set grown from 100 keys to 40 100 (nine filters, capacities doubling,
/// rates halving) keeps its false-positive rate under `2p`: measured on
/// 300 000 absent keys, within a 99.99% binomial interval of its predicted
/// rate given its filters' fill, and its predicted rate (the expectation)
/// below `2p`. A set that did not grow has its own rate.
#[test]
fn a_grown_set_keeps_its_false_positive_bound() {
    let p = 0.02;
    let small: Vec<u64> = (0..100).collect();
    let other: Vec<u64> = (1_000_000..1_000_100).collect();
    let sets = vec![(1u64, bytes(&small)), (2u64, bytes(&other))];
    let mut collection = SetIndex::build(&sets, p, LayoutConfig::default()).unwrap();
    let added: Vec<u64> = (100..40_100).collect();
    for chunk in added.chunks(4_000) {
        collection.add_keys(1, &bytes(chunk)).unwrap();
    }
    let filters = collection.filters(1).unwrap();
    assert_eq!(filters.len(), 9, "{filters:?}");
    assert!(filters.windows(2).all(|w| w[1].params.m() > w[0].params.m()));
    assert_eq!(collection.filter_count(2), Some(1));
    collection.validate().unwrap();
    let bound = collection.fpr_bound(1).unwrap();
    assert!(bound < 2.0 * p, "{bound}");
    let trials = 300_000u64;
    let absent = bytes(&(10_000_000..10_000_000 + trials).collect::<Vec<_>>());
    let mut batch = BatchResults::new();
    let (mut grown, mut plain) = (0u64, 0u64);
    for chunk in absent.chunks(10_000) {
        collection.query_batch(chunk, &mut batch);
        for answer in batch.iter() {
            grown += u64::from(answer.contains(&1));
            plain += u64::from(answer.contains(&2));
        }
    }
    let sd = |q: f64| (q * (1.0 - q) / trials as f64).sqrt();
    for (id, hits) in [(1u64, grown), (2, plain)] {
        let rate = hits as f64 / trials as f64;
        let given = given_filters(&collection, id);
        assert!(rate <= 2.0 * p, "set {id}: measured {rate}");
        assert!((rate - given).abs() <= Z * sd(given), "set {id}: measured {rate}, predicted {given}");
    }
    assert!(collection.fpr_bound(2).unwrap() <= p);
}

/// The false-positive rate of set `id`'s filters as they are: a filter of
/// `m` bits with `ones` set passes an absent key with probability
/// `(ones / m)^k`, and the union fails only if every filter does. (The
/// fill of one small filter varies by several per cent around its
/// expectation, so the measured rate is compared with this, and the
/// expectation, `fpr_bound`, with `2p`.)
fn given_filters(collection: &SetIndex, id: u64) -> f64 {
    let miss: f64 = collection
        .filters(id)
        .unwrap()
        .iter()
        .map(|info| {
            let part = collection.parts().nth(info.part).unwrap();
            let ones = part.ones_per_filter().into_iter().find(|&(i, _)| i == id).unwrap().1;
            1.0 - (ones as f64 / info.params.m() as f64).powi(info.params.k() as i32)
        })
        .product();
    1.0 - miss
}

/// Sets of skewed sizes land in several parts under the default layout,
/// the small ones in small filters, and the rows the parts hold are
/// exactly the layout's bits (its memory model is the shards' storage
/// rule).
#[test]
fn skewed_sets_use_several_parts() {
    let sizes = [5usize, 5, 5, 5, 5, 5, 5, 5, 80, 90, 2_000, 30_000];
    let mut next = 0u64;
    let sets: Vec<(u64, Vec<[u8; 8]>)> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let keys: Vec<u64> = (next..next + n as u64).collect();
            next += n as u64;
            (i as u64, bytes(&keys))
        })
        .collect();
    let collection = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
    assert!(collection.layout().parts().len() >= 3, "{}", collection.layout());
    let tiny = collection.filters(0).unwrap()[0].params.m();
    let huge = collection.filters(11).unwrap()[0].params.m();
    assert!(tiny * 100 < huge, "{tiny} {huge}");
    for (id, keys) in &sets {
        for key in keys {
            assert!(collection.query(key).contains(id));
        }
    }
    // The layout's memory model is the parts' real row storage.
    let layout = collection.layout();
    let rows: u64 = collection.parts().map(|index| index.rows_bytes() as u64 * 8).sum();
    assert_eq!(rows, layout.bits(), "{layout}");
    for (plan, index) in layout.parts().iter().zip(collection.parts()) {
        assert_eq!(index.rows_bytes() as u64 * 8, plan.bits, "{layout}");
    }
}

/// An empty collection makes parts as sets come; ids are checked.
#[test]
fn sets_come_and_go_with_typed_errors() {
    let mut collection = SetIndex::new(0.01).unwrap();
    assert!(collection.is_empty());
    assert!(collection.query("anything").is_empty());
    collection.insert_set(1, &bytes(&[1, 2, 3])).unwrap();
    collection.insert_set(2, &bytes(&(10..5_010).collect::<Vec<_>>())).unwrap();
    assert_eq!(collection.parts().len(), 2, "a set larger than every part gets a part of its own");
    collection.insert_set(3, &bytes(&[7])).unwrap();
    assert_eq!(collection.parts().len(), 2, "a small set joins the part that holds it");
    assert_eq!(collection.insert_set(3, &bytes(&[8])), Err(Error::DuplicateId(3)));
    assert_eq!(collection.remove_set(9), Err(Error::UnknownId(9)));
    assert_eq!(collection.add_keys(9, &bytes(&[1])), Err(Error::UnknownId(9)));
    assert_eq!(
        SetIndex::build(&[(4, bytes(&[1])), (4, bytes(&[2]))], 0.01, LayoutConfig::default()).unwrap_err(),
        Error::DuplicateId(4)
    );
    assert!(SetIndex::new(1.5).is_err());
    collection.remove_set(2).unwrap();
    assert_eq!(collection.len(), 2);
    assert!(collection.query(&2_000u64.to_le_bytes()).iter().all(|&id| id != 2));
    collection.validate().unwrap();
    assert!(collection.memory_bytes() > 0);
}

//! Dynamic Bloom filters: laws checked with proptest against a multiset
//! model (no false negatives, Algorithm 1 growth, union, XOR-delta sync
//! bit-identical to a full copy), the dynamic sliced index against a list of
//! dynamic filters, eq. (3) against measurement, and the Section 4.2
//! optimiser, and the dynamic index against a plain index over the same
//! member columns. Query cost (against a naive list and against the plain
//! index) is timed by `cargo run --release -p bloomslice-papers --example
//! dynamic_speed`.

use std::collections::HashMap;

use bloomslice::{BloomParams, Error};
use bloomslice_papers::dynamic::{false_positive_rate, optimal_design, standard_false_positive_rate};
use bloomslice_papers::{DeleteOutcome, DynamicBloomFilter, DynamicError, DynamicSlicedIndex};
use proptest::prelude::*;

#[path = "common/set_model.rs"]
mod set_model;

#[path = "common/dynamic_plain.rs"]
mod dynamic_plain;
use dynamic_plain::dynamic_and_plain;

fn params() -> BloomParams {
    BloomParams::new(600, 4).unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u16),
    InsertIfAbsent(u16),
    Remove(u16),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(
        prop_oneof![
            4 => (0u16..300).prop_map(Op::Insert),
            1 => (0u16..300).prop_map(Op::InsertIfAbsent),
            3 => (0u16..300).prop_map(Op::Remove),
        ],
        0..250,
    )
}

fn apply(d: &mut DynamicBloomFilter, model: &mut HashMap<u16, u32>, op: &Op) {
    match *op {
        Op::Insert(k) => {
            d.insert(&k.to_le_bytes());
            *model.entry(k).or_default() += 1;
        }
        Op::InsertIfAbsent(k) => {
            let present = d.contains(&k.to_le_bytes());
            let got = d.insert_if_absent(&k.to_le_bytes()).unwrap();
            assert_eq!(got.is_none(), present);
            if got.is_some() {
                *model.entry(k).or_default() += 1;
            }
        }
        Op::Remove(k) => {
            let reported = d.contains(&k.to_le_bytes());
            let in_set = model.get(&k).is_some_and(|n| *n > 0);
            if reported && !in_set {
                // Removing a false positive is the caller's mistake (it can
                // cause false negatives in any counting filter): not done.
                return;
            }
            match d.remove(&k.to_le_bytes()) {
                Err(DynamicError::NotPresent) => assert!(!reported && !in_set),
                Err(e) => panic!("{e:?}"),
                Ok(DeleteOutcome::Removed) => *model.get_mut(&k).unwrap() -= 1,
                Ok(DeleteOutcome::Ambiguous { matching }) => {
                    // Removed from the set, kept in the filter.
                    assert!(matching >= 2);
                    *model.get_mut(&k).unwrap() -= 1;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// No false negatives after any sequence; members never exceed c; with
    /// inserts only, s = max(1, ceil(n / c)).
    #[test]
    fn no_false_negatives(c in 1u64..40, ops in ops()) {
        let mut d = DynamicBloomFilter::new(params(), c).unwrap();
        let mut model = HashMap::new();
        for op in &ops {
            apply(&mut d, &mut model, op);
            d.validate().unwrap();
        }
        for (k, &n) in &model {
            prop_assert!(n == 0 || d.contains(&k.to_le_bytes()), "false negative {}", k);
        }
    }

    #[test]
    fn algorithm1_growth(c in 1u64..40, n in 0u64..300) {
        let mut d = DynamicBloomFilter::new(params(), c).unwrap();
        for i in 0..n {
            d.insert(&i.to_le_bytes());
        }
        prop_assert_eq!(d.filter_count() as u64, n.div_ceil(c).max(1));
        prop_assert_eq!(d.items(), n);
    }

    /// The union reports every key of both operands, and merging keeps
    /// every member within capacity.
    #[test]
    fn union_laws(c in 1u64..30, a in proptest::collection::vec(0u16..500, 0..120), b in proptest::collection::vec(0u16..500, 0..120)) {
        let build = |keys: &[u16]| {
            let mut d = DynamicBloomFilter::new(params(), c).unwrap();
            keys.iter().for_each(|k| { d.insert(&k.to_le_bytes()); });
            d
        };
        let (da, db) = (build(&a), build(&b));
        let mut ab = da.clone();
        ab.union_with(&db).unwrap();
        let mut ba = db.clone();
        ba.union_with(&da).unwrap();
        ab.validate().unwrap();
        prop_assert_eq!(ab.items(), da.items() + db.items());
        for k in a.iter().chain(&b) {
            prop_assert!(ab.contains(&k.to_le_bytes()) && ba.contains(&k.to_le_bytes()));
        }
        for k in 0u16..2000 {
            let key = k.to_le_bytes();
            let either = da.contains(&key) || db.contains(&key);
            prop_assert!(!either || ab.contains(&key));
        }
    }

    /// A receiver holding the base version and applying the delta ends up
    /// bit-identical to the sender; a stale delta is refused.
    #[test]
    fn xor_delta_sync_is_bit_identical(c in 1u64..30, before in ops(), after in ops()) {
        let mut sender = DynamicBloomFilter::new(params(), c).unwrap();
        let mut model = HashMap::new();
        for op in &before {
            apply(&mut sender, &mut model, op);
        }
        let base = sender.clone();
        for op in &after {
            apply(&mut sender, &mut model, op);
        }
        let delta = sender.delta_since(&base).unwrap();
        let wire = delta.to_bytes();
        let parsed = bloomslice_papers::DynamicDelta::from_bytes(&wire).unwrap();
        prop_assert_eq!(&parsed, &delta);
        for cut in [0, wire.len() / 2, wire.len().saturating_sub(1)] {
            if cut < wire.len() {
                prop_assert!(matches!(bloomslice_papers::DynamicDelta::from_bytes(&wire[..cut]), Err(DynamicError::MalformedDelta(_))));
            }
        }
        let mut receiver = base.clone();
        receiver.apply_delta(&parsed).unwrap();
        prop_assert_eq!(&receiver, &sender);
        prop_assert_eq!(receiver.fingerprint(), sender.fingerprint());
        if base != sender {
            let again = receiver.apply_delta(&delta);
            prop_assert!(matches!(again, Err(DynamicError::DeltaBaseMismatch { .. })), "{:?}", again);
            prop_assert_eq!(&receiver, &sender);
        }
    }

    /// The dynamic sliced index answers as a list of dynamic filters, each
    /// set once, and its columns stay the members' bit views.
    #[test]
    fn sliced_index_matches_a_list(ops in proptest::collection::vec((0u8..8, 0u64..5, 0u16..200), 0..200)) {
        let c = 6;
        let mut index = DynamicSlicedIndex::new(params(), c).unwrap();
        let mut model: HashMap<u64, DynamicBloomFilter> = HashMap::new();
        for (op, id, key) in ops {
            let key = key.to_le_bytes();
            match op {
                0 => set_model::insert_set(&mut model, id, index.insert_set(id), || DynamicBloomFilter::new(params(), c).unwrap())?,
                1 => set_model::take_filter(&mut model, id, index.take_filter(id))?,
                2..=4 => {
                    let got = index.insert_key(id, &key);
                    match model.get_mut(&id) {
                        Some(d) => { got.unwrap(); d.insert(&key); }
                        None => prop_assert!(got.is_err()),
                    }
                }
                5 | 6 => {
                    let got = index.remove_key(id, &key);
                    match model.get_mut(&id) {
                        Some(d) => prop_assert_eq!(got, d.remove(&key)),
                        None => prop_assert!(got.is_err()),
                    }
                }
                _ => {
                    let other = model.get(&((id + 1) % 5)).cloned();
                    if let (Some(o), Some(d)) = (other, model.get_mut(&id)) {
                        d.union_with(&o).unwrap();
                        index.update_filter(id, &o).unwrap();
                    }
                }
            }
            index.validate().unwrap();
        }
        for key in 0u16..400 {
            let key = key.to_le_bytes();
            let mut want: Vec<u64> = model.iter().filter(|(_, d)| d.contains(&key)).map(|(&id, _)| id).collect();
            want.sort_unstable();
            prop_assert_eq!(index.query(&key), want);
        }
    }
}

#[test]
fn errors_are_typed() {
    assert_eq!(DynamicBloomFilter::new(params(), 0), Err(DynamicError::ZeroCapacity));
    assert!(matches!(DynamicSlicedIndex::new(params(), 0), Err(DynamicError::ZeroCapacity)));
    let mut a = DynamicBloomFilter::new(params(), 5).unwrap();
    assert_eq!(a.remove("nothing"), Err(DynamicError::NotPresent));
    let b = DynamicBloomFilter::new(params(), 6).unwrap();
    assert_eq!(a.union_with(&b), Err(DynamicError::CapacityMismatch { expected: 5, found: 6 }));
    let c = DynamicBloomFilter::new(BloomParams::new(600, 3).unwrap(), 5).unwrap();
    assert!(matches!(a.union_with(&c), Err(DynamicError::Core(Error::ParamsMismatch { .. }))));
    assert!(matches!(a.delta_since(&c), Err(DynamicError::Core(Error::ParamsMismatch { .. }))));
    assert!(matches!(optimal_design(&[], 0.01, 10), Err(DynamicError::InvalidDesign(_))));
    assert!(matches!(optimal_design(&[1.0], 1.5, 10), Err(DynamicError::InvalidDesign(_))));
    assert!(matches!(optimal_design(&[-1.0], 0.1, 10), Err(DynamicError::InvalidDesign(_))));
    assert!(matches!(optimal_design(&[1.0], 0.1, 0), Err(DynamicError::InvalidDesign(_))));
    // A tampered delta is refused and leaves the receiver unchanged.
    let base = a.clone();
    a.insert("x");
    let mut delta = a.delta_since(&base).unwrap();
    delta.changes[0].xor[0] ^= 1;
    let mut r = base.clone();
    assert!(matches!(r.apply_delta(&delta), Err(DynamicError::MalformedDelta(_))));
    assert_eq!(r, base);
}

#[test]
fn insert_with_query_avoids_duplicate_members() {
    let mut plain = DynamicBloomFilter::new(params(), 10).unwrap();
    let mut checked = plain.clone();
    for round in 0..5 {
        for i in 0u32..10 {
            plain.insert(&i.to_le_bytes());
            let got = checked.insert_if_absent(&i.to_le_bytes()).unwrap();
            assert_eq!(got.is_some(), round == 0 && got.is_some());
        }
    }
    assert_eq!(plain.filter_count(), 5);
    assert_eq!(checked.filter_count(), 1);
}

/// Eq. (3) predicts the measured false-match rate of a DBF.
#[test]
fn eq3_matches_measurement() {
    let p = BloomParams::new(4096, 4).unwrap();
    let c = 512;
    for n in [256u64, 1024, 2560] {
        let mut d = DynamicBloomFilter::new(p, c).unwrap();
        for i in 0..n {
            d.insert(&i.to_le_bytes());
        }
        let trials = 200_000u64;
        let fp = (1_000_000..1_000_000 + trials).filter(|i| d.contains(&i.to_le_bytes())).count();
        let measured = fp as f64 / trials as f64;
        let predicted = false_positive_rate(p.m(), p.k(), c, n);
        assert!((measured - predicted).abs() < 0.15 * predicted + 1e-3, "n={n}: {measured} vs {predicted}");
        if n > c {
            assert!(predicted < standard_false_positive_rate(p.m(), p.k(), n));
        }
    }
}

/// Section 4.2: with a skewed (small sets likely) distribution the
/// optimiser picks s > 1 and needs fewer expected bits than one SBF sized
/// for N; with all mass at N one member is optimal.
#[test]
fn section_4_2_optimal_s() {
    let n = 1330;
    let bound = 0.0098;
    let zipf: Vec<f64> = (1..=n).map(|i| 1.0 / (i as f64).powf(0.4)).collect();
    let d = optimal_design(&zipf, bound, 100).unwrap();
    let sbf = optimal_design(&zipf, bound, 1).unwrap();
    assert!(d.filters > 1, "{d:?}");
    assert!(d.expected_bits < sbf.expected_bits);
    assert!((1.0 - (1.0 - d.member_fpr).powi(d.filters as i32) - bound).abs() < 1e-12);
    assert_eq!(d.capacity, (n as u64).div_ceil(d.filters as u64));
    let mut top = vec![0.0; n];
    top[n - 1] = 1.0;
    assert_eq!(optimal_design(&top, bound, 100).unwrap().filters, 1);
}

/// The dynamic sliced index answers as the plain index over the same
/// member columns (mapped to sets, each once), single and batched.
#[test]
fn dynamic_index_matches_plain_columns() {
    let p = BloomParams::new(400, 3).unwrap();
    let (mut dynamic, plain, owner) = dynamic_and_plain(p, 20, 30, 3);
    dynamic.validate().unwrap();
    let keys: Vec<[u8; 8]> = (0..600u64).map(|i| (((i % 30) << 32) | ((i * 7) % 80)).to_le_bytes()).collect();
    let mut batch = bloomslice::BatchResults::new();
    dynamic.query_batch(&keys, &mut batch);
    for (key, got) in keys.iter().zip(batch.iter()) {
        let mut want: Vec<u64> = plain.query(key).iter().map(|&c| owner[c as usize]).collect();
        want.sort_unstable();
        want.dedup();
        assert_eq!(got, &want[..]);
        assert_eq!(dynamic.query(key), want);
    }
    // Column ids are reused after a delete, and the answers stay right.
    let before = dynamic.columns();
    let gone = dynamic.take_filter(4).unwrap();
    dynamic.insert_filter(99, &gone).unwrap();
    dynamic.validate().unwrap();
    assert_eq!(dynamic.columns(), before);
    assert_eq!(dynamic.query(&((4u64 << 32) | 1).to_le_bytes()), vec![99]);
}

/// A receiving index applies a sender's delta to a set: the set's filter is
/// bit-identical to the sender's and its columns follow.
#[test]
fn index_applies_deltas() {
    let mut sender = DynamicBloomFilter::new(params(), 8).unwrap();
    let mut receiver = DynamicSlicedIndex::new(params(), 8).unwrap();
    receiver.insert_filter(1, &sender).unwrap();
    let mut base = sender.clone();
    for round in 0..5u32 {
        for i in 0..20u32 {
            sender.insert(&(round * 100 + i).to_le_bytes());
        }
        if round > 1 {
            for i in 0..15u32 {
                let _ = sender.remove(&((round - 1) * 100 + i).to_le_bytes());
            }
        }
        let delta = sender.delta_since(&base).unwrap();
        assert!(delta.payload_bytes() <= sender.filter_count() * sender.params().m().div_ceil(2) as usize);
        receiver.apply_delta(1, &delta).unwrap();
        receiver.validate().unwrap();
        assert_eq!(receiver.filter(1), Some(&sender));
        assert_eq!(receiver.columns(), sender.filter_count());
        base = sender.clone();
    }
    let other = DynamicBloomFilter::new(BloomParams::new(600, 3).unwrap(), 8).unwrap();
    assert!(matches!(receiver.insert_filter(2, &other), Err(DynamicError::Core(Error::ParamsMismatch { .. }))));
    let other = DynamicBloomFilter::new(params(), 9).unwrap();
    assert_eq!(receiver.insert_filter(2, &other), Err(DynamicError::CapacityMismatch { expected: 8, found: 9 }));
    assert!(matches!(
        receiver.apply_delta(7, &sender.delta_since(&base).unwrap()),
        Err(DynamicError::Core(Error::UnknownId(7)))
    ));
    receiver.validate().unwrap();
}

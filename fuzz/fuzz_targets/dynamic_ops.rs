//! Differential fuzzing of dynamic Bloom filters and the dynamic sliced
//! index: arbitrary capacities (zero must be a typed error) and operation
//! sequences applied to a `DynamicSlicedIndex` and to a list of
//! `DynamicBloomFilter`s, plus an exact multiset model per set and a
//! receiver replica per set kept in sync with XOR deltas. After every step:
//! `validate()`, queries equal the list's answers (each set once), no key of
//! the multiset model is missed, and a synced replica is bit-identical.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use bloomslice::BloomParams;
use bloomslice_papers::{DeleteOutcome, DynamicBloomFilter, DynamicDelta, DynamicError, DynamicSlicedIndex};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    InsertSet {
        id: u8,
    },
    DeleteSet {
        id: u8,
    },
    Insert {
        id: u8,
        key: u16,
    },
    InsertIfAbsent {
        id: u8,
        key: u16,
    },
    Remove {
        id: u8,
        key: u16,
    },
    Union {
        id: u8,
        from: u8,
    },
    Sync {
        id: u8,
    },
    Query {
        key: u16,
    },
    /// Arbitrary bytes offered as a delta: parsing and applying must fail
    /// cleanly (or, if they parse and match, keep the replica valid).
    Garbage {
        id: u8,
        bytes: Vec<u8>,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    capacity: u8,
    m: u16,
    k: u8,
    ops: Vec<Op>,
}

struct SetModel {
    filter: DynamicBloomFilter,
    keys: BTreeMap<u16, u32>,
    replica: DynamicBloomFilter,
}

fuzz_target!(|input: Input| {
    let Ok(params) = BloomParams::new(u64::from(input.m % 2048), u32::from(input.k % 12)) else {
        return;
    };
    let capacity = u64::from(input.capacity % 32);
    let mut index = match DynamicSlicedIndex::new(params, capacity) {
        Ok(i) => i,
        Err(e) => {
            assert_eq!(e, DynamicError::ZeroCapacity);
            assert_eq!(capacity, 0);
            return;
        }
    };
    let mut sets: BTreeMap<u64, SetModel> = BTreeMap::new();
    for op in input.ops.iter().take(200) {
        match *op {
            Op::InsertSet { id } => {
                let id = u64::from(id % 8);
                let got = index.insert_set(id);
                assert_eq!(got.is_ok(), !sets.contains_key(&id));
                if got.is_ok() {
                    let f = DynamicBloomFilter::new(params, capacity).unwrap();
                    sets.insert(id, SetModel { replica: f.clone(), filter: f, keys: BTreeMap::new() });
                }
            }
            Op::DeleteSet { id } => {
                let id = u64::from(id % 8);
                let got = index.take_filter(id);
                match sets.remove(&id) {
                    Some(s) => assert_eq!(got.unwrap(), s.filter),
                    None => assert!(got.is_err()),
                }
            }
            Op::Insert { id, key } | Op::InsertIfAbsent { id, key } => {
                let id = u64::from(id % 8);
                let bytes = key.to_le_bytes();
                let Some(s) = sets.get_mut(&id) else {
                    assert!(index.insert_key(id, &bytes).is_err());
                    continue;
                };
                let insert = match op {
                    Op::Insert { .. } => true,
                    _ => !s.filter.contains(&bytes),
                };
                if insert {
                    index.insert_key(id, &bytes).unwrap();
                    s.filter.insert(&bytes);
                    *s.keys.entry(key).or_default() += 1;
                }
            }
            Op::Remove { id, key } => {
                let id = u64::from(id % 8);
                let bytes = key.to_le_bytes();
                let Some(s) = sets.get_mut(&id) else {
                    assert!(index.remove_key(id, &bytes).is_err());
                    continue;
                };
                let in_set = s.keys.get(&key).is_some_and(|n| *n > 0);
                if s.filter.contains(&bytes) && !in_set {
                    continue; // removing a false positive: the caller's mistake
                }
                let got = index.remove_key(id, &bytes);
                assert_eq!(got, s.filter.remove(&bytes));
                match got {
                    Ok(DeleteOutcome::Removed | DeleteOutcome::Ambiguous { .. }) => {
                        *s.keys.get_mut(&key).unwrap() -= 1;
                    }
                    Err(e) => {
                        assert_eq!(e, DynamicError::NotPresent);
                        assert!(!in_set);
                    }
                }
            }
            Op::Union { id, from } => {
                let (id, from) = (u64::from(id % 8), u64::from(from % 8));
                let (Some(other), true) =
                    (sets.get(&from).map(|s| (s.filter.clone(), s.keys.clone())), sets.contains_key(&id))
                else {
                    continue;
                };
                // Bound the work: unions can double a set each time.
                if sets[&id].filter.filter_count() + other.0.filter_count() > 24 {
                    continue;
                }
                index.update_filter(id, &other.0).unwrap();
                let s = sets.get_mut(&id).unwrap();
                s.filter.union_with(&other.0).unwrap();
                for (k, n) in other.1 {
                    *s.keys.entry(k).or_default() += n;
                }
            }
            Op::Sync { id } => {
                let id = u64::from(id % 8);
                if let Some(s) = sets.get_mut(&id) {
                    let delta = s.filter.delta_since(&s.replica).unwrap();
                    let wire = delta.to_bytes();
                    let delta = DynamicDelta::from_bytes(&wire).unwrap();
                    s.replica.apply_delta(&delta).unwrap();
                    assert_eq!(s.replica, s.filter);
                }
            }
            Op::Garbage { id, ref bytes } => {
                if let (Ok(delta), Some(s)) = (DynamicDelta::from_bytes(bytes), sets.get_mut(&u64::from(id % 8))) {
                    let before = s.replica.clone();
                    if s.replica.apply_delta(&delta).is_err() {
                        assert_eq!(s.replica, before);
                    }
                    s.replica.validate().unwrap();
                    // Resynchronise the replica from scratch for later Sync ops.
                    s.replica = s.filter.clone();
                }
            }
            Op::Query { key } => {
                let bytes = key.to_le_bytes();
                let want: Vec<u64> =
                    sets.iter().filter(|(_, s)| s.filter.contains(&bytes)).map(|(&id, _)| id).collect();
                assert_eq!(index.query(&bytes), want);
            }
        }
        index.validate().unwrap();
        for (&id, s) in &sets {
            assert_eq!(index.filter(id), Some(&s.filter));
            for (k, &n) in &s.keys {
                assert!(n == 0 || s.filter.contains(&k.to_le_bytes()), "false negative");
            }
        }
    }
});

//! Differential fuzzing of counting Bloom filters and the counting sliced
//! index: arbitrary parameters (bad ones must be typed errors) and arbitrary
//! operation sequences applied to a `CountingSlicedIndex` and to a model of
//! plain integer counters with sticky saturation at 15, one per set. After
//! every step: `validate()` (columns == bit views), every counter equals the
//! model's, refused removals are exactly the model's, and queries equal a
//! scan of the model's counters.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use bloomslice::{BloomParams, Error};
use bloomslice_papers::counting::COUNTER_MAX;
use bloomslice_papers::{CountingError, CountingSlicedIndex};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    InsertSet { id: u8 },
    DeleteSet { id: u8 },
    Insert { id: u8, key: u16 },
    Remove { id: u8, key: u16 },
    Query { key: u16 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    m: u16,
    k: u8,
    ops: Vec<Op>,
}

/// Counters as integers plus the sticky "reached 15" flag.
#[derive(Clone)]
struct Model {
    count: Vec<u32>,
    saturated: Vec<bool>,
}

impl Model {
    fn value(&self, i: usize) -> u8 {
        if self.saturated[i] { COUNTER_MAX } else { self.count[i] as u8 }
    }
}

/// The model of set `id`, or `None` once `got` (the index's answer to a key
/// write) is checked to refuse the unknown id.
fn known<'a>(model: &'a mut BTreeMap<u64, Model>, id: u64, got: &Result<(), CountingError>) -> Option<&'a mut Model> {
    let f = model.get_mut(&id);
    assert!(f.is_some() || *got == Err(Error::UnknownId(id).into()), "{got:?}");
    f
}

fuzz_target!(|input: Input| {
    let (m, k) = (u64::from(input.m % 1024), u32::from(input.k));
    let params = match BloomParams::new(m, k) {
        Ok(p) => {
            assert!(m > 0 && k > 0 && k <= 64);
            p
        }
        Err(e) => {
            assert!(m == 0 || k == 0 || k > 64, "unexpected error {e:?}");
            return;
        }
    };
    let mut index = CountingSlicedIndex::new(params);
    let mut model: BTreeMap<u64, Model> = BTreeMap::new();
    let empty = Model { count: vec![0; m as usize], saturated: vec![false; m as usize] };
    for op in input.ops.iter().take(200) {
        match *op {
            Op::InsertSet { id } => {
                let id = u64::from(id % 16);
                let got = index.insert_set(id);
                if model.contains_key(&id) {
                    assert_eq!(got, Err(Error::DuplicateId(id).into()));
                } else {
                    got.unwrap();
                    model.insert(id, empty.clone());
                }
            }
            Op::DeleteSet { id } => {
                let id = u64::from(id % 16);
                let got = index.take_filter(id);
                assert_eq!(got.is_ok(), model.remove(&id).is_some());
            }
            Op::Insert { id, key } => {
                let id = u64::from(id % 16);
                let got = index.insert_key(id, &key.to_le_bytes());
                if let Some(f) = known(&mut model, id, &got) {
                    got.unwrap();
                    for p in params.positions(params.hash(&key.to_le_bytes())) {
                        let p = p as usize;
                        if !f.saturated[p] {
                            f.count[p] += 1;
                            f.saturated[p] = f.count[p] >= u32::from(COUNTER_MAX);
                        }
                    }
                }
            }
            Op::Remove { id, key } => {
                let id = u64::from(id % 16);
                let got = index.remove_key(id, &key.to_le_bytes());
                if let Some(f) = known(&mut model, id, &got) {
                    let pos = params.positions(params.hash(&key.to_le_bytes()));
                    let ok = pos.iter().all(|&p| {
                        let n = pos.iter().filter(|&&q| q == p).count() as u32;
                        f.saturated[p as usize] || f.count[p as usize] >= n
                    });
                    assert_eq!(got.is_ok(), ok, "{got:?}");
                    if ok {
                        for &p in &pos {
                            if !f.saturated[p as usize] {
                                f.count[p as usize] -= 1;
                            }
                        }
                    } else {
                        assert!(matches!(got, Err(CountingError::NotPresent { .. })));
                    }
                }
            }
            Op::Query { key } => {
                let mut got = index.query(&key.to_le_bytes());
                got.sort_unstable();
                let pos = params.positions(params.hash(&key.to_le_bytes()));
                let want: Vec<u64> = model
                    .iter()
                    .filter(|(_, f)| pos.iter().all(|&p| f.value(p as usize) != 0))
                    .map(|(&id, _)| id)
                    .collect();
                assert_eq!(got, want);
            }
        }
        index.validate().unwrap();
        for (&id, f) in &model {
            let c = index.filter(id).unwrap();
            for i in 0..m as usize {
                assert_eq!(c.counter(i as u64), f.value(i));
            }
        }
    }
});

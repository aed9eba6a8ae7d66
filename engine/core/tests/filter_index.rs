//! `SlicedIndex` against `NaiveIndex` through the shared differential
//! harness (`bloomslice::testing`): random op sequences (decoded from
//! proptest bytes by `arbitrary`, as the fuzz target decodes libFuzzer's),
//! compared after every step; and the harness's own checks. The
//! `filter_index_ops` fuzz target runs the same harness on the same pairs
//! (the indexes of `bloomslice-papers` have their own `filter_index` test).

use bloomslice::testing::{Keys, Op, ops_from_bytes, run_differential};
use bloomslice::{BloomFilter, BloomParams, Error, FilterIndex, KeyHash, NaiveIndex, SlicedConfig, SlicedIndex};
use proptest::prelude::*;

fn params(m: u64, k: u32) -> BloomParams {
    BloomParams::new(m, k).unwrap()
}

/// Op sequences decoded from arbitrary bytes, as the fuzz target decodes
/// libFuzzer's (shrinking shrinks the bytes).
fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(any::<u8>(), 0..1500).prop_map(|bytes| ops_from_bytes(&bytes))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn sliced_equals_naive(m in 1u64..2000, k in 1u32..9, narrow: bool, ops in ops()) {
        let p = params(m, k);
        let config = SlicedConfig { max_shard_columns: if narrow { 512 } else { 2048 }, ..SlicedConfig::default() };
        run_differential(&mut SlicedIndex::with_config(p, config), &mut NaiveIndex::new(p), &ops);
    }
}

/// The harness refuses a pair that cannot agree (different seeds).
#[test]
#[should_panic(expected = "both indexes must share parameters")]
fn the_harness_rejects_indexes_with_different_parameters() {
    let (a, b) = (params(512, 3), params(512, 3).with_seed(1));
    run_differential(&mut SlicedIndex::new(a), &mut NaiveIndex::new(b), &[]);
}

/// A `NaiveIndex` that forgets filter 3 in its answers: the harness must
/// catch it (so the properties above can fail).
#[derive(Debug)]
struct Forgetful(NaiveIndex);

impl FilterIndex for Forgetful {
    type Filter = BloomFilter;
    type Error = Error;
    fn params(&self) -> &BloomParams {
        self.0.params()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn contains(&self, id: u64) -> bool {
        self.0.contains(id)
    }
    fn new_filter(&self) -> Result<BloomFilter, Error> {
        BloomFilter::new(*self.0.params())
    }
    fn insert_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<(), Error> {
        self.0.insert_filter(id, filter)
    }
    fn remove_set(&mut self, id: u64) -> Result<(), Error> {
        self.0.remove_set(id)
    }
    fn update_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<(), Error> {
        self.0.update_filter(id, filter)
    }
    fn filter_cloned(&self, id: u64) -> Result<BloomFilter, Error> {
        self.0.filter_cloned(id)
    }
    fn insert_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<(), Error> {
        self.0.insert_key_hash(id, hash)
    }
    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        self.0.query_hash_into(hash, out);
        out.retain(|&id| id != 3);
    }
    fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }
    fn validate(&self) -> Result<(), Error> {
        Ok(())
    }
}

#[test]
#[should_panic(expected = "probe key")]
fn the_harness_catches_indexes_that_disagree() {
    let p = params(512, 3);
    let ops = [Op::Insert { id: 3, keys: Keys(vec![7]) }];
    run_differential(&mut SlicedIndex::new(p), &mut Forgetful(NaiveIndex::new(p)), &ops);
}

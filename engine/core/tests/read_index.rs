//! `ReadIndex` across every index a user can hold: the same sets answer
//! alike through each implementation (single keys, batches, scores and
//! thresholds, ids), through `&dyn ReadIndex` as through the generic
//! methods; the trait's default scoring (used by `NaiveIndex`) equals the
//! sliced fast path; and the shared set verbs (`insert_set`, `add_keys`,
//! `replace_set`, `remove_set`) leave the concurrent and plain indexes
//! equal.

use bloomslice::persist;
use bloomslice::{
    BatchResults, BloomParams, ConcurrentIndex, KeyHash, LayoutConfig, NaiveIndex, ReadIndex, Scores, SetIndex,
    SetNames, SlicedIndex, Threshold,
};
use proptest::prelude::*;

/// `sets` sets of `0..size` keys each, overlapping.
fn sets(n: u64, size: u64) -> Vec<(u64, Vec<String>)> {
    (0..n).map(|id| (id * 3 + 1, (0..size + id * 7).map(|k| format!("key-{}", k + id * 11)).collect())).collect()
}

/// Every read verb of `a` and `b` on `keys`, through the trait (both the
/// generic and the object-safe methods), compared.
fn assert_same_reads(a: &dyn ReadIndex, b: &dyn ReadIndex, keys: &[String]) {
    assert_eq!((a.len(), a.ids(), a.k(), a.seed()), (b.len(), b.ids(), b.k(), b.seed()));
    for id in a.ids() {
        assert!(a.contains(id) && b.contains(id));
    }
    assert!(!a.contains(u64::MAX) && !b.contains(u64::MAX));
    let hashes: Vec<KeyHash> = keys.iter().map(|k| a.hash_bytes(k.as_bytes())).collect();
    let (mut ra, mut rb) = (BatchResults::new(), BatchResults::new());
    a.query_batch_hashes(&hashes, &mut ra);
    b.query_batch_hashes(&hashes, &mut rb);
    let (mut one, mut sorted_a, mut sorted_b) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &hash) in hashes.iter().enumerate() {
        sorted_a.clear();
        sorted_a.extend_from_slice(ra.get(i).unwrap());
        sorted_a.sort_unstable();
        sorted_b.clear();
        sorted_b.extend_from_slice(rb.get(i).unwrap());
        sorted_b.sort_unstable();
        assert_eq!(sorted_a, sorted_b, "key {i}");
        a.query_hash_into(hash, &mut one);
        one.sort_unstable();
        assert_eq!(one, sorted_a, "key {i}: single against batch");
    }
    let (mut sa, mut sb) = (Scores::new(), Scores::new());
    a.score_hashes_into(&hashes, &mut sa);
    b.score_hashes_into(&hashes, &mut sb);
    assert_eq!(sa.iter().collect::<Vec<_>>(), sb.iter().collect::<Vec<_>>());
    for threshold in [Threshold::count(0), Threshold::count(1), Threshold::fraction(0.5).unwrap()] {
        let (mut oa, mut ob) = (Vec::new(), Vec::new());
        a.query_threshold_hashes_into(&hashes, threshold, &mut sa, &mut oa);
        b.query_threshold_hashes_into(&hashes, threshold, &mut sb, &mut ob);
        assert_eq!(oa, ob, "{threshold:?}");
    }
    // A count of 0 lists every set.
    let mut every = Vec::new();
    a.query_threshold_hashes_into(&hashes, Threshold::count(0), &mut sa, &mut every);
    assert_eq!(every.iter().map(|&(id, _)| id).collect::<Vec<_>>(), a.ids());
}

/// The generic methods of one index against its own object-safe ones.
fn assert_generic_matches_hashed<I: ReadIndex>(index: &I, keys: &[String]) {
    let hashes: Vec<KeyHash> = keys.iter().map(|k| index.hash(k.as_str())).collect();
    let (mut generic, mut hashed) = (BatchResults::new(), BatchResults::new());
    index.query_batch(keys, &mut generic);
    index.query_batch_hashes(&hashes, &mut hashed);
    assert_eq!(generic.flat(), hashed.flat());
    for key in keys {
        assert_eq!(index.query(key.as_str()), generic.get(keys.iter().position(|k| k == key).unwrap()).unwrap());
    }
    let t = Threshold::fraction(0.3).unwrap();
    let mut out = Vec::new();
    index.query_threshold_hashes_into(&hashes, t, &mut Scores::new(), &mut out);
    assert_eq!(index.query_threshold(keys, t), out);
}

fn probe(n: u64) -> Vec<String> {
    (0..n).map(|k| format!("key-{}", k * 5)).chain((0..n).map(|k| format!("absent-{k}"))).collect()
}

#[test]
fn every_one_length_index_answers_alike() {
    let params = BloomParams::for_capacity(200, 0.02).unwrap();
    let (mut sliced, mut naive) = (SlicedIndex::new(params), NaiveIndex::new(params));
    for (id, keys) in sets(40, 30) {
        sliced.insert_set(id, &keys).unwrap();
        naive.insert_filter(id, &sliced.filter_cloned(id).unwrap()).unwrap();
    }
    let keys = probe(300);
    assert_same_reads(&sliced, &naive, &keys);
    let shared = ConcurrentIndex::new(sliced.clone());
    assert_same_reads(&sliced, &shared, &keys);
    let bytes = persist::to_bytes(&sliced, &SetNames::new()).unwrap();
    assert_same_reads(&sliced, &persist::Loaded::<SlicedIndex>::from_bytes(&bytes).unwrap(), &keys);
    assert_same_reads(&sliced, &persist::from_bytes(&bytes).unwrap(), &keys);
    assert_generic_matches_hashed(&sliced, &keys);
    assert_generic_matches_hashed(&naive, &keys);
    assert_generic_matches_hashed(&shared, &keys);
}

#[test]
fn a_set_index_answers_alike_shared_or_not() {
    let index = SetIndex::build(&sets(40, 30), 0.01, LayoutConfig::default()).unwrap();
    assert!(index.parts().len() > 1, "sets of several sizes take several parts");
    let keys = probe(300);
    let shared = ConcurrentIndex::new(index.clone());
    assert_same_reads(&index, &shared, &keys);
    // A file read back (either layout) answers as the index it holds.
    let mut names = SetNames::new();
    names.insert(1, "one").unwrap();
    let loaded = persist::from_bytes(&persist::to_bytes(&index, &names).unwrap()).unwrap();
    assert_same_reads(&index, &loaded, &keys);
    assert_generic_matches_hashed(&loaded, &keys);
    assert_generic_matches_hashed(&index, &keys);
    assert_generic_matches_hashed(&shared, &keys);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The set verbs, in any order, leave a concurrent index equal to the
    /// plain one it started as, and the plain one equal to the naive list
    /// of its filters.
    #[test]
    fn set_verbs_agree_shared_or_not(ops in prop::collection::vec((0u8..4, 0u64..8, 0u64..40), 0..40)) {
        let params = BloomParams::for_capacity(100, 0.02).unwrap();
        let mut plain = SlicedIndex::new(params);
        let shared = ConcurrentIndex::new(SlicedIndex::new(params));
        let mut set = SetIndex::new(0.02).unwrap();
        let shared_set = ConcurrentIndex::new(SetIndex::new(0.02).unwrap());
        for (verb, id, n) in ops {
            let keys: Vec<String> = (0..n).map(|k| format!("{id}-{k}-{verb}")).collect();
            let (a, b, c, d) = match verb {
                0 => (plain.insert_set(id, &keys), shared.insert_set(id, &keys), set.insert_set(id, &keys),
                    shared_set.insert_set(id, &keys)),
                1 => (plain.add_keys(id, &keys), shared.add_keys(id, &keys), set.add_keys(id, &keys),
                    shared_set.add_keys(id, &keys)),
                2 => (plain.replace_set(id, &keys), shared.replace_set(id, &keys), set.replace_set(id, &keys),
                    shared_set.replace_set(id, &keys)),
                _ => (plain.remove_set(id), shared.remove_set(id), set.remove_set(id), shared_set.remove_set(id)),
            };
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(&a, &c);
            prop_assert_eq!(&c, &d);
        }
        plain.validate().unwrap();
        set.validate().unwrap();
        let keys = probe(50);
        assert_same_reads(&plain, &shared, &keys);
        assert_same_reads(&set, &shared_set, &keys);
        let mut naive = NaiveIndex::new(params);
        for id in plain.ids() {
            naive.insert_filter(id, &plain.filter_cloned(id).unwrap()).unwrap();
        }
        assert_same_reads(&plain, &naive, &keys);
    }
}

//! The Bloofi tree and the paper's Flat-Bloofi layout beyond the shared
//! differential harness (`tests/filter_index.rs` runs both against
//! `NaiveIndex` under random op sequences, rebuilds and bulk builds
//! included): bulk builds against iterative inserts, typed errors, the
//! paper workload's pruning and costs, and the all-ones heuristic.

use bloomslice::{BloomFilter, BloomParams, Error, NaiveIndex};
use bloomslice_papers::{BloofiConfig, BloofiError, BloofiTree, BulkOrder, FlatBloofiPaper, Metric};
use proptest::prelude::*;

fn bulk_order(which: u8) -> BulkOrder {
    [BulkOrder::AsGiven, BulkOrder::PaperGreedy, BulkOrder::MinHashChain, BulkOrder::Auto][usize::from(which % 4)]
}

fn filter(params: BloomParams, keys: impl IntoIterator<Item = u32>) -> BloomFilter {
    let mut f = BloomFilter::new(params).unwrap();
    for key in keys {
        f.insert(&key.to_le_bytes());
    }
    f
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

fn config() -> impl Strategy<Value = BloofiConfig> {
    (2usize..=4, 0usize..3, any::<bool>()).prop_map(|(order, metric, heuristic)| {
        BloofiConfig::with_order(order).metric(Metric::ALL[metric]).all_ones_heuristic(heuristic)
    })
}

/// Small filters (64 or 128 bits) fill up, so all-ones nodes and the
/// Section 5.4 heuristic get exercised; larger ones keep nodes sparse.
fn params() -> impl Strategy<Value = BloomParams> {
    (prop::sample::select(vec![64u64, 128, 200, 1000, 2048]), 1u32..=4)
        .prop_map(|(m, k)| BloomParams::new(m, k).unwrap().with_seed(m * 31 + u64::from(k)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn bulk_builds_agree_with_iterative_inserts(
        params in params(),
        config in config(),
        sets in prop::collection::vec(prop::collection::vec(0u32..300, 0..30), 0..120),
        order in any::<u8>(),
    ) {
        let filters: Vec<BloomFilter> = sets.iter().map(|s| filter(params, s.iter().copied())).collect();
        let items: Vec<(u64, &BloomFilter)> = filters.iter().enumerate().map(|(i, f)| (i as u64 * 7, f)).collect();
        let bulk = BloofiTree::bulk_build(params, config, &items, bulk_order(order)).unwrap();
        bulk.validate().unwrap();
        let mut naive = NaiveIndex::new(params);
        for (id, f) in &items {
            naive.insert_filter(*id, f).unwrap();
        }
        prop_assert_eq!(bulk.len(), items.len());
        for key in 0u32..320 {
            let k = key.to_le_bytes();
            prop_assert_eq!(sorted(bulk.query(&k)), sorted(naive.query(&k)));
        }
        for (i, s) in sets.iter().enumerate() {
            for key in s {
                prop_assert!(bulk.query(&key.to_le_bytes()).contains(&(i as u64 * 7)));
            }
        }
    }
}

#[test]
fn errors_are_typed_and_change_nothing() {
    let params = BloomParams::new(256, 3).unwrap();
    let other = BloomParams::new(256, 4).unwrap();
    for order in [0, 1] {
        assert_eq!(
            BloofiTree::new(params, BloofiConfig::with_order(order)).unwrap_err(),
            BloofiError::OrderTooSmall { order }
        );
    }
    struct World {
        tree: BloofiTree,
        flat: FlatBloofiPaper,
    }
    let mut world =
        World { tree: BloofiTree::new(params, BloofiConfig::default()).unwrap(), flat: FlatBloofiPaper::new(params) };
    for id in 0..30u64 {
        let f = filter(params, [id as u32, id as u32 + 1]);
        world.tree.insert_filter(id, &f).unwrap();
        world.flat.insert_filter(id, &f).unwrap();
    }
    let snapshot = |w: &World| {
        let answers: Vec<Vec<u64>> = (0u32..40).map(|k| sorted(w.tree.query(&k.to_le_bytes()))).collect();
        let flat: Vec<Vec<u64>> = (0u32..40).map(|k| sorted(w.flat.query(&k.to_le_bytes()))).collect();
        (answers, flat, w.tree.node_count(), w.tree.height(), w.tree.maintenance_stats(), w.flat.arrays())
    };
    let before = snapshot(&world);
    let wrong = filter(other, [1]);
    assert_eq!(world.tree.insert_filter(3, &filter(params, [9])), Err(Error::DuplicateId(3).into()));
    assert!(matches!(world.tree.insert_filter(99, &wrong), Err(BloofiError::Core(Error::ParamsMismatch { .. }))));
    assert!(matches!(world.tree.update_filter(3, &wrong), Err(BloofiError::Core(Error::ParamsMismatch { .. }))));
    assert_eq!(world.tree.update_filter(99, &filter(params, [9])), Err(Error::UnknownId(99).into()));
    assert_eq!(world.tree.remove_set(99), Err(Error::UnknownId(99).into()));
    assert_eq!(world.tree.insert_key(99, "k"), Err(Error::UnknownId(99).into()));
    assert_eq!(world.flat.insert_filter(3, &filter(params, [9])), Err(Error::DuplicateId(3)));
    assert!(matches!(world.flat.insert_filter(99, &wrong), Err(Error::ParamsMismatch { .. })));
    assert!(matches!(world.flat.update_filter(3, &wrong), Err(Error::ParamsMismatch { .. })));
    assert_eq!(world.flat.remove_set(99), Err(Error::UnknownId(99)));
    assert_eq!(snapshot(&world), before);
    world.tree.validate().unwrap();
    world.flat.validate().unwrap();

    let f = filter(params, [1]);
    let g = filter(other, [1]);
    assert_eq!(
        BloofiTree::bulk_build(params, BloofiConfig::default(), &[(5, &f), (5, &f)], BulkOrder::Auto).unwrap_err(),
        Error::DuplicateId(5).into()
    );
    assert!(matches!(
        BloofiTree::bulk_build(params, BloofiConfig::default(), &[(5, &g)], BulkOrder::Auto),
        Err(BloofiError::Core(Error::ParamsMismatch { .. }))
    ));
    assert_eq!(
        BloofiTree::bulk_build(params, BloofiConfig::with_order(1), &[], BulkOrder::Auto).unwrap_err(),
        BloofiError::OrderTooSmall { order: 1 }
    );
}

/// The paper's default workload at a reduced N: filter i holds keys
/// [100 i, 100 i + 100), n_exp 10 000, p 0.01 (m = 100 992, k = 7).
#[test]
fn paper_workload_prunes_and_costs_as_the_paper_describes() {
    let params = BloomParams::for_capacity(10_000, 0.01).unwrap();
    let n = 300u64;
    let filters: Vec<BloomFilter> =
        (0..n).map(|i| bloomslice::testing::filter_of_u64_keys(params, i * 100..i * 100 + 100)).collect();
    let mut tree = BloofiTree::new(params, BloofiConfig::default()).unwrap();
    let mut flat = FlatBloofiPaper::new(params);
    let mut naive = NaiveIndex::new(params);
    for (i, f) in filters.iter().enumerate() {
        tree.insert_filter(i as u64, f).unwrap();
        flat.insert_filter(i as u64, f).unwrap();
        naive.insert_filter(i as u64, f).unwrap();
    }
    tree.validate().unwrap();
    let items: Vec<(u64, &BloomFilter)> = filters.iter().enumerate().map(|(i, f)| (i as u64, f)).collect();
    let bulk = BloofiTree::bulk_build(params, BloofiConfig::default(), &items, BulkOrder::Auto).unwrap();
    bulk.validate().unwrap();
    for t in [&tree, &bulk] {
        let mut present_cost = 0;
        for key in (0..n * 100).step_by(37) {
            let k = key.to_le_bytes();
            let (ids, cost) = t.query_with_cost(&k);
            assert!(ids.contains(&(key / 100)));
            assert_eq!(sorted(ids), sorted(naive.query(&k)));
            assert_eq!(sorted(flat.query(&k)), sorted(naive.query(&k)));
            present_cost += cost;
        }
        let queries = (n * 100).div_ceil(37) as usize;
        let mean = present_cost as f64 / queries as f64;
        // One path costs about l log_l N + 1 (l = children per node); the
        // tree must prune far below checking every filter.
        assert!(mean < n as f64 / 4.0, "mean search cost {mean}");
        assert!(mean >= t.height() as f64 + 1.0);
    }
    // Storage as the paper counts it: one filter's bytes per node; fewer
    // than 2N nodes; Flat-Bloofi rounds N up to a multiple of 64.
    assert_eq!(tree.storage_bytes(), tree.node_count() * 1578 * 8);
    assert!(tree.node_count() < 2 * n as usize);
    assert_eq!(flat.storage_bytes(), 320 * 1578 * 8);
    // Maintenance cost: an update touches the leaf-to-root path; an insert
    // at least that path.
    let mut extra = BloomFilter::new(params).unwrap();
    extra.insert(&1_000_000u64.to_le_bytes());
    tree.update_filter(5, &extra).unwrap();
    assert_eq!(tree.last_maintenance_cost(), tree.height() + 1);
    tree.insert_filter(n, &extra).unwrap();
    assert!(tree.last_maintenance_cost() > tree.height());
    tree.remove_set(n).unwrap();
    assert!(tree.last_maintenance_cost() >= tree.height());
    let stats = tree.maintenance_stats();
    assert_eq!((stats.inserts, stats.deletes, stats.updates), (n + 1, 1, 1));
    tree.validate().unwrap();
}

/// With tiny filters every node fills up: the heuristic keeps all-ones
/// nodes from splitting (a forest under the root), and answers do not
/// depend on it.
#[test]
fn heuristic_changes_shape_not_answers() {
    let params = BloomParams::new(64, 2).unwrap();
    let mut on = BloofiTree::new(params, BloofiConfig::default()).unwrap();
    let mut off = BloofiTree::new(params, BloofiConfig::default().all_ones_heuristic(false)).unwrap();
    for id in 0..200u64 {
        let keys = (id * 10..id * 10 + 20).map(|k| k as u32);
        let f = filter(params, keys);
        on.insert_filter(id, &f).unwrap();
        off.insert_filter(id, &f).unwrap();
    }
    on.validate().unwrap();
    off.validate().unwrap();
    assert!(on.root_fanout() > 4, "all-ones root kept {} children", on.root_fanout());
    assert!(off.root_fanout() <= 4);
    for key in 0u32..2100 {
        let k = key.to_le_bytes();
        assert_eq!(sorted(on.query(&k)), sorted(off.query(&k)));
    }
    for id in (0..200u64).step_by(2) {
        on.remove_set(id).unwrap();
        off.remove_set(id).unwrap();
        on.validate().unwrap();
        off.validate().unwrap();
    }
}

//! Differential fuzzing of every index type against `NaiveIndex` through
//! the shared harness (`bloomslice::testing`, also used by the property
//! tests in `engine/core/tests/filter_index.rs`): the input's first bytes pick
//! the parameters, the pair, the kernel backend and the tree's shape; the
//! rest decodes to an op sequence compared after every step. For the
//! sliced index, multi-key scoring is then checked on the final state (after
//! the deletes and column reuse of the ops): every query op's keys, scored
//! pruned and unpruned at three thresholds, against counts from the naive
//! index's answers.
#![no_main]

use std::collections::BTreeMap;

use bloomslice::kernels::{Kernels, LookAhead};
use bloomslice::testing::{Op, ops_from_bytes, run_differential, run_differential_with};
use bloomslice::{BloomParams, KeyHash, NaiveIndex, Scores, SlicedConfig, SlicedIndex, Threshold};
use bloomslice_papers::testing::maintain_bloofi;
use bloomslice_papers::{BloofiConfig, BloofiTree, CountingSlicedIndex, FlatBloofiPaper, Metric};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [m_lo, m_hi, k, seed, which, shape, rest @ ..] = data else { return };
    let m = u64::from(u16::from_le_bytes([*m_lo, *m_hi]) % 2048);
    let Ok(params) = BloomParams::new(m, u32::from(k % 12)) else { return };
    let params = params.with_seed(u64::from(*seed));
    let ops = ops_from_bytes(rest);
    let mut naive = NaiveIndex::new(params);
    match which % 4 {
        0 => {
            let columns = if shape & 1 == 0 { 512 } else { 2048 };
            let config = SlicedConfig {
                max_shard_columns: columns,
                prefetch_distance: usize::from(shape >> 1) % 4,
                look_ahead: [LookAhead::L1, LookAhead::L2][usize::from(shape >> 3) % 2],
                ..SlicedConfig::default()
            };
            let mut sliced = SlicedIndex::with_config(params, config);
            let backends = Kernels::available();
            sliced.set_kernels(backends[usize::from(which / 4) % backends.len()]);
            run_differential(&mut sliced, &mut naive, &ops);
            check_scoring(&sliced, &naive, &ops, *shape);
        }
        1 => run_differential(&mut FlatBloofiPaper::new(params), &mut naive, &ops),
        2 => {
            let config = BloofiConfig::with_order(2 + usize::from(shape % 4))
                .metric(Metric::ALL[usize::from(shape / 4) % Metric::ALL.len()])
                .all_ones_heuristic(shape & 0x80 != 0);
            let mut tree = BloofiTree::new(params, config).expect("order >= 2");
            run_differential_with(&mut tree, &mut naive, &ops, maintain_bloofi);
        }
        _ => run_differential(&mut CountingSlicedIndex::new(params), &mut naive, &ops),
    }
});

/// Scores the keys of every query op of `ops` on `sliced` and checks the
/// counts and threshold answers against counts of the naive index's
/// per-key answers.
fn check_scoring(sliced: &SlicedIndex, naive: &NaiveIndex, ops: &[Op], shape: u8) {
    let params = *sliced.params();
    let mut out = Vec::new();
    let mut scores = Scores::new();
    for op in ops {
        let (Op::Query { keys } | Op::Batch { keys }) = op else { continue };
        let hashes: Vec<KeyHash> = keys.0.iter().take(256).map(|k| params.hash(&k.to_le_bytes())).collect();
        let mut counts: BTreeMap<u64, u32> = BTreeMap::new();
        for &h in &hashes {
            naive.query_hash_into(h, &mut out);
            for &id in &out {
                *counts.entry(id).or_default() += 1;
            }
        }
        sliced.score_into(&hashes, &mut scores);
        let got: Vec<(u64, u32)> = scores.iter().collect();
        let want: Vec<(u64, u32)> = counts.iter().map(|(&id, &c)| (id, c)).collect();
        assert_eq!(got, want, "{op:?}: score_into");
        for threshold in [
            Threshold::fraction(f64::from(shape % 11) / 10.0).unwrap(),
            Threshold::fraction(0.8).unwrap(),
            Threshold::count(1),
        ] {
            let min_count = threshold.min_count(hashes.len());
            let mut want: Vec<(u64, u32)> = if min_count == 0 {
                naive.filters().iter().map(|&(id, _)| (id, counts.get(&id).copied().unwrap_or(0))).collect()
            } else {
                counts.iter().filter(|&(_, &c)| c >= min_count).map(|(&id, &c)| (id, c)).collect()
            };
            want.sort_unstable();
            assert_eq!(sliced.query_threshold(&hashes, threshold), want, "{op:?}: {threshold:?} pruned");
            assert_eq!(sliced.query_threshold(&hashes, threshold.unpruned()), want, "{op:?}: {threshold:?} unpruned");
        }
    }
}

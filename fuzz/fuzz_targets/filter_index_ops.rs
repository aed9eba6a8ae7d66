//! Differential fuzzing of every index type against `NaiveIndex` through
//! the shared harness (`bloomslice::testing`, also used by the property
//! tests in `engine/tests/filter_index.rs`): the input's first bytes pick
//! the parameters, the pair, the kernel backend and the tree's shape; the
//! rest decodes to an op sequence compared after every step.
#![no_main]

use bloomslice::kernels::Kernels;
use bloomslice::testing::{maintain_bloofi, ops_from_bytes, run_differential, run_differential_with};
use bloomslice::{
    BloofiConfig, BloofiTree, BloomParams, CountingSlicedIndex, FlatBloofiPaper, Metric, NaiveIndex, SlicedConfig,
    SlicedIndex,
};
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
            let config = SlicedConfig { max_shard_columns: columns, prefetch_distance: usize::from(shape >> 1) % 4 };
            let mut sliced = SlicedIndex::with_config(params, config);
            let backends = Kernels::available();
            sliced.set_kernels(backends[usize::from(which / 4) % backends.len()]);
            run_differential(&mut sliced, &mut naive, &ops);
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

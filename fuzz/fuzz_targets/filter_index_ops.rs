//! Differential fuzzing of every index type against `NaiveIndex` through
//! the shared harness (`bloomslice::testing`, also used by the property
//! tests in `engine/tests/filter_index.rs`): the input picks the
//! parameters and the pair, the rest decodes to an op sequence compared
//! after every step.
#![no_main]

use bloomslice::testing::{ops_from_bytes, run_differential};
use bloomslice::{
    BloofiConfig, BloofiTree, BloomParams, CountingSlicedIndex, FlatBloofiPaper, NaiveIndex, SlicedConfig, SlicedIndex,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [m_lo, m_hi, k, which, rest @ ..] = data else { return };
    let Ok(params) = BloomParams::new(u64::from(u16::from_le_bytes([*m_lo, *m_hi]) % 2048), u32::from(k % 12)) else {
        return;
    };
    let ops = ops_from_bytes(rest);
    let mut naive = NaiveIndex::new(params);
    match which % 5 {
        0 => run_differential(&mut SlicedIndex::new(params), &mut naive, &ops),
        1 => {
            let config = SlicedConfig { max_shard_columns: 512, ..SlicedConfig::default() };
            run_differential(&mut SlicedIndex::with_config(params, config), &mut naive, &ops);
        }
        2 => run_differential(&mut FlatBloofiPaper::new(params), &mut naive, &ops),
        3 => {
            let order = 2 + usize::from(which / 5) % 4;
            let mut tree = BloofiTree::new(params, BloofiConfig::with_order(order)).expect("order >= 2");
            run_differential(&mut tree, &mut naive, &ops);
        }
        _ => run_differential(&mut CountingSlicedIndex::new(params), &mut naive, &ops),
    }
});

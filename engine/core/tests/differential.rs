//! Every kernel backend gives the scalar backend's answers on a large
//! index. (`SlicedIndex` against `NaiveIndex` under random operation
//! sequences, with ground truth for "no false negatives", is the shared
//! harness of `tests/filter_index.rs`.)

use bloomslice::kernels::Kernels;
use bloomslice::testing::index_of_u64_runs;
use bloomslice::{BatchResults, BloomParams};

#[test]
fn every_backend_gives_the_same_answers() {
    let mut index = index_of_u64_runs(BloomParams::new(3000, 5).unwrap(), 2000, 4, 30);
    let keys: Vec<[u8; 8]> = (0u64..12_000).map(u64::to_le_bytes).collect();
    index.set_kernels(Kernels::scalar());
    let mut want = BatchResults::new();
    index.query_batch(&keys, &mut want);
    for kernels in Kernels::available() {
        index.set_kernels(kernels);
        let mut got = BatchResults::new();
        index.query_batch(&keys, &mut got);
        assert!(want.iter().eq(got.iter()), "{} differs from scalar", kernels.backend());
    }
}

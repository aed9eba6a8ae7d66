//! The fuzz target `kernels`'s differential logic
//! (`tests/differential/mod.rs`) as a property test, so that it runs
//! wherever the tests run, NEON on aarch64 under `qemu-aarch64` included:
//! every backend this CPU can run against the scalar reference, on inputs
//! drawn like the fuzzer's (arbitrary words, lengths, offsets, row counts,
//! keys and thresholds). A backend that `BLOOMSLICE_REQUIRE_BACKENDS` names
//! must be among those run.
#![allow(
    unexpected_cfgs,
    reason = "`tests/differential` derives `Arbitrary` under `cfg(fuzzing)`, which cargo-fuzz sets"
)]

#[macro_use]
mod common;
mod differential;

use bloomslice_kernels::{Backend, Kernels};
use common::word;
use differential::{Input, MAX_ROWS};
use proptest::collection::vec;
use proptest::prelude::*;

/// An [`Input`] with every field drawn over its whole range (lengths up to
/// `MAX_LEN`, so full lines and a partial one, and up to [`MAX_ROWS`]
/// rows).
fn input() -> impl Strategy<Value = Input> {
    (
        (vec(word(), 0..80), any::<u16>(), any::<[u8; MAX_ROWS + 2]>(), any::<[u8; MAX_ROWS]>(), any::<u8>()),
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<u16>(), any::<u8>(), word()),
        (vec(any::<u8>(), 0..30), any::<[u8; 3]>()),
    )
        .prop_map(
            |(
                (words, len, starts, extra, rows),
                (kill, sparse, offset, counter_seed, planes, live),
                (keys, thresholds),
            )| Input {
                words,
                len,
                starts,
                extra,
                rows,
                kill,
                sparse,
                offset,
                counter_seed,
                planes,
                live,
                keys,
                thresholds,
            },
        )
}

/// Every backend named in `BLOOMSLICE_REQUIRE_BACKENDS` is available, so
/// the differential test below runs it (CI names `neon` on aarch64).
#[test]
fn required_backends_take_part() {
    let available: Vec<Backend> = Kernels::available().into_iter().map(Kernels::backend).collect();
    for backend in Backend::ALL {
        if bloomslice_kernels::dispatch::backend_required(backend.name()) {
            assert!(available.contains(&backend), "{backend} is required but not among {available:?}");
        }
    }
    assert!(common::backend_or_skip("portable", Some(bloomslice_kernels::arch::portable::kernels())).is_some());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn every_backend_matches_the_reference(input in input()) {
        differential::check_all(&input);
    }
}

//! Differential fuzzing of the bit kernels: every backend this CPU can run
//! against the scalar reference of record, `arch::all`. The logic lives in
//! `kernels/tests/differential/mod.rs`, shared with the proptest
//! `kernels/tests/fuzz_logic.rs`, which runs it on aarch64 under emulation
//! (where libFuzzer is impractical).
#![no_main]
#![allow(unexpected_cfgs, reason = "`differential` derives `Arbitrary` under `cfg(fuzzing)`, which cargo-fuzz sets")]

use libfuzzer_sys::fuzz_target;

#[path = "../../kernels/tests/differential/mod.rs"]
mod differential;

fuzz_target!(|input: differential::Input| {
    differential::check_all(&input);
});

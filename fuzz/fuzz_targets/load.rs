//! Fuzzing of the index file loader: arbitrary bytes must load or give a
//! typed error, never panic, hang or over-allocate.
//!
//! Random mutations almost always break a checksum, which the loader checks
//! first; so every input is also loaded a second time after its checksums
//! are recomputed (as a hostile, rather than merely corrupt, file would
//! have them), to reach the structural checks behind them. An input that
//! loads must validate, answer queries, and save back to the same bytes.
#![no_main]

mod checksums;

use bloomslice::persist;
use bloomslice::{Loaded, SlicedIndex};
use checksums::check_raw_and_fixed;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    let Ok(loaded) = Loaded::<SlicedIndex>::from_bytes(bytes) else { return };
    loaded.index.validate().expect("a loaded index is valid");
    for key in 0..64u64 {
        let ids = loaded.index.query(&key.to_le_bytes());
        assert!(ids.iter().all(|id| loaded.index.contains(*id)));
    }
    let again = persist::to_bytes(&loaded.index, &loaded.names).expect("save");
    assert_eq!(again.len(), bytes.len());
    let reloaded = Loaded::<SlicedIndex>::from_bytes(&again).expect("a saved index loads");
    assert_eq!(reloaded.names, loaded.names);
}

fuzz_target!(|data: &[u8]| check_raw_and_fixed(data, check));

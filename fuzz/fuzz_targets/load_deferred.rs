//! Fuzzing of the deferred memory-mapped open: arbitrary bytes are written
//! to a file and opened with `Loaded::<SlicedIndex>::open_mmap(.., Verify::Deferred)`,
//! which checks only the header and tables. Whatever the rows hold, the
//! opened index must answer queries without a panic or an out-of-bounds
//! read, naming only ids it holds, each once (its answers may be wrong
//! until verified, as the `persist` docs allow, but a damaged row's bits
//! in unused columns are never reported); `verify` must then accept
//! exactly the files `from_bytes` accepts, and a verified index must
//! answer as the loaded one. Inputs are also tried with their checksums
//! fixed (see `checksums.rs`).
#![no_main]

mod checksums;
mod scratch;

use std::path::Path;

use bloomslice::persist::Verify;
use bloomslice::{BatchResults, Loaded, SlicedIndex};
use checksums::check_raw_and_fixed;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    scratch::check_with_scratch("deferred", "bsi", bytes, check_file);
}

fn check_file(bytes: &[u8], path: &Path) {
    std::fs::write(path, bytes).expect("write the scratch file");
    // SAFETY: the scratch file belongs to this process alone, and it is
    // removed and rewritten (by `scratch::check_with_scratch`) only after every
    // map of it made here has been dropped at the end of this call.
    let opened = unsafe { Loaded::<SlicedIndex>::open_mmap(path, Verify::Deferred) };
    let full = Loaded::<SlicedIndex>::from_bytes(bytes);
    let Ok(mut lazy) = opened else {
        assert!(full.is_err(), "a deferred open refused a file that loads");
        return;
    };
    assert!(!lazy.info.rows_verified || bytes.len() < 128);
    let keys: Vec<[u8; 8]> = (0..64u64).map(u64::to_le_bytes).collect();
    let only_own_ids = |ids: &[u64]| {
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        sorted.len() == ids.len() && ids.iter().all(|id| lazy.index.contains(*id))
    };
    for key in &keys {
        assert!(only_own_ids(&lazy.index.query(key)), "an unverified index named an id it does not hold");
    }
    let mut results = BatchResults::new();
    lazy.index.query_batch(&keys, &mut results);
    assert_eq!(results.len(), keys.len());
    assert!(results.iter().all(only_own_ids), "an unverified batch named an id the index does not hold");
    let _ = lazy.names.len();
    match (lazy.verify(), &full) {
        (Ok(()), Ok(loaded)) => {
            for key in &keys {
                let (mut a, mut b) = (lazy.index.query(key), loaded.index.query(key));
                assert!(a.iter().all(|id| lazy.index.contains(*id)));
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "mapped and loaded answers differ");
            }
            assert_eq!(lazy.names, loaded.names);
        }
        (Ok(()), Err(e)) => panic!("verify accepted a file that from_bytes rejects: {e}"),
        (Err(e), Ok(_)) => panic!("verify rejected a file that from_bytes accepts: {e}"),
        (Err(_), Err(_)) => {}
    }
}

fuzz_target!(|data: &[u8]| check_raw_and_fixed(data, check));

//! The manifest parser on arbitrary bytes: never a panic, and a manifest
//! it accepts is written back as JSON that parses to the same manifest
//! (so every accepted manifest is one `to_json` can express).

#![no_main]

use bloomslice::persist::manifest::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::from_json(data) {
        let again = Manifest::from_json(m.to_json().as_bytes()).expect("a written manifest parses");
        assert_eq!(again, m);
        let _ = m.next_id();
        let _ = m.owner_of(b"x");
    }
});

//! The committed C header is what `cbindgen` generates from the source
//! today. Regenerate it with
//! `BLOOMSLICE_BLESS=1 cargo test -p bloomslice-capi --test header`.

use std::path::Path;

#[test]
fn committed_header_is_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let header = dir.join("include/bloomslice.h");
    if std::env::var_os("BLOOMSLICE_BLESS").is_some() {
        std::fs::write(&header, &generated).expect("write the header");
        return;
    }
    let committed = std::fs::read(&header).unwrap_or_default();
    assert!(
        committed == generated,
        "include/bloomslice.h is out of date: run `BLOOMSLICE_BLESS=1 cargo test -p bloomslice-capi --test header` and commit it"
    );
}

//! End-to-end tests of the `bloomslice` binary: good and bad input.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bloomslice"))
}

fn tsv(name: &str, body: &[u8]) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("bloomslice-cli-{}-{name}", std::process::id()));
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn query_reports_matching_sets() {
    let path = tsv("ok.tsv", b"fruit\tapple\nfruit\tpear\r\nrock\tgranite\n\nrock\t\xff\xfe bytes\n");
    let out = bin().args(["query", "--tsv"]).arg(&path).args(["apple", "granite"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("apple\tfruit"), "{stdout}");
    assert!(stdout.contains("granite\trock"), "{stdout}");
}

#[test]
fn params_prints_the_bloofi_defaults() {
    let out = bin().args(["params", "--n-exp", "10000", "--fp", "0.01"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("m = 100992 bits, k = 7"));
}

#[test]
fn bad_input_is_one_line_and_nonzero() {
    let cases: [(&[&str], i32); 4] = [
        (&["bogus"], 2),
        (&["params", "--fp", "1.5"], 1),
        (&["query", "--tsv", "/definitely/not/here.tsv", "k"], 1),
        (&["params", "--n-exp", "0"], 1),
    ];
    for (args, code) in cases {
        let out = bin().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    let bad = tsv("bad.tsv", b"no tab here\n");
    let out = bin().args(["query", "--tsv"]).arg(&bad).arg("k").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stderr).unwrap().lines().count(), 1);
    let empty = tsv("empty.tsv", b"");
    let out = bin().args(["query", "--tsv"]).arg(&empty).arg("k").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}

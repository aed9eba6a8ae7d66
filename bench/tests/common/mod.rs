//! Helpers shared by the end-to-end tests of the `paper` binary.

use std::process::Command;

/// The `paper` binary under test.
pub fn paper() -> Command {
    Command::new(env!("CARGO_BIN_EXE_paper"))
}

/// Runs `cmd`, checks that it succeeded and returns its stdout.
pub fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `paper` with `args`, checks that it exits with `code` and an error
/// message, without a panic, and returns its stderr.
pub fn fails(args: &[&str], code: i32) -> String {
    let out = paper().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(code), "{args:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("error"), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    stderr
}

//! End-to-end checks of the `paper` binary's cheap subcommands and its
//! argument errors.

use std::process::Command;

fn paper() -> Command {
    Command::new(env!("CARGO_BIN_EXE_paper"))
}

#[test]
fn stable_prints_theory_and_the_table() {
    let out = paper().args(["stable", "--distinct", "300", "--seed", "7"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in ["V0", "FP bound", "IBF-MC", "IBF-2C", "SBF", "uniform repeats 10%"] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn bad_arguments_exit_nonzero_without_panic() {
    for args in [&["stable", "--distinct", "5"][..], &["query", "--workload", "nope"], &["bogus"]] {
        let out = paper().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains("error"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

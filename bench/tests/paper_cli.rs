//! End-to-end checks of the `paper` binary's cheap subcommands and its
//! argument errors.

mod common;
use common::{fails, ok, paper};

#[test]
fn stable_prints_theory_and_the_table() {
    let text = ok(paper().args(["stable", "--distinct", "300", "--seed", "7"]));
    for needle in ["V0", "FP bound", "IBF-MC", "IBF-2C", "SBF", "uniform repeats 10%"] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn bad_arguments_exit_nonzero_without_panic() {
    for args in [&["stable", "--distinct", "5"][..], &["query", "--workload", "nope"], &["bogus"]] {
        fails(args, 2);
    }
}

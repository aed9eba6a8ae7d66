//! End-to-end checks of `paper popularity` (Section 5.1 of the
//! popularity-conscious paper): the table, the CSV, and argument errors.

use std::process::Command;

fn paper() -> Command {
    Command::new(env!("CARGO_BIN_EXE_paper"))
}

#[test]
fn popularity_prints_the_table_and_writes_the_csv() {
    let csv = std::env::temp_dir().join(format!("popularity-{}.csv", std::process::id()));
    let out = paper()
        .args(["popularity", "--universe", "60", "--trials", "300", "--eps", "0.5", "--csv"])
        .arg(&csv)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in ["Section 5.1", "optimal+", "int/opt+p", " 1.00 ", " 2.00 "] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    let rows = std::fs::read_to_string(&csv).unwrap();
    let _ = std::fs::remove_file(&csv);
    assert!(rows.starts_with("alpha,divergence_bits,approach,predicted_fpr,measured_fpr,hashes_per_key\n"));
    assert_eq!(rows.lines().count(), 1 + 5 * 4);
    assert!(rows.contains(",optimal_plus,"));
}

#[test]
fn bad_arguments_exit_nonzero_without_panic() {
    for (args, code) in [
        (&["popularity", "--universe", "5"][..], 2),
        (&["popularity", "--universe", "50", "--eps=-1"], 1),
        (&["popularity", "--universe", "50", "--set-size", "0"], 1),
    ] {
        let out = paper().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains("error"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

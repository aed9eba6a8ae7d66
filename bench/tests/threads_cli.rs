//! `paper query --threads`: the pool, rayon, split-rule and latency tables
//! come out of a tiny run (answers are checked inside the binary before timing).

use std::process::Command;

#[test]
fn threads_prints_throughput_latency_and_write_cost() {
    let out = Command::new(env!("CARGO_BIN_EXE_paper"))
        .args([
            "query",
            "--workload",
            "paper",
            "--filters",
            "300",
            "--queries",
            "3000",
            "--threads",
            "1,2",
            "--batch",
            "64,1000",
            "--seconds",
            "0.01",
            "--latency-seconds",
            "0.02",
            "--build-threads",
            "1",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in
        ["throughput", "pool/rayon", "split rule", "by shards", "p99.9", "left-right", "copy-on-write", "insert_key"]
    {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert_eq!(text.lines().filter(|l| l.trim_start().starts_with("1000 ")).count(), 3, "{text}");
}

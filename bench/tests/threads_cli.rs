//! `paper query --threads`: the pool, rayon, split-rule and latency tables
//! come out of a tiny run (answers are checked inside the binary before timing).

#[expect(dead_code, reason = "not every test binary uses every shared helper")]
mod common;
use common::{ok, paper};

#[test]
fn threads_prints_throughput_latency_and_write_cost() {
    let text = ok(paper().args([
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
    ]));
    for needle in
        ["throughput", "pool/rayon", "split rule", "by shards", "p99.9", "left-right", "copy-on-write", "insert_key"]
    {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert_eq!(text.lines().filter(|l| l.trim_start().starts_with("1000 ")).count(), 3, "{text}");
}

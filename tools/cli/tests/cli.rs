//! End-to-end tests of the `bloomslice` binary: every subcommand, good and
//! bad input, exit codes (2 usage, 1 runtime) and one-line errors.

use std::path::PathBuf;

#[expect(dead_code, reason = "not every test binary uses every shared helper")]
mod common;
use common::{bin, fails, ok, run, run_stdin};

/// A directory with `sites/fruit`, `sites/rock` (one non-UTF-8 key) and `sets.tsv`.
fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let sites = dir.path().join("sites");
    std::fs::create_dir(&sites).unwrap();
    std::fs::write(sites.join("fruit"), b"apple\npear\r\n\n").unwrap();
    std::fs::write(sites.join("rock"), b"granite\n\xff\xfe bytes\n").unwrap();
    std::fs::write(
        dir.path().join("sets.tsv"),
        b"fruit\tapple\nfruit\tpear\r\nrock\tgranite\n\nrock\t\xff\xfe bytes\n",
    )
    .unwrap();
    let p = dir.path().to_path_buf();
    (dir, p)
}

#[test]
fn build_from_dir_and_tsv_then_query() {
    let (_guard, dir) = fixture();
    let summary = ok(&run(&["build", "d.bsi", "--dir", "sites"], &dir));
    assert!(summary.contains("sets: 2, keys: 4 lines, 4 distinct"), "{summary}");
    assert!(summary.contains("predicted FP per set:"), "{summary}");
    ok(&run(&["build", "t.bsi", "--tsv", "sets.tsv", "--m", "4096", "--k", "3", "--seed", "9"], &dir));
    for index in ["d.bsi", "t.bsi"] {
        let out = ok(&run(&["query", index, "apple", "granite"], &dir));
        assert!(out.contains("apple\tfruit\n"), "{out}");
        assert!(out.contains("granite\trock\n"), "{out}");
        // Non-UTF-8 keys are bytes, from stdin.
        let out = ok(&run_stdin(&["query", index], &dir, b"\xff\xfe bytes\npear\n"));
        assert!(out.contains("\trock\n") && out.contains("pear\tfruit\n"), "{out}");
    }
    let out = ok(&run(&["query", "d.bsi", "--json", "apple"], &dir));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["sets"][0], "fruit");
    let out = ok(&run_stdin(&["query", "d.bsi", "--count", "--threshold", "0.5"], &dir, b"apple\npear\ngranite\n"));
    assert_eq!(out, "fruit\t2\t0.6667\n");
    let out = ok(&run_stdin(&["query", "d.bsi", "--count", "--json", "-"], &dir, b"apple\ngranite\n"));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["keys"], 2);
    assert_eq!(v["sets"].as_array().unwrap().len(), 2);
    let out = ok(&run(&["query", "d.bsi", "--no-verify", "pear"], &dir));
    assert_eq!(out, "pear\tfruit\n");
}

#[test]
fn add_update_remove_and_inspect() {
    let (_guard, dir) = fixture();
    ok(&run(&["build", "i.bsi", "--dir", "sites"], &dir));
    std::fs::write(dir.join("veg.tsv"), b"veg\tcarrot\n").unwrap();
    ok(&run(&["add", "i.bsi", "--tsv", "veg.tsv"], &dir));
    assert_eq!(ok(&run(&["query", "i.bsi", "carrot"], &dir)), "carrot\tveg\n");
    fails(&run(&["add", "i.bsi", "--tsv", "veg.tsv"], &dir), 1);
    ok(&run_stdin(&["update", "i.bsi", "--tsv", "-"], &dir, b"veg\tleek\n"));
    assert_eq!(ok(&run(&["query", "i.bsi", "leek", "carrot"], &dir)), "leek\tveg\ncarrot\tveg\n");
    let e = fails(&run_stdin(&["update", "i.bsi", "--tsv", "-"], &dir, b"new\tx\n"), 1);
    assert!(e.contains("--create"), "{e}");
    ok(&run_stdin(&["update", "i.bsi", "--tsv", "-", "--create"], &dir, b"new\tx\n"));
    assert_eq!(ok(&run(&["query", "i.bsi", "x"], &dir)), "x\tnew\n");
    ok(&run(&["remove", "i.bsi", "rock"], &dir));
    assert_eq!(ok(&run(&["query", "i.bsi", "granite"], &dir)), "granite\t\n");
    fails(&run(&["remove", "i.bsi", "rock"], &dir), 1);
    // Sets from another index with the same params; another with other params is refused.
    std::fs::write(dir.join("b.tsv"), b"other\tzinc\n").unwrap();
    ok(&run(&["build", "b.bsi", "--tsv", "b.tsv"], &dir));
    ok(&run(&["add", "i.bsi", "--from", "b.bsi"], &dir));
    assert_eq!(ok(&run(&["query", "i.bsi", "zinc"], &dir)), "zinc\tother\n");
    ok(&run(&["build", "c.bsi", "--tsv", "b.tsv", "--m", "1000", "--k", "3"], &dir));
    let e = fails(&run(&["add", "i.bsi", "--from", "c.bsi"], &dir), 1);
    assert!(e.contains("other parameters"), "{e}");
    let out = ok(&run(&["inspect", "i.bsi"], &dir));
    for needle in ["format version: 2.0", "checksums verified: yes", "target FP 0.01 per set, k = 7", "veg", "est. FP"]
    {
        assert!(out.contains(needle), "{needle}: {out}");
    }
    let out = ok(&run(&["inspect", "i.bsi", "--json"], &dir));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["sets"], 4);
    assert_eq!(v["checksums_verified"], true);
}

#[test]
fn bad_input_is_one_line_with_the_right_exit_code() {
    let (_guard, dir) = fixture();
    ok(&run(&["build", "i.bsi", "--dir", "sites"], &dir));
    std::fs::write(dir.join("notab.tsv"), b"no tab here\n").unwrap();
    std::fs::write(dir.join("empty.tsv"), b"").unwrap();
    std::fs::create_dir(dir.join("emptydir")).unwrap();
    let mut damaged = std::fs::read(dir.join("i.bsi")).unwrap();
    let n = damaged.len();
    damaged[n - 1] ^= 1;
    std::fs::write(dir.join("damaged.bsi"), &damaged).unwrap();
    std::fs::write(dir.join("short.bsi"), &damaged[..100]).unwrap();
    let cases: &[(&[&str], i32)] = &[
        (&["bogus"], 2),
        (&["build", "x.bsi"], 2),
        (&["build", "x.bsi", "--dir", "sites", "--tsv", "sets.tsv"], 2),
        (&["build", "x.bsi", "--dir", "sites", "--m", "100"], 2),
        (&["build", "x.bsi", "--dir", "sites", "--fp", "1.5"], 2),
        (&["build", "x.bsi", "--dir", "sites", "--m", "0", "--k", "3"], 2),
        (&["build", "i.bsi", "--dir", "sites"], 1),
        (&["build", "x.bsi", "--tsv", "notab.tsv"], 1),
        (&["build", "x.bsi", "--tsv", "empty.tsv"], 1),
        (&["build", "x.bsi", "--dir", "emptydir"], 1),
        (&["build", "x.bsi", "--tsv", "missing.tsv"], 1),
        (&["build", "x.bsi", "--dir", "missing"], 1),
        (&["query", "missing.bsi", "k"], 1),
        (&["query", "sets.tsv", "k"], 1),
        (&["query", "damaged.bsi", "k"], 1),
        (&["query", "short.bsi", "k"], 1),
        (&["query", "i.bsi", "--threshold", "0.5", "k"], 2),
        (&["query", "i.bsi", "--count", "--threshold", "2", "k"], 2),
        (&["inspect", "damaged.bsi"], 1),
        (&["inspect"], 2),
        (&["remove", "i.bsi"], 2),
        (&["remove", "i.bsi", "nope"], 1),
        (&["add", "i.bsi"], 2),
        (&["update", "missing.bsi", "--dir", "sites"], 1),
        (&["bench", "missing.bsi"], 1),
        (&["params", "--n-exp", "0"], 2),
        (&["demo", "--filters", "0"], 2),
    ];
    for (args, code) in cases {
        let out = run(args, &dir);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {stderr}");
        fails(&out, *code);
    }
    assert!(!dir.join("x.bsi").exists(), "a failed build leaves no file");
    // The damaged file is rejected unless checks are deferred, and left alone.
    assert_eq!(std::fs::read(dir.join("damaged.bsi")).unwrap(), damaged);
}

#[test]
fn help_has_examples_and_params_prints_the_bloofi_defaults() {
    let help = ok(&bin().arg("--help").output().unwrap());
    assert!(help.contains("Examples:") && help.contains("bloomslice build sites.bsi --dir"), "{help}");
    for sub in ["build", "add", "remove", "update", "query", "inspect", "bench", "demo", "params"] {
        let h = ok(&bin().args([sub, "--help"]).output().unwrap());
        assert!(h.contains("Example") || h.contains("Usage"), "{sub}: {h}");
    }
    let out = ok(&bin().args(["params", "--n-exp", "10000", "--fp", "0.01"]).output().unwrap());
    assert!(out.contains("m = 100992 bits, k = 7"), "{out}");
}

#[test]
fn demo_saves_an_index_that_bench_and_query_use() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out =
        ok(&run(&["demo", "--filters", "40", "--queries", "2000", "--naive-queries", "200", "--save", "p.bsi"], d));
    assert!(out.contains("sliced-scalar") && out.contains("naive") && out.contains("checked"), "{out}");
    let out = ok(&run(&["bench", "p.bsi", "--queries", "2000"], d));
    assert!(out.contains("open: mmap") && out.contains("memory") && out.contains("batch"), "{out}");
    // Key 3 of the paper workload (8 little-endian bytes) is in filter 0.
    let mut key = 3u64.to_le_bytes().to_vec();
    key.push(b'\n');
    let out = ok(&run_stdin(&["query", "p.bsi", "--json"], d, &key));
    assert!(out.contains("filter-0"), "{out}");
}

#[test]
fn inspect_json_lists_every_set_and_says_when_a_limit_cut() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tsv: String = (0..60).map(|i| format!("set-{i:02}\tkey-{i}\n")).collect();
    std::fs::write(d.join("sets.tsv"), tsv).unwrap();
    ok(&run(&["build", "i.bsi", "--tsv", "sets.tsv"], d));
    let json = |args: &[&str]| -> serde_json::Value {
        let out = run(&[&["inspect", "i.bsi", "--json"], args].concat(), d);
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(&ok(&out)).unwrap()
    };
    // Complete by default: more sets than the text list shows.
    let v = json(&[]);
    assert_eq!((v["sets"].as_u64(), v["set_details"].as_array().unwrap().len()), (Some(60), 60));
    assert_eq!(v["truncated"], false);
    let v = json(&["--limit", "5"]);
    assert_eq!((v["set_details"].as_array().unwrap().len(), &v["truncated"]), (5, &serde_json::Value::Bool(true)));
    let v = json(&["--limit", "0"]);
    assert_eq!((v["set_details"].as_array().unwrap().len(), &v["truncated"]), (0, &serde_json::Value::Bool(true)));
    assert_eq!(json(&["--limit", "60"])["truncated"], false);
    // Text lists 50 and says on stderr that it cut.
    let out = run(&["inspect", "i.bsi"], d);
    let text = ok(&out);
    assert_eq!(text.lines().filter(|l| l.trim_start().starts_with("set-")).count(), 50, "{text}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("listed 50 of 60 sets") && stderr.contains("--limit 60"), "{stderr}");
    let out = run(&["inspect", "i.bsi", "--limit", "100"], d);
    assert_eq!(ok(&out).lines().filter(|l| l.trim_start().starts_with("set-")).count(), 60);
    assert!(out.stderr.is_empty());
}

#[test]
fn an_empty_pipeline_is_no_keys_not_an_error() {
    let (_guard, dir) = fixture();
    ok(&run(&["build", "i.bsi", "--dir", "sites"], &dir));
    let before = std::fs::read(dir.join("i.bsi")).unwrap();
    assert_eq!(ok(&run_stdin(&["query", "i.bsi"], &dir, b"")), "");
    assert_eq!(ok(&run_stdin(&["query", "i.bsi", "-", "--json"], &dir, b"\n\r\n")), "");
    assert_eq!(ok(&run_stdin(&["query", "i.bsi", "--count"], &dir, b"")), "");
    let v: serde_json::Value =
        serde_json::from_str(&ok(&run_stdin(&["query", "i.bsi", "--count", "--json"], &dir, b""))).unwrap();
    assert_eq!((v["keys"].as_u64(), v["sets"].as_array().map(Vec::len)), (Some(0), Some(0)));
    // Writers fed by an empty pipeline change nothing.
    for args in [&["update", "i.bsi", "--tsv", "-"][..], &["add", "i.bsi", "--tsv", "-"]] {
        let out = ok(&run_stdin(args, &dir, b""));
        assert!(out.contains("unchanged"), "{args:?}: {out}");
    }
    assert_eq!(std::fs::read(dir.join("i.bsi")).unwrap(), before);
    // A shard manifest and a sequence index answer an empty pipeline alike.
    ok(&run(&["split", "i.bsi", "--shards", "2", "s"], &dir));
    assert_eq!(ok(&run_stdin(&["query", "s"], &dir, b"")), "");
    std::fs::write(dir.join("g.fa"), ">g\nACGTACGTTGCA\n").unwrap();
    ok(&run(&["build", "g.bsi", "--seqs", "g.fa", "--kmer", "5"], &dir));
    assert_eq!(ok(&run_stdin(&["query", "g.bsi", "--seqs", "-"], &dir, b"")), "");
    // An empty file or directory given by name is still an error.
    std::fs::write(dir.join("empty.tsv"), b"").unwrap();
    fails(&run(&["update", "i.bsi", "--tsv", "empty.tsv"], &dir), 1);
}

#[test]
fn a_name_over_the_limit_names_the_limit_the_set_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long = "n".repeat(70_000);
    std::fs::write(d.join("sets.tsv"), format!("ok\tk\n{long}\tk\n")).unwrap();
    for args in [&["build", "i.bsi", "--tsv", "sets.tsv"][..], &["build", "i.bsi", "--tsv", "-"]] {
        let out = run_stdin(args, d, format!("ok\tk\n{long}\tk\n").as_bytes());
        let err = fails(&out, 1);
        let at = if args[3] == "-" { "-:2:" } else { "sets.tsv:2:" };
        assert!(err.contains(at) && err.contains("65536") && err.contains("70000 bytes"), "{err}");
        assert!(err.contains(&format!("set name {}...", "n".repeat(60))) && err.len() < 300, "{err}");
    }
    std::fs::write(d.join("r.fa"), format!(">ok\nACGTACGT\n>{long}\nACGTACGT\n")).unwrap();
    let err = fails(&run(&["build", "s.bsi", "--seqs", "r.fa", "--kmer", "5", "--seqs-by-record"], d), 1);
    assert!(err.contains("r.fa:3:") && err.contains("65536"), "{err}");
}

#[test]
fn escaped_names_from_inspect_go_back_to_remove_and_update() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("sets.tsv"), b"caf\xe9-latin1\tcoffee\na,b\tcomma\nplain\tp\n").unwrap();
    ok(&run(&["build", "i.bsi", "--tsv", "sets.tsv"], d));
    let listed = ok(&run(&["inspect", "i.bsi"], d));
    assert!(listed.contains("caf\\xe9-latin1") && listed.contains("a\\,b"), "{listed}");
    // As printed, the name is not the set's name unless --escaped says so.
    fails(&run(&["remove", "i.bsi", "caf\\xe9-latin1"], d), 1);
    fails(&run(&["remove", "i.bsi", "--escaped", "caf\\q"], d), 2);
    std::fs::write(d.join("more.tsv"), b"caf\\xe9-latin1\tespresso\n").unwrap();
    fails(&run(&["update", "i.bsi", "--tsv", "more.tsv"], d), 1);
    fails(&run(&["update", "i.bsi", "--dir", ".", "--escaped"], d), 2);
    ok(&run(&["update", "i.bsi", "--tsv", "more.tsv", "--escaped"], d));
    assert_eq!(ok(&run(&["query", "i.bsi", "espresso"], d)), "espresso\tcaf\\xe9-latin1\n");
    ok(&run(&["remove", "i.bsi", "--escaped", "caf\\xe9-latin1", "a\\,b"], d));
    let left = ok(&run(&["inspect", "i.bsi", "--json"], d));
    let v: serde_json::Value = serde_json::from_str(&left).unwrap();
    assert_eq!(v["sets"], 1);
    assert_eq!(v["set_details"][0]["name"], "plain");
}

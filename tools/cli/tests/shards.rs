//! `split`, `merge` and `query` over a manifest, in real processes: the
//! shard files answer exactly as the index they came from (present and
//! absent keys, false positives included, plain, JSON and `--count`), the
//! merged index too, and bad manifests, shards of other parameters and
//! changed files are one-line errors.

use std::path::Path;

use bloomslice::persist::manifest::{Manifest, file_checksum};

#[expect(dead_code, reason = "not every test binary uses every shared helper")]
mod common;
use common::{fails, ok, run, run_stdin};

/// 40 sets of 60 keys in filters of 1024 bits (many false positives), as
/// `i.bsi` in `dir`; returns the query keys (half present, half absent).
fn collection(dir: &Path) -> Vec<String> {
    let mut tsv = String::new();
    for s in 0..40 {
        for k in 0..60 {
            tsv.push_str(&format!("set-{s:02}\tkey-{s}-{k}\n"));
        }
    }
    std::fs::write(dir.join("sets.tsv"), tsv).unwrap();
    ok(&run(&["build", "i.bsi", "--tsv", "sets.tsv", "--m", "1024", "--k", "3"], dir));
    let mut keys: Vec<String> = (0..40).map(|s| format!("key-{s}-{}", s % 60)).collect();
    keys.extend((0..40).map(|i| format!("absent-{i}")));
    keys
}

fn query(dir: &Path, target: &str, keys: &[String], extra: &[&str]) -> String {
    let mut args = vec!["query", target];
    args.extend_from_slice(extra);
    args.extend(keys.iter().map(String::as_str));
    ok(&run(&args, dir))
}

#[test]
fn shards_and_merged_index_answer_as_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let keys = collection(d);
    for extra in [&[][..], &["--json"], &["--count", "--json"]] {
        let want = query(d, "i.bsi", &keys, extra);
        assert!(want.contains("set-"));
        for k in [1usize, 3, 4, 8] {
            let out_dir = format!("s{k}-{}", extra.len());
            let report = ok(&run(&["split", "i.bsi", "--shards", &k.to_string(), &out_dir], d));
            assert_eq!(report.lines().count(), k + 1, "{report}");
            let m = Manifest::read(&d.join(&out_dir).join("manifest.json")).unwrap();
            assert_eq!(m.files.len(), k);
            assert_eq!(m.set_count(), 40);
            let sizes: Vec<usize> = m.files.iter().map(|f| f.sets.len()).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
            assert_eq!(query(d, &out_dir, &keys, extra), want, "{k} shards, directory, {extra:?}");
            let manifest = format!("{out_dir}/manifest.json");
            assert_eq!(query(d, &manifest, &keys, extra), want, "{k} shards, manifest file");
            assert_eq!(query(d, &out_dir, &keys, &[extra, &["--no-verify"]].concat()), want);
            let merged = format!("merged-{k}-{}.bsi", extra.len());
            ok(&run(&["merge", &out_dir, &merged], d));
            assert_eq!(query(d, &merged, &keys, extra), want, "{k} shards merged");
        }
    }
    // Keys from stdin go through the same path.
    let stdin_keys = keys.join("\n");
    let from_stdin = |target: &str| ok(&run_stdin(&["query", target], d, stdin_keys.as_bytes()));
    assert_eq!(from_stdin("s4-0"), from_stdin("i.bsi"));
}

#[test]
fn bad_arguments_and_manifests_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let keys = collection(d);
    fails(&run(&["split", "i.bsi", "--shards", "0", "out"], d), 2);
    assert!(fails(&run(&["split", "i.bsi", "--shards", "41", "out"], d), 1).contains("cannot be split"));
    fails(&run(&["split", "missing.bsi", "--shards", "2", "out"], d), 1);
    ok(&run(&["split", "i.bsi", "--shards", "2", "out"], d));
    assert!(fails(&run(&["split", "i.bsi", "--shards", "2", "out"], d), 1).contains("already exists"));
    assert!(fails(&run(&["merge", "out", "i.bsi"], d), 1).contains("already exists"));

    // Not a manifest, and a manifest that leaves its directory.
    std::fs::create_dir(d.join("junk")).unwrap();
    std::fs::write(d.join("junk/manifest.json"), "{\"format\": 1").unwrap();
    assert!(fails(&run(&["query", "junk", "x"], d), 1).contains("manifest"));
    fails(&run(&["merge", "junk", "x.bsi"], d), 1);
    fails(&run(&["query", "nothing-here", "x"], d), 1);
    let text = std::fs::read_to_string(d.join("out/manifest.json")).unwrap();
    std::fs::write(d.join("junk/manifest.json"), text.replace("shard-0000.bsi", "../i.bsi")).unwrap();
    assert!(fails(&run(&["query", "junk", "x"], d), 1).contains("plain name"));

    // A shard file changed after the split: its checksum no longer matches.
    ok(&run(&["split", "i.bsi", "--shards", "2", "changed"], d));
    let mut tsv = String::new();
    tsv.push_str("extra\tx\n");
    std::fs::write(d.join("extra.tsv"), tsv).unwrap();
    ok(&run(&["add", "changed/shard-0001.bsi", "--tsv", "extra.tsv"], d));
    assert!(fails(&run(&["merge", "changed", "m.bsi"], d), 1).contains("does not match the manifest"));
    assert!(fails(&run(&["query", "changed", "x"], d), 1).contains("does not match the manifest"));
    assert!(!d.join("m.bsi").exists());

    // A shard of other parameters, with a manifest whose checksums match.
    ok(&run(&["split", "i.bsi", "--shards", "2", "mixed"], d));
    ok(&run(&["build", "other.bsi", "--tsv", "sets.tsv", "--m", "2048", "--k", "3"], d));
    std::fs::copy(d.join("other.bsi"), d.join("mixed/shard-0001.bsi")).unwrap();
    let mut m = Manifest::read(&d.join("mixed/manifest.json")).unwrap();
    (m.files[1].bytes, m.files[1].xxh3) = file_checksum(&d.join("mixed/shard-0001.bsi")).unwrap();
    m.write(&d.join("mixed/manifest.json")).unwrap();
    let err = fails(&run(&["merge", "mixed", "m.bsi"], d), 1);
    assert!(err.contains("parameters") && err.contains("m = 2048"), "{err}");
    fails(&run(&["query", "mixed", "x"], d), 1);
    assert!(!d.join("m.bsi").exists());

    // Sequence search needs one index file.
    std::fs::write(d.join("r.fa"), ">r\nACGTACGTACGT\n").unwrap();
    assert!(fails(&run(&["query", "out", "--seqs", "r.fa"], d), 2).contains("manifest"));

    // The intact split still answers, and merges.
    assert_eq!(query(d, "out", &keys, &[]), query(d, "i.bsi", &keys, &[]));
}

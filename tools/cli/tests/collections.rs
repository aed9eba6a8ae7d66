//! The CLI on collection files: `build` sizes every set from its own keys
//! and prints the layout, every command reads and writes collections of
//! several parts (and older one-part index files), a set that outgrows its
//! filter says so, and bad input is a one-line error.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

#[expect(dead_code, reason = "not every test binary uses every shared helper")]
mod common;
use common::{bin, fails, ok, run};

/// Runs the binary with `args` in `dir`, its stdin read from a file of
/// `input` (a pipe written before the output is read could fill both ways).
fn run_stdin(args: &[&str], dir: &Path, input: &[u8]) -> Output {
    let path = dir.join(".stdin");
    std::fs::write(&path, input).unwrap();
    let stdin = std::fs::File::open(&path).unwrap();
    bin().args(args).current_dir(dir).stdin(stdin).output().unwrap()
}

/// A fresh directory with the [`skewed`] sets built into `c.bsi`; returns
/// it and the sets.
fn built_skewed() -> (tempfile::TempDir, BTreeMap<String, Vec<String>>) {
    let dir = tempfile::tempdir().unwrap();
    let sets = skewed(dir.path());
    ok(&run(&["build", "c.bsi", "--dir", "sets"], dir.path()));
    (dir, sets)
}

/// Sets of skewed sizes as files under `dir/sets`: 30 tiny sets of 3 keys,
/// 6 of 150, and one of 4 000 (with a repeated line, which counts once).
fn skewed(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let mut sets = BTreeMap::new();
    for i in 0..30 {
        sets.insert(format!("tiny-{i:02}"), (0..3).map(|k| format!("t{i}-{k}")).collect());
    }
    for i in 0..6 {
        sets.insert(format!("mid-{i}"), (0..150).map(|k| format!("m{i}-{k}")).collect());
    }
    sets.insert("big".to_owned(), (0..4000).map(|k| format!("b-{k}")).collect::<Vec<_>>());
    write_set_files(dir, &sets);
    let big = dir.join("sets").join("big");
    let text = std::fs::read_to_string(&big).unwrap() + "b-0\n";
    std::fs::write(big, text).unwrap();
    sets
}

/// Writes every set as the file `dir/sets/<name>`, one key a line.
fn write_set_files(dir: &Path, sets: &BTreeMap<String, Vec<String>>) {
    std::fs::create_dir_all(dir.join("sets")).unwrap();
    for (name, keys) in sets {
        std::fs::write(dir.join("sets").join(name), keys.join("\n") + "\n").unwrap();
    }
}

/// `(key, sets)` of every answer line of `query`.
fn answers(out: &str) -> BTreeMap<String, Vec<String>> {
    out.lines()
        .map(|line| {
            let (key, sets) = line.split_once('\t').unwrap();
            let sets = if sets.is_empty() { Vec::new() } else { sets.split(',').map(str::to_owned).collect() };
            (key.to_owned(), sets)
        })
        .collect()
}

/// Every key of every set is answered with (at least) its set.
fn no_false_negatives(d: &Path, index: &str, sets: &BTreeMap<String, Vec<String>>) {
    let all: Vec<&str> = sets.values().flatten().map(String::as_str).collect();
    let out = ok(&run_stdin(&["query", index], d, all.join("\n").as_bytes()));
    let got = answers(&out);
    for (set, keys) in sets {
        for key in keys {
            assert!(got[key].contains(set), "{index}: {key} of {set} answered {:?}", got[key]);
        }
    }
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap()
}

/// The part rows of `build`'s layout table.
fn part_rows(summary: &str) -> usize {
    let start = summary.lines().position(|l| l.contains("m (bits)")).unwrap();
    summary.lines().skip(start + 1).take_while(|l| l.starts_with("  ")).count()
}

#[test]
fn build_sizes_each_set_from_its_keys_and_prints_the_layout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sets = skewed(d);
    let out = ok(&run(&["build", "c.bsi", "--dir", "sets"], d));
    assert!(out.contains("sets: 37, keys: 4991 lines, 4990 distinct"), "{out}");
    assert!(out.contains("target FP 0.01 per set, k = 7") && out.contains("keys per set"), "{out}");
    assert!(out.contains("per-set optimum") && out.contains("predicted FP per set: mean"), "{out}");
    let parts = part_rows(&out);
    assert!(parts >= 2, "a skewed collection gets several parts: {out}");
    no_false_negatives(d, "c.bsi", &sets);

    // inspect shows the same parts, and every set once.
    let v = json(&ok(&run(&["inspect", "c.bsi", "--json"], d)));
    let listed = v["parts"].as_array().unwrap();
    assert_eq!(listed.len(), parts);
    assert_eq!(listed.iter().map(|p| p["sets"].as_u64().unwrap()).sum::<u64>(), 37);
    assert_eq!((v["sets"].as_u64(), v["fp"].as_f64()), (Some(37), Some(0.01)));
    let ms: Vec<u64> = listed.iter().map(|p| p["m"].as_u64().unwrap()).collect();
    assert!(ms.windows(2).all(|w| w[0] < w[1]), "parts by ascending m: {ms:?}");
    for row in v["set_details"].as_array().unwrap() {
        assert!(row["fp_bound"].as_f64().unwrap() <= 0.011, "{row}");
    }
    let text = ok(&run(&["inspect", "c.bsi"], d));
    assert!(text.contains(&format!("layout: {parts} parts")) && text.contains("FP bound"), "{text}");

    // Counting and thresholds: all of mid-3's keys, and one absent key.
    let mut keys: Vec<String> = sets["mid-3"].clone();
    keys.push("absent".into());
    let out = ok(&run_stdin(&["query", "c.bsi", "--count", "--threshold", "0.99"], d, keys.join("\n").as_bytes()));
    assert!(out.starts_with("mid-3\t150\t0.9934\n"), "{out}");
    let v = json(&ok(&run(&["query", "c.bsi", "--json", "b-17"], d)));
    assert!(v["sets"].as_array().unwrap().contains(&"big".into()), "{v}");

    // The knobs: one part costs more bytes than the default layout.
    let one = ok(&run(&["build", "one.bsi", "--dir", "sets", "--max-parts", "1"], d));
    assert_eq!(part_rows(&one), 1, "{one}");
    no_false_negatives(d, "one.bsi", &sets);
    let least = ok(&run(&["build", "least.bsi", "--dir", "sets", "--query-cost-weight", "0"], d));
    assert!(part_rows(&least) >= parts, "{least}");
    let tight = ok(&run(&["build", "tight.bsi", "--dir", "sets", "--fp", "0.001"], d));
    assert!(tight.contains("target FP 0.001 per set, k = 10"), "{tight}");

    // The same sets from a TSV (and from stdin) give the same answers.
    let tsv: String = sets.iter().flat_map(|(s, keys)| keys.iter().map(move |k| format!("{s}\t{k}\n"))).collect();
    std::fs::write(d.join("sets.tsv"), &tsv).unwrap();
    ok(&run(&["build", "t.bsi", "--tsv", "sets.tsv"], d));
    ok(&run_stdin(&["build", "s.bsi", "--tsv", "-"], d, tsv.as_bytes()));
    let probe: Vec<String> = (0..300).map(|i| format!("probe-{i}")).chain(["b-5".into(), "t3-1".into()]).collect();
    let want = ok(&run_stdin(&["query", "c.bsi"], d, probe.join("\n").as_bytes()));
    assert_eq!(ok(&run_stdin(&["query", "t.bsi"], d, probe.join("\n").as_bytes())), want);
    assert_eq!(ok(&run_stdin(&["query", "s.bsi"], d, probe.join("\n").as_bytes())), want);
}

#[test]
fn a_set_that_outgrows_its_filter_says_so_and_keeps_every_key() {
    let (dir, mut sets) = built_skewed();
    let d = dir.path();
    let parts_before = json(&ok(&run(&["inspect", "c.bsi", "--json"], d)))["parts"].as_array().unwrap().len();

    // 2 000 new keys for a set of 3: it gains filters in larger parts.
    let grow: Vec<String> = (0..2000).map(|k| format!("g-{k}")).collect();
    let tsv: String = grow.iter().map(|k| format!("tiny-04\t{k}\n")).collect();
    let out = ok(&run_stdin(&["update", "c.bsi", "--tsv", "-"], d, tsv.as_bytes()));
    assert!(out.contains("updated 1 sets and created 0"), "{out}");
    assert!(out.contains("set tiny-04 outgrew its filter") && out.contains("union of its"), "{out}");
    sets.get_mut("tiny-04").unwrap().extend(grow.iter().cloned());
    no_false_negatives(d, "c.bsi", &sets);
    let v = json(&ok(&run(&["inspect", "c.bsi", "--json"], d)));
    assert_eq!(v["grown_sets"], 1);
    let row = v["set_details"].as_array().unwrap().iter().find(|r| r["name"] == "tiny-04").unwrap().clone();
    assert!(row["filters"].as_u64().unwrap() >= 2, "{row}");
    assert!(row["fp_bound"].as_f64().unwrap() < 0.02, "{row}");
    // A grown set is counted once per key, whatever the filters holding it.
    let out = ok(&run_stdin(&["query", "c.bsi", "--count", "--json"], d, grow.join("\n").as_bytes()));
    let v = json(&out);
    let row = v["sets"].as_array().unwrap().iter().find(|r| r["set"] == "tiny-04").unwrap().clone();
    assert_eq!(row["count"], 2000, "{row}");
    // ... and reported once per key.
    let out = ok(&run(&["query", "c.bsi", "g-7", "t4-0"], d));
    for (_, hits) in answers(&out) {
        assert_eq!(hits.iter().filter(|s| *s == "tiny-04").count(), 1, "{out}");
    }

    // A new set larger than every part gets a part of its own.
    let huge: Vec<String> = (0..20_000).map(|k| format!("h-{k}")).collect();
    let tsv: String = huge.iter().map(|k| format!("huge\t{k}\n")).collect();
    std::fs::write(d.join("huge.tsv"), tsv).unwrap();
    let out = ok(&run(&["add", "c.bsi", "--tsv", "huge.tsv"], d));
    assert!(out.contains("added 1 sets") && out.contains("new part"), "{out}");
    sets.insert("huge".into(), huge);
    no_false_negatives(d, "c.bsi", &sets);
    let v = json(&ok(&run(&["inspect", "c.bsi", "--json"], d)));
    assert!(v["parts"].as_array().unwrap().len() > parts_before, "{v}");

    // update --create places a new set by its size; remove takes a set away.
    ok(&run_stdin(&["update", "c.bsi", "--tsv", "-", "--create"], d, b"fresh\tf-1\nfresh\tf-2\n"));
    assert_eq!(ok(&run(&["query", "c.bsi", "f-2"], d)), "f-2\tfresh\n");
    let out = ok(&run(&["remove", "c.bsi", "tiny-04", "big"], d));
    assert!(out.contains("removed 2 sets") && out.contains("now 37 sets"), "{out}");
    let out = ok(&run(&["query", "c.bsi", "g-7", "b-9"], d));
    assert!(!out.contains("tiny-04") && !out.contains("big"), "{out}");
    sets.remove("tiny-04");
    sets.remove("big");
    no_false_negatives(d, "c.bsi", &sets);
    assert_eq!(json(&ok(&run(&["inspect", "c.bsi", "--json"], d)))["grown_sets"], 0);
}

#[test]
fn sequences_are_sized_from_their_kmers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("g")).unwrap();
    // A short genome and a long one (a fixed pseudo-random sequence).
    let mut x = 12345u64;
    let mut base = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b"ACGT"[(x >> 33) as usize % 4]
    };
    let short: Vec<u8> = (0..60).map(|_| base()).collect();
    let long: Vec<u8> = (0..20_000).map(|_| base()).collect();
    std::fs::write(d.join("g/short.fa"), [&b">s\n"[..], &short, b"\n"].concat()).unwrap();
    std::fs::write(d.join("g/long.fa"), [&b">l\n"[..], &long, b"\n"].concat()).unwrap();
    let out = ok(&run(&["build", "g.bsi", "--seqs", "g", "--kmer", "21"], d));
    assert!(out.contains("k-mers: k = 21") && part_rows(&out) == 2, "{out}");
    let reads =
        format!(">r1\n{}\n>r2\n{}\n", String::from_utf8_lossy(&short[5..55]), String::from_utf8_lossy(&long[100..300]));
    let out = ok(&run_stdin(&["query", "g.bsi", "--seqs", "-", "--threshold", "1"], d, reads.as_bytes()));
    assert!(out.contains("r1\tshort.fa:30") && out.contains("r2\tlong.fa:180"), "{out}");
    let v = json(&ok(&run(&["inspect", "g.bsi", "--json"], d)));
    assert_eq!(v["kmer_length"], 21);
}

#[test]
fn bench_and_demo_work_on_collection_files() {
    let (dir, _) = built_skewed();
    let d = dir.path();
    let out = ok(&run(&["bench", "c.bsi", "--queries", "2000"], d));
    assert!(out.contains("parts") && out.contains("mmap") && out.contains("batch"), "{out}");
    let out =
        ok(&run(&["demo", "--filters", "20", "--queries", "2000", "--naive-queries", "100", "--save", "p.bsi"], d));
    assert!(out.contains("set index m=fix") && out.contains("set index: each set sized from its own keys"), "{out}");
    let v = json(&ok(&run(&["inspect", "p.bsi", "--json"], d)));
    assert_eq!((v["parts"].as_array().unwrap().len(), v["m"].as_u64()), (1, Some(100_992)));
}

#[test]
fn fixed_sizes_give_one_part() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sets = skewed(d);
    let out = ok(&run(&["build", "n.bsi", "--dir", "sets", "--n-exp", "5000"], d));
    assert!(out.contains("params: m = 50496 bits, k = 7"), "{out}");
    let v = json(&ok(&run(&["inspect", "n.bsi", "--json"], d)));
    assert_eq!((v["parts"].as_array().unwrap().len(), v["fp"].as_f64()), (1, Some(0.01)));
    no_false_negatives(d, "n.bsi", &sets);
    ok(&run(&["build", "m.bsi", "--dir", "sets", "--m", "60000", "--k", "5"], d));
    let v = json(&ok(&run(&["inspect", "m.bsi", "--json"], d)));
    assert_eq!((v["m"].as_u64(), v["k"].as_u64()), (Some(60_000), Some(5)));
    no_false_negatives(d, "m.bsi", &sets);
}

#[test]
fn bad_sizing_and_damaged_collections_are_one_line_errors() {
    let (dir, _) = built_skewed();
    let d = dir.path();
    let bytes = std::fs::read(d.join("c.bsi")).unwrap();
    let mut flipped = bytes.clone();
    let n = flipped.len();
    flipped[n / 2] ^= 0x10;
    std::fs::write(d.join("flipped.bsi"), &flipped).unwrap();
    std::fs::write(d.join("short.bsi"), &bytes[..bytes.len() / 3]).unwrap();
    let cases: &[(&[&str], i32)] = &[
        (&["build", "x.bsi", "--dir", "sets", "--fp", "0"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--fp", "1"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--fp", "1.5"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--fp", "-0.1"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--fp", "nan"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--fp", "1e-300"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--n-exp", "0"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--max-parts", "0"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--max-parts", "65"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--query-cost-weight", "-1"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--query-cost-weight", "inf"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--n-exp", "100", "--max-parts", "2"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--n-exp", "100", "--query-cost-weight", "0.5"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--m", "1000", "--k", "3", "--fp", "0.1"], 2),
        (&["build", "x.bsi", "--dir", "sets", "--m", "1000", "--k", "3", "--max-parts", "2"], 2),
        (&["query", "flipped.bsi", "b-1"], 1),
        (&["query", "short.bsi", "b-1"], 1),
        (&["inspect", "flipped.bsi"], 1),
        (&["inspect", "short.bsi"], 1),
        (&["bench", "flipped.bsi"], 1),
        (&["update", "flipped.bsi", "--dir", "sets"], 1),
        (&["remove", "short.bsi", "big"], 1),
        (&["split", "short.bsi", "--shards", "2", "out"], 1),
    ];
    for (args, code) in cases {
        fails(&run(args, d), *code);
    }
    assert!(!d.join("x.bsi").exists(), "a failed build leaves no file");
    assert_eq!(std::fs::read(d.join("flipped.bsi")).unwrap(), flipped, "a damaged file is left alone");
}

#[test]
fn split_merge_and_add_from_keep_the_parts_and_the_answers() {
    let (dir, mut sets) = built_skewed();
    let d = dir.path();
    let grow: String = (0..600).map(|k| format!("tiny-07\tg-{k}\n")).collect();
    ok(&run_stdin(&["update", "c.bsi", "--tsv", "-"], d, grow.as_bytes()));
    sets.get_mut("tiny-07").unwrap().extend((0..600).map(|k| format!("g-{k}")));
    let before = json(&ok(&run(&["inspect", "c.bsi", "--json"], d)));
    let mut probe: Vec<String> = sets.values().flatten().step_by(3).cloned().collect();
    probe.extend((0..2000).map(|i| format!("absent-{i}")));
    let input = probe.join("\n");
    let want = ok(&run_stdin(&["query", "c.bsi"], d, input.as_bytes()));
    let want_count = ok(&run_stdin(&["query", "c.bsi", "--count", "--json"], d, input.as_bytes()));
    for k in ["1", "3", "5"] {
        let out_dir = format!("s{k}");
        let report = ok(&run(&["split", "c.bsi", "--shards", k, &out_dir], d));
        assert_eq!(report.lines().count(), k.parse::<usize>().unwrap() + 1, "{report}");
        assert_eq!(ok(&run_stdin(&["query", &out_dir], d, input.as_bytes())), want, "{k} shards");
        assert_eq!(ok(&run_stdin(&["query", &out_dir, "--count", "--json"], d, input.as_bytes())), want_count);
        let merged = format!("m{k}.bsi");
        ok(&run(&["merge", &out_dir, &merged], d));
        assert_eq!(ok(&run_stdin(&["query", &merged], d, input.as_bytes())), want, "{k} shards merged");
        let v = json(&ok(&run(&["inspect", &merged, "--json"], d)));
        assert_eq!(v["parts"], before["parts"], "{k} shards merged: the same parts");
        assert_eq!(v["grown_sets"], 1);
    }
    no_false_negatives(d, "m5.bsi", &sets);

    // add --from: the sets of another collection, parts of other m included.
    std::fs::create_dir(d.join("more")).unwrap();
    std::fs::write(d.join("more/alpha"), "a-1\na-2\n").unwrap();
    let large: Vec<String> = (0..30_000).map(|k| format!("l-{k}")).collect();
    std::fs::write(d.join("more/large"), large.join("\n")).unwrap();
    ok(&run(&["build", "more.bsi", "--dir", "more"], d));
    let out = ok(&run(&["add", "c.bsi", "--from", "more.bsi"], d));
    assert!(out.contains("added 2 sets") && out.contains("new part"), "{out}");
    sets.insert("alpha".into(), vec!["a-1".into(), "a-2".into()]);
    sets.insert("large".into(), large);
    no_false_negatives(d, "c.bsi", &sets);
    let e = fails(&run(&["add", "c.bsi", "--from", "more.bsi"], d), 1);
    assert!(e.contains("already in"), "{e}");
    ok(&run(&["build", "tight.bsi", "--dir", "more", "--fp", "0.001"], d));
    let e = fails(&run(&["add", "c.bsi", "--from", "tight.bsi"], d), 1);
    assert!(e.contains("other parameters"), "{e}");
}

#[test]
fn format_1_index_files_open_as_one_part_and_are_upgraded_by_writers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let params = bloomslice::BloomParams::for_capacity(1000, 0.01).unwrap();
    let mut index = bloomslice::SlicedIndex::new(params);
    let mut names = bloomslice::SetNames::new();
    for (id, name) in [(0u64, "old-a"), (1, "old-b")] {
        let mut f = bloomslice::BloomFilter::new(params).unwrap();
        for k in 0..50 {
            f.insert(format!("{name}-{k}").as_bytes());
        }
        index.insert_filter(id, &f).unwrap();
        names.insert(id, name.as_bytes().to_vec()).unwrap();
    }
    bloomslice::persist::save(d.join("v1.bsi"), &index, &names).unwrap();
    let v = json(&ok(&run(&["inspect", "v1.bsi", "--json"], d)));
    assert_eq!((v["format_version"].as_str(), v["parts"].as_array().unwrap().len()), (Some("1.2"), 1));
    assert_eq!(v["m"].as_u64(), Some(params.m()));
    assert_eq!(ok(&run(&["query", "v1.bsi", "old-b-7"], d)), "old-b-7\told-b\n");
    let out = ok(&run_stdin(&["query", "v1.bsi", "--count", "--threshold", "1"], d, b"old-a-1\nold-a-2\n"));
    assert_eq!(out, "old-a\t2\t1.0000\n");
    ok(&run(&["bench", "v1.bsi", "--queries", "1000"], d));
    ok(&run(&["split", "v1.bsi", "--shards", "2", "s"], d));
    assert_eq!(ok(&run(&["query", "s", "old-a-3"], d)), "old-a-3\told-a\n");
    // A writer saves a collection file (format 2), answering as before.
    ok(&run_stdin(&["update", "v1.bsi", "--tsv", "-"], d, b"old-a\tnew-key\n"));
    let v = json(&ok(&run(&["inspect", "v1.bsi", "--json"], d)));
    assert_eq!(v["format_version"].as_str(), Some("2.0"));
    assert_eq!(ok(&run(&["query", "v1.bsi", "new-key", "old-b-7"], d)), "new-key\told-a\nold-b-7\told-b\n");
}

/// `build` writes a level index file where levels pay (`--flat` a set
/// index file), prints its levels; `query` answers every key with its set,
/// `inspect` shows the levels; `add`, `update` and `remove` change it (the
/// written sets beside the levels, said so), and the commands that take
/// set index files only refuse it in one line.
#[test]
fn build_levels_then_query_inspect_and_write() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = (0..290).map(|i| (format!("small-{i:03}"), (0..3).map(|k| format!("s{i}-{k}")).collect()));
    let large = (0..10).map(|i| (format!("large-{i}"), (0..2000).map(|k| format!("l{i}-{k}")).collect()));
    let mut sets: BTreeMap<String, Vec<String>> = small.chain(large).collect();
    write_set_files(d, &sets);
    let out = ok(&run(&["build", "l.bsi", "--dir", "sets"], d));
    assert!(out.contains("300 sets") && out.contains("2 levels, the top one"), "{out}");
    no_false_negatives(d, "l.bsi", &sets);
    let text = ok(&run(&["inspect", "l.bsi"], d));
    assert!(text.contains("level index file, format 3.1") && text.contains("300 sets"), "{text}");
    let j = json(&ok(&run(&["inspect", "l.bsi", "--json"], d)));
    assert_eq!((j["sets"].as_u64(), j["depth"].as_u64()), (Some(300), Some(2)));
    let flat = ok(&run(&["build", "f.bsi", "--dir", "sets", "--flat"], d));
    assert!(!flat.contains("levels"), "{flat}");
    assert!(ok(&run(&["inspect", "f.bsi"], d)).contains("format version: 2.0"));

    // Writes: a new set, keys added to a set of the levels, one removed.
    std::fs::write(d.join("more.tsv"), "more\tx1\nmore\tx2\n").unwrap();
    let out = ok(&run(&["add", "l.bsi", "--tsv", "more.tsv"], d));
    assert!(out.contains("now 301 sets") && out.contains("1 sets are beside the levels"), "{out}");
    sets.insert("more".into(), vec!["x1".into(), "x2".into()]);
    std::fs::write(d.join("grow.tsv"), "small-007\tnew-key\n").unwrap();
    ok(&run(&["update", "l.bsi", "--tsv", "grow.tsv"], d));
    sets.get_mut("small-007").unwrap().push("new-key".into());
    let out = ok(&run(&["remove", "l.bsi", "large-3"], d));
    assert!(out.contains("now 300 sets") && out.contains("1 of their sets are hidden"), "{out}");
    let removed = sets.remove("large-3").unwrap();
    no_false_negatives(d, "l.bsi", &sets);
    let got = answers(&ok(&run_stdin(&["query", "l.bsi"], d, removed[..50].join("\n").as_bytes())));
    assert!(removed[..50].iter().all(|key| !got[key].iter().any(|s| s == "large-3")));

    let err = fails(&run(&["add", "l.bsi", "--from", "f.bsi"], d), 1);
    assert!(err.contains("is a level index file") && err.contains("--flat"), "{err}");
    let err = fails(&run(&["split", "l.bsi", "--shards", "2", "sh"], d), 1);
    assert!(err.contains("is a level index file"), "{err}");
    let err = fails(&run(&["build", "s.bsi", "--seqs", "sets", "--kmer", "5", "--levels"], d), 2);
    assert!(err.contains("--levels"), "{err}");
    let err = fails(&run(&["build", "s.bsi", "--dir", "sets", "--levels", "--flat"], d), 2);
    assert!(err.contains("--flat"), "{err}");
}

//! The `bloomslice` binary's input and output streams, in real processes:
//! a closed stdout ends every subcommand quietly, `query` streams stdin in
//! bounded memory and answers before its input ends, and keys and names
//! that are not UTF-8 or hold separators print reversibly.

use std::io::{BufRead, Write};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine;

#[expect(dead_code, reason = "not every test binary uses every shared helper")]
mod common;
use common::{bin, fruit_rock_and_veg, ok, run, run_stdin, spawn_piped, wait_with_peak};
#[path = "common/unescape.rs"]
mod unescape;
use unescape::unescape;

#[test]
fn a_closed_stdout_ends_every_subcommand_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let dir = fruit_rock_and_veg();
    let d = dir.path();
    let cases: &[&[&str]] = &[
        &["inspect", "i.bsi"],
        &["inspect", "i.bsi", "--json"],
        &["params"],
        &["params", "--n-exp", "1000"],
        &["bench", "i.bsi", "--queries", "2000"],
        &["query", "i.bsi", "apple", "pear"],
        &["query", "i.bsi", "--json", "apple"],
        &["query", "i.bsi", "--count", "apple"],
        &["query", "i.bsi"],
        &["build", "new.bsi", "--tsv", "sets.tsv", "--m", "4096", "--k", "3"],
        &["add", "i.bsi", "--tsv", "veg.tsv"],
        &["update", "i.bsi", "--tsv", "veg.tsv"],
        &["remove", "i.bsi", "veg"],
        &["demo", "--filters", "20", "--queries", "200", "--naive-queries", "20"],
        &["--help"],
        &["query", "--help"],
        &["--version"],
    ];
    for args in cases {
        let mut child = spawn_piped(args, d);
        // Close the reading end before the command writes anything.
        drop(child.stdout.take());
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(b"apple\ngranite\n");
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let quiet_end = out.status.success() || out.status.signal() == Some(libc::SIGPIPE);
        assert!(quiet_end, "{args:?}: {:?} {stderr}", out.status);
        let noise: Vec<&str> = stderr.lines().filter(|l| !args.contains(&"demo") || l.contains("panick")).collect();
        assert!(noise.is_empty(), "{args:?}: {stderr}");
    }
    // The writers did their work before they printed.
    assert!(d.join("new.bsi").exists());
    assert_eq!(ok(&run(&["query", "i.bsi", "leek"], d)), "leek\t\n");
}

#[test]
fn query_streams_four_million_keys_in_bounded_memory() {
    let dir = fruit_rock_and_veg();
    let d = dir.path();
    let n = 4_000_000u64;
    let mut keys = Vec::with_capacity(48 << 20);
    for i in 0..n {
        match i % 1_000_000 {
            0 => keys.extend_from_slice(b"apple\n"),
            1 => keys.extend_from_slice(b"granite\r\n"),
            _ => writeln!(keys, "key-{i}").unwrap(),
        }
    }
    std::fs::write(d.join("keys.txt"), &keys).unwrap();
    drop(keys);
    for count in [false, true] {
        let mut args = vec!["query", "i.bsi"];
        if count {
            args.extend(["--count", "--json"]);
        }
        let child = bin()
            .args(&args)
            .current_dir(d)
            .stdin(std::fs::File::open(d.join("keys.txt")).unwrap())
            .stdout(std::fs::File::create(d.join("out.txt")).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (status, peak) = wait_with_peak(child);
        assert!(status.success(), "{args:?}");
        eprintln!("query {args:?}: 4 M keys, peak RSS {} MiB", peak >> 20);
        // Reading all keys first took about 150 bytes a key (600 MB here).
        // Measured: 8 MiB.
        assert!(peak < 32 << 20, "{args:?}: peak {} MiB", peak >> 20);
        let out = std::fs::read_to_string(d.join("out.txt")).unwrap();
        if count {
            // Counts over all chunks (at least the 4 true hits of each set;
            // a 4096-bit filter has false positives among 4 M keys),
            // fractions over all keys.
            let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
            assert_eq!(v["keys"], n);
            for set in ["fruit", "rock"] {
                let row = v["sets"].as_array().unwrap().iter().find(|r| r["set"] == set).unwrap();
                let c = row["count"].as_u64().unwrap();
                assert!((4..100).contains(&c), "{out}");
                assert_eq!(row["fraction"].as_f64().unwrap(), c as f64 / n as f64);
            }
        } else {
            assert_eq!(out.lines().count() as u64, n);
            assert_eq!(out.lines().filter(|l| *l == "apple\tfruit" || *l == "granite\trock").count(), 8);
        }
    }
}

#[test]
fn query_answers_before_its_input_ends() {
    let dir = fruit_rock_and_veg();
    let mut child = bin()
        .args(["query", "i.bsi"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    for (key, want) in [("apple", "apple\tfruit"), ("granite", "granite\trock")] {
        writeln!(stdin, "{key}").unwrap();
        stdin.flush().unwrap();
        // Stdin is still open: the answer must come anyway.
        assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap(), want);
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// Splits on `sep` where it is not escaped.
fn split_unescaped(s: &str, sep: u8) -> Vec<&str> {
    let b = s.as_bytes();
    let (mut parts, mut start, mut i) = (Vec::new(), 0, 0);
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == sep {
            parts.push(&s[start..i]);
            start = i + 1;
        }
        i += 1;
    }
    parts.push(&s[start..]);
    parts
}

#[test]
fn names_and_keys_print_reversibly_in_plain_and_json() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sites = d.join("sites");
    std::fs::create_dir(&sites).unwrap();
    // Three names the old output printed alike (`bad��`), and separators.
    let names: Vec<&[u8]> = vec![
        b"bad\xff\xfe",
        b"bad\xef\xbf\xbd\xef\xbf\xbd",
        b"bad\xfe\xff",
        b"tab\there",
        b"new\nline",
        b"com,ma",
        b"back\\slash",
        b"#7",
        b"cr\r",
    ];
    for name in &names {
        std::fs::write(sites.join(std::ffi::OsStr::from_bytes(name)), b"shared\r\n").unwrap();
    }
    ok(&run(&["build", "i.bsi", "--dir", "sites", "--m", "4096", "--k", "3"], d));
    let mut want: Vec<Vec<u8>> = names.iter().map(|n| n.to_vec()).collect();
    want.sort();
    // Plain: one line, tab-separated, comma-separated sets, all decodable.
    let out = ok(&run(&["query", "i.bsi", "shared"], d));
    assert_eq!(out.lines().count(), 1, "{out}");
    let line = out.strip_suffix('\n').unwrap();
    let cols = split_unescaped(line, b'\t');
    assert_eq!(cols.len(), 2, "{line}");
    assert_eq!(unescape(cols[0]), b"shared");
    let mut got: Vec<Vec<u8>> = split_unescaped(cols[1], b',').into_iter().map(unescape).collect();
    got.sort();
    assert_eq!(got, want, "{line}");
    // JSON: exact bytes, as strings or base64.
    let out = ok(&run(&["query", "i.bsi", "--json", "shared"], d));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut got: Vec<Vec<u8>> = v["sets"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().into()).collect();
    got.extend(v["sets_b64"].as_array().unwrap().iter().map(|s| b64.decode(s.as_str().unwrap()).unwrap()));
    got.sort();
    assert_eq!(got, want, "{out}");
    let out = ok(&run(&["query", "i.bsi", "--count", "--json", "shared"], d));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let mut got: Vec<Vec<u8>> = v["sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| match s.get("set") {
            Some(n) => n.as_str().unwrap().into(),
            None => b64.decode(s["set_b64"].as_str().unwrap()).unwrap(),
        })
        .collect();
    got.sort();
    assert_eq!(got, want, "{out}");
    let out = ok(&run(&["inspect", "i.bsi", "--json"], d));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["set_details"].as_array().unwrap().len(), names.len());
    // Keys: not UTF-8 in, base64 out; a trailing CR is stripped from stdin
    // and file lines, kept in arguments.
    let key = std::ffi::OsStr::from_bytes(b"k\xff,\t");
    let out = bin().args(["query", "i.bsi", "--json"]).arg(key).current_dir(d).output().unwrap();
    let v: serde_json::Value = serde_json::from_str(ok(&out).trim()).unwrap();
    assert_eq!(b64.decode(v["key_b64"].as_str().unwrap()).unwrap(), b"k\xff,\t");
    let out = ok(&run(&["query", "i.bsi", "shared\r"], d));
    assert_eq!(out, "shared\\r\t\n", "an argument keeps its CR (and matches nothing)");
    let out = ok(&run_stdin(&["query", "i.bsi", "--count"], d, b"shared\r\n"));
    assert_eq!(out.lines().count(), names.len(), "stdin CRLF key matches every set (file lines were CRLF too)");
    // The rule is documented in --help.
    let help = ok(&run(&["--help"], d));
    assert!(help.contains("`\\xHH`") && help.contains("key_b64") && help.contains("carriage return"), "{help}");
}

//! Helpers shared by the CLI test binaries: running the real binary and
//! measuring its memory. (`splitmix.rs` beside it is included by `#[path]`
//! where a test needs deterministic random data.)

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

/// The `bloomslice` binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bloomslice"))
}

/// Runs the binary with `args` in `dir`.
pub fn run(args: &[&str], dir: &Path) -> Output {
    bin().args(args).current_dir(dir).output().unwrap()
}

/// Starts the binary with `args` in `dir`, its stdin, stdout and stderr
/// piped to the test.
pub fn spawn_piped(args: &[&str], dir: &Path) -> Child {
    bin()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs the binary with `args` in `dir`, writing `stdin` to it.
pub fn run_stdin(args: &[&str], dir: &Path, stdin: &[u8]) -> Output {
    let mut child = spawn_piped(args, dir);
    // A command that fails before reading stdin closes the pipe first.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

/// A new directory holding the text `files` (name, contents) and index
/// `i.bsi` built from the first of them, a TSV (`--m 4096 --k 3`).
pub fn tsv_index(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    ok(&run(&["build", "i.bsi", "--tsv", files[0].0, "--m", "4096", "--k", "3"], dir.path()));
    dir
}

/// A directory with index `i.bsi` (sets `fruit`, `rock`, from `sets.tsv`)
/// and `veg.tsv` (set `veg`).
pub fn fruit_rock_and_veg() -> tempfile::TempDir {
    tsv_index(&[("sets.tsv", "fruit\tapple\nfruit\tpear\nrock\tgranite\n"), ("veg.tsv", "veg\tleek\n")])
}

/// A directory with index `i.bsi` of set `a` (key `x`, from `a.tsv`) and
/// `b.tsv` (set `b`, key `y`) for a writer to add.
pub fn index_of_a_with_b_waiting() -> tempfile::TempDir {
    tsv_index(&[("a.tsv", "a\tx\n"), ("b.tsv", "b\ty\n")])
}

/// A successful run's stdout.
pub fn ok(out: &Output) -> String {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Exit code `code` (2 usage, 1 runtime), one line on stderr starting with
/// `error:`, no panic; returns the stderr.
pub fn fails(out: &Output, code: i32) -> String {
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert!(stderr.starts_with("error:"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// Waits for `child` and returns its status and peak resident memory: its
/// own `VmHWM`, polled until it exits (the high-water mark only grows).
/// (`wait4`'s `ru_maxrss` is no use here: a spawned child inherits the
/// test process's high-water mark through `exec`.)
pub fn wait_with_peak(mut child: Child) -> (ExitStatus, u64) {
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status_file)
            && let Some(kib) = s.lines().find_map(|l| l.strip_prefix("VmHWM:"))
        {
            peak = peak.max(kib.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() * 1024);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status, peak);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

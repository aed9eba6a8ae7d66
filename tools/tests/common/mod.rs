//! Helpers shared by the CLI test binaries `files` and `streams`: running
//! the real binary and measuring its memory.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output};
use std::time::Duration;

/// The `bloomslice` binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bloomslice"))
}

/// Runs the binary with `args` in `dir`.
pub fn run(args: &[&str], dir: &Path) -> Output {
    bin().args(args).current_dir(dir).output().unwrap()
}

/// A successful run's stdout.
pub fn ok(out: &Output) -> String {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
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

//! Helpers shared by the CLI test binaries that measure the real binary's
//! memory.

use std::process::{Child, ExitStatus};
use std::time::Duration;

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

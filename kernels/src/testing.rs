//! Test support (feature `testing`, which the tests of this crate and of
//! the engine turn on): the kernel backend is chosen once per process, so a
//! test of another `BLOOMSLICE_KERNELS` setting runs its test binary again
//! in a child process.

use std::process::Command;

/// A command that runs this test binary again. Under user-mode emulation
/// (CI runs the aarch64 build with `qemu-aarch64`) the host cannot execute
/// the binary by itself: `BLOOMSLICE_TEST_RUNNER` then names the emulator,
/// which finds the target's libraries through `QEMU_LD_PREFIX`.
///
/// # Panics
///
/// When the path of the running binary is unknown.
pub fn this_test_binary() -> Command {
    let exe = std::env::current_exe().expect("test binary path");
    match std::env::var("BLOOMSLICE_TEST_RUNNER") {
        Ok(runner) if !runner.trim().is_empty() => {
            let mut command = Command::new(runner.trim());
            command.arg(exe);
            command
        }
        _ => Command::new(exe),
    }
}

/// Runs the test `test` of this test binary alone (`--exact`, one thread,
/// with the test harness arguments `args`) in a child process whose
/// `BLOOMSLICE_KERNELS` is `kernels`, and asserts that it passed.
///
/// # Panics
///
/// When the child cannot be started, or its test did not pass (the
/// message holds the child's output).
pub fn assert_passes_with_kernels(test: &str, kernels: &str, args: &[&str]) {
    let output = this_test_binary()
        .args([test, "--exact"])
        .args(args)
        .arg("--test-threads=1")
        .env("BLOOMSLICE_KERNELS", kernels)
        .output()
        .expect("spawn the test binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "BLOOMSLICE_KERNELS={kernels}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

//! Dispatch: `Kernels::detect` picks a backend this CPU can run, and
//! `BLOOMSLICE_KERNELS` overrides the choice. The choice is made once per
//! process, so each setting of the variable is checked in a child process
//! (this test binary, re-run with a filter).

use std::process::Command;

use bloomslice_kernels::{Backend, Kernels};

/// What `detect` must return for a given value of `BLOOMSLICE_KERNELS`: the
/// fastest available backend no faster than the one named, or the fastest
/// available one for `auto`, an unknown name or no variable.
fn expected(var: Option<&str>) -> Backend {
    let cap = var.and_then(Backend::from_name).unwrap_or(Backend::ALL[Backend::ALL.len() - 1]);
    Kernels::available()
        .into_iter()
        .map(|k| k.backend())
        .rfind(|&b| b as usize <= cap as usize)
        .expect("scalar is always available")
}

#[test]
fn detect_returns_an_available_backend() {
    let chosen = Kernels::detect();
    assert!(Kernels::available().iter().any(|k| k.backend() == chosen.backend()));
    assert!(std::ptr::eq(chosen, Kernels::detect()), "decided once");
    assert_eq!(Kernels::available()[0].backend(), Backend::Scalar);
}

/// Run by itself this checks the current process's environment; the test
/// below runs it in children with each setting.
#[test]
fn detect_honours_env() {
    let var = std::env::var("BLOOMSLICE_KERNELS").ok();
    assert_eq!(Kernels::detect().backend(), expected(var.as_deref()), "BLOOMSLICE_KERNELS={var:?}");
    println!("detect_honours_env checked BLOOMSLICE_KERNELS={var:?}");
}

/// A command that runs this test binary again. Under user-mode emulation
/// (CI runs the aarch64 build with `qemu-aarch64`) the host cannot execute
/// the binary by itself: `BLOOMSLICE_TEST_RUNNER` then names the emulator,
/// which finds the target's libraries through `QEMU_LD_PREFIX`.
fn this_test_binary() -> Command {
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

#[test]
fn env_override_in_child_processes() {
    for value in ["scalar", "portable", "neon", "avx2", "avx512", "auto", "SCALAR", "nonsense"] {
        let output = this_test_binary()
            .args(["detect_honours_env", "--exact", "--nocapture", "--test-threads=1"])
            .env("BLOOMSLICE_KERNELS", value)
            .output()
            .expect("spawn the test binary");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "BLOOMSLICE_KERNELS={value}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // The case the whole suite relies on to exercise the fallback path.
    assert_eq!(expected(Some("scalar")), Backend::Scalar);
}

/// On aarch64 NEON is always available and is what dispatch picks unless
/// `BLOOMSLICE_KERNELS` names the scalar or portable tier; elsewhere it is
/// never available, and naming it gives the portable tier. Fails, rather
/// than skips, on an aarch64 build where the NEON backend is missing.
#[test]
fn neon_is_the_aarch64_default() {
    let neon = Kernels::for_backend(Backend::Neon);
    assert_eq!(neon.is_some(), cfg!(target_arch = "aarch64"), "NEON is available exactly on aarch64");
    assert_eq!(Backend::from_name("NEON"), Some(Backend::Neon));
    assert_eq!(Backend::Neon.name(), "neon");
    if cfg!(target_arch = "aarch64") {
        for var in [None, Some("auto"), Some("neon"), Some("avx2"), Some("avx512")] {
            assert_eq!(expected(var), Backend::Neon, "BLOOMSLICE_KERNELS={var:?}");
        }
        assert_eq!(expected(Some("portable")), Backend::Portable);
    } else {
        assert_eq!(expected(Some("neon")), Backend::Portable);
    }
}

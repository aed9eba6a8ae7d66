//! Dispatch: `Kernels::detect` picks a backend this CPU can run, and
//! `BLOOMSLICE_KERNELS` overrides the choice. The choice is made once per
//! process, so each setting of the variable is checked in a child process
//! (this test binary, re-run with a filter).

use bloomslice_kernels::testing::assert_passes_with_kernels;
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

#[test]
fn env_override_in_child_processes() {
    for value in ["scalar", "portable", "neon", "avx2", "avx512", "auto", "SCALAR", "nonsense"] {
        assert_passes_with_kernels("detect_honours_env", value, &["--nocapture"]);
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

//! The scratch file of the targets that map what they load (`load_deferred`,
//! `load_collection`): one per process, in memory on `/dev/shm` where there
//! is one, removed after every input.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Runs `check_file(bytes, path)`, `path` being this process's scratch file
/// `bloomslice-fuzz-{name}-{pid}.{extension}` (`name` and `extension` are the
/// target's own, so the first call's stand), then removes the file: `check_file` has dropped every map
/// of it by then, and nothing is left behind when the fuzzer stops.
pub fn check_with_scratch(name: &str, extension: &str, bytes: &[u8], check_file: impl FnOnce(&[u8], &Path)) {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        dir.join(format!("bloomslice-fuzz-{name}-{}.{extension}", std::process::id()))
    });
    check_file(bytes, path);
    let _ = std::fs::remove_file(path);
}

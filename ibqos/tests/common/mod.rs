//! What the binary's integration tests share.

use std::path::PathBuf;

use tempfile::TempDir;

/// Writes `contents` to the file `name` in the test's scratch directory and returns its path.
pub fn scratch_file(dir: &TempDir, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, contents).expect("write scratch file");
    path
}

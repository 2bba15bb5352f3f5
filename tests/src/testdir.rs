//! A scratch directory per test.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A fresh directory for one test's files (ibsim output, OpenSM config and logs, umad2sim's fake
/// sysfs trees). Removed when the test passes; kept, with its path printed, when the test panics,
/// because its logs are what explains the failure.
///
/// Created under `$IBQOS_TEST_TMPDIR` if set, else the system temporary directory.
#[derive(Debug)]
pub struct TestDir {
    dir: TempDir,
}

impl TestDir {
    /// # Panics
    /// If the directory cannot be created.
    pub fn new(label: &str) -> TestDir {
        let base = std::env::var_os("IBQOS_TEST_TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        std::fs::create_dir_all(&base)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", base.display()));
        let dir = tempfile::Builder::new()
            .prefix(&format!("ibqos-{label}-"))
            .tempdir_in(&base)
            .unwrap_or_else(|e| {
                panic!(
                    "cannot create a scratch directory in {}: {e}",
                    base.display()
                )
            });
        TestDir { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A subdirectory, created if missing.
    ///
    /// # Panics
    /// If it cannot be created.
    pub fn subdir(&self, name: &str) -> PathBuf {
        let dir = self.path().join(name);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        dir
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.dir.disable_cleanup(true);
            eprintln!(
                "test failed: its files are kept in {}",
                self.path().display()
            );
        }
    }
}

//! The log file of `ibqos sm --log-file` (OpenSM's `-f`): appended to, never truncated, and
//! opened again at its path on SIGUSR1, so that logrotate can move it away and signal the
//! daemon; the lines written before the signal are in the moved file, those after in the new
//! one, none lost.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context, Result};
use signal_hook::consts::SIGUSR1;
use tracing_subscriber::fmt::MakeWriter;

/// The log file and the flag SIGUSR1 raises.
pub struct LogFile {
    path: PathBuf,
    file: Mutex<File>,
    reopen: Arc<AtomicBool>,
}

impl LogFile {
    /// Opens `path` for appending (creating it) and makes SIGUSR1 reopen it.
    pub fn open(path: &Path) -> Result<LogFile> {
        let file = append_to(path)?;
        let reopen = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(SIGUSR1, Arc::clone(&reopen))
            .context("cannot install the handler of SIGUSR1")?;
        Ok(LogFile {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            reopen,
        })
    }
}

fn append_to(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open the log file {}", path.display()))
}

/// One log record's access to the file.
pub struct Record<'a>(MutexGuard<'a, File>);

impl Write for Record<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl<'a> MakeWriter<'a> for LogFile {
    type Writer = Record<'a>;

    /// The file for the next record, opened again first if SIGUSR1 came. A file that cannot be
    /// opened again leaves the old one in use: the log goes on rather than stops.
    fn make_writer(&'a self) -> Record<'a> {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if self.reopen.swap(false, Ordering::Relaxed)
            && let Ok(reopened) = append_to(&self.path)
        {
            *file = reopened;
        }
        Record(file)
    }
}

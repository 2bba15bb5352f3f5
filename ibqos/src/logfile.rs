//! The log file of `ibqos sm --log-file` (OpenSM's `-f`): appended to, never truncated, and
//! opened again at its path on SIGUSR1, so that logrotate can move it away and signal the
//! daemon; the lines written before the signal are in the moved file, those after in the new
//! one, none lost.
//!
//! OpenSM's `log_max_size` limits the file: OpenSM truncates a file that outgrew it to nothing,
//! which throws away the very lines that led up to a problem. ibqos moves it to `FILE.old`
//! (replacing the one before) and starts a new file, so the last limit's worth is always kept.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context, Result};
use signal_hook::consts::SIGUSR1;
use tracing_subscriber::fmt::MakeWriter;

/// The log file and the flag SIGUSR1 raises.
pub struct LogFile {
    path: PathBuf,
    file: Mutex<Open>,
    reopen: Arc<AtomicBool>,
    limit: SizeLimit,
}

/// The file being written and how many bytes it holds.
struct Open {
    file: File,
    bytes: u64,
}

/// The largest a log file may grow before it is moved aside, in bytes; 0 is no limit. Shared
/// between the log writer and whoever reads the configuration.
#[derive(Debug, Clone, Default)]
pub struct SizeLimit(Arc<AtomicU64>);

impl SizeLimit {
    pub fn set(&self, bytes: u64) {
        self.0.store(bytes, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
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
            limit: SizeLimit::default(),
        })
    }

    /// The file's size limit, none until set.
    pub fn size_limit(&self) -> SizeLimit {
        self.limit.clone()
    }

    /// Moves a file that reached its limit to `FILE.old` and opens a new one. A file that
    /// cannot be moved or opened stays in use: the log goes on rather than stops.
    fn move_aside(&self, open: &mut Open) {
        let mut old = self.path.clone().into_os_string();
        old.push(".old");
        if std::fs::rename(&self.path, old).is_ok()
            && let Ok(new) = append_to(&self.path)
        {
            *open = new;
        }
    }
}

fn append_to(path: &Path) -> Result<Open> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open the log file {}", path.display()))?;
    let bytes = file.metadata().map_or(0, |m| m.len());
    Ok(Open { file, bytes })
}

/// One log record's access to the file.
pub struct Record<'a>(MutexGuard<'a, Open>);

impl Write for Record<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = self.0.file.write(bytes)?;
        self.0.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.file.flush()
    }
}

impl<'a> MakeWriter<'a> for LogFile {
    type Writer = Record<'a>;

    /// The file for the next record, opened again first if SIGUSR1 came, or moved aside first
    /// if it reached its size limit. A file that cannot be opened again leaves the old one in
    /// use: the log goes on rather than stops.
    fn make_writer(&'a self) -> Record<'a> {
        let mut open = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if self.reopen.swap(false, Ordering::Relaxed)
            && let Ok(reopened) = append_to(&self.path)
        {
            *open = reopened;
        }
        let limit = self.limit.get();
        if limit != 0 && open.bytes >= limit {
            self.move_aside(&mut open);
        }
        Record(open)
    }
}

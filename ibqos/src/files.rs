//! Files the daemon leaves for later readers (caches, dumps, the metrics textfile): whole or
//! not at all, with the permissions their contents call for.

use std::fmt;
use std::io::{self, Write as _};
use std::path::Path;

/// The permissions of a file anyone may read, and of one that holds keys.
pub const PUBLIC: u32 = 0o644;
pub const SECRET: u32 = 0o600;

/// Writes `dir/name` (creating the directory) with permissions `mode` by way of a temporary
/// file renamed over it, so a reader never sees half a file. The temporary file is created
/// with `mode`, so a secret is never readable by others, not even for a moment.
pub fn write_atomically(dir: &Path, name: &str, text: &str, mode: u32) -> io::Result<()> {
    write_file_atomically(dir, name, mode, |file| file.write_all(text.as_bytes()))
}

/// [`write_atomically`] of text made as it is written: `fill` writes it piece by piece into the
/// file (buffered), so a file of tens of megabytes is never held whole in memory.
pub fn write_text_atomically(
    dir: &Path,
    name: &str,
    mode: u32,
    fill: impl FnOnce(&mut dyn fmt::Write) -> fmt::Result,
) -> io::Result<()> {
    write_file_atomically(dir, name, mode, |file| {
        let mut text = TextToFile {
            file: io::BufWriter::new(file),
            error: None,
        };
        let filled = fill(&mut text);
        match (text.error.take(), filled) {
            (Some(error), _) => Err(error),
            (None, Err(fmt::Error)) => Err(io::Error::other("the text could not be formatted")),
            (None, Ok(())) => text.file.flush(),
        }
    })
}

/// Writes `dir/name` by way of a temporary file that `fill` writes, created with `mode`.
fn write_file_atomically(
    dir: &Path,
    name: &str,
    mode: u32,
    fill: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
) -> io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("{name}.tmp"));
    // A temporary file left by a crash may have other permissions; start afresh.
    match std::fs::remove_file(&tmp) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)?;
    fill(&mut file)?;
    // The umask may have taken bits away from `mode`; never added any.
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    drop(file);
    std::fs::rename(tmp, dir.join(name))
}

/// Formatted text into a file: `fmt::Write` has no room for an I/O error, so the first one is
/// kept here and the writing stops.
struct TextToFile<W: io::Write> {
    file: W,
    error: Option<io::Error>,
}

impl<W: io::Write> fmt::Write for TextToFile<W> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.file.write_all(text.as_bytes()).map_err(|error| {
            self.error.get_or_insert(error);
            fmt::Error
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_made_as_it_is_written_lands_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        write_text_atomically(dir.path(), "made", PUBLIC, |out| {
            (0..3).try_for_each(|i| writeln!(out, "line {i}"))
        })
        .unwrap();
        let made = std::fs::read_to_string(dir.path().join("made")).unwrap();
        assert_eq!(made, "line 0\nline 1\nline 2\n");

        // Text that fails half way leaves the old file as it was, and says so.
        let failed = write_text_atomically(dir.path(), "made", PUBLIC, |out| {
            writeln!(out, "half")?;
            Err(fmt::Error)
        });
        assert!(failed.is_err());
        let kept = std::fs::read_to_string(dir.path().join("made")).unwrap();
        assert_eq!(kept, made);
    }
}

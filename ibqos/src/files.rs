//! Files the daemon leaves for later readers (caches, dumps, the metrics textfile): whole or
//! not at all, with the permissions their contents call for.

use std::io::Write as _;
use std::path::Path;

/// The permissions of a file anyone may read, and of one that holds keys.
pub const PUBLIC: u32 = 0o644;
pub const SECRET: u32 = 0o600;

/// Writes `dir/name` (creating the directory) with permissions `mode` by way of a temporary
/// file renamed over it, so a reader never sees half a file. The temporary file is created
/// with `mode`, so a secret is never readable by others, not even for a moment.
pub fn write_atomically(dir: &Path, name: &str, text: &str, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("{name}.tmp"));
    // A temporary file left by a crash may have other permissions; start afresh.
    match std::fs::remove_file(&tmp) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)?;
    file.write_all(text.as_bytes())?;
    // The umask may have taken bits away from `mode`; never added any.
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    drop(file);
    std::fs::rename(tmp, dir.join(name))
}

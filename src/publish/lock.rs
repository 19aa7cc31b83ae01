//! One publish at a time per index directory: an exclusive `flock(2)` on
//! `DIR/.lock`.
//!
//! In: the index directory (it must exist). Out: an [`IndexLock`] held until
//! it is dropped; a second publish into the same directory waits for it. The
//! kernel releases the lock when its holder exits, killed or not, so a
//! stopped publish never leaves the directory locked. The lock file itself
//! stays (it is empty, and a dot-file the index never serves).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The lock file inside the index directory.
pub const LOCK_FILE: &str = ".lock";

/// The held lock; released on drop.
#[derive(Debug)]
pub struct IndexLock {
    _file: File,
}

/// Waits for and takes the exclusive lock of the index directory `dir`.
pub fn lock(dir: &Path) -> Result<IndexLock> {
    let path = dir.join(LOCK_FILE);
    // O_NOFOLLOW: a symlink planted as `.lock` is refused, not followed.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .with_context(|| {
            format!(
                "cannot open the lock file {}; it must be a regular file that cuwheel publish \
                 can write (a symlink there is refused)",
                path.display()
            )
        })?;
    if !file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?
        .is_file()
    {
        bail!(
            "{} is not a regular file; remove it so cuwheel publish can lock the index",
            path.display()
        );
    }
    loop {
        // SAFETY: flock only reads the descriptor, which `file` keeps open.
        let status = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if status == 0 {
            return Ok(IndexLock { _file: file });
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error).with_context(|| format!("cannot lock {}", path.display()));
        }
    }
}

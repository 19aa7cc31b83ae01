//! Advisory locks between processes (and threads) on one file: `flock(2)`.
//!
//! In: the path of a lock file (created, never followed through a symlink).
//! Out: a [`FileLock`] held until it is dropped, shared or exclusive; or an
//! error naming the file. The kernel releases a lock when its holder exits,
//! killed or not, so a stopped command never leaves a lock behind. Each
//! [`FileLock::open`] is its own open file description, so two threads of
//! one process exclude each other as two processes do.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// A held lock; dropping it (closing the file) releases it.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

/// Which lock to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Many holders at once, none exclusive.
    Shared,
    /// One holder.
    Exclusive,
}

impl FileLock {
    /// Opens (creating it) the lock file at `path` and waits for the lock.
    pub fn acquire(path: &Path, mode: Mode) -> Result<FileLock> {
        let file = FileLock::open(path)?;
        let operation = match mode {
            Mode::Shared => libc::LOCK_SH,
            Mode::Exclusive => libc::LOCK_EX,
        };
        flock(&file, operation, path)?;
        Ok(FileLock { file })
    }

    /// Opens or creates a lock file: a regular file, never a symlink.
    pub fn open(path: &Path) -> Result<File> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .with_context(|| {
                format!(
                    "cannot open the lock file {}; it must be a regular file cuwheel can write \
                     (a symlink there is refused)",
                    path.display()
                )
            })?;
        let metadata = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?;
        if !metadata.is_file() {
            bail!(
                "{} is not a regular file; remove it so cuwheel can use it as a lock",
                path.display()
            );
        }
        Ok(file)
    }

    /// The open lock file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

/// `flock(2)` on `file`; false when `LOCK_NB` was given and another holds
/// the lock. Retried when interrupted by a signal.
pub fn flock(file: &File, operation: libc::c_int, path: &Path) -> Result<bool> {
    loop {
        // SAFETY: flock only reads the descriptor, which `file` keeps open.
        let status = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if status == 0 {
            return Ok(true);
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(false),
            _ => return Err(error).with_context(|| format!("cannot lock {}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_excludes_shared_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = FileLock::acquire(&path, Mode::Exclusive).unwrap();
        let other = FileLock::open(&path).unwrap();
        assert!(!flock(&other, libc::LOCK_SH | libc::LOCK_NB, &path).unwrap());
        drop(held);
        assert!(flock(&other, libc::LOCK_SH | libc::LOCK_NB, &path).unwrap());
        // Two shared holders at once.
        let second = FileLock::acquire(&path, Mode::Shared).unwrap();
        assert!(!flock(second.file(), libc::LOCK_EX | libc::LOCK_NB, &path).unwrap());
    }

    #[test]
    fn a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"").unwrap();
        let link = dir.path().join("lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = FileLock::acquire(&link, Mode::Shared).unwrap_err();
        assert!(
            format!("{error:#}").contains("a symlink there is refused"),
            "{error:#}"
        );
    }
}

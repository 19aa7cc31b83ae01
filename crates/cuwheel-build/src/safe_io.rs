//! Files read and written only when they are what cuwheel means them to be.
//!
//! In: a path the user named. Out: its bytes, read only when it is a
//! regular file ([`read_regular`]: a FIFO, a device or a directory is
//! refused before a byte is read, so `/dev/zero` is not read until memory
//! runs out and a FIFO does not block); or new bytes written to it
//! ([`write_atomically`]: a temporary file in its directory renamed into
//! place, only over a regular file or nothing — never over a device, a
//! FIFO, a symlink or a directory, so `-o /dev/null` cannot replace
//! `/dev/null`).

use std::fs::{File, Metadata};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use anyhow::{Context, Result, bail};

pub use crate::wheel::file_kind::kind;

/// Opens `path` for reading if it is (or links to) a regular file. It is
/// opened without blocking (a FIFO would wait for a writer) and judged by
/// the open file's own metadata, so it cannot be swapped in between.
pub fn open_regular(path: &Path) -> Result<(File, Metadata)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !metadata.is_file() {
        bail!(
            "cannot read {}: it is {}, not a regular file; give the path of a file",
            path.display(),
            kind(metadata.file_type())
        );
    }
    Ok((file, metadata))
}

/// The bytes of the regular file at `path` (see [`open_regular`]).
pub fn read_regular(path: &Path) -> Result<Vec<u8>> {
    let (mut file, metadata) = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(bytes)
}

/// The text of the regular file at `path` (see [`open_regular`]).
pub fn read_regular_to_string(path: &Path) -> Result<String> {
    let bytes = read_regular(path)?;
    String::from_utf8(bytes)
        .with_context(|| format!("cannot read {}: it is not UTF-8 text", path.display()))
}

/// Refuses to write `path` unless it is a regular file or nothing; returns
/// the permission bits a replacement keeps (the old file's, or 0644, as a
/// file the shell would create). Commands call it before their work, so a
/// bad output path is refused at once; [`write_atomically`] calls it again.
pub fn replaceable(path: &Path) -> Result<u32> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_file() => Ok(metadata.permissions().mode() & 0o7777),
        Ok(metadata) => bail!(
            "refusing to write {}: it is {}, and cuwheel replaces only a regular file or \
             creates a new one; name a file's path instead, or remove {} first",
            path.display(),
            kind(metadata.file_type()),
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0o644),
        Err(e) => Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
}

/// Writes `bytes` to a temporary file in `path`'s directory, then renames
/// it over `path`: a reader sees the old file or the new one, never a
/// part. Only a regular file or nothing is replaced (see the module doc).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mode = replaceable(path)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    temp.write_all(bytes)
        .and_then(|()| {
            temp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
        })
        .and_then(|()| temp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", temp.path().display()))?;
    // Judged again just before the rename, which replaces whatever is there.
    replaceable(path)?;
    temp.persist(path)
        .with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt as _;

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn only_a_regular_file_or_nothing_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.txt");
        write_atomically(&new, b"one").unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"one");
        assert_eq!(
            std::fs::metadata(&new).unwrap().permissions().mode() & 0o777,
            0o644
        );
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomically(&new, b"two").unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"two");
        assert_eq!(
            std::fs::metadata(&new).unwrap().permissions().mode() & 0o777,
            0o600,
            "the old file's mode is kept"
        );

        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&new, &link).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        for (path, what) in [
            (&fifo, "a FIFO (named pipe)"),
            (&link, "a symbolic link"),
            (&sub, "a directory"),
        ] {
            let err = write_atomically(path, b"x").unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "refusing to write {0}: it is {what}, and cuwheel replaces only a regular \
                     file or creates a new one; name a file's path instead, or remove {0} first",
                    path.display()
                )
            );
        }
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&new).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 4, "no temporary file left behind");
    }

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "text").unwrap();
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_regular(&link).unwrap(), b"text");
        assert_eq!(read_regular_to_string(&file).unwrap(), "text");
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        for (path, what) in [
            (fifo.as_path(), "a FIFO (named pipe)"),
            (dir.path(), "a directory"),
            (Path::new("/dev/zero"), "a character device"),
        ] {
            let err = read_regular(path).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "cannot read {}: it is {what}, not a regular file; give the path of a file",
                    path.display()
                )
            );
        }
    }
}

//! NAR, the Nix ARchive: a file-system tree in, its canonical serialisation
//! (or just its sha256 and size) out, streamed — file contents are copied
//! through in chunks and never held whole.
//!
//! Format (Eelco Dolstra's thesis, §5.2.1; `src/libutil/archive.cc`): every
//! token is a string written as a little-endian u64 length, the bytes, and
//! zero padding to a multiple of 8. Directory entries are sorted by the bytes
//! of their names; only the owner's execute bit of a regular file is kept.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::hash::{Hash, HashingWriter};

/// Writes the NAR serialisation of `path` (a file, symlink or directory).
pub fn dump(path: &Path, out: &mut impl Write) -> Result<()> {
    let mut nar = NarWriter { out };
    nar.token(b"nix-archive-1")?;
    nar.node(path)
}

/// The sha256 of `path`'s NAR and the NAR's size, as `nix-hash --type sha256`
/// and `nix-store --dump | sha256sum` compute them.
pub fn nar_hash(path: &Path) -> Result<(Hash, u64)> {
    let mut hasher = HashingWriter::sha256();
    dump(path, &mut hasher)?;
    Ok(hasher.finish())
}

struct NarWriter<'a, W: Write> {
    out: &'a mut W,
}

impl<W: Write> NarWriter<'_, W> {
    fn token(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(&(bytes.len() as u64).to_le_bytes())?;
        self.out.write_all(bytes)?;
        self.pad(bytes.len() as u64)
    }

    fn pad(&mut self, len: u64) -> io::Result<()> {
        let padding = (8 - len % 8) % 8;
        self.out.write_all(&[0u8; 8][..padding as usize])
    }

    fn tokens(&mut self, tokens: &[&[u8]]) -> io::Result<()> {
        tokens.iter().try_for_each(|t| self.token(t))
    }

    fn node(&mut self, path: &Path) -> Result<()> {
        let meta = fs::symlink_metadata(path)
            .with_context(|| format!("cannot read {} to archive it", path.display()))?;
        let kind = meta.file_type();
        self.token(b"(")?;
        if kind.is_symlink() {
            let target = fs::read_link(path)
                .with_context(|| format!("cannot read the symlink {}", path.display()))?;
            self.tokens(&[
                b"type",
                b"symlink",
                b"target",
                target.as_os_str().as_bytes(),
            ])?;
        } else if kind.is_file() {
            self.tokens(&[b"type", b"regular"])?;
            if meta.permissions().mode() & 0o100 != 0 {
                self.tokens(&[b"executable", b""])?;
            }
            self.token(b"contents")?;
            self.contents(path, meta.len())?;
        } else if kind.is_dir() {
            self.tokens(&[b"type", b"directory"])?;
            let mut names = fs::read_dir(path)
                .with_context(|| format!("cannot list {}", path.display()))?
                .map(|e| e.map(|e| e.file_name()))
                .collect::<io::Result<Vec<_>>>()
                .with_context(|| format!("cannot list {}", path.display()))?;
            names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            for name in names {
                self.tokens(&[b"entry", b"(", b"name", name.as_bytes(), b"node"])?;
                self.node(&path.join(&name))?;
                self.token(b")")?;
            }
        } else {
            bail!(
                "{} is neither a regular file, a directory nor a symlink, so Nix cannot archive it: \
                 remove it from the tree",
                path.display()
            );
        }
        self.token(b")")?;
        Ok(())
    }

    /// Streams a file's bytes; the length is written first, so a file that
    /// changes size while being read is an error rather than a corrupt NAR.
    fn contents(&mut self, path: &Path, len: u64) -> Result<()> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        self.out.write_all(&len.to_le_bytes())?;
        let copied = io::copy(&mut file.take(len), self.out)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if copied != len {
            bail!(
                "{} changed size while it was archived: archive it again",
                path.display()
            );
        }
        self.pad(len)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nar_of(setup: impl FnOnce(&Path)) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        setup(&root);
        let mut out = Vec::new();
        dump(&root, &mut out).unwrap();
        out
    }

    fn expected(tokens: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        NarWriter { out: &mut out }.tokens(tokens).unwrap();
        out
    }

    #[test]
    fn regular_file() {
        let nar = nar_of(|p| fs::write(p, b"hello").unwrap());
        let want = expected(&[
            b"nix-archive-1",
            b"(",
            b"type",
            b"regular",
            b"contents",
            b"hello",
            b")",
        ]);
        assert_eq!(nar, want);
        // Each token is padded to 8 bytes: 13-byte magic → 16.
        assert_eq!(&nar[..8], &13u64.to_le_bytes());
        assert_eq!(&nar[21..24], &[0, 0, 0]);
    }

    #[test]
    fn executable_symlink_and_sorted_directory() {
        let nar = nar_of(|p| {
            fs::create_dir(p).unwrap();
            fs::write(p.join("b"), b"").unwrap();
            fs::set_permissions(p.join("b"), fs::Permissions::from_mode(0o755)).unwrap();
            std::os::unix::fs::symlink("b", p.join("a")).unwrap();
        });
        let want = expected(&[
            b"nix-archive-1",
            b"(",
            b"type",
            b"directory",
            b"entry",
            b"(",
            b"name",
            b"a",
            b"node",
            b"(",
            b"type",
            b"symlink",
            b"target",
            b"b",
            b")",
            b")",
            b"entry",
            b"(",
            b"name",
            b"b",
            b"node",
            b"(",
            b"type",
            b"regular",
            b"executable",
            b"",
            b"contents",
            b"",
            b")",
            b")",
            b")",
        ]);
        assert_eq!(nar, want);
    }

    #[test]
    fn hash_matches_nix_for_a_known_file() {
        // `echo -n hello > f; nix-hash --type sha256 --base32 f` with Nix 2.8.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, b"hello").unwrap();
        let (hash, size) = nar_hash(&f).unwrap();
        assert_eq!(size, 120);
        assert_eq!(
            hash.to_base32(),
            "0sg9f58l1jj88w6pdrfdpj5x9b1zrwszk84j81zvby36q9whhhqa"
        );
    }

    #[test]
    fn refuses_special_files() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let err = nar_hash(&fifo).unwrap_err().to_string();
        assert!(err.contains("neither a regular file"), "{err}");
    }
}

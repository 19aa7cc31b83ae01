//! The root's license files, read only when they are what they claim.
//!
//! In: the project root. Out: the `LICENSE*`, `LICENCE*`, `COPYING*` and
//! `NOTICE*` entries at the root that are text files of the project, with
//! their text ([`LicenseFiles::texts`]), and for every other such entry the
//! reason it was neither read nor listed ([`LicenseFiles::refused`]): a
//! symbolic link out of the project (`LICENSE -> /etc/shadow`), something
//! that is not a regular file (a FIFO is not read: it would block), a file
//! over [`SIZE_CAP`], or bytes that are not UTF-8 text. What is listed in
//! `license-files` and what the license is inferred from are one list, so
//! the report and the metadata agree.

use std::io::Read as _;
use std::path::Path;

use crate::safe_io::{kind, open_regular};

/// Files shipped as license files when they sit at the root.
pub const LICENSE_NAMES: [&str; 4] = ["LICENSE", "LICENCE", "COPYING", "NOTICE"];

/// The largest license file read: 1 MiB (the longest SPDX license text is
/// under 100 KiB).
pub const SIZE_CAP: u64 = 1 << 20;

/// The root's license files.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LicenseFiles {
    /// `(name, text)` of each listed file, sorted by name.
    pub texts: Vec<(String, String)>,
    /// `(name, why it was refused)`, sorted by name.
    pub refused: Vec<(String, String)>,
}

impl LicenseFiles {
    /// The listed names, for `license-files`.
    pub fn names(&self) -> Vec<String> {
        self.texts.iter().map(|(name, _)| name.clone()).collect()
    }
}

/// Reads the license files at `root` (see the module doc).
pub fn read(root: &Path) -> LicenseFiles {
    let mut files = LicenseFiles::default();
    let names = super::metadata::root_names(root, |name| {
        LICENSE_NAMES
            .iter()
            .any(|l| name.to_ascii_uppercase().starts_with(l))
    });
    for name in names {
        match read_one(root, &name) {
            Ok(Some(text)) => files.texts.push((name, text)),
            Ok(None) => {}
            Err(why) => files.refused.push((name, why)),
        }
    }
    files
}

/// The text of `root/name`; `None` for a directory (not a license file);
/// `Err` with the reason it is refused.
fn read_one(root: &Path, name: &str) -> Result<Option<String>, String> {
    let path = root.join(name);
    let link = std::fs::symlink_metadata(&path).map_err(|e| format!("cannot be read ({e})"))?;
    if link.file_type().is_symlink() {
        let target = std::fs::read_link(&path).unwrap_or_default();
        let inside = match (path.canonicalize(), root.canonicalize()) {
            (Ok(resolved), Ok(root)) => resolved.starts_with(&root),
            (Err(_), _) => {
                return Err(format!(
                    "is a symbolic link to {}, which does not exist",
                    target.display()
                ));
            }
            (_, Err(e)) => return Err(format!("cannot be read ({e})")),
        };
        if !inside {
            return Err(format!(
                "is a symbolic link to {}, out of the project",
                target.display()
            ));
        }
    }
    let metadata = std::fs::metadata(&path).map_err(|e| format!("cannot be read ({e})"))?;
    if metadata.is_dir() {
        return Ok(None);
    }
    if !metadata.is_file() {
        return Err(format!(
            "is {}, not a regular file",
            kind(metadata.file_type())
        ));
    }
    if metadata.len() > SIZE_CAP {
        return Err(format!(
            "is {} bytes, over the {SIZE_CAP} bytes (1 MiB) a license file may be",
            metadata.len()
        ));
    }
    let (file, _) = open_regular(&path).map_err(|e| format!("{e:#}"))?;
    let mut bytes = Vec::new();
    file.take(SIZE_CAP + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() as u64 > SIZE_CAP {
        return Err(format!(
            "is over the {SIZE_CAP} bytes (1 MiB) a license file may be"
        ));
    }
    match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok(Some(text)),
        _ => Err("is binary (not UTF-8 text)".to_string()),
    }
}

//! A binary cache's signing keys on disk: a public key given as text or as
//! the file holding it, a secret key file's public half, and a new pair
//! written with `nix-store --generate-binary-cache-key` (never over an
//! existing file). The key format itself is `cuwheel::store::signing`.
//!
//! In: key text, key files, or a name to generate a pair under. Out: a
//! [`PublicKey`], or the new pair's files.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

pub use crate::store::signing::PublicKey;
use crate::store::signing::check_name;

/// The key itself, or the file holding it (as `cuwheel cache key` writes
/// `NAME.pub`).
pub fn public_key_from_text_or_file(value: &str) -> Result<PublicKey> {
    let file = Path::new(value);
    if file.is_file() {
        let text = fs::read_to_string(file)
            .with_context(|| format!("cannot read the public key file {value}"))?;
        return PublicKey::parse(&text).with_context(|| format!("in {value}"));
    }
    PublicKey::parse(value).with_context(|| {
        format!("'{value}' is neither a public key file nor a public key (NAME:BASE64)")
    })
}

/// A secret key file (`nix-store --generate-binary-cache-key`'s first
/// output): its public half.
pub fn public_key_of_secret(file: &Path) -> Result<PublicKey> {
    let text = fs::read_to_string(file)
        .with_context(|| format!("cannot read the secret key file {}", file.display()))?;
    PublicKey::of_secret(&text).with_context(|| {
        format!(
            "{} is not a Nix secret key file (make one with `cuwheel cache key NAME --out DIR`)",
            file.display()
        )
    })
}

/// The files a new key pair is written to.
#[derive(Debug)]
pub struct KeyPair {
    pub secret: PathBuf,
    pub public: PathBuf,
}

/// Generates a key pair named `name` into `dir/NAME.sec` (mode 0600) and
/// `dir/NAME.pub`. Refuses if either exists: overwriting a secret key would
/// orphan every cache signed with it.
pub fn generate(name: &str, dir: &Path) -> Result<KeyPair> {
    check_name(name)?;
    let pair = KeyPair {
        secret: dir.join(format!("{name}.sec")),
        public: dir.join(format!("{name}.pub")),
    };
    for file in [&pair.secret, &pair.public] {
        if file.symlink_metadata().is_ok() {
            bail!(
                "{} exists; cuwheel does not overwrite keys (a cache signed with the old key could \
                 no longer be signed): choose another name or directory",
                file.display()
            );
        }
    }
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Generated beside the final names, then linked there: a link never
    // replaces an existing file, so a race cannot overwrite one either.
    let work = tempfile::tempdir_in(dir)
        .with_context(|| format!("cannot create a temporary directory in {}", dir.display()))?;
    let (secret, public) = (work.path().join("sec"), work.path().join("pub"));
    crate::registry::process::checked_output(
        Command::new("nix-store")
            .arg("--generate-binary-cache-key")
            .arg(name)
            .args([&secret, &public]),
        &format!("nix-store --generate-binary-cache-key {name}"),
        || {
            "cannot run `nix-store`: install Nix 2.8 or later (on Debian and Ubuntu: `apt-get \
             install nix-bin`)"
                .to_string()
        },
    )?;
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private", secret.display()))?;
    for (from, to) in [(&secret, &pair.secret), (&public, &pair.public)] {
        fs::hard_link(from, to)
            .with_context(|| format!("cannot write {} (does it exist now?)", to.display()))?;
    }
    Ok(pair)
}

#[cfg(test)]
mod tests {
    use super::*;

    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn a_secret_key_files_public_half_is_read() {
        let public = format!("demo-1:{}", STANDARD.encode([7u8; 32]));
        let mut secret = vec![1u8; 32];
        secret.extend([7u8; 32]);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("demo-1.sec");
        fs::write(&file, format!("demo-1:{}", STANDARD.encode(&secret))).unwrap();
        assert_eq!(public_key_of_secret(&file).unwrap().to_string(), public);
    }

    #[test]
    fn bad_key_files_say_what_a_key_looks_like() {
        let err = format!(
            "{:#}",
            public_key_from_text_or_file("keys/missing.pub").unwrap_err()
        );
        assert!(err.contains("neither a public key file"), "{err}");
        let public = format!("demo-1:{}", STANDARD.encode([7u8; 32]));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.sec");
        fs::write(&file, &public).unwrap();
        let err = format!("{:#}", public_key_of_secret(&file).unwrap_err());
        assert!(err.contains("cuwheel cache key"), "{err}");
    }

    #[test]
    fn a_key_name_is_checked_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let err = format!("{:#}", generate("a:b", dir.path()).unwrap_err());
        assert!(err.contains("cannot name a key"), "{err}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

//! The project flake `cuwheel init` writes, and which cuwheel it names.
//!
//! In: the flake reference of cuwheel (given, or found: see [`locate`]) and
//! the project's name. Out: the few-line `flake.nix` that calls cuwheel's
//! flake library on the project's source.
//!
//! Which cuwheel, in order: `--cuwheel URL`; the `CUWHEEL_FLAKE`
//! environment variable; the checkout the running binary sits in
//! (`target/release/cuwheel` → the checkout, as `git+file:` when it is a
//! git work tree, else `path:`); `CUWHEEL_FLAKE` as set when the binary was
//! built (how a Nix-built driver can name the flake it came from); the
//! checkout it was built from by Cargo, if that is still there. All are
//! local, so the project flake evaluates without network.

use std::path::{Path, PathBuf};

use crate::store::expr::nix_string;
use anyhow::{Result, bail};

/// The function of cuwheel's flake library a project flake calls: the one
/// place its name is written.
pub const LIB_FUNCTION: &str = "mkProject";
/// The environment variable naming cuwheel's flake.
pub const ENV_VAR: &str = "CUWHEEL_FLAKE";

/// The flake reference and how it was found (for the report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuwheelRef {
    pub url: String,
    pub how: String,
}

/// Finds the cuwheel flake to name; `explicit` is `--cuwheel`.
pub fn locate(explicit: Option<&str>) -> Result<CuwheelRef> {
    let found = |url: String, how: &str| {
        Ok(CuwheelRef {
            url,
            how: how.to_string(),
        })
    };
    if let Some(url) = explicit {
        return found(url.to_string(), "--cuwheel");
    }
    if let Some(url) = std::env::var(ENV_VAR).ok().filter(|url| !url.is_empty()) {
        return found(url, &format!("the {ENV_VAR} environment variable"));
    }
    if let Some(checkout) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().find_map(checkout_at))
    {
        return found(
            checkout_url(&checkout),
            "the checkout this cuwheel binary is in",
        );
    }
    if let Some(url) = option_env!("CUWHEEL_FLAKE").filter(|u| !u.is_empty()) {
        return found(
            url.to_string(),
            "the flake this cuwheel binary was built from",
        );
    }
    if let Some(checkout) = checkout_at(Path::new(env!("CARGO_MANIFEST_DIR"))) {
        return found(
            checkout_url(&checkout),
            "the checkout this cuwheel binary was built from",
        );
    }
    bail!(
        "cannot tell which cuwheel the project flake should use: this binary is not inside a cuwheel \
         checkout and was not built from one that still exists; pass --cuwheel <flake reference> (like \
         git+file:///path/to/cuwheel) or set {ENV_VAR}"
    )
}

/// `dir` if it is a cuwheel checkout: a flake.nix beside cuwheel's Cargo.toml.
fn checkout_at(dir: &Path) -> Option<PathBuf> {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    let is_cuwheel = manifest
        .lines()
        .any(|l| l.replace(' ', "") == "name=\"cuwheel\"");
    (is_cuwheel && dir.join("flake.nix").is_file()).then(|| dir.to_path_buf())
}

/// `git+file:` for a git work tree (the flake then sees its tracked
/// files), `path:` otherwise.
fn checkout_url(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if dir.join(".git").exists() {
        format!("git+file://{}", dir.display())
    } else {
        format!("path:{}", dir.display())
    }
}

/// The project's `flake.nix`.
pub fn flake_text(cuwheel: &CuwheelRef, name: &str) -> String {
    format!(
        r#"{{
  description = {description};

  # cuwheel's flake library (written by `cuwheel init`, from {how}).
  inputs.cuwheel.url = {url};

  # Wheels, kernels, toolchains, plan, apps.publish and checks for this project;
  # its cuwheel.lock pins the toolchains. A flake sees only git-tracked files.
  outputs = {{ self, cuwheel }}: cuwheel.lib.{LIB_FUNCTION} {{ src = ./.; }};
}}
"#,
        description = nix_string(&format!(
            "{name}: PyTorch extension wheels built by cuwheel"
        )),
        how = cuwheel.how,
        url = nix_string(&cuwheel.url),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flake_calls_the_library_with_the_source() {
        let text = flake_text(
            &CuwheelRef {
                url: "git+file:///src/cu\"wheel".into(),
                how: "--cuwheel".into(),
            },
            "my-ext ${x}",
        );
        assert!(
            text.contains("inputs.cuwheel.url = \"git+file:///src/cu\\\"wheel\";"),
            "{text}"
        );
        assert!(
            text.contains("outputs = { self, cuwheel }: cuwheel.lib.mkProject { src = ./.; };"),
            "{text}"
        );
        assert!(text.contains("\"my-ext \\${x}: PyTorch"), "{text}");
    }

    #[test]
    fn a_checkout_is_recognised_by_its_manifest_and_flake() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(checkout_at(dir.path()), None);
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[package]\nname = \"cuwheel\"\n",
        )
        .unwrap();
        assert_eq!(checkout_at(dir.path()), None);
        std::fs::write(dir.path().join("flake.nix"), "{}").unwrap();
        assert_eq!(checkout_at(dir.path()), Some(dir.path().to_path_buf()));
        assert!(checkout_url(dir.path()).starts_with("path:/"));
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert!(checkout_url(dir.path()).starts_with("git+file:///"));
        assert_eq!(locate(Some("github:x/y")).unwrap().url, "github:x/y");
    }
}

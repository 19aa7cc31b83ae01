//! `cuwheel reproduce`: does this checkout rebuild this wheel bit for bit?
//!
//! In: a wheel (a path, or a URL [`download`]ed with curl) and a checkout
//! (the project directory and the flake that builds it). Out: a [`Verdict`].
//! The steps: read the wheel's provenance; [`checkout`] compares it with the
//! checkout and stops at the first sign of another one (config, a source
//! file, a toolchain's artifacts, the cell); the flake is checked to build
//! this checkout ([`crate::flake`]); [`rebuild`] has Nix build the cell and build
//! each of its derivations again, comparing; [`diff`] compares the given
//! wheel with the built one — by member, with [`elf`] sections and symbols
//! and [`text`] line diffs. Everything but `download`, `rebuild` and the
//! reading here is pure.

pub mod checkout;
pub mod diff;
pub mod download;
pub mod elf;
pub mod localize;
pub mod rebuild;
pub mod text;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::audit::archs::PROVENANCE_FILE;
use crate::build::Provenance;
use crate::cache::Substituter;
use crate::registry::nix::Nix;
use crate::wheel::WheelArchive;
use checkout::{Checkout, Mismatch};
use diff::{WheelBytes, WheelDiff};
use rebuild::{NotDeterministic, Rebuild};

/// Where the checkout is and how far to distrust the store.
pub struct ReproduceOptions {
    /// The project directory: `pyproject.toml` and `cuwheel.lock`.
    pub project: PathBuf,
    /// The flake that builds the project; by default the nearest directory
    /// holding `flake.nix`, from the project up.
    pub flake: Option<String>,
    /// Build every derivation of the cell again (`nix-store --check`);
    /// without it, outputs the store already holds are trusted.
    pub check: bool,
    /// Build in the store rooted at this directory instead of the system's.
    pub store: Option<PathBuf>,
    /// A binary cache to substitute from (`cuwheel cache export`), so that
    /// a wheel can be rebuilt after the registries dropped its inputs.
    pub substituter: Option<Substituter>,
    /// How long the download of a wheel given by URL may take.
    pub timeouts: download::Timeouts,
    /// At most this many derivations built at once (Nix's `max-jobs`);
    /// `None`: one per core.
    pub max_jobs: Option<u32>,
}

/// The answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum Verdict {
    /// The rebuilt wheel is the given one, byte for byte.
    Identical {
        wheel: String,
        sha256: String,
        built: PathBuf,
        checked: bool,
    },
    /// The rebuilt wheel differs.
    Different {
        wheel: String,
        built: PathBuf,
        diff: WheelDiff,
    },
    /// A derivation of the cell gave other bytes when built again.
    NotDeterministic {
        wheel: String,
        derivations: Vec<NotDeterministic>,
    },
    /// The checkout is not the one the wheel was built from: nothing built.
    OtherCheckout {
        wheel: String,
        project: PathBuf,
        mismatches: Vec<Mismatch>,
    },
}

impl Verdict {
    /// The report for people.
    pub fn render(&self) -> String {
        match self {
            Verdict::Identical {
                wheel,
                sha256,
                checked,
                ..
            } => {
                let how = if *checked {
                    ""
                } else {
                    " (--no-check: outputs already in the store were trusted)"
                };
                format!("identical: {wheel} sha256 {sha256}{how}\n")
            }
            Verdict::Different { wheel, built, diff } => format!(
                "different: {wheel} is not what this checkout builds ({})\n{}\
                 The checkout matches the wheel's provenance: either the wheel was changed after \
                 its build, or its build is not reproducible.\n",
                built.display(),
                diff.render()
            ),
            Verdict::NotDeterministic { wheel, derivations } => {
                let mut text = format!(
                    "not reproducible: building {wheel}'s derivations again gave other bytes:\n"
                );
                for d in derivations {
                    text += &format!("  {}: output {} differs", d.derivation, d.output);
                    match &d.kept {
                        Some(kept) => text += &format!(" from the rebuild kept at {kept}\n"),
                        None => text += "\n",
                    }
                    text += &localize::render(&d.differences, "    ");
                    if let Some(why) = &d.unread {
                        text += &format!("    (the differences could not be read: {why})\n");
                    }
                }
                text += "Whatever the likely cause names must be fixed where the compile runs: \
                         a tool that records a clock, a temporary path or an unsorted order. \
                         Report it with this output if it is cuwheel's own build.\n";
                text
            }
            Verdict::OtherCheckout {
                wheel,
                project,
                mismatches,
            } => {
                let mut text = format!(
                    "other checkout: {wheel} was not built from the project in {}:\n",
                    project.display()
                );
                for m in mismatches {
                    text += &format!("  {m}\n");
                }
                text += "Nothing was built. Check out the commit that built the wheel (the one \
                         whose files have the wheel's digests above) and run `cuwheel reproduce` \
                         again.\n";
                text
            }
        }
    }
}

/// Reproduces `wheel` (a path or an `http(s)://` URL).
pub fn reproduce(
    wheel: &str,
    options: &ReproduceOptions,
    progress: &dyn Fn(&str),
) -> Result<Verdict> {
    let downloads = tempfile::tempdir().context("cannot create a temporary directory")?;
    // Text with a scheme (after any leading space, which a pasted URL may
    // carry) is a URL, parsed before anything else; its user and password,
    // if any, reach curl only on its standard input, never its command line.
    let path = if crate::url::scheme(wheel.trim_start()).is_some() {
        let url = crate::url::parse("the URL", wheel).map_err(anyhow::Error::msg)?;
        if !matches!(url.scheme(), "http" | "https") {
            bail!(
                "{}: only http:// and https:// URLs are downloaded; download the wheel yourself \
                 and pass its path",
                crate::url::redact(wheel)
            );
        }
        progress(&format!("downloading {}", crate::url::redact(wheel)));
        download::download(wheel, downloads.path(), options.timeouts)?
    } else {
        PathBuf::from(wheel)
    };
    // A FIFO or a device is refused before it is read (it would block, or
    // never end).
    let bytes = crate::safe_io::read_regular(&path)?;
    let given = WheelArchive::from_bytes(&path, &bytes)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let provenance = read_provenance(&given)?;

    let project = &options.project;
    let checkout = Checkout::read(project)
        .with_context(|| format!("cannot read the checkout in {}", project.display()))?;
    let mismatches = checkout::compare(&provenance, &checkout);
    if !mismatches.is_empty() {
        return Ok(Verdict::OtherCheckout {
            wheel: name,
            project: project.clone(),
            mismatches,
        });
    }
    let cell = &checkout.cells[&provenance.cell];
    // A wheel with no local label is the cell's PyPI wheel.
    let (attr, pypi) = if given.filename().version.local().is_empty() {
        let pypi = checkout.pypi.get(&provenance.cell).with_context(|| {
            format!(
                "{name} has no local label, so it is cell {}'s PyPI wheel, but the checkout in {} \
                 makes no PyPI wheel for that cell; reproduce it from the checkout whose \
                 [tool.cuwheel.pypi] names the cell's variant",
                provenance.cell,
                project.display()
            )
        })?;
        (format!("pypi.{}", provenance.cell), Some(pypi))
    } else {
        (format!("wheels.{}", provenance.cell), None)
    };
    let flake = match &options.flake {
        Some(flake) => flake.clone(),
        None => crate::registry::flake::find_flake(project)?
            .display()
            .to_string(),
    };
    let nix = match &options.store {
        Some(root) => Nix::with_store_root(root),
        None => Nix::system(),
    }
    .with_options(nix_options(options.substituter.as_ref(), options.max_jobs));
    crate::registry::flake::check_builds_project(
        &nix,
        &flake,
        project,
        cell.provenance.sources.keys(),
    )?;
    let result = match rebuild::rebuild(
        &nix,
        &flake,
        &attr,
        &rebuild::nodes_of(cell, pypi),
        options.check,
        progress,
    )? {
        Rebuild::Built(result) => result,
        Rebuild::NotDeterministic(derivations) => {
            return Ok(Verdict::NotDeterministic {
                wheel: name,
                derivations,
            });
        }
    };
    let built_path = built_wheel(&result).with_context(|| {
        format!(
            "the flake {flake} built a result without the cell's wheel; is it the flake of the \
             project in {}? Pass it with --flake",
            project.display()
        )
    })?;
    let built_bytes = std::fs::read(&built_path)
        .with_context(|| format!("cannot read {}", built_path.display()))?;
    let built_name = built_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let built = WheelArchive::from_bytes(&built_path, &built_bytes)?;
    let diff = diff::diff(
        &WheelBytes {
            file_name: &name,
            bytes: &bytes,
            members: given.members(),
        },
        &WheelBytes {
            file_name: &built_name,
            bytes: &built_bytes,
            members: built.members(),
        },
    );
    Ok(if diff.is_identical() {
        Verdict::Identical {
            wheel: name,
            sha256: diff.given_sha256.clone(),
            built: built_path,
            checked: options.check,
        }
    } else {
        Verdict::Different {
            wheel: name,
            built: built_path,
            diff,
        }
    })
}

/// The one wheel in a cell's result directory (the plan only predicts its
/// name: the build tags it from the module).
fn built_wheel(result: &Path) -> Result<PathBuf> {
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(result)
        .with_context(|| format!("cannot list {}", result.display()))?
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "whl"))
        .collect();
    match (wheels.pop(), wheels.is_empty()) {
        (Some(wheel), true) => Ok(wheel),
        _ => bail!("{} does not hold exactly one .whl", result.display()),
    }
}

fn read_provenance(wheel: &WheelArchive) -> Result<Provenance> {
    let member = format!("{}/{PROVENANCE_FILE}", wheel.dist_info_dir());
    let Some(file) = wheel.member(&member) else {
        bail!(
            "{} is not a cuwheel wheel: it has no {member}, which cuwheel writes into every wheel \
             it builds; only wheels built by cuwheel can be reproduced",
            wheel.path().display()
        );
    };
    serde_json::from_slice(&file.data).with_context(|| {
        format!(
            "{}: {member} is not a provenance this cuwheel reads; reproduce it with the cuwheel \
             version that built it",
            wheel.path().display()
        )
    })
}

/// The `--option` arguments every Nix command of the rebuild gets after the
/// pinned ones: the binary cache's, then `max-jobs` (Nix takes the last
/// value given, so it overrides the pinned `auto`).
fn nix_options(substituter: Option<&Substituter>, max_jobs: Option<u32>) -> Vec<String> {
    let mut options = substituter
        .map(Substituter::nix_options)
        .unwrap_or_default();
    if let Some(jobs) = max_jobs {
        options.extend(["--option".into(), "max-jobs".into(), jobs.to_string()]);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_jobs_comes_after_the_binary_caches_options() {
        assert!(nix_options(None, None).is_empty());
        assert_eq!(nix_options(None, Some(1)), ["--option", "max-jobs", "1"]);
        let cache = Substituter::new(
            "file:///tmp/cache",
            "cache-1:q9ZfFg8QbOlyBbFW5qG4Nmj0jTuJjK5WSLtVt0dyYJ4=",
        )
        .unwrap();
        let both = nix_options(Some(&cache), Some(3));
        assert_eq!(&both[..cache.nix_options().len()], cache.nix_options());
        assert_eq!(&both[both.len() - 3..], ["--option", "max-jobs", "3"]);
    }
}

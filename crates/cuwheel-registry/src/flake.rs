//! The flake that builds a project, checked to build *this* project.
//!
//! `cuwheel plan`, `reproduce` and `cache export` ask a flake about a
//! project directory; the flake may build another project (the nearest
//! `flake.nix` above the directory, [`nearest_flake`], is only a guess), or
//! this project as git tracks it, without a file that is not added yet. In:
//! the flake, the project directory and the project files its wheels are
//! built from. Out: `Ok`, or an error naming each difference and the fix. The flake's side
//! is its `project` output (nix/lib.nix): the name, and the store paths of
//! the source and lock it builds from, whose files Nix hashes here in one
//! evaluation (no build).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::lock::format::LOCK_FILE;
use crate::nix::Nix;
use crate::store::Hash;
use crate::store::expr::nix_string;
use crate::wheel::ProjectName;

/// What the flake's evaluation reports.
#[derive(Debug, Deserialize)]
struct Seen {
    name: Option<String>,
    lock: Option<String>,
    /// Project-relative path → sha256, `None` when the flake lacks it.
    files: BTreeMap<String, Option<String>>,
}

/// Checks that `flake` builds the project in `dir`: the same
/// `[project].name`, and the same bytes in `pyproject.toml`, the lock and
/// every file of `sources` (project-relative paths).
pub fn check_builds_project<'a>(
    nix: &Nix,
    flake: &str,
    dir: &Path,
    sources: impl IntoIterator<Item = &'a String>,
) -> Result<()> {
    let mut files: Vec<String> = vec!["pyproject.toml".into()];
    files.extend(sources.into_iter().cloned());
    files.sort();
    files.dedup();
    let installable = format!("{flake}#project");
    let seen: Seen = nix
        .eval_json(&installable, Some(&apply(&files)))
        .with_context(|| {
            format!(
                "cannot ask {installable} which project it builds: is {flake} a flake made by \
                 cuwheel's lib.mkProject (docs/guide/init.md)? Pass --flake with the \
                 flake that builds {}",
                dir.display()
            )
        })?;

    let document = crate::lock::read_pyproject(&dir.join("pyproject.toml"))?;
    let name = document
        .get("project")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .unwrap_or_default();
    let same_name = match (
        ProjectName::new(name),
        seen.name.as_deref().map(ProjectName::new),
    ) {
        (Ok(ours), Some(Ok(theirs))) => ours == theirs,
        _ => false,
    };
    if !same_name {
        bail!(
            "the flake {flake} builds the project `{}`, not `{name}` in {}: pass --flake with the \
             flake that builds this project (its flake.nix calls cuwheel's lib.mkProject \
             with this directory as src)",
            seen.name.as_deref().unwrap_or("(no [project].name)"),
            dir.display()
        );
    }

    let mut problems = Vec::new();
    let mut untracked = Vec::new();
    let lock = dir.join(LOCK_FILE);
    let ours = sha256_file(&lock)?;
    if seen.lock.as_deref() != Some(ours.as_str()) {
        match seen.lock {
            Some(theirs) => problems.push(format!(
                "{LOCK_FILE}: sha256 {ours} here, {theirs} in the flake's lock"
            )),
            None => untracked.push(LOCK_FILE.to_string()),
        }
    }
    for file in &files {
        let ours = sha256_file(&dir.join(file))?;
        match seen.files.get(file).cloned().flatten() {
            None => untracked.push(file.clone()),
            Some(theirs) if theirs != ours => {
                problems.push(format!("{file}: sha256 {ours} here, {theirs} in the flake"))
            }
            Some(_) => {}
        }
    }
    if problems.is_empty() && untracked.is_empty() {
        return Ok(());
    }
    let mut message = format!(
        "the flake {flake} does not build the project in {} as it is:\n",
        dir.display()
    );
    for file in &untracked {
        message += &format!("  {file}: the flake does not see it\n");
    }
    for problem in &problems {
        message += &format!("  {problem}\n");
    }
    if !untracked.is_empty() {
        message += &format!(
            "A flake sees only the files git tracks: `git add {}` in the project, then run the \
             command again.",
            untracked.join(" ")
        );
    } else {
        message += "It builds another copy of the project: pass --flake with the flake whose \
                    source is this directory.";
    }
    bail!("{message}")
}

/// The nearest directory holding `flake.nix`, from `project` up: the flake
/// that builds the project, whose derivations `cuwheel plan` and
/// `cuwheel reproduce` ask Nix about.
pub fn nearest_flake(project: &Path) -> Result<Option<PathBuf>> {
    let start = project
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", project.display()))?;
    Ok(start
        .ancestors()
        .find(|dir| dir.join("flake.nix").is_file())
        .map(Path::to_path_buf))
}

/// [`nearest_flake`], or an error saying to name the flake.
pub fn find_flake(project: &Path) -> Result<PathBuf> {
    nearest_flake(project)?.with_context(|| {
        format!(
            "no flake.nix in {} or any directory above it: pass --flake REF, the flake that \
             builds this project",
            project.display()
        )
    })
}

/// The `--apply` function: the name, and each file's sha256 (`null` when
/// the flake's source lacks it), the lock's too.
fn apply(files: &[String]) -> String {
    let list: Vec<String> = files.iter().map(|f| nix_string(f)).collect();
    format!(
        "p: let hash = f: if builtins.pathExists f then builtins.hashFile \"sha256\" f else null; \
         in {{ name = p.name; lock = hash p.lock; files = builtins.listToAttrs (map (f: {{ name = f; \
         value = hash (p.src + \"/\" + f); }}) [ {} ]); }}",
        list.join(" ")
    )
}

fn sha256_file(path: &Path) -> Result<String> {
    let data = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Hash::sha256(data).to_hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_quoted_for_nix() {
        let apply = apply(&["pyproject.toml".into(), "x y.cu".into()]);
        assert!(
            apply.contains("[ \"pyproject.toml\" \"x y.cu\" ]"),
            "{apply}"
        );
    }
}

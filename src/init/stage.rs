//! After init wrote its files: `flake.lock`, and `git add` of what was
//! written, so that the project flake (which sees only tracked files)
//! builds, and nothing init made is left untracked.
//!
//! In: the project root and the file names written there. Out: what
//! happened, as lines for the report — each step done, or the exact
//! command to run when `nix` or `git` is missing or fails. The commands
//! are built by pure functions ([`flake_lock_command`], [`git_add_args`])
//! and run here.

use std::path::Path;
use std::process::Command;

/// The files init may write at the root, in the order they are staged.
pub const FILES: [&str; 4] = ["pyproject.toml", "flake.nix", "cuwheel.lock", "flake.lock"];

/// `nix flake lock` of the project flake: writes `flake.lock`, which pins
/// the cuwheel input (its revision and hash). The tree is dirty (init just
/// wrote it), which is expected, so Nix is told not to say so.
pub fn flake_lock_command(root: &Path) -> Command {
    let mut cmd = Command::new("nix");
    cmd.args([
        "--extra-experimental-features",
        "nix-command flakes",
        "--option",
        "warn-dirty",
        "false",
        "flake",
        "lock",
    ])
    .current_dir(root);
    cmd
}

/// `git -C ROOT add -- FILES`: the arguments after `git`.
pub fn git_add_args(root: &Path, files: &[&str]) -> Vec<String> {
    let mut args = vec![
        "-C".to_string(),
        root.display().to_string(),
        "add".to_string(),
        "--".to_string(),
    ];
    args.extend(files.iter().map(|f| f.to_string()));
    args
}

/// A command as a user types it, quoting what needs quoting.
pub fn shown(program: &str, args: &[String]) -> String {
    std::iter::once(program.to_string())
        .chain(args.iter().map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        }))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `root` is inside a git work tree; `Err` when git cannot run.
fn in_git_tree(root: &Path) -> Result<bool, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--is-inside-work-tree"])
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    Ok(output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "true")
}

/// Runs `git add` of the files of [`FILES`] that exist at `root`; the
/// report's lines. Outside a git work tree nothing is staged or said.
pub fn stage(root: &Path) -> Vec<String> {
    stage_files(root, &FILES)
}

/// Runs `git add` of those of `files` (relative to `root`) that exist; the
/// report's lines, as [`stage`].
pub fn stage_files(root: &Path, files: &[&str]) -> Vec<String> {
    let present: Vec<&str> = files
        .iter()
        .copied()
        .filter(|f| root.join(f).is_file())
        .collect();
    if present.is_empty() {
        return Vec::new();
    }
    let args = git_add_args(root, &present);
    let command = shown("git", &args);
    match in_git_tree(root) {
        Ok(false) => Vec::new(),
        Ok(true) => match Command::new("git").args(&args).output() {
            Ok(out) if out.status.success() => {
                vec![format!("init: staged {} (git add)", present.join(", "))]
            }
            Ok(out) => vec![format!(
                "init: `{command}` failed ({}): {}; run it once that is fixed (the project \
                 flake sees only tracked files)",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )],
            Err(e) => vec![format!(
                "init: cannot run git ({e}); stage the files with `{command}` (the project \
                 flake sees only tracked files)"
            )],
        },
        Err(why) => vec![format!(
            "init: {why}; if the project is a git repository, stage the files with \
             `{command}` (the project flake sees only tracked files)"
        )],
    }
}

/// Runs `nix flake lock` at `root` unless `flake.lock` is there; the
/// report's lines.
pub fn lock_flake(root: &Path) -> Vec<String> {
    lock_flake_with(root, "nix")
}

/// [`lock_flake`] with `program` as nix.
pub fn lock_flake_with(root: &Path, program: &str) -> Vec<String> {
    if root.join("flake.lock").is_file() {
        return Vec::new();
    }
    let template = flake_lock_command(root);
    let mut cmd = Command::new(program);
    cmd.args(template.get_args()).current_dir(root);
    let args: Vec<String> = template
        .get_args()
        .map(|a| a.to_string_lossy().to_string())
        .collect();
    let command = format!(
        "{} && {}",
        shown("cd", &[root.display().to_string()]),
        shown("nix", &args)
    );
    match cmd.output() {
        Ok(out) if out.status.success() => vec![
            "init: wrote flake.lock (nix flake lock): it pins the cuwheel input's revision"
                .to_string(),
        ],
        Ok(out) => vec![format!(
            "init: `nix flake lock` failed ({}): {}\n  write flake.lock with `{command}`",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )],
        Err(e) => vec![format!(
            "init: cannot run nix ({e}), so there is no flake.lock yet; write it with \
             `{command}` (it pins the cuwheel input's revision), then git add it"
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_shown_as_typed() {
        let args = git_add_args(Path::new("/tmp/my ext"), &["pyproject.toml", "flake.nix"]);
        assert_eq!(
            shown("git", &args),
            "git -C '/tmp/my ext' add -- pyproject.toml flake.nix"
        );
        let lock = flake_lock_command(Path::new("/p"));
        let args: Vec<String> = lock
            .get_args()
            .map(|a| a.to_string_lossy().to_string())
            .collect();
        assert_eq!(
            shown("nix", &args),
            "nix --extra-experimental-features 'nix-command flakes' --option warn-dirty false \
             flake lock"
        );
    }

    #[test]
    fn without_nix_the_flake_lock_command_is_printed() {
        let dir = tempfile::tempdir().unwrap();
        let lines = lock_flake_with(dir.path(), "/nonexistent/nix");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains(&format!(
                "write it with `cd {} && nix --extra-experimental-features 'nix-command flakes' \
                 --option warn-dirty false flake lock` (it pins the cuwheel input's revision)",
                dir.path().display()
            )),
            "{lines:?}"
        );
        // With a flake.lock there, nothing is run or said.
        std::fs::write(dir.path().join("flake.lock"), "{}").unwrap();
        assert!(lock_flake_with(dir.path(), "/nonexistent/nix").is_empty());
    }
}

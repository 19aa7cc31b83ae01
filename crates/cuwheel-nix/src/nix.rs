//! A thin, typed wrapper over the Nix 2.8 commands cuwheel calls: add a
//! fixed-output file, instantiate, realise, build and evaluate flake outputs, query
//! validity and path infos, show a derivation, and copy, sign and verify
//! paths of a binary cache. In: store paths and files; out: store paths and
//! parsed JSON, or a [`NixError`] that says what failed and what to do about
//! it.
//!
//! Every call pins the settings the project depends on — a real sandbox
//! that may not silently fall back to none, and no binary cache — so a
//! host's `nix.conf` cannot weaken a build; and it builds independent
//! derivations in parallel, one per core (`max-jobs = auto`: Nix's default
//! is one at a time). `cores` is left to Nix (default: every core), so each
//! build sees `NIX_BUILD_CORES` = the core count, which a kernel object's
//! nvcc reads for its `--threads`. With remote builders in `nix.conf`, Nix
//! offers each build to them first and uses local slots when they are busy.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::Deserialize;
use thiserror::Error;

use super::path::{FileIngestion, StorePath};

/// Settings passed to every Nix command (see the module doc for why).
/// Commands that build nothing (`nix-store --add-fixed`, `path-info`)
/// accept `max-jobs` and ignore it.
const PINNED_OPTIONS: &[(&str, &str)] = &[
    ("sandbox", "true"),
    ("sandbox-fallback", "false"),
    ("substituters", ""),
    ("max-jobs", "auto"),
];

#[derive(Debug, Error)]
pub enum NixError {
    #[error(
        "cannot run `{program}`: {source}. Install Nix 2.8 or later (on Debian and Ubuntu: \
         `apt-get install nix-bin`) and make sure `{program}` is on PATH"
    )]
    NotInstalled { program: String, source: io::Error },
    #[error("`{command}` failed ({status}):\n{stderr}{hint}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
        hint: Hint,
    },
    #[error("`{command}` printed something cuwheel cannot read ({problem}):\n{output}")]
    BadOutput {
        command: String,
        problem: String,
        output: String,
    },
}

/// What to do about a failure, when the failure is one we recognise.
#[derive(Debug, Default)]
pub struct Hint(Option<&'static str>);

impl std::fmt::Display for Hint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(hint) => write!(f, "\nhint: {hint}"),
            None => Ok(()),
        }
    }
}

/// Known failure texts of Nix 2.8 and the advice for each.
const HINTS: &[(&str, &str)] = &[
    (
        "specified in 'build-users-group' does not exist",
        "Nix builds as the unprivileged users of its `build-users-group`, and this machine has \
         no such group (Debian's nix-bin creates none): run `sudo bash scripts/setup-nix.sh` \
         from a cuwheel checkout, which creates the group `nixbld` and 32 build users the way \
         Nix's installer does and writes a sandboxed nix.conf",
    ),
    (
        "false-never-run",
        "a pinned artifact is not in the store yet: run `cuwheel fetch` to add it",
    ),
    (
        "hash mismatch in fixed-output derivation",
        "a pinned artifact's content differs from the lock: re-run `cuwheel lock`, or fetch it again",
    ),
    (
        "sandbox",
        "the Nix sandbox is required: on Debian, nix.conf ships `sandbox = false`; cuwheel passes \
         `--option sandbox true`, so check that this machine allows user/mount namespaces",
    ),
    (
        "cannot connect to socket",
        "no nix-daemon answers: run as root (which uses the store directly) or start nix-daemon",
    ),
    (
        "Permission denied",
        "this user cannot write the Nix store: run as root, start nix-daemon, or use a store of \
         your own with `--store DIR`",
    ),
    (
        "experimental Nix feature",
        "this Nix needs `--extra-experimental-features 'nix-command flakes'`",
    ),
];

fn hint_for(stderr: &str) -> Hint {
    Hint(
        HINTS
            .iter()
            .find(|(needle, _)| stderr.contains(needle))
            .map(|(_, hint)| *hint),
    )
}

/// One output of a derivation as `nix show-derivation` reports it.
#[derive(Debug, Deserialize, PartialEq, Eq)]
pub struct ShownOutput {
    pub path: Option<String>,
    #[serde(rename = "hashAlgo")]
    pub hash_algo: Option<String>,
    pub hash: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ShownDerivation {
    pub outputs: BTreeMap<String, ShownOutput>,
    /// Each input derivation's path and the outputs of it used.
    #[serde(rename = "inputDrvs", default)]
    pub input_drvs: BTreeMap<String, Vec<String>>,
}

/// One entry of `nix path-info --json --sigs`: what a store (local or a
/// binary cache) knows about a path. `valid` is false for a path it lacks,
/// and then nothing else is set.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PathInfo {
    pub path: String,
    #[serde(default = "valid_by_default")]
    pub valid: bool,
    #[serde(default)]
    pub nar_hash: String,
    #[serde(default)]
    pub nar_size: u64,
    #[serde(default)]
    pub references: Vec<String>,
    #[serde(default)]
    pub signatures: Vec<String>,
    pub ca: Option<String>,
    /// The compressed size, in a binary cache.
    pub download_size: Option<u64>,
}

fn valid_by_default() -> bool {
    true
}

/// The Nix commands, run against the system store or a store rooted at a
/// directory of the caller's (`--store DIR`, which needs no daemon and no
/// root: used by tests and for builds in a second, independent store).
#[derive(Clone, Debug, Default)]
pub struct Nix {
    store: Option<PathBuf>,
    /// `--option` arguments after the pinned ones (a binary cache to
    /// substitute from), which they override.
    options: Vec<String>,
}

impl Nix {
    pub fn system() -> Nix {
        Nix::default()
    }

    pub fn with_store_root(root: &Path) -> Nix {
        Nix {
            store: Some(root.to_owned()),
            options: Vec::new(),
        }
    }

    /// This Nix with `options` (`--option NAME VALUE` arguments, such as
    /// a binary cache's `Substituter::nix_options`)
    /// passed after the pinned ones on every call.
    pub fn with_options(mut self, options: Vec<String>) -> Nix {
        self.options = options;
        self
    }

    /// Where a store path's bytes are on this machine's file system.
    pub fn real_path(&self, path: &StorePath) -> PathBuf {
        let logical = PathBuf::from(path.to_absolute());
        match &self.store {
            Some(root) => root.join(logical.strip_prefix("/").expect("store paths are absolute")),
            None => logical,
        }
    }

    fn command(&self, program: &str) -> Command {
        self.command_on(program, self.store.as_deref().map(Path::as_os_str))
    }

    /// A command on another store than this one's (a binary cache's URL).
    fn command_on(&self, program: &str, store: Option<&std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        if program == "nix" {
            // A project flake is built from its work tree, which is dirty
            // whenever init or the user just changed it: not news.
            cmd.args(["--extra-experimental-features", "nix-command flakes"])
                .args(["--option", "warn-dirty", "false"]);
        }
        if let Some(store) = store {
            cmd.arg("--store").arg(store);
        }
        for (name, value) in PINNED_OPTIONS {
            cmd.args(["--option", name, value]);
        }
        cmd.args(&self.options);
        cmd
    }

    fn run(&self, mut cmd: Command) -> Result<String, NixError> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let command = describe(&cmd);
        let Output {
            status,
            stdout,
            stderr,
        } = cmd
            .output()
            .map_err(|source| NixError::NotInstalled { program, source })?;
        let stderr = String::from_utf8_lossy(&stderr).into_owned();
        if !status.success() {
            let hint = hint_for(&stderr);
            return Err(NixError::Failed {
                command,
                status: status.to_string(),
                stderr,
                hint,
            });
        }
        String::from_utf8(stdout).map_err(|e| NixError::BadOutput {
            command,
            problem: "not UTF-8".into(),
            output: String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn store_paths(&self, cmd: Command) -> Result<Vec<StorePath>, NixError> {
        let command = describe(&cmd);
        let stdout = self.run(cmd)?;
        stdout
            .lines()
            .filter(|l| !l.is_empty())
            // nix-instantiate prints `<drv>!<output>` when a derivation's
            // first output is not `out`; the `.drv` path is the part before.
            .map(|l| l.split_once('!').map_or(l, |(path, _)| path))
            .map(|l| {
                l.parse().map_err(|e| NixError::BadOutput {
                    command: command.clone(),
                    problem: format!("'{l}' is not a store path: {e}"),
                    output: stdout.clone(),
                })
            })
            .collect()
    }

    /// `nix-store --add-fixed [--recursive] sha256 FILE`: the file's path in
    /// the store, under the file's own name.
    pub fn add_fixed(&self, file: &Path, ingestion: FileIngestion) -> Result<StorePath, NixError> {
        let mut cmd = self.command("nix-store");
        cmd.arg("--add-fixed");
        if ingestion == FileIngestion::Recursive {
            cmd.arg("--recursive");
        }
        cmd.arg("sha256").arg(file);
        let command = describe(&cmd);
        let mut paths = self.store_paths(cmd)?;
        match (paths.pop(), paths.is_empty()) {
            (Some(path), true) => Ok(path),
            _ => Err(NixError::BadOutput {
                command,
                problem: "expected exactly one store path".into(),
                output: String::new(),
            }),
        }
    }

    /// `nix-instantiate FILE [-A ATTR]`: the `.drv` paths it writes.
    pub fn instantiate(&self, file: &Path, attr: Option<&str>) -> Result<Vec<StorePath>, NixError> {
        let mut cmd = self.command("nix-instantiate");
        cmd.arg(file);
        if let Some(attr) = attr {
            cmd.args(["-A", attr]);
        }
        self.store_paths(cmd)
    }

    /// `nix-store --realise DRV...`: builds and returns the output paths.
    pub fn realise(&self, drvs: &[StorePath]) -> Result<Vec<StorePath>, NixError> {
        let mut cmd = self.command("nix-store");
        cmd.arg("--realise")
            .args(drvs.iter().map(StorePath::to_absolute));
        self.store_paths(cmd)
    }

    /// Which of `paths` are valid (present and registered) in the store.
    pub fn valid_paths(&self, paths: &[StorePath]) -> Result<Vec<StorePath>, NixError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = self.command("nix-store");
        cmd.args(["--check-validity", "--print-invalid"])
            .args(paths.iter().map(StorePath::to_absolute));
        let invalid = self.store_paths(cmd)?;
        Ok(paths
            .iter()
            .filter(|p| !invalid.contains(p))
            .cloned()
            .collect())
    }

    /// `nix-store --realise DRV...` (whatever is missing), then `nix-store
    /// --realise --check --keep-going --keep-failed DRV...`: builds each
    /// derivation again and fails when an
    /// output's bytes differ; the differing output is kept at
    /// `<output>.check`.
    pub fn check(&self, drvs: &[StorePath]) -> Result<(), NixError> {
        // `--check` needs every output present; a garbage collection may
        // have removed an intermediate one (a binding) whose dependents (the
        // wheel) stayed: build what is missing first.
        self.realise(drvs)?;
        let mut cmd = self.command("nix-store");
        cmd.args(["--realise", "--check", "--keep-going", "--keep-failed"])
            .args(drvs.iter().map(StorePath::to_absolute));
        self.run(cmd).map(drop)
    }

    /// `nix show-derivation DRV...`, keyed by `.drv` path.
    pub fn show_derivation(
        &self,
        drvs: &[StorePath],
    ) -> Result<BTreeMap<String, ShownDerivation>, NixError> {
        let mut cmd = self.command("nix");
        cmd.arg("show-derivation")
            .args(drvs.iter().map(StorePath::to_absolute));
        self.json(cmd)
    }
}

impl Nix {
    /// `nix build --no-link --json INSTALLABLE...`: builds what is missing
    /// and returns every output path, in order.
    pub fn build(&self, installables: &[String]) -> Result<Vec<StorePath>, NixError> {
        let mut cmd = self.command("nix");
        cmd.args(["build", "--no-link", "--json"])
            .args(installables);
        let built: Vec<BuiltOutputs> = self.json(cmd)?;
        let mut paths = Vec::new();
        for outputs in built {
            for path in outputs.outputs.into_values() {
                paths.push(path.parse().map_err(|e| NixError::BadOutput {
                    command: "nix build --json".into(),
                    problem: format!("'{path}' is not a store path: {e}"),
                    output: String::new(),
                })?);
            }
        }
        Ok(paths)
    }

    /// `nix eval --json INSTALLABLE [--apply FUNCTION]`.
    pub fn eval_json<T: serde::de::DeserializeOwned>(
        &self,
        installable: &str,
        apply: Option<&str>,
    ) -> Result<T, NixError> {
        let mut cmd = self.command("nix");
        cmd.args(["eval", "--json", installable]);
        if let Some(apply) = apply {
            cmd.args(["--apply", apply]);
        }
        self.json(cmd)
    }

    /// `nix path-info --json --sigs [-r] PATH...` on this store, or on the
    /// store at `url` (a binary cache); a path the store lacks comes back
    /// with `valid: false` (the closure of one cannot be asked for).
    pub fn path_infos(
        &self,
        url: Option<&str>,
        paths: &[StorePath],
        closure: bool,
    ) -> Result<Vec<PathInfo>, NixError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = match url {
            Some(url) => self.command_on("nix", Some(url.as_ref())),
            None => self.command("nix"),
        };
        cmd.args(["path-info", "--json", "--sigs"]);
        if closure {
            cmd.arg("--recursive");
        }
        cmd.args(paths.iter().map(StorePath::to_absolute));
        self.json(cmd)
    }

    /// `nix copy --to URL PATH...`: the paths and their closure into the
    /// store at `url`; what it already has is skipped.
    pub fn copy_to(&self, url: &str, paths: &[StorePath]) -> Result<(), NixError> {
        let mut cmd = self.command("nix");
        cmd.args(["copy", "--to", url])
            .args(paths.iter().map(StorePath::to_absolute));
        self.run(cmd).map(drop)
    }

    /// `nix copy --from URL PATH...` into this store, with Nix's signature
    /// checks on and `options` (a substituter's trust settings) after the
    /// pinned ones.
    pub fn copy_from(
        &self,
        url: &str,
        options: &[String],
        paths: &[StorePath],
    ) -> Result<(), NixError> {
        let mut cmd = self.command("nix");
        cmd.args(options)
            .args(["copy", "--from", url])
            .args(paths.iter().map(StorePath::to_absolute));
        self.run(cmd).map(drop)
    }

    /// `nix store sign --store URL --key-file KEY PATH...`: adds this key's
    /// signature to the paths of the store at `url` that lack it.
    pub fn sign(&self, url: &str, key_file: &Path, paths: &[StorePath]) -> Result<(), NixError> {
        let mut cmd = self.command_on("nix", Some(url.as_ref()));
        cmd.args(["store", "sign", "--key-file"])
            .arg(key_file)
            .args(paths.iter().map(StorePath::to_absolute));
        self.run(cmd).map(drop)
    }

    /// `nix store verify --no-contents --sigs-needed 1` on the store at
    /// `url`, trusting only `public_key`: the paths Nix calls untrusted.
    /// Nix counts a content-addressed path as trusted whatever its
    /// signatures, so a caller that wants the signature itself checked
    /// passes a store whose path infos carry no content address.
    pub fn untrusted_paths(
        &self,
        url: &str,
        public_key: &str,
        paths: &[StorePath],
    ) -> Result<Vec<StorePath>, NixError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = self.command_on("nix", Some(url.as_ref()));
        cmd.args(["--option", "trusted-public-keys", public_key])
            .args(["store", "verify", "--no-contents", "--sigs-needed", "1"])
            .args(paths.iter().map(StorePath::to_absolute));
        match self.run(cmd) {
            Ok(_) => Ok(Vec::new()),
            Err(NixError::Failed {
                command,
                status,
                stderr,
                hint,
            }) => {
                let untrusted: Vec<StorePath> = stderr
                    .lines()
                    .filter_map(|line| {
                        let rest = line.strip_prefix("path '")?;
                        let (path, _) = rest.split_once("' is untrusted")?;
                        path.parse().ok()
                    })
                    .collect();
                if untrusted.is_empty() {
                    // Not a verdict on signatures (a missing path, a bad URL).
                    Err(NixError::Failed {
                        command,
                        status,
                        stderr,
                        hint,
                    })
                } else {
                    Ok(untrusted)
                }
            }
            Err(other) => Err(other),
        }
    }

    fn json<T: serde::de::DeserializeOwned>(&self, cmd: Command) -> Result<T, NixError> {
        let command = describe(&cmd);
        let stdout = self.run(cmd)?;
        serde_json::from_str(&stdout).map_err(|e| NixError::BadOutput {
            command,
            problem: e.to_string(),
            output: stdout,
        })
    }
}

#[derive(Deserialize)]
struct BuiltOutputs {
    outputs: BTreeMap<String, String>,
}

fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program().to_owned())
        .chain(cmd.get_args().map(|a| {
            let a = a.to_string_lossy();
            OsString::from(if a.is_empty() || a.contains(' ') {
                format!("'{a}'")
            } else {
                a.into_owned()
            })
        }))
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_carry_advice() {
        assert!(
            hint_for("error: executing '/bin/false-never-run': No such file")
                .to_string()
                .contains("cuwheel fetch")
        );
        assert_eq!(hint_for("something else").to_string(), "");
    }

    #[test]
    fn every_call_pins_the_sandbox_and_builds_in_parallel() {
        for program in ["nix-store", "nix", "nix-instantiate"] {
            let text = describe(&Nix::system().command(program));
            assert!(
                text.contains(
                    "--option sandbox true --option sandbox-fallback false --option substituters '' \
                     --option max-jobs auto"
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn flake_commands_do_not_warn_of_a_dirty_tree() {
        let text = describe(&Nix::system().command("nix"));
        assert!(text.contains("--option warn-dirty false"), "{text}");
    }

    #[test]
    fn missing_program_says_how_to_install() {
        let err = Nix::system()
            .run(Command::new("nix-definitely-not-installed"))
            .unwrap_err();
        assert!(err.to_string().contains("apt-get install nix-bin"), "{err}");
    }
}

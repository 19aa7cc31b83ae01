//! A thin, typed wrapper over the Nix commands cuwheel calls (Nix 2.8 to
//! the newest): add a fixed-output file, instantiate, realise, build and
//! evaluate flake outputs, query validity and closures, read a derivation
//! and a binary cache's path infos, and copy, sign and verify paths of a
//! binary cache. In: store paths and files; out: store paths and parsed
//! data, or a [`NixError`] that says what failed and what to do about it.
//!
//! Nix's own data is read in forms no release has changed: `.drv` files
//! from the store (not `nix derivation show`), `nix-store --query` text,
//! and a `file://` cache's `.narinfo` files; `nix path-info --json` only for
//! other caches, in any shape a release printed ([`crate::store::path_info`]).
//! Before building or substituting, the Nix at hand is probed once
//! ([`crate::store::setup`]): too old, a daemon that would build unsandboxed, or
//! one that ignores the cache settings of an untrusted user is refused with
//! the `nix.conf` lines that fix it.
//!
//! Every call pins the settings the project depends on — a real sandbox
//! that may not silently fall back to none, and no binary cache — so a
//! host's `nix.conf` cannot weaken a build; and it builds independent
//! derivations in parallel, one per core (`max-jobs = auto`: Nix's default
//! is one at a time). `cores` is left to Nix (default: every core), so each
//! build sees `NIX_BUILD_CORES` = the core count, which a kernel object's
//! nvcc reads for its `--threads`. With remote builders in `nix.conf`, Nix
//! offers each build to them first and uses local slots when they are busy.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use thiserror::Error;

use crate::store::derivation::Derivation;
use crate::store::narinfo::NarInfo;
use crate::store::path::{FileIngestion, StorePath};
pub use crate::store::path_info::PathInfo;
use crate::store::path_info::parse_path_info_json;
use crate::store::setup::{
    self, CONFIG_SHOW_SINCE, JSON_FORMAT_SINCE, NixSetup, STORE_INFO_SINCE, Version, WantedCache,
};
use crate::store::shown_command::{excerpt, shown_command};

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
    #[error("`{command}` printed something cuwheel cannot read ({problem}):\n{}", excerpt(.output, 600))]
    BadOutput {
        command: String,
        problem: String,
        output: String,
    },
    /// The Nix at hand cannot be used as it is set up (see [`setup`]).
    #[error("{0}")]
    Refused(String),
    #[error("cannot read {path}: {problem}")]
    Unreadable { path: String, problem: String },
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

/// The Nix commands, run against the system store or a store rooted at a
/// directory of the caller's (`--store DIR`, which needs no daemon and no
/// root: used by tests and for builds in a second, independent store).
#[derive(Clone, Debug, Default)]
pub struct Nix {
    store: Option<PathBuf>,
    /// `--option` arguments after the pinned ones (a binary cache to
    /// substitute from), which they override.
    options: Vec<String>,
    /// The probed setup, once per store and options (shared by clones).
    setup: Arc<OnceLock<Result<NixSetup, String>>>,
}

impl Nix {
    pub fn system() -> Nix {
        Nix::default()
    }

    pub fn with_store_root(root: &Path) -> Nix {
        Nix {
            store: Some(root.to_owned()),
            ..Nix::default()
        }
    }

    /// This Nix with `options` (`--option NAME VALUE` arguments, such as
    /// a binary cache's `Substituter::nix_options`)
    /// passed after the pinned ones on every call.
    pub fn with_options(mut self, options: Vec<String>) -> Nix {
        self.options = options;
        self.setup = Arc::default();
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
        self.preflight(true, wanted_cache(&self.options).as_ref())?;
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

    /// A `.drv` file of the store, parsed (the ATerm format every Nix
    /// writes), not `nix derivation show`'s JSON, which changed shape.
    pub fn read_derivation(&self, drv: &StorePath) -> Result<Derivation, NixError> {
        let file = self.real_path(drv);
        let unreadable = |problem: String| NixError::Unreadable {
            path: file.display().to_string(),
            problem,
        };
        let name = drv
            .name()
            .strip_suffix(".drv")
            .ok_or_else(|| unreadable("not a .drv file".into()))?;
        let bytes = std::fs::read(&file).map_err(|e| unreadable(e.to_string()))?;
        Derivation::parse(&bytes, name).map_err(|e| unreadable(e.to_string()))
    }

    /// `nix-store --read-log DRV`: the log of the derivation's last build
    /// here, or `None` where Nix keeps none (never built here, substituted,
    /// or its log collected).
    pub fn read_log(&self, drv: &StorePath) -> Result<Option<String>, NixError> {
        let mut cmd = self.command("nix-store");
        cmd.args(["--read-log", &drv.to_absolute()]);
        match self.run(cmd) {
            Err(NixError::Failed { stderr, .. }) if stderr.contains("is not available") => Ok(None),
            other => other.map(Some),
        }
    }

    /// `nix-store --query --requisites PATH...`: the paths and everything
    /// they refer to, directly or not.
    pub fn closure(&self, paths: &[StorePath]) -> Result<Vec<StorePath>, NixError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = self.command("nix-store");
        cmd.args(["--query", "--requisites"])
            .args(paths.iter().map(StorePath::to_absolute));
        self.store_paths(cmd)
    }

    /// `nix-store --query --outputs DRV`: the output paths of a derivation.
    pub fn outputs(&self, drv: &StorePath) -> Result<Vec<StorePath>, NixError> {
        let mut cmd = self.command("nix-store");
        cmd.args(["--query", "--outputs"]).arg(drv.to_absolute());
        self.store_paths(cmd)
    }
}

impl Nix {
    /// `nix build --no-link --json INSTALLABLE...`: builds what is missing
    /// and returns every output path, in order.
    pub fn build(&self, installables: &[String]) -> Result<Vec<StorePath>, NixError> {
        self.preflight(true, wanted_cache(&self.options).as_ref())?;
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

    /// What the binary cache at `url` holds of `paths`, in their order; a
    /// path it lacks comes back with `valid: false`. A `file://` cache's
    /// `.narinfo` files are read directly; another cache through `nix
    /// path-info --json` (whatever its shape, with `--json-format` where
    /// this Nix has it).
    pub fn path_infos(&self, url: &str, paths: &[StorePath]) -> Result<Vec<PathInfo>, NixError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(dir) = url.strip_prefix("file://") {
            let dir = Path::new(dir.split_once('?').map_or(dir, |(dir, _)| dir));
            return paths.iter().map(|path| narinfo_of(dir, path)).collect();
        }
        let version = self.setup().map_err(NixError::Refused)?.version;
        let mut cmd = self.command_on("nix", Some(url.as_ref()));
        cmd.args(["path-info", "--json", "--sigs"]);
        if version >= JSON_FORMAT_SINCE {
            cmd.args(["--json-format", "1"]);
        }
        cmd.args(paths.iter().map(StorePath::to_absolute));
        let command = describe(&cmd);
        let stdout = self.run(cmd)?;
        let infos = parse_path_info_json(&stdout).map_err(|problem| NixError::BadOutput {
            command,
            problem,
            output: stdout,
        })?;
        let by_path: BTreeMap<&str, &PathInfo> =
            infos.iter().map(|i| (i.path.as_str(), i)).collect();
        Ok(paths
            .iter()
            .map(|p| {
                by_path
                    .get(p.to_absolute().as_str())
                    .map_or_else(|| PathInfo::missing(p), |i| (*i).clone())
            })
            .collect())
    }

    /// What this machine's store (or its daemon's) knows of `paths`, with
    /// each valid one's registration time.
    pub fn local_path_infos(&self, paths: &[StorePath]) -> Result<Vec<PathInfo>, NixError> {
        self.path_infos("auto", paths)
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
        self.preflight(false, wanted_cache(options).as_ref())?;
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

impl Nix {
    /// The Nix at hand, probed once (see [`setup`]): `nix --version`, its
    /// settings (`nix config show`, or `nix show-config` before 2.20), and
    /// the settings the store ignores of cuwheel's options (`nix store info`,
    /// or `nix store ping` before 2.19, with every option cuwheel passes: a
    /// daemon warns of each it ignores).
    pub fn setup(&self) -> Result<&NixSetup, String> {
        self.setup
            .get_or_init(|| self.probe().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn probe(&self) -> Result<NixSetup, NixError> {
        let mut cmd = Command::new("nix");
        cmd.arg("--version");
        let line = self.run(cmd)?;
        let version = Version::from_version_line(&line).ok_or_else(|| NixError::BadOutput {
            command: "nix --version".into(),
            problem: "no version number".into(),
            output: line.clone(),
        })?;
        let mut cmd = Command::new("nix");
        cmd.args(["--extra-experimental-features", "nix-command"]);
        if version >= CONFIG_SHOW_SINCE {
            cmd.args(["config", "show"]);
        } else {
            cmd.arg("show-config");
        }
        let settings = setup::parse_config(&self.run(cmd)?);
        Ok(NixSetup {
            version,
            settings,
            ignored: self.ignored_of(version, &[])?,
            user: std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| "YOUR_USER".into()),
        })
    }

    /// The settings the store ignores of cuwheel's options and `extra`:
    /// `nix store info` (`nix store ping` before 2.19) with them, whose
    /// connection to a daemon makes the daemon warn of each it ignores.
    fn ignored_of(&self, version: Version, extra: &[String]) -> Result<BTreeSet<String>, NixError> {
        let mut cmd = self.command("nix");
        cmd.args([
            "store",
            if version >= STORE_INFO_SINCE {
                "info"
            } else {
                "ping"
            },
        ]);
        cmd.args(extra);
        let command = describe(&cmd);
        let output = cmd.output().map_err(|source| NixError::NotInstalled {
            program: "nix".into(),
            source,
        })?;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if !output.status.success() {
            return Err(NixError::Failed {
                command,
                status: output.status.to_string(),
                hint: hint_for(&stderr),
                stderr,
            });
        }
        Ok(setup::ignored_settings(&stderr))
    }

    /// Refuses, before anything is copied, a binary cache this Nix would
    /// not substitute from (a daemon ignoring an untrusted user's cache
    /// settings), with the `nix.conf` lines that fix it.
    pub fn check_cache(&self, cache_options: &[String]) -> Result<(), NixError> {
        let Some(cache) = wanted_cache(cache_options) else {
            return self.preflight(false, None);
        };
        // The probe passed cuwheel's own options only: what the store
        // makes of the cache's is asked with them.
        let mut setup = self.setup().map_err(NixError::Refused)?.clone();
        let ignored = self.ignored_of(setup.version, cache_options)?;
        setup.ignored.extend(ignored);
        setup
            .check(false, Some(&cache))
            .map_err(|refusal| NixError::Refused(refusal.0))
    }

    /// Refuses what this Nix cannot do as cuwheel needs it: build in a
    /// sandbox (`building`), or substitute from `cache`.
    fn preflight(&self, building: bool, cache: Option<&WantedCache>) -> Result<(), NixError> {
        let setup = self.setup().map_err(NixError::Refused)?;
        setup
            .check(building, cache)
            .map_err(|refusal| NixError::Refused(refusal.0))
    }
}

/// The binary cache `--option substituters URL` and `--option
/// trusted-public-keys KEY` in `options` ask for, if any.
fn wanted_cache(options: &[String]) -> Option<WantedCache> {
    let value = |name: &str| {
        options
            .windows(3)
            .rfind(|w| w[0] == "--option" && w[1] == name)
            .map(|w| w[2].clone())
    };
    let url = value("substituters").filter(|u| !u.is_empty())?;
    Some(WantedCache {
        url,
        public_key: value("trusted-public-keys").unwrap_or_default(),
    })
}

/// The `.narinfo` of `path` in the `file://` cache at `dir`.
fn narinfo_of(dir: &Path, path: &StorePath) -> Result<PathInfo, NixError> {
    let file = dir.join(format!("{}.narinfo", path.hash_part()));
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(PathInfo::missing(path)),
        Err(e) => {
            return Err(NixError::Unreadable {
                path: file.display().to_string(),
                problem: e.to_string(),
            });
        }
    };
    let info = NarInfo::parse(&text).map_err(|e| NixError::Unreadable {
        path: file.display().to_string(),
        problem: e.to_string(),
    })?;
    if &info.store_path != path {
        return Err(NixError::Unreadable {
            path: file.display().to_string(),
            problem: format!("it describes {}, not {path}", info.store_path),
        });
    }
    Ok(PathInfo::from_narinfo(&info))
}

#[derive(Deserialize)]
struct BuiltOutputs {
    outputs: BTreeMap<String, String>,
}

fn describe(cmd: &Command) -> String {
    shown_command(
        &cmd.get_program().to_string_lossy(),
        cmd.get_args().map(|a| a.to_string_lossy().into_owned()),
    )
}

#[cfg(test)]
#[path = "nix_tests.rs"]
mod tests;

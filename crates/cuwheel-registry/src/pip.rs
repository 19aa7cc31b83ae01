//! pip, as cuwheel's only way to PyPI: its resolver picks the files
//! (`pip install --dry-run --report`, which names each file, its sha256 and
//! its metadata without downloading it), its index listing names the
//! releases (`pip index versions`), and its downloader fetches one pinned
//! file (`pip download --no-deps`). The user's pip configuration (index, proxy,
//! credentials) applies; cuwheel never sees or stores a URL, only the file's
//! base name.
//!
//! In: requirements and a target (Python version, platform tags), or a pinned
//! wheel's name, version and file name. Out: [`ResolvedWheel`]s, or the file
//! in a directory. The report parsing and the argument building are pure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::net::NetLimits;
use crate::process::checked_output;
use crate::spec::{Baseline, PythonAbi, PythonVersion};
use crate::wheel::pep503::normalize_name;
use crate::wheel::{Arch, WheelFilename};

/// One file pip's resolver chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedWheel {
    /// Normalized (PEP 503).
    pub name: String,
    pub version: String,
    /// The file's base name.
    pub file: String,
    /// Hex.
    pub sha256: String,
    /// Its metadata's `Requires-Dist`, as written.
    pub requires_dist: Vec<String>,
}

/// What a resolution is for: the interpreter and platforms wheels must suit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub python: PythonVersion,
    /// `cp313t` for a free-threaded interpreter; `None` takes pip's ABIs
    /// for the version (`cp313`, `abi3`, `none`).
    pub abi: Option<String>,
    /// Platform tags, most specific first.
    pub platforms: Vec<String>,
}

impl Target {
    /// CPython `python` on every manylinux platform a wheel built for
    /// `baseline` may depend on: `manylinux_2_<n>_x86_64` for n from the
    /// baseline's glibc down to 2.5, and the legacy aliases.
    pub fn manylinux(python: PythonVersion, baseline: &Baseline) -> Target {
        Target::manylinux_for(python, baseline, Arch::X86_64)
    }

    /// [`Target::manylinux`] for `arch`. aarch64's tags start at
    /// `manylinux_2_17` (`manylinux2014`): no older policy exists for it.
    /// pip matches each tag exactly, so every one from the baseline's glibc
    /// down is listed: torch's aarch64 dependencies carry `2_17` to `2_28`.
    pub fn manylinux_for(python: PythonVersion, baseline: &Baseline, arch: Arch) -> Target {
        if arch != Arch::X86_64 {
            let mut platforms: Vec<String> = (17..=baseline.glibc_minor)
                .rev()
                .map(|minor| format!("manylinux_{}_{minor}_{arch}", baseline.glibc_major))
                .collect();
            if baseline.glibc_major > 2 || baseline.glibc_minor >= 17 {
                platforms.push(format!("manylinux2014_{arch}"));
            }
            return Target {
                python,
                abi: None,
                platforms,
            };
        }
        let mut platforms: Vec<String> = (5..=baseline.glibc_minor)
            .rev()
            .map(|minor| format!("manylinux_{}_{minor}_x86_64", baseline.glibc_major))
            .collect();
        for (alias, minor) in [
            ("manylinux2014", 17),
            ("manylinux2010", 12),
            ("manylinux1", 5),
        ] {
            if baseline.glibc_major > 2 || baseline.glibc_minor >= minor {
                platforms.push(format!("{alias}_x86_64"));
            }
        }
        Target {
            python,
            abi: None,
            platforms,
        }
    }

    /// [`Target::manylinux`] for one CPython build, free-threaded ones by
    /// their ABI tag (and `none`, for pure wheels among dependencies).
    pub fn for_abi(python: PythonAbi, baseline: &Baseline) -> Target {
        Target::for_abi_on(python, baseline, Arch::X86_64)
    }

    /// [`Target::for_abi`] for `arch`.
    pub fn for_abi_on(python: PythonAbi, baseline: &Baseline, arch: Arch) -> Target {
        Target {
            abi: python.free_threaded.then(|| python.abi_tag()),
            ..Target::manylinux_for(python.version, baseline, arch)
        }
    }

    fn args(&self) -> Vec<String> {
        let mut args = vec![
            "--only-binary=:all:".to_owned(),
            "--implementation".to_owned(),
            "cp".to_owned(),
            "--python-version".to_owned(),
            self.python.to_string(),
        ];
        if let Some(abi) = &self.abi {
            args.extend([
                "--abi".to_owned(),
                abi.clone(),
                "--abi".to_owned(),
                "none".to_owned(),
            ]);
        }
        for platform in &self.platforms {
            args.extend(["--platform".to_owned(), platform.clone()]);
        }
        args
    }
}

#[derive(Deserialize)]
struct Report {
    install: Vec<ReportItem>,
}

#[derive(Deserialize)]
struct ReportItem {
    metadata: ReportMetadata,
    download_info: DownloadInfo,
}

#[derive(Deserialize)]
struct ReportMetadata {
    name: String,
    version: String,
    #[serde(default)]
    requires_dist: Vec<String>,
}

#[derive(Deserialize)]
struct DownloadInfo {
    url: String,
    archive_info: Option<ArchiveInfo>,
}

#[derive(Deserialize)]
struct ArchiveInfo {
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
    hash: Option<String>,
}

/// Reads pip's installation report (format version 1): each file's name,
/// version, base name and sha256. The URL is read only for its base name.
pub fn parse_report(json: &str) -> Result<Vec<ResolvedWheel>> {
    let report: Report =
        serde_json::from_str(json).context("pip's report is not what pip 22.2+ writes")?;
    report
        .install
        .into_iter()
        .map(|item| {
            let name = normalize_name(&item.metadata.name);
            let file = item
                .download_info
                .url
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .split(['#', '?'])
                .next()
                .unwrap_or_default()
                .to_owned();
            if !file.ends_with(".whl") {
                bail!(
                    "pip chose {file} for {name}, which is not a wheel; cuwheel pins wheels only"
                );
            }
            let archive = item.download_info.archive_info;
            let sha256 = archive
                .as_ref()
                .and_then(|a| a.hashes.get("sha256").cloned())
                .or_else(|| {
                    archive
                        .as_ref()?
                        .hash
                        .as_ref()?
                        .strip_prefix("sha256=")
                        .map(str::to_owned)
                })
                .with_context(|| {
                    format!(
                        "pip's report gives no sha256 for {file}: the package index must publish \
                         sha256 hashes (PyPI does) for cuwheel to pin it"
                    )
                })?;
            Ok(ResolvedWheel {
                name,
                version: item.metadata.version,
                file,
                sha256,
                requires_dist: item.metadata.requires_dist,
            })
        })
        .collect()
}

/// The versions `pip index versions` lists, newest first: its line
/// `Available versions: 2.15.0, 2.14.1, …`. pip marks the command
/// experimental, so anything else is an error naming what pip printed.
pub fn parse_index_versions(output: &str) -> Result<Vec<String>> {
    let line = output
        .lines()
        .find_map(|line| line.trim().strip_prefix("Available versions:"))
        .with_context(|| {
            format!(
                "`pip index versions` printed no `Available versions:` line (pip's output changed?);                  it printed:\n{}",
                output.trim()
            )
        })?;
    Ok(line
        .split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect())
}

/// The `pip download` target options that select exactly `file`: its Python,
/// ABI and platform tags.
pub fn download_args(file: &str) -> Result<Vec<String>> {
    let parsed = WheelFilename::parse(file).map_err(|e| anyhow::anyhow!("{e}"))?;
    let tags = parsed.tags.expand();
    let mut args = vec!["--only-binary=:all:".to_owned()];
    let mut seen = std::collections::BTreeSet::new();
    for tag in &tags {
        if let Some(digits) = tag.python.strip_prefix("cp") {
            if let Some(python) = PythonVersion::from_compact(digits) {
                if seen.insert(("python", python.to_string())) {
                    args.extend([
                        "--implementation".to_owned(),
                        "cp".to_owned(),
                        "--python-version".to_owned(),
                        python.to_string(),
                    ]);
                }
            }
        }
        if seen.insert(("abi", tag.abi.clone())) {
            args.extend(["--abi".to_owned(), tag.abi.clone()]);
        }
        if seen.insert(("platform", tag.platform.clone())) {
            args.extend(["--platform".to_owned(), tag.platform.clone()]);
        }
    }
    Ok(args)
}

/// How to run pip: `python -m pip`.
#[derive(Debug, Clone)]
pub struct Pip {
    /// The interpreter named (`--python`); `None`: cuwheel's own venv.
    given: Option<PathBuf>,
    /// cuwheel's venv, made on first use ([`super::pip_venv`]), or why not.
    managed: Arc<OnceLock<std::result::Result<PathBuf, String>>>,
}

impl Pip {
    /// `python`'s pip or, when none is given, the pip of a venv cuwheel
    /// makes once in its cache (never a system pip).
    pub fn new(python: Option<&Path>) -> Pip {
        Pip {
            given: python.map(Path::to_path_buf),
            managed: Arc::default(),
        }
    }

    /// The interpreter that runs pip.
    pub fn python(&self) -> Result<PathBuf> {
        if let Some(python) = &self.given {
            return Ok(python.clone());
        }
        self.managed
            .get_or_init(|| super::pip_venv::managed_python().map_err(|e| format!("{e:#}")))
            .clone()
            .map_err(anyhow::Error::msg)
    }

    /// The interpreter's name for messages.
    fn shown(&self) -> String {
        match &self.given {
            Some(python) => python.display().to_string(),
            None => "cuwheel's pip venv".to_owned(),
        }
    }

    /// `python -m pip` with cuwheel's network limits, logging everything
    /// to `log` (pip's debug log, read only to tell an unreachable index
    /// from one without the release).
    fn command(&self, log: &Path) -> Result<Command> {
        let mut cmd = Command::new(self.python()?);
        cmd.args(["-m", "pip"])
            .args(NetLimits::current().pip_args())
            .arg("--log")
            .arg(log)
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("PIP_NO_INPUT", "1");
        Ok(cmd)
    }

    /// What pip would install for `requirement` on `target`, dependencies
    /// included when `with_deps` is set. Nothing is downloaded but metadata.
    pub fn resolve(
        &self,
        requirement: &str,
        target: &Target,
        with_deps: bool,
    ) -> Result<Vec<ResolvedWheel>> {
        match self.resolve_if_any(requirement, target, with_deps)? {
            Some(resolved) => Ok(resolved),
            None => bail!(
                "pip finds nothing that satisfies {requirement} for Python {}{} on {}: check the \
                 version, and that your pip configuration points at an index that has it",
                target.python,
                target
                    .abi
                    .as_ref()
                    .map(|abi| format!(" ({abi})"))
                    .unwrap_or_default(),
                target
                    .platforms
                    .first()
                    .map_or("any platform", String::as_str)
            ),
        }
    }

    /// [`Pip::resolve`], or `None` when no release satisfies `requirement`
    /// for `target` (pip's "No matching distribution found").
    pub fn resolve_if_any(
        &self,
        requirement: &str,
        target: &Target,
        with_deps: bool,
    ) -> Result<Option<Vec<ResolvedWheel>>> {
        let dir = tempfile::tempdir().context("cannot create a temporary directory for pip")?;
        let report = dir.path().join("report.json");
        let log = dir.path().join("pip.log");
        let mut cmd = self.command(&log)?;
        cmd.args([
            "install",
            "--dry-run",
            "--ignore-installed",
            "-q",
            "--report",
        ])
        .arg(&report)
        // pip before 24 refuses platform options without a target dir;
        // with --dry-run nothing is written there.
        .arg("--target")
        .arg(dir.path().join("target"))
        .args(target.args());
        if !with_deps {
            cmd.arg("--no-deps");
        }
        cmd.arg(requirement);
        let what = format!(
            "pip's resolution of {requirement} for Python {}",
            target.python
        );
        let output = cmd.output().with_context(|| self.cannot_start(&what))?;
        if !output.status.success() {
            unreachable_index(&what, &log)?;
            let stderr = String::from_utf8_lossy(&output.stderr);
            if stderr.contains("No matching distribution found") {
                return Ok(None);
            }
            bail!("{what} failed ({}):\n{}", output.status, stderr.trim_end());
        }
        let json = std::fs::read_to_string(&report)
            .with_context(|| format!("pip wrote no report at {}", report.display()))?;
        parse_report(&json)
            .map(Some)
            .with_context(|| format!("in pip's report for {requirement}"))
    }

    /// The releases of `package` with a file for `target`, newest first;
    /// empty when there is none.
    pub fn index_versions(&self, package: &str, target: &Target) -> Result<Vec<String>> {
        let dir = tempfile::tempdir().context("cannot create a temporary directory for pip")?;
        let log = dir.path().join("pip.log");
        let mut cmd = self.command(&log)?;
        cmd.args(["index", "versions", package]).args(target.args());
        let output = cmd.output().with_context(|| {
            format!(
                "cannot run {} -m pip index versions: install Python 3 with pip 21.2 or later, \
                 or name an interpreter that has it with --python",
                self.shown()
            )
        })?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            unreachable_index(
                &format!("pip's listing of {package} for Python {}", target.python),
                &log,
            )?;
            if stderr.contains("No matching distribution found") {
                return Ok(Vec::new());
            }
            bail!(
                "pip's listing of {package} for Python {} failed ({}):\n{}",
                target.python,
                output.status,
                stderr.trim()
            );
        }
        parse_index_versions(&String::from_utf8_lossy(&output.stdout))
            .with_context(|| format!("in pip's listing of {package}"))
    }

    /// `pip download --no-deps name==version` of exactly `file` into `dir`;
    /// `TMPDIR` is `dir` too, so the partial download is visible there.
    pub fn download(&self, name: &str, version: &str, file: &str, dir: &Path) -> Result<PathBuf> {
        let logs = tempfile::tempdir().context("cannot create a temporary directory for pip")?;
        let log = logs.path().join("pip.log");
        let mut cmd = self.command(&log)?;
        cmd.args(["download", "--no-deps", "-q", "-d"])
            .arg(dir)
            .args(download_args(file)?)
            .arg(format!("{name}=={version}"))
            .env("TMPDIR", dir);
        let what = format!("pip download of {file}");
        if let Err(error) = self.run(cmd, &what) {
            unreachable_index(&what, &log)?;
            return Err(error);
        }
        let path = dir.join(file);
        if !path.is_file() {
            let found: Vec<String> = std::fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                        .filter(|n| n.ends_with(".whl"))
                        .collect()
                })
                .unwrap_or_default();
            bail!(
                "pip download of {name}=={version} did not give {file} (it gave: {}): the index \
                 no longer serves the locked file; run `cuwheel lock` again",
                if found.is_empty() {
                    "nothing".to_owned()
                } else {
                    found.join(", ")
                }
            );
        }
        Ok(path)
    }

    fn run(&self, mut cmd: Command, what: &str) -> Result<()> {
        checked_output(&mut cmd, what, || self.cannot_start(what))?;
        Ok(())
    }

    fn cannot_start(&self, what: &str) -> String {
        format!(
            "cannot run {} -m pip for {what}: install Python 3 with pip 22.2 or later, or \
             name an interpreter that has it with --python",
            self.shown()
        )
    }
}

/// pip could not reach its package index: its answer ("no matching
/// distribution") says nothing about which releases exist.
#[derive(Debug, thiserror::Error)]
#[error(
    "{what} failed: pip could not reach the package index ({reason}), so cuwheel cannot tell \
     which releases exist (this is not a missing release). Fix: check the network connection \
     and any proxy (HTTPS_PROXY, pip's `proxy` setting), the index pip is configured with \
     (`pip config list`, PIP_INDEX_URL), or give a slow index more time with {limits}; \
     `cuwheel fetch --offline` uses only what is cached"
)]
pub struct IndexUnreachable {
    pub what: String,
    /// Why, as pip's log says it (`[Errno 111] Connection refused`).
    pub reason: String,
    limits: String,
}

/// An [`IndexUnreachable`] error when pip's log at `log` shows that it
/// could not reach an index.
fn unreachable_index(what: &str, log: &Path) -> Result<(), IndexUnreachable> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    match unreachable_reason(&text) {
        Some(reason) => Err(IndexUnreachable {
            what: what.to_owned(),
            reason,
            limits: NetLimits::how_to_change(),
        }),
        None => Ok(()),
    }
}

/// Why pip could not reach an index, from its debug log: its `Could not
/// fetch URL …: connection error | timed out | … ssl certificate` lines and
/// urllib3's `connection broken by` retries; `None` when every page it
/// asked for answered (an HTTP error such as 404 is an answer). The URL is
/// never quoted (it may hold credentials): only the cause.
pub fn unreachable_reason(log: &str) -> Option<String> {
    let line = log.lines().find(|line| {
        let fetch_failed = line.contains("Could not fetch URL")
            && (line.contains(": connection error:")
                || line.contains(": timed out")
                || line.contains("problem confirming the ssl certificate"));
        fetch_failed
            || line.contains("after connection broken by")
            || (line.contains("Max retries exceeded") && line.contains("Caused by"))
    })?;
    let reason = if let Some(start) = line.find("[Errno ") {
        let rest = &line[start..];
        let end = rest.find(['\'', '"', ')']).unwrap_or(rest.len());
        rest[..end].trim().to_owned()
    } else if line.contains("ssl certificate") || line.contains("SSLError") {
        "its TLS certificate could not be verified".to_owned()
    } else if line.contains("ProxyError") {
        "the proxy refused or failed the connection".to_owned()
    } else if line.contains("timed out") || line.contains("Timeout") {
        "the connection timed out".to_owned()
    } else if line.contains("NameResolutionError") {
        "its host name does not resolve".to_owned()
    } else {
        "connection error".to_owned()
    };
    Some(reason)
}

#[cfg(test)]
#[path = "pip_tests.rs"]
mod tests;

//! pip, as cuwheel's only way to PyPI: its resolver picks the files
//! (`pip install --dry-run --report`, which names each file and its sha256
//! without downloading it) and its downloader fetches one pinned file
//! (`pip download --no-deps`). The user's pip configuration (index, proxy,
//! credentials) applies; cuwheel never sees or stores a URL, only the file's
//! base name.
//!
//! In: requirements and a target (Python version, platform tags), or a pinned
//! wheel's name, version and file name. Out: [`ResolvedWheel`]s, or the file
//! in a directory. The report parsing and the argument building are pure.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::process::checked_output;
use crate::spec::{Baseline, PythonVersion};
use crate::wheel::WheelFilename;
use crate::wheel::pep503::normalize_name;

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
}

/// What a resolution is for: the interpreter and platforms wheels must suit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub python: PythonVersion,
    /// Platform tags, most specific first.
    pub platforms: Vec<String>,
}

impl Target {
    /// CPython `python` on every manylinux platform a wheel built for
    /// `baseline` may depend on: `manylinux_2_<n>_x86_64` for n from the
    /// baseline's glibc down to 2.5, and the legacy aliases.
    pub fn manylinux(python: PythonVersion, baseline: &Baseline) -> Target {
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
        Target { python, platforms }
    }

    fn args(&self) -> Vec<String> {
        let mut args = vec![
            "--only-binary=:all:".to_owned(),
            "--implementation".to_owned(),
            "cp".to_owned(),
            "--python-version".to_owned(),
            self.python.to_string(),
        ];
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
            })
        })
        .collect()
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
    python: PathBuf,
}

impl Pip {
    /// `python` or, when none is given, `python3` from PATH.
    pub fn new(python: Option<&Path>) -> Pip {
        Pip {
            python: python.map_or_else(|| PathBuf::from("python3"), Path::to_path_buf),
        }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.python);
        cmd.args(["-m", "pip"])
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("PIP_NO_INPUT", "1");
        cmd
    }

    /// What pip would install for `requirement` on `target`, dependencies
    /// included when `with_deps` is set. Nothing is downloaded but metadata.
    pub fn resolve(
        &self,
        requirement: &str,
        target: &Target,
        with_deps: bool,
    ) -> Result<Vec<ResolvedWheel>> {
        let dir = tempfile::tempdir().context("cannot create a temporary directory for pip")?;
        let report = dir.path().join("report.json");
        let mut cmd = self.command();
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
        self.run(
            cmd,
            &format!(
                "pip's resolution of {requirement} for Python {}",
                target.python
            ),
        )?;
        let json = std::fs::read_to_string(&report)
            .with_context(|| format!("pip wrote no report at {}", report.display()))?;
        parse_report(&json).with_context(|| format!("in pip's report for {requirement}"))
    }

    /// `pip download --no-deps name==version` of exactly `file` into `dir`;
    /// `TMPDIR` is `dir` too, so the partial download is visible there.
    pub fn download(&self, name: &str, version: &str, file: &str, dir: &Path) -> Result<PathBuf> {
        let mut cmd = self.command();
        cmd.args(["download", "--no-deps", "-q", "-d"])
            .arg(dir)
            .args(download_args(file)?)
            .arg(format!("{name}=={version}"))
            .env("TMPDIR", dir);
        self.run(cmd, &format!("pip download of {file}"))?;
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
        checked_output(&mut cmd, what, || {
            format!(
                "cannot run {} -m pip for {what}: install Python 3 with pip 22.2 or later, or \
                 name an interpreter that has it with --python",
                self.python.display()
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_names_versions_files_and_hashes_from_a_report() {
        let json = r#"{"version": "1", "pip_version": "26.0", "install": [
            {"metadata": {"name": "Nvidia_Cuda_Nvcc", "version": "13.0.88"},
             "download_info": {"url": "https://index.example/p/nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl#sha256=ab",
                               "archive_info": {"hash": "sha256=ab", "hashes": {"sha256": "ab"}}}},
            {"metadata": {"name": "torch", "version": "2.11.0"},
             "download_info": {"url": "file:///wheels/torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                               "archive_info": {"hash": "sha256=cd"}}}
        ]}"#;
        let resolved = parse_report(json).unwrap();
        assert_eq!(
            resolved,
            [
                ResolvedWheel {
                    name: "nvidia-cuda-nvcc".into(),
                    version: "13.0.88".into(),
                    file: "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl".into(),
                    sha256: "ab".into(),
                },
                ResolvedWheel {
                    name: "torch".into(),
                    version: "2.11.0".into(),
                    file: "torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl".into(),
                    sha256: "cd".into(),
                },
            ]
        );
        let no_hash = json.replace(
            r#""archive_info": {"hash": "sha256=cd"}"#,
            r#""archive_info": {}"#,
        );
        let err = parse_report(&no_hash).unwrap_err().to_string();
        assert!(err.contains("no sha256"), "{err}");
    }

    #[test]
    fn manylinux_targets_stop_at_the_baseline() {
        let baseline: Baseline = "manylinux_2_31".parse().unwrap();
        let target = Target::manylinux(PythonVersion::new(3, 11), &baseline);
        assert_eq!(target.platforms.first().unwrap(), "manylinux_2_31_x86_64");
        assert!(
            target
                .platforms
                .contains(&"manylinux_2_28_x86_64".to_string())
        );
        assert!(
            !target
                .platforms
                .contains(&"manylinux_2_34_x86_64".to_string())
        );
        assert_eq!(
            &target.platforms[target.platforms.len() - 3..],
            [
                "manylinux2014_x86_64",
                "manylinux2010_x86_64",
                "manylinux1_x86_64"
            ]
        );
    }

    #[test]
    fn download_arguments_select_the_locked_file() {
        let args = download_args("torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl").unwrap();
        assert_eq!(
            args.join(" "),
            "--only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 \
             --platform manylinux_2_28_x86_64"
        );
        let args = download_args(
            "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        )
        .unwrap();
        assert_eq!(
            args.join(" "),
            "--only-binary=:all: --abi none --platform manylinux2014_x86_64 \
             --platform manylinux_2_17_x86_64"
        );
        assert!(download_args("not-a-wheel.tar.gz").is_err());
    }
}

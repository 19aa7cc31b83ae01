//! What `cuwheel lock` refuses before it asks any registry: config values
//! that no registry answer could make right.
//!
//! In: the project's config, cuwheel's compatibility table and the archive
//! directories given (`--archives`, `$CUWHEEL_ARCHIVES`). Out: nothing, or
//! one error listing every problem: a baseline the table does not know, a
//! GPU arch that no toolkit the table knows compiles for (in the lists that
//! toolkit could use), an archive directory that is not a directory. Which
//! toolkit each cell gets needs the registries, so an arch some known
//! toolkit supports is left to the compatibility check after them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::spec::archs::ToolkitKey;
use crate::spec::compat::join;
use crate::spec::{CompatTable, Config, CudaArch, CudaVersion};

/// Every problem of `config` (read from `pyproject`) and of the archive
/// directories `archive_dirs` that needs no registry; an error listing them.
pub fn check(
    config: &Config,
    pyproject: &Path,
    table: &CompatTable,
    archive_dirs: &[(PathBuf, &str)],
) -> Result<()> {
    let mut problems = config_problems(config, table);
    problems.extend(archive_dir_problems(archive_dirs));
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "{}: {} problem{} found before asking any registry (nothing was resolved or \
         downloaded):\n  {}",
        pyproject.display(),
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems.join("\n  ")
    )
}

/// The baseline and `cuda-archs` problems of `config` (pure).
pub fn config_problems(config: &Config, table: &CompatTable) -> Vec<String> {
    let mut problems = Vec::new();
    if table.baseline(&config.baseline).is_none() {
        problems.push(format!(
            "tool.cuwheel.baseline = \"{}\" is not in cuwheel's compatibility table, which \
             knows {}; fix: use one of them",
            config.baseline,
            join(table.baselines())
        ));
    }
    let archs = &config.cuda_archs;
    let lists = archs.default.iter().map(|list| (None, list)).chain(
        archs
            .by_toolkit
            .iter()
            .map(|(key, list)| (Some(*key), list)),
    );
    for (key, list) in lists {
        // The toolkits this list can be used with.
        let toolkits: Vec<(&CudaVersion, _)> = table
            .toolkits()
            .filter(|(version, _)| key.is_none_or(|key: ToolkitKey| key.matches(**version)))
            .collect();
        let where_ = match key {
            None if archs.by_toolkit.is_empty() => "tool.cuwheel.cuda-archs".to_string(),
            None => "tool.cuwheel.cuda-archs.default".to_string(),
            Some(key) => format!("tool.cuwheel.cuda-archs.\"{key}\""),
        };
        if toolkits.is_empty() {
            // No known toolkit: the compatibility check names the toolkits
            // once the registries have said which exist.
            continue;
        }
        let unsupported: Vec<String> = list
            .iter()
            .filter(|arch| !toolkits.iter().any(|(_, toolkit)| toolkit.supports(arch)))
            .map(ToString::to_string)
            .collect();
        if unsupported.is_empty() {
            continue;
        }
        let supported: BTreeSet<CudaArch> = toolkits
            .iter()
            .flat_map(|(_, toolkit)| toolkit.archs.iter().copied())
            .collect();
        problems.push(format!(
            "{where_} lists {}, which no CUDA toolkit cuwheel knows ({}) compiles for; fix: \
             remove {}, or use archs they support: {}",
            unsupported.join(", "),
            join(toolkits.iter().map(|(version, _)| version)),
            if unsupported.len() == 1 { "it" } else { "them" },
            join(supported.iter())
        ));
    }
    problems
}

/// The archive directories, each with where it was named: `given`
/// (`--archives`), then `$CUWHEEL_ARCHIVES`'s, as [`super::archive::archive_dirs`]
/// searches them.
pub fn archive_dirs(given: &[PathBuf]) -> Vec<(PathBuf, &'static str)> {
    let from_env = super::archive::archive_dirs(&[]);
    given
        .iter()
        .map(|dir| (dir.clone(), "--archives"))
        .chain(from_env.into_iter().map(|dir| (dir, "$CUWHEEL_ARCHIVES")))
        .collect()
}

/// Each archive directory that is not a directory, with where it was named.
fn archive_dir_problems(dirs: &[(PathBuf, &str)]) -> Vec<String> {
    dirs.iter()
        .filter(|(dir, _)| !dir.is_dir())
        .map(|(dir, from)| {
            let what = if dir.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            format!(
                "the archive directory {} ({from}) {what}; fix: name the directory that holds \
                 the archives",
                dir.display()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Config;

    fn config(baseline: &str, archs: &str) -> Config {
        let demo = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo-ext/pyproject.toml"),
        )
        .unwrap();
        // The demo's own archs (a line, in list or inline-table form) give way
        // to `archs`.
        let text: String = demo
            .lines()
            .filter(|line| !line.starts_with("cuda-archs = "))
            .map(|line| format!("{line}\n"))
            .collect::<String>()
            .replace("\"manylinux_2_31\"", &format!("\"{baseline}\""));
        // A table goes last, so the keys after it stay [tool.cuwheel]'s.
        let text = if archs.starts_with('[') {
            format!("{text}\n{archs}\n")
        } else {
            text.replacen("[tool.cuwheel]\n", &format!("[tool.cuwheel]\n{archs}\n"), 1)
        };
        Config::parse(&text, Path::new("pyproject.toml")).unwrap()
    }

    #[test]
    fn known_values_pass() {
        let table = CompatTable::embedded();
        let demo = config("manylinux_2_31", "cuda-archs = [\"8.0\", \"9.0+PTX\"]");
        assert_eq!(config_problems(&demo, table), Vec::<String>::new());
    }

    #[test]
    fn unknown_baselines_and_archs_no_toolkit_has_are_problems() {
        let table = CompatTable::embedded();
        let bad = config("manylinux_1_1", "cuda-archs = [\"3.0\", \"8.0\"]");
        let problems = config_problems(&bad, table);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with(
                "tool.cuwheel.baseline = \"manylinux_1_1\" is not in cuwheel's compatibility table"
            ),
            "{}",
            problems[0]
        );
        assert!(
            problems[1].starts_with("tool.cuwheel.cuda-archs lists 3.0, which no CUDA toolkit"),
            "{}",
            problems[1]
        );
        // Keyed lists are judged against their toolkits only.
        let keyed = config(
            "manylinux_2_31",
            "[tool.cuwheel.cuda-archs]\ndefault = [\"8.0\"]\n\"13\" = [\"5.0\"]",
        );
        let problems = config_problems(&keyed, table);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("tool.cuwheel.cuda-archs.\"13\" lists 5.0"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn missing_archive_dirs_are_problems() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        let problems = archive_dir_problems(&[
            (tmp.path().to_path_buf(), "--archives"),
            (tmp.path().join("nonexistent"), "--archives"),
            (file, "$CUWHEEL_ARCHIVES"),
        ]);
        assert_eq!(problems.len(), 2);
        assert!(problems[0].contains("nonexistent (--archives) does not exist"));
        assert!(problems[1].contains("($CUWHEEL_ARCHIVES) is not a directory"));
    }
}

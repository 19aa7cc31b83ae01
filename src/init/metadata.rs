//! The `[project]` metadata and package files a setup.py gives.
//!
//! In: the project root, the evaluated `setup(...)` call (and setup.cfg's
//! `[metadata]`/`[options]` for what the call leaves out). Out: the
//! [`Meta`] of an [`Inferred`] project — name, version (static, or where
//! it is read from: a file or a `__version__` literal), dependencies and
//! extras, readme, authors, URLs, classifiers, keywords, license — and the
//! package directories and package-data globs; a [`Finding`](super::model::Finding)
//! for each value that cannot be read.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::extract::strings;
use super::license::{LicenseFile, is_license_classifier};
use super::model::{Inferred, Person, Readme, VersionSource};
use super::python::{Call, Value};
use super::python::{Const, ExprKind, StmtKind};
use super::python::{Evaluation, parse_module, value_why};
use super::setup_cfg::SetupCfg;
use crate::wheel::Version;

/// Readme files looked for when setup.py names none.
const README_NAMES: [&str; 3] = ["README.md", "README.rst", "README.txt"];

pub fn read(root: &Path, setup: &Call, evaluation: &Evaluation, inferred: &mut Inferred) {
    let cfg = SetupCfg::read(root);
    let at = setup.at.clone();
    let text = |inferred: &mut Inferred, keyword: &str, key: &str| -> Option<String> {
        match setup.arg(keyword, None) {
            Some(Value::Str(s)) => Some(s.clone()),
            Some(Value::None) | None => cfg.get(keyword).map(str::to_string),
            Some(other) => {
                inferred.find(
                    key,
                    format!("{at}: `{keyword}` cannot be read ({})", value_why(other)),
                    format!("write {key} by hand"),
                );
                None
            }
        }
    };
    let meta_name = text(inferred, "name", "project.name");
    let description = text(inferred, "description", "project.description");
    let requires_python = text(inferred, "python_requires", "project.requires-python");
    inferred.meta.name = meta_name;
    inferred.meta.description = description;
    inferred.meta.requires_python = requires_python;
    if inferred.meta.name.is_none() {
        inferred.find(
            "project.name",
            format!("{at}: setup() gives no name"),
            "write the distribution name, like name = \"my-ext\"",
        );
    }
    version(root, setup, evaluation, &cfg, inferred);
    dependencies(root, setup, &cfg, inferred);
    people(setup, &cfg, inferred);
    let mut urls = BTreeMap::new();
    for (keyword, label) in [("url", "Homepage"), ("download_url", "Download")] {
        if let Some(url) = text(inferred, keyword, "project.urls") {
            urls.insert(label.to_string(), url);
        }
    }
    if let Some(Value::Dict(pairs)) = setup.arg("project_urls", None) {
        for (k, v) in pairs.borrow().iter() {
            if let (Some(k), Some(v)) = (k.as_str(), v.as_str()) {
                urls.insert(k.to_string(), v.to_string());
            }
        }
    }
    inferred.meta.urls = urls;
    inferred.meta.classifiers = match setup.arg("classifiers", None) {
        Some(v) => strings(Some(v), "project.classifiers", &at, inferred),
        None => cfg.list("classifiers"),
    };
    inferred.meta.keywords = match setup.arg("keywords", None) {
        Some(Value::Str(s)) => split_words(s),
        Some(v) => strings(Some(v), "project.keywords", &at, inferred),
        None => cfg.get("keywords").map(split_words).unwrap_or_default(),
    };
    readme(root, setup, &cfg, inferred);
    license(root, setup, &cfg, inferred);
    super::package_data::infer(root, setup, inferred);
}

fn split_words(text: &str) -> Vec<String> {
    text.split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Static, or the file or `__version__` literal setup.py reads it from.
fn version(
    root: &Path,
    setup: &Call,
    evaluation: &Evaluation,
    cfg: &SetupCfg,
    inferred: &mut Inferred,
) {
    let key = "project.version";
    let fix = "write version = \"1.2.3\" in [project], or dynamic = [\"version\"] with [tool.cuwheel] version = { file = \"VERSION\" } or { attr = \"pkg.__version__\" }";
    let source = match setup.arg("version", None) {
        Some(Value::Str(v)) => {
            // Read from a project module: keep pointing at it.
            let attr = evaluation.project_values.iter().find(|(dotted, value)| {
                dotted.ends_with("version") && value.as_str() == Some(v.as_str())
            });
            match attr {
                Some((dotted, _)) => Some(VersionSource::Attr(dotted.clone())),
                None => Some(VersionSource::Static(v.clone())),
            }
        }
        Some(Value::Unknown(u)) if u.files.len() == 1 => {
            let file = u
                .files
                .iter()
                .next()
                .expect("one file")
                .to_string_lossy()
                .to_string();
            version_from_file(root, &file).or_else(|| {
                inferred.find(key, format!("{}: the version is computed from {file} in a way cuwheel cannot follow ({})", u.at, u.why), fix);
                None
            })
        }
        Some(other @ Value::Unknown(_)) => {
            let at = other
                .as_unknown()
                .map_or(setup.at.clone(), |u| u.at.clone());
            inferred.find(
                key,
                format!("{at}: the version cannot be read ({})", value_why(other)),
                fix,
            );
            None
        }
        Some(other) => {
            inferred.find(
                key,
                format!("{}: the version is a {}", setup.at, other.type_name()),
                fix,
            );
            None
        }
        None => match cfg.get("version") {
            Some(v) if v.starts_with("attr:") => {
                Some(VersionSource::Attr(v["attr:".len()..].trim().to_string()))
            }
            Some(v) if v.starts_with("file:") => {
                Some(VersionSource::File(v["file:".len()..].trim().to_string()))
            }
            Some(v) => Some(VersionSource::Static(v.to_string())),
            None => {
                inferred.find(key, format!("{}: setup() gives no version", setup.at), fix);
                None
            }
        },
    };
    let invalid = match &source {
        Some(VersionSource::Static(v)) if v.parse::<Version>().is_err() => Some(v),
        _ => None,
    };
    if let Some(v) = invalid {
        inferred.find(
            key,
            format!("{}: `{v}` is not a PEP 440 version", setup.at),
            fix,
        );
    }
    inferred.meta.version = source;
}

/// A version file: a `.py` file with a `__version__ = "..."` literal
/// (→ `attr`), or a file whose whole text is a version (→ `file`).
fn version_from_file(root: &Path, file: &str) -> Option<VersionSource> {
    let text = fs::read_to_string(root.join(file)).ok()?;
    if let Some(module) = file.strip_suffix(".py") {
        let body = parse_module(&text).ok()?;
        let literal = body.iter().any(|stmt| match &stmt.kind {
            StmtKind::Assign { targets, value } => {
                targets
                    .iter()
                    .any(|t| matches!(&t.kind, ExprKind::Name(n) if n == "__version__"))
                    && matches!(value.kind, ExprKind::Const(Const::Str(_)))
            }
            _ => false,
        });
        let dotted = module.trim_end_matches("/__init__").replace('/', ".");
        return literal.then(|| VersionSource::Attr(format!("{dotted}.__version__")));
    }
    text.trim()
        .parse::<Version>()
        .ok()
        .map(|_| VersionSource::File(file.to_string()))
}

fn dependencies(root: &Path, setup: &Call, cfg: &SetupCfg, inferred: &mut Inferred) {
    let at = setup.at.clone();
    // The torch requirements left out, said once however often they recur
    // (install_requires, each extra, the sdist's record).
    let mut torch_lines = std::collections::BTreeSet::new();
    let mut requirements =
        |inferred: &mut Inferred, value: Option<&Value>, key: &str, cfg_key: &str| -> Vec<String> {
            // What setup.py computed from one requirements file is that
            // file's requirements.
            let from_file = |inferred: &mut Inferred, item: &Value| -> Option<Vec<String>> {
                let u = item.as_unknown().filter(|u| u.files.len() == 1)?;
                let file = u.files.iter().next().expect("one file");
                let lines = requirements_file(root, file, 0)?;
                inferred.assumptions.push(super::python::Note {
                    at: u.at.clone(),
                    text: format!(
                        "{key} is read from {} as a requirements file",
                        file.display()
                    ),
                });
                Some(lines)
            };
            let listed = match value {
                None => cfg.list(cfg_key),
                Some(Value::Str(s)) => s.lines().map(str::to_string).collect(),
                Some(v @ Value::Unknown(_)) => match from_file(inferred, v) {
                    Some(lines) => lines,
                    None => strings(Some(v), key, &at, inferred),
                },
                Some(v) => {
                    let mut lines = Vec::new();
                    for item in v.items().unwrap_or_else(|_| vec![v.clone()]) {
                        match from_file(inferred, &item) {
                            Some(more) => lines.extend(more),
                            None => lines.extend(strings(Some(&item), key, &at, inferred)),
                        }
                    }
                    lines
                }
            };
            let mut out = Vec::new();
            for line in listed {
                let line = line.split(" #").next().unwrap_or("").trim().to_string();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                if line.starts_with('-') {
                    inferred.find(
                        key,
                        format!(
                            "{at}: `{line}` is a pip option, not a requirement; it was left out"
                        ),
                        "list the requirements themselves",
                    );
                    continue;
                }
                let name: String = line
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                    .collect();
                if name.eq_ignore_ascii_case("torch") {
                    torch_lines.insert(line);
                    continue;
                }
                let line = super::requirements::space_before_marker(&line);
                if !out.contains(&line) {
                    out.push(line);
                }
            }
            out
        };
    inferred.meta.dependencies = requirements(
        inferred,
        setup.arg("install_requires", None),
        "project.dependencies",
        "install_requires",
    );
    let extras = setup.arg("extras_require", None);
    let mut optional = BTreeMap::new();
    match extras {
        Some(Value::Dict(pairs)) => {
            for (k, v) in pairs.borrow().iter() {
                let Some(extra) = k.as_str() else { continue };
                let key = format!("project.optional-dependencies.{extra}");
                let mut deps = requirements(inferred, Some(v), &key, "");
                if matches!(v, Value::Set(_)) {
                    deps.sort();
                }
                optional.insert(extra.to_string(), deps);
            }
        }
        None => {
            for (extra, deps) in cfg.section_lists("options.extras_require") {
                optional.insert(extra, deps);
            }
        }
        Some(other) => inferred.find(
            "project.optional-dependencies",
            format!("{at}: extras_require cannot be read ({})", value_why(other)),
            "write [project.optional-dependencies] by hand",
        ),
    }
    // An unpacked sdist's record is what setup.py gave where the sdist was
    // made, choices on what was installed there included: it wins where
    // the evaluation here differs, and the difference is said.
    if let Some(recorded) = super::sdist_record::read(root) {
        // What pyproject.toml states itself it keeps (setuptools took it
        // from there too).
        let project =
            super::pyproject::existing(root).and_then(|t| t.get("project")?.as_table().cloned());
        let stated = |key: &str| project.as_ref().is_some_and(|p| p.contains_key(key));
        let listed = |lines: &[String]| Value::list(lines.iter().map(Value::str).collect());
        let dependencies = requirements(
            inferred,
            Some(&listed(&recorded.dependencies)),
            "project.dependencies",
            "",
        );
        let mut extras = BTreeMap::new();
        for (extra, lines) in &recorded.extras {
            let key = format!("project.optional-dependencies.{extra}");
            extras.insert(
                extra.clone(),
                requirements(inferred, Some(&listed(lines)), &key, ""),
            );
        }
        let file = &recorded.file;
        if !stated("dependencies")
            && !super::sdist_record::same_requirements(&dependencies, &inferred.meta.dependencies)
        {
            inferred.assumptions.push(super::python::Note {
                at: at.clone(),
                text: format!(
                    "dependencies are {file}'s, what setup.py gave where the sdist was made: [{}]; evaluated here it gives [{}]",
                    dependencies.join(", "),
                    inferred.meta.dependencies.join(", ")
                ),
            });
            inferred.meta.dependencies = dependencies;
        }
        let differs = !stated("optional-dependencies")
            && (extras.len() != optional.len()
                || extras.iter().any(|(k, v)| {
                    optional
                        .get(k)
                        .is_none_or(|o| !super::sdist_record::same_requirements(v, o))
                }));
        if differs {
            inferred.assumptions.push(super::python::Note {
                at: at.clone(),
                text: format!(
                    "optional dependencies are {file}'s, what setup.py gave where the sdist was made (extras {})",
                    extras.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            });
            inferred
                .findings
                .retain(|f| !f.key.starts_with("project.optional-dependencies"));
            optional = extras;
        }
    }
    inferred.meta.optional_dependencies = optional;
    if !torch_lines.is_empty() {
        let lines: Vec<String> = torch_lines.iter().map(|l| format!("`{l}`")).collect();
        inferred.assumptions.push(super::python::Note {
            at: at.clone(),
            text: format!(
                "torch is left out of the dependencies ({}): cuwheel pins torch per wheel",
                lines.join(", ")
            ),
        });
    }
    super::requirements::direct_reference_note(&at, inferred);
}

/// The lines of a requirements file, with the files its `-r` lines name
/// (relative to it) read in their place.
fn requirements_file(root: &Path, file: &Path, depth: usize) -> Option<Vec<String>> {
    let text = fs::read_to_string(root.join(file)).ok()?;
    let dir = file.parent().unwrap_or(Path::new(""));
    let mut lines = Vec::new();
    for line in text.lines() {
        let included = line
            .trim()
            .strip_prefix("-r ")
            .or_else(|| line.trim().strip_prefix("--requirement "))
            .map(str::trim);
        match included {
            Some(other) if depth < 8 => {
                match requirements_file(root, &dir.join(other), depth + 1) {
                    Some(more) => lines.extend(more),
                    None => lines.push(line.to_string()),
                }
            }
            _ => lines.push(line.to_string()),
        }
    }
    Some(lines)
}

fn people(setup: &Call, cfg: &SetupCfg, inferred: &mut Inferred) {
    for (role, list) in [
        ("author", &mut inferred.meta.authors),
        ("maintainer", &mut inferred.meta.maintainers),
    ] {
        let field = |k: &str| {
            setup
                .arg(k, None)
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| cfg.get(k).map(str::to_string))
        };
        let (name, email) = (field(role), field(&format!("{role}_email")));
        if name.is_some() || email.is_some() {
            list.push(Person { name, email });
        }
    }
}

fn readme(root: &Path, setup: &Call, cfg: &SetupCfg, inferred: &mut Inferred) {
    let content_type = setup
        .arg("long_description_content_type", None)
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| cfg.get("long_description_content_type").map(str::to_string));
    let file = |path: String| Readme::File {
        content_type: content_type
            .clone()
            .unwrap_or_else(|| Readme::content_type_of(&path).to_string()),
        path,
    };
    inferred.meta.readme = match setup.arg("long_description", None) {
        Some(Value::Unknown(u)) if u.text_of.is_some() => u
            .text_of
            .as_ref()
            .map(|p| file(p.to_string_lossy().to_string())),
        Some(Value::Str(text)) => Some(Readme::Text {
            text: text.clone(),
            content_type: content_type.clone().unwrap_or_else(|| "text/plain".into()),
        }),
        Some(other) => {
            inferred.find(
                "project.readme",
                format!(
                    "{}: long_description cannot be read ({})",
                    setup.at,
                    value_why(other)
                ),
                "write readme = \"README.md\"",
            );
            None
        }
        None => match cfg.get("long_description") {
            Some(v) if v.starts_with("file:") => Some(file(v["file:".len()..].trim().to_string())),
            _ => README_NAMES
                .iter()
                .find(|n| root.join(n).is_file())
                .map(|n| file(n.to_string())),
        },
    };
}

fn license(root: &Path, setup: &Call, cfg: &SetupCfg, inferred: &mut Inferred) {
    let given = setup
        .arg("license", None)
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| cfg.get("license").map(str::to_string));
    decide_license(root, given.as_deref(), &setup.at, inferred);
}

/// `license-files` and `project.license` by [`super::license::decide`]
/// from `given` (setup()'s `license`), the root's license files (those
/// [`super::license_files::read`] refuses are findings, neither read nor
/// listed) and the classifiers; when one is written, the `License ::`
/// classifiers are dropped (PEP 639 allows none beside an expression),
/// saying so. `at` is where the report points.
pub(super) fn decide_license(root: &Path, given: Option<&str>, at: &str, inferred: &mut Inferred) {
    let read = super::license_files::read(root);
    inferred.meta.license_files = read.names();
    for (name, why) in &read.refused {
        inferred.find(
            "project.license-files",
            format!("{name} {why}: it was neither read nor listed in license-files"),
            format!(
                "make {name} a regular text file of the project holding the license's text, \
                 or remove it"
            ),
        );
    }
    let files: Vec<LicenseFile<'_>> = read
        .texts
        .iter()
        .filter(|(name, _)| !name.to_ascii_uppercase().starts_with("NOTICE"))
        .map(|(name, text)| LicenseFile { name, text })
        .collect();
    let refused: Vec<&str> = read.refused.iter().map(|(name, _)| name.as_str()).collect();
    let decision = super::license::decide(given, &files, &refused, &inferred.meta.classifiers);
    for (key, problem, fix) in decision.findings {
        inferred.find(&key, problem, fix);
    }
    let Some(expression) = decision.expression else {
        return;
    };
    inferred.assumptions.push(super::python::Note {
        at: at.to_string(),
        text: format!(
            "license = \"{expression}\" from {}",
            decision.source.unwrap_or_default()
        ),
    });
    inferred.meta.license = Some(expression);
    let (dropped, kept): (Vec<String>, Vec<String>) =
        std::mem::take(&mut inferred.meta.classifiers)
            .into_iter()
            .partition(|c| is_license_classifier(c));
    inferred.meta.classifiers = kept;
    for classifier in dropped {
        inferred.assumptions.push(super::python::Note {
            at: at.to_string(),
            text: format!(
                "dropped the classifier `{classifier}`: project.license is the license \
                 expression, and PEP 639 allows no License classifier beside one"
            ),
        });
    }
}

/// The sorted names of the root's entries that `keep` accepts.
pub(super) fn root_names(root: &Path, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| keep(n))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_files_point_the_config_at_them() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("pkg")).unwrap();
        fs::write(
            dir.path().join("pkg/__init__.py"),
            "import os\n__version__ = '2.1.0'\n",
        )
        .unwrap();
        fs::write(dir.path().join("VERSION"), "2.1.0\n").unwrap();
        fs::write(dir.path().join("NOTES"), "not a version\n").unwrap();
        assert_eq!(
            version_from_file(dir.path(), "pkg/__init__.py"),
            Some(VersionSource::Attr("pkg.__version__".into()))
        );
        assert_eq!(
            version_from_file(dir.path(), "VERSION"),
            Some(VersionSource::File("VERSION".into()))
        );
        assert_eq!(version_from_file(dir.path(), "NOTES"), None);
    }
}

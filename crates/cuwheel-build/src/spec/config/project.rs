//! `[project]`: the wheel's name and version, and `project.dynamic`.
//!
//! In: the `[project]` table, `[tool.cuwheel] version` and
//! `[tool.setuptools.dynamic] version`. Out: the [`ProjectName`] and the
//! [`Version`] — static (`version = "0.1.0"`) or dynamic, read without
//! running any code from a file (`version = { file = "VERSION" }`) or from
//! a string literal assigned in a module (`version = { attr =
//! "pkg.__version__" }`), relative to the directory holding
//! `pyproject.toml`. This is the one place the config reader opens a file:
//! every wheel is named before anything is built, so the version must be
//! known when the config is.

use std::fs;
use std::path::{Path, PathBuf};

use toml::de::DeValue;

use crate::spec::config::flags::relative_path;
use crate::spec::document::{Field, Reader, Table};
use crate::wheel::{ProjectName, Version};

/// Where a dynamic version was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionFile {
    /// Relative to the project root: a source of every wheel.
    pub path: PathBuf,
}

/// `[project].dynamic` entries cuwheel can fill without running code.
const DYNAMIC_SUPPORTED: [&str; 1] = ["version"];

impl Reader<'_> {
    pub(super) fn project_name(&mut self, project: &Table<'_, '_>) -> Option<ProjectName> {
        let field = self.required(
            project,
            "name",
            "write the wheel's name, like name = \"demo-ext\"",
        )?;
        let text = self.string(&field, "\"demo-ext\"")?;
        match ProjectName::new(text) {
            Ok(name) => Some(name),
            Err(error) => {
                self.report(
                    &field,
                    error.to_string(),
                    "use a name PEP 508 allows, like \"demo-ext\"",
                );
                None
            }
        }
    }

    /// The names in `project.dynamic`, each checked to be one cuwheel fills.
    fn dynamic(&mut self, project: &Table<'_, '_>) -> Option<Vec<String>> {
        let Some(field) = project.get("dynamic") else {
            return Some(Vec::new());
        };
        let items = self.array(&field, "[\"version\"]")?;
        let mut names = Vec::new();
        let mut complete = true;
        for item in &items {
            let Some(name) = self.string(item, "\"version\"") else {
                complete = false;
                continue;
            };
            if !DYNAMIC_SUPPORTED.contains(&name) {
                self.report(
                    item,
                    format!(
                        "`{name}` is dynamic, and cuwheel reads [project] without running any code"
                    ),
                    format!("write project.{name} in [project] and remove it from dynamic"),
                );
                complete = false;
                continue;
            }
            names.push(name.to_string());
        }
        complete.then_some(names)
    }

    /// The version, static or dynamic; and the file a dynamic one was read from.
    pub(super) fn project_version(
        &mut self,
        project: &Table<'_, '_>,
        root: &Table<'_, '_>,
        cuwheel: Option<&Table<'_, '_>>,
    ) -> Option<(Version, Option<VersionFile>)> {
        let dynamic = self.dynamic(project)?.iter().any(|name| name == "version");
        let from_cuwheel = cuwheel.and_then(|cuwheel| cuwheel.get("version"));
        let from_setuptools = root
            .get("tool")
            .and_then(|tool| self.sub_table(&tool))
            .and_then(|tool| tool.get("setuptools"))
            .and_then(|setuptools| self.sub_table(&setuptools))
            .and_then(|setuptools| setuptools.get("dynamic"))
            .and_then(|dynamic| self.sub_table(&dynamic))
            .and_then(|dynamic| dynamic.get("version"));
        if let Some(field) = project.get("version") {
            if dynamic {
                self.report(
                    &field,
                    "the version is both static and listed in project.dynamic",
                    "keep one: remove \"version\" from dynamic, or this key",
                );
                return None;
            }
            if let Some(source) = &from_cuwheel {
                self.report(
                    source,
                    "tool.cuwheel.version is given, but project.version is static",
                    "remove one of them",
                );
                return None;
            }
            let text = self.string(&field, "\"0.1.0\"")?;
            return self.public_version(&field, text).map(|v| (v, None));
        }
        if !dynamic {
            let at = self.location(&project.span, "project.version");
            self.report_location(
                at,
                "missing key `version`",
                "write the wheel's version, like version = \"0.1.0\", or list \"version\" in \
                 dynamic and say where it is: [tool.cuwheel] version = { file = \"VERSION\" } \
                 or { attr = \"pkg.__version__\" }",
            );
            return None;
        }
        let Some(source) = from_cuwheel.or(from_setuptools) else {
            let at = self.location(&project.span, "tool.cuwheel.version");
            self.report_location(
                at,
                "the version is dynamic, but nothing says where it is",
                "add [tool.cuwheel] version = { file = \"VERSION\" } or { attr = \
                 \"pkg.__version__\" }; cuwheel reads it without running any code",
            );
            return None;
        };
        self.dynamic_version(&source)
    }

    /// A table field as a [`Table`], or `None` (unreported) when it is not one.
    fn sub_table<'v, 'i>(&self, field: &Field<'v, 'i>) -> Option<Table<'v, 'i>> {
        match field.value.get_ref() {
            DeValue::Table(entries) => Some(Table {
                key: field.key.clone(),
                span: field.value.span(),
                entries,
            }),
            _ => None,
        }
    }

    fn public_version(&mut self, field: &Field<'_, '_>, text: &str) -> Option<Version> {
        match Version::parse(text) {
            Ok(version) if version.local().is_empty() => Some(version),
            Ok(version) => {
                let public = version.without_local();
                self.report(
                    field,
                    format!("version `{text}` has a local label"),
                    format!("write \"{public}\"; cuwheel adds a label like +pt211cu130 to each cell's wheel"),
                );
                None
            }
            Err(error) => {
                self.report(
                    field,
                    error.to_string(),
                    "write a PEP 440 version, like \"0.1.0\"",
                );
                None
            }
        }
    }

    /// `{ file = "VERSION" }` or `{ attr = "pkg.__version__" }`.
    fn dynamic_version(&mut self, field: &Field<'_, '_>) -> Option<(Version, Option<VersionFile>)> {
        const EXAMPLE: &str = "{ file = \"VERSION\" } or { attr = \"pkg.__version__\" }";
        let table = self.table(field, &format!("write version = {EXAMPLE}"))?;
        let file = table.get("file");
        let attr = table.get("attr");
        let project_dir = self.file.parent().unwrap_or(Path::new("")).to_path_buf();
        match (file, attr) {
            (Some(file), None) => {
                // setuptools also takes a list of files; for a version, one.
                let text = match file.value.get_ref() {
                    DeValue::Array(items) if items.len() == 1 => {
                        let item = self.array(&file, "[\"VERSION\"]")?.remove(0);
                        self.string(&item, "\"VERSION\"")?.to_string()
                    }
                    _ => self.string(&file, "\"VERSION\"")?.to_string(),
                };
                let path = self.checked(&file, relative_path(&text))?;
                let content = match fs::read_to_string(project_dir.join(&path)) {
                    Ok(content) => content,
                    Err(error) => {
                        self.report(
                            &file,
                            format!("cannot read the version file {}: {error}", path.display()),
                            "create it, or correct the path (relative to the directory holding \
                             pyproject.toml)",
                        );
                        return None;
                    }
                };
                let version = self.public_version(&file, content.trim())?;
                Some((version, Some(VersionFile { path })))
            }
            (None, Some(attr)) => {
                let text = self.string(&attr, "\"pkg.__version__\"")?;
                let (path, literal) = match find_attr(&project_dir, text) {
                    Ok(found) => found,
                    Err((problem, fix)) => {
                        self.report(&attr, problem, fix);
                        return None;
                    }
                };
                let version = self.public_version(&attr, &literal)?;
                Some((version, Some(VersionFile { path })))
            }
            _ => {
                self.report(
                    field,
                    "give exactly one of `file` and `attr`",
                    format!("write version = {EXAMPLE}"),
                );
                None
            }
        }
    }

    /// `value`, or its problem reported at `field`.
    pub(super) fn checked<T>(
        &mut self,
        field: &Field<'_, '_>,
        value: Result<T, crate::spec::version::InvalidValue>,
    ) -> Option<T> {
        match value {
            Ok(value) => Some(value),
            Err(error) => {
                self.report(field, error.problem, error.fix);
                None
            }
        }
    }
}

/// The module file `pkg.__version__` names (`pkg/__init__.py`, `pkg.py`,
/// or either under `src/`) and the string literal assigned to the name
/// there; or the problem and its fix.
fn find_attr(project_dir: &Path, attr: &str) -> Result<(PathBuf, String), (String, String)> {
    let Some((module, name)) = attr.rsplit_once('.') else {
        return Err((
            format!("`{attr}` names no module"),
            "write the module and the name, like \"pkg.__version__\"".into(),
        ));
    };
    let module_path: PathBuf = module.split('.').collect();
    let candidates: Vec<PathBuf> = ["", "src"]
        .iter()
        .flat_map(|base| {
            let base = Path::new(base);
            [
                base.join(&module_path).join("__init__.py"),
                base.join(module_path.with_extension("py")),
            ]
        })
        .collect();
    let Some(path) = candidates
        .iter()
        .find(|candidate| project_dir.join(candidate).is_file())
    else {
        let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        return Err((
            format!(
                "no module file for `{module}` (looked for {})",
                tried.join(", ")
            ),
            "correct the module path, or use version = { file = \"VERSION\" }".into(),
        ));
    };
    let text = fs::read_to_string(project_dir.join(path)).map_err(|error| {
        (
            format!("cannot read {}: {error}", path.display()),
            "check the file".into(),
        )
    })?;
    match string_assignment(&text, name) {
        Some(literal) => Ok((path.clone(), literal)),
        None => Err((
            format!(
                "{} assigns no string literal to `{name}` at the start of a line",
                path.display()
            ),
            format!(
                "write `{name} = \"0.1.0\"` there (cuwheel reads it without running the module), \
                 or use version = {{ file = \"VERSION\" }}"
            ),
        )),
    }
}

/// The string of `name = "..."` (or `name: str = '...'`) at the start of a
/// line of Python source.
fn string_assignment(source: &str, name: &str) -> Option<String> {
    source.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.trim_start();
        let rest = match rest.strip_prefix(':') {
            Some(annotated) => annotated.split_once('=')?.1,
            None => rest.strip_prefix('=')?,
        };
        let rest = rest.trim();
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let body = &rest[1..];
        let end = body.find(quote)?;
        let after = body[end + 1..].trim();
        (after.is_empty() || after.starts_with('#')).then(|| body[..end].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_assignments_are_found_statically() {
        let source =
            "import os\n__version_info__ = (1, 2)\n__version__ = '1.2.3'  # set by release\n";
        assert_eq!(
            string_assignment(source, "__version__").as_deref(),
            Some("1.2.3")
        );
        assert_eq!(
            string_assignment("__version__: str = \"0.4\"\n", "__version__").as_deref(),
            Some("0.4")
        );
        assert_eq!(
            string_assignment("__version__ = get_version()\n", "__version__"),
            None
        );
        assert_eq!(
            string_assignment("    __version__ = '1'\n", "__version__"),
            None
        );
        assert_eq!(
            string_assignment("__version__ = '1' + x\n", "__version__"),
            None
        );
    }

    #[test]
    fn attr_modules_are_looked_up_as_packages_modules_and_under_src() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
        fs::write(
            dir.path().join("src/pkg/__init__.py"),
            "__version__ = \"2.0\"\n",
        )
        .unwrap();
        let (path, version) = find_attr(dir.path(), "pkg.__version__").unwrap();
        assert_eq!(path, Path::new("src/pkg/__init__.py"));
        assert_eq!(version, "2.0");
        let (problem, _) = find_attr(dir.path(), "other.__version__").unwrap_err();
        assert!(problem.contains("other/__init__.py"), "{problem}");
    }
}

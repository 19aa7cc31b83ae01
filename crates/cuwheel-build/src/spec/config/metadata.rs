//! The rest of `[project]`: what a wheel's METADATA says beyond its name
//! and version.
//!
//! In: the `[project]` table. Out: [`ProjectMetadata`] — summary,
//! `requires-python`, the license (a PEP 639 expression, or the older
//! table), `license-files` patterns, the readme (a file to read later, or
//! text) with its content type, authors and maintainers, URLs,
//! classifiers, keywords, dependencies and optional dependencies — each
//! value checked as core metadata requires, and any problem reported with
//! the value and its key. Files (the readme, license files) are only named
//! here; [`Spec::load`](crate::spec::Spec::load) reads them.

use std::path::PathBuf;

use toml::de::DeValue;

use crate::spec::config::flags::relative_path;
use crate::spec::config::license::canonical_expression;
use crate::spec::document::{Field, Located, Reader, Table};
use crate::spec::glob::Pattern;
use crate::spec::version::InvalidValue;
use crate::wheel::parse_specifiers;
use crate::wheel::pep508::{Requirement, normalize_extra};

/// What `[project]` says for METADATA.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectMetadata {
    /// `description`: METADATA's `Summary`.
    pub summary: Option<String>,
    pub requires_python: Option<String>,
    pub license: Option<License>,
    /// `license-files`: patterns relative to the project root; when absent,
    /// the usual names at the root ([`DEFAULT_LICENSE_FILES`]).
    pub license_files: Option<Vec<Located<Pattern>>>,
    pub readme: Option<Located<Readme>>,
    pub authors: Vec<Person>,
    pub maintainers: Vec<Person>,
    /// `urls`: (label, URL), in the order written.
    pub urls: Vec<(String, String)>,
    pub classifiers: Vec<String>,
    pub keywords: Vec<String>,
    pub dependencies: Vec<Requirement>,
    /// `optional-dependencies`: each extra's normalised name and its
    /// requirements, sorted by name.
    pub optional_dependencies: Vec<(String, Vec<Requirement>)>,
}

/// The license files shipped when `license-files` is not given (the names
/// PEP 639 suggests, at the project root); none of them need exist.
pub const DEFAULT_LICENSE_FILES: [&str; 5] =
    ["LICENSE*", "LICENCE*", "COPYING*", "NOTICE*", "AUTHORS*"];

/// `project.license`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum License {
    /// A PEP 639 SPDX expression, in canonical form: `License-Expression`.
    Expression(String),
    /// The older `{ text = "..." }`: the `License` field.
    Text(String),
    /// The older `{ file = "..." }`: shipped as a license file.
    File(Located<PathBuf>),
}

/// `project.readme`: a file (read by `Spec::load`) or the text itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readme {
    File { path: PathBuf, content_type: String },
    Text { text: String, content_type: String },
}

/// An author or maintainer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub name: Option<String>,
    pub email: Option<String>,
}

const PROJECT_KEYS: [&str; 19] = [
    "name",
    "version",
    "description",
    "readme",
    "requires-python",
    "license",
    "license-files",
    "authors",
    "maintainers",
    "keywords",
    "classifiers",
    "urls",
    "scripts",
    "gui-scripts",
    "entry-points",
    "dependencies",
    "optional-dependencies",
    "dynamic",
    "import-names",
];

/// Keys whose entry points a wheel would carry in `entry_points.txt`.
const ENTRY_POINT_KEYS: [&str; 3] = ["scripts", "gui-scripts", "entry-points"];

/// The content types core metadata allows for the description.
const CONTENT_TYPES: [&str; 3] = ["text/markdown", "text/x-rst", "text/plain"];

/// Core metadata limits a `Project-URL` label to this many characters.
const URL_LABEL_MAX: usize = 32;

impl Reader<'_> {
    pub(super) fn project_metadata(&mut self, project: &Table<'_, '_>) -> Option<ProjectMetadata> {
        self.known_keys(project, &PROJECT_KEYS);
        let before = self.problems.len();
        for key in ENTRY_POINT_KEYS {
            if let Some(field) = project.get(key) {
                self.report(
                    &field,
                    format!("cuwheel does not write entry points yet, so `{key}` would be lost"),
                    "remove it, or build this wheel another way; without it the installed \
                     package would lack its commands",
                );
            }
        }
        let text = |reader: &mut Self, key: &str, example: &str| -> Option<String> {
            let field = project.get(key)?;
            let value = reader.string(&field, example)?;
            if value.contains(['\n', '\r']) {
                reader.report(
                    &field,
                    format!("`{key}` has a line break"),
                    "keep it on one line (the long description is the readme)",
                );
                return None;
            }
            Some(value.to_string())
        };
        let summary = text(self, "description", "\"A CUDA extension\"");
        let requires_python = text(self, "requires-python", "\">=3.9\"").and_then(|value| {
            let field = project.get("requires-python")?;
            let checked = match parse_specifiers(&value) {
                Ok(clauses) if !clauses.is_empty() => Ok(value),
                Ok(_) => Err(InvalidValue::new(
                    "`requires-python` is empty",
                    "write a specifier set, like \">=3.9\", or remove it",
                )),
                Err(e) => Err(InvalidValue::new(
                    e.to_string(),
                    "write a specifier set, like \">=3.9\"",
                )),
            };
            self.checked(&field, checked)
        });
        let license = project
            .get("license")
            .and_then(|field| self.license(&field));
        let license_files = project.get("license-files").and_then(|field| {
            self.list(&field, "[\"LICENSE\"]", false, Pattern::parse, |a, b| {
                a == b
            })
        });
        let readme = project.get("readme").and_then(|field| self.readme(&field));
        let authors = self.people(project, "authors").unwrap_or_default();
        let maintainers = self.people(project, "maintainers").unwrap_or_default();
        let urls = project
            .get("urls")
            .and_then(|field| self.urls(&field))
            .unwrap_or_default();
        let classifiers = self
            .plain_list(
                project,
                "classifiers",
                "[\"Programming Language :: Python :: 3\"]",
                classifier,
                |a, b| a == b,
            )
            .unwrap_or_default();
        let keywords = self
            .plain_list(
                project,
                "keywords",
                "[\"cuda\", \"pytorch\"]",
                keyword,
                |a, b| a == b,
            )
            .unwrap_or_default();
        let dependencies = self
            .plain_list(
                project,
                "dependencies",
                "[\"numpy>=1.24\"]",
                requirement,
                |_, _| false,
            )
            .unwrap_or_default();
        let optional_dependencies = project
            .get("optional-dependencies")
            .and_then(|field| self.optional_dependencies(&field))
            .unwrap_or_default();
        if matches!(license, Some(License::Expression(_))) {
            if let Some(field) = project.get("classifiers") {
                if classifiers.iter().any(|c| c.starts_with("License ::")) {
                    self.report(
                        &field,
                        "a `License ::` classifier is given beside a license expression",
                        "remove the License classifiers: PEP 639 makes project.license the one \
                         statement of the license",
                    );
                }
            }
        }
        if let (Some(License::File(file)), Some(_)) = (&license, &license_files) {
            self.report_location(
                file.at.clone(),
                "license = { file = ... } is given beside license-files",
                "list the file in license-files and write license as an SPDX expression",
            );
        }
        (self.problems.len() == before).then_some(ProjectMetadata {
            summary,
            requires_python,
            license,
            license_files,
            readme,
            authors,
            maintainers,
            urls,
            classifiers,
            keywords,
            dependencies,
            optional_dependencies,
        })
    }

    fn license(&mut self, field: &Field<'_, '_>) -> Option<License> {
        const FIX: &str = "write an SPDX expression, like license = \"MIT\"";
        match field.value.get_ref() {
            DeValue::String(text) => {
                let canonical = canonical_expression(text);
                self.checked(field, canonical).map(License::Expression)
            }
            DeValue::Table(_) => {
                let table = self.table(field, FIX)?;
                self.known_keys(&table, &["text", "file"]);
                match (table.get("text"), table.get("file")) {
                    (Some(text), None) => {
                        let value = self.string(&text, "\"MIT\"")?;
                        if value.contains('\n') {
                            self.report(&text, "the license text has line breaks", FIX);
                            return None;
                        }
                        Some(License::Text(value.to_string()))
                    }
                    (None, Some(file)) => {
                        let path = self.string(&file, "\"LICENSE\"")?.to_string();
                        let path = self.checked(&file, relative_path(&path))?;
                        let at = self.location(&file.value.span(), &file.key);
                        Some(License::File(Located { value: path, at }))
                    }
                    _ => {
                        self.report(field, "give exactly one of `text` and `file`", FIX);
                        None
                    }
                }
            }
            _ => {
                self.wrong_type(field, "a string", FIX.to_string());
                None
            }
        }
    }

    fn readme(&mut self, field: &Field<'_, '_>) -> Option<Located<Readme>> {
        const EXAMPLE: &str =
            "readme = \"README.md\", or { file = \"README\", content-type = \"text/markdown\" }";
        let at = self.location(&field.value.span(), &field.key);
        let readme = match field.value.get_ref() {
            DeValue::String(path) => {
                let path = self.checked(field, relative_path(path))?;
                let extension = path
                    .extension()
                    .map(|e| e.to_string_lossy().to_lowercase())
                    .unwrap_or_default();
                let content_type = match extension.as_str() {
                    "md" | "markdown" => "text/markdown",
                    "rst" => "text/x-rst",
                    "txt" => "text/plain",
                    _ => {
                        self.report(
                            field,
                            format!(
                                "cannot tell the content type of {} from its extension",
                                path.display()
                            ),
                            "name a .md, .rst or .txt file, or write readme = { file = \"...\", \
                             content-type = \"text/markdown\" }",
                        );
                        return None;
                    }
                };
                Readme::File {
                    path,
                    content_type: content_type.to_string(),
                }
            }
            DeValue::Table(_) => {
                let table = self.table(field, EXAMPLE)?;
                self.known_keys(&table, &["file", "text", "content-type"]);
                let content_type = self
                    .required(
                        &table,
                        "content-type",
                        "add content-type = \"text/markdown\"",
                    )
                    .and_then(|ct| {
                        let value = self.string(&ct, "\"text/markdown\"")?.to_string();
                        self.checked(&ct, content_type(&value))
                    });
                let body = match (table.get("file"), table.get("text")) {
                    (Some(file), None) => {
                        let path = self.string(&file, "\"README.md\"")?.to_string();
                        self.checked(&file, relative_path(&path)).map(Ok)
                    }
                    (None, Some(text)) => self.string(&text, "\"...\"").map(|t| Err(t.to_string())),
                    _ => {
                        self.report(field, "give exactly one of `file` and `text`", EXAMPLE);
                        None
                    }
                };
                match (body?, content_type?) {
                    (Ok(path), content_type) => Readme::File { path, content_type },
                    (Err(text), content_type) => Readme::Text { text, content_type },
                }
            }
            _ => {
                self.wrong_type(field, "a string or a table", EXAMPLE.to_string());
                return None;
            }
        };
        Some(Located { value: readme, at })
    }

    fn people(&mut self, project: &Table<'_, '_>, key: &str) -> Option<Vec<Person>> {
        const EXAMPLE: &str = "[{ name = \"Ada\", email = \"ada@example.org\" }]";
        let field = project.get(key)?;
        let mut people = Vec::new();
        for entry in self.array(&field, EXAMPLE)? {
            let table = self.table(&entry, &format!("write each as a table, like {EXAMPLE}"))?;
            self.known_keys(&table, &["name", "email"]);
            let part = |reader: &mut Self, name: &str| -> Option<Option<String>> {
                let Some(field) = table.get(name) else {
                    return Some(None);
                };
                let value = reader.string(&field, "\"Ada\"")?.to_string();
                let bad = match name {
                    "name" => value.contains([',', '<', '>', '\n']),
                    _ => !value.contains('@') || value.contains([',', '<', '>', ' ', '\n']),
                };
                if bad {
                    reader.report(
                        &field,
                        format!("`{value}` is not a valid {name} for {key}"),
                        match name {
                            "name" => "write the name without `,`, `<` or `>`",
                            _ => "write one address, like \"ada@example.org\"",
                        },
                    );
                    return None;
                }
                Some(Some(value))
            };
            let person = Person {
                name: part(self, "name")?,
                email: part(self, "email")?,
            };
            if person.name.is_none() && person.email.is_none() {
                self.report(&entry, "the entry has neither name nor email", EXAMPLE);
                return None;
            }
            people.push(person);
        }
        Some(people)
    }

    fn urls(&mut self, field: &Field<'_, '_>) -> Option<Vec<(String, String)>> {
        let table = self.table(field, "write [project.urls] with label = \"URL\" entries")?;
        // In the order written: the table itself is sorted by key.
        let mut entries: Vec<(usize, String)> = table
            .entries
            .iter()
            .map(|(key, _)| (key.span().start, key.get_ref().to_string()))
            .collect();
        entries.sort();
        let mut urls = Vec::new();
        for (_, label) in entries {
            let url_field = table.get(&label)?;
            let url = self.string(&url_field, "\"https://github.com/org/project\"")?;
            if label.chars().count() > URL_LABEL_MAX || label.contains(',') {
                self.report(
                    &url_field,
                    format!("the URL label `{label}` is longer than {URL_LABEL_MAX} characters or has a comma"),
                    "shorten it",
                );
                return None;
            }
            if !url.contains("://") || url.contains(char::is_whitespace) {
                self.report(
                    &url_field,
                    format!("`{}` is not a URL", crate::url::redact(url)),
                    "write a full URL, like \"https://github.com/org/project\"",
                );
                return None;
            }
            urls.push((label, url.to_string()));
        }
        Some(urls)
    }

    fn optional_dependencies(
        &mut self,
        field: &Field<'_, '_>,
    ) -> Option<Vec<(String, Vec<Requirement>)>> {
        let table = self.table(
            field,
            "write [project.optional-dependencies] with extra = [...] lists",
        )?;
        let mut extras: Vec<(String, Vec<Requirement>)> = Vec::new();
        let names: Vec<String> = table
            .entries
            .iter()
            .map(|(k, _)| k.get_ref().to_string())
            .collect();
        let mut complete = true;
        for name in names {
            let list = table.get(&name)?;
            if crate::wheel::ProjectName::new(&name).is_err() {
                self.report(
                    &list,
                    format!("`{name}` is not a valid extra name"),
                    "use ASCII letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit",
                );
                complete = false;
                continue;
            }
            let normalised = normalize_extra(&name);
            if extras.iter().any(|(other, _)| *other == normalised) {
                self.report(
                    &list,
                    format!(
                        "the extra `{name}` is the same as another once normalised (`{normalised}`)"
                    ),
                    "merge the two lists",
                );
                complete = false;
                continue;
            }
            match self.list(&list, "[\"scipy\"]", false, requirement, |_, _| false) {
                Some(items) => {
                    extras.push((normalised, items.into_iter().map(|i| i.value).collect()))
                }
                None => complete = false,
            }
        }
        extras.sort_by(|a, b| a.0.cmp(&b.0));
        complete.then_some(extras)
    }
}

fn requirement(text: &str) -> Result<Requirement, InvalidValue> {
    Requirement::parse(text).map_err(|error| {
        InvalidValue::new(
            error.to_string(),
            "write a PEP 508 requirement, like \"numpy>=1.24\" or \"rich; python_version >= '3.10'\"",
        )
    })
}

fn classifier(text: &str) -> Result<String, InvalidValue> {
    let parts: Vec<&str> = text.split(" :: ").collect();
    if parts.len() < 2 || parts.iter().any(|p| p.trim().is_empty() || *p != p.trim()) {
        return Err(InvalidValue::new(
            format!("`{text}` is not a trove classifier"),
            "write one like \"Programming Language :: Python :: 3\"",
        ));
    }
    Ok(text.to_string())
}

fn keyword(text: &str) -> Result<String, InvalidValue> {
    if text.trim().is_empty() || text.contains([',', '\n']) {
        return Err(InvalidValue::new(
            format!("`{text}` is not a keyword"),
            "write one word or phrase per entry, without commas",
        ));
    }
    Ok(text.to_string())
}

/// A readme content type: one of [`CONTENT_TYPES`], with parameters
/// (`charset=UTF-8`, `variant=GFM`); only UTF-8 is written.
fn content_type(text: &str) -> Result<String, InvalidValue> {
    let mut parts = text.split(';').map(str::trim);
    let kind = parts.next().unwrap_or_default().to_ascii_lowercase();
    if !CONTENT_TYPES.contains(&kind.as_str()) {
        return Err(InvalidValue::new(
            format!("`{text}` is not a content type core metadata allows"),
            "write \"text/markdown\", \"text/x-rst\" or \"text/plain\"",
        ));
    }
    for parameter in parts {
        if let Some(charset) = parameter.to_ascii_lowercase().strip_prefix("charset=") {
            if charset != "utf-8" {
                return Err(InvalidValue::new(
                    format!("`{text}`: the readme is read as UTF-8"),
                    "write charset=UTF-8 or leave the charset out",
                ));
            }
        }
    }
    Ok(text.to_string())
}

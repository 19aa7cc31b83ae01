//! Writing the inferred config into `pyproject.toml` without disturbing the
//! rest of it.
//!
//! In: the file's current text (or none), the [`Inferred`] project and the
//! rendered `[tool.cuwheel]` text. Out: the new text — `[project]` created
//! or completed key by key (a key the file already has is kept, and a
//! different inferred value is reported), any old `[tool.cuwheel]` removed
//! (only with `--force`), the new one appended — or an error naming the
//! problem. Comments and formatting elsewhere are kept (toml_edit).

use anyhow::{Result, bail};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::model::{Inferred, Person, Readme, VersionSource};

/// The project's pyproject.toml as it is, parsed; `None` where there is
/// none or it is not valid TOML (merging reports that).
pub fn existing(root: &std::path::Path) -> Option<toml::Table> {
    std::fs::read_to_string(root.join("pyproject.toml"))
        .ok()?
        .parse()
        .ok()
}

/// What merging kept from the file or had to fill in.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Merge {
    pub text: String,
    /// `[project]` keys the file already had, kept, with what was inferred.
    pub kept: Vec<String>,
    /// What was dropped from the file's `[project]`, and why.
    pub notes: Vec<String>,
}

/// An array of strings; one item per line when it would be long.
fn strings(items: &[String]) -> Value {
    let mut array = Array::new();
    for item in items {
        array.push(item.as_str());
    }
    if items.iter().map(|i| i.len() + 4).sum::<usize>() > 80 {
        for value in array.iter_mut() {
            value.decor_mut().set_prefix("\n  ");
        }
        array.set_trailing_comma(true);
        array.set_trailing("\n");
    }
    Value::Array(array)
}

fn people(list: &[Person]) -> Value {
    let mut array = Array::new();
    for person in list {
        let mut table = InlineTable::new();
        if let Some(name) = &person.name {
            table.insert("name", name.as_str().into());
        }
        if let Some(email) = &person.email {
            table.insert("email", email.as_str().into());
        }
        array.push(Value::InlineTable(table));
    }
    Value::Array(array)
}

pub fn merge(
    existing: Option<&str>,
    inferred: &Inferred,
    cuwheel: &str,
    force: bool,
    fallback_name: &str,
) -> Result<Merge> {
    let mut doc: DocumentMut = match existing {
        Some(text) => match text.parse() {
            Ok(doc) => doc,
            Err(e) => bail!(
                "pyproject.toml is not valid TOML, so cuwheel init leaves it alone: {e}\nfix the file, then run cuwheel init again"
            ),
        },
        None => DocumentMut::new(),
    };
    let has_cuwheel = doc
        .get("tool")
        .and_then(|t| t.as_table_like())
        .is_some_and(|t| t.contains_key("cuwheel"));
    if has_cuwheel {
        if !force {
            bail!(
                "pyproject.toml already has a [tool.cuwheel] table; cuwheel init writes a new one only with \
                 --force (which replaces that table and keeps the rest of the file)"
            );
        }
        if let Some(tool) = doc.get_mut("tool").and_then(|t| t.as_table_like_mut()) {
            tool.remove("cuwheel");
        }
    }
    let mut kept = Vec::new();
    // Where the file itself says setuptools reads a dynamic version from.
    let setuptools_version = doc
        .get("tool")
        .and_then(|t| t.get("setuptools"))
        .and_then(|s| s.get("dynamic"))
        .and_then(|d| d.get("version"))
        .is_some();
    if !doc.contains_key("project") {
        doc.insert("project", Item::Table(Table::new()));
    }
    let Some(project) = doc.get_mut("project").and_then(Item::as_table_mut) else {
        bail!("pyproject.toml's `project` is not a table; write it as a [project] table");
    };
    let meta = &inferred.meta;
    match &meta.name {
        Some(name) => set(project, &mut kept, "name", Some(name.as_str().into())),
        None if !project.contains_key("name") => {
            project.insert("name", Item::Value(fallback_name.into()));
        }
        None => {}
    }
    match &meta.version {
        // The file's own source of a dynamic version wins: setuptools reads
        // it, and so does cuwheel.
        Some(VersionSource::Static(_))
            if setuptools_version && declares_dynamic(project, "version") => {}
        // Otherwise setuptools takes setup.py's: written as the static value
        // it is, and no longer listed in `dynamic` (PEP 621 forbids both).
        Some(VersionSource::Static(v)) => {
            set(project, &mut kept, "version", Some(v.as_str().into()));
            undeclare_dynamic(project, "version");
        }
        Some(_) if !project.contains_key("version") => {
            let mut dynamic = project
                .get("dynamic")
                .and_then(Item::as_array)
                .cloned()
                .unwrap_or_default();
            if !dynamic.iter().any(|v| v.as_str() == Some("version")) {
                dynamic.push("version");
            }
            project.insert("dynamic", Item::Value(Value::Array(dynamic)));
        }
        Some(_) => {}
        // A version the file already declares dynamic (setuptools reads it,
        // and so does cuwheel) is not replaced by a placeholder.
        None if !project.contains_key("version") && !declares_dynamic(project, "version") => {
            project.insert("version", Item::Value("0.0.0".into()));
        }
        None => {}
    }
    let mut fill = |key: &str, value: Option<Value>| set(project, &mut kept, key, value);
    fill("description", meta.description.as_deref().map(Into::into));
    fill(
        "readme",
        meta.readme.as_ref().map(|readme| match readme {
            Readme::File { path, content_type }
                if *content_type == Readme::content_type_of(path) =>
            {
                path.as_str().into()
            }
            Readme::File { path, content_type } => {
                let mut table = InlineTable::new();
                table.insert("file", path.as_str().into());
                table.insert("content-type", content_type.as_str().into());
                Value::InlineTable(table)
            }
            Readme::Text { text, content_type } => {
                let mut table = InlineTable::new();
                table.insert("text", text.as_str().into());
                table.insert("content-type", content_type.as_str().into());
                Value::InlineTable(table)
            }
        }),
    );
    fill(
        "requires-python",
        meta.requires_python.as_deref().map(Into::into),
    );
    let mut license_notes = Vec::new();
    // PEP 621's table form (`{ file = "LICENSE" }`) cannot stand beside
    // license-files: an inferred SPDX expression replaces it.
    if meta.license.is_some() && project.get("license").is_some_and(|l| l.as_str().is_none()) {
        let old = project.remove("license").expect("present");
        let shown = match old.into_value() {
            Ok(mut value) => {
                value.decor_mut().clear();
                value.to_string()
            }
            Err(item) => item.to_string(),
        };
        license_notes.push(format!(
            "replaced pyproject.toml's project.license = {} with the SPDX expression (PEP 639 \
             allows license-files only beside an expression)",
            shown.trim()
        ));
    }
    let legacy_license = project.get("license").is_some_and(|l| l.as_str().is_none());
    let mut fill = |key: &str, value: Option<Value>| set(project, &mut kept, key, value);
    fill("license", meta.license.as_deref().map(Into::into));
    fill(
        "license-files",
        (!meta.license_files.is_empty() && !legacy_license).then(|| strings(&meta.license_files)),
    );
    fill(
        "authors",
        (!meta.authors.is_empty()).then(|| people(&meta.authors)),
    );
    fill(
        "maintainers",
        (!meta.maintainers.is_empty()).then(|| people(&meta.maintainers)),
    );
    fill(
        "keywords",
        (!meta.keywords.is_empty()).then(|| strings(&meta.keywords)),
    );
    fill(
        "classifiers",
        (!meta.classifiers.is_empty()).then(|| strings(&meta.classifiers)),
    );
    fill(
        "dependencies",
        (!meta.dependencies.is_empty()).then(|| strings(&meta.dependencies)),
    );
    for (key, entries) in [
        (
            "urls",
            meta.urls
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect::<Vec<_>>(),
        ),
        (
            "optional-dependencies",
            meta.optional_dependencies
                .iter()
                .map(|(k, v)| (k.clone(), strings(v)))
                .collect(),
        ),
    ] {
        if entries.is_empty() {
            continue;
        }
        if project.contains_key(key) {
            kept.push(format!("project.{key} (the file's table is kept as it is)"));
            continue;
        }
        let mut table = Table::new();
        for (k, v) in entries {
            table.insert(&k, Item::Value(v));
        }
        project.insert(key, Item::Table(table));
    }
    let mut notes = license_notes;
    notes.extend(drop_license_classifiers(project));
    let mut text = doc.to_string();
    if !text.is_empty() && !text.ends_with("\n\n") {
        text.push_str(if text.ends_with('\n') { "\n" } else { "\n\n" });
    }
    text.push_str(cuwheel);
    // What is written must read back.
    if let Err(e) = text.parse::<DocumentMut>() {
        bail!("cuwheel init produced TOML that does not parse (a bug in cuwheel): {e}");
    }
    Ok(Merge { text, kept, notes })
}

/// PEP 639: beside a `license` expression, no `License ::` classifier. The
/// file's own ones are dropped when the table ends up with an expression.
fn drop_license_classifiers(project: &mut Table) -> Vec<String> {
    if project.get("license").and_then(Item::as_str).is_none() {
        return Vec::new();
    }
    let Some(classifiers) = project.get_mut("classifiers").and_then(Item::as_array_mut) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    classifiers.retain(|c| match c.as_str() {
        Some(text) if super::license::is_license_classifier(text) => {
            notes.push(format!(
                "dropped pyproject.toml's classifier `{text}`: project.license is the license \
                 expression, and PEP 639 allows no License classifier beside one"
            ));
            false
        }
        _ => true,
    });
    notes
}

/// Takes `key` out of `project.dynamic`, and the list with it once empty.
fn undeclare_dynamic(project: &mut Table, key: &str) {
    let Some(dynamic) = project.get_mut("dynamic").and_then(Item::as_array_mut) else {
        return;
    };
    dynamic.retain(|v| v.as_str() != Some(key));
    if dynamic.is_empty() {
        project.remove("dynamic");
    }
}

/// Whether `project.dynamic` lists `key`.
fn declares_dynamic(project: &Table, key: &str) -> bool {
    project
        .get("dynamic")
        .and_then(Item::as_array)
        .is_some_and(|d| d.iter().any(|v| v.as_str() == Some(key)))
}

/// Sets `key` unless the table has it; a different value there is kept
/// and reported.
fn set(project: &mut Table, kept: &mut Vec<String>, key: &str, value: Option<Value>) {
    let Some(value) = value else { return };
    match project.get(key) {
        Some(old) => {
            let (old_shown, new_shown) = (
                old.to_string().trim().to_string(),
                value.to_string().trim().to_string(),
            );
            if old_shown != new_shown {
                kept.push(format!(
                    "project.{key} = {old_shown} (init inferred {new_shown})"
                ));
            }
        }
        None => {
            project.insert(key, Item::Value(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::init::model::Meta;

    fn inferred() -> Inferred {
        Inferred {
            meta: Meta {
                name: Some("my-ext".into()),
                version: Some(VersionSource::Attr("my_ext.__version__".into())),
                description: Some("An extension".into()),
                dependencies: vec!["numpy>=1.24".into()],
                ..Meta::default()
            },
            ..Inferred::default()
        }
    }

    #[test]
    fn an_existing_file_keeps_its_text_and_its_keys() {
        let existing = "# build settings\n[build-system]\nrequires = [\"setuptools\", \"torch\"]  # pinned\n\n\
                        [project]\nname = \"my_ext\"\ndescription = \"Old\"\n\n[tool.black]\nline-length = 99\n";
        let merged = merge(
            Some(existing),
            &inferred(),
            "[tool.cuwheel]\nmodule = \"x._C\"\n",
            false,
            "dir",
        )
        .unwrap();
        assert!(merged.text.starts_with(
            "# build settings\n[build-system]\nrequires = [\"setuptools\", \"torch\"]  # pinned\n"
        ));
        assert!(merged.text.contains("[tool.black]\nline-length = 99\n"));
        assert!(merged.text.ends_with("[tool.cuwheel]\nmodule = \"x._C\"\n"));
        assert!(
            merged.text.contains("dynamic = [\"version\"]"),
            "{}",
            merged.text
        );
        assert!(merged.text.contains("dependencies = [\"numpy>=1.24\"]"));
        assert_eq!(
            merged.kept,
            [
                "project.name = \"my_ext\" (init inferred \"my-ext\")",
                "project.description = \"Old\" (init inferred \"An extension\")"
            ]
        );
        let parsed: toml::Table = merged.text.parse().unwrap();
        assert_eq!(
            parsed["tool"]["black"]["line-length"].as_integer(),
            Some(99)
        );
    }

    #[test]
    fn an_old_cuwheel_table_is_replaced_only_with_force() {
        let existing =
            "[project]\nname = \"x\"\nversion = \"1.0\"\n\n[tool.cuwheel]\nmodule = \"old._C\"\n";
        let err = merge(Some(existing), &inferred(), "[tool.cuwheel]\n", false, "x").unwrap_err();
        assert!(err.to_string().contains("--force"), "{err}");
        let merged = merge(
            Some(existing),
            &inferred(),
            "[tool.cuwheel]\nmodule = \"new._C\"\n",
            true,
            "x",
        )
        .unwrap();
        assert!(!merged.text.contains("old._C"));
        assert!(merged.text.contains("new._C"));
        assert!(
            !merged.text.contains("dynamic"),
            "a static version stays: {}",
            merged.text
        );
        assert!(
            merge(Some("[project\n"), &inferred(), "", false, "x")
                .unwrap_err()
                .to_string()
                .contains("not valid TOML")
        );
    }

    #[test]
    fn a_version_the_file_declares_dynamic_gets_no_placeholder() {
        let mut none = inferred();
        none.meta.version = None;
        let existing = "[project]\nname = \"x\"\ndynamic = [\"version\"]\n\n\
                        [tool.setuptools.dynamic]\nversion = { attr = \"x.__version__\" }\n";
        let merged = merge(Some(existing), &none, "[tool.cuwheel]\n", false, "x").unwrap();
        assert!(!merged.text.contains("0.0.0"), "{}", merged.text);
        // Without it, the placeholder is written (and init reports it).
        let merged = merge(Some("[project]\nname = \"x\"\n"), &none, "", false, "x").unwrap();
        assert!(
            merged.text.contains("version = \"0.0.0\""),
            "{}",
            merged.text
        );
    }

    #[test]
    fn a_version_setup_py_gives_is_written_static_and_leaves_dynamic() {
        // torchsort 0.1.10: dynamic = ["version"], and setup.py's setup(version=...).
        let mut inferred = inferred();
        inferred.meta.version = Some(VersionSource::Static("0.1.10".into()));
        let inferred = || inferred.clone();
        let existing = "[project]\nname = \"x\"\ndynamic = [\"version\", \"readme\"]\n";
        let merged = merge(Some(existing), &inferred(), "", false, "x").unwrap();
        let doc: toml::Table = merged.text.parse().unwrap();
        let project = doc["project"].as_table().unwrap();
        assert!(project.contains_key("version"), "{}", merged.text);
        assert_eq!(
            project["dynamic"].as_array().unwrap(),
            &vec![toml::Value::from("readme")],
            "{}",
            merged.text
        );
        // The list goes once empty.
        let existing = "[project]\nname = \"x\"\ndynamic = [\"version\"]\n";
        let merged = merge(Some(existing), &inferred(), "", false, "x").unwrap();
        assert!(!merged.text.contains("dynamic"), "{}", merged.text);
        // With its own source in [tool.setuptools.dynamic], the file keeps it.
        let existing = "[project]\nname = \"x\"\ndynamic = [\"version\"]\n\n\
                        [tool.setuptools.dynamic]\nversion = { attr = \"x.__version__\" }\n";
        let merged = merge(Some(existing), &inferred(), "", false, "x").unwrap();
        let doc: toml::Table = merged.text.parse().unwrap();
        assert!(
            !doc["project"].as_table().unwrap().contains_key("version"),
            "{}",
            merged.text
        );
    }

    #[test]
    fn a_license_table_gives_way_to_the_inferred_expression() {
        let mut meta = inferred();
        meta.meta.license = Some("Apache-2.0".into());
        meta.meta.license_files = vec!["LICENSE".into()];
        let existing = "[project]\nname = \"x\"\nlicense = { file = \"LICENSE\" }  # a comment\n";
        let merged = merge(Some(existing), &meta, "", false, "x").unwrap();
        assert!(
            merged.text.contains("license = \"Apache-2.0\""),
            "{}",
            merged.text
        );
        assert!(
            merged.text.contains("license-files = [\"LICENSE\"]"),
            "{}",
            merged.text
        );
        assert!(
            merged.notes.iter().any(|n| n.contains(
                "replaced pyproject.toml's project.license = { file = \"LICENSE\" } with the SPDX"
            )),
            "{:?}",
            merged.notes
        );
        // No expression inferred: the table stays, and no license-files
        // is added beside it.
        meta.meta.license = None;
        let merged = merge(Some(existing), &meta, "", false, "x").unwrap();
        assert!(merged.text.contains("license = { file"), "{}", merged.text);
        assert!(!merged.text.contains("license-files"), "{}", merged.text);
    }
}

//! The METADATA of a cell's wheel, from `[project]`.
//!
//! In: the [`Config`] (its [`ProjectMetadata`]), the readme's text, the
//! license files, the cell (its version label and torch), and whether the
//! wheel is the PyPI variant's. Out: the [`CoreMetadata`] the wheel node's
//! recipe carries — PEP 621's mapping of `[project]` to core metadata,
//! PEP 639's license fields, and `Requires-Dist` led by the cell's torch
//! pin. The PyPI variant's leaves out direct references (`pkg @ URL`),
//! which PyPI refuses; the per-CUDA index's wheels keep them.

use std::path::PathBuf;

use crate::spec::{Cell, Config, Description, License, Person};
use crate::wheel::pep508::Requirement;
use crate::wheel::{CoreMetadata, Version};

use super::slash_path;

/// METADATA of the wheel of `cell`, whose version is `version`.
pub fn core_metadata(
    config: &Config,
    description: Option<&Description>,
    license_files: &[PathBuf],
    cell: &Cell,
    version: Version,
    for_pypi: bool,
) -> CoreMetadata {
    let project = &config.metadata;
    let mut metadata = CoreMetadata::new(config.name.clone(), version);
    metadata.summary = project.summary.clone();
    metadata.keywords = project.keywords.clone();
    (metadata.author, metadata.author_email) = people(&project.authors);
    (metadata.maintainer, metadata.maintainer_email) = people(&project.maintainers);
    match &project.license {
        Some(License::Expression(expression)) => {
            metadata.license_expression = Some(expression.clone())
        }
        Some(License::Text(text)) => metadata.license = Some(text.clone()),
        Some(License::File(_)) | None => {}
    }
    metadata.license_files = license_files.iter().map(|f| slash_path(f)).collect();
    metadata.classifiers = project.classifiers.clone();
    metadata.requires_python = project.requires_python.clone();
    metadata.requires_dist = vec![cell.torch_requirement()];
    let carried = |r: &&Requirement| !(for_pypi && r.is_direct_reference());
    metadata.requires_dist.extend(
        project
            .dependencies
            .iter()
            .filter(carried)
            .map(|r| r.to_string()),
    );
    for (extra, requirements) in &project.optional_dependencies {
        metadata.requires_dist.extend(
            requirements
                .iter()
                .filter(carried)
                .map(|r| r.for_extra(extra)),
        );
        metadata.provides_extra.push(extra.clone());
    }
    metadata.project_urls = project.urls.clone();
    if let Some(description) = description {
        metadata.description = Some(description.text.clone());
        metadata.description_content_type = Some(description.content_type.clone());
    }
    metadata
}

/// PEP 621's mapping of `authors` (or `maintainers`): names without an
/// address go into `Author`, entries with one into `Author-email`
/// (`Name <address>`), each comma-separated.
fn people(people: &[Person]) -> (Option<String>, Option<String>) {
    let names: Vec<&str> = people
        .iter()
        .filter(|p| p.email.is_none())
        .filter_map(|p| p.name.as_deref())
        .collect();
    let addresses: Vec<String> = people
        .iter()
        .filter_map(|p| match (&p.name, &p.email) {
            (Some(name), Some(email)) => Some(format!("{name} <{email}>")),
            (None, Some(email)) => Some(email.clone()),
            _ => None,
        })
        .collect();
    let joined = |items: Vec<String>| (!items.is_empty()).then(|| items.join(", "));
    (
        joined(names.into_iter().map(str::to_string).collect()),
        joined(addresses),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_split_into_names_and_addresses() {
        let person = |name: Option<&str>, email: Option<&str>| Person {
            name: name.map(str::to_string),
            email: email.map(str::to_string),
        };
        let (names, addresses) = people(&[
            person(Some("Ada"), None),
            person(Some("Bob"), Some("bob@example.org")),
            person(None, Some("carol@example.org")),
        ]);
        assert_eq!(names.as_deref(), Some("Ada"));
        assert_eq!(
            addresses.as_deref(),
            Some("Bob <bob@example.org>, carol@example.org")
        );
        assert_eq!(people(&[]), (None, None));
    }

    #[test]
    fn the_torch_pin_holds_one_minor_release_or_opens_for_the_stable_abi() {
        let mut cell = crate::spec::matrix::test_cell("13.0", None, "2.11");
        assert_eq!(cell.torch_requirement(), "torch>=2.11,<2.12");
        cell.flavour = crate::spec::BindingFlavour::TorchStable;
        assert_eq!(cell.torch_requirement(), "torch>=2.11");
    }

    #[test]
    fn the_pypi_variant_leaves_direct_references_out() {
        let text = r#"
[project]
name = "demo-ext"
version = "0.1.0"
dependencies = ["numpy>=1.24", "helper @ https://host.invalid/helper-1.0.tar.gz"]

[project.optional-dependencies]
Testing = ["pkg @ git+https://host.invalid/repo@abc", "pytest>=8"]

[tool.cuwheel]
module = "demo_ext._C"
kernels = ["csrc/kernels/*.cu"]
cuda-archs = ["9.0"]
baseline = "manylinux_2_31"
binding = "pybind11"
bindings = ["csrc/bindings.cpp"]

[tool.cuwheel.matrix]
cuda = ["13.0"]
python = ["3.13"]
torch = ["2.11"]
"#;
        let config = Config::parse(text, std::path::Path::new("pyproject.toml")).unwrap();
        let cell = crate::spec::matrix::test_cell("13.0", None, "2.11");
        let version = Version::parse("0.1.0").unwrap();
        let index = core_metadata(&config, None, &[], &cell, version.clone(), false);
        let tail = &index.requires_dist[1..];
        assert_eq!(
            tail,
            [
                "numpy>=1.24",
                "helper @ https://host.invalid/helper-1.0.tar.gz",
                "pkg @ git+https://host.invalid/repo@abc ; extra == \"testing\"",
                "pytest>=8; extra == \"testing\"",
            ]
        );
        assert_eq!(
            crate::wheel::metadata_fields::installer_problems(&index),
            vec![]
        );
        let pypi = core_metadata(&config, None, &[], &cell, version, true);
        assert_eq!(
            &pypi.requires_dist[1..],
            ["numpy>=1.24", "pytest>=8; extra == \"testing\""]
        );
        assert_eq!(pypi.provides_extra, ["testing"]);
    }
}

//! What the driver does inside a cell's build: turn the linked module and
//! the package files into the wheel.
//!
//! In: a [`WheelRecipe`] (JSON the plan writes into the wheel node's script:
//! name, version with the cell's label, tag, requirements and the
//! [`Provenance`]) and a directory tree laid out as the wheel's members.
//! Out: the `.whl`, written atomically by the deterministic writer, with the
//! provenance as `.dist-info/cuwheel-provenance.json`.

pub mod provenance;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::audit::archs::PROVENANCE_FILE;
use crate::wheel::{CoreMetadata, ProjectName, TagSet, Version, WheelBuilder, ZipTimestamp};
pub use provenance::{Provenance, ToolchainIdentity};

/// How one cell's wheel is named and described.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WheelRecipe {
    pub name: String,
    /// With the cell's local label: `0.1.0+pt211cu130`.
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_python: Option<String>,
    pub requires_dist: Vec<String>,
    /// `cp313-cp313-manylinux_2_31_x86_64`.
    pub tag: String,
    pub provenance: Provenance,
}

impl WheelRecipe {
    /// The canonical JSON, ending in a newline.
    pub fn to_json(&self) -> String {
        crate::json::canonical(self)
    }

    fn identity(&self) -> Result<(CoreMetadata, TagSet)> {
        let name = ProjectName::new(&self.name)
            .with_context(|| format!("the recipe's name `{}` is not a project name", self.name))?;
        let version = Version::parse(&self.version).with_context(|| {
            format!(
                "the recipe's version `{}` is not a PEP 440 version",
                self.version
            )
        })?;
        let tags = TagSet::parse(&self.tag)
            .with_context(|| format!("the recipe's tag `{}` is not a wheel tag", self.tag))?;
        let mut metadata = CoreMetadata::new(name, version);
        metadata.summary = self.summary.clone();
        metadata.license = self.license.clone();
        metadata.requires_python = self.requires_python.clone();
        metadata.requires_dist = self.requires_dist.clone();
        Ok((metadata, tags))
    }

    /// Writes the wheel of `tree` (members at their paths) into `out_dir`,
    /// with the provenance file; returns the wheel's path.
    pub fn build(&self, tree: &Path, out_dir: &Path, timestamp: ZipTimestamp) -> Result<PathBuf> {
        let (metadata, tags) = self.identity()?;
        let mut wheel = WheelBuilder::new(metadata, tags, None);
        wheel
            .add_tree(tree, "")
            .with_context(|| format!("cannot add the files of {}", tree.display()))?;
        let provenance = crate::json::canonical(&self.provenance);
        let member = format!("{}/{PROVENANCE_FILE}", wheel.filename().dist_info_dir());
        wheel.add_member(&member, provenance.into_bytes(), false)?;
        std::fs::create_dir_all(out_dir)
            .with_context(|| format!("cannot create {}", out_dir.display()))?;
        wheel.write_into(out_dir, timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn recipe() -> WheelRecipe {
        let sources = BTreeMap::from([("a.cu".to_string(), "00".repeat(32))]);
        WheelRecipe {
            name: "demo-ext".into(),
            version: "0.1.0+pt211cu130".into(),
            summary: Some("demo".into()),
            license: None,
            requires_python: Some(">=3.9".into()),
            requires_dist: vec!["torch>=2.11,<2.12".into()],
            tag: "cp313-cp313-manylinux_2_31_x86_64".into(),
            provenance: Provenance {
                cell: "cu130-py313".into(),
                cuda_archs: vec!["8.0".into(), "9.0+PTX".into()],
                config_sha256: "11".repeat(32),
                source_sha256: Provenance::source_sha256(&sources),
                sources,
                toolchains: BTreeMap::from([(
                    "cuda".into(),
                    ToolchainIdentity {
                        artifacts: BTreeMap::from([("nvcc.whl".into(), "22".repeat(32))]),
                        headers_nar_sha256: None,
                    },
                )]),
                seeds: BTreeMap::from([("busybox".into(), "33".repeat(32))]),
                cuwheel: "0.1.0".into(),
            },
        }
    }

    #[test]
    fn the_recipe_round_trips_through_its_json() {
        let recipe = recipe();
        let back: WheelRecipe = serde_json::from_str(&recipe.to_json()).unwrap();
        assert_eq!(back, recipe);
    }

    #[test]
    fn the_source_digest_is_sha256sum_of_the_sorted_lines() {
        let sources = BTreeMap::from([
            ("b".to_string(), "bb".to_string()),
            ("a".to_string(), "aa".to_string()),
        ]);
        assert_eq!(
            Provenance::source_sha256(&sources),
            crate::store::Hash::sha256("aa  a\nbb  b\n").to_hex()
        );
    }

    #[test]
    fn the_wheel_holds_the_tree_and_the_provenance() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("demo_ext")).unwrap();
        std::fs::write(tree.join("demo_ext/__init__.py"), "").unwrap();
        let path = recipe()
            .build(
                &tree,
                &dir.path().join("out"),
                ZipTimestamp::from_unix_seconds(0).unwrap(),
            )
            .unwrap();
        let wheel = crate::wheel::WheelArchive::open(&path).unwrap();
        let names: Vec<&str> = wheel.members().iter().map(|m| m.name.as_str()).collect();
        assert!(names.contains(&"demo_ext/__init__.py"), "{names:?}");
        let provenance = wheel
            .member("demo_ext-0.1.0+pt211cu130.dist-info/cuwheel-provenance.json")
            .expect("the provenance file");
        let back: Provenance = serde_json::from_slice(&provenance.data).unwrap();
        assert_eq!(back.cell, "cu130-py313");
        assert_eq!(wheel.metadata().requires_dist, vec!["torch>=2.11,<2.12"]);
        assert!(wheel.verify().is_empty(), "{:?}", wheel.verify());
    }
}

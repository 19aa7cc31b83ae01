//! What the driver does inside a cell's build: turn the linked module and
//! the package files into the wheel.
//!
//! In: a [`WheelRecipe`] (JSON the plan writes into the wheel node's script:
//! name, version with the cell's label, interpreter and ABI tags, the
//! bounds of the platform tag, requirements and the [`Provenance`]) and a
//! directory tree laid out as the wheel's members. Out: the `.whl`, written
//! atomically by the deterministic writer, with the provenance as
//! `.dist-info/cuwheel-provenance.json`. The platform tag is computed here,
//! from the ELF members, by the audit's rule ([`PlatformRule`]), so the
//! plan only predicts the file's name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::audit::archs::PROVENANCE_FILE;
use crate::audit::{AuditOptions, allowed_policy};
use crate::wheel::{
    CoreMetadata, PlatformRule, ProjectName, TagSet, Version, WheelBuilder, WheelFile, ZipTimestamp,
};

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
    /// The interpreter and ABI tags: `cp313-cp313`, `cp39-abi3`.
    pub tag: String,
    /// The bounds of the platform tag the build computes.
    pub platform: PlatformRule,
    pub provenance: Provenance,
}

/// Where a wheel comes from: enough for `cuwheel audit` (the archs) and
/// `cuwheel reproduce` (the cell, and digests to compare a checkout with).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The cell's name: `cu130-py313`.
    pub cell: String,
    /// `cuda-archs` as configured; the audit reads this key.
    pub cuda_archs: Vec<String>,
    /// The lock's `config-sha256`: the `[tool.cuwheel]` table.
    pub config_sha256: String,
    /// sha256 of the `cuwheel.lock` file.
    pub lock_sha256: String,
    /// sha256 of [`Provenance::sources`] written as `sha256sum` lines.
    pub source_sha256: String,
    /// Every project file the wheels are built from, by relative path.
    pub sources: BTreeMap<String, String>,
    /// The cell's toolchains by role (`cuda`, `gcc`, `python`, `torch`),
    /// as named in the lock.
    pub toolchains: BTreeMap<String, String>,
    /// The toolkit whose nvcc compiled the kernels (`12.4`), which need not
    /// be the CUDA the cell's name serves (`cu126`).
    pub nvcc: String,
    /// The driver's version.
    pub cuwheel: String,
}

impl Provenance {
    /// The digest of a set of source digests: `sha256sum`'s lines, sorted
    /// by path, hashed.
    pub fn source_sha256(sources: &BTreeMap<String, String>) -> String {
        let lines: String = sources
            .iter()
            .map(|(path, sha256)| format!("{sha256}  {path}\n"))
            .collect();
        crate::store::Hash::sha256(lines).to_hex()
    }
}

impl WheelRecipe {
    /// The canonical JSON, ending in a newline.
    pub fn to_json(&self) -> String {
        crate::json::canonical(self)
    }

    fn metadata(&self) -> Result<CoreMetadata> {
        let name = ProjectName::new(&self.name)
            .with_context(|| format!("the recipe's name `{}` is not a project name", self.name))?;
        let version = Version::parse(&self.version).with_context(|| {
            format!(
                "the recipe's version `{}` is not a PEP 440 version",
                self.version
            )
        })?;
        let mut metadata = CoreMetadata::new(name, version);
        metadata.summary = self.summary.clone();
        metadata.license = self.license.clone();
        metadata.requires_python = self.requires_python.clone();
        metadata.requires_dist = self.requires_dist.clone();
        Ok(metadata)
    }

    /// The full tag for `builder`'s members: the recipe's interpreter and
    /// ABI, and the platform its rule chooses for their ELF files, judged by
    /// the audit on the wheel as built so far (tagged `any`).
    fn tags(&self, builder: &WheelBuilder, timestamp: ZipTimestamp) -> Result<TagSet> {
        let draft = builder.to_bytes(timestamp)?;
        let name = Path::new("draft").join(builder.filename().to_string());
        let wheel = WheelFile::from_bytes(&name, &draft)?;
        let platform = match allowed_policy(&wheel, &AuditOptions::default())? {
            Some(allowed) => self
                .platform
                .choose(allowed)
                .map_err(|problem| anyhow::anyhow!("cell {}: {problem}", self.provenance.cell))?,
            None => anyhow::bail!(
                "cell {}: the wheel holds no ELF file, so it has no platform to tag; the link \
                 step must put the extension module into the tree",
                self.provenance.cell
            ),
        };
        let tag = format!("{}-{platform}", self.tag);
        TagSet::parse(&tag).with_context(|| format!("the recipe's tag `{tag}` is not a wheel tag"))
    }

    /// Writes the wheel of `tree` (members at their paths) into `out_dir`,
    /// with the provenance file; returns the wheel's path.
    pub fn build(&self, tree: &Path, out_dir: &Path, timestamp: ZipTimestamp) -> Result<PathBuf> {
        let metadata = self.metadata()?;
        let placeholder = TagSet::parse(&format!("{}-any", self.tag))
            .with_context(|| format!("the recipe's tag `{}` is not python-abi", self.tag))?;
        let mut wheel = WheelBuilder::new(metadata, placeholder, None);
        wheel
            .add_tree(tree, "")
            .with_context(|| format!("cannot add the files of {}", tree.display()))?;
        let tags = self.tags(&wheel, timestamp)?;
        wheel.set_tags(tags);
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

    fn recipe() -> WheelRecipe {
        let sources = BTreeMap::from([("a.cu".to_string(), "00".repeat(32))]);
        WheelRecipe {
            name: "demo-ext".into(),
            version: "0.1.0+pt211cu130".into(),
            summary: Some("demo".into()),
            license: None,
            requires_python: Some(">=3.9".into()),
            requires_dist: vec!["torch>=2.11,<2.12".into()],
            tag: "cp313-cp313".into(),
            platform: PlatformRule {
                least_compatible: "manylinux_2_31_x86_64".into(),
                most_compatible: "manylinux_2_28_x86_64".into(),
            },
            provenance: Provenance {
                cell: "cu130-py313".into(),
                cuda_archs: vec!["8.0".into(), "9.0+PTX".into()],
                config_sha256: "11".repeat(32),
                lock_sha256: "22".repeat(32),
                source_sha256: Provenance::source_sha256(&sources),
                sources,
                toolchains: BTreeMap::from([("cuda".into(), "cuda130".into())]),
                nvcc: "13.0".into(),
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

    /// The wheel of a real module, tagged from its symbols, is in
    /// tests/wheel_platform.rs (it needs a compiler); without any ELF file
    /// there is no platform to tag, and nothing is written.
    #[test]
    fn a_tree_without_a_module_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("demo_ext")).unwrap();
        std::fs::write(tree.join("demo_ext/__init__.py"), "").unwrap();
        let out = dir.path().join("out");
        let err = recipe()
            .build(&tree, &out, ZipTimestamp::from_unix_seconds(0).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cell cu130-py313: the wheel holds no ELF file"),
            "{err}"
        );
        assert!(!out.exists());
    }
}

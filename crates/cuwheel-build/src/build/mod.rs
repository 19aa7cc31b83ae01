//! What the driver does inside a cell's build: turn the linked module and
//! the package files into the wheel.
//!
//! In: a [`WheelRecipe`] (JSON the plan writes into the wheel node's script:
//! the METADATA — name, version with the cell's label, requirements,
//! description, license fields — the interpreter and ABI tags, the bounds of
//! the platform tag, and the [`Provenance`]) and a directory tree laid out as
//! the wheel's members, license files included under `<dist-info>/licenses/`.
//! Out: the `.whl`, written atomically by the deterministic writer, with the
//! provenance as `.dist-info/cuwheel-provenance.json`. The platform tag is
//! computed here, from the ELF members, by the audit's rule
//! ([`PlatformRule`]), so the plan only predicts the file's name.

pub mod provenance;
pub mod sbom;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::audit::archs::PROVENANCE_FILE;
use crate::audit::{AuditOptions, allowed_policy};
use crate::wheel::{CoreMetadata, PlatformRule, TagSet, WheelBuilder, WheelFile, ZipTimestamp};
pub use provenance::{Provenance, ToolchainIdentity};

/// How one cell's wheel is named and described.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WheelRecipe {
    /// METADATA, its version with the cell's local label (`0.1.0+pt211cu130`).
    pub metadata: CoreMetadata,
    /// The interpreter and ABI tags: `cp313-cp313`, `cp39-abi3`.
    pub tag: String,
    /// The bounds of the platform tag the build computes.
    pub platform: PlatformRule,
    pub provenance: Provenance,
    /// What the SBOM lists besides the wheel ([`sbom`]).
    pub sbom: sbom::SbomInputs,
}

impl WheelRecipe {
    /// The canonical JSON, ending in a newline.
    pub fn to_json(&self) -> String {
        crate::json::canonical(self)
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
        let placeholder = TagSet::parse(&format!("{}-any", self.tag))
            .with_context(|| format!("the recipe's tag `{}` is not python-abi", self.tag))?;
        let mut wheel = WheelBuilder::new(self.metadata.clone(), placeholder, None);
        let licenses = Path::new(&wheel.filename().dist_info_dir()).join("licenses");
        for file in &self.metadata.license_files {
            let staged = tree.join(&licenses).join(file);
            if !staged.is_file() {
                anyhow::bail!(
                    "METADATA names the license file {file}, but {} is not in the wheel's tree; \
                     the plan stages each license file there",
                    staged.display()
                );
            }
        }
        wheel
            .add_tree(tree, "")
            .with_context(|| format!("cannot add the files of {}", tree.display()))?;
        let tags = self.tags(&wheel, timestamp)?;
        wheel.set_tags(tags);
        let provenance = crate::json::canonical(&self.provenance);
        let member = format!("{}/{PROVENANCE_FILE}", wheel.filename().dist_info_dir());
        wheel.add_member(&member, provenance.into_bytes(), false)?;
        let bom = sbom::bom_json(&self.metadata, &self.sbom, timestamp, &self.to_json())?;
        let member = format!("{}/{}", wheel.filename().dist_info_dir(), sbom::SBOM_FILE);
        wheel.add_member(&member, bom.into_bytes(), false)?;
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
        let mut metadata = CoreMetadata::new(
            crate::wheel::ProjectName::new("demo-ext").unwrap(),
            crate::wheel::Version::parse("0.1.0+pt211cu130").unwrap(),
        );
        metadata.summary = Some("demo".into());
        metadata.requires_python = Some(">=3.9".into());
        metadata.requires_dist = vec!["torch>=2.11,<2.12".into()];
        metadata.license_expression = Some("MIT".into());
        metadata.license_files = vec!["LICENSE".into()];
        WheelRecipe {
            metadata,
            tag: "cp313-cp313".into(),
            platform: PlatformRule {
                least_compatible: "manylinux_2_31_x86_64".into(),
                most_compatible: "manylinux_2_28_x86_64".into(),
            },
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
                nvcc: "13.0".into(),
                cuwheel: "0.1.0".into(),
            },
            sbom: sbom::SbomInputs::default(),
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
    /// tests/it/wheel_platform.rs (it needs a compiler). A license file METADATA
    /// names but the tree lacks is refused; without any ELF file there is no
    /// platform to tag. Either way nothing is written.
    #[test]
    fn a_tree_without_its_license_or_a_module_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("demo_ext")).unwrap();
        std::fs::write(tree.join("demo_ext/__init__.py"), "").unwrap();
        let out = dir.path().join("out");
        let timestamp = ZipTimestamp::from_unix_seconds(0).unwrap();
        let error = recipe().build(&tree, &out, timestamp).unwrap_err();
        assert!(
            error.to_string().contains("license file LICENSE"),
            "{error}"
        );
        let licenses = tree.join("demo_ext-0.1.0+pt211cu130.dist-info/licenses");
        std::fs::create_dir_all(&licenses).unwrap();
        std::fs::write(licenses.join("LICENSE"), "MIT License\n").unwrap();
        let err = recipe()
            .build(&tree, &out, timestamp)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cell cu130-py313: the wheel holds no ELF file"),
            "{err}"
        );
        assert!(!out.exists());
    }
}

//! The CUDA architectures a wheel is expected to carry, as `cuda-archs`
//! lists them (`8.0`, `9.0a`, `10.0+PTX`), and how a fat binary measures up.
//!
//! In: the list (from the command line or the wheel's provenance file) and a
//! parsed [`Fatbin`]. Out: the SASS and PTX images expected, and which are
//! missing or extra, an arch-specific or family-specific one named as such.
//!
//! Each entry is read by the config's own grammar ([`CudaArch`]): one
//! grammar of archs for the config, the plan and the audit.
//! `MAJOR.MINOR[a|f][+PTX]` asks for SASS `sm_<MAJOR><MINOR>[a|f]` and, with
//! `+PTX`, also PTX `compute_<MAJOR><MINOR>[a|f]`: the meaning of
//! `TORCH_CUDA_ARCH_LIST` and of nvcc's `-gencode` pairs.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::fatbin::{Fatbin, GpuArch, image_names};
use crate::spec::CudaArch;

/// The file in a wheel's `.dist-info/` where cuwheel records how the wheel
/// was built; its `cuda_archs` key holds the expected architectures.
pub const PROVENANCE_FILE: &str = "cuwheel-provenance.json";

/// The images a wheel's fat binaries must hold, exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedArchs {
    /// The list as given: `["8.0", "9.0a", "10.0+PTX"]`.
    pub declared: Vec<String>,
    /// The list read.
    pub archs: Vec<CudaArch>,
    /// Architectures that need SASS: 80, 90a, 100.
    pub sass: BTreeSet<GpuArch>,
    /// Architectures that need PTX too: 100.
    pub ptx: BTreeSet<GpuArch>,
}

impl Serialize for ExpectedArchs {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ExpectedArchs", 2)?;
        s.serialize_field("declared", &self.declared)?;
        s.serialize_field("images", &image_names(&self.sass, &self.ptx))?;
        s.end()
    }
}

/// The fat-binary arch of a configured one: `9.0a` → 90a.
pub fn gpu_arch(arch: &CudaArch) -> GpuArch {
    GpuArch {
        number: arch.major * 10 + arch.minor,
        suffix: arch.suffix,
    }
}

impl ExpectedArchs {
    /// Parses a list of entries; an entry may itself hold several separated
    /// by `,`, `;` or spaces, so `"8.0,9.0"` and `["8.0", "9.0"]` agree.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<ExpectedArchs, String> {
        let mut expected = ExpectedArchs {
            declared: Vec::new(),
            archs: Vec::new(),
            sass: BTreeSet::new(),
            ptx: BTreeSet::new(),
        };
        let items = entries.iter().flat_map(|e| {
            e.as_ref()
                .split([',', ';', ' '])
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        });
        for item in items {
            let arch = item.parse::<CudaArch>().map_err(|error| {
                format!(
                    "`{item}` is not a CUDA architecture: write MAJOR.MINOR with an optional a or f \
                     suffix and an optional +PTX, e.g. 8.0, 9.0a, 10.0f or 12.0+PTX ({})",
                    error.fix
                )
            })?;
            expected.sass.insert(gpu_arch(&arch));
            if arch.ptx {
                expected.ptx.insert(gpu_arch(&arch));
            }
            expected.archs.push(arch);
            expected.declared.push(item);
        }
        if expected.declared.is_empty() {
            return Err("the CUDA architecture list is empty".to_string());
        }
        Ok(expected)
    }

    /// Reads `cuda_archs` from a provenance file's bytes; `Ok(None)` when the
    /// file has no such key (a wheel without CUDA code).
    pub fn from_provenance(json: &[u8]) -> Result<Option<ExpectedArchs>, String> {
        #[derive(Deserialize)]
        struct Provenance {
            cuda_archs: Option<Vec<String>>,
        }
        let provenance: Provenance = serde_json::from_slice(json).map_err(|e| {
            format!("is not a JSON object whose `cuda_archs` is a list of strings: {e}")
        })?;
        provenance
            .cuda_archs
            .map(|archs| ExpectedArchs::parse(&archs))
            .transpose()
    }

    /// What one member's fat binary lacks and holds beyond the expectation;
    /// the suffix counts (sm_90 does not stand in for sm_90a).
    pub fn compare(&self, fatbin: &Fatbin) -> ArchMismatch {
        let (sass, ptx) = (fatbin.sass(), fatbin.ptx());
        let mut notes = Vec::new();
        for arch in &self.archs {
            let wanted = gpu_arch(arch);
            let Some(kind) = arch.suffix.kind() else {
                continue;
            };
            let mut lacking: Vec<(String, &BTreeSet<GpuArch>)> = Vec::new();
            if !sass.contains(&wanted) {
                lacking.push((arch.sm_name(), &sass));
            }
            if arch.ptx && !ptx.contains(&wanted) {
                lacking.push((arch.compute_name(), &ptx));
            }
            for (image, present) in lacking {
                let mut note = format!("missing {image} ({kind}): cuda-archs asks for {arch}");
                let prefix = if image.starts_with("sm_") {
                    "sm_"
                } else {
                    "compute_"
                };
                let others: Vec<String> = present
                    .iter()
                    .filter(|other| other.number == wanted.number)
                    .map(|other| format!("{prefix}{other}"))
                    .collect();
                if !others.is_empty() {
                    note += &format!(
                        ", and {} is no substitute; compile with \
                         -gencode=arch={},code={image}",
                        others.join(", "),
                        arch.compute_name()
                    );
                }
                notes.push(note);
            }
        }
        ArchMismatch {
            missing: image_names(self.sass.difference(&sass), self.ptx.difference(&ptx)),
            extra: image_names(sass.difference(&self.sass), ptx.difference(&self.ptx)),
            notes,
        }
    }
}

/// The difference between expected and present images.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchMismatch {
    pub missing: Vec<String>,
    pub extra: Vec<String>,
    /// One line per missing arch-specific or family-specific image, naming
    /// its kind and the entry that asks for it.
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl ArchMismatch {
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.extra.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::fatbin::{ArchSuffix, FatbinImage, ImageKind};

    fn names(e: &ExpectedArchs) -> Vec<String> {
        image_names(&e.sass, &e.ptx)
    }

    #[test]
    fn parses_torch_style_lists() {
        let e = ExpectedArchs::parse(&["8.0,9.0a", "10.0f+PTX 12.0;7.5"]).unwrap();
        assert_eq!(
            names(&e),
            [
                "sm_75",
                "sm_80",
                "sm_90a",
                "sm_100f",
                "sm_120",
                "compute_100f"
            ]
        );
        assert_eq!(e.declared, ["8.0", "9.0a", "10.0f+PTX", "12.0", "7.5"]);
        for bad in ["80", "sm_80", "8.0+ptx", "8.10", "8.0b", ".0", "x.y"] {
            let err = ExpectedArchs::parse(&[bad]).unwrap_err();
            assert!(err.contains(bad) && err.contains("MAJOR.MINOR"), "{err}");
        }
        assert!(ExpectedArchs::parse::<&str>(&[]).is_err());
    }

    #[test]
    fn provenance_key_is_optional_and_checked() {
        let e =
            ExpectedArchs::from_provenance(br#"{"cuda_archs": ["8.0", "9.0+PTX"], "cell": "x"}"#)
                .unwrap()
                .unwrap();
        assert_eq!(names(&e), ["sm_80", "sm_90", "compute_90"]);
        assert_eq!(ExpectedArchs::from_provenance(b"{}").unwrap(), None);
        assert!(ExpectedArchs::from_provenance(br#"{"cuda_archs": "8.0"}"#).is_err());
        assert!(ExpectedArchs::from_provenance(b"not json").is_err());
        assert!(ExpectedArchs::from_provenance(br#"{"cuda_archs": ["eight"]}"#).is_err());
    }

    #[test]
    fn compare_names_missing_and_extra_images() {
        let image = |kind, number| FatbinImage {
            kind,
            arch: GpuArch {
                number,
                suffix: ArchSuffix::None,
            },
            compressed: false,
        };
        let fatbin = Fatbin {
            containers: 1,
            images: vec![image(ImageKind::Sass, 80), image(ImageKind::Ptx, 80)],
        };
        let expected = ExpectedArchs::parse(&["8.0", "9.0+PTX"]).unwrap();
        let mismatch = expected.compare(&fatbin);
        assert_eq!(mismatch.missing, ["sm_90", "compute_90"]);
        assert_eq!(mismatch.extra, ["compute_80"]);
        assert!(
            ExpectedArchs::parse(&["8.0+PTX"])
                .unwrap()
                .compare(&fatbin)
                .is_empty()
        );
    }

    #[test]
    fn compare_is_suffix_aware_and_names_a_missing_specific_image() {
        let image = |kind, number, suffix| FatbinImage {
            kind,
            arch: GpuArch { number, suffix },
            compressed: false,
        };
        // Built for plain sm_90 where 9.0a was asked for.
        let fatbin = Fatbin {
            containers: 1,
            images: vec![
                image(ImageKind::Sass, 80, ArchSuffix::None),
                image(ImageKind::Sass, 90, ArchSuffix::None),
                image(ImageKind::Sass, 100, ArchSuffix::FamilySpecific),
            ],
        };
        let expected = ExpectedArchs::parse(&["8.0", "9.0a", "10.0f+PTX"]).unwrap();
        assert_eq!(
            expected
                .archs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["8.0", "9.0a", "10.0f+PTX"]
        );
        let mismatch = expected.compare(&fatbin);
        assert_eq!(mismatch.missing, ["sm_90a", "compute_100f"]);
        assert_eq!(mismatch.extra, ["sm_90"]);
        assert_eq!(
            mismatch.notes,
            [
                "missing sm_90a (arch-specific): cuda-archs asks for 9.0a, and sm_90 is no \
                 substitute; compile with -gencode=arch=compute_90a,code=sm_90a",
                "missing compute_100f (family-specific): cuda-archs asks for 10.0f+PTX",
            ]
        );
        // The notes stay out of the JSON report.
        let json = serde_json::to_value(&mismatch).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"missing": ["sm_90a", "compute_100f"], "extra": ["sm_90"]})
        );
        // Exactly the asked images: no mismatch, no notes.
        let fatbin = Fatbin {
            containers: 1,
            images: vec![
                image(ImageKind::Sass, 80, ArchSuffix::None),
                image(ImageKind::Sass, 90, ArchSuffix::ArchSpecific),
                image(ImageKind::Sass, 100, ArchSuffix::FamilySpecific),
                image(ImageKind::Ptx, 100, ArchSuffix::FamilySpecific),
            ],
        };
        let mismatch = expected.compare(&fatbin);
        assert!(
            mismatch.is_empty() && mismatch.notes.is_empty(),
            "{mismatch:?}"
        );
    }

    #[test]
    fn provenance_archs_with_suffixes_round_trip() {
        let e = ExpectedArchs::from_provenance(br#"{"cuda_archs": ["9.0a", "12.0f+PTX"]}"#)
            .unwrap()
            .unwrap();
        assert_eq!(names(&e), ["sm_90a", "sm_120f", "compute_120f"]);
        assert_eq!(e.declared, ["9.0a", "12.0f+PTX"]);
        // One grammar: the audit refuses what the config refuses, with its fix.
        let err = ExpectedArchs::parse(&["sm_90a"]).unwrap_err();
        assert!(err.contains("write \"9.0a\""), "{err}");
    }
}

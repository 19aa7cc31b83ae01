//! The CUDA architectures a wheel is expected to carry, as `cuda-archs`
//! lists them (`8.0`, `9.0a`, `10.0+PTX`), and how a fat binary measures up.
//!
//! In: the list (from the command line or the wheel's provenance file) and a
//! parsed [`Fatbin`]. Out: the SASS and PTX images expected, and which are
//! missing or extra.
//!
//! Each entry `MAJOR.MINOR[a|f][+PTX]` asks for SASS `sm_<MAJOR><MINOR>[a|f]`
//! and, with `+PTX`, also PTX `compute_<MAJOR><MINOR>[a|f]`: the meaning of
//! `TORCH_CUDA_ARCH_LIST` and of nvcc's `-gencode` pairs.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::fatbin::{ArchSuffix, Fatbin, GpuArch, image_names};

/// The file in a wheel's `.dist-info/` where cuwheel records how the wheel
/// was built; its `cuda_archs` key holds the expected architectures.
pub const PROVENANCE_FILE: &str = "cuwheel-provenance.json";

/// The images a wheel's fat binaries must hold, exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedArchs {
    /// The list as given: `["8.0", "9.0", "10.0+PTX"]`.
    pub declared: Vec<String>,
    /// Architectures that need SASS: 80, 90, 100.
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

impl ExpectedArchs {
    /// Parses a list of entries; an entry may itself hold several separated
    /// by `,`, `;` or spaces, so `"8.0,9.0"` and `["8.0", "9.0"]` agree.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<ExpectedArchs, String> {
        let mut expected = ExpectedArchs {
            declared: Vec::new(),
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
            let (arch, ptx) = match item.strip_suffix("+PTX") {
                Some(arch) => (arch, true),
                None => (item.as_str(), false),
            };
            let arch = parse_arch(arch).ok_or_else(|| {
                format!(
                    "`{item}` is not a CUDA architecture: write MAJOR.MINOR with an optional a or f \
                     suffix and an optional +PTX, e.g. 8.0, 9.0a, 10.0f or 12.0+PTX"
                )
            })?;
            expected.sass.insert(arch);
            if ptx {
                expected.ptx.insert(arch);
            }
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

    /// What one member's fat binary lacks and holds beyond the expectation.
    pub fn compare(&self, fatbin: &Fatbin) -> ArchMismatch {
        let (sass, ptx) = (fatbin.sass(), fatbin.ptx());
        ArchMismatch {
            missing: image_names(self.sass.difference(&sass), self.ptx.difference(&ptx)),
            extra: image_names(sass.difference(&self.sass), ptx.difference(&self.ptx)),
        }
    }
}

/// The difference between expected and present images.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchMismatch {
    pub missing: Vec<String>,
    pub extra: Vec<String>,
}

impl ArchMismatch {
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.extra.is_empty()
    }
}

/// `8.0` → 80, `10.0a` → 100a, `12.1f` → 121f.
fn parse_arch(text: &str) -> Option<GpuArch> {
    let (major, rest) = text.split_once('.')?;
    let (minor, suffix) = if let Some(minor) = rest.strip_suffix('a') {
        (minor, ArchSuffix::ArchSpecific)
    } else if let Some(minor) = rest.strip_suffix('f') {
        (minor, ArchSuffix::FamilySpecific)
    } else {
        (rest, ArchSuffix::None)
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(major) || !digits(minor) || minor.len() != 1 {
        return None;
    }
    let number = major.parse::<u32>().ok()?.checked_mul(10)? + minor.parse::<u32>().ok()?;
    Some(GpuArch { number, suffix })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::fatbin::{FatbinImage, ImageKind};

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
}

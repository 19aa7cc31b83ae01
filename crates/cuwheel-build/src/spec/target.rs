//! What the wheels run on: the GPU architectures their kernels are
//! compiled for ([`CudaArch`]) and the glibc baseline that sets their
//! platform tag ([`Baseline`]).
//!
//! In: the strings a config writes (`"10.0+PTX"`, `"manylinux_2_31"`). Out:
//! typed values that print back the same way, or an [`InvalidValue`] that
//! shows the right form (`sm_80` → `"8.0"`, `manylinux2014` →
//! `"manylinux_2_17"`).

use std::fmt;
use std::str::FromStr;

use crate::spec::version::{CudaVersion, InvalidValue, canonical_number};
use crate::wheel::Arch;

/// A GPU architecture to compile for, as `TORCH_CUDA_ARCH_LIST` writes it:
/// `8.0` gives SASS for sm_80, `10.0+PTX` SASS for sm_100 and PTX for
/// compute_100, `9.0a` SASS for the arch-specific sm_90a and `10.0f+PTX`
/// SASS for the family-specific sm_100f and PTX for compute_100f.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaArch {
    pub major: u32,
    pub minor: u32,
    /// Whether the target is arch-specific (`a`) or family-specific (`f`).
    pub suffix: ArchSuffix,
    pub ptx: bool,
}

/// Which feature set a target compiles for. nvcc writes it as a suffix of
/// the arch: `sm_90` (none: runs on its own and every later compute
/// capability of the major, PTX on every later one), `sm_90a`
/// (arch-specific: wgmma, TMA, tcgen05; runs on compute capability 9.0
/// only) and `sm_100f` (family-specific, from CUDA 12.9: runs on the
/// family's later minors too, 10.0 and 10.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArchSuffix {
    #[default]
    None,
    ArchSpecific,
    FamilySpecific,
}

impl ArchSuffix {
    /// `""`, `"a"` or `"f"`, as nvcc and `TORCH_CUDA_ARCH_LIST` write it.
    pub fn letter(self) -> &'static str {
        match self {
            ArchSuffix::None => "",
            ArchSuffix::ArchSpecific => "a",
            ArchSuffix::FamilySpecific => "f",
        }
    }

    /// `None`, `Some("arch-specific")` or `Some("family-specific")`.
    pub fn kind(self) -> Option<&'static str> {
        match self {
            ArchSuffix::None => None,
            ArchSuffix::ArchSpecific => Some("arch-specific"),
            ArchSuffix::FamilySpecific => Some("family-specific"),
        }
    }
}

impl CudaArch {
    /// The arch without `+PTX`: the SASS target a toolkit compiles for.
    pub fn sass(self) -> CudaArch {
        CudaArch { ptx: false, ..self }
    }

    /// nvcc's number with the suffix: `90a` for `9.0a`, `100f`, `80`.
    pub fn nvcc_number(&self) -> String {
        format!("{}{}{}", self.major, self.minor, self.suffix.letter())
    }

    /// `sm_90a`: nvcc's name of the SASS target.
    pub fn sm_name(&self) -> String {
        format!("sm_{}", self.nvcc_number())
    }

    /// `compute_90a`: nvcc's name of the virtual (PTX) target.
    pub fn compute_name(&self) -> String {
        format!("compute_{}", self.nvcc_number())
    }
}

const ARCH_FORM: &str = "write the compute capability as major.minor, like \"8.0\", \
                         with \"a\" for an arch-specific target (\"9.0a\") or \"f\" for a \
                         family-specific one (\"10.0f\"), adding \"+PTX\" to embed PTX as well \
                         (\"10.0+PTX\")";

impl FromStr for CudaArch {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<CudaArch, InvalidValue> {
        let not_arch = || format!("`{text}` is not a CUDA arch");
        let (base, ptx) = match text.strip_suffix("+PTX") {
            Some(base) => (base, true),
            None => match text.split_once('+') {
                Some((base, suffix)) if suffix.eq_ignore_ascii_case("ptx") => {
                    return Err(InvalidValue::new(
                        not_arch(),
                        format!("write \"{base}+PTX\""),
                    ));
                }
                _ => (text, false),
            },
        };
        let plus_ptx = |ptx: bool| if ptx { "+PTX" } else { "" };
        // nvcc's spelling: sm_80, compute_90, sm_90a, compute_100f.
        if let Some(digits) = ["sm_", "compute_", "sm"]
            .iter()
            .find_map(|prefix| base.strip_prefix(prefix))
        {
            let ptx = ptx || base.starts_with("compute_");
            let (digits, letter) = match digits.strip_suffix(['a', 'f']) {
                Some(number) => (number, &digits[number.len()..]),
                None => (digits, ""),
            };
            return Err(match CudaVersion::from_compact(digits) {
                Some(cc) => InvalidValue::new(
                    format!("`{text}` is nvcc's name, not the form cuwheel reads"),
                    format!(
                        "write \"{}.{}{letter}{}\"",
                        cc.major,
                        cc.minor,
                        plus_ptx(ptx)
                    ),
                ),
                None => InvalidValue::new(not_arch(), ARCH_FORM),
            });
        }
        let (number, suffix) = if let Some(number) = base.strip_suffix('a') {
            (number, ArchSuffix::ArchSpecific)
        } else if let Some(number) = base.strip_suffix('f') {
            (number, ArchSuffix::FamilySpecific)
        } else {
            (base, ArchSuffix::None)
        };
        let numbers: Vec<Option<u32>> = number.split('.').map(canonical_number).collect();
        match numbers[..] {
            [Some(major), Some(minor)] if major > 0 && minor <= 9 => Ok(CudaArch {
                major,
                minor,
                suffix,
                ptx,
            }),
            [Some(major)] => Err(InvalidValue::new(
                format!("`{text}` is not a CUDA arch: it has no minor version"),
                format!("write \"{major}.0{}{}\"", suffix.letter(), plus_ptx(ptx)),
            )),
            _ => Err(InvalidValue::new(not_arch(), ARCH_FORM)),
        }
    }
}

impl fmt::Display for CudaArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}{}", self.major, self.minor, self.suffix.letter())?;
        if self.ptx {
            f.write_str("+PTX")?;
        }
        Ok(())
    }
}

/// The oldest glibc the wheels may need, as a PEP 600 tag without the
/// architecture (`manylinux_2_31`). It picks the Debian suite whose sysroot
/// and GCC build the wheels, and is the wheels' platform tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Baseline {
    pub glibc_major: u32,
    pub glibc_minor: u32,
}

/// The architecture cuwheel builds on (the flake is x86_64-linux), and the
/// cells' unless the matrix's `platforms` adds aarch64 (cross-built).
pub const TARGET_ARCH: &str = "x86_64";

impl Baseline {
    /// `manylinux_2_31_x86_64`.
    pub fn platform_tag(&self) -> String {
        self.platform_tag_for(Arch::X86_64)
    }

    /// `manylinux_2_31_aarch64`: the baseline's tag for `arch`.
    pub fn platform_tag_for(&self, arch: Arch) -> String {
        format!("{self}_{arch}")
    }
}

/// An entry of the matrix's `platforms` list (or an exclude's `platform`):
/// an [`Arch`] read with the config's errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Platform(pub Arch);

impl FromStr for Platform {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<Platform, InvalidValue> {
        text.parse().map(Platform).map_err(|problem: String| {
            InvalidValue::new(
                problem,
                "write \"x86_64\", or \"aarch64\" for wheels cross-built for 64-bit ARM (Grace)",
            )
        })
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for Baseline {
    type Err = InvalidValue;
    fn from_str(text: &str) -> Result<Baseline, InvalidValue> {
        const FORM: &str = "write manylinux_<glibc major>_<glibc minor>, like \"manylinux_2_31\"";
        let legacy = [
            ("manylinux1", "manylinux_2_5"),
            ("manylinux2010", "manylinux_2_12"),
            ("manylinux2014", "manylinux_2_17"),
        ];
        if let Some((_, modern)) = legacy.iter().find(|(alias, _)| text.starts_with(alias)) {
            return Err(InvalidValue::new(
                format!("`{text}` is a legacy manylinux alias"),
                format!("write its PEP 600 name, \"{modern}\""),
            ));
        }
        let Some(rest) = text.strip_prefix("manylinux_") else {
            return Err(InvalidValue::new(
                format!("`{text}` is not a manylinux baseline"),
                FORM,
            ));
        };
        let parts: Vec<&str> = rest.split('_').collect();
        match parts[..] {
            [major, minor] => match (canonical_number(major), canonical_number(minor)) {
                (Some(glibc_major), Some(glibc_minor)) => Ok(Baseline {
                    glibc_major,
                    glibc_minor,
                }),
                _ => Err(InvalidValue::new(
                    format!("`{text}` is not a manylinux baseline"),
                    FORM,
                )),
            },
            [major, minor, ..] => Err(InvalidValue::new(
                format!("`{text}` includes the architecture"),
                format!("write only the glibc part, \"manylinux_{major}_{minor}\""),
            )),
            _ => Err(InvalidValue::new(
                format!("`{text}` is not a manylinux baseline"),
                FORM,
            )),
        }
    }
}

impl fmt::Display for Baseline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "manylinux_{}_{}", self.glibc_major, self.glibc_minor)
    }
}

impl<'de> serde::Deserialize<'de> for Baseline {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archs_print_as_written() {
        for text in [
            "8.0",
            "8.6",
            "10.0+PTX",
            "12.0",
            "9.0a",
            "9.0a+PTX",
            "10.0a",
            "10.3a",
            "12.0a",
            "10.0f",
            "12.0f+PTX",
            "11.0f",
            "12.1a",
        ] {
            assert_eq!(text.parse::<CudaArch>().unwrap().to_string(), text);
        }
        let arch: CudaArch = "10.0+PTX".parse().unwrap();
        assert_eq!((arch.major, arch.minor, arch.ptx), (10, 0, true));
        assert_eq!(arch.suffix, ArchSuffix::None);
        let arch: CudaArch = "9.0a".parse().unwrap();
        assert_eq!(
            (arch.major, arch.minor, arch.suffix, arch.ptx),
            (9, 0, ArchSuffix::ArchSpecific, false)
        );
        assert_eq!(
            (arch.sm_name(), arch.compute_name()),
            ("sm_90a".into(), "compute_90a".into())
        );
        let arch: CudaArch = "10.0f+PTX".parse().unwrap();
        assert_eq!(
            (arch.suffix, arch.ptx, arch.sm_name()),
            (ArchSuffix::FamilySpecific, true, "sm_100f".to_string())
        );
        assert_eq!(arch.sass().to_string(), "10.0f");
    }

    #[test]
    fn arch_mistakes_show_the_right_form() {
        let fix = |text: &str| text.parse::<CudaArch>().unwrap_err().fix;
        assert_eq!(fix("sm_90a"), "write \"9.0a\"");
        assert_eq!(fix("compute_100f"), "write \"10.0f+PTX\"");
        assert_eq!(fix("sm_80"), "write \"8.0\"");
        assert_eq!(fix("9a"), "write \"9.0a\"");
        assert_eq!(fix("9.0a+ptx"), "write \"9.0a+PTX\"");
        for junk in ["9.0b", "9.0af", "9.0A", "a", "9.a", ".0a", "10.10f", "0.0a"] {
            let err = junk.parse::<CudaArch>().unwrap_err();
            assert!(err.problem.contains(junk), "{err}");
            assert!(err.fix.contains("\"9.0a\""), "{junk}: {err}");
        }
    }

    #[test]
    fn baselines_are_pep_600_names_without_architecture() {
        let baseline: Baseline = "manylinux_2_31".parse().unwrap();
        assert_eq!((baseline.glibc_major, baseline.glibc_minor), (2, 31));
        assert_eq!(baseline.to_string(), "manylinux_2_31");
        assert_eq!(baseline.platform_tag(), "manylinux_2_31_x86_64");
        let err = "manylinux2014".parse::<Baseline>().unwrap_err();
        assert!(err.fix.contains("\"manylinux_2_17\""), "{err}");
        let err = "manylinux_2_31_x86_64".parse::<Baseline>().unwrap_err();
        assert!(err.fix.contains("\"manylinux_2_31\""), "{err}");
        for junk in [
            "musllinux_1_2",
            "manylinux_2",
            "manylinux_2_031",
            "manylinux_x_31",
            "",
        ] {
            assert!(junk.parse::<Baseline>().is_err(), "{junk}");
        }
    }
}

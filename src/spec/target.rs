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

/// A GPU architecture to compile for, as `TORCH_CUDA_ARCH_LIST` writes it:
/// `8.0` gives SASS for sm_80, `10.0+PTX` SASS for sm_100 and PTX for
/// compute_100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaArch {
    pub major: u32,
    pub minor: u32,
    pub ptx: bool,
}

const ARCH_FORM: &str = "write the compute capability as major.minor, like \"8.0\", \
                         adding \"+PTX\" to embed PTX as well (\"10.0+PTX\")";

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
        // nvcc's spelling: sm_80, compute_90, sm_90a.
        if let Some(digits) = ["sm_", "compute_", "sm"]
            .iter()
            .find_map(|prefix| base.strip_prefix(prefix))
        {
            let plus_ptx = if ptx || base.starts_with("compute_") {
                "+PTX"
            } else {
                ""
            };
            return Err(match CudaVersion::from_compact(digits) {
                Some(cc) => InvalidValue::new(
                    format!("`{text}` is nvcc's name, not the form cuwheel reads"),
                    format!("write \"{}.{}{plus_ptx}\"", cc.major, cc.minor),
                ),
                None => InvalidValue::new(not_arch(), ARCH_FORM),
            });
        }
        if let Some(plain) = base.strip_suffix(['a', 'f']) {
            if plain.parse::<CudaArch>().is_ok() {
                return Err(InvalidValue::new(
                    format!(
                        "`{text}` is an architecture-specific target, which cuwheel does not build yet"
                    ),
                    format!("write \"{plain}\""),
                ));
            }
        }
        let numbers: Vec<Option<u32>> = base.split('.').map(canonical_number).collect();
        match numbers[..] {
            [Some(major), Some(minor)] if major > 0 && minor <= 9 => {
                Ok(CudaArch { major, minor, ptx })
            }
            [Some(major)] => Err(InvalidValue::new(
                format!("`{text}` is not a CUDA arch: it has no minor version"),
                format!("write \"{major}.0{}\"", if ptx { "+PTX" } else { "" }),
            )),
            _ => Err(InvalidValue::new(not_arch(), ARCH_FORM)),
        }
    }
}

impl fmt::Display for CudaArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
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

/// The only architecture cuwheel builds for (the flake is x86_64-linux).
pub const TARGET_ARCH: &str = "x86_64";

impl Baseline {
    /// `manylinux_2_31_x86_64`.
    pub fn platform_tag(&self) -> String {
        format!("{self}_{TARGET_ARCH}")
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
        for text in ["8.0", "8.6", "10.0+PTX", "12.0"] {
            assert_eq!(text.parse::<CudaArch>().unwrap().to_string(), text);
        }
        let arch: CudaArch = "10.0+PTX".parse().unwrap();
        assert_eq!((arch.major, arch.minor, arch.ptx), (10, 0, true));
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

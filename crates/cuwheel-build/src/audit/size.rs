//! What a wheel weighs, and where: its file size against the configured
//! limit, and what each CUDA arch's images add to it.
//!
//! In: the wheel's file size, the limit (PyPI's `max-file-size` when the
//! audit checks PyPI's rules), and the [`ImageBytes`] of every ELF member's
//! fat binary. Out: a [`SizeReport`], one row per GPU arch in arch order
//! with its images (SASS and PTX of that arch together), their bytes as
//! stored in the ELF files, and, when the audit was asked (`--sizes`), those
//! bytes deflated as the wheel writer deflates them — about what the arch
//! adds to the wheel's file, since images compressed by nvcc
//! (`cuda-compress-mode`) deflate little further. Deflating is opt-in: it
//! costs as much as deflating the wheel's device code once more.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde::Serialize;

use super::fatbin::{GpuArch, ImageBytes};
use crate::spec::config::pypi::show_size;

/// `show_size`, in KiB below one MiB.
fn human(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        show_size(bytes)
    }
}

/// The wheel's size and what its CUDA code weighs, arch by arch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SizeReport {
    /// The wheel file's size in bytes.
    pub wheel_bytes: u64,
    /// The limit it is held to, when the audit was given one.
    pub limit_bytes: Option<u64>,
    /// One row per GPU arch with code in the wheel, in arch order.
    pub archs: Vec<ArchBytes>,
}

/// What one GPU arch's images weigh, summed over every ELF member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchBytes {
    /// nvcc's arch name without the image kind: `sm_90a` stands for the
    /// `sm_90a` cubins and the `compute_90a` PTX.
    pub arch: String,
    /// Its images, as nvcc names them: `sm_90`, `compute_90`.
    pub images: Vec<String>,
    /// Their payloads' bytes in the ELF files.
    pub stored_bytes: u64,
    /// Those payloads deflated as the wheel's members are; `None` unless
    /// the audit was asked (`--sizes`).
    pub deflated_bytes: Option<u64>,
}

/// The report for a wheel of `wheel_bytes` whose ELF members' fat binaries
/// hold `images`.
pub fn size_report<'a>(
    wheel_bytes: u64,
    limit_bytes: Option<u64>,
    images: impl IntoIterator<Item = &'a ImageBytes>,
) -> SizeReport {
    let mut by_arch: BTreeMap<GpuArch, (BTreeSet<String>, u64, Option<u64>)> = BTreeMap::new();
    for image in images {
        let row = by_arch
            .entry(image.image.arch)
            .or_insert((BTreeSet::new(), 0, Some(0)));
        row.0.insert(image.image.name());
        row.1 += image.stored;
        row.2 = row.2.zip(image.deflated).map(|(a, b)| a + b);
    }
    SizeReport {
        wheel_bytes,
        limit_bytes,
        archs: by_arch
            .into_iter()
            .map(|(arch, (images, stored, deflated))| {
                // SASS before PTX: `sm_` sorts after `compute_`.
                let mut images: Vec<String> = images.into_iter().collect();
                images.sort_by_key(|name| !name.starts_with("sm_"));
                ArchBytes {
                    arch: format!("sm_{arch}"),
                    images,
                    stored_bytes: stored,
                    deflated_bytes: deflated,
                }
            })
            .collect(),
    }
}

impl SizeReport {
    /// The text report's lines: the size against the limit, then one line
    /// per arch.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = match self.limit_bytes {
            Some(limit) => writeln!(
                out,
                "  size: {} ({} bytes), {:.1}% of the {} limit",
                human(self.wheel_bytes),
                self.wheel_bytes,
                percent(self.wheel_bytes, limit),
                human(limit)
            ),
            None => writeln!(
                out,
                "  size: {} ({} bytes)",
                human(self.wheel_bytes),
                self.wheel_bytes
            ),
        };
        if self.archs.is_empty() {
            return out;
        }
        let deflated = self.archs.iter().all(|a| a.deflated_bytes.is_some());
        let _ = if deflated {
            writeln!(
                out,
                "    CUDA code per arch: bytes in the ELF files, and deflated (about what it adds to the wheel)"
            )
        } else {
            writeln!(
                out,
                "    CUDA code per arch: bytes in the ELF files (--sizes adds what each adds to the wheel, deflated)"
            )
        };
        for arch in &self.archs {
            let _ = match arch.deflated_bytes.filter(|_| deflated) {
                Some(deflated) => writeln!(
                    out,
                    "    {:<10} {:>10} {:>10}  {:>5.1}% of the wheel  ({})",
                    arch.arch,
                    human(arch.stored_bytes),
                    human(deflated),
                    percent(deflated, self.wheel_bytes),
                    arch.images.join(", ")
                ),
                None => writeln!(
                    out,
                    "    {:<10} {:>10}  ({})",
                    arch.arch,
                    human(arch.stored_bytes),
                    arch.images.join(", ")
                ),
            };
        }
        out
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::fatbin::{FatbinImage, ImageKind};
    use crate::spec::target::ArchSuffix;

    fn image(kind: ImageKind, number: u32, suffix: ArchSuffix, stored: u64) -> ImageBytes {
        ImageBytes {
            image: FatbinImage {
                kind,
                arch: GpuArch { number, suffix },
                compressed: false,
            },
            stored,
            deflated: Some(stored / 4),
        }
    }

    #[test]
    fn images_of_one_arch_are_summed_over_members_in_arch_order() {
        let images = [
            image(ImageKind::Sass, 90, ArchSuffix::None, 4 << 20),
            image(ImageKind::Ptx, 90, ArchSuffix::None, 2 << 20),
            image(ImageKind::Sass, 80, ArchSuffix::None, 4 << 20),
            image(ImageKind::Sass, 90, ArchSuffix::ArchSpecific, 1 << 20),
            // The same arch in a second member.
            image(ImageKind::Sass, 80, ArchSuffix::None, 4 << 20),
        ];
        let report = size_report(8 << 20, Some(100 << 20), &images);
        let rows: Vec<(&str, Vec<&str>, u64, Option<u64>)> = report
            .archs
            .iter()
            .map(|a| {
                (
                    a.arch.as_str(),
                    a.images.iter().map(String::as_str).collect(),
                    a.stored_bytes,
                    a.deflated_bytes,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("sm_80", vec!["sm_80"], 8 << 20, Some(2 << 20)),
                (
                    "sm_90",
                    vec!["sm_90", "compute_90"],
                    6 << 20,
                    Some(1536 << 10)
                ),
                ("sm_90a", vec!["sm_90a"], 1 << 20, Some(256 << 10)),
            ]
        );
        let text = report.render();
        assert!(
            text.starts_with("  size: 8 MiB (8388608 bytes), 8.0% of the 100 MiB limit\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "    sm_90           6 MiB    1.5 MiB   18.8% of the wheel  (sm_90, compute_90)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn without_sizes_only_the_stored_bytes_are_shown() {
        let mut images = [image(ImageKind::Sass, 80, ArchSuffix::None, 4 << 20)];
        images[0].deflated = None;
        let report = size_report(8 << 20, None, &images);
        assert_eq!(report.archs[0].deflated_bytes, None);
        assert_eq!(
            report.render(),
            "  size: 8 MiB (8388608 bytes)\n    CUDA code per arch: bytes in the ELF files \
             (--sizes adds what each adds to the wheel, deflated)\n    sm_80           4 MiB  (sm_80)\n"
        );
    }

    #[test]
    fn a_wheel_without_cuda_code_reports_its_size_only() {
        let report = size_report(1500, None, &[]);
        assert_eq!(report.render(), "  size: 1.5 KiB (1500 bytes)\n");
    }
}

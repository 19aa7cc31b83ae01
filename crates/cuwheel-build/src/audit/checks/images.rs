//! `fatbin-image`: every image nvcc compressed in a fat binary
//! (`--compress-mode`) must decompress, to exactly the size its entry header
//! claims and to at most [`MAX_IMAGE_BYTES`] ([`crate::audit::images`]). An
//! image that does not is named: the CUDA driver may refuse or truncate it,
//! and the `leak` check could not read it whole (what it could read was
//! scanned all the same). The images of fat binaries embedded outside
//! `.nv_fatbin` are held to the same; a member with too many places that
//! look like one to check them all is named too.

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::audit::images::{ImageProblem, MAX_IMAGE_BYTES};
use crate::audit::scan::MAX_CONTAINER_HITS;

pub struct FatbinImages;

const FIX: &str = "rebuild the object with nvcc: its fat binary is corrupt, or was altered after \
                   nvcc wrote it";

impl AuditCheck for FatbinImages {
    fn id(&self) -> CheckId {
        CheckId {
            id: "fatbin-image",
            label: "fat binary image",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        for member in ctx.members {
            for image in &member.images {
                let Some(problem) = &image.inflated.problem else {
                    continue;
                };
                let what = format!(
                    "its {} image ({}-compressed, {} bytes stored)",
                    image.name,
                    image.compression.name(),
                    image.stored
                );
                let problem = match problem {
                    ImageProblem::Corrupt { after, error } => format!(
                        "{what} does not decompress ({error}, after {after} bytes), so the bytes \
                         past those were not checked for build paths"
                    ),
                    ImageProblem::TooLarge => format!(
                        "{what} decompresses to more than {} bytes (its header claims {}); the \
                         bytes past those were not checked for build paths",
                        MAX_IMAGE_BYTES, image.claimed
                    ),
                    ImageProblem::SizeMismatch { claimed, real } => format!(
                        "{what} claims {claimed} bytes decompressed in its header but decompresses \
                         to {real}"
                    ),
                };
                out.finding(Some(&member.name), problem, FIX.to_string());
            }
            if member.containers_unchecked {
                out.finding(
                    Some(&member.name),
                    format!(
                        "holds the fat-binary magic at more than {MAX_CONTAINER_HITS} places; \
                         the fat binaries past those were not checked for build paths"
                    ),
                    FIX.to_string(),
                );
            }
        }
    }
}

//! `leak`: no member may hold a Nix store path or a path in the sandbox's
//! build directory ([`crate::audit::leaks`] says exactly what counts), nor
//! may the images of a fat binary that nvcc compressed, once decompressed.
//! RECORD, which only lists member paths, is left out.

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::audit::leaks::{BUILD_PATTERN, LeakScan, STORE_PATTERN};

pub struct BuildPaths;

impl AuditCheck for BuildPaths {
    fn id(&self) -> CheckId {
        CheckId {
            id: "leak",
            label: "build path",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let record = &ctx.wheel.record().path;
        for member in ctx.members.iter().filter(|m| &m.name != record) {
            let Some(scan) = &member.leaks else {
                continue;
            };
            let examples: Vec<String> = scan
                .examples
                .iter()
                .map(|e| format!("`{}` at byte {}", e.text, e.offset))
                .collect();
            out.finding(
                Some(&member.name),
                format!(
                    "holds {} (a {STORE_PATTERN}<hash>- store path, or a path starting \
                     {BUILD_PATTERN}, the Nix sandbox's build directory), e.g. {}",
                    paths(scan),
                    examples.join(", ")
                ),
                "rebuild with build and store paths mapped away (gcc and nvcc \
                 -ffile-prefix-map=DIR=., as cuwheel's builds do) and strip debug \
                 information from shipped objects"
                    .to_string(),
            );
        }
        // Images nvcc compressed hide their bytes from the scan above.
        for member in ctx.members {
            for image in &member.images {
                let Some(scan) = &image.leaks else {
                    continue;
                };
                let examples: Vec<String> = scan
                    .examples
                    .iter()
                    .map(|e| format!("`{}`", e.text))
                    .collect();
                out.finding(
                    Some(&member.name),
                    format!(
                        "its compressed {} image holds {} once decompressed, e.g. {}",
                        image.name,
                        paths(scan),
                        examples.join(", ")
                    ),
                    "rebuild with the device line info's paths mapped away (nvcc sees every \
                     input at a fixed path in cuwheel's builds), or without -lineinfo and -G"
                        .to_string(),
                );
            }
        }
    }
}

/// `1 build-machine path`, `3 build-machine paths`.
fn paths(scan: &LeakScan) -> String {
    let plural = if scan.hits == 1 { "" } else { "s" };
    format!("{} build-machine path{plural}", scan.hits)
}

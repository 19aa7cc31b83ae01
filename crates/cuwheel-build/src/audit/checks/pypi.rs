//! `pypi`: what PyPI refuses at upload, judged before anything is sent. Run
//! only when the caller asks ([`crate::audit::AuditOptions::pypi`]: the PyPI
//! variant's audit node, `cuwheel audit --pypi`, `cuwheel publish --pypi`).
//!
//! In: the wheel's file name, METADATA and file size, and the size limit.
//! Out: a finding for a local version (`0.1.0+pt211cu130`), a file over the
//! limit (PyPI's default is 100 MiB), a platform tag PyPI does not take
//! (`linux_x86_64`), a long description PyPI would render as
//! reStructuredText though it has no content type, or a content type PyPI
//! does not know, or a direct reference among the `Requires-Dist`
//! (`pkg @ git+https://…`), which PyPI refuses. reStructuredText itself is not rendered here: a note says
//! to run `twine check`, which does.

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::spec::config::pypi::show_size;
use crate::wheel::metadata_fields::direct_references;

/// What the PyPI check is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PypiRules {
    /// The largest wheel file PyPI takes for this project, in bytes.
    pub max_file_size: u64,
}

/// The content types PyPI renders a long description as.
const CONTENT_TYPES: [&str; 3] = ["text/plain", "text/x-rst", "text/markdown"];

pub struct Pypi;

impl AuditCheck for Pypi {
    fn id(&self) -> CheckId {
        CheckId {
            id: "pypi",
            label: "PyPI",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let Some(rules) = ctx.options.pypi else {
            return;
        };
        let filename = ctx.wheel.filename();
        if !filename.version.local().is_empty() {
            out.finding(
                None,
                format!(
                    "version {} has a local label, and PyPI refuses local versions",
                    filename.version
                ),
                "upload the PyPI variant's wheel, which has none (name the variant in \
                 [tool.cuwheel.pypi]; `nix run .#publish -- --pypi DIR` writes its wheels), and \
                 publish labelled wheels to the per-CUDA index (`--to DIR`)"
                    .to_string(),
            );
        }
        match std::fs::metadata(ctx.wheel.path()) {
            Ok(meta) if meta.len() <= rules.max_file_size => out.note(format!(
                "PyPI's rules checked: the file is {} of the {} PyPI takes",
                show_size(meta.len()),
                show_size(rules.max_file_size)
            )),
            Ok(meta) => out.finding(
                None,
                format!(
                    "the wheel is {} ({} bytes), over the {} PyPI takes for a file",
                    show_size(meta.len()),
                    meta.len(),
                    show_size(rules.max_file_size)
                ),
                "ask PyPI for a larger file limit for the project, then set max-file-size in \
                 [tool.cuwheel.pypi] to it; or ship less code per wheel (fewer cuda-archs, PTX \
                 for the newest arch instead of SASS for each)"
                    .to_string(),
            ),
            Err(error) => out.finding(
                None,
                format!("cannot read the wheel's size: {error}"),
                "check that the wheel file is still there and readable".to_string(),
            ),
        }
        for tag in &ctx.tags {
            if tag.platform.starts_with("linux_") {
                out.finding(
                    None,
                    format!(
                        "PyPI refuses the platform tag {}: it takes manylinux and musllinux wheels \
                         only",
                        tag.platform
                    ),
                    "build the wheel with cuwheel, which tags it manylinux from its symbols"
                        .to_string(),
                );
                break;
            }
        }
        for requirement in direct_references(ctx.wheel.metadata()) {
            out.finding(
                None,
                format!(
                    "METADATA Requires-Dist `{requirement}` is a direct reference, and PyPI \
                     refuses direct references"
                ),
                "upload the PyPI variant's wheel, which leaves direct references out; or \
                 publish that dependency to an index and require it by version \
                 (`pkg>=1.0`) in [project]"
                    .to_string(),
            );
        }
        self.description(ctx, out);
    }
}

impl Pypi {
    fn description(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let metadata = ctx.wheel.metadata();
        let fix_type = "name the readme with its kind in [project] (`readme = \"README.md\"`, or \
                        readme = { file = \"README.txt\", content-type = \"text/plain\" })";
        let Some(description) = metadata.description.as_deref() else {
            out.note(
                "no long description: PyPI shows the project page without one (add `readme` to \
                 [project] to give it one)"
                    .to_string(),
            );
            return;
        };
        let content_type = match metadata.description_content_type.as_deref() {
            Some(content_type) => content_type,
            None if description.trim().is_empty() => return,
            None => {
                out.finding(
                    None,
                    "the long description has no Description-Content-Type, so PyPI renders it \
                     as reStructuredText"
                        .to_string(),
                    fix_type.to_string(),
                );
                return;
            }
        };
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if !CONTENT_TYPES.contains(&mime.as_str()) {
            out.finding(
                None,
                format!(
                    "Description-Content-Type `{content_type}` is not one PyPI renders ({})",
                    CONTENT_TYPES.join(", ")
                ),
                fix_type.to_string(),
            );
        } else if mime == "text/x-rst" {
            out.note(
                "the long description is reStructuredText, which cuwheel does not render: run \
                 `twine check` on the wheel before uploading (PyPI refuses one that does not \
                 render)"
                    .to_string(),
            );
        }
    }
}

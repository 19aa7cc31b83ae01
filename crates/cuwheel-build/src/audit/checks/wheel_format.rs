//! `wheel-format`: RECORD, WHEEL, METADATA and the file name must agree
//! ([`crate::wheel::WheelFile::verify`], from what the scan saw), and
//! METADATA's fields must parse as installers parse them
//! ([`crate::wheel::metadata_fields`]: each `Requires-Dist`,
//! `Requires-Python`, `Provides-Extra`; Name and Version are checked when
//! the wheel is read).

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::wheel::ProblemKind;
use crate::wheel::metadata_fields::installer_problems;

pub struct WheelFormat;

impl AuditCheck for WheelFormat {
    fn id(&self) -> CheckId {
        CheckId {
            id: "wheel-format",
            label: "wheel format",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        for problem in &ctx.wheel_problems {
            let member = match &problem.kind {
                ProblemKind::NotInRecord { member }
                | ProblemKind::UnhashedMember { member }
                | ProblemKind::BadHash { member, .. }
                | ProblemKind::HashMismatch { member, .. }
                | ProblemKind::SizeMismatch { member, .. } => Some(member.as_str()),
                ProblemKind::RecordedButMissing { path }
                | ProblemKind::DuplicateRecordRow { path } => Some(path.as_str()),
                ProblemKind::RecordMissing { record }
                | ProblemKind::RecordUnreadable { record, .. }
                | ProblemKind::RecordSelfRow { record, .. } => Some(record.as_str()),
                _ => None,
            };
            // The problem's message starts with the wheel's path, which the report already names.
            let text = problem.to_string();
            let prefix = format!("{}: ", problem.wheel.display());
            out.finding(
                member,
                text.strip_prefix(&prefix).unwrap_or(&text).to_string(),
                "rebuild the wheel with a writer that keeps RECORD, WHEEL, METADATA and the file \
                 name consistent (cuwheel's does); never change members after RECORD is written"
                    .to_string(),
            );
        }
        let metadata = format!("{}/METADATA", ctx.wheel.dist_info_dir());
        for problem in installer_problems(ctx.wheel.metadata()) {
            out.finding(
                Some(&metadata),
                problem.to_string(),
                problem.fix.to_string(),
            );
        }
    }
}

//! `tags`: every python, abi and platform tag of the wheel's file name must
//! be one an installer can select ([`crate::wheel::known_tags`]); a wheel
//! tagged `py9-bogus-nonsense_tag` installs nowhere.

use std::collections::BTreeSet;

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::wheel::known_tags;

pub struct Tags;

impl AuditCheck for Tags {
    fn id(&self) -> CheckId {
        CheckId {
            id: "tags",
            label: "tags",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let mut seen = BTreeSet::new();
        for tag in &ctx.tags {
            for (part, check) in [
                (
                    &tag.python,
                    known_tags::check_python as fn(&str) -> Result<(), String>,
                ),
                (&tag.abi, known_tags::check_abi),
                (&tag.platform, known_tags::check_platform),
            ] {
                if !seen.insert(part.as_str()) {
                    continue;
                }
                if let Err(problem) = check(part) {
                    out.finding(
                        None,
                        format!("{problem}; no installer would ever pick this wheel"),
                        "name the wheel (and the Tag lines of its .dist-info/WHEEL) with the tags \
                         of the Python, ABI and platform it was built for, e.g. \
                         cp311-cp311-manylinux_2_28_x86_64 or py3-none-any"
                            .to_string(),
                    );
                }
            }
        }
    }
}

//! `libraries`: every DT_NEEDED must resolve inside the wheel, be in a
//! manylinux whitelist, be provided at run time by torch or CUDA
//! ([`crate::audit::loader`], `data/runtime-provided.json`), or be installed
//! by a sibling wheel the wheel's own `Requires-Dist` names
//! ([`crate::audit::siblings`]); notes name the libraries the verdict assumes.

use std::collections::{BTreeMap, BTreeSet};

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::context::AuditContext;
use crate::audit::loader::{self, Resolution};
use crate::wheel::manylinux;

pub struct Libraries;

impl AuditCheck for Libraries {
    fn id(&self) -> CheckId {
        CheckId {
            id: "libraries",
            label: "libraries",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let mut relied_on = BTreeSet::new();
        let mut from_siblings: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for ((member, soname), resolution) in &ctx.resolved {
            match resolution {
                Resolution::InWheel(_) => {}
                Resolution::SiblingWheel(requirement) => {
                    from_siblings.entry(requirement).or_default().insert(soname);
                }
                Resolution::RuntimeProvided => {
                    relied_on.insert(soname.clone());
                }
                // a whitelisted library comes from the system if the wheel's copy is not found
                Resolution::NotOnSearchPath(_) if manylinux::is_allowed_system_library(soname) => {}
                Resolution::NotOnSearchPath(at) => out.finding(
                    Some(member),
                    format!(
                        "needs {soname}; the wheel holds it at {at}, but its RPATH/RUNPATH does \
                         not reach that directory, so loading fails unless something loaded it \
                         before"
                    ),
                    format!(
                        "add `$ORIGIN/{}` to its RUNPATH (patchelf --add-rpath)",
                        relative_dir(member, at)
                    ),
                ),
                Resolution::External if manylinux::is_allowed_system_library(soname) => {}
                Resolution::External => out.finding(
                    Some(member),
                    format!(
                        "needs {soname}, which is not in any manylinux whitelist, not in the \
                         wheel, and not declared as provided at run time"
                    ),
                    if soname.starts_with("libpython") {
                        "do not link an extension against libpython: drop -lpython3.X; the \
                         interpreter provides those symbols"
                            .to_string()
                    } else {
                        format!(
                            "bundle it (auditwheel repair), link it statically, or, if another \
                             installed package provides it at run time, declare it with \
                             `--runtime-provided {soname}`"
                        )
                    },
                ),
            }
        }
        for (requirement, sonames) in from_siblings {
            out.note(format!(
                "assumes `{requirement}`, which its Requires-Dist names, installs {}",
                sonames.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        if !relied_on.is_empty() {
            let provided = loader::runtime_provided();
            let described: Vec<String> = relied_on
                .iter()
                .map(|s| match provided.provider_of(s) {
                    Some(provider) => format!("{s} ({provider})"),
                    None => format!("{s} (declared with --runtime-provided)"),
                })
                .collect();
            out.note(format!(
                "assumes these libraries exist at run time: {}",
                described.join(", ")
            ));
        }
    }
}

/// The directory of `to` relative to the directory of `from`, both member paths.
fn relative_dir(from: &str, to: &str) -> String {
    let mut from_dir: Vec<&str> = from.split('/').collect();
    from_dir.pop();
    let mut to_dir: Vec<&str> = to.split('/').collect();
    to_dir.pop();
    let common = from_dir
        .iter()
        .zip(&to_dir)
        .take_while(|(a, b)| a == b)
        .count();
    let ups = std::iter::repeat_n("..", from_dir.len() - common);
    let parts: Vec<&str> = ups.chain(to_dir[common..].iter().copied()).collect();
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_dirs_between_members() {
        assert_eq!(
            relative_dir("pkg/_ext.so", "pkg.libs/libfoo.so"),
            "../pkg.libs"
        );
        assert_eq!(relative_dir("pkg/a/_ext.so", "pkg/libfoo.so"), "..");
        assert_eq!(relative_dir("pkg/_ext.so", "pkg/sub/libfoo.so"), "sub");
        assert_eq!(relative_dir("_ext.so", "libs/libfoo.so"), "libs");
        assert_eq!(relative_dir("pkg/_ext.so", "pkg/libfoo.so"), ".");
    }
}

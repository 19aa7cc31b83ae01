//! `sbom`: a cuwheel wheel (one whose `.dist-info/cuwheel-provenance.json`
//! names the toolchains it was built with) carries its PEP 770 SBOM,
//! `.dist-info/sboms/cuwheel.cdx.json`, and the two agree: the SBOM
//! describes this wheel (name and version), and the sha256 of its build
//! components (scope `excluded`) are exactly those of the provenance's
//! toolchain artifacts. A `cuwheel.cdx.json` that is not JSON fails any
//! wheel.
//!
//! In: the wheel's members. Out: findings; the schema itself is validated
//! by the CycloneDX project's own library in the tests.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{AuditCheck, CheckId, CheckOutput};
use crate::audit::archs::PROVENANCE_FILE;
use crate::audit::context::AuditContext;

/// The member's path inside `.dist-info`, as the build writes it.
pub const SBOM_FILE: &str = "sboms/cuwheel.cdx.json";
/// The largest SBOM or provenance read.
const MAX_SIZE: u64 = 16 << 20;

const REBUILD: &str = "rebuild the wheel with cuwheel: the SBOM and the provenance are written \
                       together from the lock";

pub struct Sbom;

impl AuditCheck for Sbom {
    fn id(&self) -> CheckId {
        CheckId {
            id: "sbom",
            label: "SBOM",
        }
    }

    fn run(&self, ctx: &AuditContext<'_>, out: &mut CheckOutput) {
        let dist_info = ctx.wheel.dist_info_dir();
        let sbom_path = format!("{dist_info}/{SBOM_FILE}");
        let provenance_path = format!("{dist_info}/{PROVENANCE_FILE}");
        // The cuda-archs check reports an unreadable provenance.
        let provenance = read_json(ctx, &provenance_path).unwrap_or_default();
        let sbom = match read_json(ctx, &sbom_path) {
            Ok(value) => value,
            Err(problem) => {
                out.finding(Some(&sbom_path), problem, REBUILD.to_string());
                return;
            }
        };
        // A build's provenance names its toolchains; one that only states
        // `cuda_archs` (written by hand for the cuda-archs check) asks for
        // no SBOM.
        let built = provenance
            .as_ref()
            .and_then(|p| p.get("toolchains"))
            .and_then(Value::as_object)
            .is_some_and(|t| !t.is_empty());
        let (Some(provenance), Some(sbom)) = (provenance.filter(|_| built), sbom) else {
            if built {
                out.finding(
                    None,
                    format!("the wheel has cuwheel's provenance but no SBOM at {sbom_path}"),
                    REBUILD.to_string(),
                );
            }
            return;
        };
        if sbom.get("bomFormat").and_then(Value::as_str) != Some("CycloneDX") {
            out.finding(
                Some(&sbom_path),
                "the SBOM's bomFormat is not \"CycloneDX\"".to_string(),
                REBUILD.to_string(),
            );
            return;
        }
        let component = sbom.pointer("/metadata/component");
        let said = |key: &str| {
            component
                .and_then(|c| c.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let name = ctx.wheel.filename().name.to_string();
        let version = ctx.wheel.filename().version.to_string();
        let normalize = crate::wheel::pep503::normalize_name;
        if normalize(&said("name")) != normalize(&name) || said("version") != version {
            out.finding(
                Some(&sbom_path),
                format!(
                    "the SBOM describes {} {}, not this wheel's {name} {version}",
                    said("name"),
                    said("version")
                ),
                REBUILD.to_string(),
            );
        }
        let built_from: BTreeSet<String> = sbom
            .get("components")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| c.get("scope").and_then(Value::as_str) == Some("excluded"))
            .flat_map(|c| {
                c.get("hashes")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|h| h.get("alg").and_then(Value::as_str) == Some("SHA-256"))
            .filter_map(|h| h.get("content").and_then(Value::as_str).map(str::to_string))
            .collect();
        let pinned: BTreeSet<String> = provenance
            .get("toolchains")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|t| t.values())
            .filter_map(|t| t.get("artifacts").and_then(Value::as_object))
            .flat_map(|a| a.values())
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        let missing: Vec<&String> = pinned.difference(&built_from).collect();
        let extra: Vec<&String> = built_from.difference(&pinned).collect();
        if !missing.is_empty() || !extra.is_empty() {
            let mut parts = Vec::new();
            if !missing.is_empty() {
                parts.push(format!(
                    "{} pinned artifact(s) of the provenance are not in it (sha256 {})",
                    missing.len(),
                    short(&missing)
                ));
            }
            if !extra.is_empty() {
                parts.push(format!(
                    "it lists {} build component(s) the provenance does not pin (sha256 {})",
                    extra.len(),
                    short(&extra)
                ));
            }
            out.finding(
                Some(&sbom_path),
                format!(
                    "the SBOM disagrees with {PROVENANCE_FILE}: {}",
                    parts.join("; ")
                ),
                REBUILD.to_string(),
            );
        }
    }
}

/// A member parsed as JSON: `None` when absent, an error when unreadable.
fn read_json(ctx: &AuditContext<'_>, member: &str) -> Result<Option<Value>, String> {
    match ctx.wheel.read_member(member, MAX_SIZE) {
        Ok(None) => Ok(None),
        Ok(Some(bytes)) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{member} is not JSON: {e}")),
        Err(e) => Err(format!("cannot read {member}: {e}")),
    }
}

/// The first few digests, shortened.
fn short(digests: &[&String]) -> String {
    let mut shown: Vec<String> = digests
        .iter()
        .take(3)
        .map(|d| d.chars().take(12).collect())
        .collect();
    if digests.len() > 3 {
        shown.push(format!("and {} more", digests.len() - 3));
    }
    shown.join(", ")
}

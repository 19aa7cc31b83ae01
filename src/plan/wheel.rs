//! The last two nodes of a cell: the wheel assembly and its audit, both run
//! by the Nix-built driver.
//!
//! In: the cell, its link node, the package files and the recipe (name,
//! version, tags, requirements, provenance). Out: two [`Node`]s —
//! `wheel-<cell>` writes `$out/<wheel file>` with `cuwheel build-wheel`,
//! which computes the platform tag from the linked module (so the file name
//! here is a prediction); `audit-<cell>` copies that one wheel beside
//! `audit.txt` and `audit.json` and fails when `cuwheel audit` does, so a
//! wheel that fails is never a build result.

use std::collections::BTreeMap;

use crate::build::WheelRecipe;
use crate::plan::kernel::{slash_path, stage_files};
use crate::plan::shell::quote;
use crate::plan::{Input, Node};
use crate::spec::PackageFile;

/// The wheel assembly node's name starts with this.
pub const WHEEL_PREFIX: &str = "wheel-";
/// The audit node's name starts with this: its output is the cell's result.
pub const AUDIT_PREFIX: &str = "audit-";

/// Where the driver's store path is, in both nodes.
const DRIVER_VAR: &str = "cuwheel";

/// One cell's wheel: what goes in it and how it is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelAssembly {
    pub cell: String,
    /// The link node and the module file it writes.
    pub link: String,
    pub module_file: String,
    /// The module's directory inside the wheel (`demo_ext`), empty at the top.
    pub module_dir: String,
    pub package_files: Vec<PackageFile>,
    /// The wheel's file name as predicted (the build computes the platform
    /// tag: [`crate::wheel::PlatformRule`]).
    pub wheel_file: String,
    pub recipe: WheelRecipe,
}

impl WheelAssembly {
    pub fn wheel_node(&self) -> Node {
        let mut inputs = BTreeMap::from([
            (DRIVER_VAR.to_string(), Input::Driver { driver: true }),
            (
                "module".to_string(),
                Input::Node {
                    node: self.link.clone(),
                },
            ),
        ]);
        let module_member = if self.module_dir.is_empty() {
            self.module_file.clone()
        } else {
            format!("{}/{}", self.module_dir, self.module_file)
        };
        let mut files = vec![(
            format!("\"$module\"/{}", quote(&self.module_file)),
            module_member,
        )];
        for (i, file) in self.package_files.iter().enumerate() {
            let var = format!("package{i}");
            files.push((format!("\"${var}\""), file.member.clone()));
            inputs.insert(
                var,
                Input::Source {
                    source: slash_path(&file.source),
                },
            );
        }
        let mut s = format!(
            "# wheel-{}: {} (predicted; the driver tags it from the module's symbols), \
             assembled by the driver from the module and the package files.\n",
            self.cell, self.wheel_file
        );
        s += "# Written by `cuwheel plan`.\n";
        // The members at their paths under tree/.
        let files: Vec<(String, String)> = files
            .into_iter()
            .map(|(from, member)| (from, format!("tree/{member}")))
            .collect();
        s += &stage_files(&files);
        s += "cat > recipe.json <<'CUWHEEL_RECIPE'\n";
        s += &self.recipe.to_json();
        s += "CUWHEEL_RECIPE\n";
        s += &format!(
            "\"${DRIVER_VAR}\"/bin/cuwheel build-wheel --recipe recipe.json --tree tree --out \"$out\"\n"
        );
        Node {
            name: format!("{WHEEL_PREFIX}{}", self.cell),
            script: s,
            inputs,
        }
    }

    pub fn audit_node(&self) -> Node {
        let inputs = BTreeMap::from([
            (DRIVER_VAR.to_string(), Input::Driver { driver: true }),
            (
                "wheel".to_string(),
                Input::Node {
                    node: format!("{WHEEL_PREFIX}{}", self.cell),
                },
            ),
        ]);
        let failed = quote(&format!(
            "cuwheel: the audit of cell {} failed (report above): no result is built for it. Fix \
             what the report names, or run `cuwheel audit` on the wheel for details.",
            self.cell
        ));
        let not_one = quote(&format!(
            "cuwheel: wheel-{} did not write exactly one .whl",
            self.cell
        ));
        let s = format!(
            "# audit-{cell}: the wheel of cell {cell} beside its audit report; fails when the \
             audit does.\n\
             # Written by `cuwheel plan`.\n\
             set -- \"$wheel\"/*.whl\n\
             if [ \"$#\" != 1 ] || [ ! -f \"$1\" ]; then echo {not_one} >&2; exit 1; fi\n\
             file=\"${{1##*/}}\"\n\
             mkdir -p \"$out\"\n\
             cp \"$1\" \"$out/$file\"\n\
             status=0\n\
             \"${DRIVER_VAR}\"/bin/cuwheel audit \"$out/$file\" > \"$out\"/audit.txt || status=$?\n\
             \"${DRIVER_VAR}\"/bin/cuwheel audit --json \"$out/$file\" > \"$out\"/audit.json || true\n\
             cat \"$out\"/audit.txt\n\
             if [ \"$status\" != 0 ]; then echo {failed} >&2; exit 1; fi\n",
            cell = self.cell,
        );
        Node {
            name: format!("{AUDIT_PREFIX}{}", self.cell),
            script: s,
            inputs,
        }
    }
}

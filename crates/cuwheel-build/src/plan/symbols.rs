//! The load check's inputs to a cell's audit: symbol-table nodes, and the
//! flags that hand them to `cuwheel audit`.
//!
//! In: the lock and a cell's plan (its torch, CUDA and gcc toolchains), the
//! torch toolchains whose releases the wheel claims, and whether it claims
//! torch's stable ABI. Out: [`AuditTables`] — the `symbols-<toolchain>`
//! nodes (the Nix-built driver runs `cuwheel symbols` on a torch
//! toolchain's `lib/`, a CUDA toolkit's `lib/`, a gcc toolchain's
//! `sysroot`; each node is shared by every cell whose audit reads it), the
//! audit node's inputs, and its `--torch`/`--with`/`--claims`/`--stable-abi`
//! arguments.
//!
//! The releases a cell's audit sees ([`Scope::Claimed`]): the ones the
//! wheel claims, each of which must load it; a wheel's build needs no other
//! torch. Its compatibility node ([`Scope::Compared`], `compat.<cell>`,
//! built only when asked) also sees, for the backward-compatibility table,
//! every other torch release of the lock built for the same CUDA major as
//! the cell's torch (a wheel that needs `libcudart.so.13` installs only
//! beside torch builds for CUDA 13); oldest first. Beside every release:
//! the cell's CUDA toolkit's libraries (`CUDA 13.0 runtime`) and its gcc's
//! sysroot (`baseline system (bullseye)`: the glibc and libstdc++ the
//! wheel's baseline promises).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::lock::format::{Lock, Toolchain};
use crate::plan::cell::CellPlan;
use crate::plan::shell::{quote, var_then};
use crate::plan::{Input, Node, PlanError};
use crate::spec::TorchVersion;
use crate::wheel::{Arch, WheelFilename};

/// Every symbol-table node's name starts with this.
pub const NAME_PREFIX: &str = "symbols-";

/// Where the driver's store path is in a symbols node.
const DRIVER_VAR: &str = "cuwheel";
/// Where the toolchain's store path is in a symbols node.
const TOOLCHAIN_VAR: &str = "toolchain";

/// One table the audit reads: its label and its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// `2.11.0` for a torch release; `CUDA 13.0 runtime`, `baseline system
    /// (bullseye)` beside them.
    pub label: String,
    pub node: String,
}

/// Which torch releases a load check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Those the wheel claims: the audit's, which the wheel's build needs.
    Claimed,
    /// Those and every other release of the cell's CUDA major: the
    /// compatibility node's.
    Compared,
}

/// What a cell's audit (or compatibility node) gets for its load check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditTables {
    /// Every torch release compared, oldest first.
    pub torch: Vec<Table>,
    /// The labels of the releases the wheel claims, oldest first.
    pub claims: Vec<String>,
    /// The tables beside every release: CUDA runtime, baseline system.
    pub with: Vec<Table>,
    pub stable_abi: bool,
    /// The nodes that write the tables.
    pub nodes: Vec<Node>,
}

impl AuditTables {
    /// The tables of `cp`'s load check over the releases of `scope`.
    /// `claims` are torch toolchains of the lock.
    pub fn new(
        lock: &Lock,
        cp: &CellPlan<'_>,
        claims: &BTreeSet<String>,
        stable_abi: bool,
        scope: Scope,
        lock_path: &Path,
    ) -> Result<AuditTables, PlanError> {
        let cell = cp.cell.name().to_string();
        let bad = |toolchain: &str, expected| PlanError::BadToolchain {
            cell: cell.clone(),
            toolchain: toolchain.to_string(),
            expected,
            lock: lock_path.to_path_buf(),
        };
        let releases = compared_releases(lock, &cp.compilers.torch, claims)
            .map_err(|toolchain| bad(&toolchain, "torch"))?
            .into_iter()
            .filter(|release| release.claimed || scope == Scope::Compared);
        let mut tables = AuditTables {
            torch: Vec::new(),
            claims: Vec::new(),
            with: Vec::new(),
            stable_abi,
            nodes: Vec::new(),
        };
        for release in releases {
            let (name, version) = (release.toolchain.as_str(), release.version.as_str());
            let node = symbols_node(
                name,
                Input::Toolchain {
                    toolchain: name.to_string(),
                    output: Some("libs".to_string()),
                },
                "lib",
                &format!("torch {version}'s libraries"),
                None,
            );
            tables.torch.push(Table {
                label: version.to_string(),
                node: node.name.clone(),
            });
            if release.claimed {
                tables.claims.push(version.to_string());
            }
            tables.nodes.push(node);
        }
        if let Some(cuda) = &cp.compilers.cuda {
            // A cross toolkit's lib/ also holds NVVM, which runs here.
            let only = (cp.cell.arch != Arch::X86_64).then_some(cp.cell.arch);
            let node = symbols_node(
                &cuda.toolchain,
                Input::toolchain(&cuda.toolchain),
                "lib",
                &format!("the CUDA {} toolkit's libraries", cuda.version),
                only,
            );
            tables.with.push(Table {
                label: format!("CUDA {} runtime", cuda.version),
                node: node.name.clone(),
            });
            tables.nodes.push(node);
        }
        let (suite, target) = match lock.toolchains.get(&cp.compilers.gcc) {
            Some(Toolchain::Gcc { suite, target, .. }) => (suite, *target),
            _ => return Err(bad(&cp.compilers.gcc, "gcc")),
        };
        // A cross toolchain's target libraries are its `target/` (the
        // root's usr/<triplet>); its root's own are the host's.
        let (dir, system) = match target {
            None | Some(Arch::X86_64) => ("sysroot", suite.to_string()),
            Some(arch) => ("target", format!("{suite}, {arch}")),
        };
        let node = symbols_node(
            &cp.compilers.gcc,
            Input::toolchain(&cp.compilers.gcc),
            dir,
            &format!("the {system} sysroot's libraries (glibc, libstdc++, ...)"),
            None,
        );
        tables.with.push(Table {
            label: format!("baseline system ({system})"),
            node: node.name.clone(),
        });
        tables.nodes.push(node);
        Ok(tables)
    }

    /// The audit node's inputs: `torchSymbols<i>` per release, in order,
    /// and `withSymbols<i>` per table beside them.
    pub fn inputs(&self) -> BTreeMap<String, Input> {
        let torch = self.torch.iter().enumerate().map(|(i, t)| {
            let node = Input::Node {
                node: t.node.clone(),
            };
            (format!("torchSymbols{i}"), node)
        });
        let with = self.with.iter().enumerate().map(|(i, t)| {
            let node = Input::Node {
                node: t.node.clone(),
            };
            (format!("withSymbols{i}"), node)
        });
        torch.chain(with).collect()
    }

    /// The arguments of `cuwheel audit` that pass the tables, as shell words.
    pub fn arguments(&self) -> String {
        let labelled = |flag: &str, label: &str, var: String| {
            format!(
                "{flag} {}{}",
                quote(&format!("{label}=")),
                var_then(&var, "")
            )
        };
        let mut words: Vec<String> = Vec::new();
        for (i, t) in self.torch.iter().enumerate() {
            words.push(labelled("--torch", &t.label, format!("torchSymbols{i}")));
        }
        for (i, t) in self.with.iter().enumerate() {
            words.push(labelled("--with", &t.label, format!("withSymbols{i}")));
        }
        for claimed in &self.claims {
            words.push(format!("--claims {}", quote(claimed)));
        }
        if self.stable_abi {
            words.push("--stable-abi".to_string());
        }
        words.join(" ")
    }
}

/// A torch release a cell's audit compares the wheel with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compared {
    /// The lock's torch toolchain.
    pub toolchain: String,
    /// Its release (`2.11.0`).
    pub version: String,
    /// The wheel claims it (it must load with it).
    pub claimed: bool,
}

/// The torch releases the compatibility node of a cell built against the torch
/// toolchain `own` compares the wheel with, oldest first: the `claims`, and
/// every torch toolchain of the lock built for the same CUDA major as
/// `own`. Also what `cuwheel fetch --cell --compat` fetches for it. Err: a
/// name in `own` or `claims` that is no torch toolchain of the lock.
pub fn compared_releases(
    lock: &Lock,
    own: &str,
    claims: &BTreeSet<String>,
) -> Result<Vec<Compared>, String> {
    // Every torch toolchain: (series, version, name, CUDA major of its build).
    let mut releases: Vec<(Option<TorchVersion>, &str, &str, Option<u32>)> = lock
        .toolchains
        .iter()
        .filter_map(|(name, t)| match t {
            Toolchain::Torch { version, .. } => {
                let facts = lock.facts.torch.iter().find(|(_, r)| r.version == *version);
                Some((
                    facts.map(|(series, _)| *series),
                    version.as_str(),
                    name.as_str(),
                    facts.map(|(_, r)| r.cuda.major),
                ))
            }
            _ => None,
        })
        .collect();
    releases.sort();
    let known = |toolchain: &str| releases.iter().any(|(_, _, name, _)| *name == toolchain);
    if let Some(unknown) = std::iter::once(own)
        .chain(claims.iter().map(String::as_str))
        .find(|t| !known(t))
    {
        return Err(unknown.to_string());
    }
    let cuda_major = releases
        .iter()
        .find(|(_, _, name, _)| *name == own)
        .and_then(|r| r.3);
    // An aarch64 cell is compared with aarch64 releases only, and an
    // x86_64 one with x86_64's.
    let arch = torch_arch(lock, own);
    Ok(releases
        .iter()
        .filter(|(_, _, name, major)| {
            claims.contains(*name)
                || (major.is_some() && *major == cuda_major && torch_arch(lock, name) == arch)
        })
        .map(|(_, version, name, _)| Compared {
            toolchain: name.to_string(),
            version: version.to_string(),
            claimed: claims.contains(*name),
        })
        .collect())
}

/// The architecture of a torch toolchain's wheel, read from its platform
/// tag; `None` when the lock does not say.
fn torch_arch(lock: &Lock, toolchain: &str) -> Option<Arch> {
    let artifacts = lock.toolchains.get(toolchain)?.artifacts();
    artifacts.iter().find_map(|name| {
        let file = &lock.artifacts.get(name)?.file;
        let parsed = WheelFilename::parse(file).ok()?;
        parsed
            .tags
            .expand()
            .into_iter()
            .find_map(|tag| Arch::of_platform_tag(&tag.platform))
    })
}

/// The node writing the table of `toolchain`'s directory `dir` (of its
/// libraries for `only`, when given).
fn symbols_node(toolchain: &str, input: Input, dir: &str, what: &str, only: Option<Arch>) -> Node {
    let name = format!("{NAME_PREFIX}{toolchain}");
    let only = only
        .map(|arch| format!(" --arch {arch}"))
        .unwrap_or_default();
    let script = format!(
        "# {name}: the dynamic symbols of {what}, for the load check of the audits.\n\
         # Written by `cuwheel plan`.\n\
         {} symbols {}{only} -o \"$out\"\n",
        var_then(DRIVER_VAR, "/bin/cuwheel-build"),
        var_then(TOOLCHAIN_VAR, &format!("/{dir}")),
    );
    Node {
        name,
        script,
        inputs: BTreeMap::from([
            (DRIVER_VAR.to_string(), Input::Driver { driver: true }),
            (TOOLCHAIN_VAR.to_string(), input),
        ]),
    }
}

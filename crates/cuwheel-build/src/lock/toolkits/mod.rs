//! Which CUDA toolkits a cell's nvcc may be: one module per toolkit source
//! ([`pypi`], [`debian`]) behind [`ToolkitSource`], and the rule that makes
//! a toolkit available.
//!
//! A toolkit `X.Y` is **available** when
//! 1. a source carries it:
//!    - [`Pypi`]: NVIDIA's `cuda-toolkit` metapackage has an `X.Y.*` release
//!      (pip lists it when locking) and `X` is a major whose `nvidia-*`
//!      wheels hold a complete nvcc (`data/pypi.toml` `cuda-wheels.majors`:
//!      13 on; the 12.x `nvidia-cuda-nvcc-cu12` wheels hold only ptxas and
//!      libnvvm), or
//!    - [`Debian`]: `data/debian.toml` `[cuda-suites]` names a suite whose
//!      non-free `nvidia-cuda-toolkit` is `X.Y` (checked against the suite's
//!      index when the toolkit is locked); and
//! 2. cuwheel's compatibility table (`crates/cuwheel-build/src/spec/data/compatibility.toml`)
//!    knows its host-compiler bounds and GPU archs.
//!
//! Each source is one module implementing [`ToolkitSource`] for the whole
//! life cycle of its toolkits (offer, lock entry, what pins it, refresh,
//! what its Nix expression reads), listed once in [`SOURCES`]. A source
//! says *what* pins an entry ([`Pins`]); the registries' clients, in the
//! `cuwheel-registry` crate (its `toolkit_pins` module), carry that out, so no
//! source reaches a registry and a build, which reads the lock's entries
//! through this trait, carries no client.
//!
//! In: what pip listed ([`Listing`]), the data files, the table. Out: the
//! lock's `facts.toolkits`, from which the matrix picks each cell's nvcc
//! ([`crate::spec::MatrixFacts::default_nvcc`]), each cell's toolkit as a
//! [`CudaRequest`] and what pins it, and the checks of a lock's entries.
//! Pure; the unit tests feed fabricated listings.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::format::{Artifact, CudaToolchain, Fields};
use crate::spec::{CompatTable, CudaVersion, PythonVersion, ToolkitOrigin};
use crate::wheel::Arch;

mod debian;
mod pypi;

pub use debian::Debian;
pub use pypi::Pypi;

/// Every toolkit source, earliest first: a version two sources carry is
/// taken from the earlier one (Debian's toolkit is one package closure
/// rather than a resolution). Adding a source is a module and an entry
/// here (docs/guide/adding-a-toolchain-source.md).
pub static SOURCES: &[&dyn ToolkitSource] = &[&Debian, &Pypi];

/// The source whose lock entries are of `kind`.
pub fn by_kind(kind: &str) -> Option<&'static dyn ToolkitSource> {
    SOURCES.iter().copied().find(|source| source.kind() == kind)
}

/// The source of `kind`, which was checked when the lock was read (or the
/// request made): a kind without one is a bug.
pub fn of_checked_kind(kind: &str) -> &'static dyn ToolkitSource {
    by_kind(kind).unwrap_or_else(|| panic!("toolkit kind {kind} has no source"))
}

/// The source called `name` in the lock's facts.
pub fn by_name(name: &str) -> Option<&'static dyn ToolkitSource> {
    SOURCES.iter().copied().find(|source| source.name() == name)
}

/// The kinds of the sources' lock entries.
pub fn kinds() -> Vec<&'static str> {
    SOURCES.iter().map(|source| source.kind()).collect()
}

/// A place CUDA toolkits come from, through its whole life cycle: what it
/// offers, the lock entry a cell asks of it, what pins that entry (which
/// the registry side resolves and re-pins), and what its Nix expression
/// (`nix/<kind>.nix`) reads besides.
pub trait ToolkitSource: Sync {
    /// Its name in the lock's facts (`pypi`): `{"source": "pypi", ...}`.
    fn name(&self) -> &'static str;

    /// The kind of its lock entries (`cuda-wheels`): the Nix file
    /// `nix/<kind>.nix` builds them.
    fn kind(&self) -> &'static str;

    /// The fields of what it offers, as the facts record them (`release`).
    fn origin_fields(&self) -> &'static [&'static str];

    /// The fields of its lock entries besides `version` and `artifacts`
    /// (`runtime`).
    fn entry_fields(&self) -> &'static [&'static str];

    /// The toolkits it carries and where each comes from, asking `listing`
    /// what it must.
    fn offers(&self, listing: &dyn Listing) -> Result<BTreeMap<CudaVersion, ToolkitOrigin>>;

    /// What it would offer of `served` when nothing may be asked (`cuwheel
    /// init` guesses a cell's nvcc before any lock): by default, what it
    /// offers with nothing listed.
    fn assumed(&self, served: CudaVersion) -> BTreeMap<CudaVersion, ToolkitOrigin> {
        let _ = served;
        self.offers(&Listed(&[])).unwrap_or_default()
    }

    /// The fields of the lock entry for a toolkit it offered as `origin`,
    /// built for cells whose gcc toolchain is called `gcc`.
    fn entry(&self, origin: &ToolkitOrigin, gcc: &str) -> Fields;

    /// The Debian suite whose package index resolving the entry reads, if
    /// it is one suite's package closure; then `cuwheel lock --refresh`
    /// re-pins it by the recipe called [`ToolkitSource::kind`] in
    /// `data/debian.toml`, checked as its [`Pins::DebianClosure`] says.
    fn debian_suite<'a>(&self, fields: &'a Fields) -> Option<&'a str> {
        let _ = fields;
        None
    }

    /// What pins the files of its entry for CUDA `version` (`13.0`) with
    /// `fields`: the registries' clients carry it out when locking, and
    /// `cuwheel lock --refresh` checks a re-pinned Debian closure by it.
    fn pins(&self, version: &str, fields: &Fields) -> Pins;

    /// Whether an entry an earlier lock wrote (with its artifacts) is
    /// still what it pins now, so that a relock may reuse it; by default,
    /// yes. A source whose recipe gained a part says no to an entry
    /// without it.
    fn current(&self, entry: &CudaToolchain, artifacts: &[Artifact]) -> bool {
        let _ = (entry, artifacts);
        true
    }

    /// Other toolchains of the lock whose files its Nix expression reads
    /// (`cuda-wheels`: the gcc whose glibc its programs run on): fetched
    /// with it and recorded in provenance.
    fn reads(&self, fields: &Fields) -> Vec<String> {
        let _ = fields;
        Vec::new()
    }

    /// Checks the fields of a lock entry of its kind.
    fn check_entry(&self, fields: &Fields) -> Result<(), String> {
        let mut own = fields.clone();
        if let Some(target) = own.remove(TARGET_FIELD) {
            match target.parse::<Arch>() {
                Ok(arch) if self.builds_for(arch) && arch != Arch::X86_64 => {}
                Ok(arch) => {
                    return Err(format!(
                        "its {TARGET_FIELD} `{arch}` is not an architecture this source builds \
                         cross toolkits for"
                    ));
                }
                Err(problem) => return Err(format!("its {TARGET_FIELD}: {problem}")),
            }
        }
        check_fields(&own, self.entry_fields())
    }

    /// Whether it can serve cells of `arch`: every source serves x86_64;
    /// one that overrides this also serves cross-built cells, whose
    /// runtime library it takes from that architecture's packages.
    fn builds_for(&self, arch: Arch) -> bool {
        arch == Arch::X86_64
    }

    /// Checks the fields of an origin it offered.
    fn check_origin(&self, origin: &ToolkitOrigin) -> Result<(), String> {
        check_fields(&origin.fields, self.origin_fields())
    }
}

/// `fields` has exactly `expected`.
fn check_fields(fields: &Fields, expected: &[&str]) -> Result<(), String> {
    let have: BTreeSet<&str> = fields.keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = expected.iter().copied().collect();
    if have == want {
        return Ok(());
    }
    let show = |set: &BTreeSet<&str>| {
        if set.is_empty() {
            "none".to_owned()
        } else {
            set.iter().copied().collect::<Vec<_>>().join(", ")
        }
    };
    Err(format!(
        "has the fields {} where its source records {}",
        show(&have),
        show(&want)
    ))
}

/// What pins a toolkit's files, as its source says
/// ([`ToolkitSource::pins`]): data, which the registries' clients (the
/// `cuwheel-registry` crate) carry out, recording every file for the cells
/// that use the toolkit. A source that needs a registry cuwheel has no
/// client for adds a variant here and its client there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pins {
    /// The closure of `data/debian.toml`'s recipe `recipe` in Debian
    /// `suite`, whose index must carry `package` at the toolkit's release
    /// (`X.Y.*`).
    DebianClosure {
        recipe: &'static str,
        suite: String,
        package: &'static str,
    },
    /// NVIDIA's wheels pip resolves from `requirement` (a `cuda-toolkit`
    /// requirement): the components `data/pypi.toml` names, all x86_64
    /// (nvcc runs there) but for a cross cell's runtime library
    /// ([`TARGET_RUNTIME`]), resolved for the cell's architecture.
    PypiComponents { requirement: String },
}

/// The component whose files a cross-built cell links (`libcudart`): the
/// one wheel of a cross toolkit taken from the cells' architecture.
pub const TARGET_RUNTIME: &str = "nvidia-cuda-runtime";

/// What a lock asks a source to resolve: a toolkit it offered, for the
/// cells that use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaRequest {
    /// The source's kind ([`ToolkitSource::kind`]).
    pub kind: String,
    pub version: CudaVersion,
    /// The lock entry's fields ([`ToolkitSource::entry`]).
    pub fields: Fields,
    /// The lowest Python among the torch wheels of the cells using it, for
    /// a source that resolves through pip.
    pub python: PythonVersion,
    /// The architecture of the cells it builds: their runtime library is
    /// that architecture's, while nvcc runs here (x86_64).
    pub arch: Arch,
}

/// The entry field an aarch64 cell's toolkit carries (`"target":
/// "aarch64"`); an x86_64 toolkit's entry has none, as before.
pub const TARGET_FIELD: &str = "target";

impl CudaRequest {
    pub fn source(&self) -> &'static dyn ToolkitSource {
        of_checked_kind(&self.kind)
    }
}

/// What a source may ask of the registries while offering (the lock's
/// listing asks pip).
pub trait Listing {
    /// The releases of `package` on the package index, as pip lists them.
    fn releases(&self, package: &str) -> Result<Vec<String>>;
}

/// A fixed listing (the tests', and [`ToolkitSource::assumed`]'s empty one).
pub struct Listed<'a>(pub &'a [String]);

impl Listing for Listed<'_> {
    fn releases(&self, _package: &str) -> Result<Vec<String>> {
        Ok(self.0.to_vec())
    }
}

/// The available toolkits: what the sources offer (earlier sources win a
/// version both carry) and the table knows.
pub fn available(
    offers: impl IntoIterator<Item = BTreeMap<CudaVersion, ToolkitOrigin>>,
    compat: &CompatTable,
) -> BTreeMap<CudaVersion, ToolkitOrigin> {
    let mut available = BTreeMap::new();
    for offered in offers {
        for (version, origin) in offered {
            if compat.toolkit(&version).is_some() {
                available.entry(version).or_insert(origin);
            }
        }
    }
    available
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(releases: &[&str]) -> Vec<String> {
        releases.iter().map(|r| r.to_string()).collect()
    }

    fn offered(releases: &[String]) -> BTreeMap<CudaVersion, ToolkitOrigin> {
        let offers = SOURCES
            .iter()
            .map(|source| source.offers(&Listed(releases)).unwrap());
        available(offers, CompatTable::embedded())
    }

    #[test]
    fn available_means_a_source_carries_it_and_the_table_knows_it() {
        let releases = listed(&[
            "13.9.0",
            "13.5.0",
            "13.2.2",
            "13.2.1",
            "13.1.2.0",
            "13.0.3.0",
            "13.0.2",
            "12.9.2.0",
            "12.6.3",
            "11.8.0",
            "13.3.0rc1",
        ]);
        let shown: Vec<String> = offered(&releases)
            .iter()
            .map(|(version, origin)| format!("{version} {origin}"))
            .collect();
        // 12.6 and 12.9 from PyPI: no complete nvcc in their wheels; 13.9:
        // not in the table yet; 13.3: only a pre-release listed.
        assert_eq!(
            shown,
            [
                "11.8 debian bookworm",
                "12.4 debian trixie",
                "12.5 debian experimental",
                "13.0 pypi 13.0.3.0",
                "13.1 pypi 13.1.2.0",
                "13.2 pypi 13.2.2",
                "13.5 pypi 13.5.0",
            ]
        );
    }

    #[test]
    fn nothing_listed_leaves_debian() {
        let found = offered(&[]);
        assert!(found.values().all(|origin| origin.source == "debian"));
        assert!(!found.is_empty());
    }

    #[test]
    fn sources_have_distinct_names_and_kinds_each_with_its_nix_file() {
        let names: BTreeSet<&str> = SOURCES.iter().map(|s| s.name()).collect();
        let kinds: BTreeSet<&str> = SOURCES.iter().map(|s| s.kind()).collect();
        assert_eq!(names.len(), SOURCES.len());
        assert_eq!(kinds.len(), SOURCES.len());
        let nix = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../nix");
        for kind in kinds {
            assert!(
                kind.starts_with("cuda-"),
                "{kind}: nix/toolchains.nix builds cuda-* kinds"
            );
            assert!(
                nix.join(format!("{kind}.nix")).is_file(),
                "nix/{kind}.nix is missing"
            );
        }
    }

    #[test]
    fn an_entry_with_other_fields_than_its_source_records_is_refused() {
        let fields = Fields::from([("suite".to_owned(), "trixie".to_owned())]);
        assert_eq!(
            Pypi.check_entry(&fields).unwrap_err(),
            "has the fields suite where its source records runtime"
        );
        assert!(Debian.check_entry(&fields).is_ok());
    }
}

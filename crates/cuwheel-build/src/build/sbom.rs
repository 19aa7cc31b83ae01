//! The wheel's PEP 770 SBOM: `.dist-info/sboms/cuwheel.cdx.json`, CycloneDX
//! 1.5 JSON.
//!
//! In: at plan time, the lock and the cell's toolchain identities
//! ([`SbomInputs::of`]): every pinned artifact the wheel's bytes were built
//! from (toolkit, compiler and sysroot packages, torch, Python headers),
//! with its sha256 and package URL, and what the wheel needs at run time
//! (torch, the CUDA runtime). In the wheel node, those inputs, the wheel's
//! METADATA and its zip timestamp ([`bom_json`]). Out: the SBOM's bytes.
//!
//! Nothing in it varies between builds: the timestamp is the wheel's
//! `SOURCE_DATE_EPOCH`, the serial number a version-5 UUID of the recipe,
//! and every list is sorted.
//!
//! The document is the few CycloneDX objects below, serialised with serde.
//! The `cyclonedx-bom` library wrote them until its compile (with its
//! regex, time and XML dependencies) was found to be a quarter of the
//! driver's, which every first wheel waits for (docs/reports/ci.md). It
//! stays the judge: this module's tests read every SBOM back with it,
//! validate it against CycloneDX 1.5 and require that the library writes
//! the same JSON again; tests/it/sbom.rs validates the demo wheel's with
//! the CycloneDX project's Python validator.

use std::collections::BTreeMap;
use std::str::FromStr;

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};

use super::ToolchainIdentity;
use crate::lock::format::{Lock, Source};
use crate::spec::CudaVersion;
use crate::wheel::{CoreMetadata, ZipTimestamp};

/// The SBOM member's path inside `.dist-info` (PEP 770's directory).
pub use crate::audit::checks::SBOM_FILE;

/// What the SBOM lists besides the wheel itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SbomInputs {
    /// Every pinned artifact the wheel's bytes were built from, by purl.
    pub built_from: Vec<SbomArtifact>,
    /// What the wheel loads at run time without shipping it.
    pub runtime: Vec<SbomArtifact>,
}

/// One component: a pinned file, or a run-time requirement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SbomArtifact {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub purl: String,
    /// The file's sha256, for a pinned file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The file name in the lock, for a pinned file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The toolchain roles it is part of (`cuda`, `gcc`, `python`, `torch`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl SbomArtifact {
    /// A PyPI distribution the wheel needs at run time.
    fn required(name: String, version: Option<String>, description: String) -> SbomArtifact {
        SbomArtifact {
            purl: purl("pypi", None, &name, version.as_deref(), &[]),
            name,
            version,
            sha256: None,
            file: None,
            roles: Vec::new(),
            description: Some(description),
        }
    }
}

impl SbomInputs {
    /// The components of a cell built with `toolchains` (role → identity)
    /// from `lock`, serving CUDA `cuda` (`13.0`).
    pub fn of(
        lock: &Lock,
        toolchains: &BTreeMap<String, ToolchainIdentity>,
        cuda: CudaVersion,
    ) -> SbomInputs {
        let mut by_purl: BTreeMap<String, SbomArtifact> = BTreeMap::new();
        for (role, identity) in toolchains {
            for (name, sha256) in &identity.artifacts {
                let artifact = pinned(lock, name, sha256);
                let entry = by_purl.entry(artifact.purl.clone()).or_insert(artifact);
                if !entry.roles.contains(role) {
                    entry.roles.push(role.clone());
                    entry.roles.sort();
                }
            }
        }
        let mut runtime = Vec::new();
        let torch = toolchains
            .get("torch")
            .into_iter()
            .flat_map(|identity| identity.artifacts.keys())
            .find_map(|name| match lock.artifacts.get(name).map(|a| &a.source) {
                Some(Source::Pypi { name, version }) => Some((name.clone(), version.clone())),
                _ => None,
            });
        if let Some((name, version)) = torch {
            runtime.push(SbomArtifact::required(
                name,
                Some(version),
                "the torch release the wheel is built against".into(),
            ));
        }
        // CUDA 13's component wheels dropped the -cuN suffix.
        let major = cuda.major;
        let runtime_name = if major >= 13 {
            "nvidia-cuda-runtime".to_string()
        } else {
            format!("nvidia-cuda-runtime-cu{major}")
        };
        runtime.push(SbomArtifact::required(
            runtime_name,
            None,
            format!("the CUDA {cuda} runtime (libcudart.so.{major}), installed with torch"),
        ));
        SbomInputs {
            built_from: by_purl.into_values().collect(),
            runtime,
        }
    }
}

/// A lock artifact as a component: its package URL from where it comes.
fn pinned(lock: &Lock, name: &str, sha256: &str) -> SbomArtifact {
    let (purl, package, version) = match lock.artifacts.get(name).map(|a| &a.source) {
        Some(Source::Debian {
            suite,
            package,
            version,
            architecture,
        }) => (
            self::purl(
                "deb",
                Some("debian"),
                package,
                Some(version),
                &[("arch", architecture), ("distro", suite)],
            ),
            package.clone(),
            Some(version.clone()),
        ),
        Some(Source::Pypi {
            name: pypi,
            version,
        }) => (
            self::purl("pypi", None, pypi, Some(version), &[("file_name", name)]),
            pypi.clone(),
            Some(version.clone()),
        ),
        Some(Source::Archive { .. }) | None => (
            self::purl(
                "generic",
                None,
                name,
                None,
                &[("checksum", &format!("sha256:{sha256}"))],
            ),
            name.to_string(),
            None,
        ),
    };
    SbomArtifact {
        name: package,
        version,
        purl,
        sha256: Some(sha256.to_string()),
        file: Some(name.to_string()),
        roles: Vec::new(),
        description: None,
    }
}

/// A package URL; what cannot be one (a name the library refuses) becomes
/// a generic one with the name percent-encoded by the library.
fn purl(
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    version: Option<&str>,
    qualifiers: &[(&str, &str)],
) -> String {
    let build = || -> Result<String, String> {
        let mut builder = purl::GenericPurlBuilder::new(kind.to_string(), name);
        if let Some(namespace) = namespace {
            builder = builder.with_namespace(namespace);
        }
        if let Some(version) = version {
            builder = builder.with_version(version);
        }
        for (key, value) in qualifiers {
            builder = builder
                .with_qualifier(*key, *value)
                .map_err(|e| e.to_string())?;
        }
        builder
            .build()
            .map(|p| p.to_string())
            .map_err(|e| e.to_string())
    };
    build().unwrap_or_else(|_| {
        purl::GenericPurlBuilder::new("generic".to_string(), name)
            .build()
            .map(|p| p.to_string())
            .unwrap_or_else(|_| format!("pkg:generic/{}", name.replace('/', "%2F")))
    })
}

/// The SBOM of the wheel `metadata` describes, built from `inputs`, dated
/// `timestamp`; `identity` (the recipe's canonical JSON) seeds the serial
/// number. Canonical JSON, ending in a newline.
pub fn bom_json(
    metadata: &CoreMetadata,
    inputs: &SbomInputs,
    timestamp: ZipTimestamp,
    identity: &str,
) -> Result<String> {
    let version = metadata.version.to_string();
    let wheel_purl = purl("pypi", None, metadata.name.as_str(), Some(&version), &[]);
    check_purl(&wheel_purl)?;
    let wheel = Component {
        kind: "library",
        bom_ref: Some(wheel_purl.clone()),
        name: metadata.name.as_str().to_string(),
        version: Some(version),
        description: metadata.summary.as_deref().map(normalized),
        scope: None,
        hashes: Vec::new(),
        purl: Some(wheel_purl.clone()),
        properties: Vec::new(),
    };
    let tool = Component {
        kind: "application",
        bom_ref: None,
        name: "cuwheel".into(),
        version: Some(env!("CARGO_PKG_VERSION").into()),
        description: Some(
            "hermetic, bit-for-bit reproducible PyTorch CUDA extension wheels".into(),
        ),
        scope: None,
        hashes: Vec::new(),
        purl: None,
        properties: Vec::new(),
    };
    let mut components = Vec::new();
    for artifact in &inputs.built_from {
        components.push(component(artifact, "excluded")?);
    }
    for artifact in &inputs.runtime {
        components.push(component(artifact, "required")?);
    }
    let serial = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, identity.as_bytes());
    let bom = Bom {
        bom_format: "CycloneDX",
        spec_version: "1.5",
        serial_number: format!("urn:uuid:{serial}"),
        version: 1,
        metadata: Metadata {
            timestamp: timestamp.to_rfc3339(),
            tools: Tools {
                components: vec![tool],
            },
            component: wheel,
            properties: vec![Property::new(
                "cuwheel:scope-excluded",
                "what the wheel was built from; none of it ships in the wheel",
            )],
        },
        components,
        dependencies: vec![Dependency {
            reference: wheel_purl,
            depends_on: inputs.runtime.iter().map(|a| a.purl.clone()).collect(),
        }],
    };
    let value = serde_json::to_value(&bom).context("cannot write the SBOM")?;
    Ok(crate::json::canonical(&value))
}

/// A CycloneDX 1.5 document: the fields cuwheel writes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Bom {
    bom_format: &'static str,
    spec_version: &'static str,
    serial_number: String,
    version: u32,
    metadata: Metadata,
    components: Vec<Component>,
    dependencies: Vec<Dependency>,
}

#[derive(Serialize)]
struct Metadata {
    timestamp: String,
    tools: Tools,
    component: Component,
    properties: Vec<Property>,
}

/// CycloneDX 1.5's `tools` object (the array form is deprecated).
#[derive(Serialize)]
struct Tools {
    components: Vec<Component>,
}

#[derive(Serialize)]
struct Component {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(rename = "bom-ref", skip_serializing_if = "Option::is_none")]
    bom_ref: Option<String>,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hashes: Vec<Hash>,
    #[serde(skip_serializing_if = "Option::is_none")]
    purl: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    properties: Vec<Property>,
}

#[derive(Serialize)]
struct Hash {
    alg: &'static str,
    content: String,
}

#[derive(Serialize)]
struct Property {
    name: String,
    value: String,
}

impl Property {
    fn new(name: &str, value: &str) -> Property {
        Property {
            name: name.into(),
            value: normalized(value),
        }
    }
}

#[derive(Serialize)]
struct Dependency {
    #[serde(rename = "ref")]
    reference: String,
    #[serde(rename = "dependsOn")]
    depends_on: Vec<String>,
}

/// CycloneDX's normalizedString: no line breaks or tabs.
fn normalized(text: &str) -> String {
    text.replace("\r\n", " ").replace(['\r', '\n', '\t'], " ")
}

/// A component of scope `scope` (`excluded`: built from; `required`: needed
/// at run time).
fn component(artifact: &SbomArtifact, scope: &'static str) -> Result<Component> {
    check_purl(&artifact.purl)?;
    let mut properties = Vec::new();
    if let Some(file) = &artifact.file {
        properties.push(Property::new("cuwheel:file", file));
    }
    if !artifact.roles.is_empty() {
        properties.push(Property::new(
            "cuwheel:toolchains",
            &artifact.roles.join(","),
        ));
    }
    Ok(Component {
        kind: "library",
        bom_ref: Some(artifact.purl.clone()),
        name: artifact.name.clone(),
        version: artifact.version.clone(),
        description: artifact.description.as_deref().map(normalized),
        scope: Some(scope),
        hashes: artifact
            .sha256
            .iter()
            .map(|sha256| Hash {
                alg: "SHA-256",
                content: sha256.clone(),
            })
            .collect(),
        purl: Some(artifact.purl.clone()),
        properties,
    })
}

fn check_purl(text: &str) -> Result<()> {
    purl::GenericPurl::<String>::from_str(text)
        .map(drop)
        .map_err(|e| anyhow!("`{text}` is not a package URL: {e}"))
}

#[cfg(test)]
#[path = "sbom_tests.rs"]
mod tests;

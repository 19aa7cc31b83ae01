//! The wheel's PEP 770 SBOM: `.dist-info/sboms/cuwheel.cdx.json`, CycloneDX
//! 1.5 JSON written with the `cyclonedx-bom` library.
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

use std::collections::BTreeMap;
use std::str::FromStr;

use anyhow::{Context, Result, anyhow};
use cyclonedx_bom::external_models::normalized_string::NormalizedString;
use cyclonedx_bom::external_models::uri::Purl;
use cyclonedx_bom::models::bom::{Bom, SpecVersion, UrnUuid};
use cyclonedx_bom::models::component::{Classification, Component, Components, Scope};
use cyclonedx_bom::models::dependency::{Dependencies, Dependency};
use cyclonedx_bom::models::hash::{Hash, HashAlgorithm, HashValue, Hashes};
use cyclonedx_bom::models::metadata::Metadata;
use cyclonedx_bom::models::property::{Properties, Property};
use cyclonedx_bom::models::tool::Tools;
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
    let mut wheel = Component::new(
        Classification::Library,
        metadata.name.as_str(),
        &version,
        Some(wheel_purl.clone()),
    );
    wheel.purl = Some(to_purl(&wheel_purl)?);
    wheel.description = metadata.summary.as_deref().map(NormalizedString::new);
    let mut tool = Component::new(
        Classification::Application,
        "cuwheel",
        env!("CARGO_PKG_VERSION"),
        None,
    );
    tool.description = Some(NormalizedString::new(
        "hermetic, bit-for-bit reproducible PyTorch CUDA extension wheels",
    ));
    let mut components = Vec::new();
    for artifact in &inputs.built_from {
        components.push(component(artifact, Scope::Excluded)?);
    }
    for artifact in &inputs.runtime {
        components.push(component(artifact, Scope::Required)?);
    }
    let serial = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, identity.as_bytes());
    let bom = Bom {
        serial_number: Some(
            UrnUuid::new(format!("urn:uuid:{serial}"))
                .map_err(|e| anyhow!("the serial number: {e:?}"))?,
        ),
        metadata: Some(Metadata {
            timestamp: Some(
                cyclonedx_bom::external_models::date_time::DateTime::try_from(
                    timestamp.to_rfc3339(),
                )
                .map_err(|e| anyhow!("the timestamp: {e:?}"))?,
            ),
            tools: Some(Tools::Object {
                services: None,
                components: Some(Components(vec![tool])),
            }),
            component: Some(wheel),
            properties: Some(Properties(vec![Property::new(
                "cuwheel:scope-excluded",
                "what the wheel was built from; none of it ships in the wheel",
            )])),
            ..Metadata::default()
        }),
        components: Some(Components(components)),
        dependencies: Some(Dependencies(vec![Dependency {
            dependency_ref: wheel_purl,
            dependencies: inputs.runtime.iter().map(|a| a.purl.clone()).collect(),
        }])),
        spec_version: SpecVersion::V1_5,
        ..Bom::default()
    };
    let mut bytes = Vec::new();
    bom.output_as_json_v1_5(&mut bytes)
        .map_err(|e| anyhow!("cannot write the SBOM: {e:?}"))?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .context("the SBOM library wrote JSON that does not read back")?;
    Ok(crate::json::canonical(&value))
}

fn component(artifact: &SbomArtifact, scope: Scope) -> Result<Component> {
    let mut component = Component::new(
        Classification::Library,
        &artifact.name,
        artifact.version.as_deref().unwrap_or(""),
        Some(artifact.purl.clone()),
    );
    if artifact.version.is_none() {
        component.version = None;
    }
    component.scope = Some(scope);
    component.purl = Some(to_purl(&artifact.purl)?);
    component.description = artifact.description.as_deref().map(NormalizedString::new);
    if let Some(sha256) = &artifact.sha256 {
        component.hashes = Some(Hashes(vec![Hash {
            alg: HashAlgorithm::SHA_256,
            content: HashValue(sha256.clone()),
        }]));
    }
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
    if !properties.is_empty() {
        component.properties = Some(Properties(properties));
    }
    Ok(component)
}

fn to_purl(text: &str) -> Result<Purl> {
    Purl::from_str(text).map_err(|()| anyhow!("`{text}` is not a package URL"))
}

//! The SBOM against the CycloneDX project's Rust library: it reads each one
//! back, finds it valid CycloneDX 1.5, and writes the same JSON again.

use cyclonedx_bom::models::bom::{Bom as LibraryBom, SpecVersion};
use cyclonedx_bom::validation::Validate;

use super::*;
use crate::wheel::{ProjectName, Version};

fn metadata(summary: &str) -> CoreMetadata {
    let mut metadata = CoreMetadata::new(
        ProjectName::new("demo-ext").unwrap(),
        Version::parse("0.1.0+pt211cu130").unwrap(),
    );
    metadata.summary = Some(summary.into());
    metadata
}

fn artifact(name: &str, purl: &str, roles: &[&str]) -> SbomArtifact {
    SbomArtifact {
        name: name.into(),
        version: Some("1.0".into()),
        purl: purl.into(),
        sha256: Some("ab".repeat(32)),
        file: Some(format!("{name}.deb")),
        roles: roles.iter().map(|r| r.to_string()).collect(),
        description: None,
    }
}

fn inputs() -> SbomInputs {
    SbomInputs {
        built_from: vec![
            artifact(
                "binutils",
                "pkg:deb/debian/binutils@1.0?arch=amd64&distro=bullseye",
                &["cuda", "gcc"],
            ),
            artifact(
                "torch",
                "pkg:pypi/torch@2.11.0?file_name=torch-2.11.0-cp313-cp313-manylinux_2_28_x86_64.whl",
                &["torch"],
            ),
            SbomArtifact {
                version: None,
                roles: Vec::new(),
                ..artifact(
                    "python3.12-headers.tar.gz",
                    "pkg:generic/python3.12-headers.tar.gz?checksum=sha256:00",
                    &[],
                )
            },
        ],
        runtime: vec![
            SbomArtifact::required(
                "torch".into(),
                Some("2.11.0".into()),
                "the torch release\tthe wheel is built against".into(),
            ),
            SbomArtifact::required("nvidia-cuda-runtime".into(), None, "the runtime".into()),
        ],
    }
}

fn json(summary: &str, identity: &str) -> String {
    let timestamp = ZipTimestamp::from_unix_seconds(1_700_000_000).unwrap();
    bom_json(&metadata(summary), &inputs(), timestamp, identity).unwrap()
}

#[test]
fn the_library_reads_it_back_finds_it_valid_and_writes_the_same_json() {
    let ours = json("a demo,\r\nin two lines", "{}");
    let bom = LibraryBom::parse_from_json_v1_5(ours.as_bytes()).unwrap();
    let result = bom.validate_version(SpecVersion::V1_5);
    assert!(result.passed(), "{result:?}");
    let mut again = Vec::new();
    bom.output_as_json_v1_5(&mut again).unwrap();
    let again: serde_json::Value = serde_json::from_slice(&again).unwrap();
    assert_eq!(crate::json::canonical(&again), ours);
}

#[test]
fn it_is_canonical_and_depends_only_on_its_inputs() {
    let bom = json("demo", "{\"a\":1}");
    assert_eq!(bom, json("demo", "{\"a\":1}"));
    assert!(bom.ends_with("}\n"));
    let value: serde_json::Value = serde_json::from_str(&bom).unwrap();
    assert_eq!(value["metadata"]["timestamp"], "2023-11-14T22:13:20Z");
    assert_eq!(value["metadata"]["component"]["description"], "demo");
    // The serial number is the recipe's.
    assert_ne!(json("demo", "{\"a\":2}"), bom);
    let scopes: Vec<&str> = value["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["scope"].as_str().unwrap())
        .collect();
    assert_eq!(
        scopes,
        ["excluded", "excluded", "excluded", "required", "required"]
    );
    assert_eq!(
        value["dependencies"][0]["dependsOn"],
        serde_json::json!(["pkg:pypi/torch@2.11.0", "pkg:pypi/nvidia-cuda-runtime"])
    );
}

#[test]
fn a_string_that_is_no_package_url_is_refused() {
    let mut inputs = inputs();
    inputs.runtime[0].purl = "torch 2.11".into();
    let timestamp = ZipTimestamp::from_unix_seconds(0).unwrap();
    let err = bom_json(&metadata("demo"), &inputs, timestamp, "{}").unwrap_err();
    assert!(
        err.to_string()
            .contains("`torch 2.11` is not a package URL"),
        "{err}"
    );
}

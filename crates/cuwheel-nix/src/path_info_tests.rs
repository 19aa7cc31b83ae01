//! `nix path-info --json` and `.narinfo` as Nix 2.8, 2.26 and 2.34 really
//! printed them (recorded by `scripts/nix-probe.sh`), read into the same
//! path infos.

use super::*;

const PROBE: &str = "/nix/store/an9bwcrjx6nykli0sg6i4z5z02dhdqn5-probe.txt";
const MISSING: &str = "/nix/store/00000000000000000000000000000000-missing";
const NAR_HASH: &str = "sha256-Ddwan1XgFPYwYDFfsd5TBk8YyFe9wRPSulUXfx5bWgs=";

/// (version, path-info.json of the local store, of the binary cache).
const RECORDED: &[(&str, &str, &str)] = &[
    (
        "2.8",
        include_str!("../tests/fixtures/nix-2.8/path-info.json"),
        include_str!("../tests/fixtures/nix-2.8/path-info-cache.json"),
    ),
    (
        "2.26",
        include_str!("../tests/fixtures/nix-2.26/path-info.json"),
        include_str!("../tests/fixtures/nix-2.26/path-info-cache.json"),
    ),
    (
        "2.34",
        include_str!("../tests/fixtures/nix-2.34/path-info.json"),
        include_str!("../tests/fixtures/nix-2.34/path-info-cache.json"),
    ),
    (
        "2.34 --json-format 2",
        include_str!("../tests/fixtures/nix-2.34/path-info-format2.json"),
        include_str!("../tests/fixtures/nix-2.34/path-info-cache.json"),
    ),
];

fn by_path(infos: Vec<PathInfo>) -> std::collections::BTreeMap<String, PathInfo> {
    infos.into_iter().map(|i| (i.path.clone(), i)).collect()
}

#[test]
fn every_recorded_shape_reads_into_the_same_path_infos() {
    for (version, local, cache) in RECORDED {
        let local =
            by_path(parse_path_info_json(local).unwrap_or_else(|e| panic!("Nix {version}: {e}")));
        assert_eq!(local.len(), 2, "Nix {version}: {local:?}");
        assert!(!local[MISSING].valid, "Nix {version}");
        let probe = &local[PROBE];
        assert!(probe.valid, "Nix {version}");
        assert_eq!(probe.nar_size, 128, "Nix {version}");
        assert_eq!(probe.nar_hash, NAR_HASH, "Nix {version}");
        assert!(probe.references.is_empty(), "Nix {version}");
        assert!(
            probe.signatures.is_empty(),
            "Nix {version}: a local path is unsigned"
        );
        // Recorded in November 2026, whichever shape holds it.
        assert!(
            probe
                .registration_time
                .is_some_and(|t| (1_795_000_000..1_797_000_000).contains(&t)),
            "Nix {version}: {:?}",
            probe.registration_time
        );

        let cache =
            by_path(parse_path_info_json(cache).unwrap_or_else(|e| panic!("Nix {version}: {e}")));
        assert!(!cache[MISSING].valid, "Nix {version}");
        let probe = &cache[PROBE];
        assert_eq!(probe.nar_hash, NAR_HASH, "Nix {version}");
        assert!(probe.download_size.is_some_and(|s| s > 0), "Nix {version}");
        assert_eq!(
            probe.registration_time, None,
            "Nix {version}: a cache registers nothing"
        );
        assert_eq!(probe.signatures.len(), 1, "Nix {version}");
        assert!(probe.signatures[0].starts_with("probe-1:"), "Nix {version}");
    }
}

#[test]
fn a_narinfo_from_each_version_gives_what_path_info_gives() {
    for text in [
        include_str!("../tests/fixtures/nix-2.8/cache.narinfo"),
        include_str!("../tests/fixtures/nix-2.26/cache.narinfo"),
        include_str!("../tests/fixtures/nix-2.34/cache.narinfo"),
    ] {
        let narinfo = NarInfo::parse(text).unwrap();
        let info = PathInfo::from_narinfo(&narinfo);
        assert!(info.path.ends_with("-probe.drv"), "{info:?}");
        assert_eq!(info.references, [PROBE]);
        assert_eq!(info.nar_size, 496);
        assert_eq!(
            info.nar_hash,
            "sha256:0kgrccpiwsj9xl41zgmcnxig8x5s51rs4bcb4r5qzrlayykpazbp"
        );
        assert_eq!(narinfo.to_text(), text);
    }
}

#[test]
fn base_names_and_wrapping_are_read_as_full_paths() {
    let wrapped = r#"{"version":2,"storeDir":"/nix/store","info":{
        "an9bwcrjx6nykli0sg6i4z5z02dhdqn5-probe.txt":{"narHash":{"algorithm":"sha256","format":"base64","hash":"Ddwan1XgFPYwYDFfsd5TBk8YyFe9wRPSulUXfx5bWgs="},
          "narSize":128,"references":["an9bwcrjx6nykli0sg6i4z5z02dhdqn5-probe.txt"],
          "signatures":[{"keyName":"probe-1","sig":"c2ln"}]},
        "00000000000000000000000000000000-missing":null}}"#;
    let infos = by_path(parse_path_info_json(wrapped).unwrap());
    assert!(!infos[MISSING].valid);
    let probe = &infos[PROBE];
    assert_eq!(probe.references, [PROBE]);
    assert_eq!(
        probe.nar_hash,
        "sha256:Ddwan1XgFPYwYDFfsd5TBk8YyFe9wRPSulUXfx5bWgs="
    );
    assert_eq!(probe.signatures, ["probe-1:c2ln"]);
}

#[test]
fn text_that_is_no_shape_says_what_is_wrong() {
    assert_eq!(
        parse_path_info_json("42").unwrap_err(),
        "neither an array nor an object"
    );
    assert!(
        parse_path_info_json(r#"[{"narHash":"x"}]"#)
            .unwrap_err()
            .contains("no \"path\"")
    );
    assert!(
        parse_path_info_json(r#"{"/nix/store/x":{"narSize":1}}"#)
            .unwrap_err()
            .contains("no \"narHash\"")
    );
}

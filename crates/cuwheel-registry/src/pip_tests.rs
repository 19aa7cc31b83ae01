//! The unit tests of [`super`] (`pip.rs`).

use super::*;

#[test]
fn reads_names_versions_files_and_hashes_from_a_report() {
    let json = r#"{"version": "1", "pip_version": "26.0", "install": [
        {"metadata": {"name": "Nvidia_Cuda_Nvcc", "version": "13.0.88"},
         "download_info": {"url": "https://index.example/p/nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl#sha256=ab",
                           "archive_info": {"hash": "sha256=ab", "hashes": {"sha256": "ab"}}}},
        {"metadata": {"name": "torch", "version": "2.11.0", "requires_dist": ["filelock"]},
         "download_info": {"url": "file:///wheels/torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                           "archive_info": {"hash": "sha256=cd"}}}
    ]}"#;
    let resolved = parse_report(json).unwrap();
    assert_eq!(
        resolved,
        [
            ResolvedWheel {
                name: "nvidia-cuda-nvcc".into(),
                version: "13.0.88".into(),
                file: "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl".into(),
                sha256: "ab".into(),
                requires_dist: vec![],
            },
            ResolvedWheel {
                name: "torch".into(),
                version: "2.11.0".into(),
                file: "torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl".into(),
                sha256: "cd".into(),
                requires_dist: vec!["filelock".into()],
            },
        ]
    );
    let no_hash = json.replace(
        r#""archive_info": {"hash": "sha256=cd"}"#,
        r#""archive_info": {}"#,
    );
    let err = parse_report(&no_hash).unwrap_err().to_string();
    assert!(err.contains("no sha256"), "{err}");
}

#[test]
fn an_unreachable_index_is_told_from_a_missing_release() {
    let refused = "2026-11-26T11:57:20,552 Fetching project page and analyzing links: http://u:pw@127.0.0.1:1/simple/torch/\n\
        2026-11-26T11:57:20,559 Could not fetch URL http://u:pw@127.0.0.1:1/simple/torch/: connection error: HTTPConnectionPool(host='127.0.0.1', port=1): Max retries exceeded with url: /simple/torch/ (Caused by NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at 0x7f01a3373010>: Failed to establish a new connection: [Errno 111] Connection refused')) - skipping\n";
    assert_eq!(
        unreachable_reason(refused).as_deref(),
        Some("[Errno 111] Connection refused")
    );
    let stalled = "x Could not fetch URL https://h/simple/torch/: timed out - skipping\n";
    assert_eq!(
        unreachable_reason(stalled).as_deref(),
        Some("the connection timed out")
    );
    let not_found = "x Could not fetch URL https://h/simple/nope/: 404 Client Error: Not Found for url: https://h/simple/nope/ - skipping\n";
    assert_eq!(unreachable_reason(not_found), None);
    assert_eq!(unreachable_reason(""), None);
    let error = IndexUnreachable {
        what: "pip's listing of torch".into(),
        reason: "[Errno 111] Connection refused".into(),
        limits: NetLimits::how_to_change(),
    }
    .to_string();
    assert!(!error.contains("pw"), "{error}");
    assert!(
        error.contains("could not reach the package index"),
        "{error}"
    );
}

#[test]
fn manylinux_targets_stop_at_the_baseline() {
    let baseline: Baseline = "manylinux_2_31".parse().unwrap();
    let target = Target::manylinux(PythonVersion::new(3, 11), &baseline);
    assert_eq!(target.platforms.first().unwrap(), "manylinux_2_31_x86_64");
    assert!(
        target
            .platforms
            .contains(&"manylinux_2_28_x86_64".to_string())
    );
    assert!(
        !target
            .platforms
            .contains(&"manylinux_2_34_x86_64".to_string())
    );
    assert_eq!(
        &target.platforms[target.platforms.len() - 3..],
        [
            "manylinux2014_x86_64",
            "manylinux2010_x86_64",
            "manylinux1_x86_64"
        ]
    );
}

#[test]
fn free_threaded_targets_name_their_abi() {
    let baseline: Baseline = "manylinux_2_31".parse().unwrap();
    let target = Target::for_abi("3.13t".parse().unwrap(), &baseline);
    let args = target.args().join(" ");
    assert!(
        args.contains("--python-version 3.13 --abi cp313t --abi none"),
        "{args}"
    );
    let regular = Target::for_abi("3.13".parse().unwrap(), &baseline);
    assert!(!regular.args().join(" ").contains("--abi"));
}

#[test]
fn index_listings_are_read_strictly() {
    let out = "torch (2.15.0)\nAvailable versions: 2.15.0, 2.14.1, 2.7.0\n";
    assert_eq!(
        parse_index_versions(out).unwrap(),
        ["2.15.0", "2.14.1", "2.7.0"]
    );
    let err = parse_index_versions("something else")
        .unwrap_err()
        .to_string();
    assert!(err.contains("something else"), "{err}");
}

#[test]
fn download_arguments_select_the_locked_file() {
    let args = download_args("torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl").unwrap();
    assert_eq!(
        args.join(" "),
        "--only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 \
         --platform manylinux_2_28_x86_64"
    );
    let args = download_args(
        "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    )
    .unwrap();
    assert_eq!(
        args.join(" "),
        "--only-binary=:all: --abi none --platform manylinux2014_x86_64 \
         --platform manylinux_2_17_x86_64"
    );
    assert!(download_args("not-a-wheel.tar.gz").is_err());
}

#[test]
fn an_aarch64_target_lists_every_tag_from_the_baseline_to_2_17() {
    let baseline: Baseline = "manylinux_2_31".parse().unwrap();
    let target = Target::manylinux_for(PythonVersion::new(3, 11), &baseline, Arch::Aarch64);
    assert_eq!(target.platforms.len(), 31 - 17 + 1 + 1);
    assert_eq!(target.platforms[0], "manylinux_2_31_aarch64");
    assert_eq!(target.platforms[14], "manylinux_2_17_aarch64");
    assert_eq!(target.platforms[15], "manylinux2014_aarch64");
    assert!(target.platforms.iter().all(|p| p.ends_with("_aarch64")));
    // x86_64's is as before.
    assert_eq!(
        Target::manylinux_for(PythonVersion::new(3, 11), &baseline, Arch::X86_64).platforms,
        Target::manylinux(PythonVersion::new(3, 11), &baseline).platforms
    );
}

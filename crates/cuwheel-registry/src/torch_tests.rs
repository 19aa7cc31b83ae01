//! Unit tests of [`super`]: the CUDA and platform read from torch wheels'
//! metadata, the minors a range selects, and the aarch64 wheels kept.

use super::*;

fn wheel(file: &str, version: &str, requires: &[&str]) -> ResolvedWheel {
    ResolvedWheel {
        name: "torch".into(),
        version: version.into(),
        file: file.into(),
        sha256: "ab".repeat(32),
        requires_dist: requires.iter().map(|r| r.to_string()).collect(),
    }
}

fn cuda(text: &str) -> CudaVersion {
    text.parse().unwrap()
}

#[test]
fn reads_the_cuda_of_every_generation_of_torch_wheels() {
    // As the wheels on the index write them (torch 2.6, 2.7, 2.12, 2.15).
    let cases = [
        (
            "nvidia-cuda-runtime-cu12 (==12.4.127) ; platform_system == \"Linux\" and platform_machine == \"x86_64\"",
            "12.4",
        ),
        (
            "nvidia-cuda-runtime-cu12==12.6.77; platform_system == \"Linux\" and platform_machine == \"x86_64\"",
            "12.6",
        ),
        (
            "cuda-toolkit[cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2; platform_system == \"Linux\"",
            "13.0",
        ),
        (
            "cuda-toolkit[cublas,cudart]==13.2.2; platform_system == \"Linux\"",
            "13.2",
        ),
    ];
    for (requirement, expected) in cases {
        let requires = vec![
            "filelock".to_string(),
            "cuda-bindings<14,>=13.0.3; platform_system == \"Linux\"".to_string(),
            requirement.to_string(),
            "nvidia-cuda-nvrtc-cu12==12.6.77".to_string(),
        ];
        let (found, from) = cuda_runtime(&requires).unwrap();
        assert_eq!(found, cuda(expected), "{requirement}");
        assert!(requirement.starts_with(from.as_str()), "{from}");
    }
}

#[test]
fn refuses_wheels_without_one_cuda_pin() {
    let err = cuda_runtime(&["filelock".into(), "sympy>=1.13".into()]).unwrap_err();
    assert!(err.contains("not a CUDA build"), "{err}");
    let err = cuda_runtime(&["nvidia-cuda-runtime-cu12>=12.6".into()]).unwrap_err();
    assert!(err.contains("does not pin one release"), "{err}");
    let err = cuda_runtime(&[
        "nvidia-cuda-runtime-cu12==12.6.77".into(),
        "cuda-toolkit[cudart]==13.0.2".into(),
    ])
    .unwrap_err();
    assert!(err.contains("several CUDA runtimes"), "{err}");
    // An optional extra is not the default wheel's runtime.
    let (found, _) = cuda_runtime(&[
        "cuda-toolkit[cudart]==13.0.2".into(),
        "nvidia-cuda-runtime-cu12==12.8.90; extra == \"cu12\"".into(),
    ])
    .unwrap();
    assert_eq!(found, cuda("13.0"));
}

/// A torch released after this cuwheel, pinned to a CUDA no table
/// names: its facts come from its metadata alone.
#[test]
fn a_future_torch_is_read_from_its_metadata_alone() {
    let py = |t: &str| t.parse::<PythonAbi>().unwrap();
    let requires = ["cuda-toolkit[cublas,cudart,nvrtc]==13.9.1; platform_system == \"Linux\""];
    let wheels = BTreeMap::from([
        (
            py("3.13"),
            wheel(
                "torch-2.20.1-cp313-cp313-manylinux_2_28_x86_64.whl",
                "2.20.1",
                &requires,
            ),
        ),
        (
            py("3.14"),
            wheel(
                "torch-2.20.1-cp314-cp314-manylinux_2_28_x86_64.whl",
                "2.20.1",
                &requires,
            ),
        ),
    ]);
    let minor: TorchVersion = "2.20".parse().unwrap();
    let found = release(minor, &wheels, BTreeSet::from([py("3.12")])).unwrap();
    assert_eq!(found.version, "2.20.1");
    assert_eq!(found.cuda, cuda("13.9"));
    assert_eq!(found.platform, "manylinux_2_28_x86_64");
    assert_eq!(found.missing, BTreeSet::from([py("3.12")]));
    assert_eq!(found.wheels[&py("3.14")].file, wheels[&py("3.14")].file);
}

#[test]
fn the_platform_is_what_every_wheel_allows() {
    let py = |t: &str| t.parse::<PythonAbi>().unwrap();
    let requires = ["nvidia-cuda-runtime-cu12==12.4.127"];
    let wheels = BTreeMap::from([
        (
            py("3.11"),
            wheel(
                "torch-2.6.0-cp311-cp311-manylinux1_x86_64.whl",
                "2.6.0",
                &requires,
            ),
        ),
        (
            py("3.12"),
            wheel(
                "torch-2.6.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                "2.6.0",
                &requires,
            ),
        ),
    ]);
    let found = release("2.6".parse().unwrap(), &wheels, BTreeSet::new()).unwrap();
    assert_eq!(found.platform, "manylinux_2_28_x86_64");
    let disagree = BTreeMap::from([
        (py("3.11"), wheels[&py("3.11")].clone()),
        (
            py("3.12"),
            wheel(
                "torch-2.6.0-cp312-cp312-manylinux1_x86_64.whl",
                "2.6.0",
                &["cuda-toolkit==13.0.2"],
            ),
        ),
    ]);
    let err = release("2.6".parse().unwrap(), &disagree, BTreeSet::new()).unwrap_err();
    assert!(err.to_string().contains("disagree on their CUDA"), "{err}");
}

#[test]
fn the_standard_is_read_from_atens_own_check() {
    // As torch 2.15's ATen/ATen.h writes it.
    let new = "#if (defined(_MSVC_LANG) && _MSVC_LANG < 202002L) || \\\n    \
                   (!defined(_MSVC_LANG) && __cplusplus < 202002L)\n#error C++20 or later \
                   compatible compiler is required to use ATen.\n#endif\n";
    assert_eq!(required_standard(new), "c++20");
    let old = "#if !defined(_MSC_VER) && __cplusplus < 201703L\n#error C++17 or later \
                   compatible compiler is required to use ATen.\n#endif\n";
    assert_eq!(required_standard(old), "c++17");
}

#[test]
fn ranges_take_the_listed_minors_they_hold() {
    let selectors: Vec<TorchSelector> = ["2.7", ">=2.12,<=2.14"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let listed: Vec<String> = ["2.15.0", "2.14.1", "2.14.0", "2.13.0", "2.12.1", "2.11.0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let found: Vec<String> = minors(&selectors, &listed)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(found, ["2.7", "2.12", "2.13", "2.14"]);
    assert_eq!(
        compare_release("2.7.10", "2.7.9"),
        std::cmp::Ordering::Greater
    );
}

#[test]
fn aarch64_wheels_of_another_cuda_or_none_are_missing() {
    let py = |v: &str| v.parse::<PythonAbi>().unwrap();
    let cuda13 = wheel(
        "torch-2.11.0-cp311-cp311-manylinux_2_28_aarch64.whl",
        "2.11.0",
        &["cuda-toolkit[cudart]==13.0.2; platform_system == \"Linux\""],
    );
    // A CPU build pins no CUDA runtime; a wheel of another CUDA does not
    // serve the release's cells either.
    let cpu = wheel(
        "torch-2.11.0-cp313-cp313-manylinux_2_28_aarch64.whl",
        "2.11.0",
        &["filelock"],
    );
    let other = wheel(
        "torch-2.11.0-cp314-cp314-manylinux_2_28_aarch64.whl",
        "2.11.0",
        &["cuda-toolkit[cudart]==13.2.2; platform_system == \"Linux\""],
    );
    let found = arch_wheels(
        cuda("13.0"),
        &BTreeMap::from([(py("3.11"), cuda13), (py("3.13"), cpu), (py("3.14"), other)]),
        BTreeSet::from([py("3.12")]),
    );
    assert_eq!(found.platform.as_deref(), Some("manylinux_2_28_aarch64"));
    assert_eq!(
        found.wheels.keys().copied().collect::<Vec<_>>(),
        [py("3.11")]
    );
    assert_eq!(
        found.missing.iter().copied().collect::<Vec<_>>(),
        [py("3.12"), py("3.13"), py("3.14")]
    );
    let none = arch_wheels(cuda("13.0"), &BTreeMap::new(), BTreeSet::from([py("3.11")]));
    assert_eq!(none.platform, None);
}

#[test]
fn excludes_that_drop_every_aarch64_cell_spare_the_download() {
    let config = crate::spec::matrix::test_config(
        r#"torch = ["2.9", "2.11"]
python = ["3.11", "3.12"]
platforms = ["x86_64", "aarch64"]
exclude = [
  { platform = "aarch64", torch = "2.9" },
  { platform = "aarch64", python = "3.12" },
  { platform = "aarch64", torch = "2.11", binding = "pybind11" },
]"#,
        "pybind11 = [\"csrc/bindings.cpp\"]",
    );
    let minor = |v: &str| v.parse::<TorchVersion>().unwrap();
    let py = |v: &str| v.parse::<PythonAbi>().unwrap();
    let a = Arch::Aarch64;
    assert!(excluded_on(&config, a, minor("2.9"), None));
    assert!(excluded_on(&config, a, minor("2.9"), Some(py("3.11"))));
    // An exclude with other keys than torch and Python may leave cells.
    assert!(!excluded_on(&config, a, minor("2.11"), None));
    assert!(!excluded_on(&config, a, minor("2.11"), Some(py("3.11"))));
    assert!(excluded_on(&config, a, minor("2.11"), Some(py("3.12"))));
    assert!(!excluded_on(&config, Arch::X86_64, minor("2.9"), None));
}

#[test]
fn the_cxx11_abi_is_read_from_torchs_cmake_config() {
    // The lines of PyPI's torch 2.6.0 and 2.7.1 (cp310) wheels.
    let old = "  set(TORCH_CXX_FLAGS \"-D_GLIBCXX_USE_CXX11_ABI=0\")\n";
    let new = "  set(TORCH_CXX_FLAGS \"-D_GLIBCXX_USE_CXX11_ABI=1\")\n";
    assert_eq!(cxx11_abi(old), Some(false));
    assert_eq!(cxx11_abi(new), Some(true));
    assert_eq!(cxx11_abi("set(TORCH_CXX_FLAGS \"\")\n"), None);
}

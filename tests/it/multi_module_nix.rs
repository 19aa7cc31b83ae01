//! Config v2 end to end on our own fixture, `tests/fixtures/multi-module`,
//! which uses every key: two modules (a CPU-only one with a C++ kernel,
//! OpenMP, `libgomp`, torch-library bindings and stripping; a CUDA one with
//! a `.cu` kernel, the same C++ kernel, a `.cu` pybind11 binding and
//! `-lineinfo`), defines and undefines, package include and exclude globs,
//! a dynamic version, dependencies, extras, readme, URLs and license files.
//!
//! - The plan (no Nix): what each key turns into, node by node.
//! - One cell built by real Nix in the sandbox (`cu132-py311`, the kernels
//!   at one arch), with the driver Nix builds from this checkout: the audit
//!   passes (libgomp is what torch provides, no store or build path — the
//!   device line info names only fixed paths), the wheel holds exactly the
//!   selected files, packaging's metadata parser (`validate=True`) and
//!   `twine check` accept METADATA, and pip installs it.
//!
//! The pinned artifacts must be in the store, and the test venv must hold
//! packaging and twine (`bash tests/prepare.sh`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use crate::common::project::{fixture_with_demo_lock, nodes_expr, write_plan};
use crate::common::{TestEnv, cuwheel_bin, run_ok};
use cuwheel::audit::elf::{ElfFacts, nv_fatbin_section};
use cuwheel::audit::fatbin;
use cuwheel::build::WheelRecipe;
use cuwheel::plan::{Input, Plan};
use cuwheel::wheel::WheelArchive;

const CELL: &str = "cu132-py311";
const WHEEL: &str = "multi_module-0.3.0+pt215cu132-cp311-cp311-manylinux_2_28_x86_64.whl";

fn plan_of(project: &Path) -> Plan {
    serde_json::from_slice(&fs::read(write_plan(project)).unwrap()).unwrap()
}

/// The recipe the wheel node's script hands `cuwheel build-wheel`.
fn recipe(plan: &Plan, cell: &str) -> WheelRecipe {
    let script = &plan.nodes[&plan.cells[cell].wheel].script;
    let start = script.find("<<'CUWHEEL_RECIPE'\n").unwrap() + "<<'CUWHEEL_RECIPE'\n".len();
    let end = script.find("CUWHEEL_RECIPE\n\"").unwrap();
    serde_json::from_str(&script[start..end]).unwrap()
}

fn sources(plan: &Plan, node: &str) -> BTreeMap<String, String> {
    plan.nodes[node]
        .inputs
        .iter()
        .filter_map(|(var, input)| match input {
            Input::Source { source } => Some((var.clone(), source.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn every_key_of_the_fixture_reaches_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let project = fixture_with_demo_lock("multi-module", dir.path());
    let plan = plan_of(&project);
    let names: Vec<&str> = plan.nodes.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "audit-cu132-py311",
            "audit-cu132-py313",
            "binding-_cpu-torch215-abi3",
            "binding-_cuda-cuda132-py311",
            "binding-_cuda-cuda132-py313",
            // which CUDA 13 torch releases load each wheel, when asked
            "compat-cu132-py311",
            "compat-cu132-py313",
            "kernel-cuda132-scale_cpu",
            "kernel-cuda132-scale_cuda",
            "kernel-torch215-scale_cpu",
            "link-_cpu-torch215-abi3",
            "link-_cuda-cu132-py311",
            "link-_cuda-cu132-py313",
            // the tables the load checks read: the CUDA 13 torch releases
            // the lock has (the audits only torch 2.15's, which the wheels
            // claim), the CUDA runtime, the sysroot
            "symbols-cuda132",
            "symbols-gcc-bullseye",
            "symbols-torch211",
            "symbols-torch214",
            "symbols-torch215",
            "wheel-cu132-py311",
            "wheel-cu132-py313",
        ]
    );
    // The CPU-only module: compiled once for both Pythons (and any toolkit),
    // by g++ without CUDA, with its own and the top-level defines and flags.
    for cell in plan.cells.values() {
        assert!(cell.links.contains("link-_cpu-torch215-abi3"), "{cell:?}");
        assert!(
            cell.kernels.contains("kernel-torch215-scale_cpu"),
            "{cell:?}"
        );
    }
    let cpu_kernel = &plan.nodes["kernel-torch215-scale_cpu"];
    assert!(
        !cpu_kernel.inputs.contains_key("cuda"),
        "{:?}",
        cpu_kernel.inputs
    );
    for word in [
        "-fopenmp",
        "-DMM_CPU",
        "-DMM_FACTOR=2",
        "-UNDEBUG",
        "-DTORCH_EXTENSION_NAME=_cpu",
    ] {
        assert!(
            cpu_kernel.script.contains(word),
            "{word}:\n{}",
            cpu_kernel.script
        );
    }
    assert!(!cpu_kernel.script.contains("nvcc"), "{}", cpu_kernel.script);
    // The same C++ kernel in the CUDA module sees CUDA's headers and its defines.
    let cuda_cpp = &plan.nodes["kernel-cuda132-scale_cpu"].script;
    assert!(cuda_cpp.contains("-isystem \"$cuda\"/include") && cuda_cpp.contains("-DMM_CUDA"));
    assert!(!cuda_cpp.contains("-fopenmp"), "{cuda_cpp}");
    // Per-TU inputs: the header the kernels include, not the rest of csrc/include.
    for kernel in ["kernel-torch215-scale_cpu", "kernel-cuda132-scale_cuda"] {
        let files: BTreeSet<String> = sources(&plan, kernel).into_values().collect();
        assert!(
            files.contains("csrc/include/mm/common.h"),
            "{kernel}: {files:?}"
        );
    }
    for node in plan.nodes.values() {
        for input in node.inputs.values() {
            if let Input::Source { source } = input {
                assert!(
                    source != "csrc/include" && !source.ends_with("unused.h"),
                    "{}: {source}",
                    node.name
                );
            }
        }
    }
    // -lineinfo: nvcc sees every input at a fixed path; so does the .cu binding.
    for node in ["kernel-cuda132-scale_cuda", "binding-_cuda-cuda132-py311"] {
        let script = &plan.nodes[node].script;
        assert!(script.contains("-lineinfo"), "{script}");
        assert!(
            script.contains("CUWHEEL_NVCC_PATHS=\"/cuwheel/src=$PWD"),
            "{script}"
        );
        assert!(
            script.contains("-isystem /cuwheel/torch/include"),
            "{script}"
        );
    }
    // cuda-compress-mode: the CUDA module's nvcc lines ask for it; the CPU module has no nvcc.
    for node in ["kernel-cuda132-scale_cuda", "binding-_cuda-cuda132-py311"] {
        let script = &plan.nodes[node].script;
        assert!(script.contains(" --compress-mode=size "), "{script}");
        assert!(!script.contains("--compress-mode=balance"), "{script}");
    }
    let binding = &plan.nodes["binding-_cuda-cuda132-py311"].script;
    assert!(binding.contains("nvcc_compile") && binding.contains("csrc/cuda_ops.cu"));
    assert!(
        binding.contains("/cuwheel/python/include/python3.11"),
        "{binding}"
    );
    // Linking: OpenMP, libgomp and -s for the CPU module only; no CUDA library there.
    let cpu_link = &plan.nodes["link-_cpu-torch215-abi3"].script;
    let strips = |script: &str| script.split_whitespace().any(|w| w == "-s");
    for word in ["-fopenmp", "-lgomp"] {
        assert!(cpu_link.contains(word), "{word}: {cpu_link}");
    }
    assert!(strips(cpu_link), "{cpu_link}");
    assert!(!cpu_link.contains("cudart") && !cpu_link.contains("torch_python"));
    let cuda_link = &plan.nodes["link-_cuda-cu132-py311"].script;
    assert!(cuda_link.contains("-lcudart") && cuda_link.contains("-ltorch_python"));
    assert!(
        !cuda_link.contains("gomp") && !strips(cuda_link),
        "{cuda_link}"
    );

    // The wheel: the dynamic version, METADATA from [project], the files selected.
    let recipe = recipe(&plan, CELL);
    let metadata = &recipe.metadata;
    assert_eq!(metadata.version.to_string(), "0.3.0+pt215cu132");
    assert_eq!(
        metadata.requires_dist,
        [
            "torch>=2.15,<2.16",
            "numpy>=1.24",
            "rich>=13; python_version >= \"3.10\"",
            "pytest>=8; extra == \"test\"",
        ]
    );
    assert_eq!(metadata.provides_extra, ["test"]);
    assert_eq!(metadata.license_expression.as_deref(), Some("MIT"));
    assert_eq!(
        metadata.license_files,
        ["LICENSE", "licenses/THIRD-PARTY.txt"]
    );
    assert_eq!(
        metadata.description_content_type.as_deref(),
        Some("text/markdown")
    );
    assert!(
        metadata
            .description
            .as_deref()
            .unwrap()
            .starts_with("# multi-module\n")
    );
    assert_eq!(
        metadata.author_email.as_deref(),
        Some("cuwheel fixture <fixture@example.org>")
    );
    assert_eq!(metadata.author.as_deref(), Some("Ada"));
    assert_eq!(plan.cells[CELL].predicted_wheel_file, WHEEL);
    let wheel_sources: BTreeSet<String> = sources(&plan, &plan.cells[CELL].wheel)
        .into_values()
        .collect();
    let expected: BTreeSet<String> = [
        "LICENSE",
        "licenses/THIRD-PARTY.txt",
        "multi_module/__init__.py",
        "multi_module/data/table.json",
        "multi_module/py.typed",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(wheel_sources, expected);
    // The version file is a source of every wheel.
    assert!(
        recipe
            .provenance
            .sources
            .contains_key("multi_module/__init__.py"),
        "{:?}",
        recipe.provenance.sources.keys()
    );
}

/// Builds the fixture's `CELL` with Nix: its result directory.
fn build_cell(project: &Path) -> PathBuf {
    let plan = write_plan(project);
    let expr = format!("({}).audit-{CELL}", nodes_expr(project, &plan, true));
    crate::common::flake::build_out(&["--impure", "--expr", &expr])
}

fn contains(data: &[u8], text: &str) -> bool {
    data.windows(text.len()).any(|w| w == text.as_bytes())
}

#[test]
fn one_cell_builds_passes_the_audit_validates_and_installs() {
    let env = TestEnv::get();
    let dir = tempfile::tempdir().unwrap();
    let project = fixture_with_demo_lock("multi-module", dir.path());
    let result = build_cell(&project);
    let wheel = result.join(WHEEL);
    let report = fs::read_to_string(result.join("audit.txt")).unwrap();
    assert!(report.starts_with(&format!("{WHEEL}: PASSED")), "{report}");
    run_ok(Command::new(cuwheel_bin()).arg("audit").arg(&wheel));

    // Exactly the selected files.
    let archive = WheelArchive::open(&wheel).unwrap();
    let names: BTreeSet<&str> = archive.members().iter().map(|m| m.name.as_str()).collect();
    let dist_info = "multi_module-0.3.0+pt215cu132.dist-info";
    let expected: BTreeSet<String> = [
        "multi_module/__init__.py",
        "multi_module/py.typed",
        "multi_module/data/table.json",
        "multi_module/_cpu.abi3.so",
        "multi_module/_cuda.cpython-311-x86_64-linux-gnu.so",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(
        [
            "METADATA",
            "WHEEL",
            "RECORD",
            "cuwheel-provenance.json",
            "licenses/LICENSE",
            "licenses/licenses/THIRD-PARTY.txt",
            "sboms/cuwheel.cdx.json",
        ]
        .iter()
        .map(|f| format!("{dist_info}/{f}")),
    )
    .collect();
    assert_eq!(
        names,
        expected.iter().map(String::as_str).collect::<BTreeSet<_>>()
    );

    // The CPU module: stripped, OpenMP from torch's libgomp, no CUDA.
    let cpu = archive.member("multi_module/_cpu.abi3.so").unwrap();
    let facts = ElfFacts::parse(&cpu.name, &cpu.data).unwrap();
    assert!(
        facts.needed.contains(&"libgomp.so.1".to_string()),
        "{:?}",
        facts.needed
    );
    assert!(
        !facts.needed.iter().any(|n| n.contains("cuda")),
        "{:?}",
        facts.needed
    );
    assert!(
        facts.static_symbols.is_empty(),
        "the CPU module is not stripped"
    );
    assert!(facts.rpath.is_empty() && facts.runpath.is_empty());
    // The CUDA module: SASS 9.0 from both .cu files, and line info at fixed paths only.
    let cuda = archive
        .member("multi_module/_cuda.cpython-311-x86_64-linux-gnu.so")
        .unwrap();
    let section = nv_fatbin_section(&cuda.name, &cuda.data)
        .unwrap()
        .expect("the CUDA module has a fat binary");
    let images = fatbin::parse(section).unwrap();
    let sass: BTreeSet<String> = images.sass().iter().map(|a| a.to_string()).collect();
    assert_eq!(sass, BTreeSet::from(["90".to_string()]));
    // cuda-compress-mode = "size": nvcc compressed the images, so the line info is read from
    // their decompressed payloads (and from the rest of the file).
    let members = fatbin::members(section).unwrap();
    assert!(
        members
            .iter()
            .any(|m| m.compression != fatbin::Compression::None),
        "no image is compressed: {members:?}"
    );
    let mut device: Vec<Vec<u8>> = members
        .iter()
        .map(|m| m.decompressed().expect("the image decompresses"))
        .collect();
    device.push(cuda.data.clone());
    assert!(
        device.iter().any(|d| contains(d, "/cuwheel/src/csrc/cuda")),
        "no device line info"
    );
    for leak in ["/nix/store/", "/build/"] {
        assert!(
            !device.iter().any(|d| contains(d, leak)),
            "the CUDA module names {leak}"
        );
    }

    // packaging's parser with validation, and twine, accept METADATA.
    let metadata = archive.member(&format!("{dist_info}/METADATA")).unwrap();
    let metadata_file = dir.path().join("METADATA");
    fs::write(&metadata_file, &metadata.data).unwrap();
    let check = run_ok(Command::new(env.python()).arg("-c").arg(
        "import json, sys\n\
         from packaging.metadata import Metadata\n\
         m = Metadata.from_email(open(sys.argv[1], encoding='utf-8').read(), validate=True)\n\
         print(json.dumps({'metadata_version': m.metadata_version, 'version': str(m.version),\n\
             'requires_dist': [str(r) for r in m.requires_dist], 'provides_extra': m.provides_extra,\n\
             'license_expression': m.license_expression, 'license_files': m.license_files,\n\
             'project_urls': m.project_urls, 'content_type': m.description_content_type}))\n",
    ).arg(&metadata_file));
    let parsed: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(parsed["metadata_version"], "2.4");
    assert_eq!(parsed["version"], "0.3.0+pt215cu132");
    assert_eq!(parsed["provides_extra"], serde_json::json!(["test"]));
    assert_eq!(parsed["license_expression"], "MIT");
    assert_eq!(
        parsed["license_files"],
        serde_json::json!(["LICENSE", "licenses/THIRD-PARTY.txt"])
    );
    assert_eq!(parsed["content_type"], "text/markdown");
    assert_eq!(
        parsed["project_urls"]["Source"],
        "https://example.org/multi-module/src"
    );
    let requires = parsed["requires_dist"].as_array().unwrap();
    assert_eq!(requires.len(), 4, "{requires:?}");
    let twine = run_ok(
        Command::new(env.venv_bin("twine"))
            .arg("check")
            .arg("--strict")
            .arg(&wheel),
    );
    let said = String::from_utf8_lossy(&twine.stdout);
    assert!(said.contains("PASSED"), "{said}");

    // pip installs it into a fresh venv of this machine's Python (3.11).
    let site = common::pip_install_in_venv(&dir.path().join("venv"), &wheel);
    // Ten files and the SBOM (.dist-info/sboms/cuwheel.cdx.json).
    assert_eq!(common::assert_installed_as_recorded(&site, &wheel), 11);
    assert!(
        site.join(dist_info)
            .join("licenses/licenses/THIRD-PARTY.txt")
            .is_file()
    );
}

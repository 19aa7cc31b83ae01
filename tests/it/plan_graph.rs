//! The plan of kernel objects, from the demo project's real config and lock
//! and from small configs written here: one node per kernel TU × compiler
//! set, inputs that never name Python, torch's nvcc flags with the configured
//! gencode set, names that stay unique, and deterministic JSON.

use crate::common::demo;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use cuwheel::lock::format::{CellToolchains, Lock, Toolchain};
use cuwheel::plan::{
    Input, ModuleSources, Plan, PlanError, ProjectSources, TranslationUnit, sources,
};
use cuwheel::spec::{BindingFlavour, Config, Spec, matrix};

fn demo_lock() -> Lock {
    Lock::read(&demo().join("cuwheel.lock")).unwrap()
}

fn demo_plan() -> Plan {
    let spec = Spec::load(&demo()).unwrap();
    let cells = spec.cells(&demo_lock().facts).unwrap();
    let project = sources::read(&spec).unwrap();
    // Each kernel includes its own device header, the shared one, and the
    // launch and ops headers: not the other kernels' device headers.
    for kernel in &project.modules[0].kernels {
        let headers: Vec<&str> = kernel.headers.iter().map(|h| h.to_str().unwrap()).collect();
        let stem = kernel.path.file_stem().unwrap().to_str().unwrap();
        let own = format!("csrc/include/demo_ext/kernels/{stem}.cuh");
        let mut expected = vec![
            own.as_str(),
            "csrc/include/demo_ext/kernels/common.cuh",
            "csrc/include/demo_ext/launch.cuh",
            "csrc/include/demo_ext/ops.h",
        ];
        expected.sort();
        assert_eq!(headers, expected, "{kernel:?}");
    }
    Plan::new(
        &spec.config,
        &project,
        &cells,
        &demo_lock(),
        Path::new("cuwheel.lock"),
    )
    .unwrap()
}

/// The kernel nodes' names.
fn kernel_names(plan: &Plan) -> Vec<&str> {
    plan.nodes
        .keys()
        .map(String::as_str)
        .filter(|n| n.starts_with("kernel-"))
        .collect()
}

/// The synthetic configs' sources: `kernels`, and one binding, `b.cpp`.
fn pybind11_sources(kernels: Vec<TranslationUnit>) -> ProjectSources {
    ProjectSources {
        modules: vec![ModuleSources {
            kernels,
            bindings: [(
                BindingFlavour::Pybind11,
                vec![TranslationUnit::alone("b.cpp")],
            )]
            .into(),
            flavour_kernels: Default::default(),
        }],
        ..ProjectSources::default()
    }
}

/// A config for the synthetic cases: `extra` goes into `[tool.cuwheel]`.
fn config(matrix: &str, extra: &str) -> Config {
    let text = format!(
        "[project]\nname = \"x\"\nversion = \"1.0\"\n\n[tool.cuwheel]\nmodule = \"x._C\"\n\
         kernels = [\"k/*.cu\"]\ncuda-archs = [\"8.0\", \"9.0+PTX\"]\nbaseline = \"manylinux_2_31\"\n\
         {extra}\n[tool.cuwheel.bindings]\npybind11 = [\"b.cpp\"]\n\n[tool.cuwheel.matrix]\n{matrix}\n"
    );
    Config::parse(&text, Path::new("pyproject.toml")).unwrap()
}

/// The demo's lock with a cell entry for each of `cells` of `config` (its
/// facts are the demo's), with the torch toolchain `torch_of` names.
fn lock_for(config: &Config, torch_of: &dyn Fn(&str) -> &'static str) -> (Lock, Vec<matrix::Cell>) {
    let mut lock = demo_lock();
    let expansion = matrix::expand(config, &lock.facts);
    assert!(expansion.problems.is_empty(), "{:?}", expansion.problems);
    lock.cells.clear();
    for cell in &expansion.cells {
        let entry = CellToolchains {
            bundle: cell.cuda.label(),
            cuda: format!("cuda{}", cell.nvcc.compact()),
            gcc: "gcc-bullseye".into(),
            python: cell.python.map(|p| format!("python{}", p.compact())),
            torch: torch_of(&cell.torch.label()).to_string(),
            claims: Default::default(),
        };
        lock.cells.insert(cell.name().to_string(), entry);
    }
    (lock, expansion.cells)
}

fn plan_of(
    config: &Config,
    sources: &[&str],
    lock: &Lock,
    cells: &[matrix::Cell],
) -> Result<Plan, PlanError> {
    let sources: Vec<TranslationUnit> = sources.iter().map(TranslationUnit::alone).collect();
    Plan::new(
        config,
        &pybind11_sources(sources),
        cells,
        lock,
        Path::new("cuwheel.lock"),
    )
}

#[test]
fn the_demo_plans_one_kernel_object_per_tu_and_compiler_set() {
    let plan = demo_plan();
    let mut expected = Vec::new();
    for set in [
        "cuda125-torch27",
        "cuda125-torch29",
        // The aarch64 cells' (torch 2.11): their cross toolkit's own set.
        "cuda130-aarch64",
        "cuda130-torch211",
        "cuda130-torch214",
        "cuda132",
    ] {
        for tu in ["axpby", "bias_gelu", "row_norm"] {
            expected.push(format!("kernel-{set}-{tu}"));
        }
        // The torch-stable cell's own kernels (csrc/stable/*.cu), with its
        // compiler set: torch 2.11's, the oldest of its range.
        if set == "cuda130-torch211" {
            for tu in ["axpby", "bias_gelu", "row_norm"] {
                expected.push(format!("kernel-{set}-stable-{tu}"));
            }
        }
        expected.push(format!("kernel-{set}-tile_matmul"));
    }
    assert_eq!(kernel_names(&plan), expected);
    for (name, node) in &plan.nodes {
        assert_eq!(&node.name, name);
    }
    assert_eq!(plan.cells.len(), 29);
    // Beside the 27 kernels, each cell has its own binding, link, wheel,
    // audit and compatibility node; they share 12 symbol tables (5 x86_64
    // torch releases, 3 CUDA toolkits and 1 sysroot, and aarch64's torch,
    // CUDA runtime and sysroot); the 8 cells of the PyPI variant (torch
    // 2.11's four Pythons and the stable wheel, and its three aarch64
    // Pythons) add their PyPI wheel and audit.
    assert_eq!(plan.nodes.len(), 27 + 29 * 5 + 12 + 8 * 2);
    let pypi = plan.pypi.as_ref().expect("the demo names a PyPI variant");
    assert_eq!(
        pypi.cells.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "cu13-stable",
            "cu130-py311-torch211",
            "cu130-py311-torch211-aarch64",
            "cu130-py312-torch211",
            "cu130-py313-torch211",
            "cu130-py313-torch211-aarch64",
            "cu130-py314-torch211",
            "cu130-py314-torch211-aarch64"
        ]
    );
    for (cell, wheel) in &pypi.cells {
        // The same links as the labelled wheel's, no local label.
        let own = &plan.cells[cell];
        let inputs = |node: &str| -> BTreeSet<String> {
            plan.nodes[node]
                .inputs
                .values()
                .filter_map(|i| match i {
                    cuwheel::plan::Input::Node { node } => Some(node.clone()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(inputs(&wheel.wheel), inputs(&own.wheel), "{cell}");
        assert!(!wheel.predicted_wheel_file.contains('+'), "{cell}");
        assert!(own.predicted_wheel_file.contains('+'), "{cell}");
    }
    // Every Python of a torch build, and its abi3 cell, link the same objects.
    for (cells, set) in [
        ("cu126-", "kernel-cuda125-torch27-"),
        ("cu128-", "kernel-cuda125-torch29-"),
        ("-torch211", "kernel-cuda130-torch211-"),
        ("-torch211-aarch64", "kernel-cuda130-aarch64-"),
        ("-torch214", "kernel-cuda130-torch214-"),
        ("cu132-", "kernel-cuda132-"),
    ] {
        let sets: BTreeSet<&BTreeSet<String>> = plan
            .cells
            .iter()
            .filter(|(cell, _)| {
                cell.contains(cells) && cell.ends_with("-aarch64") == cells.ends_with("-aarch64")
            })
            .map(|(_, cell)| &cell.kernels)
            .collect();
        assert_eq!(sets.len(), 1, "{cells}: {sets:?}");
        let kernels = sets.into_iter().next().unwrap();
        assert_eq!(kernels.len(), 4);
        assert!(kernels.iter().all(|k| k.starts_with(set)), "{kernels:?}");
    }
    // The cells name the CUDA of torch's wheels; the nvcc is the newest
    // available one not newer than it.
    let nvcc = |cell: &str| plan.cells[cell].nvcc.to_string();
    assert_eq!(nvcc("cu126-py313"), "12.5");
    assert_eq!(nvcc("cu128-py313"), "12.5");
    assert_eq!(nvcc("cu130-py313-torch214"), "13.0");
    assert_eq!(nvcc("cu132-py313"), "13.2");
    assert_eq!(plan.cells["cu126-py313"].torch, "2.7.1");
    assert_eq!(
        plan.sharing().to_string(),
        "27 compiles of 7 kernels with 6 compiler sets serve 29 wheels; a per-cell build would do 115"
    );
    // An aarch64 cell's module is named for its platform, and its link
    // leaves out the local symbols that would name the cross root.
    let link = &plan.nodes["link-cu130-py313-torch211-aarch64"].script;
    assert!(
        link.contains("_C.cpython-313-aarch64-linux-gnu.so"),
        "{link}"
    );
    assert!(link.contains("-Wl,--discard-all"), "{link}");
    assert!(
        !plan.nodes["link-cu130-py313-torch211"]
            .script
            .contains("--discard-all")
    );
    // Only CUDA 13.0's kernels carry the arch-specific sm_90a image
    // (`"13.0" = [...]` in the demo's cuda-archs table).
    for (node, sm90a) in [
        ("kernel-cuda130-torch211-tile_matmul", true),
        ("kernel-cuda130-aarch64-tile_matmul", true),
        ("kernel-cuda130-torch214-axpby", true),
        ("kernel-cuda130-torch211-stable-row_norm", true),
        ("kernel-cuda132-tile_matmul", false),
        ("kernel-cuda125-torch27-tile_matmul", false),
    ] {
        let script = &plan.nodes[node].script;
        assert_eq!(
            script.contains("-gencode=arch=compute_90a,code=sm_90a"),
            sm90a,
            "{node}"
        );
        assert!(
            script.contains("-gencode=arch=compute_90,code=sm_90 "),
            "{node}"
        );
    }
}

#[test]
fn the_stable_cell_builds_its_own_kernels_on_the_stable_abi_and_links_no_c10() {
    let plan = demo_plan();
    let cell = &plan.cells["cu13-stable"];
    assert_eq!(cell.flavour, BindingFlavour::TorchStable);
    // It claims every locked torch of CUDA 13 from 2.11 on; the others their own.
    let claims: Vec<&str> = cell.claims.iter().map(String::as_str).collect();
    assert_eq!(claims, ["torch211", "torch214", "torch215"]);
    let claims: Vec<&str> = plan.cells["cu130-abi3-torch211"]
        .claims
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(claims, ["torch211"]);
    assert_eq!(plan.cells["cu126-py313"].flavour, BindingFlavour::Pybind11);
    assert_eq!(cell.torch, "2.11.0");
    assert_eq!(cell.nvcc.to_string(), "13.0");
    assert!(
        cell.predicted_wheel_file
            .starts_with("demo_ext-0.1.0+cu13-cp39-abi3-"),
        "{}",
        cell.predicted_wheel_file
    );
    let target = "-DTORCH_TARGET_VERSION=0x020b000000000000";
    // Its kernels: csrc/stable/*.cu with the stable-ABI defines, no Python.
    let kernels: Vec<&str> = cell.kernels.iter().map(String::as_str).collect();
    assert_eq!(
        kernels,
        [
            "kernel-cuda130-torch211-stable-axpby",
            "kernel-cuda130-torch211-stable-bias_gelu",
            "kernel-cuda130-torch211-stable-row_norm"
        ]
    );
    for kernel in &kernels {
        let node = &plan.nodes[*kernel];
        assert!(node.script.contains("-DTORCH_STABLE_ONLY"), "{kernel}");
        assert!(node.script.contains(target), "{kernel}");
        assert!(!node.script.contains("Py_LIMITED_API"), "{kernel}");
        assert!(!node.inputs.contains_key("python"), "{kernel}");
        match &node.inputs["source"] {
            Input::Source { source } => assert!(source.starts_with("csrc/stable/"), "{source}"),
            other => panic!("{kernel}: {other:?}"),
        }
    }
    // The shared kernels never see the stable defines.
    for (name, node) in &plan.nodes {
        if name.starts_with("kernel-") && !name.contains("-stable-") {
            assert!(!node.script.contains("TORCH_STABLE_ONLY"), "{name}");
        }
    }
    // Its binding: the limited API and the stable ABI, once.
    let bindings: Vec<&str> = cell.bindings.iter().map(String::as_str).collect();
    assert_eq!(bindings, ["binding-cuda130-torch211-stable"]);
    let binding = &plan.nodes[bindings[0]].script;
    for define in ["-DPy_LIMITED_API=0x03090000", "-DTORCH_STABLE_ONLY", target] {
        assert!(binding.contains(define), "{define}: {binding}");
    }
    assert!(binding.contains("csrc/stable/ops.cpp"), "{binding}");
    // Its link: torch_cpu and torch_cuda as needed, never c10 or libtorch.
    let links: Vec<&str> = cell.links.iter().map(String::as_str).collect();
    assert_eq!(links, ["link-cu13-stable"]);
    let link = &plan.nodes[links[0]].script;
    assert!(
        link.contains("-Wl,--as-needed -ltorch_cpu -ltorch_cuda"),
        "{link}"
    );
    for lib in ["-lc10", "-ltorch ", "-ltorch_python"] {
        assert!(!link.contains(lib), "{lib}: {link}");
    }
    assert!(link.contains("_C.abi3.so"), "{link}");
    // The torch-library cell of the same compiler set links c10 as before.
    let library = &plan.nodes["link-cu130-abi3-torch211"].script;
    assert!(library.contains("-lc10 -ltorch -ltorch_cpu"), "{library}");
}

#[test]
fn no_kernel_node_sees_python() {
    let plan = demo_plan();
    let lock = demo_lock();
    for node in plan
        .nodes
        .values()
        .filter(|n| n.name.starts_with("kernel-"))
    {
        let vars: Vec<&str> = node.inputs.keys().map(String::as_str).collect();
        assert_eq!(
            vars,
            [
                "cuda",
                "gcc",
                "header0",
                "header1",
                "header2",
                "header3",
                "source",
                "torchHeaders"
            ],
            "{}",
            node.name
        );
        for input in node.inputs.values() {
            match input {
                Input::Toolchain { toolchain, output } => {
                    let kind = &lock.toolchains[toolchain];
                    assert!(
                        matches!(kind, Toolchain::Gcc { .. } | Toolchain::Cuda(_))
                            || (matches!(kind, Toolchain::Torch { .. })
                                && output.as_deref() == Some("headers")),
                        "{}: {toolchain} {output:?}",
                        node.name
                    );
                }
                Input::Source { source } => {
                    assert!(source.starts_with("csrc/"), "{}: {source}", node.name)
                }
                Input::Node { node: other } => panic!("{} depends on {other}", node.name),
                Input::Driver { .. } => panic!("{} runs the driver", node.name),
            }
        }
        // Nothing the compiler is given names Python: the flags (the
        // `nvcc_compile` function) and the nvcc lines.
        let flags = &node.script[node.script.find("nvcc_compile() {").unwrap()..];
        let mentions: Vec<&str> = flags
            .lines()
            .filter(|l| !l.contains("python_h"))
            .filter(|l| l.to_lowercase().contains("python"))
            .collect();
        assert!(mentions.is_empty(), "{}: {mentions:?}", node.name);
    }
}

#[test]
fn nvcc_flags_follow_torch_and_carry_the_configured_gencode_set() {
    let plan = demo_plan();
    let script = &plan.nodes["kernel-cuda130-torch211-bias_gelu"].script;
    let words: Vec<&str> = script.split_whitespace().collect();
    let gencodes: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| w.starts_with("-gencode"))
        .collect();
    // CUDA 13.0's list: "8.0", "9.0a", "9.0+PTX".
    assert_eq!(
        gencodes,
        [
            "-gencode=arch=compute_80,code=sm_80",
            "-gencode=arch=compute_90a,code=sm_90a",
            "-gencode=arch=compute_90,code=sm_90",
            "-gencode=arch=compute_90,code=compute_90",
        ]
    );
    for flag in [
        "-D__CUDA_NO_HALF_OPERATORS__",
        "-D__CUDA_NO_HALF_CONVERSIONS__",
        "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
        "-D__CUDA_NO_HALF2_OPERATORS__",
        "--expt-relaxed-constexpr",
        "-fPIC",
        "-std=c++17",
        "-DTORCH_EXTENSION_NAME=_C",
        "-D_GLIBCXX_USE_CXX11_ABI=1",
        "\"$gcc\"/bin/g++",
        "\"$torchHeaders\"/torch/csrc/api/include",
        "-Icsrc/include",
        "-objtemp",
        "--frandom-seed=csrc/kernels/bias_gelu.cu",
        "--compress-mode=balance",
        "-ffile-prefix-map=\"$torchHeaders\"=torch/include",
        "-ffile-prefix-map=\"$cuda\"=cuda",
    ] {
        assert!(words.contains(&flag), "{flag} missing from:\n{script}");
    }
    // TORCH_API_INCLUDE_EXTENSION_H makes <torch/torch.h> include Python.h:
    // not for kernels (torch-cluster's include <torch/torch.h>).
    for flag in [
        "PYBIND11",
        "Py_LIMITED_API",
        "TORCH_API_INCLUDE_EXTENSION_H",
    ] {
        assert!(!script.contains(flag), "{flag} in:\n{script}");
    }
    // pybind11 bindings only: under Py_LIMITED_API the pybind11 that
    // <torch/torch.h> would then include does not compile.
    let pybind11 = &plan.nodes["binding-cuda130-torch211-py313"].script;
    assert!(
        pybind11.contains("-DTORCH_API_INCLUDE_EXTENSION_H"),
        "{pybind11}"
    );
    let abi3 = &plan.nodes["binding-cuda130-torch211-abi3"].script;
    assert!(
        abi3.contains("-DPy_LIMITED_API") && !abi3.contains("TORCH_API_INCLUDE_EXTENSION_H"),
        "{abi3}"
    );
    // CUDA 12.5's nvcc has neither --frandom-seed nor --compress-mode.
    let old = &plan.nodes["kernel-cuda125-torch27-bias_gelu"].script;
    assert!(
        !old.contains("--frandom-seed") && !old.contains("--compress-mode"),
        "{old}"
    );
    assert!(old.contains("-objtemp"), "{old}");
}

#[test]
fn several_gencodes_compile_one_target_at_a_time() {
    let plan = demo_plan();
    let script = &plan.nodes["kernel-cuda130-torch211-bias_gelu"].script;
    let compile = script
        .lines()
        .find(|l| l.contains(" -c -o "))
        .unwrap_or_else(|| panic!("no compile line in:\n{script}"));
    // Nix runs a build per core: nvcc's own threads would multiply them.
    assert!(compile.contains("--threads 1 "), "{compile}");
    assert_eq!(script.matches("--threads").count(), 1, "{script}");
    // One gencode: nothing for threads to share.
    let mut one = config(
        "cuda = [\"13.0\"]\npython = [\"3.13\"]\ntorch = [\"2.11\"]",
        "",
    );
    one.cuda_archs = cuwheel::spec::CudaArchs::uniform(vec!["8.0".parse().unwrap()]);
    let (lock, cells) = lock_for(&one, &|_| "torch211");
    let plan = plan_of(&one, &["k/a.cu"], &lock, &cells).unwrap();
    let script = &plan.nodes["kernel-cuda130-a"].script;
    assert!(!script.contains("--threads"), "{script}");
}

#[test]
fn scripts_are_valid_sh() {
    for node in demo_plan().nodes.values() {
        let out = Command::new("sh")
            .args(["-n", "-c", &node.script])
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "{}: {}",
            node.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_json_is_deterministic_sorted_and_reads_back() {
    let plan = demo_plan();
    let json = plan.to_json();
    assert_eq!(json, demo_plan().to_json());
    assert!(json.ends_with("}\n"));
    let back: Plan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, plan);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let input = &value["nodes"]["kernel-cuda130-torch211-axpby"]["inputs"];
    assert_eq!(
        input["torchHeaders"],
        serde_json::json!({"toolchain": "torch211", "output": "headers"})
    );
    assert_eq!(input["cuda"], serde_json::json!({"toolchain": "cuda130"}));
    assert_eq!(
        input["source"],
        serde_json::json!({"source": "csrc/kernels/axpby.cu"})
    );
    // Keys in sorted order, as printed.
    let at = |key: &str| json.find(&format!("\"{key}\"")).unwrap();
    assert!(at("cells") < at("nodes"));
    assert!(at("kernel-cuda125-torch27-axpby") < at("kernel-cuda130-torch211-axpby"));
}

#[test]
fn user_defines_and_flags_are_quoted_and_a_user_standard_replaces_cxx17() {
    let config = config(
        "cuda = [\"13.0\"]\npython = [\"3.13\"]\ntorch = [\"2.11\"]",
        "defines = [\"MSG=a b\", \"FAST\"]\nnvcc-flags = [\"-std=c++20\", \"--use_fast_math\"]\n",
    );
    let (lock, cells) = lock_for(&config, &|_| "torch211");
    let plan = plan_of(&config, &["k/a.cu"], &lock, &cells).unwrap();
    let script = &plan.nodes["kernel-cuda130-a"].script;
    assert!(script.contains("'-DMSG=a b'"), "{script}");
    assert!(script.contains("-DFAST \\"), "{script}");
    assert!(
        script.contains("-std=c++20") && !script.contains("-std=c++17"),
        "{script}"
    );
    assert!(script.contains("--use_fast_math"), "{script}");
    assert!(
        !plan.nodes["kernel-cuda130-a"]
            .inputs
            .contains_key("include0")
    );
}

#[test]
fn nvcc_flags_keyed_by_toolkit_reach_only_that_toolkits_compiles() {
    let config = config(
        "python = [\"3.13\"]\ntorch = [\"2.11\", \"2.9\"]",
        "nvcc-flags = { default = [\"-O3\"], \"13\" = [\"-O3\", \"-DCUDA13\", \"-lineinfo\"] }\n",
    );
    let (lock, cells) = lock_for(&config, &|torch| {
        if torch.contains("211") {
            "torch211"
        } else {
            "torch29"
        }
    });
    let plan = plan_of(&config, &["k/a.cu"], &lock, &cells).unwrap();
    let names = kernel_names(&plan);
    let (cuda13, cuda12): (Vec<&str>, Vec<&str>) =
        names.iter().partition(|n| n.starts_with("kernel-cuda13"));
    assert_eq!((cuda13.len(), cuda12.len()), (1, 1), "{names:?}");
    let new = &plan.nodes[cuda13[0]].script;
    let old = &plan.nodes[cuda12[0]].script;
    // The flag lines of the `nvcc_compile` function.
    assert!(new.contains("    -DCUDA13 \\\n    -lineinfo \\\n"), "{new}");
    assert!(
        !old.contains("-DCUDA13") && !old.contains("    -lineinfo \\\n"),
        "{old}"
    );
    assert!(old.contains("-O3"), "{old}");
    // Only the toolkit asked for line info compiles with every path mapped.
    assert!(new.contains("Device line info records absolute paths"));
    assert!(!old.contains("Device line info records absolute paths"));
}

#[test]
fn names_stay_unique_across_torches_and_same_named_sources() {
    let config = config(
        "python = [\"3.13\"]\ntorch = [\"2.11\", \">=2.14,<=2.14\"]",
        "",
    );
    let (lock, cells) = lock_for(&config, &|torch| {
        if torch == "torch211" {
            "torch211"
        } else {
            "torch214"
        }
    });
    let plan = plan_of(&config, &["k/a/x.cu", "k/b/x.cu", "k/y.cu"], &lock, &cells).unwrap();
    assert_eq!(
        kernel_names(&plan),
        [
            "kernel-cuda130-torch211-k-a-x",
            "kernel-cuda130-torch211-k-b-x",
            "kernel-cuda130-torch211-y",
            "kernel-cuda130-torch214-k-a-x",
            "kernel-cuda130-torch214-k-b-x",
            "kernel-cuda130-torch214-y",
        ]
    );
    assert_eq!(
        plan.sharing().to_string(),
        "3 kernels × 2 toolkits = 6 compiles serve 2 wheels; a per-cell build would do 6"
    );
}

#[test]
fn a_cell_missing_from_the_lock_says_to_lock_again() {
    let config = config(
        "cuda = [\"13.0\"]\npython = [\"3.13\"]\ntorch = [\"2.11\"]",
        "",
    );
    let (mut lock, cells) = lock_for(&config, &|_| "torch211");
    lock.cells.clear();
    let err = plan_of(&config, &["k/a.cu"], &lock, &cells).unwrap_err();
    assert!(matches!(err, PlanError::CellNotLocked { .. }));
    let message = err.to_string();
    assert!(
        message.contains("cu130-py313") && message.contains("run `cuwheel lock`"),
        "{message}"
    );
}

#[test]
fn a_source_outside_the_project_is_refused() {
    let config = config(
        "cuda = [\"13.0\"]\npython = [\"3.13\"]\ntorch = [\"2.11\"]",
        "",
    );
    let (lock, cells) = lock_for(&config, &|_| "torch211");
    let err = plan_of(&config, &["../k/a.cu"], &lock, &cells).unwrap_err();
    assert!(err.to_string().contains("../k/a.cu"), "{err}");
}

#[test]
fn cuwheel_plan_prints_the_cells_the_shared_objects_and_the_arithmetic() {
    // Without asking Nix what is built (tests/it/wheels_nix.rs does).
    let text = plan_without_store(&demo());
    assert!(text.starts_with("cells (29):\n"), "{text}");
    assert!(
        text.contains(
            "  cu13-stable  demo_ext-0.1.0+cu13-cp39-abi3-manylinux_2_28_x86_64.whl  \
             (torch 2.11.0, nvcc 13.0)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "  cu126-py313  demo_ext-0.1.0+pt27cu126-cp313-cp313-manylinux_2_28_x86_64.whl  \
             (torch 2.7.1, nvcc 12.5)\n"
        ),
        "{text}"
    );
    assert!(text.contains("wheel names are predicted"), "{text}");
    assert!(
        text.contains(
            "  kernel-cuda132-bias_gelu  shared by cu132-abi3 cu132-py311 cu132-py312 \
             cu132-py313 cu132-py314\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            "27 compiles of 7 kernels with 6 compiler sets serve 29 wheels; a per-cell build \
             would do 115\n"
        ),
        "{text}"
    );
    let json = Command::new(crate::common::cuwheel_bin())
        .args(["plan", "--json", "--project"])
        .arg(demo())
        .output()
        .expect("cuwheel runs");
    assert_eq!(
        String::from_utf8(json.stdout).unwrap(),
        demo_plan().to_json()
    );
}

#[test]
fn cuwheel_plan_without_a_lock_says_to_run_cuwheel_lock() {
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "pyproject.toml",
        "csrc/kernels/axpby.cu",
        "csrc/bindings.cpp",
        "csrc/ops.cpp",
        "csrc/stable/ops.cpp",
        "csrc/stable/axpby.cu",
    ] {
        let to = dir.path().join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(demo().join(file), to).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("csrc/include")).unwrap();
    let out = Command::new(crate::common::cuwheel_bin())
        .args(["plan", "--project"])
        .arg(dir.path())
        .output()
        .expect("cuwheel runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cuwheel.lock") && stderr.contains("run `cuwheel lock`"),
        "{stderr}"
    );
}

#[test]
fn a_kernel_symlinked_outside_the_project_is_refused_as_json_too() {
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let mut todo = vec![demo()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let to = project.path().join(path.strip_prefix(demo()).unwrap());
            if path.is_dir() {
                std::fs::create_dir_all(&to).unwrap();
                todo.push(path);
            } else {
                std::fs::copy(&path, &to).unwrap();
            }
        }
    }
    let kernel = project.path().join("csrc/kernels/axpby.cu");
    let elsewhere = outside.path().join("axpby.cu");
    std::fs::rename(&kernel, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &kernel).unwrap();
    for json in [false, true] {
        let mut cmd = Command::new(crate::common::cuwheel_bin());
        cmd.args(["plan", "--no-store", "--project"])
            .arg(project.path());
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().expect("cuwheel runs");
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("csrc/kernels/axpby.cu resolves to")
                && stderr.contains("outside the project")
                && stderr.contains("copy the file into the project"),
            "{stderr}"
        );
        if json {
            let error: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(
                error["error"]
                    .as_str()
                    .unwrap()
                    .contains("outside the project"),
                "{error}"
            );
        }
    }
    // The same file copied in plans.
    std::fs::remove_file(&kernel).unwrap();
    std::fs::copy(&elsewhere, &kernel).unwrap();
    plan_without_store(project.path());
}

/// `cuwheel plan --no-store --project DIR`, which must succeed; its stdout.
fn plan_without_store(project: &std::path::Path) -> String {
    let out = Command::new(crate::common::cuwheel_bin())
        .args(["plan", "--no-store", "--project"])
        .arg(project)
        .output()
        .expect("cuwheel runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn headers_beside_a_tu_are_inputs_of_its_objects_only() {
    let config = config(
        "cuda = [\"13.0\"]\npython = [\"3.13\"]\ntorch = [\"2.11\"]",
        "",
    );
    let (lock, cells) = lock_for(&config, &|_| "torch211");
    let with_header = TranslationUnit {
        path: "k/a.cu".into(),
        headers: ["common/math.cuh".into(), "k/util.cuh".into()].into(),
        computed_include: None,
    };
    let sources = vec![with_header, TranslationUnit::alone("k/b.cu")];
    let plan = Plan::new(
        &config,
        &pybind11_sources(sources),
        &cells,
        &lock,
        Path::new("cuwheel.lock"),
    )
    .unwrap();
    let a = &plan.nodes["kernel-cuda130-a"];
    assert_eq!(
        a.inputs["header0"],
        Input::Source {
            source: "common/math.cuh".into()
        }
    );
    assert_eq!(
        a.inputs["header1"],
        Input::Source {
            source: "k/util.cuh".into()
        }
    );
    assert!(a.script.contains("mkdir -p common k\n"), "{}", a.script);
    assert!(
        a.script.contains("cp \"$header1\" k/util.cuh\n"),
        "{}",
        a.script
    );
    let b = &plan.nodes["kernel-cuda130-b"];
    assert!(
        !b.inputs.keys().any(|k| k.starts_with("header")),
        "{:?}",
        b.inputs
    );
}

#[test]
fn bindings_see_one_python_and_abi3_ones_the_limited_api() {
    let plan = demo_plan();
    let cell = &plan.cells["cu130-py313-torch211"];
    assert_eq!(
        cell.bindings,
        ["binding-cuda130-torch211-py313".to_string()].into()
    );
    assert_eq!(
        cell.predicted_wheel_file,
        "demo_ext-0.1.0+pt211cu130-cp313-cp313-manylinux_2_28_x86_64.whl"
    );
    assert_eq!(cell.platform.least_compatible, "manylinux_2_31_x86_64");
    assert_eq!(cell.platform.most_compatible, "manylinux_2_28_x86_64");
    let binding = &plan.nodes["binding-cuda130-torch211-py313"];
    assert_eq!(
        binding.inputs["python"],
        Input::Toolchain {
            toolchain: "python313".into(),
            output: None
        }
    );
    assert!(
        binding.script.contains("csrc/bindings.cpp"),
        "{}",
        binding.script
    );
    assert!(
        !binding.script.contains("Py_LIMITED_API"),
        "{}",
        binding.script
    );
    // abi3: the limited API of 3.9, compiled against the bundle's oldest Python.
    let abi3 = &plan.cells["cu130-abi3-torch211"];
    assert_eq!(
        abi3.predicted_wheel_file,
        "demo_ext-0.1.0+pt211cu130-cp39-abi3-manylinux_2_28_x86_64.whl"
    );
    let binding = &plan.nodes["binding-cuda130-torch211-abi3"];
    assert_eq!(
        abi3.bindings,
        ["binding-cuda130-torch211-abi3".to_string()].into()
    );
    assert!(
        binding.script.contains("-DPy_LIMITED_API=0x03090000"),
        "{}",
        binding.script
    );
    assert!(
        binding.script.contains("csrc/ops.cpp"),
        "{}",
        binding.script
    );
    assert_eq!(
        binding.inputs["python"],
        Input::Toolchain {
            toolchain: "python311".into(),
            output: None
        }
    );
    // The links: every kernel object of the toolkit, torch_python only for pybind11.
    for (name, cell) in &plan.cells {
        assert_eq!(cell.links.len(), 1, "{name}");
        let link = &plan.nodes[cell.links.first().unwrap()];
        let kernels: BTreeSet<String> = link
            .inputs
            .values()
            .filter_map(|input| match input {
                Input::Node { node } if node.starts_with("kernel-") => Some(node.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(kernels, cell.kernels, "{name}");
        assert_eq!(
            link.script.contains("-ltorch_python"),
            cell.flavour == BindingFlavour::Pybind11,
            "{name}: {}",
            link.script
        );
        assert!(!link.script.contains("rpath"), "{}", link.script);
        // The wheel and audit nodes run the driver; the audit takes the wheel.
        let wheel = &plan.nodes[&cell.wheel];
        assert_eq!(wheel.inputs["cuwheel"], Input::Driver { driver: true });
        assert!(wheel.script.contains("\"torch>=2."), "{}", wheel.script);
        let audit = &plan.nodes[&cell.audit];
        assert_eq!(
            audit.inputs["wheel"],
            Input::Node {
                node: cell.wheel.clone()
            }
        );
    }
}

#[test]
fn the_recipe_pins_torch_and_records_the_provenance() {
    let plan = demo_plan();
    let script = &plan.nodes["wheel-cu126-py312"].script;
    let start = script.find("<<'CUWHEEL_RECIPE'\n").unwrap() + "<<'CUWHEEL_RECIPE'\n".len();
    let end = script.find("CUWHEEL_RECIPE\n\"").unwrap();
    let recipe: cuwheel::build::WheelRecipe = serde_json::from_str(&script[start..end]).unwrap();
    assert_eq!(recipe.metadata.version.to_string(), "0.1.0+pt27cu126");
    assert_eq!(recipe.tag, "cp312-cp312");
    assert_eq!(recipe.platform.most_compatible, "manylinux_2_28_x86_64");
    assert_eq!(recipe.metadata.requires_dist, ["torch>=2.7,<2.8"]);
    assert_eq!(recipe.metadata.requires_python.as_deref(), Some(">=3.9"));
    assert_eq!(
        recipe.metadata.license_expression.as_deref(),
        Some("MIT OR Apache-2.0")
    );
    let p = &recipe.provenance;
    assert_eq!(p.cell, "cu126-py312");
    // The nvcc is not the CUDA the cell serves, and the provenance says so.
    assert_eq!(p.nvcc, "12.5");
    assert_eq!(p.cuda_archs, ["8.0", "9.0+PTX"]);
    let pyproject = std::fs::read_to_string(demo().join("pyproject.toml")).unwrap();
    assert_eq!(
        p.config_sha256,
        cuwheel::build::provenance::shaping_config_sha256(&toml::from_str(&pyproject).unwrap())
    );
    // pyproject.toml is recorded by what it gives the cell, not by its bytes.
    assert!(!p.sources.contains_key("pyproject.toml"));
    for file in [
        "csrc/kernels/axpby.cu",
        "csrc/bindings.cpp",
        "csrc/include/demo_ext/ops.h",
        "demo_ext/ops.py",
    ] {
        assert!(
            p.sources.contains_key(file),
            "{file}: {:?}",
            p.sources.keys()
        );
    }
    assert_eq!(
        p.source_sha256,
        cuwheel::build::Provenance::source_sha256(&p.sources)
    );
    // Each toolchain by what it is made of: the torch wheel and its headers'
    // NAR hash; the seeds by their NAR hashes; nothing else of the lock.
    let lock = demo_lock();
    let Toolchain::Torch {
        artifacts,
        headers_nar_sha256,
        ..
    } = &lock.toolchains["torch27"]
    else {
        panic!("torch27 is a torch toolchain");
    };
    let torch = &p.toolchains["torch"];
    assert_eq!(torch.headers_nar_sha256.as_ref(), Some(headers_nar_sha256));
    assert_eq!(
        torch.artifacts.keys().collect::<Vec<_>>(),
        artifacts.iter().collect::<Vec<_>>()
    );
    assert_eq!(
        p.toolchains.keys().collect::<Vec<_>>(),
        ["cuda", "gcc", "python", "torch"]
    );
    assert_eq!(p.seeds.len(), 2);
    assert_eq!(p.seeds["busybox"], lock.seeds["busybox"].nar_sha256);
    // The plan's cell carries the same provenance, for `cuwheel reproduce`.
    assert_eq!(&plan.cells["cu126-py312"].provenance, p);
}

#[test]
fn a_computed_include_makes_the_include_dirs_whole_inputs_and_plan_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let files = [
        (
            "pyproject.toml",
            "[project]\nname = \"x\"\nversion = \"1.0\"\n\n[tool.cuwheel]\nmodule = \"x._C\"\n\
             kernels = [\"k/*.cu\"]\ncuda-archs = [\"9.0\"]\nbaseline = \"manylinux_2_31\"\n\
             include-dirs = [\"inc\"]\nbindings = [\"b.cpp\"]\nbinding = \"pybind11\"\n\n\
             [tool.cuwheel.matrix]\npython = [\"3.13\"]\ntorch = [\"2.15\"]\n",
        ),
        ("k/named.cu", "#include <x/a.h>\n"),
        ("k/computed.cu", "#define H <x/a.h>\n#include H\n"),
        ("inc/x/a.h", "#pragma once\n"),
        ("inc/x/b.h", "#pragma once\n"),
        ("b.cpp", "#include \"inc/x/a.h\"\n"),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut lock = demo_lock();
    lock.config_sha256 = cuwheel::lock::config_sha256(&root.join("pyproject.toml")).unwrap();
    lock.write(&root.join("cuwheel.lock")).unwrap();
    let (_, project, plan) = sources::plan_project(root).unwrap();
    let inputs = |node: &str| -> Vec<String> {
        plan.nodes[node]
            .inputs
            .values()
            .filter_map(|input| match input {
                Input::Source { source } => Some(source.clone()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(inputs("kernel-cuda132-named"), ["inc/x/a.h", "k/named.cu"]);
    assert_eq!(inputs("kernel-cuda132-computed"), ["inc", "k/computed.cu"]);
    assert!(
        plan.nodes["kernel-cuda132-computed"]
            .script
            .contains("cp -R \"$include0\"/. inc/\n")
    );
    assert_eq!(
        project.whole_include_dirs(),
        [
            "k/computed.cu: the #include at k/computed.cu:2 is computed by a macro, so its objects \
          depend on every file of its module's include-dirs (write the header's name to depend \
          on it alone)"
        ]
    );
    let out = Command::new(crate::common::cuwheel_bin())
        .args(["plan", "--no-store", "--project"])
        .arg(root)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("note: k/computed.cu: the #include at k/computed.cu:2"),
        "{text}"
    );
}

#[test]
fn each_audit_reads_its_claimed_torch_and_its_compat_node_the_others_of_its_cuda_major() {
    let plan = demo_plan();
    let cell = &plan.cells["cu130-py313-torch211"];
    assert_eq!(cell.claims, BTreeSet::from(["torch211".to_string()]));
    assert!(!cell.flavour.stable_abi());
    let tables: Vec<&str> = cell.symbols.iter().map(String::as_str).collect();
    // the audit: its own torch only, so the wheel's build reads no other torch wheel
    assert_eq!(
        tables,
        [
            "symbols-cuda130",
            "symbols-gcc-bullseye",
            "symbols-torch211"
        ]
    );
    let audit = &plan.nodes[&cell.audit];
    assert!(
        audit.script.contains(
            "--torch 2.11.0=\"$torchSymbols0\" --with 'CUDA 13.0 runtime='\"$withSymbols0\" \
             --with 'baseline system (bullseye)='\"$withSymbols1\" --claims 2.11.0 \"$@\""
        ),
        "{}",
        audit.script
    );
    assert!(!audit.script.contains("--stable-abi"));
    assert!(!audit.inputs.contains_key("torchSymbols1"));
    // the compatibility node: every CUDA 13 release, oldest first, the claimed one among
    // them; CUDA 13's runtime and the baseline beside; it reads the audited wheel
    assert_eq!(cell.compat, "compat-cu130-py313-torch211");
    let compat_tables: Vec<&str> = cell.compat_symbols.iter().map(String::as_str).collect();
    assert_eq!(compat_tables, ["symbols-torch214", "symbols-torch215"]);
    let compat = &plan.nodes[&cell.compat];
    assert!(
        compat.script.contains(
            "cuwheel-build load-check --torch 2.11.0=\"$torchSymbols0\" --torch \
             2.14.1=\"$torchSymbols1\" --torch 2.15.0=\"$torchSymbols2\" --with 'CUDA 13.0 \
             runtime='\"$withSymbols0\" --with 'baseline system (bullseye)='\"$withSymbols1\" \
             --claims 2.11.0 \"$@\""
        ),
        "{}",
        compat.script
    );
    for (var, node) in [
        ("audit", cell.audit.as_str()),
        ("torchSymbols0", "symbols-torch211"),
        ("torchSymbols2", "symbols-torch215"),
        ("withSymbols0", "symbols-cuda130"),
        ("withSymbols1", "symbols-gcc-bullseye"),
    ] {
        assert_eq!(
            compat.inputs[var],
            Input::Node {
                node: node.to_string()
            }
        );
    }
    // the tables: the driver runs `cuwheel symbols` on one toolchain directory
    let torch = &plan.nodes["symbols-torch214"];
    assert!(
        torch
            .script
            .contains("\"$cuwheel\"/bin/cuwheel-build symbols \"$toolchain\"/lib -o \"$out\"")
    );
    assert_eq!(
        torch.inputs["toolchain"],
        Input::Toolchain {
            toolchain: "torch214".into(),
            output: Some("libs".into())
        }
    );
    assert!(
        plan.nodes["symbols-gcc-bullseye"]
            .script
            .contains("\"$toolchain\"/sysroot -o")
    );
    // CUDA 12 cells compare the CUDA 12 releases only
    let cu126 = &plan.cells["cu126-py313"];
    let script = &plan.nodes[&cu126.compat].script;
    assert!(
        script.contains("--torch 2.7.1=\"$torchSymbols0\" --torch 2.9.1=\"$torchSymbols1\" --with 'CUDA 12.5 runtime='"),
        "{script}"
    );
    assert!(script.contains("--claims 2.7.1 "), "{script}");
    // a cell's nodes include its audit's tables, so `reproduce --check` rebuilds them too,
    // and not the compatibility node's
    assert!(cell.nodes().any(|n| n == "symbols-torch211"));
    assert!(
        !cell
            .nodes()
            .any(|n| n == "symbols-torch215" || n == cell.compat)
    );
    // `fetch --cell` fetches the releases the audit reads; with --compat, those the
    // compatibility node compares too
    let lock = demo_lock();
    let cells = ["cu130-py313-torch211".to_string()];
    let wheel = cuwheel::fetch::select::artifacts_for_cells(&lock, &cells, false).unwrap();
    let compat = cuwheel::fetch::select::artifacts_for_cells(&lock, &cells, true).unwrap();
    let torch = |name: &str| match &lock.toolchains[name] {
        Toolchain::Torch { artifacts, .. } => artifacts.clone(),
        _ => panic!("{name} is a torch toolchain"),
    };
    assert!(
        torch("torch211").iter().all(|a| wheel.contains(a)),
        "{wheel:?}"
    );
    for other in ["torch214", "torch215"] {
        assert!(torch(other).iter().all(|a| !wheel.contains(a)), "{wheel:?}");
        assert!(
            torch(other).iter().all(|a| compat.contains(a)),
            "{compat:?}"
        );
    }
    assert!(wheel.is_subset(&compat));
}

#[test]
fn arch_and_family_specific_targets_reach_nvcc_and_the_provenance() {
    let mut specific = config(
        "cuda = [\"13.0\"]\npython = [\"3.13\"]\ntorch = [\"2.11\"]",
        "",
    );
    let archs: Vec<cuwheel::spec::CudaArch> = ["8.0", "9.0a", "10.0f+PTX"]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
    specific.cuda_archs = cuwheel::spec::CudaArchs::uniform(archs);
    let (lock, cells) = lock_for(&specific, &|_| "torch211");
    let plan = plan_of(&specific, &["k/a.cu"], &lock, &cells).unwrap();
    let script = &plan.nodes["kernel-cuda130-a"].script;
    let gencodes: Vec<&str> = script
        .split_whitespace()
        .filter(|w| w.starts_with("-gencode"))
        .collect();
    assert_eq!(
        gencodes,
        [
            "-gencode=arch=compute_80,code=sm_80",
            "-gencode=arch=compute_90a,code=sm_90a",
            "-gencode=arch=compute_100f,code=sm_100f",
            "-gencode=arch=compute_100f,code=compute_100f",
        ]
    );
    // The provenance records them as written, and the audit reads them back.
    let wheel = plan
        .nodes
        .keys()
        .find(|name| name.starts_with("wheel-"))
        .expect("a wheel node");
    let script = &plan.nodes[wheel].script;
    let start = script.find("<<'CUWHEEL_RECIPE'\n").unwrap() + "<<'CUWHEEL_RECIPE'\n".len();
    let end = script.find("CUWHEEL_RECIPE\n\"").unwrap();
    let recipe: cuwheel::build::WheelRecipe = serde_json::from_str(&script[start..end]).unwrap();
    assert_eq!(recipe.provenance.cuda_archs, ["8.0", "9.0a", "10.0f+PTX"]);
    let json = serde_json::to_vec(&recipe.provenance).unwrap();
    let expected = cuwheel::audit::archs::ExpectedArchs::from_provenance(&json)
        .unwrap()
        .unwrap();
    assert_eq!(
        cuwheel::audit::fatbin::image_names(&expected.sass, &expected.ptx),
        ["sm_80", "sm_90a", "sm_100f", "compute_100f"]
    );
}

#[test]
fn modules_that_end_alike_get_their_whole_name_in_node_names() {
    // torch-harmonics' shape: `torch_harmonics.disco._C` and
    // `torch_harmonics.attention._C`, beside a module ending otherwise.
    let module = |name: &str, dir: &str| {
        format!(
            "[[tool.cuwheel.modules]]\nname = \"{name}\"\nkernels = [\"{dir}/*.cu\"]\n\
             bindings = [\"{dir}/b.cpp\"]\nbinding = \"pybind11\"\n\n"
        )
    };
    let text = format!(
        "[project]\nname = \"x\"\nversion = \"1.0\"\n\n[tool.cuwheel]\ncuda-archs = [\"9.0\"]\n\
         baseline = \"manylinux_2_31\"\n\n{}{}{}[tool.cuwheel.matrix]\npython = [\"3.13\"]\n\
         torch = [\"2.11\"]\n",
        module("x.disco._C", "disco"),
        module("x.attention._C", "attention"),
        module("x.helpers", "helpers"),
    );
    let config = Config::parse(&text, Path::new("pyproject.toml")).unwrap();
    let (lock, cells) = lock_for(&config, &|_| "torch211");
    // The same file name, `k.cu`, in each module's directory.
    let module_sources = |dir: &str| ModuleSources {
        kernels: vec![TranslationUnit::alone(format!("{dir}/k.cu"))],
        bindings: [(
            BindingFlavour::Pybind11,
            vec![TranslationUnit::alone(format!("{dir}/b.cpp"))],
        )]
        .into(),
        flavour_kernels: Default::default(),
    };
    let project = ProjectSources {
        modules: vec![
            module_sources("disco"),
            module_sources("attention"),
            module_sources("helpers"),
        ],
        ..ProjectSources::default()
    };
    let plan = Plan::new(&config, &project, &cells, &lock, Path::new("cuwheel.lock")).unwrap();
    let cell = plan.cells.values().next().unwrap();
    assert_eq!(
        cell.links.iter().map(String::as_str).collect::<Vec<_>>(),
        [
            "link-helpers-cu130-py313",
            "link-x.attention._C-cu130-py313",
            "link-x.disco._C-cu130-py313",
        ]
    );
    assert_eq!(cell.bindings.len(), 3, "{:?}", cell.bindings);
    // Same-named sources get their directories (as for one module).
    assert_eq!(
        cell.kernels.iter().map(String::as_str).collect::<Vec<_>>(),
        [
            "kernel-cuda130-attention-k",
            "kernel-cuda130-disco-k",
            "kernel-cuda130-helpers-k",
        ]
    );
    // Each shared object in its own package directory, named by the leaf.
    let wheel = &plan.nodes[&cell.wheel].script;
    for member in [
        "x/disco/_C.cpython-313-x86_64-linux-gnu.so",
        "x/attention/_C.cpython-313-x86_64-linux-gnu.so",
        "x/helpers.cpython-313-x86_64-linux-gnu.so",
    ] {
        assert!(wheel.contains(member), "{member}: {wheel}");
    }
}

#[test]
fn no_python_abi_suffix_names_the_module_file_as_torch_does() {
    let matrix = "cuda = [\"13.0\"]\npython = [\"3.13\"]\ntorch = [\"2.11\"]";
    let plain = config(matrix, "no-python-abi-suffix = true\n");
    let (lock, cells) = lock_for(&plain, &|_| "torch211");
    let plan = plan_of(&plain, &["k/a.cu"], &lock, &cells).unwrap();
    let link = &plan.nodes["link-cu130-py313"].script;
    assert!(link.contains("-o \"$out\"/_C.so \\"), "{link}");
    let wheel = &plan.nodes["wheel-cu130-py313"].script;
    assert!(
        wheel.contains("x/_C.so") && !wheel.contains("cpython-313"),
        "{wheel}"
    );
    // The same project without the key: the name setuptools gives.
    let suffixed = config(matrix, "");
    let plan = plan_of(&suffixed, &["k/a.cu"], &lock, &cells).unwrap();
    let link = &plan.nodes["link-cu130-py313"].script;
    assert!(
        link.contains("_C.cpython-313-x86_64-linux-gnu.so"),
        "{link}"
    );
}

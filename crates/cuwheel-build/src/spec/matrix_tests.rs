//! Unit tests of [`super`]: the cells a matrix expands to with fabricated
//! facts, and their names.

use super::*;
use crate::spec::facts::fabricated;

fn config(matrix: &str, bindings: &str) -> Config {
    test_config(matrix, bindings)
}

const BOTH: &str = "pybind11 = [\"csrc/bindings.cpp\"]\ntorch-library = [\"csrc/ops.cpp\"]";
const PYTHONS: [&str; 5] = ["3.11", "3.12", "3.13", "3.13t", "3.14"];

/// What the package index serves, as read in November 2026: torch 2.7 is
/// CUDA 12.6 without cp314, 2.9 is 12.8, 2.11 to 2.14 are 13.0, 2.15 is 13.2.
fn index() -> MatrixFacts {
    let old: &[&str] = &["3.11", "3.12", "3.13", "3.13t"];
    let new: &[&str] = &["3.11", "3.12", "3.13", "3.14"];
    fabricated(
        &[
            ("2.7", "12.6", old),
            ("2.9", "12.8", new),
            ("2.11", "13.0", new),
            ("2.12", "13.0", new),
            ("2.13", "13.0", new),
            ("2.14", "13.0", new),
            ("2.15", "13.2", new),
        ],
        &PYTHONS,
        &["11.8", "12.4", "12.5", "13.0", "13.1", "13.2", "13.5"],
    )
}

fn names(expansion: &Expansion) -> Vec<String> {
    assert!(expansion.problems.is_empty(), "{:#?}", expansion.problems);
    expansion
        .cells
        .iter()
        .map(|cell| cell.to_string())
        .collect()
}

fn problems(expansion: &Expansion) -> Vec<String> {
    expansion
        .problems
        .iter()
        .map(|p| format!("{}: {} / {}", p.at.key, p.problem, p.fix))
        .collect()
}

#[test]
fn cells_are_named_for_the_torch_they_serve_and_pick_their_nvcc() {
    let matrix = config(
        r#"torch = ["2.7", "2.15"]
python = ["3.12", "3.13"]"#,
        "pybind11 = [\"csrc/bindings.cpp\"]",
    );
    let expansion = expand(&matrix, &index());
    assert_eq!(
        names(&expansion),
        ["cu126-py312", "cu126-py313", "cu132-py312", "cu132-py313"]
    );
    let nvcc: Vec<String> = expansion.cells.iter().map(|c| c.nvcc.to_string()).collect();
    // torch 2.7's CUDA 12.6 has no nvcc here: Debian's 12.5 is the newest
    // 12.x not newer than it.
    assert_eq!(nvcc, ["12.5", "12.5", "13.2", "13.2"]);
    assert_eq!(expansion.cells[0].local_label(), "pt27cu126");
}

#[test]
fn a_named_nvcc_replaces_the_default_for_its_cuda() {
    let matrix = config(
        r#"torch = ["2.7", "2.9"]
python = ["3.13"]
nvcc = { cu126 = "12.4" }"#,
        "pybind11 = [\"csrc/bindings.cpp\"]",
    );
    let expansion = expand(&matrix, &index());
    let shown: Vec<String> = expansion
        .cells
        .iter()
        .map(|c| format!("{c} {}", c.nvcc))
        .collect();
    assert_eq!(shown, ["cu126-py313 12.4", "cu128-py313 12.5"]);
}

#[test]
fn ranges_take_the_released_minors_and_two_torches_of_a_cuda_carry_the_suffix() {
    let matrix = config(
        r#"torch = ["2.11", ">=2.13,<2.15"]
python = ["3.13"]
exclude = [{ torch = "2.14", binding = "torch-library" }]"#,
        BOTH,
    );
    let expansion = expand(&matrix, &index());
    assert_eq!(
        names(&expansion),
        [
            "cu130-abi3-torch211",
            "cu130-py313-torch211",
            "cu130-abi3-torch213",
            "cu130-py313-torch213",
            "cu130-py313-torch214",
        ]
    );
}

#[test]
fn pythons_sort_numerically_with_abi3_first_and_free_threaded_after_their_version() {
    let matrix = config(
        "torch = [\"2.7\"]\npython = [\"3.13t\", \"3.11\", \"3.13\"]",
        BOTH,
    );
    assert_eq!(
        names(&expand(&matrix, &index())),
        ["cu126-abi3", "cu126-py311", "cu126-py313", "cu126-py313t"]
    );
}

#[test]
fn the_cuda_list_keeps_the_cells_serving_it() {
    let matrix = config(
        "torch = [\">=2.9,<=2.11\"]\npython = [\"3.13\"]\ncuda = [\"13.0\"]",
        "pybind11 = [\"csrc/bindings.cpp\"]",
    );
    assert_eq!(names(&expand(&matrix, &index())), ["cu130-py313"]);
}

/// The matrix written before cells were named for torch: `cuda` listed the
/// nvcc (12.4 for torch 2.9, whose wheels are CUDA 12.8).
#[test]
fn a_cuda_no_torch_serves_says_how_to_name_the_nvcc() {
    let matrix = config(
        r#"cuda = ["13.0", "12.4"]
python = ["3.13"]
torch = ["2.11", "2.9"]
exclude = [{ cuda = "13.0", torch = "2.9" }, { cuda = "12.4", torch = "2.11" }]"#,
        "pybind11 = [\"csrc/bindings.cpp\"]",
    );
    let found = problems(&expand(&matrix, &index()));
    assert!(
        found[0].starts_with(
            "tool.cuwheel.matrix.cuda[1]: no torch of the matrix is built for CUDA 12.4 (torch \
             2.9: CUDA 12.8, torch 2.11: CUDA 13.0); a cell is named for the CUDA of the torch \
             build it serves, not for its nvcc"
        ),
        "{found:#?}"
    );
    assert!(
        found[0].contains("write nvcc = { cu128 = \"12.4\" }"),
        "{found:#?}"
    );
    // Both excludes pair a torch with a CUDA it is not built for.
    assert!(found[1].starts_with("tool.cuwheel.matrix.exclude[0]: the exclude { cuda = \"13.0\", torch = \"2.9\" } matches no cell"), "{found:#?}");
    assert!(
        found[2].contains("cuda is the CUDA a cell serves: torch 2.9: CUDA 12.8"),
        "{found:#?}"
    );
}

#[test]
fn names_that_match_nothing_are_problems_where_they_are_written() {
    let matrix = config(
        r#"torch = ["2.16", ">=2.20", "2.7"]
python = ["3.13"]
nvcc = { cu130 = "13.0" }"#,
        "pybind11 = [\"csrc/bindings.cpp\"]",
    );
    let found = problems(&expand(&matrix, &index()));
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].starts_with(
            "tool.cuwheel.matrix.torch[0]: torch 2.16 has no release with a wheel for this \
             platform and Python 3.13 on the package index (as `cuwheel lock` read it); the lock \
             knows torch 2.7, 2.9"
        ),
        "{found:#?}"
    );
    assert!(
        found[1].contains("torch >=2.20 has no release"),
        "{found:#?}"
    );
    assert!(
        found[2].starts_with("tool.cuwheel.matrix.nvcc.cu130: no cell serves CUDA 13.0"),
        "{found:#?}"
    );
}

#[test]
fn excludes_that_remove_everything_are_a_problem() {
    let matrix = config(
        "torch = [\"2.7\"]\npython = [\"3.13\"]\nexclude = [{ torch = \"2.7\" }]",
        "pybind11 = [\"csrc/bindings.cpp\"]",
    );
    let found = problems(&expand(&matrix, &index()));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("remove every cell"), "{found:#?}");
}

#[test]
fn cell_identity_for_wheels() {
    let cell = Cell {
        cuda: "12.6".parse().unwrap(),
        nvcc: "12.4".parse().unwrap(),
        torch: "2.7".parse().unwrap(),
        python: Some("3.13t".parse().unwrap()),
        flavour: BindingFlavour::Pybind11,
        torch_in_name: false,
        arch: crate::wheel::Arch::X86_64,
    };
    assert_eq!(cell.local_label(), "pt27cu126");
    let version = cell.wheel_version(&Version::parse("0.1.0").unwrap());
    assert_eq!(version.to_string(), "0.1.0+pt27cu126");
    assert_eq!(cell.interpreter_abi(), "cp313-cp313t");
    assert_eq!(cell.to_string(), "cu126-py313t");
    let abi3 = Cell {
        python: None,
        flavour: BindingFlavour::TorchLibrary,
        torch_in_name: true,
        ..cell
    };
    assert_eq!(abi3.interpreter_abi(), "cp39-abi3");
    assert_eq!(abi3.to_string(), "cu126-abi3-torch27");
}

#[test]
fn cell_names_parse_back() {
    for name in [
        "cu130-py313",
        "cu130-py313t",
        "cu130-abi3",
        "cu124-py311-torch29",
        "cu124-abi3-torch211",
        "cu92-py39",
    ] {
        assert_eq!(name.parse::<CellName>().unwrap().to_string(), name);
    }
    let parsed: CellName = "cu126-py313t-torch27".parse().unwrap();
    assert_eq!(parsed.cuda, "12.6".parse().unwrap());
    assert_eq!(parsed.python, Some("3.13t".parse().unwrap()));
    assert_eq!(parsed.torch, Some("2.7".parse().unwrap()));
}

#[test]
fn bad_cell_names_say_which_part_is_wrong() {
    for (name, says) in [
        ("cu130", "1 `-`-separated parts"),
        ("cu1-py313", "`cu1` is not a CUDA label"),
        ("cuda130-py313", "`cuda130` is not a CUDA label"),
        ("cu130-cp313", "`cp313` is neither abi3"),
        ("cu130-py3", "`py3` is neither abi3"),
        ("cu130-py312t", "`py312t` is neither abi3"),
        ("cu130-py313-pt211", "`pt211` is not a torch label"),
        ("cu130-py313-torch211-x", "4 `-`-separated parts"),
        ("cu0130-py313", "`cu0130`"),
    ] {
        let err = name.parse::<CellName>().unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains(says), "{name}: {shown}");
        assert!(shown.contains("cuwheel plan"), "{shown}");
    }
}

const STABLE: &str = "torch-library = [\"csrc/ops.cpp\"]\ntorch-stable = { sources = [\"csrc/stable/ops.cpp\"], kernels = [\"csrc/stable/*.cu\"] }";

#[test]
fn one_stable_cell_per_cuda_major_built_against_its_oldest_stable_torch() {
    let matrix = config(r#"torch = ["2.7", "2.9", "2.11", ">=2.14,<=2.15"]"#, STABLE);
    let facts = index();
    let expansion = expand(&matrix, &facts);
    assert_eq!(
        names(&expansion),
        [
            "cu126-abi3",
            "cu128-abi3",
            "cu130-abi3-torch211",
            "cu13-stable",
            "cu130-abi3-torch214",
            "cu132-abi3"
        ]
    );
    // CUDA 12's torches (2.7, 2.9) predate the stable ABI: no cu12-stable.
    let stable: Vec<&Cell> = expansion.cells.iter().filter(|c| c.is_stable()).collect();
    assert_eq!(stable.len(), 1);
    let cell = stable[0];
    assert_eq!(cell.torch.to_string(), "2.11");
    assert_eq!(
        (cell.cuda.to_string(), cell.nvcc.to_string()),
        ("13.0".into(), "13.0".into())
    );
    let claimed: Vec<String> = cell
        .claimed_torches(&facts)
        .iter()
        .map(ToString::to_string)
        .collect();
    // Every matrix torch of CUDA 13 from 2.11 on (the facts are the
    // matrix's: 2.12 and 2.13 are not in its torch list).
    let matrix_facts = MatrixFacts {
        torch: facts
            .torch
            .iter()
            .filter(|(t, _)| {
                ["2.7", "2.9", "2.11", "2.14", "2.15"].contains(&t.to_string().as_str())
            })
            .map(|(t, r)| (*t, r.clone()))
            .collect(),
        toolkits: facts.toolkits.clone(),
    };
    assert_eq!(claimed, ["2.11", "2.12", "2.13", "2.14", "2.15"]);
    let claimed: Vec<String> = cell
        .claimed_torches(&matrix_facts)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(claimed, ["2.11", "2.14", "2.15"]);
    assert_eq!(cell.torch_requirement(), "torch>=2.11");
    assert_eq!(cell.local_label(), "cu13");
    assert_eq!(cell.interpreter_abi(), "cp39-abi3");
    // Other cells claim their own torch only.
    assert_eq!(expansion.cells[0].claimed_torches(&facts).len(), 1);
}

#[test]
fn the_stable_range_starts_at_the_first_torch_with_the_stable_abi() {
    let matrix = config(r#"torch = ["2.9", ">=2.12,<=2.15"]"#, STABLE);
    let expansion = expand(&matrix, &index());
    let stable: Vec<String> = expansion
        .cells
        .iter()
        .filter(|c| c.is_stable())
        .map(|c| format!("{} {}", c, c.torch))
        .collect();
    assert_eq!(stable, ["cu13-stable 2.12"]);

    // Only stable bindings and no torch >= 2.10: said so, with the fix.
    let matrix = config(
        r#"torch = ["2.7", "2.9"]"#,
        "torch-stable = [\"csrc/stable/ops.cpp\"]",
    );
    let shown = problems(&expand(&matrix, &index()));
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(
        shown[0].starts_with("tool.cuwheel.matrix.torch[1]: "),
        "{shown:#?}"
    );
    assert!(shown[0].contains("needs torch 2.10 or later"), "{shown:#?}");
    assert!(shown[0].contains("add a torch >= 2.10"), "{shown:#?}");
}

#[test]
fn excludes_drop_the_stable_cell_by_binding_or_cuda_major_never_by_torch() {
    let torch = r#"torch = ["2.11", "2.15"]"#;
    let with = |exclude: &str| {
        names(&expand(
            &config(&format!("{torch}\nexclude = [{exclude}]"), STABLE),
            &index(),
        ))
    };
    assert_eq!(
        with(r#"{ binding = "torch-stable" }"#),
        ["cu130-abi3", "cu132-abi3"]
    );
    // A torch key never matches the stable cell: it serves a range.
    assert_eq!(with(r#"{ torch = "2.11" }"#), ["cu13-stable", "cu132-abi3"]);
    // A cuda key matches the stable cell of its major.
    assert_eq!(with(r#"{ cuda = "13.2" }"#), ["cu130-abi3"]);
    // An exclude that could only match the stable cell by torch matches nothing.
    let shown = problems(&expand(
        &config(
            &format!("{torch}\nexclude = [{{ binding = \"torch-stable\", torch = \"2.11\" }}]"),
            STABLE,
        ),
        &index(),
    ));
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(shown[0].contains("matches no cell"), "{shown:#?}");
}

#[test]
fn stable_cell_names_carry_the_cuda_major() {
    let parsed: CellName = "cu13-stable".parse().unwrap();
    assert!(parsed.stable);
    assert_eq!(parsed.cuda.major, 13);
    assert_eq!(parsed.to_string(), "cu13-stable");
    for bad in ["cu130x-stable", "cu-stable", "13-stable", "cu1300-stable"] {
        let err = bad.parse::<CellName>().unwrap_err();
        assert!(err.to_string().contains("like cu13"), "{bad}: {err}");
    }
    let err = "cu13-stabel".parse::<CellName>().unwrap_err();
    assert!(err.to_string().contains("cu13-stable"), "{err}");
}

#[test]
fn aarch64_cells_are_named_apart_and_their_names_parse_back() {
    let matrix = config(
        r#"torch = ["2.11"]
python = ["3.11", "3.12"]
platforms = ["x86_64", "aarch64"]
exclude = [{ platform = "aarch64", python = "3.12" }]"#,
        BOTH,
    );
    let facts = crate::spec::facts::with_aarch64(index(), &["2.11"]);
    let expansion = expand(&matrix, &facts);
    assert_eq!(
        names(&expansion),
        [
            "cu130-abi3",
            "cu130-abi3-aarch64",
            "cu130-py311",
            "cu130-py311-aarch64",
            "cu130-py312"
        ]
    );
    for cell in &expansion.cells {
        let name = cell.name();
        assert_eq!(name.to_string().parse::<CellName>(), Ok(name));
    }
    let stable: CellName = "cu13-stable-aarch64".parse().unwrap();
    assert!(stable.stable && stable.arch == Arch::Aarch64);
    assert_eq!(stable.to_string(), "cu13-stable-aarch64");
    let err = "cu130-py313-aarch64-aarch64"
        .parse::<CellName>()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("`aarch64` is not a torch label like torch211"),
        "{err}"
    );
    // Without `platforms`, x86_64 only, as before.
    let x86 = config("torch = [\"2.11\"]\npython = [\"3.11\"]", BOTH);
    assert_eq!(names(&expand(&x86, &facts)), ["cu130-abi3", "cu130-py311"]);
}

#[test]
fn a_stable_aarch64_cell_claims_only_the_torches_with_aarch64_wheels() {
    let matrix = config(
        "torch = [\"2.11\", \"2.14\"]\nplatforms = [\"x86_64\", \"aarch64\"]",
        "torch-stable = [\"csrc/stable.cpp\"]",
    );
    let facts = crate::spec::facts::with_aarch64(index(), &["2.11"]);
    let expansion = expand(&matrix, &facts);
    assert_eq!(names(&expansion), ["cu13-stable", "cu13-stable-aarch64"]);
    let claimed = |cell: &Cell| -> Vec<String> {
        cell.claimed_torches(&facts)
            .iter()
            .map(|t| t.to_string())
            .collect()
    };
    assert_eq!(
        claimed(&expansion.cells[0]),
        ["2.11", "2.12", "2.13", "2.14", "2.15"]
    );
    assert_eq!(claimed(&expansion.cells[1]), ["2.11"]);
}

//! Unit tests of [`super`]: each rule on known answers, with fabricated
//! facts.

use super::*;
use crate::spec::facts::fabricated;
use crate::spec::matrix::test_cell;

fn baseline(name: &str) -> Baseline {
    name.parse().unwrap()
}

fn uniform(archs: &[&str]) -> CudaArchs {
    CudaArchs::uniform(archs.iter().map(|a| a.parse().unwrap()).collect())
}

fn facts() -> MatrixFacts {
    fabricated(
        &[
            ("2.7", "12.6", &["3.11", "3.13"]),
            ("2.9", "12.8", &["3.11", "3.13", "3.14"]),
            ("2.11", "13.0", &["3.11", "3.13", "3.14"]),
            ("2.15", "13.2", &["3.13", "3.14"]),
        ],
        &["3.10", "3.11", "3.13", "3.14"],
        &["11.8", "12.4", "12.5", "13.0", "13.2"],
    )
}

/// A cell serving `cuda` built with nvcc `nvcc`.
fn cell(cuda: &str, nvcc: &str, python: Option<&str>, torch: &str) -> Cell {
    Cell {
        nvcc: nvcc.parse().unwrap(),
        ..test_cell(cuda, python, torch)
    }
}

fn check(cells: &[Cell], baseline_name: &str, archs: &CudaArchs) -> Result<(), Vec<Violation>> {
    let facts = facts();
    let base = baseline(baseline_name);
    CompatTable::embedded().check(
        cells,
        &Matrix {
            facts: &facts,
            baseline: &base,
            archs,
        },
    )
}

fn only_violation(cells: &[Cell], baseline_name: &str, archs: &CudaArchs) -> Violation {
    let mut found = check(cells, baseline_name, archs).expect_err("the cells should be refused");
    assert_eq!(found.len(), 1, "{found:#?}");
    found.remove(0)
}

#[test]
fn embedded_table_holds_the_sourced_facts() {
    let table = CompatTable::embedded();
    let toolkit = |v: &str| table.toolkit(&v.parse().unwrap()).unwrap().clone();
    assert_eq!((toolkit("12.4").gcc_min, toolkit("12.4").gcc_max), (6, 13));
    assert_eq!(toolkit("13.0").gcc_max, 15);
    assert_eq!(toolkit("13.5").gcc_max, 16);
    let arch = |a: &str| a.parse::<CudaArch>().unwrap();
    assert!(toolkit("12.4").supports(&arch("9.0")));
    assert!(!toolkit("12.4").supports(&arch("12.0")));
    assert!(toolkit("13.0").supports(&arch("12.0+PTX")));
    assert!(!toolkit("13.0").supports(&arch("7.0")));
    assert!(toolkit("11.8").supports(&arch("3.5")));
    for (_, known) in table.toolkits() {
        assert!(!known.supports(&arch("3.0")));
    }
    let suite = |name: &str| table.baseline(&baseline(name)).unwrap().clone();
    assert_eq!(
        (
            suite("manylinux_2_31").debian.as_str(),
            suite("manylinux_2_31").gcc
        ),
        ("bullseye", 10)
    );
    assert_eq!(suite("manylinux_2_41").gcc, 14);
    assert!(table.sources.toolkit_gcc.contains("host_config.h"));
    assert!(table.sources.toolkit_archs.contains("--list-gpu-code"));
}

#[test]
fn the_demo_cells_are_compatible() {
    let cells = [
        cell("12.6", "12.4", Some("3.13"), "2.7"),
        cell("12.8", "12.5", None, "2.9"),
        cell("13.0", "13.0", Some("3.11"), "2.11"),
        cell("13.2", "13.2", Some("3.14"), "2.15"),
    ];
    assert_eq!(
        check(&cells, "manylinux_2_31", &uniform(&["8.0", "9.0+PTX"])),
        Ok(())
    );
}

#[test]
fn torch_python_reads_the_wheels_the_lock_found() {
    let violation = only_violation(
        &[cell("12.6", "12.4", Some("3.14"), "2.7")],
        "manylinux_2_31",
        &uniform(&["8.0"]),
    );
    assert_eq!(violation.rule, Rule::TorchPython);
    assert_eq!(
        violation.to_string(),
        "cell cu126-py314: rule torch-python: torch 2.7 (2.7.1) has no wheel for Python 3.14; of \
         the matrix's Pythons it has wheels for 3.11, 3.13 (source: the torch wheels and toolkits \
         the package index and Debian offered at `cuwheel lock`, recorded in cuwheel.lock's \
         `facts`)\n    fix: exclude the cells with { torch = \"2.7\", python = \"3.14\" } in \
         tool.cuwheel.matrix.exclude, or drop Python 3.14, or use a torch with Python 3.14 \
         wheels: 2.9, 2.11, 2.15"
    );
}

#[test]
fn a_python_the_lock_never_resolved_says_to_lock_again() {
    let violation = only_violation(
        &[cell("12.6", "12.4", Some("3.12"), "2.7")],
        "manylinux_2_31",
        &uniform(&["8.0"]),
    );
    assert_eq!(violation.rule, Rule::TorchPython);
    assert!(
        violation
            .problem
            .contains("did not resolve torch 2.7 for Python 3.12"),
        "{violation}"
    );
    assert_eq!(violation.fix, "run `cuwheel lock` again");
}

#[test]
fn toolkit_rules_check_the_nvcc_against_the_cuda_served() {
    let archs = uniform(&["8.0"]);
    let violation = only_violation(
        &[cell("13.0", "12.4", Some("3.13"), "2.11")],
        "manylinux_2_31",
        &archs,
    );
    assert_eq!(violation.rule, Rule::ToolkitMajor);
    assert!(
        violation.problem.starts_with(
            "nvcc 12.4 cannot build for torch 2.11, whose wheels use CUDA 13.0: the toolkit's \
             major version must be 13"
        ),
        "{violation}"
    );
    assert!(
        violation
            .fix
            .contains("name one of 13.0 in tool.cuwheel.matrix.nvcc.cu130"),
        "{violation}"
    );
    let violation = only_violation(
        &[cell("13.0", "13.2", Some("3.13"), "2.11")],
        "manylinux_2_31",
        &archs,
    );
    assert_eq!(violation.rule, Rule::ToolkitMinor);
    assert!(
        violation
            .problem
            .contains("could need a CUDA runtime torch does not load")
    );
    let violation = only_violation(
        &[cell("12.6", "12.6", Some("3.13"), "2.7")],
        "manylinux_2_31",
        &archs,
    );
    assert_eq!(violation.rule, Rule::ToolkitAvailable);
    assert!(
        violation.problem.starts_with(
            "nvcc 12.6 is not a toolkit cuwheel can fetch; the lock offers 11.8 (debian trixie)"
        ),
        "{violation}"
    );
    assert!(
        violation.fix.contains("name one of 12.4, 12.5 in"),
        "{violation}"
    );
}

#[test]
fn a_cuda_without_any_toolkit_of_its_major_is_refused() {
    let mut facts = facts();
    facts.toolkits.retain(|version, _| version.major == 12);
    let violation = CompatTable::embedded()
        .check(
            &[cell("13.2", "13.2", Some("3.13"), "2.15")],
            &Matrix {
                facts: &facts,
                baseline: &baseline("manylinux_2_31"),
                archs: &uniform(&["8.0"]),
            },
        )
        .unwrap_err()
        .remove(0);
    assert_eq!(violation.rule, Rule::ToolkitAvailable);
    assert!(
        violation.problem.starts_with(
            "no CUDA toolkit cuwheel can fetch builds for torch 2.15's CUDA 13.2: that needs a \
             13.x toolkit no newer than 13.2"
        ),
        "{violation}"
    );
    assert!(violation.fix.contains("{ cuda = \"13.2\" }"), "{violation}");
}

#[test]
fn gcc_range_refuses_gcc_14_with_cuda_12_4() {
    let violation = only_violation(
        &[cell("12.8", "12.4", Some("3.13"), "2.9")],
        "manylinux_2_41",
        &uniform(&["8.0"]),
    );
    assert_eq!(violation.rule, Rule::GccRange);
    assert_eq!(
        violation.problem,
        "baseline manylinux_2_41 builds with GCC 14 (Debian trixie), but nvcc 12.4 accepts GCC 6 to 13"
    );
    assert!(violation.source.contains("nvcc.nix"), "{violation}");
    assert!(violation.source.contains("release notes"), "{violation}");
    assert!(
        violation.fix.ends_with(
            "pick a baseline whose GCC it accepts: manylinux_2_28 (GCC 8), manylinux_2_31 (GCC \
             10), manylinux_2_36 (GCC 12)"
        ),
        "{violation}"
    );
    assert_eq!(
        check(
            &[cell("13.0", "13.0", Some("3.13"), "2.11")],
            "manylinux_2_41",
            &uniform(&["8.0"])
        ),
        Ok(())
    );
}

#[test]
fn cuda_archs_are_checked_against_each_nvcc() {
    // 12.0 on CUDA 12.4 is refused, naming what 12.4 supports.
    let violation = only_violation(
        &[cell("12.8", "12.4", Some("3.13"), "2.9")],
        "manylinux_2_31",
        &uniform(&["8.0", "12.0+PTX"]),
    );
    assert_eq!(violation.rule, Rule::CudaArchs);
    assert_eq!(
        violation.problem,
        "nvcc 12.4 cannot compile for 12.0+PTX (tool.cuwheel.cuda-archs); it supports 5.0, 5.2, \
         5.3, 6.0, 6.1, 6.2, 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 9.0a; 12.0+PTX needs nvcc ≥ 12.8"
    );
    assert!(violation.source.contains("--list-gpu-code"), "{violation}");
    assert!(
        violation
            .fix
            .contains("the whole list builds with nvcc 13.0, 13.1, 13.2"),
        "{violation}"
    );
    // 3.0 is refused by every toolkit.
    for (served, nvcc, torch) in [("12.8", "12.4", "2.9"), ("13.0", "13.0", "2.11")] {
        let violation = only_violation(
            &[cell(served, nvcc, Some("3.13"), torch)],
            "manylinux_2_31",
            &uniform(&["3.0", "8.0"]),
        );
        assert!(
            violation.problem.contains("cannot compile for 3.0"),
            "{violation}"
        );
        assert!(
            !violation.fix.contains("the whole list builds"),
            "{violation}"
        );
    }
    // A per-toolkit table gives 12.4 its own list.
    let archs = CudaArchs {
        default: Some(vec!["8.0".parse().unwrap(), "12.0+PTX".parse().unwrap()]),
        by_toolkit: [(
            crate::spec::archs::ToolkitKey::Major(12),
            vec!["8.0".parse().unwrap(), "9.0+PTX".parse().unwrap()],
        )]
        .into(),
    };
    assert_eq!(
        check(
            &[
                cell("12.8", "12.4", Some("3.13"), "2.9"),
                cell("13.0", "13.0", Some("3.13"), "2.11")
            ],
            "manylinux_2_31",
            &archs
        ),
        Ok(())
    );
    let only_13 = CudaArchs {
        default: None,
        ..archs
    };
    let mut by_major = only_13.clone();
    by_major.by_toolkit.clear();
    by_major.by_toolkit.insert(
        crate::spec::archs::ToolkitKey::Major(13),
        vec!["8.0".parse().unwrap()],
    );
    let violation = only_violation(
        &[cell("12.8", "12.4", Some("3.13"), "2.9")],
        "manylinux_2_31",
        &by_major,
    );
    assert_eq!(violation.problem, "no cuda-archs list covers nvcc 12.4");
}

#[test]
fn unknown_baselines_are_refused() {
    let found = check(
        &[cell("13.0", "13.0", Some("3.13"), "2.11")],
        "manylinux_2_17",
        &uniform(&["8.0"]),
    )
    .unwrap_err();
    assert_eq!(found[0].rule, Rule::KnownVersion);
    assert!(
        found[0].problem.starts_with(
            "baseline manylinux_2_17 is not in cuwheel's compatibility table, which knows \
             manylinux_2_28, manylinux_2_31, manylinux_2_36, manylinux_2_41"
        ),
        "{:?}",
        found[0]
    );
}

#[test]
fn collects_every_impossible_cell_and_groups_equal_findings() {
    let cells = [
        cell("12.6", "12.4", Some("3.14"), "2.7"),
        cell("12.6", "12.4", Some("3.10"), "2.7"),
        cell("13.2", "13.2", Some("3.10"), "2.15"),
    ];
    let found = check(&cells, "manylinux_2_31", &uniform(&["8.0"])).unwrap_err();
    let summary: Vec<(Rule, Vec<String>)> = found
        .iter()
        .map(|v| (v.rule, v.cells.iter().map(|c| c.to_string()).collect()))
        .collect();
    assert_eq!(summary.len(), 3, "{summary:?}");
    let error = CompatError {
        file: PathBuf::from("demo/pyproject.toml"),
        violations: found,
    };
    let shown = error.to_string();
    assert!(
        shown.starts_with("demo/pyproject.toml: 3 cells of [tool.cuwheel.matrix] cannot be built\n  cell cu132-py310: rule torch-python:"),
        "{shown}"
    );
    assert!(shown.contains("\n      fix: exclude"), "{shown}");
}

#[test]
fn abi3_cells_skip_the_python_rule() {
    assert_eq!(
        check(
            &[cell("12.6", "12.4", None, "2.7")],
            "manylinux_2_31",
            &uniform(&["8.0"])
        ),
        Ok(())
    );
}

#[test]
fn inconsistent_tables_are_refused() {
    let base = EMBEDDED;
    let twice =
        format!("{base}\n[[toolkit]]\nversion = \"12.4\"\ngcc = [6, 13]\narchs = [\"8.0\"]\n");
    assert_eq!(
        CompatTable::parse(&twice).unwrap_err(),
        "toolkit 12.4 is listed twice"
    );
    let reversed = base.replace("gcc = [6, 15]", "gcc = [15, 6]");
    assert_eq!(
        CompatTable::parse(&reversed).unwrap_err(),
        "toolkit 13.0: gcc range is reversed"
    );
    let ptx = base.replacen("\"8.0\", \"8.6\"", "\"8.0+PTX\", \"8.6\"", 1);
    assert!(
        CompatTable::parse(&ptx)
            .unwrap_err()
            .contains("archs must list SASS targets"),
    );
    let glibc = base.replace("glibc = \"2.31\"", "glibc = \"2.30\"");
    assert_eq!(
        CompatTable::parse(&glibc).unwrap_err(),
        "baseline manylinux_2_31: glibc 2.30 is not 2.31"
    );
    let unknown = base.replace("[sources]", "[sources]\nextra = \"x\"");
    assert!(
        CompatTable::parse(&unknown)
            .unwrap_err()
            .contains("unknown field `extra`")
    );
}

#[test]
fn arch_and_family_specific_targets_are_checked_per_nvcc() {
    let table = CompatTable::embedded();
    let toolkit = |v: &str| table.toolkit(&v.parse().unwrap()).unwrap();
    let arch = |a: &str| a.parse::<CudaArch>().unwrap();
    // The suffix counts: 12.4 compiles sm_90a, not sm_100a or sm_100f.
    assert!(toolkit("12.4").supports(&arch("9.0a")));
    assert!(toolkit("12.4").supports(&arch("9.0a+PTX")));
    assert!(!toolkit("11.8").supports(&arch("9.0a")));
    assert!(!toolkit("12.5").supports(&arch("10.0a")));
    for a in [
        "9.0a",
        "10.0a",
        "10.3a",
        "12.0a",
        "10.0f",
        "12.0f+PTX",
        "11.0f",
        "12.1a",
    ] {
        assert!(toolkit("13.0").supports(&arch(a)), "{a}");
    }
    // sm_101 is sm_110 from CUDA 13.0; there is no sm_90f.
    assert!(!toolkit("13.0").supports(&arch("10.1a")));
    assert!(!toolkit("13.5").supports(&arch("9.0f")));
    // The first nvcc of each, with its source.
    let first = |a: &str| {
        let (version, source) = table.first_nvcc(&arch(a)).unwrap();
        (version.to_string(), source.to_string())
    };
    assert_eq!(first("9.0a").0, "12.0");
    assert!(first("9.0a").1.contains("PTX ISA"), "{:?}", first("9.0a"));
    assert_eq!(first("10.0a").0, "12.8");
    assert_eq!(first("12.0a+PTX").0, "12.8");
    assert_eq!(first("10.0f").0, "12.9");
    assert!(first("10.0f").1.contains("CUDA 12.9 Features"));
    assert_eq!(first("10.3a").0, "12.9");
    assert_eq!(first("11.0f").0, "13.0");
    assert_eq!(first("9.0").0, "11.8");
    assert_eq!(table.first_nvcc(&arch("9.0f")), None);
    let lacks = |nvcc: &str, a: &str| table.nvcc_lacks(nvcc.parse().unwrap(), &arch(a));
    assert_eq!(
        lacks("12.8", "10.0f").unwrap().0,
        "10.0f (family-specific) needs nvcc ≥ 12.9"
    );
    assert_eq!(
        lacks("12.5", "9.0a+PTX"),
        None,
        "compute_90a is embedded by every nvcc with sm_90a"
    );
    assert!(
        lacks("13.0", "5.0")
            .unwrap()
            .0
            .starts_with("nvcc 13.0 does not compile for 5.0")
    );
    assert_eq!(
        lacks("12.8", "12.0"),
        None,
        "no row for 12.8, introduced there"
    );
}

#[test]
fn a_family_target_on_an_old_nvcc_names_the_first_that_compiles_it() {
    let violation = only_violation(
        &[cell("12.8", "12.4", Some("3.13"), "2.9")],
        "manylinux_2_31",
        &uniform(&["9.0a", "10.0f"]),
    );
    assert_eq!(violation.rule, Rule::CudaArchs);
    assert!(
        violation.problem.starts_with(
            "nvcc 12.4 cannot compile for 10.0f (tool.cuwheel.cuda-archs); it supports 5.0"
        ),
        "{violation}"
    );
    assert!(
        violation
            .problem
            .ends_with("; 10.0f (family-specific) needs nvcc ≥ 12.9"),
        "{violation}"
    );
    assert!(
        violation.source.contains("CUDA 12.9 Features"),
        "{violation}"
    );
    assert!(violation.fix.contains("remove 10.0f"), "{violation}");
    // The same list builds with nvcc 13.0.
    assert_eq!(
        check(
            &[cell("13.0", "13.0", Some("3.13"), "2.11")],
            "manylinux_2_31",
            &uniform(&["9.0a", "10.0f+PTX", "12.0a"])
        ),
        Ok(())
    );
}

#[test]
fn introduced_rows_must_agree_with_the_toolkit_rows() {
    let early = EMBEDDED.replace(
        "nvcc = \"12.0\"\narchs = [\"9.0a\"]",
        "nvcc = \"12.8\"\narchs = [\"9.0a\"]",
    );
    assert_ne!(early, EMBEDDED);
    assert!(
        CompatTable::parse(&early)
            .unwrap_err()
            .contains("9.0a is said to come with nvcc 12.8, but toolkit 12.4 lists it")
    );
    let ptx = EMBEDDED.replace("archs = [\"9.0a\"]", "archs = [\"9.0a+PTX\"]");
    assert!(
        CompatTable::parse(&ptx)
            .unwrap_err()
            .contains("SASS targets")
    );
}

#[test]
fn a_renamed_arch_is_named_by_its_new_name() {
    let violation = only_violation(
        &[cell("13.0", "13.0", Some("3.13"), "2.11")],
        "manylinux_2_31",
        &uniform(&["9.0a", "10.1a"]),
    );
    assert_eq!(violation.rule, Rule::CudaArchs);
    assert!(
        violation
            .problem
            .ends_with("; nvcc 13.0 names 10.1a (arch-specific) 11.0a"),
        "{violation}"
    );
    assert!(
        violation.fix.ends_with("; write 11.0a for nvcc 13.0"),
        "{violation}"
    );
    assert!(
        violation.source.contains("SM101 has been renumbered"),
        "{violation}"
    );
    let table = CompatTable::embedded();
    let arch = |a: &str| a.parse::<CudaArch>().unwrap();
    assert_eq!(
        table
            .nvcc_lacks("13.2".parse().unwrap(), &arch("10.1+PTX"))
            .unwrap()
            .0,
        "nvcc 13.2 names 10.1+PTX 11.0+PTX"
    );
    // Before 13.0 the old name stands.
    assert_eq!(table.renamed("12.9".parse().unwrap(), &arch("10.1")), None);
}

#[test]
fn an_aarch64_cell_reads_its_architectures_wheels_and_names_the_platform_to_exclude() {
    let facts = crate::spec::facts::with_aarch64(facts(), &["2.11"]);
    let on_arm = |cell: Cell| Cell {
        arch: crate::wheel::Arch::Aarch64,
        ..cell
    };
    let cells = [
        on_arm(cell("13.0", "13.0", Some("3.13"), "2.11")),
        on_arm(cell("13.2", "13.2", Some("3.13"), "2.15")),
        on_arm(cell("13.2", "13.2", None, "2.15")),
        Cell {
            flavour: crate::spec::BindingFlavour::TorchStable,
            ..on_arm(cell("13.2", "13.2", None, "2.15"))
        },
    ];
    let base = baseline("manylinux_2_31");
    let archs = uniform(&["8.0"]);
    let found = CompatTable::embedded()
        .check(
            &cells,
            &Matrix {
                facts: &facts,
                baseline: &base,
                archs: &archs,
            },
        )
        .expect_err("torch 2.15 has no aarch64 wheel here");
    let texts: Vec<String> = found.iter().map(|v| v.to_string()).collect();
    assert_eq!(found.len(), 3, "{texts:#?}");
    let all = texts.join("\n");
    assert!(
        all.contains(
            "cell cu132-py313-aarch64: rule torch-python: torch 2.15 (2.15.1) has no wheel for \
             Python 3.13 on aarch64"
        ),
        "{all}"
    );
    assert!(
        all.contains(
            "{ torch = \"2.15\", python = \"3.13\", platform = \"aarch64\" } in \
             tool.cuwheel.matrix.exclude, or drop Python 3.13, or use a torch with Python 3.13 \
             wheels on aarch64: 2.11"
        ),
        "{all}"
    );
    assert!(
        all.contains("has no aarch64 wheel of CUDA 13.2 for any of the matrix's Pythons"),
        "{all}"
    );
    assert!(
        all.contains("exclude its aarch64 cells with { torch = \"2.15\", platform = \"aarch64\" }"),
        "{all}"
    );
    // A torch key never matches a stable cell: its fix names the binding.
    assert!(
        all.contains(
            "exclude its aarch64 cells with { binding = \"torch-stable\", platform = \"aarch64\" }"
        ),
        "{all}"
    );
}

//! Requirement strings as init writes them into `[project]`.
//!
//! In: one requirement line from setup.py, setup.cfg or an sdist's record,
//! or the dependencies inferred. Out: the line with the whitespace PEP 508
//! needs between a URL and its `;` ([`space_before_marker`]), and one note
//! naming every direct reference (`pkg @ URL`) written, which the PyPI
//! variant's wheels leave out ([`direct_reference_note`]).

use super::model::Inferred;

/// `pkg @ URL ; marker`: PEP 508 needs whitespace between a URL and its
/// `;`, which setup.py files often leave out (pip then refuses the wheel).
pub fn space_before_marker(line: &str) -> String {
    match line.split_once(';') {
        Some((requirement, marker)) if requirement.contains('@') && !requirement.ends_with(' ') => {
            format!("{} ; {}", requirement.trim_end(), marker.trim_start())
        }
        _ => line.to_string(),
    }
}

/// One note naming every direct reference (`pkg @ URL`) written: the
/// per-CUDA index's wheels carry them, the PyPI variant's leave them out.
pub fn direct_reference_note(at: &str, inferred: &mut Inferred) {
    let meta = &inferred.meta;
    let mut direct: Vec<String> = meta
        .dependencies
        .iter()
        .filter(|r| is_direct_reference(r))
        .map(|r| format!("`{r}`"))
        .collect();
    for (extra, lines) in &meta.optional_dependencies {
        direct.extend(
            lines
                .iter()
                .filter(|r| is_direct_reference(r))
                .map(|r| format!("`{r}` (extra {extra})")),
        );
    }
    if direct.is_empty() {
        return;
    }
    inferred.assumptions.push(super::python::Note {
        at: at.to_string(),
        text: format!(
            "direct references {}: the per-CUDA index's wheels carry them; the PyPI variant's \
             wheels leave them out, as PyPI refuses direct references (publish the dependency \
             to an index and require it by version to keep it there)",
            direct.join(", ")
        ),
    });
}

fn is_direct_reference(line: &str) -> bool {
    crate::wheel::pep508::Requirement::parse(line).is_ok_and(|r| r.is_direct_reference())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gets_a_space_before_its_marker() {
        assert_eq!(
            space_before_marker("pkg @ git+https://host.invalid/r@abc; extra == \"testing\""),
            "pkg @ git+https://host.invalid/r@abc ; extra == \"testing\""
        );
        for kept in [
            "pkg @ https://host.invalid/p.whl ; os_name == 'nt'",
            "numpy>=1; python_version < '3.12'",
            "numpy",
        ] {
            assert_eq!(space_before_marker(kept), kept);
        }
    }
}

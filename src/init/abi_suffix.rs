//! Whether setup.py asks torch to name its modules without the Python ABI
//! part.
//!
//! In: setup.py's text. Out: [`Inferred::no_python_abi_suffix`] set when
//! every `no_python_abi_suffix=` argument in the file is the literal
//! `True` (`BuildExtension.with_options(no_python_abi_suffix=True)`, or a
//! `BuildExtension` subclass passing it to `super().__init__`); a
//! [`Finding`](super::model::Finding) when one is anything else.
//! setuptools runs the build command, not setup.py, so the evaluator never
//! reaches these calls: the arguments are read from the tokens.

use super::model::Inferred;
use super::python::keyword_uses;

const KEY: &str = "tool.cuwheel.no-python-abi-suffix";

pub fn infer(text: &str, inferred: &mut Inferred) {
    // A file the tokenizer refuses has already stopped the evaluation.
    let Ok(uses) = keyword_uses(text, "no_python_abi_suffix") else {
        return;
    };
    let literal_true = uses.iter().filter(|u| u.value == Some(true)).count();
    if literal_true > 0 && literal_true == uses.len() {
        inferred.no_python_abi_suffix = true;
        return;
    }
    if let Some(other) = uses.iter().find(|u| u.value != Some(false)) {
        let problem = match other.value {
            Some(_) => format!(
                "setup.py:{}: no_python_abi_suffix=True here, False elsewhere in the file",
                other.line
            ),
            None => format!(
                "setup.py:{}: no_python_abi_suffix is given a value cuwheel does not evaluate",
                other.line
            ),
        };
        inferred.find(
            KEY,
            problem,
            "write no-python-abi-suffix = true in [tool.cuwheel] if the build names its \
             modules `<name>.so`",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inferred(text: &str) -> Inferred {
        let mut inferred = Inferred::default();
        infer(text, &mut inferred);
        inferred
    }

    #[test]
    fn a_literal_true_everywhere_is_read() {
        let text = "cmdclass = {'build_ext': BuildExtension.with_options(\n    no_python_abi_suffix=True, use_ninja=False)}\n";
        let got = inferred(text);
        assert!(got.no_python_abi_suffix && got.findings.is_empty());
        let subclass = "class B(BuildExtension):\n    def __init__(self, *a, **k):\n        super().__init__(*a, no_python_abi_suffix=True, **k)\n";
        assert!(inferred(subclass).no_python_abi_suffix);
    }

    #[test]
    fn false_or_absent_leaves_the_suffix_and_anything_else_is_a_finding() {
        for text in [
            "setup(name='x')\n",
            "B.with_options(no_python_abi_suffix=False)\n",
        ] {
            let got = inferred(text);
            assert!(
                !got.no_python_abi_suffix && got.findings.is_empty(),
                "{text}"
            );
        }
        let got = inferred("B.with_options(no_python_abi_suffix=plain)\n");
        assert!(!got.no_python_abi_suffix);
        assert_eq!(got.findings.len(), 1);
        assert!(
            got.findings[0].to_string().contains("setup.py:1"),
            "{}",
            got.findings[0]
        );
        let mixed = inferred("a(no_python_abi_suffix=True)\nb(no_python_abi_suffix=False)\n");
        assert!(!mixed.no_python_abi_suffix);
        assert!(
            mixed.findings[0].to_string().contains("False elsewhere"),
            "{}",
            mixed.findings[0]
        );
    }
}

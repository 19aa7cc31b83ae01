//! `cuwheel init` on hostile setup.py files: values that would take
//! terabytes, nesting that would overflow the stack, loops that never end.
//! Each runs the real binary under `timeout 60`; none may be killed by the
//! timeout (exit 124) or panic (exit 101), and each says what was not
//! inferred and that a budget was exceeded.

use std::fs;
use std::path::Path;
use std::process::Command;

const BINDING: &str = "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n";

/// Runs `cuwheel init --dry-run` on a project whose setup.py is `setup`;
/// returns the exit code and stderr.
fn init(setup: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("setup.py"), setup).unwrap();
    fs::create_dir_all(root.join("csrc")).unwrap();
    fs::write(root.join("csrc/b.cpp"), BINDING).unwrap();
    let output = Command::new("timeout")
        .arg("60")
        .arg(crate::common::cuwheel_bin())
        .args(["init", "--dry-run", "--cuwheel", "path:/c"])
        .arg(root)
        .output()
        .unwrap();
    let code = output.status.code().expect("an exit code, not a signal");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_ne!(code, 124, "timeout fired:\n{stderr}");
    assert_ne!(code, 101, "cuwheel panicked:\n{stderr}");
    assert!(!Path::new(&root.join("pyproject.toml")).exists());
    (code, stderr)
}

/// A setup.py whose one module has `nvcc` as its nvcc flags (a Python
/// expression), after `prelude`.
fn with_flags(prelude: &str, nvcc: &str) -> String {
    format!(
        "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n{prelude}\n\
         setup(name='hostile', version='1.0', ext_modules=[CUDAExtension('hostile._C', ['csrc/b.cpp'], \
         extra_compile_args={{'nvcc': {nvcc}}})])\n"
    )
}

#[test]
fn huge_strings_are_not_inferred_and_the_rest_is() {
    let string_budget =
        "not inferred: a string of more than 1048576 bytes exceeds cuwheel's budget for one value";
    for (prelude, flags) in [
        ("", "['-O3', 'a' * 10**12]"),
        ("", "['-O3', f\"{'a' * 10**10}\"]"),
        ("s = 'ab'\nfor _ in range(64):\n    s = s + s", "['-O3', s]"),
        ("s = 'ab'\nfor _ in range(64):\n    s += s", "['-O3', s]"),
        ("", "['-O3', 'x'.ljust(10**12)]"),
        ("", "['-O3', f\"{'x':>1000000000000}\"]"),
        (
            "",
            "['-O3', 'ab'.replace('a', 'a' * 1000000).replace('a', 'a' * 1000000)]",
        ),
    ] {
        let (code, stderr) = init(&with_flags(prelude, flags));
        assert_eq!(code, 0, "{prelude} {flags}:\n{stderr}");
        assert!(
            stderr.contains("tool.cuwheel.modules[hostile._C].nvcc-flags: setup.py:"),
            "{prelude} {flags}:\n{stderr}"
        );
        assert!(
            stderr.contains(string_budget) || stderr.contains("it was left out"),
            "{prelude} {flags}:\n{stderr}"
        );
    }
    // The doubling, quoted with its reason.
    let (_, stderr) = init(&with_flags(
        "s = 'ab'\nfor _ in range(64):\n    s = s + s",
        "['-O3', s]",
    ));
    assert!(stderr.contains(string_budget), "{stderr}");
}

#[test]
fn huge_lists_and_integers_are_not_inferred() {
    let (code, stderr) = init(&with_flags(
        "l = ['-x']\nfor _ in range(64):\n    l += l",
        "['-O3'] + l",
    ));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "not inferred: a sequence of more than 1048576 items exceeds cuwheel's budget"
        ),
        "{stderr}"
    );
    let (code, stderr) = init(&with_flags("", "['-O3'] * 10**12"));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("more than 1048576 items"), "{stderr}");
    let (code, stderr) = init(&with_flags("n = 10**10**10", "['-O3', str(n)]"));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("not inferred: an integer beyond 64 bits exceeds cuwheel's budget"),
        "{stderr}"
    );
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let parens = format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000));
    let (code, stderr) = init(&with_flags(&parens, "['-O3']"));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "setup.py:3:205: brackets nested more than 200 deep: not inferred (cuwheel's budget"
        ),
        "{stderr}"
    );
    // The 200,000-character line is quoted around the column, not whole.
    assert!(stderr.len() < 2_000, "{} bytes:\n{stderr}", stderr.len());
    assert!(stderr.contains("…((((("), "{stderr}");
    let nots = format!("x = {}True\n", "not ".repeat(100_000));
    let (code, stderr) = init(&with_flags(&nots, "['-O3']"));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "expressions and blocks nested more than 200 deep: not inferred (cuwheel's budget"
        ),
        "{stderr}"
    );
    let chain = format!("x = 1{}\n", " + 1".repeat(100_000));
    let (code, stderr) = init(&with_flags(&chain, "['-O3']"));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("an operator chain more than 400 deep: not inferred (cuwheel's budget"),
        "{stderr}"
    );
    let unary = format!("x = {}1\n", "-".repeat(100_000));
    let (code, stderr) = init(&with_flags(&unary, "['-O3']"));
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("not inferred (cuwheel's budget"),
        "{stderr}"
    );
}

#[test]
fn endless_loops_and_recursion_leave_their_part_out() {
    let (code, stderr) = init(&with_flags(
        "n = 0\nwhile True:\n    n += 1\nflags = ['-O3']\ndef f(k):\n    return f(k + 1)\ndeep = f(0)",
        "flags + [n, deep]",
    ));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "setup.py:4: `while True:`\n    not inferred: more than 2000000 evaluation steps \
             (a loop that does not end?) exceed cuwheel's budget for one statement"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("not inferred: calls nested more than 64 deep exceed cuwheel's budget"),
        "{stderr}"
    );
}

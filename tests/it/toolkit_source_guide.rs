//! docs/guide/adding-a-toolchain-source.md says a toolkit source is one
//! module, its Nix file and an entry in `SOURCES`, and shows a toy source's
//! whole diff. This keeps the page true of the code: the diff touches
//! exactly those files and applies to this checkout (`git apply --check`).
//! scripts/toy-toolkit-source.sh goes further: it applies the diff, runs the
//! toy's unit test, relocks the demo with it and builds its toolkit.

use std::path::Path;
use std::process::Command;

const PAGE: &str = "docs/guide/adding-a-toolchain-source.md";

/// The page's diff: the fenced block between its toy-diff markers.
fn toy_diff(root: &Path) -> String {
    let page = std::fs::read_to_string(root.join(PAGE)).unwrap();
    let (_, rest) = page.split_once("<!-- toy-diff:begin -->").unwrap();
    let (block, _) = rest.split_once("<!-- toy-diff:end -->").unwrap();
    let lines: Vec<&str> = block
        .lines()
        .filter(|line| !line.starts_with("```"))
        .collect();
    let diff = lines.join("\n").trim_matches('\n').to_owned() + "\n";
    assert!(
        diff.starts_with("diff --git "),
        "{PAGE}: no diff between the markers"
    );
    diff
}

#[test]
fn the_toy_source_is_a_module_its_nix_file_and_the_list() {
    let root = crate::common::repo();
    let diff = toy_diff(root);
    let files: Vec<&str> = diff
        .lines()
        .filter_map(|line| line.strip_prefix("+++ b/"))
        .collect();
    assert_eq!(
        files,
        [
            "nix/cuda-pinned.nix",
            "crates/cuwheel-build/src/lock/toolkits/mod.rs",
            "crates/cuwheel-build/src/lock/toolkits/pinned.rs"
        ]
    );
    // In the list: two lines changed (the module and the entry).
    let list = diff
        .split("+++ b/crates/cuwheel-build/src/lock/toolkits/mod.rs")
        .nth(1)
        .unwrap();
    let list = list.split("diff --git").next().unwrap();
    let added = list.lines().filter(|l| l.starts_with('+')).count();
    let removed = list.lines().filter(|l| l.starts_with('-')).count();
    assert_eq!((added, removed), (2, 1), "{list}");

    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &diff).unwrap();
    let out = Command::new("git")
        .current_dir(root)
        .args(["apply", "--check"])
        .arg(file.path())
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "{PAGE}'s diff no longer applies to this checkout: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

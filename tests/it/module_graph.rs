//! The pipeline's top-level modules depend on each other without a cycle:
//! each is a crate-to-be of the workspace (docs/reference/internals.md), so
//! a cycle now is a crate split that cannot happen later.
//!
//! The graph is read from the source: a module depends on another where its
//! code (not its comments, not its `#[cfg(test)]` part) names
//! `crate::<other>` or, for the library's users, `cuwheel::<other>`. The
//! stages of `crates/cuwheel-build` (spec, lock, plan, build, audit, …) are
//! read as modules too: `src/lib.rs` re-exports them under those names.
//! `cli` (the binaries', in either crate) may use anything; nothing may use
//! it. The format crates of `crates/` are nodes too, under the names
//! `src/lib.rs` re-exports them as (`store`, `wheel`); cargo itself keeps
//! them, and cuwheel-build, from using the host stages. The registry crate
//! (`crates/cuwheel-registry`, re-exported as `registry`) is one node, read
//! like the others: its files name cuwheel-build's stages under the same
//! `crate::<stage>` names (its `lib.rs` imports them so), and cargo keeps
//! cuwheel-build from using it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its tests and comments.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Module → module it names → the files that name it.
fn graph() -> Graph {
    let root = crate::common::repo();
    let src = root.join("src");
    let roots = [src.clone(), root.join("crates/cuwheel-build/src")];
    // A crate read as one module: every file of it is that node.
    let registry = root.join("crates/cuwheel-registry/src");
    let mut files = Vec::new();
    for dir in roots.iter().chain([&registry]) {
        rust_files(dir, &mut files);
    }
    let top = |path: &Path| -> String {
        if path.starts_with(&registry) {
            return "registry".to_string();
        }
        let base = roots.iter().find(|dir| path.starts_with(dir)).unwrap();
        let rel = path.strip_prefix(base).unwrap();
        let first = rel.components().next().unwrap().as_os_str();
        first.to_string_lossy().trim_end_matches(".rs").to_string()
    };
    let mut modules: BTreeSet<String> = files.iter().map(|f| top(f)).collect();
    // The workspace's other crates, by the names the library re-exports
    // them under (`pub use cuwheel_nix as store;`): nodes with no edges out,
    // since a crate cannot depend on cuwheel.
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(rest) = line.strip_prefix("pub use cuwheel_") {
            if let Some((_, name)) = rest.trim_end_matches(';').split_once(" as ") {
                modules.insert(name.to_string());
            }
        }
    }
    assert!(
        ["store", "wheel", "registry"]
            .iter()
            .all(|name| modules.contains(*name))
    );
    let mut graph = Graph::new();
    for file in &files {
        let from = top(file);
        if ["lib", "main"].contains(&from.as_str()) {
            continue;
        }
        let code = code(&fs::read_to_string(file).unwrap());
        for prefix in ["crate::", "cuwheel::", "cuwheel_build::"] {
            for (at, _) in code.match_indices(prefix) {
                let rest = &code[at + prefix.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if name != from && modules.contains(&name) {
                    let rel = file.strip_prefix(root).unwrap().display().to_string();
                    graph
                        .entry(from.clone())
                        .or_default()
                        .entry(name)
                        .or_default()
                        .insert(rel);
                }
            }
        }
    }
    graph
}

/// A cycle through `start`, if any: the path back to it.
fn cycle_from(graph: &Graph, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in graph.get(&node).into_iter().flat_map(|n| n.keys()) {
            if next == start {
                let mut path = path.clone();
                path.push(start.to_string());
                return Some(path);
            }
            if seen.insert(next.clone()) {
                let mut path = path.clone();
                path.push(next.clone());
                stack.push((next.clone(), path));
            }
        }
    }
    None
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let graph = graph();
    let mut cycles = Vec::new();
    for module in graph.keys() {
        if let Some(cycle) = cycle_from(&graph, module) {
            let edges: Vec<String> = cycle
                .windows(2)
                .map(|pair| {
                    let files = &graph[&pair[0]][&pair[1]];
                    format!(
                        "{} → {} ({})",
                        pair[0],
                        pair[1],
                        files.iter().next().unwrap()
                    )
                })
                .collect();
            cycles.push(edges.join(", "));
        }
    }
    assert!(
        cycles.is_empty(),
        "module cycles (move the shared part down to the module both use):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn nothing_but_the_binary_uses_the_cli() {
    let graph = graph();
    let users: Vec<&String> = graph
        .iter()
        .filter(|(from, to)| from.as_str() != "cli" && to.contains_key("cli"))
        .map(|(from, _)| from)
        .collect();
    assert!(users.is_empty(), "{users:?} use cli");
}

/// The graph, printed with `--nocapture` for the record (the closing note
/// and docs/reference/internals.md quote it): each module and what it uses.
#[test]
fn the_graph_is_printed() {
    let graph = graph();
    // The scan found the pipeline: each stage uses some other module.
    for stage in [
        "spec",
        "lock",
        "registry",
        "fetch",
        "plan",
        "build",
        "audit",
        "publish",
        "reproduce",
    ] {
        assert!(
            graph.get(stage).is_some_and(|to| !to.is_empty()),
            "{stage}: no edge read"
        );
    }
    for (from, to) in &graph {
        let names: Vec<&str> = to.keys().map(String::as_str).collect();
        println!("{from} → {}", names.join(", "));
    }
}

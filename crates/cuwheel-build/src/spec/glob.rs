//! File patterns for `kernels`, `package-include`, `package-exclude` and
//! `license-files`: the small glob dialect a config may use.
//!
//! In: a pattern string relative to the project root (`csrc/kernels/*.cu`,
//! `csrc/**/*.cu`) and, for [`Pattern::files`], the root directory. Out: a
//! validated [`Pattern`], or an [`InvalidValue`] saying what is not
//! supported; and the sorted relative paths of the regular files it matches.
//!
//! `*` matches any run of characters within one path component and `?` one
//! character; neither matches a leading `.`, as in the shell. `**` as a whole
//! component matches any number of directories; it skips hidden ones and does
//! not descend through symbolic links, so a link cycle cannot make it loop.
//! Character classes and braces are refused rather than half supported.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::spec::version::InvalidValue;

/// A validated file pattern, relative to the project root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    components: Vec<Component>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Component {
    Literal(String),
    Wildcard(String),
    AnyDirectories,
}

impl Pattern {
    /// A pattern of files: it may not end in `**`.
    pub fn parse(text: &str) -> Result<Pattern, InvalidValue> {
        let pattern = Pattern::parse_excluding(text)?;
        if pattern.components.last() == Some(&Component::AnyDirectories) {
            return Err(InvalidValue::new(
                format!("`{text}` ends in `**`, which names directories, not files"),
                "end the pattern with a file name, like \"csrc/**/*.cu\"",
            ));
        }
        Ok(pattern)
    }

    /// A pattern of files to leave out: it may also end in `**`, which
    /// takes every file below (`**/third_party/**`).
    pub fn parse_excluding(text: &str) -> Result<Pattern, InvalidValue> {
        let refuse = |problem: String, fix: &str| Err(InvalidValue::new(problem, fix));
        if text.is_empty() {
            return refuse(
                "the pattern is empty".into(),
                "write a path like \"csrc/kernels/*.cu\"",
            );
        }
        if text.starts_with('/') {
            return refuse(
                format!("`{text}` is absolute"),
                "write it relative to the directory that holds pyproject.toml",
            );
        }
        if let Some(bad) = text
            .chars()
            .find(|c| matches!(c, '[' | ']' | '{' | '}' | '\\'))
        {
            return refuse(
                format!("`{text}` uses `{bad}`, which cuwheel's patterns do not support"),
                "use only `*`, `?` and `**`, or list the files one by one",
            );
        }
        let mut components = Vec::new();
        for part in text.split('/') {
            let component = match part {
                "" => {
                    return refuse(
                        format!("`{text}` has an empty path component"),
                        "remove the doubled or trailing `/`",
                    );
                }
                "." | ".." => {
                    return refuse(
                        format!("`{text}` contains `{part}`"),
                        "write the path from the project root down, without `.` or `..`; \
                         every source must lie inside the project",
                    );
                }
                "**" => Component::AnyDirectories,
                _ if part.contains("**") => {
                    return refuse(
                        format!("`{text}` has `**` inside the component `{part}`"),
                        "`**` must be a whole component, like \"csrc/**/*.cu\"",
                    );
                }
                _ if part.contains(['*', '?']) => Component::Wildcard(part.to_string()),
                _ => Component::Literal(part.to_string()),
            };
            components.push(component);
        }
        Ok(Pattern {
            text: text.to_string(),
            components,
        })
    }

    /// Whether `path` (relative, `/`-separated) matches the whole pattern.
    pub fn matches(&self, path: &str) -> bool {
        let names: Vec<&str> = path.split('/').collect();
        matches_components(&self.components, &names)
    }

    /// The regular files under `root` that match, relative to `root`, sorted.
    pub fn files(&self, root: &Path) -> io::Result<Vec<PathBuf>> {
        let mut found = BTreeSet::new();
        collect(root, PathBuf::new(), &self.components, &mut found)?;
        Ok(found.into_iter().collect())
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A relative path with `/` separators, as patterns, the plan and the
/// wheel write paths.
pub fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn matches_components(components: &[Component], names: &[&str]) -> bool {
    match (components.split_first(), names.split_first()) {
        (None, None) => true,
        (Some((Component::AnyDirectories, rest)), _) => {
            matches_components(rest, names)
                || names.split_first().is_some_and(|(name, more)| {
                    !name.starts_with('.') && matches_components(components, more)
                })
        }
        (Some((Component::Literal(literal), rest)), Some((name, more))) => {
            literal == name && matches_components(rest, more)
        }
        (Some((Component::Wildcard(wildcard), rest)), Some((name, more))) => {
            wildcard_matches(wildcard, name) && matches_components(rest, more)
        }
        _ => false,
    }
}

/// `*` and `?` matching within one file name; a leading `.` is only matched
/// by a literal `.`.
fn wildcard_matches(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    // Where the last `*` was, and how much of `name` it has taken so far.
    let mut backtrack: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                backtrack = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match backtrack {
                Some((star, taken)) => {
                    p = star + 1;
                    n = taken + 1;
                    backtrack = Some((star, taken + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

fn collect(
    root: &Path,
    relative: PathBuf,
    components: &[Component],
    found: &mut BTreeSet<PathBuf>,
) -> io::Result<()> {
    let Some((first, rest)) = components.split_first() else {
        if root.join(&relative).is_file() {
            found.insert(relative);
        }
        return Ok(());
    };
    match first {
        Component::Literal(name) => collect(root, relative.join(name), rest, found),
        Component::Wildcard(wildcard) => {
            for (name, _) in entries(&root.join(&relative))? {
                if wildcard_matches(wildcard, &name) {
                    collect(root, relative.join(name), rest, found)?;
                }
            }
            Ok(())
        }
        Component::AnyDirectories => {
            collect(root, relative.clone(), rest, found)?;
            for (name, is_real_directory) in entries(&root.join(&relative))? {
                if is_real_directory && !name.starts_with('.') {
                    collect(root, relative.join(name), components, found)?;
                }
            }
            Ok(())
        }
    }
}

/// The UTF-8-named entries of `directory` with whether each is a directory
/// that is not a symbolic link; nothing when `directory` is not one.
fn entries(directory: &Path) -> io::Result<Vec<(String, bool)>> {
    if !directory.is_dir() {
        return Ok(Vec::new());
    }
    let mut entries = Vec::new();
    for entry in fs::read_dir(directory)? {
        let entry = entry?;
        if let Ok(name) = entry.file_name().into_string() {
            entries.push((name, entry.file_type()?.is_dir()));
        }
    }
    entries.sort();
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> Pattern {
        Pattern::parse(text).unwrap()
    }

    #[test]
    fn star_and_question_mark_stay_within_a_component() {
        let p = pattern("csrc/kernels/*.cu");
        assert!(p.matches("csrc/kernels/add.cu"));
        assert!(!p.matches("csrc/kernels/.cu"));
        assert!(!p.matches("csrc/kernels/sub/add.cu"));
        assert!(!p.matches("csrc/kernels/add.cuh"));
        assert!(pattern("k?.cu").matches("k1.cu"));
        assert!(!pattern("k?.cu").matches("k12.cu"));
        assert!(pattern("*a*b*").matches("xxaxxbxx"));
        assert!(!pattern("*a*b").matches("xxaxxbxxc"));
    }

    #[test]
    fn double_star_spans_directories_but_not_hidden_ones() {
        let p = pattern("csrc/**/*.cu");
        assert!(p.matches("csrc/a.cu"));
        assert!(p.matches("csrc/x/y/a.cu"));
        assert!(!p.matches("csrc/.git/a.cu"));
        assert!(!p.matches("other/a.cu"));
    }

    #[test]
    fn refuses_what_it_does_not_support() {
        for (text, says) in [
            ("", "empty"),
            ("/abs/*.cu", "absolute"),
            ("csrc/[ab].cu", "`[`"),
            ("csrc/{a,b}.cu", "`{`"),
            ("csrc//a.cu", "empty path component"),
            ("../shared/a.cu", "`..`"),
            ("./a.cu", "`.`"),
            ("csrc/a**/b.cu", "whole component"),
            ("csrc/**", "names directories"),
        ] {
            let err = Pattern::parse(text).unwrap_err();
            assert!(err.to_string().contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn exclude_patterns_may_end_in_double_star() {
        let p = Pattern::parse_excluding("**/third_party/**").unwrap();
        assert!(p.matches("pkg/third_party/a/b.h"));
        assert!(p.matches("third_party/x.py"));
        assert!(!p.matches("pkg/ops.py"));
        assert!(Pattern::parse("**/third_party/**").is_err());
    }

    #[test]
    fn finds_files_sorted_and_skips_hidden_directories() {
        let root = tempfile::tempdir().unwrap();
        for file in [
            "csrc/b.cu",
            "csrc/a.cu",
            "csrc/x/c.cu",
            "csrc/.hidden/d.cu",
            "csrc/e.h",
        ] {
            let path = root.path().join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "").unwrap();
        }
        let found = pattern("csrc/**/*.cu").files(root.path()).unwrap();
        let expected: Vec<PathBuf> = ["csrc/a.cu", "csrc/b.cu", "csrc/x/c.cu"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(found, expected);
        assert_eq!(
            pattern("csrc/e.h").files(root.path()).unwrap(),
            [PathBuf::from("csrc/e.h")]
        );
        // A link back up the tree does not make `**` loop or repeat files.
        std::os::unix::fs::symlink("..", root.path().join("csrc/x/up")).unwrap();
        assert_eq!(
            pattern("csrc/**/*.cu").files(root.path()).unwrap(),
            expected
        );
        assert!(
            pattern("nowhere/*.cu")
                .files(root.path())
                .unwrap()
                .is_empty()
        );
    }
}

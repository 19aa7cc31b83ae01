//! The rule for paths of files inside a wheel, shared by the writer (which
//! refuses to write a bad one) and the reader (which refuses to open one).
//!
//! In: a member path as stored in the zip. Out: `Ok` or the reason it could
//! escape the install directory or be read differently by different tools.

/// Checks that `path` is a relative `/`-separated path with no empty, `.` or
/// `..` components, no backslash, no drive letter and no control characters.
pub fn check_member_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("the path is empty".to_string());
    }
    if path.starts_with('/') {
        return Err("it is absolute (starts with `/`)".to_string());
    }
    if path.contains('\\') {
        return Err("it contains `\\`; wheel paths separate directories with `/` only".to_string());
    }
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return Err(format!("it contains the control character {c:?}"));
    }
    let first = path.split('/').next().unwrap_or_default();
    if first.len() == 2
        && first.ends_with(':')
        && first.starts_with(|c: char| c.is_ascii_alphabetic())
    {
        return Err(format!("it starts with the drive `{first}`"));
    }
    for component in path.split('/') {
        match component {
            "" => return Err("it has an empty component (`//` or a trailing `/`)".to_string()),
            "." => return Err("it has a `.` component".to_string()),
            ".." => {
                return Err("it has a `..` component, which points outside the wheel".to_string());
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_paths() {
        for ok in [
            "demo_ext/__init__.py",
            "demo_ext/_C.cpython-311-x86_64-linux-gnu.so",
            "demo_ext-0.1.0.data/scripts/run",
            "a..b/c.",
            "..hidden",
        ] {
            check_member_path(ok).unwrap();
        }
    }

    #[test]
    fn refuses_escaping_and_ambiguous_paths() {
        for (bad, words) in [
            ("", "empty"),
            ("/etc/passwd", "absolute"),
            ("../evil", "`..`"),
            ("a/../../evil", "`..`"),
            ("a\\b", "`\\`"),
            ("a//b", "empty component"),
            ("a/", "trailing"),
            ("./a", "`.` component"),
            ("C:/x", "drive"),
            ("a\nb", "control"),
        ] {
            let err = check_member_path(bad).unwrap_err();
            assert!(err.contains(words), "{bad:?}: {err}");
        }
    }
}

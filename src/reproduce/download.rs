//! A wheel named by URL, downloaded with `curl`.
//!
//! In: an `http://` or `https://` URL and a directory. Out: the wheel in
//! that directory under the URL's last path segment, percent-decoded (an
//! index links `…+pt211cu130…` as `%2B`), which is the wheel's file name.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};

/// True when `arg` names a wheel by URL rather than by path.
pub fn is_url(arg: &str) -> bool {
    arg.starts_with("http://") || arg.starts_with("https://")
}

/// The file name a URL names: its last path segment, without query or
/// fragment, percent-decoded.
pub fn file_name(url: &str) -> Result<String> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let after_scheme = path.split_once("://").map_or(path, |(_, rest)| rest);
    let Some((_, segment)) = after_scheme.split_once('/') else {
        bail!("{url} names no file: give the URL of the .whl itself");
    };
    let last = segment.rsplit('/').next().unwrap_or_default();
    let name = percent_decode(last)
        .ok_or_else(|| anyhow::anyhow!("{url}: `{last}` is not valid percent-encoded UTF-8"))?;
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        bail!("{url} names no file: give the URL of the .whl itself");
    }
    if !name.ends_with(".whl") {
        bail!("{url} names `{name}`, not a wheel (`.whl`): give the URL of the wheel file");
    }
    Ok(name)
}

/// `%XX` sequences to bytes; `None` for a broken sequence or non-UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Downloads `url` into `dir`; returns the file's path.
pub fn download(url: &str, dir: &Path) -> Result<PathBuf> {
    let name = file_name(url)?;
    let dest = dir.join(&name);
    crate::process::checked_output(
        Command::new("curl")
            .args([
                "--fail",
                "--silent",
                "--show-error",
                "--location",
                "--output",
            ])
            .arg(&dest)
            .arg(url),
        &format!("the download of {url}"),
        || {
            format!(
                "cannot run `curl` to download {url}: install curl (on Debian: `apt-get install \
                 curl`), or download the wheel yourself and pass its path"
            )
        },
    )?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url("https://example.org/w.whl"));
        assert!(is_url("http://127.0.0.1:8000/w.whl"));
        assert!(!is_url("dist/w.whl"));
        assert!(!is_url("file:///w.whl"));
    }

    #[test]
    fn the_file_name_is_the_decoded_last_segment() {
        assert_eq!(
            file_name("http://h:1/cu130/demo_ext-0.1.0%2Bpt211cu130-cp313-cp313-manylinux_2_31_x86_64.whl?x=1#sha256=ab")
                .unwrap(),
            "demo_ext-0.1.0+pt211cu130-cp313-cp313-manylinux_2_31_x86_64.whl"
        );
        assert_eq!(file_name("https://h/a%2bb.whl").unwrap(), "a+b.whl");
    }

    #[test]
    fn urls_naming_no_wheel_are_refused() {
        for url in [
            "https://h",
            "https://h/",
            "https://h/dir/",
            "https://h/index.html",
            "https://h/a%2Fb.whl",
            "https://h/bad%zz.whl",
            "https://h/trunc%2",
        ] {
            assert!(file_name(url).is_err(), "{url}");
        }
    }
}

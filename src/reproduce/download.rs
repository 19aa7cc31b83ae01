//! A wheel named by URL, downloaded with `curl`.
//!
//! In: an `http://` or `https://` URL and a directory. Out: the wheel in
//! that directory under the URL's last path segment, percent-decoded (an
//! index links `…+pt211cu130…` as `%2B`), which is the wheel's file name.
//!
//! A URL may carry a user and password (`https://user:token@host/…`) or a
//! token in its query (`?token=…`): no message shows them ([`redact`]), and
//! curl gets the URL on its standard input, not on its command line, where
//! other users could read it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// True when `arg` names a wheel by URL rather than by path.
pub fn is_url(arg: &str) -> bool {
    arg.starts_with("http://") || arg.starts_with("https://")
}

/// The URL as messages may show it: without user, password, query or
/// fragment (`https://***@host/path?***`).
pub fn redact(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let (before_query, query) = match rest.find(['?', '#']) {
        Some(at) => (&rest[..at], true),
        None => (rest, false),
    };
    let (authority, path) = match before_query.find('/') {
        Some(at) => before_query.split_at(at),
        None => (before_query, ""),
    };
    let host = match authority.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => authority.to_string(),
    };
    format!("{scheme}{host}{path}{}", if query { "?***" } else { "" })
}

/// The file name a URL names: its last path segment, without query or
/// fragment, percent-decoded.
pub fn file_name(url: &str) -> Result<String> {
    let shown = redact(url);
    let url = shown.as_str();
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
    let shown = redact(url);
    let dest = dir.join(&name);
    // The URL goes to curl as a config line on stdin (`url = "…"`), with
    // curl's own quoting: `\\` and `\"` escaped.
    let config = format!(
        "url = \"{}\"\n",
        url.replace('\\', "\\\\").replace('"', "\\\"")
    );
    let mut child = Command::new("curl")
        .args([
            "--fail",
            "--silent",
            "--show-error",
            "--location",
            "--config",
            "-",
            "--output",
        ])
        .arg(&dest)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "cannot run `curl` to download {shown}: install curl (on Debian: `apt-get install \
                 curl`), or download the wheel yourself and pass its path"
            )
        })?;
    let mut stdin = child.stdin.take().expect("piped");
    stdin
        .write_all(config.as_bytes())
        .with_context(|| format!("cannot pass the URL {shown} to curl"))?;
    drop(stdin);
    let output = child
        .wait_with_output()
        .with_context(|| format!("curl, downloading {shown}, did not finish"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!(
            "the download of {shown} failed ({}):\n{}",
            output.status,
            scrub(stderr.trim_end(), url)
        );
    }
    Ok(dest)
}

/// `text` with the URL and its secret parts replaced by their redacted form.
fn scrub(text: &str, url: &str) -> String {
    let mut text = text.replace(url, &redact(url));
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if let Some((userinfo, _)) = authority.rsplit_once('@') {
        for secret in userinfo.split(':').filter(|s| s.len() >= 3) {
            text = text.replace(secret, "***");
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        let query = query.split('#').next().unwrap_or_default();
        if !query.is_empty() {
            text = text.replace(query, "***");
        }
    }
    text
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
    fn credentials_and_queries_are_never_shown() {
        let url = "https://alice:s3cret-token@example.org:8443/whl/demo-1.0-py3-none-any.whl?X-Amz-Signature=abc123#frag";
        assert_eq!(
            redact(url),
            "https://***@example.org:8443/whl/demo-1.0-py3-none-any.whl?***"
        );
        assert_eq!(redact("http://h/a.whl"), "http://h/a.whl");
        let scrubbed = scrub(
            &format!("curl: (22) {url} failed for alice / s3cret-token / X-Amz-Signature=abc123"),
            url,
        );
        for secret in ["alice", "s3cret-token", "abc123"] {
            assert!(!scrubbed.contains(secret), "{scrubbed}");
        }
        let err = file_name("https://bob:hunter22@h/index.html?token=zzz")
            .unwrap_err()
            .to_string();
        assert!(
            !err.contains("hunter22") && !err.contains("zzz") && !err.contains("bob"),
            "{err}"
        );
        assert_eq!(file_name(url).unwrap(), "demo-1.0-py3-none-any.whl");
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

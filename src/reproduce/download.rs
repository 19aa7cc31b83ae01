//! A wheel named by URL, downloaded with `curl`.
//!
//! In: an `http://` or `https://` URL and a directory. Out: the wheel in
//! that directory under the URL's last path segment, percent-decoded (an
//! index links `…+pt211cu130…` as `%2B`), which is the wheel's file name.
//!
//! A URL may carry a user and password (`https://user:token@host/…`) or a
//! token in its query (`?token=…`): no message shows them ([`redact`]), and
//! curl gets the URL on its standard input, not on its command line, where
//! other users could read it. There it is one quoted line of curl's config,
//! so a URL holding white space or a control character is refused first
//! ([`check_chars`]): a newline would start a new curl option (`output =
//! …`, overwriting any file). curl gets connect, total and stall timeouts
//! ([`Timeouts`]), so a server that accepts and never answers ends the
//! download with a message naming the limit and how to raise it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::url::{check_chars, redact, scrub};

/// How long curl may take, in seconds: to connect, in all, and without
/// receiving a byte (a server that accepts and never answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// `--connect-timeout`.
    pub connect: u64,
    /// `--max-time`: the whole download.
    pub total: u64,
    /// `--speed-time` with `--speed-limit 1`: the longest wait for a byte.
    pub stall: u64,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect: 30,
            total: 7200,
            stall: 60,
        }
    }
}

/// The environment variables and flags that set each of [`Timeouts`].
pub const CONNECT_TIMEOUT: (&str, &str) = ("CUWHEEL_CONNECT_TIMEOUT", "--connect-timeout");
pub const TOTAL_TIMEOUT: (&str, &str) = ("CUWHEEL_DOWNLOAD_TIMEOUT", "--download-timeout");
pub const STALL_TIMEOUT: (&str, &str) = ("CUWHEEL_STALL_TIMEOUT", "--stall-timeout");

/// The file name a URL names: its last path segment, without query or
/// fragment, percent-decoded (the authority ends at the first `/`, `?` or
/// `#`, as curl reads it); messages show the URL [`redact`]ed.
pub fn file_name(url: &str) -> Result<String> {
    let shown = redact(url);
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = after_scheme
        .split(['?', '#'])
        .next()
        .unwrap_or(after_scheme);
    let Some((_, segment)) = path.split_once('/') else {
        bail!("{shown} names no file: give the URL of the .whl itself");
    };
    let last = segment.rsplit('/').next().unwrap_or_default();
    let name = percent_decode(last).ok_or_else(|| {
        anyhow::anyhow!(
            "{shown}: its last path segment is not valid percent-encoded UTF-8: give the URL \
                 of the .whl itself"
        )
    })?;
    if name.is_empty()
        || name.contains(['/', '\0'])
        || name == "."
        || name == ".."
        || name.chars().any(char::is_control)
    {
        bail!("{shown} names no file: give the URL of the .whl itself");
    }
    if !name.ends_with(".whl") {
        // The name is not shown apart: a malformed URL's password can end
        // up in it (`http://user:pa/ss@host`); `shown` holds it when safe.
        bail!(
            "{shown} names no wheel (its last path segment does not end in `.whl`): give the \
             URL of the wheel file"
        );
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

/// The curl config that names `url`: one quoted `url = "…"` line. `url`
/// must have passed [`check_chars`] (no newline can end the line); `\\`
/// and `"` are escaped as curl's quoting wants.
fn curl_config(url: &str) -> String {
    format!(
        "url = \"{}\"\n",
        url.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// Downloads `url` into `dir` within `timeouts`; returns the file's path.
/// A URL holding whitespace or a control character is refused before curl
/// runs.
pub fn download(url: &str, dir: &Path, timeouts: Timeouts) -> Result<PathBuf> {
    check_chars(url)?;
    let name = file_name(url)?;
    let shown = redact(url);
    let dest = dir.join(&name);
    // The URL goes to curl as a config line on stdin, not on the command
    // line, where other users could read a password in it.
    let config = curl_config(url);
    let mut child = Command::new("curl")
        .args([
            "--fail",
            "--silent",
            "--show-error",
            "--location",
            "--proto",
            "=http,https",
            "--proto-redir",
            "=http,https",
            "--connect-timeout",
            &timeouts.connect.to_string(),
            "--max-time",
            &timeouts.total.to_string(),
            "--speed-limit",
            "1",
            "--speed-time",
            &timeouts.stall.to_string(),
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
        let stderr = scrub(String::from_utf8_lossy(&output.stderr).trim_end(), url);
        bail!(failure(&shown, output.status.code(), &stderr, timeouts));
    }
    Ok(dest)
}

/// The message for a failed download: curl's own words; for a timeout
/// (curl's exit status 28), instead, which limit ran out and how to raise it.
fn failure(shown: &str, code: Option<i32>, stderr: &str, timeouts: Timeouts) -> String {
    let status = code.map_or("killed by a signal".to_string(), |c| {
        format!("curl exit status {c}")
    });
    if code != Some(28) {
        return format!("the download of {shown} failed ({status}):\n{stderr}");
    }
    let (what, limit, (var, flag)) =
        if stderr.contains("Connection timed out") || stderr.contains("connect() timed out") {
            (
                format!("could not connect within {} s", timeouts.connect),
                timeouts.connect,
                CONNECT_TIMEOUT,
            )
        } else if stderr.contains("too slow") {
            (
                format!(
                    "the server did not answer: no byte came for {} s",
                    timeouts.stall
                ),
                timeouts.stall,
                STALL_TIMEOUT,
            )
        } else {
            (
                format!("the download did not finish within {} s", timeouts.total),
                timeouts.total,
                TOTAL_TIMEOUT,
            )
        };
    format!(
        "the download of {shown} timed out: {what} ({status}); if the server is only \
         slow, raise the limit with `{flag} SECONDS` or the environment variable {var} (now \
         {limit}), or download the wheel yourself and pass its path"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let err = file_name("https://bob:hunter22@h/index.html?token=zzz")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "https://***@h/index.html?*** names no wheel (its last path segment does not end in \
             `.whl`): give the URL of the wheel file"
        );
        assert_eq!(file_name(url).unwrap(), "demo-1.0-py3-none-any.whl");
        let err = file_name("http://user:pa/ss@h").unwrap_err().to_string();
        assert_eq!(
            err,
            "http://***@h names no wheel (its last path segment does not end in `.whl`): give \
             the URL of the wheel file"
        );
    }

    #[test]
    fn a_newline_never_reaches_curls_config() {
        let url = "http://h.invalid/x.whl\noutput = /tmp/victim\nurl = http://127.0.0.1:1/p.whl";
        let dir = tempfile::tempdir().unwrap();
        let err = download(url, dir.path(), Timeouts::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "the URL http://h.invalid/x.whl\\noutput = /tmp/victim\\nurl = \
             http://127.0.0.1:1/p.whl holds a newline (U+000A) at character 23, which no URL \
             holds unencoded (a newline there would start a new curl option): copy the URL \
             again without it, or percent-encode it (%0A)"
        );
        assert_eq!(
            curl_config(r#"http://h/a"b\c.whl"#),
            "url = \"http://h/a\\\"b\\\\c.whl\"\n"
        );
    }

    #[test]
    fn a_timeout_says_which_limit_and_how_to_raise_it() {
        let t = Timeouts {
            connect: 3,
            total: 9,
            stall: 2,
        };
        assert_eq!(
            failure(
                "http://h/a.whl",
                Some(28),
                "curl: (28) Operation too slow. Less than 1 bytes/sec transferred the last 2 seconds",
                t
            ),
            "the download of http://h/a.whl timed out: the server did not answer: no byte came \
             for 2 s (curl exit status 28); if the server is only slow, raise the limit with \
             `--stall-timeout SECONDS` or the environment variable CUWHEEL_STALL_TIMEOUT (now 2), \
             or download the wheel yourself and pass its path"
        );
        let connect = failure(
            "u",
            Some(28),
            "curl: (28) Connection timed out after 3001 ms",
            t,
        );
        assert!(
            connect.contains("could not connect within 3 s"),
            "{connect}"
        );
        assert!(connect.contains("`--connect-timeout SECONDS`"), "{connect}");
        let total = failure(
            "u",
            Some(28),
            "curl: (28) Operation timed out after 9000 ms",
            t,
        );
        assert!(total.contains("did not finish within 9 s"), "{total}");
        assert!(total.contains("CUWHEEL_DOWNLOAD_TIMEOUT"), "{total}");
        assert_eq!(
            failure("u", Some(22), "curl: (22) 404", t),
            "the download of u failed (curl exit status 22):\ncurl: (22) 404"
        );
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

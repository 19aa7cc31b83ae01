//! URLs as messages may show them, and the characters no URL cuwheel
//! passes on may hold.
//!
//! In: a URL as the user gave it (pasted from a web page or an issue
//! tracker, so possibly malformed). Out: [`redact`]ed text safe to print —
//! no user, password, query or fragment, no terminal control characters —
//! and [`check_chars`]'s refusal of a URL holding whitespace or control
//! characters, which could start a new option in a configuration language
//! (curl's `--config`) or a new line in a log. Pure: no I/O.
//!
//! [`parse`] is the one door every URL from the command line goes through
//! (`upload --repository-url`, `publish --base-url`, `reproduce URL`): it
//! refuses white space and control characters (a leading or trailing space
//! included: a pasted URL is not silently trimmed), then parses with the
//! `url` crate (the WHATWG URL standard, as browsers and pip read URLs), so
//! user information is found where a URL parser finds it, not by splitting
//! at the first `/` or `@`. Every message shows the text [`redact`]ed.

use std::fmt::Write as _;

/// A parsed URL (the `url` crate's).
pub use ::url::Url;

/// The scheme of `text` (`https`, `HTTPS`, `file`…) when it starts with
/// `scheme://`, in any letter case.
pub fn scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// True when `arg` names something by `http://` or `https://` URL (any
/// letter case: `HTTPS://` is one too) rather than by path.
pub fn is_http(arg: &str) -> bool {
    scheme(arg).is_some_and(|s| s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https"))
}

/// The URL as messages may show it: `scheme://***@host:port/path?***`.
///
/// Everything up to the *last* `@` after the scheme is user information and
/// hidden, so a password holding an unencoded `/`, `?`, `#`, `:` or `@`
/// (`http://user:pa/ss@host/…`, `http://user:p#ss?w0rd@host/…`) leaks no
/// part of itself; an `@` in a path hides more than needed, never less.
/// After it, the query and fragment are hidden, and a port that is not a
/// number (`http://user:password/…`, a forgotten host) is hidden too.
/// Text without a scheme is treated the same way, and control characters
/// are escaped (`\n`, `\u{1b}`) so the result is one printable line.
pub fn redact(url: &str) -> String {
    let (prefix, rest) = match scheme(url) {
        Some(scheme) => url.split_at(scheme.len() + 3),
        None => ("", url),
    };
    let (userinfo, rest) = match rest.rfind('@') {
        Some(at) => (true, &rest[at + 1..]),
        None => (false, rest),
    };
    let (before_query, hidden_tail) = match rest.find(['?', '#']) {
        Some(at) => (&rest[..at], true),
        None => (rest, false),
    };
    let (authority, path) =
        before_query.split_at(before_query.find('/').unwrap_or(before_query.len()));
    let authority = match authority.rsplit_once(':') {
        Some((host, port))
            if !port.is_empty()
                && !port.chars().all(|c| c.is_ascii_digit())
                && !authority.ends_with(']') =>
        {
            format!("{host}:***")
        }
        _ => authority.to_string(),
    };
    let shown = format!(
        "{prefix}{}{authority}{path}{}",
        if userinfo { "***@" } else { "" },
        if hidden_tail { "?***" } else { "" }
    );
    printable(&shown)
}

/// `text` with control characters escaped as Rust writes them (`\n`,
/// `\u{1b}`), so no message carries a raw newline or escape sequence.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            let _ = write!(out, "{}", c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// Why a URL is refused: it holds a character that no URL holds
/// unencoded and that a configuration file or log would read as a break.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the URL {shown} holds {what} at character {position}, which no URL holds unencoded (a \
     newline there would start a new curl option): copy the URL again without it, or \
     percent-encode it ({encoded})"
)]
pub struct BadUrlChar {
    /// The URL, [`redact`]ed.
    pub shown: String,
    /// The character, named (`a newline (U+000A)`).
    pub what: String,
    /// Its position, counting characters from 1.
    pub position: usize,
    /// Its percent-encoding (`%0A`).
    pub encoded: String,
}

/// Refuses a URL holding whitespace or a control character (a newline, a
/// tab, an escape, U+2028…), naming the first one and where it is.
pub fn check_chars(url: &str) -> Result<(), BadUrlChar> {
    let Some((index, c)) = url
        .chars()
        .enumerate()
        .find(|(_, c)| c.is_whitespace() || c.is_control())
    else {
        return Ok(());
    };
    let name = match c {
        '\n' => "a newline",
        '\r' => "a carriage return",
        '\t' => "a tab",
        ' ' => "a space",
        '\u{1b}' => "an escape",
        '\0' => "a NUL",
        c if c.is_control() => "a control character",
        _ => "a white-space character",
    };
    let mut utf8 = [0; 4];
    let encoded = c
        .encode_utf8(&mut utf8)
        .bytes()
        .map(|b| format!("%{b:02X}"))
        .collect();
    Err(BadUrlChar {
        shown: redact(url),
        what: format!("{name} (U+{:04X})", c as u32),
        position: index + 1,
        encoded,
    })
}

/// `text` (another program's message about `url`) with the URL and every
/// part of its user information, query and fragment replaced by `***`, so
/// that a program echoing a part of it (curl naming the "host" it parsed
/// from a malformed URL) shows no secret.
pub fn scrub(text: &str, url: &str) -> String {
    let mut text = text.replace(url, &redact(url));
    let rest = match scheme(url) {
        Some(scheme) => &url[scheme.len() + 3..],
        None => url,
    };
    let mut secrets: Vec<&str> = Vec::new();
    if let Some(at) = rest.rfind('@') {
        let userinfo = &rest[..at];
        secrets.push(userinfo);
        secrets.extend(userinfo.split([':', '/', '?', '#', '@']));
    }
    let after = rest.rfind('@').map_or(rest, |at| &rest[at + 1..]);
    let authority = after.split(['/', '?', '#']).next().unwrap_or_default();
    if let Some((_, port)) = authority.rsplit_once(':') {
        if !port.chars().all(|c| c.is_ascii_digit()) && !authority.ends_with(']') {
            secrets.push(port);
        }
    }
    if let Some(at) = after.find(['?', '#']) {
        let tail = &after[at + 1..];
        secrets.push(tail);
        secrets.extend(tail.split(['&', '#', '?', '=']));
    }
    // Longest first, so a secret's parts do not break up the whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in secrets.into_iter().filter(|s| s.len() >= 2) {
        text = text.replace(secret, "***");
    }
    printable(&text)
}

/// Parses `text` (a URL the user gave, named `what` in messages, like
/// `--repository-url`, or `the URL`) with the `url` crate, after [`check_chars`]; the
/// error shows `text` only [`redact`]ed. An unencoded `/`, `?` or `#` in a
/// password makes the text no valid URL (the authority ends there): the
/// message then says how to write it.
pub fn parse(what: &str, text: &str) -> Result<Url, String> {
    check_chars(text).map_err(|e| match what {
        "the URL" => e.to_string(),
        what => format!("{what}: {e}"),
    })?;
    Url::parse(text).map_err(|e| {
        let after_scheme = scheme(text).map_or(text, |s| &text[s.len() + 3..]);
        let at = after_scheme.contains('@');
        // cuwheel's url crate has no Unicode tables (crates/cuwheel-build/Cargo.toml's
        // idna_adapter): a host outside ASCII is written in punycode.
        let host = after_scheme.split(['/', '?', '#']).next().unwrap_or("");
        let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
        let idn = !host.is_ascii();
        format!(
            "{what} {} is not a valid URL ({e}){}",
            redact(text),
            if idn {
                "; write a host outside ASCII in its punycode form (`xn--…`), as \
                 `idn2` or Python's `\"…\".encode(\"idna\")` gives it"
            } else if at {
                "; a user or password in it must have its `/`, `?`, `#` and `@` percent-encoded \
                 (%2F, %3F, %23, %40)"
            } else {
                ""
            }
        )
    })
}

/// Whether a parsed URL carries a user or a password.
pub fn has_credentials(url: &Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each URL with the secret that must not show, and its redacted form.
    const FORMS: &[(&str, &str, &str)] = &[
        (
            "https://alice:s3cret-token@example.org:8443/whl/demo.whl?X-Amz-Signature=abc123#frag",
            "s3cret-token",
            "https://***@example.org:8443/whl/demo.whl?***",
        ),
        (
            "HTTPS://user:PW-upper@h.test/x.whl",
            "PW-upper",
            "HTTPS://***@h.test/x.whl",
        ),
        (
            "http://user:pa/ss@h.test/x.whl",
            "pa/ss",
            "http://***@h.test/x.whl",
        ),
        (
            "http://user:p#ss?w0rd@h.test/x.whl",
            "p#ss?w0rd",
            "http://***@h.test/x.whl",
        ),
        (
            "http://user:p@ss@h.test/x.whl",
            "p@ss",
            "http://***@h.test/x.whl",
        ),
        (
            "https://user:pw:with:colons@h.test:443/x",
            "pw:with:colons",
            "https://***@h.test:443/x",
        ),
        (
            "https://x/a.whl?token=t0ken-value&b=1",
            "t0ken-value",
            "https://x/a.whl?***",
        ),
        (
            "https://x/a.whl#sha256=fragsecret",
            "fragsecret",
            "https://x/a.whl?***",
        ),
        (
            "http://user:forgotten-host/x.whl",
            "forgotten-host",
            "http://user:***/x.whl",
        ),
        (
            "user:no-scheme-pw@h.test/whl",
            "no-scheme-pw",
            "***@h.test/whl",
        ),
        (
            "hTtP://u:MiXeD-pw@h.test/x.whl",
            "MiXeD-pw",
            "hTtP://***@h.test/x.whl",
        ),
        (
            "http://user:pa\nss@h.test/x.whl\noutput = /tmp/victim",
            "pa\nss",
            "http://***@h.test/x.whl\\noutput = /tmp/victim",
        ),
    ];

    #[test]
    fn no_form_of_password_shows() {
        for (url, secret, shown) in FORMS {
            let redacted = redact(url);
            assert_eq!(&redacted, shown, "{url}");
            assert!(!redacted.contains(secret), "{url}: {redacted}");
            // Every piece of the secret at least 3 long is hidden too.
            for piece in secret.split(['/', '#', '?', '@', ':', '\n']) {
                if piece.len() >= 3 {
                    assert!(!redacted.contains(piece), "{url}: {piece} in {redacted}");
                }
            }
        }
    }

    #[test]
    fn plain_urls_and_ports_are_shown_whole() {
        for url in [
            "http://h/a.whl",
            "https://127.0.0.1:8443/whl/a.whl",
            "http://[::1]:8000/a.whl",
            "file:///srv/whl",
            "dist/a.whl",
        ] {
            assert_eq!(redact(url), url);
        }
    }

    #[test]
    fn schemes_are_recognised_in_any_case() {
        for url in [
            "https://h/w.whl",
            "HTTPS://h/w.whl",
            "Http://h/w.whl",
            "http://1/",
        ] {
            assert!(is_http(url), "{url}");
        }
        for not in [
            "dist/w.whl",
            "file:///w.whl",
            "ftp://h/w",
            "://h",
            "1http://h",
            "./http://h",
        ] {
            assert!(!is_http(not), "{not}");
        }
        assert_eq!(scheme("FILE:///x"), Some("FILE"));
    }

    #[test]
    fn whitespace_and_control_characters_are_refused_with_their_position() {
        let url = "http://u:pw-secret@h.invalid/x.whl\noutput = /dev/null";
        let err = check_chars(url).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the URL http://***@h.invalid/x.whl\\noutput = /dev/null holds a newline (U+000A) \
             at character 35, which no URL holds unencoded (a newline there would start a new \
             curl option): copy the URL again without it, or percent-encode it (%0A)"
        );
        assert!(!err.to_string().contains("pw-secret"));
        for (url, what, position) in [
            ("http://h/a b.whl", "a space (U+0020)", 11),
            ("http://h/\ta.whl", "a tab (U+0009)", 10),
            ("http://h/a.whl\r", "a carriage return (U+000D)", 15),
            ("http://h/\u{1b}[2J", "an escape (U+001B)", 10),
            ("http://h/\u{2028}", "a white-space character (U+2028)", 10),
            ("http://h/\u{85}", "a control character (U+0085)", 10),
        ] {
            let err = check_chars(url).unwrap_err();
            assert_eq!(
                (err.what.as_str(), err.position),
                (what, position),
                "{url:?}"
            );
            assert!(!err.to_string().contains(['\t', '\r', '\u{1b}', '\u{85}']));
        }
        check_chars("https://h/é/a%20b.whl?x=1#y").unwrap();
    }

    #[test]
    fn a_programs_message_is_scrubbed_of_every_secret_part() {
        for (url, secret, _) in FORMS {
            let message = format!(
                "curl: (3) {url} bad; host {secret}; pieces {}",
                secret.replace(['/', '#', '?', '@', ':'], " ")
            );
            let scrubbed = scrub(&message, url);
            for piece in secret.split(['/', '#', '?', '@', ':']) {
                if piece.len() >= 2 {
                    assert!(!scrubbed.contains(piece), "{url}: {piece} in {scrubbed}");
                }
            }
            assert!(!scrubbed.contains('\n'), "{scrubbed}");
        }
        assert_eq!(
            scrub(
                "curl: (22) The requested URL returned error: 404",
                "http://h/a.whl"
            ),
            "curl: (22) The requested URL returned error: 404"
        );
    }

    #[test]
    fn parse_finds_credentials_as_a_url_parser_does_and_never_shows_them() {
        for (text, secret) in [
            ("http://alice:pa%2FssPW@host/", "pa%2FssPW"),
            ("ftp://alice:PW-ftp@host/", "PW-ftp"),
            ("http://alice:p@ss-at@host/", "ss-at"),
            ("https://alice:p%40ss%3Aw@host:8443/x", "ss%3Aw"),
            ("http://alice@host/", "alice"),
        ] {
            let url = parse("--x", text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(has_credentials(&url), "{text}");
            assert!(!redact(url.as_str()).contains(secret), "{text}");
        }
        for (text, message) in [
            (
                "file://alice:PW-file@host/x",
                "--x file://***@host/x is not a valid URL (invalid international domain name); a \
                 user or password in it must have its `/`, `?`, `#` and `@` percent-encoded (%2F, \
                 %3F, %23, %40)",
            ),
            (
                "http://alice:pa/ssPW@host/",
                "--x http://***@host/ is not a valid URL (invalid port number); a user or \
                 password in it must have its `/`, `?`, `#` and `@` percent-encoded (%2F, %3F, \
                 %23, %40)",
            ),
            (
                " ftp://alice:PW@host/",
                "--x: the URL ***@host/ holds a space (U+0020) at character 1, which no URL \
                 holds unencoded (a newline there would start a new curl option): copy the URL \
                 again without it, or percent-encode it (%20)",
            ),
            (
                "https://alice:PW@host/ ",
                "--x: the URL https://***@host/  holds a space (U+0020) at character 23, which \
                 no URL holds unencoded (a newline there would start a new curl option): copy \
                 the URL again without it, or percent-encode it (%20)",
            ),
        ] {
            assert_eq!(parse("--x", text).unwrap_err(), message, "{text}");
        }
        assert!(!has_credentials(&parse("--x", "https://h/a.whl").unwrap()));
    }

    #[test]
    fn a_host_outside_ascii_is_refused_with_its_punycode_named_and_the_punycode_parses() {
        let err = parse("--base-url", "https://bücher.example/simple/").unwrap_err();
        assert!(
            err.starts_with("--base-url https://bücher.example/simple/ is not a valid URL (")
                && err.contains("punycode form (`xn--…`)"),
            "{err}"
        );
        let url = parse("--base-url", "https://xn--bcher-kva.example/simple/").unwrap();
        assert_eq!(url.host_str(), Some("xn--bcher-kva.example"));
    }
}

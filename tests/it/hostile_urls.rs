//! Hostile URLs given to `cuwheel reproduce` and `cuwheel publish
//! --base-url` (the binary, real curl, loopback servers made here):
//! a newline in a URL reaches no curl option (the victim file is untouched,
//! the server gets no request); a server that accepts and never answers
//! fails the download within `--stall-timeout`, with a message that says so
//! and how to raise it; and no form of password (`pa/ss`, `p#ss?w0rd`, an
//! upper-case scheme, `%`, `@` or `:` inside it, leading or trailing
//! spaces, any scheme) appears in any output. `cuwheel upload
//! --repository-url` refuses every URL carrying a user or password before
//! twine starts, and a twine that records its argv and environment shows
//! the password reaching it only through `TWINE_PASSWORD`, never its
//! command line.

use crate::common;
use crate::common::texts;

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};

use crate::common::cuwheel_bin;

/// `cuwheel reproduce` of `url` in an empty project, under `timeout 60`.
fn reproduce(project: &Path, url: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = common::bounded(60, cuwheel_bin().to_str().unwrap());
    cmd.arg("reproduce")
        .arg("--project")
        .arg(project)
        .args(extra)
        .arg(url)
        .env("NO_PROXY", "127.0.0.1")
        .env("no_proxy", "127.0.0.1")
        .env_remove("CUWHEEL_CONNECT_TIMEOUT")
        .env_remove("CUWHEEL_DOWNLOAD_TIMEOUT")
        .env_remove("CUWHEEL_STALL_TIMEOUT");
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd.output().expect("cuwheel runs")
}

/// A loopback port where nothing listens.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_newline_in_a_url_overwrites_nothing_and_asks_no_server() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    server.set_nonblocking(true).unwrap();
    let port = server.local_addr().unwrap().port();
    // As pasted by an attacker: the last line makes the URL end in `.whl`.
    let url = format!(
        "http://h.invalid/x.whl\noutput = /dev/null\nurl = http://127.0.0.1:{port}/p.whl\noutput \
         = {}\nurl = http://h.invalid/y.whl",
        victim.display()
    );
    let out = reproduce(tmp.path(), &url, &[], &[]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        format!(
            "error: the URL http://h.invalid/x.whl\\noutput = /dev/null\\nurl = \
             http://127.0.0.1:{port}/p.whl\\noutput = {}\\nurl = http://h.invalid/y.whl holds a \
             newline (U+000A) at character 23, which no URL holds unencoded (a newline there would start a new curl option): \
             copy the URL again without it, or percent-encode it (%0A)\n",
            victim.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(
        matches!(server.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the server got a connection"
    );
    // A tab, a carriage return and an escape are refused the same way.
    for (bad, name, code) in [
        ('\t', "a tab (U+0009)", "%09"),
        ('\r', "a carriage return (U+000D)", "%0D"),
        ('\u{1b}', "an escape (U+001B)", "%1B"),
    ] {
        let url = format!("http://127.0.0.1:{port}/x{bad}.whl");
        let out = reproduce(tmp.path(), &url, &[], &[]);
        let (_, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(
            stderr,
            format!(
                "error: the URL http://127.0.0.1:{port}/x{}.whl holds {name} at character {}, \
                 which no URL holds unencoded (a newline there would start a new curl option): \
                 copy the URL again without it, or percent-encode it ({code})\n",
                bad.escape_debug(),
                url.find(bad).unwrap() + 1
            )
        );
    }
    assert!(matches!(server.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
}

/// A server that accepts every connection and never sends a byte; returns
/// its port. The connections are held until the test process ends.
fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    port
}

#[test]
fn a_server_that_never_answers_fails_the_download_with_how_to_wait_longer() {
    let tmp = tempfile::tempdir().unwrap();
    let port = silent_server();
    let url = format!("http://127.0.0.1:{port}/demo-1.0-py3-none-any.whl");
    let expected = format!(
        "reproduce: downloading {url}\nerror: the download of {url} timed out: the server did \
         not answer: no byte came for 1 s (curl exit status 28); if the server is only slow, \
         raise the limit with `--stall-timeout SECONDS` or the environment variable \
         CUWHEEL_STALL_TIMEOUT (now 1), or download the wheel yourself and pass its path\n"
    );
    for (flags, env) in [
        (&["--stall-timeout", "1"][..], &[][..]),
        (&[][..], &[("CUWHEEL_STALL_TIMEOUT", "1")][..]),
    ] {
        let out = reproduce(tmp.path(), &url, flags, env);
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stdout, "");
        assert_eq!(stderr, expected);
    }

    // The total limit, with the stall limit above it.
    for (flags, env) in [
        (&["--download-timeout", "1"][..], &[][..]),
        (&[][..], &[("CUWHEEL_DOWNLOAD_TIMEOUT", "1")][..]),
    ] {
        let out = reproduce(tmp.path(), &url, flags, env);
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stdout, "");
        assert_eq!(
            stderr,
            format!(
                "reproduce: downloading {url}\nerror: the download of {url} timed out: the \
                 download did not finish within 1 s (curl exit status 28); if the server is only \
                 slow, raise the limit with `--download-timeout SECONDS` or the environment \
                 variable CUWHEEL_DOWNLOAD_TIMEOUT (now 1), or download the wheel yourself and \
                 pass its path\n"
            )
        );
    }

    let out = reproduce(tmp.path(), &url, &[], &[("CUWHEEL_STALL_TIMEOUT", "soon")]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "error: the environment variable CUWHEEL_STALL_TIMEOUT is `soon`, not a whole number of \
         seconds above 0: set it to e.g. 120, unset it, or pass --stall-timeout SECONDS\n"
    );
}

#[test]
fn no_form_of_password_is_printed_by_reproduce() {
    let tmp = tempfile::tempdir().unwrap();
    let port = closed_port();
    let host = format!("127.0.0.1:{port}");
    // (URL, the secrets in it, stderr before curl's own line, curl's status)
    let cases: Vec<(String, Vec<&str>, String, Option<u32>)> = vec![
        (
            format!("http://alice:pa/ss@{host}/x.whl"),
            vec!["alice", "pa/ss", "ss@"],
            format!(
                "error: the URL http://***@{host}/x.whl is not a valid URL (invalid port number); a user or password in it must have its \
                 `/`, `?`, `#` and `@` percent-encoded (%2F, %3F, %23, %40)\n"
            ),
            None,
        ),
        (
            format!("http://alice:p#ss?w0rd@{host}/x.whl"),
            vec!["alice", "p#ss", "w0rd"],
            format!(
                "error: the URL http://***@{host}/x.whl is not a valid URL (invalid port number); a user or password in it must have its \
                 `/`, `?`, `#` and `@` percent-encoded (%2F, %3F, %23, %40)\n"
            ),
            None,
        ),
        // A password holding a percent-encoded `/`, an `@`, a `:` or a `%`:
        // a valid URL, whose user information reaches curl only on its
        // standard input.
        (
            format!("http://alice:pa%2Fss-pct@{host}/x.whl"),
            vec!["alice", "pa%2Fss-pct", "ss-pct"],
            format!(
                "reproduce: downloading http://***@{host}/x.whl\nerror: the download of \
                 http://***@{host}/x.whl failed (curl exit status 7):\n"
            ),
            Some(7),
        ),
        (
            // curl itself refuses the bare `%` (exit 3); its message is scrubbed.
            format!("http://alice:p@ss:w%rd-at@{host}/x.whl"),
            vec!["alice", "p@ss", "w%rd-at"],
            format!(
                "reproduce: downloading http://***@{host}/x.whl\nerror: the download of \
                 http://***@{host}/x.whl failed (curl exit status 3):\n"
            ),
            Some(3),
        ),
        // Leading and trailing spaces: refused, not trimmed, and not taken
        // for a path (whose message would quote it whole).
        (
            format!(" https://alice:lead-secret@{host}/x.whl"),
            vec!["alice", "lead-secret"],
            format!(
                "error: the URL ***@{host}/x.whl holds a space (U+0020) at character 1, which \
                 no URL holds unencoded (a newline there would start a new curl option): copy \
                 the URL again without it, or percent-encode it (%20)\n"
            ),
            None,
        ),
        (
            format!("https://alice:trail-secret@{host}/x.whl "),
            vec!["alice", "trail-secret"],
            format!(
                "error: the URL https://***@{host}/x.whl  holds a space (U+0020) at character \
                 {}, which no URL holds unencoded (a newline there would start a new curl \
                 option): copy the URL again without it, or percent-encode it (%20)\n",
                34 + host.len()
            ),
            None,
        ),
        (
            format!("HTTPS://alice:PW-upper-secret@{host}/x.whl"),
            vec!["alice", "PW-upper-secret"],
            format!(
                "reproduce: downloading HTTPS://***@{host}/x.whl\nerror: the download of \
                 HTTPS://***@{host}/x.whl failed (curl exit status 7):\n"
            ),
            Some(7),
        ),
        (
            format!("http://alice:s3cret@{host}/x.whl?token=t0ken-value#frag-secret"),
            vec!["alice", "s3cret", "t0ken-value", "frag-secret"],
            format!(
                "reproduce: downloading http://***@{host}/x.whl?***\nerror: the download of \
                 http://***@{host}/x.whl?*** failed (curl exit status 7):\n"
            ),
            Some(7),
        ),
        (
            format!("ftp://alice:ftp-secret@{host}/x.whl"),
            vec!["alice", "ftp-secret"],
            format!(
                "error: ftp://***@{host}/x.whl: only http:// and https:// URLs are downloaded; \
                 download the wheel yourself and pass its path\n"
            ),
            None,
        ),
        (
            format!("http://alice:nl-secret@{host}/x.whl\noutput = /dev/null"),
            vec!["alice", "nl-secret"],
            format!(
                "error: the URL http://***@{host}/x.whl\\noutput = /dev/null holds a newline \
                 (U+000A) at character {}, which no URL holds unencoded (a newline there would \
                 start a new curl option): copy the URL again without it, or percent-encode it \
                 (%0A)\n",
                30 + host.len()
            ),
            None,
        ),
    ];
    for (url, secrets, before_curl, curl_status) in cases {
        for json in [false, true] {
            let out = reproduce(tmp.path(), &url, if json { &["--json"] } else { &[] }, &[]);
            let (stdout, stderr) = texts(&out);
            assert_eq!(out.status.code(), Some(1), "{url:?}: {stderr}");
            for secret in &secrets {
                assert!(
                    !stdout.contains(secret) && !stderr.contains(secret),
                    "{url:?}: `{secret}` printed:\n{stdout}{stderr}"
                );
            }
            if json {
                continue;
            }
            assert_eq!(stdout, "", "{url:?}");
            match curl_status {
                // Then one line of curl's own, scrubbed, whose words vary
                // with curl's version.
                Some(status) => {
                    let curl = stderr
                        .strip_prefix(&before_curl)
                        .unwrap_or_else(|| panic!("{url:?}:\n{stderr}"));
                    assert!(
                        curl.starts_with(&format!("curl: ({status}) "))
                            && curl.ends_with('\n')
                            && curl.lines().count() == 1,
                        "{url:?}: {curl}"
                    );
                }
                None => assert_eq!(stderr, before_curl, "{url:?}"),
            }
        }
    }
}

#[test]
fn no_form_of_password_is_printed_by_publish_base_url() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    let wheel = tmp.path().join("demo_ext-0.1.0-py3-none-any.whl");
    let at = "it holds `@`: give it without user or password (the index pages would show them), \
              and percent-encode an `@` of a path as %40";
    for (url, secret, shown, why) in [
        (
            "https://user:PASSWORD-one@example.test/whl",
            "PASSWORD-one",
            "https://***@example.test/whl",
            at,
        ),
        (
            "HTTPS://user:PASSWORD-two@example.test/",
            "PASSWORD-two",
            "HTTPS://***@example.test/",
            at,
        ),
        (
            "http://user:pa/ss-three@example.test/",
            "ss-three",
            "http://***@example.test/",
            at,
        ),
        (
            "http://user:p#ss?w0rd-four@example.test/",
            "w0rd-four",
            "http://***@example.test/",
            at,
        ),
        (
            "http://user:pa%2Fss%40w%3Ad-pct@example.test/",
            "ss%40w%3Ad-pct",
            "http://***@example.test/",
            at,
        ),
        (
            "ftp://user:ftp-seven@example.test/",
            "ftp-seven",
            "ftp://***@example.test/",
            "the scheme `ftp` is not http, https or file",
        ),
        (
            " https://user:lead-eight@example.test/",
            "lead-eight",
            "***@example.test/",
            "it has no scheme",
        ),
        (
            "https://user:trail-nine@example.test/ ",
            "trail-nine",
            "https://***@example.test/ ",
            at,
        ),
        (
            "https://example.test:99999/whl",
            "no-secret-here",
            "https://example.test:99999/whl",
            "it is not a valid URL (invalid port number)",
        ),
        (
            "user:no-scheme-five@example.test/whl",
            "no-scheme-five",
            "***@example.test/whl",
            "it has no scheme",
        ),
        (
            "https://example.test/whl?token=six-secret",
            "six-secret",
            "https://example.test/whl?***",
            "it has a query or fragment, after which a wheel's name cannot go",
        ),
    ] {
        let out = Command::new(cuwheel_bin())
            .arg("publish")
            .arg("--to")
            .arg(&index)
            .args(["--base-url", url])
            .arg(&wheel)
            .output()
            .unwrap();
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stdout, "");
        assert_eq!(
            stderr,
            format!(
                "error: --base-url `{shown}` is not usable: {why}; give the http://, https:// or \
                 file:// URL the wheels are served under, e.g. https://example.org/whl\n"
            )
        );
        assert!(!stderr.contains(secret), "{stderr}");
        assert!(!index.exists(), "nothing was written");
    }
}

/// A fake twine that writes its arguments, one a line, to `argv` and its
/// `TWINE_PASSWORD` to `env`, and succeeds.
fn recording_twine(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let fake = dir.join("twine");
    let argv = dir.join("argv");
    let env = dir.join("env");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" > '{}'\nprintf '%s' \"$TWINE_PASSWORD\" > '{}'\n",
            argv.display(),
            env.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (fake, argv, env)
}

fn upload(fake: &Path, url: &str, wheel: &Path) -> Output {
    common::bounded(60, cuwheel_bin().to_str().unwrap())
        .arg("upload")
        .args(["--repository-url", url, "--twine"])
        .arg(fake)
        .arg(wheel)
        .env("TWINE_USERNAME", "alice")
        .env("TWINE_PASSWORD", "env-Secret-0")
        .output()
        .unwrap()
}

#[test]
fn upload_refuses_every_url_with_credentials_and_never_passes_one_to_twine() {
    let tmp = tempfile::tempdir().unwrap();
    let wheel = common::tiny_wheel(&tmp.path().join("w"), false);
    let (fake, argv, env) = recording_twine(tmp.path());
    let carries = |shown: &str| {
        format!(
            "error: --repository-url {shown} carries credentials (user@ or user:password@ before \
             the host), which would show in process lists and logs; give the URL without them \
             and set TWINE_USERNAME and TWINE_PASSWORD instead\n"
        )
    };
    let space = |shown: &str, at: usize| {
        format!(
            "error: --repository-url: the URL {shown} holds a space (U+0020) at character {at}, \
             which no URL holds unencoded (a newline there would start a new curl option): copy \
             the URL again without it, or percent-encode it (%20)\n"
        )
    };
    let invalid = |shown: &str, why: &str| {
        format!(
            "error: --repository-url {shown} is not a valid URL ({why}); a user or password in \
             it must have its `/`, `?`, `#` and `@` percent-encoded (%2F, %3F, %23, %40)\n"
        )
    };
    // (URL, the secret, the exact message)
    let cases = [
        (
            "ftp://alice:PW-ftp@host/",
            "PW-ftp",
            carries("ftp://***@host/"),
        ),
        (
            "http://alice:pa%2FssPW@host/",
            "ssPW",
            carries("http://***@host/"),
        ),
        (
            "https://alice:p@ss-at@host/",
            "ss-at",
            carries("https://***@host/"),
        ),
        (
            "https://alice:p:ss-colon@host/",
            "ss-colon",
            carries("https://***@host/"),
        ),
        (
            "https://alice:p%ss-pct@host/",
            "ss-pct",
            carries("https://***@host/"),
        ),
        (
            "HTTPS://alice:PW-upper@host/",
            "PW-upper",
            carries("HTTPS://***@host/"),
        ),
        (
            "https://token-only@host/",
            "token-only",
            carries("https://***@host/"),
        ),
        (
            "sftp://alice:PW-sftp@host:22/",
            "PW-sftp",
            carries("sftp://***@host:22/"),
        ),
        (
            "http://alice:pa/ssPW@host/",
            "ssPW",
            invalid("http://***@host/", "invalid port number"),
        ),
        (
            "http://alice:p#ss?w0rd@host/",
            "w0rd",
            invalid("http://***@host/", "invalid port number"),
        ),
        (
            " ftp://alice:PW-lead@host/",
            "PW-lead",
            space("***@host/", 1),
        ),
        (
            "https://alice:PW-trail@host/ ",
            "PW-trail",
            space("https://***@host/ ", 29),
        ),
        (
            "ftp://host/",
            "no-secret-here",
            "error: --repository-url ftp://host/ is not an http:// or https:// URL; give the \
             index's upload URL\n"
                .to_string(),
        ),
    ];
    for (url, secret, message) in cases {
        let out = upload(&fake, url, &wheel);
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{url:?}: {stderr}");
        assert_eq!(
            (stdout.as_str(), stderr.as_str()),
            ("", message.as_str()),
            "{url:?}"
        );
        assert!(!stderr.contains(secret), "{url:?}");
        assert!(!argv.exists(), "{url:?}: twine was started");
    }
    // Without credentials in the URL, twine starts; the password reaches it
    // in its environment only, never on its command line (what process
    // lists show).
    let out = upload(&fake, "http://127.0.0.1:9/legacy/", &wheel);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stdout.contains("env-Secret-0") && !stderr.contains("env-Secret-0"));
    let args = std::fs::read_to_string(&argv).unwrap();
    assert_eq!(
        args,
        format!(
            "{}\nupload\n--non-interactive\n--disable-progress-bar\n--repository-url\n\
             http://127.0.0.1:9/legacy/\n{}\n",
            fake.display(),
            wheel.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "env-Secret-0");
}

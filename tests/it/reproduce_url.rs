//! `cuwheel reproduce` with a wheel URL that carries a user, a password and
//! a token (real curl, against a loopback port where nothing listens): the
//! download fails, and neither the error, the progress lines nor the
//! `--json` error object shows the secrets.

use crate::common;
use std::process::Command;

#[test]
fn url_credentials_and_tokens_are_never_printed() {
    // Port 9 (discard) on loopback: nothing listens, curl fails at once.
    let url =
        "http://alice:s3cret-pw@127.0.0.1:9/whl/demo_ext-0.1.0-py3-none-any.whl?token=t0ken-value";
    for json in [false, true] {
        let mut cmd = Command::new(common::cuwheel_bin());
        cmd.args(["reproduce", "--project"])
            .arg(crate::common::demo())
            .arg(url);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().expect("cuwheel runs");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{all}");
        for secret in ["alice", "s3cret-pw", "t0ken-value"] {
            assert!(!all.contains(secret), "`{secret}` printed:\n{all}");
        }
        assert!(
            all.contains("http://***@127.0.0.1:9/whl/demo_ext-0.1.0-py3-none-any.whl?***"),
            "{all}"
        );
        if json {
            let error: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(
                error["error"].as_str().unwrap().contains("download"),
                "{error}"
            );
        }
    }
}

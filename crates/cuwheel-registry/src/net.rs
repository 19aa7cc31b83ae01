//! The limits every network client cuwheel runs is given: pip, apt-get,
//! curl and cargo never wait forever on a registry that accepts a
//! connection and then stalls, and give up after a bounded number of tries.
//!
//! In: `--net-timeout` / `--net-retries` (set once by the command line), or
//! `$CUWHEEL_NET_TIMEOUT` / `$CUWHEEL_NET_RETRIES`, or the defaults (30 s,
//! 2 retries). Out: [`NetLimits`] and each client's options for them:
//! - pip: `--timeout S --retries N` (its socket timeout, which bounds the
//!   connect and each stalled read);
//! - apt-get: `-o Acquire::http::Timeout=S -o Acquire::https::Timeout=S
//!   -o Acquire::Retries=N` (connect and stall timeouts);
//! - curl: `--connect-timeout S`, `--speed-limit 1 --speed-time S` (a
//!   transfer stalled for S seconds ends), `--retry N`;
//! - cargo: `CARGO_HTTP_TIMEOUT=S`, `CARGO_NET_RETRY=N`.
//!
//! A whole download is not cut at a fixed time (a torch wheel over a slow
//! link legitimately takes long): what is bounded is every wait without
//! progress.

use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

/// The variable giving the timeout in seconds.
pub const TIMEOUT_VARIABLE: &str = "CUWHEEL_NET_TIMEOUT";
/// The variable giving the number of retries.
pub const RETRIES_VARIABLE: &str = "CUWHEEL_NET_RETRIES";

/// Seconds a client waits for a connection or for progress.
const DEFAULT_TIMEOUT_S: u32 = 30;
/// Tries after the first.
const DEFAULT_RETRIES: u32 = 2;

/// How long each network client waits and how often it tries again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetLimits {
    /// Seconds to wait for a connection, or for progress on one (>= 1).
    pub timeout_s: u32,
    /// Tries after the first failed one.
    pub retries: u32,
}

impl Default for NetLimits {
    fn default() -> Self {
        NetLimits {
            timeout_s: DEFAULT_TIMEOUT_S,
            retries: DEFAULT_RETRIES,
        }
    }
}

static CHOSEN: OnceLock<NetLimits> = OnceLock::new();

impl NetLimits {
    /// The limits from the flags where given, else the variables, else the
    /// defaults; a variable that is not a number is an error.
    pub fn resolve(timeout_s: Option<u32>, retries: Option<u32>) -> Result<NetLimits> {
        let timeout_s = match timeout_s {
            Some(value) => value,
            None => variable(TIMEOUT_VARIABLE)?.unwrap_or(DEFAULT_TIMEOUT_S),
        };
        if timeout_s == 0 {
            bail!(
                "a network timeout of 0 seconds would fail every download; give at least 1 \
                 (--net-timeout or ${TIMEOUT_VARIABLE})"
            );
        }
        let retries = match retries {
            Some(value) => value,
            None => variable(RETRIES_VARIABLE)?.unwrap_or(DEFAULT_RETRIES),
        };
        Ok(NetLimits { timeout_s, retries })
    }

    /// Makes `self` the limits of every client this process runs; the first
    /// call wins.
    pub fn install(self) {
        let _ = CHOSEN.set(self);
    }

    /// The installed limits, else those of the variables or the defaults.
    pub fn current() -> NetLimits {
        CHOSEN
            .get()
            .copied()
            .unwrap_or_else(|| NetLimits::resolve(None, None).unwrap_or_default())
    }

    /// pip's options.
    pub fn pip_args(&self) -> Vec<String> {
        vec![
            "--timeout".into(),
            self.timeout_s.to_string(),
            "--retries".into(),
            self.retries.to_string(),
        ]
    }

    /// apt-get's `-o` options.
    pub fn apt_args(&self) -> Vec<String> {
        let timeout = self.timeout_s;
        [
            format!("Acquire::http::Timeout={timeout}"),
            format!("Acquire::https::Timeout={timeout}"),
            format!("Acquire::Retries={}", self.retries),
        ]
        .into_iter()
        .flat_map(|option| ["-o".to_string(), option])
        .collect()
    }

    /// curl's options.
    pub fn curl_args(&self) -> Vec<String> {
        let timeout = self.timeout_s.to_string();
        vec![
            "--connect-timeout".into(),
            timeout.clone(),
            "--speed-limit".into(),
            "1".into(),
            "--speed-time".into(),
            timeout,
            "--retry".into(),
            self.retries.to_string(),
        ]
    }

    /// cargo's environment.
    pub fn cargo_env(&self) -> [(&'static str, String); 2] {
        [
            ("CARGO_HTTP_TIMEOUT", self.timeout_s.to_string()),
            ("CARGO_NET_RETRY", self.retries.to_string()),
        ]
    }

    /// What to tell a user whose registry is slow.
    pub fn how_to_change() -> String {
        format!(
            "--net-timeout SECONDS and --net-retries N (or ${TIMEOUT_VARIABLE}, \
             ${RETRIES_VARIABLE})"
        )
    }
}

/// A whole number from the variable `name`, if set.
fn variable(name: &str) -> Result<Option<u32>> {
    match std::env::var(name) {
        Ok(text) => text.trim().parse().map(Some).with_context(|| {
            format!("${name} is `{text}`, not a whole number; set it to a number, or unset it")
        }),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(_) => bail!("${name} is not UTF-8; set it to a whole number, or unset it"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_gets_the_limits() {
        let limits = NetLimits {
            timeout_s: 7,
            retries: 0,
        };
        assert_eq!(limits.pip_args().join(" "), "--timeout 7 --retries 0");
        assert_eq!(
            limits.apt_args().join(" "),
            "-o Acquire::http::Timeout=7 -o Acquire::https::Timeout=7 -o Acquire::Retries=0"
        );
        assert_eq!(
            limits.curl_args().join(" "),
            "--connect-timeout 7 --speed-limit 1 --speed-time 7 --retry 0"
        );
        assert_eq!(limits.cargo_env()[0], ("CARGO_HTTP_TIMEOUT", "7".into()));
    }

    #[test]
    fn flags_win_and_zero_is_refused() {
        let limits = NetLimits::resolve(Some(5), Some(1)).unwrap();
        assert_eq!(
            limits,
            NetLimits {
                timeout_s: 5,
                retries: 1
            }
        );
        let err = NetLimits::resolve(Some(0), Some(1))
            .unwrap_err()
            .to_string();
        assert!(err.contains("at least 1"), "{err}");
    }
}

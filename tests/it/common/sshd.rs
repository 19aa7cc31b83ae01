//! An OpenSSH server on 127.0.0.1 for one test: a throwaway host key and
//! client key in a temporary directory, a high port the system picked, and
//! logins for the current user with that client key only. Stopped on drop,
//! and after [`LIMIT_S`] seconds in any case (it runs under `timeout`).
//!
//! It needs Debian's `openssh-server` (`/usr/sbin/sshd`); as root, also
//! sshd's privilege-separation directory `/run/sshd`, which Debian's
//! ssh.service makes when it starts and which is made here if missing.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use base64::Engine;

use super::{bounded, run_ok, stop};

/// The longest an sshd of a test lives.
pub const LIMIT_S: u32 = 1200;

const SSHD: &str = "/usr/sbin/sshd";

pub struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
    pub port: u16,
    /// The user it lets in (the one running the test).
    pub user: String,
}

impl Sshd {
    pub fn start() -> Sshd {
        assert!(
            Path::new(SSHD).is_file(),
            "{SSHD} is missing: install OpenSSH's server (`apt-get install openssh-server`; \
             `bash tests/run.sh` installs it)"
        );
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (key, comment) in [
            ("host", "cuwheel-test-host"),
            ("client", "cuwheel-test-client"),
        ] {
            run_ok(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
                    .arg(d.join(key)),
            );
        }
        fs::copy(d.join("client.pub"), d.join("authorized_keys")).unwrap();
        let user = String::from_utf8(run_ok(Command::new("id").arg("-un")).stdout)
            .unwrap()
            .trim()
            .to_string();
        if user == "root" {
            fs::create_dir_all("/run/sshd").unwrap();
        }
        // A port nothing listens on now; sshd binds it a moment later.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = d.join("sshd_config");
        fs::write(
            &config,
            format!(
                "ListenAddress 127.0.0.1\nPort {port}\nHostKey {host}\n\
                 AuthorizedKeysFile {keys}\nPidFile {pid}\nAllowUsers {user}\n\
                 PermitRootLogin prohibit-password\nPubkeyAuthentication yes\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 StrictModes no\n",
                host = d.join("host").display(),
                keys = d.join("authorized_keys").display(),
                pid = d.join("sshd.pid").display(),
            ),
        )
        .unwrap();
        let log = d.join("sshd.log");
        let child = bounded(LIMIT_S, SSHD)
            .args(["-D", "-f"])
            .arg(&config)
            .arg("-E")
            .arg(&log)
            .spawn()
            .expect("timeout runs sshd");
        let mut sshd = Sshd {
            dir,
            child,
            port,
            user,
        };
        let start = Instant::now();
        while !sshd.log().contains("Server listening on 127.0.0.1 port") {
            let exited = sshd.child.try_wait().unwrap();
            assert!(
                exited.is_none() && start.elapsed() < Duration::from_secs(30),
                "sshd did not start listening on 127.0.0.1:{port} ({exited:?}); its log:\n{}",
                sshd.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        sshd
    }

    /// The client's private key.
    pub fn client_key(&self) -> PathBuf {
        self.dir.path().join("client")
    }

    /// The host's public key, base64-encoded as a Nix machines line wants it.
    pub fn host_key_base64(&self) -> String {
        let public = fs::read(self.dir.path().join("host.pub")).unwrap();
        base64::engine::general_purpose::STANDARD.encode(public.trim_ascii_end())
    }

    /// `NIX_SSHOPTS` for Nix's ssh: this port; no user or system ssh
    /// config; no prompt; the host key checked under the host name Nix
    /// writes the machines line's key for (without this, ssh would look it
    /// up as `[127.0.0.1]:PORT`).
    pub fn nix_sshopts(&self) -> String {
        format!(
            "-F /dev/null -p {} -o HostKeyAlias=127.0.0.1 -o StrictHostKeyChecking=yes \
             -o BatchMode=yes -o IdentitiesOnly=yes",
            self.port
        )
    }

    /// What sshd logged so far (connections, logins, errors).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// A directory of the test's for files beside the server's.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

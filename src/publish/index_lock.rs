//! One publish at a time per index directory: an exclusive `flock(2)` on
//! `DIR/.lock`.
//!
//! In: the index directory (created here when missing). Out: an
//! [`IndexLock`] held until it is dropped; a second publish into the same
//! directory waits for it, and says once, through the caller's `on_wait`,
//! that it waits, on which file and for which process ([`Waiting`], read
//! from `/proc/locks`). The kernel releases the lock when its holder exits,
//! killed or not, so a stopped publish never leaves the directory locked.
//! The lock file itself stays (it is empty, and a dot-file the index never
//! serves); only a refused first publish removes it, with the directory it
//! created ([`IndexLock::remove_new_dir`]). A waiter whose lock file was
//! removed that way finds its lock on a file no longer in `DIR` and takes
//! the lock again, so two publishes never hold a lock at once.

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use cuwheel_registry::file_lock::{FileLock, flock};

/// The lock file inside the index directory.
pub const LOCK_FILE: &str = ".lock";

/// How many times the lock is taken again after its file was removed
/// under a waiter (each time by a refused first publish).
const RETRIES: usize = 1000;

/// The held lock; released on drop.
#[derive(Debug)]
pub struct IndexLock {
    _file: File,
    dir: PathBuf,
    /// This publish created the directory.
    created_dir: bool,
}

/// A publish that has to wait: the lock file and what holds it, if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub lock_file: PathBuf,
    /// The holding process: its id and command line.
    pub holder: Option<(u32, Option<String>)>,
}

impl fmt::Display for Waiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "waiting for the lock {}, held by ",
            self.lock_file.display()
        )?;
        match &self.holder {
            Some((pid, Some(command))) => write!(f, "process {pid} (`{command}`)")?,
            Some((pid, None)) => write!(f, "process {pid}")?,
            None => write!(f, "another process")?,
        }
        write!(
            f,
            ": another publish into this index is running; this one goes on once it ends"
        )
    }
}

impl IndexLock {
    /// Whether this publish created the index directory.
    pub fn created_dir(&self) -> bool {
        self.created_dir
    }

    /// A refused publish into a directory it created leaves no trace: the
    /// lock file and the directory are removed, if the lock file is all the
    /// directory holds (an earlier publish may have filled it meanwhile).
    /// Done while the lock is held; waiters then take a new one.
    pub fn remove_new_dir(self) {
        if !self.created_dir {
            return;
        }
        let only_lock = fs::read_dir(&self.dir).is_ok_and(|entries| {
            entries
                .map(|e| e.map(|e| e.file_name()))
                .collect::<io::Result<Vec<_>>>()
                .is_ok_and(|names| names.iter().all(|name| name == LOCK_FILE))
        });
        if only_lock {
            let _ = fs::remove_file(self.dir.join(LOCK_FILE));
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

/// Creates `dir` if missing, then waits for and takes its exclusive lock;
/// `on_wait` is called once if another process holds it.
pub fn lock(dir: &Path, on_wait: &mut dyn FnMut(&Waiting)) -> Result<IndexLock> {
    let path = dir.join(LOCK_FILE);
    let mut created_dir = false;
    let mut told = false;
    for _ in 0..RETRIES {
        created_dir |= create_dir(dir)?;
        let file = match FileLock::open(&path) {
            Ok(file) => file,
            // Removed with its directory by a refused first publish.
            Err(e)
                if e.root_cause()
                    .downcast_ref::<io::Error>()
                    .is_some_and(|e| e.kind() == io::ErrorKind::NotFound) =>
            {
                continue;
            }
            Err(e) => return Err(e),
        };
        let metadata = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?;
        if !flock(&file, libc::LOCK_EX | libc::LOCK_NB, &path)? {
            if !told {
                told = true;
                on_wait(&Waiting {
                    lock_file: path.clone(),
                    holder: holder(&metadata),
                });
            }
            flock(&file, libc::LOCK_EX, &path)?;
        }
        // Still the file at `path`? Else a refused first publish removed it
        // while this one waited, and the lock guards nothing.
        let current = fs::symlink_metadata(&path);
        if current.is_ok_and(|m| m.dev() == metadata.dev() && m.ino() == metadata.ino()) {
            return Ok(IndexLock {
                _file: file,
                dir: dir.to_path_buf(),
                created_dir,
            });
        }
    }
    bail!(
        "cannot lock {}: its lock file was removed {RETRIES} times while this publish waited; \
         publish again",
        path.display()
    )
}

/// `mkdir -p dir`; true when this call created `dir` itself.
fn create_dir(dir: &Path) -> Result<bool> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    for _ in 0..RETRIES {
        let err = match fs::create_dir(dir) {
            Ok(()) => return Ok(true),
            Err(e) => e,
        };
        if err.kind() == io::ErrorKind::AlreadyExists {
            match fs::metadata(dir) {
                Ok(m) if m.is_dir() => return Ok(false),
                // Removed between the two calls, by a refused first
                // publish: create it again.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                _ => {}
            }
        }
        return Err(err).with_context(|| format!("cannot create {}", dir.display()));
    }
    bail!(
        "cannot create {}: it was removed {RETRIES} times while this publish created it; \
         publish again",
        dir.display()
    )
}

/// The process holding a lock on the file of `metadata`, from
/// `/proc/locks`, with its command line; `None` where Linux does not say.
fn holder(metadata: &fs::Metadata) -> Option<(u32, Option<String>)> {
    let locks = fs::read_to_string("/proc/locks").ok()?;
    let pid = holder_in_proc_locks(&locks, metadata.dev(), metadata.ino())?;
    let command = fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .filter(|bytes| !bytes.is_empty())
        .map(|bytes| shown_command(&bytes));
    Some((pid, command))
}

/// The pid of the granted `FLOCK` on device `dev`, inode `ino` in the text
/// of `/proc/locks` (`1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`;
/// waiters' lines have `->` and are skipped).
pub fn holder_in_proc_locks(locks: &str, dev: u64, ino: u64) -> Option<u32> {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let wanted = format!("{major:02x}:{minor:02x}:{ino}");
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields[..] {
            [_, "FLOCK", _, _, pid, file, ..] if file == wanted => pid.parse().ok(),
            _ => None,
        }
    })
}

/// A command line from `/proc/PID/cmdline` as one printable line: its
/// arguments joined by spaces, control characters escaped, at most 200
/// characters.
fn shown_command(bytes: &[u8]) -> String {
    let text =
        String::from_utf8_lossy(bytes.strip_suffix(b"\0").unwrap_or(bytes)).replace('\0', " ");
    let escaped = text.chars().flat_map(|c| {
        let escape = c.is_control().then(|| c.escape_default());
        let plain = (!c.is_control()).then_some(c);
        escape.into_iter().flatten().chain(plain)
    });
    let mut shown: String = escaped.clone().take(200).collect();
    if escaped.clone().nth(200).is_some() {
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_read_from_proc_locks() {
        let dev = (253 << 8) | 1; // fd:01
        let locks = "1: POSIX  ADVISORY  WRITE 99 fd:01:77 0 EOF\n\
                     2: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF\n\
                     2: -> FLOCK  ADVISORY  WRITE 4321 fd:01:5678 0 EOF\n";
        assert_eq!(holder_in_proc_locks(locks, dev, 5678), Some(1234));
        assert_eq!(holder_in_proc_locks(locks, dev, 77), None);
        assert_eq!(holder_in_proc_locks(locks, dev + 1, 5678), None);
    }

    #[test]
    fn commands_are_shown_on_one_escaped_line() {
        assert_eq!(
            shown_command(b"cuwheel\0publish\0--to\0a\nb\0"),
            "cuwheel publish --to a\\nb"
        );
        assert!(shown_command(&[b'x'; 300]).ends_with('…'));
    }

    #[test]
    fn a_waiter_whose_lock_file_was_removed_takes_the_new_one() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("new");
        let first = lock(&dir, &mut |_| panic!("nothing holds it yet")).unwrap();
        assert!(first.created_dir());
        let (waiting, waits) = std::sync::mpsc::channel();
        let waiter = {
            let dir = dir.clone();
            std::thread::spawn(move || {
                lock(&dir, &mut |w| waiting.send(w.clone()).unwrap()).unwrap()
            })
        };
        let told = waits.recv().unwrap();
        assert_eq!(told.lock_file, dir.join(LOCK_FILE));
        assert_eq!(told.holder.map(|(pid, _)| pid), Some(std::process::id()));
        // A refused first publish: its directory goes, while the other waits.
        first.remove_new_dir();
        let second = waiter.join().unwrap();
        assert!(second.created_dir(), "it made the directory again");
        let path = dir.join(LOCK_FILE);
        let on_disk = fs::metadata(&path).unwrap();
        let held = second._file.metadata().unwrap();
        assert_eq!((on_disk.dev(), on_disk.ino()), (held.dev(), held.ino()));
    }

    #[test]
    fn a_directory_removed_while_it_is_created_is_created_again() {
        // A refused first publish removes the directory between another's
        // `mkdir` (EEXIST) and its look at what exists.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("new");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn = {
            let (dir, stop) = (dir.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = fs::create_dir(&dir);
                    let _ = fs::remove_dir(&dir);
                }
            })
        };
        let failures = (0..20_000).filter(|_| create_dir(&dir).is_err()).count();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        churn.join().unwrap();
        assert_eq!(failures, 0);
    }

    #[test]
    fn waiting_names_the_file_and_the_holder() {
        let waiting = Waiting {
            lock_file: PathBuf::from("idx/.lock"),
            holder: Some((7, Some("cuwheel publish".into()))),
        };
        assert_eq!(
            waiting.to_string(),
            "waiting for the lock idx/.lock, held by process 7 (`cuwheel publish`): another \
             publish into this index is running; this one goes on once it ends"
        );
    }
}

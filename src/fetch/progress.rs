//! What `cuwheel fetch` shows on stderr while it works: on a terminal, a bar
//! per download in flight (bytes so far against the locked size) above the
//! lines of finished artifacts; elsewhere (CI logs), one line per finished
//! artifact and nothing else.
//!
//! In: start and finish events from the workers, and a tick from a timer.
//! Out: text on stderr. The bytes of a download in flight are read from the
//! size of the files under its temporary directory (pip and apt write there).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const BAR_WIDTH: usize = 24;

pub struct Progress {
    tty: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    active: BTreeMap<usize, Active>,
    /// Bar lines on screen below the finished lines.
    drawn: usize,
}

struct Active {
    label: String,
    size: u64,
    dir: PathBuf,
}

impl Default for Progress {
    /// Bars when stderr is a terminal, lines otherwise.
    fn default() -> Progress {
        Progress {
            tty: std::io::stderr().is_terminal(),
            state: Mutex::new(State::default()),
        }
    }
}

impl Progress {
    /// A download `id` of `size` bytes into `dir` has started.
    pub fn start(&self, id: usize, label: &str, size: u64, dir: &Path) {
        if self.tty {
            self.lock().active.insert(
                id,
                Active {
                    label: label.to_owned(),
                    size,
                    dir: dir.to_owned(),
                },
            );
        }
    }

    /// Work `id` is over: its line is printed once, for good.
    pub fn finish(&self, id: usize, line: &str) {
        let mut state = self.lock();
        state.active.remove(&id);
        let mut err = std::io::stderr().lock();
        if self.tty {
            clear(&mut err, state.drawn);
            state.drawn = 0;
        }
        let _ = writeln!(err, "{line}");
    }

    /// Redraws the bars (terminals only).
    pub fn tick(&self) {
        if !self.tty {
            return;
        }
        let mut state = self.lock();
        let mut err = std::io::stderr().lock();
        clear(&mut err, state.drawn);
        for active in state.active.values() {
            let _ = writeln!(
                err,
                "{}",
                bar(&active.label, bytes_under(&active.dir), active.size)
            );
        }
        state.drawn = state.active.len();
        let _ = err.flush();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn clear(out: &mut impl Write, lines: usize) {
    if lines > 0 {
        // Up `lines` lines, then erase to the end of the screen.
        let _ = write!(out, "\x1b[{lines}A\x1b[J");
    }
}

/// The longest label a bar shows, so that one bar is one terminal line.
const LABEL_WIDTH: usize = 40;

/// `label [#######.........]  45% 410.2 MB / 912.0 MB`
pub fn bar(label: &str, done: u64, total: u64) -> String {
    let label = if label.chars().count() > LABEL_WIDTH {
        let head: String = label.chars().take(LABEL_WIDTH - 3).collect();
        format!("{head}...")
    } else {
        label.to_owned()
    };
    let fraction = if total == 0 {
        1.0
    } else {
        (done as f64 / total as f64).min(1.0)
    };
    let filled = (fraction * BAR_WIDTH as f64).round() as usize;
    format!(
        "{label} [{}{}] {:>3}% {} / {}",
        "#".repeat(filled),
        ".".repeat(BAR_WIDTH - filled),
        (fraction * 100.0).floor() as u64,
        megabytes(done.min(total)),
        megabytes(total)
    )
}

pub fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The total size of the regular files under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => bytes_under(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_show_the_fraction_and_sizes() {
        assert_eq!(
            bar("torch.whl", 456_000_000, 912_000_000),
            "torch.whl [############............]  50% 456.0 MB / 912.0 MB"
        );
        assert_eq!(
            bar(&"n".repeat(50), 0, 1),
            format!(
                "{}... [{}]   0% 0.0 MB / 0.0 MB",
                "n".repeat(37),
                ".".repeat(24)
            )
        );
        assert_eq!(
            bar("x", 5, 0),
            "x [########################] 100% 0.0 MB / 0.0 MB"
        );
    }

    #[test]
    fn counts_the_bytes_of_a_download_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pip-tmp")).unwrap();
        std::fs::write(dir.path().join("pip-tmp/part"), [0u8; 10]).unwrap();
        std::fs::write(dir.path().join("a.deb"), [0u8; 5]).unwrap();
        assert_eq!(bytes_under(dir.path()), 15);
        assert_eq!(bytes_under(&dir.path().join("missing")), 0);
    }
}

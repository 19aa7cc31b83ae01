//! What the evaluator asks of its host about the project's files, beyond
//! looking at the tree (listing a directory, testing that a path is a
//! file): reading one, which the host may refuse (a file that links out of
//! the project), and matching a glob, by the host's own matcher.
//!
//! In: the project root and a path or pattern relative to it. Out: the
//! text or the matching files, or why not — which the evaluator turns
//! into an unknown value that says so.

use std::path::{Path, PathBuf};

/// The host's side of the project's files; `cuwheel init` implements it
/// over the checkout.
pub trait ProjectFiles {
    /// The text of the file `rel` (relative to `root`, normalised, inside
    /// it), or why it is not read: the message a note quotes.
    fn read_text(&self, root: &Path, rel: &Path) -> Result<String, String>;

    /// The files under `root` that `pattern` matches (relative to `root`,
    /// `/`-separated; `*` and `?` within a name, `**` across
    /// directories), relative to `root` and sorted; or why the pattern is
    /// not read.
    fn glob(&self, root: &Path, pattern: &str) -> Result<Vec<PathBuf>, String>;
}

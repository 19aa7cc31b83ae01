//! How much a plan's sharing saves: kernel compiles planned against a build
//! that compiled every cell's own, as `cuwheel plan` prints it.

use std::fmt;

/// The arithmetic `cuwheel plan` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharing {
    pub sources: usize,
    pub toolkits: usize,
    pub compiles: usize,
    pub wheels: usize,
    /// Kernel compiles if every cell compiled its own.
    pub per_cell: usize,
}

impl fmt::Display for Sharing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize, word: &str| {
            if n == 1 {
                format!("{n} {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        if self.compiles == self.sources * self.toolkits {
            write!(
                f,
                "{} × {} = {}",
                plural(self.sources, "kernel"),
                plural(self.toolkits, "toolkit"),
                plural(self.compiles, "compile"),
            )?;
        } else {
            // Not every kernel is compiled with every set (a CPU-only
            // module's kernels never see a CUDA toolkit).
            write!(
                f,
                "{} of {} with {}",
                plural(self.compiles, "compile"),
                plural(self.sources, "kernel"),
                plural(self.toolkits, "compiler set"),
            )?;
        }
        write!(
            f,
            " serve {}; a per-cell build would do {}",
            plural(self.wheels, "wheel"),
            self.per_cell
        )
    }
}

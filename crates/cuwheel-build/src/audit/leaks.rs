//! Build-machine paths left in a wheel's bytes: absolute Nix store paths
//! (`/nix/store/<32-character hash>-…`, which the user's machine will not
//! have) and paths in the Nix sandbox's build directory (`/build/…`).
//!
//! In: one member's bytes, window by window as they stream, and what kind of
//! file it is ([`ScanKind`], from its name). Out: a [`LeakScan`]: how many
//! hits and the first few distinct strings around them.
//!
//! What counts, so that honest wheels pass and real leaks fail:
//! - a store path needs its hash: `/nix/store/` followed by 32 characters of
//!   Nix's base32 alphabet and `-`; anywhere, in any file;
//! - `/build/` counts only where it starts an absolute path: at the start of
//!   the data or after a byte that cannot be part of a path or URL (NUL, a
//!   space, a quote, `=`, `:`…), and followed by a path component. So
//!   `https://…/cpp/build/reference`, `../build/lib`, `/pytorch/build/aten`
//!   and the toolchains' `/builddir/build/BUILD/gcc-…` do not count;
//! - in documentation (METADATA, `*.md`, `*.rst`, `*.txt`, licences, HTML)
//!   `/build/` is prose and does not count, and in Python source it does not
//!   count inside comments and triple-quoted strings (docstrings); a
//!   sandbox path baked into code is in a one-line string or in compiled
//!   bytes.

use serde::Serialize;

/// The two patterns, as the report names them.
pub const STORE_PATTERN: &str = "/nix/store/";
pub const BUILD_PATTERN: &str = "/build/";

/// Nix base32: the digits and the letters but e, o, t and u.
const NIX_BASE32: &[u8] = b"0123456789abcdfghijklmnpqrsvwxyz";
const STORE_HASH_LEN: usize = 32;

/// How many distinct leaked strings a scan keeps as examples.
const EXAMPLES_KEPT: usize = 3;
/// How much printable text around a hit an example shows.
const CONTEXT_BEFORE: usize = 40;
const CONTEXT_AFTER: usize = 80;
/// How far past a hit's start a scan looks (the store hash, the context).
const LOOKAHEAD: usize = CONTEXT_AFTER + STORE_PATTERN.len() + STORE_HASH_LEN + 1;

/// How many bytes at the end of each window the caller keeps at the start
/// of the next one: [`LeakScanner::scan_window`] needs them to judge a hit
/// near the end, and to show the text before one.
pub const KEEP: usize = CONTEXT_BEFORE + LOOKAHEAD;

/// Which rules a member's bytes are judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanKind {
    /// Compiled objects, data and other text: both patterns.
    Everything,
    /// Python source: `/build/` outside comments and docstrings.
    Python,
    /// Documentation: store paths only.
    Documentation,
}

impl ScanKind {
    /// The kind of the member at `name` (a path inside the wheel).
    pub fn of(name: &str) -> ScanKind {
        let file = name.rsplit('/').next().unwrap_or(name);
        let lower = file.to_ascii_lowercase();
        let doc_suffixes = [".md", ".rst", ".txt", ".html", ".htm"];
        let doc_names = [
            "metadata", "license", "licence", "copying", "notice", "authors",
        ];
        if doc_suffixes.iter().any(|s| lower.ends_with(s))
            || doc_names.iter().any(|n| lower.starts_with(n))
        {
            ScanKind::Documentation
        } else if lower.ends_with(".py") || lower.ends_with(".pyi") {
            ScanKind::Python
        } else {
            ScanKind::Everything
        }
    }
}

/// One leaked string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeakExample {
    pub pattern: &'static str,
    /// Byte offset of the pattern in the member.
    pub offset: u64,
    /// The printable text around it.
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LeakScan {
    pub hits: u64,
    pub examples: Vec<LeakExample>,
}

/// Where a Python tokenizer stands, as far as comments and strings go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Python {
    Code,
    Comment,
    /// Inside a string opened by `quote`, three of them when `triple`.
    Str {
        quote: u8,
        triple: bool,
    },
}

/// Scans one member window by window.
#[derive(Debug)]
pub struct LeakScanner {
    kind: ScanKind,
    /// The first offset in the member not scanned yet.
    next: u64,
    python: Python,
    /// Bytes the Python tokenizer still skips (an escape, the rest of `"""`).
    skip: u64,
    scan: LeakScan,
}

impl LeakScanner {
    pub fn new(kind: ScanKind) -> LeakScanner {
        LeakScanner {
            kind,
            next: 0,
            python: Python::Code,
            skip: 0,
            scan: LeakScan::default(),
        }
    }

    /// Scans `window`, whose first byte is at `offset` in the member; it
    /// must start with the last [`KEEP`] bytes of the previous window (or
    /// the member's start). `last`: nothing follows it.
    pub fn scan_window(&mut self, window: &[u8], offset: u64, last: bool) {
        let end = offset + window.len() as u64;
        let limit = if last {
            end
        } else {
            end.saturating_sub(LOOKAHEAD as u64).max(self.next)
        };
        if limit <= self.next {
            return;
        }
        let from = (self.next - offset) as usize;
        let to = (limit - offset) as usize;
        let mut hits: Vec<(usize, &'static str)> = Vec::new();
        // A match starting before `to` may end after it: the region reaches
        // one pattern's length past `to`, the longer pattern's.
        let reach = STORE_PATTERN.len().max(BUILD_PATTERN.len());
        let region = &window[from..window.len().min(to + reach)];
        for at in memchr::memmem::find_iter(region, STORE_PATTERN.as_bytes()) {
            if from + at < to {
                hits.push((from + at, STORE_PATTERN));
            }
        }
        if self.kind != ScanKind::Documentation {
            for at in memchr::memmem::find_iter(region, BUILD_PATTERN.as_bytes()) {
                if from + at < to {
                    hits.push((from + at, BUILD_PATTERN));
                }
            }
        }
        hits.sort_unstable();
        let mut tokenized = from;
        for (at, pattern) in hits {
            if self.kind == ScanKind::Python {
                self.tokenize(window, tokenized, at);
                tokenized = at;
            }
            let counts = match pattern {
                STORE_PATTERN => is_store_path(&window[at..]),
                _ => {
                    is_path_start(window, at, offset)
                        && window
                            .get(at + BUILD_PATTERN.len())
                            .is_some_and(|&b| is_path_byte(b) && b != b'/')
                        && (self.kind != ScanKind::Python || self.in_code_or_line_string())
                }
            };
            if counts {
                self.record(window, at, offset + at as u64, pattern);
            }
        }
        if self.kind == ScanKind::Python {
            self.tokenize(window, tokenized, to);
        }
        self.next = limit;
    }

    /// The scan's result; `None` when nothing leaked.
    pub fn finish(self) -> Option<LeakScan> {
        (self.scan.hits > 0).then_some(self.scan)
    }

    fn record(&mut self, window: &[u8], at: usize, offset: u64, pattern: &'static str) {
        self.scan.hits += 1;
        let text = context(window, at);
        if self.scan.examples.len() < EXAMPLES_KEPT
            && !self.scan.examples.iter().any(|e| e.text == text)
        {
            self.scan.examples.push(LeakExample {
                pattern,
                offset,
                text,
            });
        }
    }

    fn in_code_or_line_string(&self) -> bool {
        matches!(
            self.python,
            Python::Code | Python::Str { triple: false, .. }
        )
    }

    /// Moves the Python tokenizer over `window[from..to]`.
    fn tokenize(&mut self, window: &[u8], from: usize, to: usize) {
        let mut i = from;
        while i < to {
            if self.skip > 0 {
                let n = (self.skip as usize).min(to - i);
                self.skip -= n as u64;
                i += n;
                continue;
            }
            let b = window[i];
            let three = |q: u8| window.get(i..i + 3) == Some(&[q, q, q][..]);
            self.python = match self.python {
                Python::Code => match b {
                    b'#' => Python::Comment,
                    b'"' | b'\'' if three(b) => {
                        self.skip = 2;
                        Python::Str {
                            quote: b,
                            triple: true,
                        }
                    }
                    b'"' | b'\'' => Python::Str {
                        quote: b,
                        triple: false,
                    },
                    _ => Python::Code,
                },
                Python::Comment if b == b'\n' => Python::Code,
                Python::Comment => Python::Comment,
                Python::Str { .. } if b == b'\\' => {
                    self.skip = 1;
                    self.python
                }
                Python::Str {
                    quote,
                    triple: false,
                } if b == quote || b == b'\n' => Python::Code,
                Python::Str {
                    quote,
                    triple: true,
                } if b == quote && three(quote) => {
                    self.skip = 2;
                    Python::Code
                }
                state => state,
            };
            i += 1;
        }
    }
}

/// A [`LeakScanner`] fed chunks of any size as they stream: it keeps the
/// last [`KEEP`] bytes of each to judge the seam with the next.
#[derive(Debug)]
pub struct LeakStream {
    scanner: LeakScanner,
    /// The last bytes seen (at most [`KEEP`]), and where they start.
    tail: Vec<u8>,
    tail_offset: u64,
}

impl LeakStream {
    pub fn new(kind: ScanKind) -> LeakStream {
        LeakStream {
            scanner: LeakScanner::new(kind),
            tail: Vec::with_capacity(2 * KEEP),
            tail_offset: 0,
        }
    }

    /// Scans the next `new` bytes.
    pub fn feed(&mut self, new: &[u8]) {
        // The seam (the tail before and the chunk's first bytes), then the
        // chunk where it lies: no chunk is copied.
        let new_offset = self.tail_offset + self.tail.len() as u64;
        let head = new.len().min(KEEP);
        self.tail.extend_from_slice(&new[..head]);
        self.scanner
            .scan_window(&self.tail, self.tail_offset, false);
        if new.len() > KEEP {
            self.scanner.scan_window(new, new_offset, false);
            self.tail.clear();
            self.tail.extend_from_slice(&new[new.len() - KEEP..]);
            self.tail_offset = new_offset + (new.len() - KEEP) as u64;
        } else {
            let drop = self.tail.len().saturating_sub(KEEP);
            self.tail.drain(..drop);
            self.tail_offset += drop as u64;
        }
    }

    /// The scan's result once every byte was fed; `None` when nothing leaked.
    pub fn finish(mut self) -> Option<LeakScan> {
        self.scanner.scan_window(&self.tail, self.tail_offset, true);
        self.scanner.finish()
    }
}

/// `/nix/store/` then a 32-character Nix base32 hash and `-`.
fn is_store_path(rest: &[u8]) -> bool {
    let hash_at = STORE_PATTERN.len();
    rest.get(hash_at..hash_at + STORE_HASH_LEN)
        .is_some_and(|hash| hash.iter().all(|b| NIX_BASE32.contains(b)))
        && rest.get(hash_at + STORE_HASH_LEN) == Some(&b'-')
}

/// A byte that can be part of a path or URL.
fn is_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"._~+-@%/$".contains(&b)
}

/// True when the `/` at `at` starts an absolute path: nothing before it
/// in the member, or a byte that cannot continue a path.
fn is_path_start(window: &[u8], at: usize, offset: u64) -> bool {
    match at.checked_sub(1) {
        Some(before) => !is_path_byte(window[before]),
        None => offset == 0,
    }
}

/// The run of printable ASCII around `at`, bounded on both sides.
fn context(data: &[u8], at: usize) -> String {
    let printable = |b: &u8| (0x20..0x7f).contains(b);
    let start = data[..at]
        .iter()
        .rev()
        .take(CONTEXT_BEFORE)
        .take_while(|b| printable(b))
        .count();
    let end = data[at..]
        .iter()
        .take(CONTEXT_AFTER)
        .take_while(|b| printable(b))
        .count();
    String::from_utf8_lossy(&data[at - start..at + end]).into_owned()
}

/// Scans `data` as one member of kind `kind` (in windows of `window`
/// bytes, as a stream would); `None` when clean.
pub fn scan(data: &[u8], kind: ScanKind, window: usize) -> Option<LeakScan> {
    let mut scanner = LeakScanner::new(kind);
    let mut start = 0;
    let mut end = 0;
    loop {
        end = (end + window.max(1)).min(data.len());
        let last = end == data.len();
        scanner.scan_window(&data[start..end], start as u64, last);
        if last {
            return scanner.finish();
        }
        start = end.saturating_sub(KEEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: &str = "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-gcc-12/lib";

    fn texts(scan: &LeakScan) -> Vec<&str> {
        scan.examples.iter().map(|e| e.text.as_str()).collect()
    }

    #[test]
    fn finds_store_and_build_paths_with_context() {
        let data = format!("\0\x01RUNPATH={STORE}\0src: /build/source/a.c\0/build/x\0");
        for window in [1, 7, 64, 1 << 20] {
            let scan = scan(data.as_bytes(), ScanKind::Everything, window).unwrap();
            assert_eq!(scan.hits, 3, "window {window}");
            assert_eq!(scan.examples[0].pattern, STORE_PATTERN);
            assert_eq!(scan.examples[0].text, format!("RUNPATH={STORE}"));
            assert_eq!(scan.examples[0].offset, 10);
            assert_eq!(texts(&scan)[1..], ["src: /build/source/a.c", "/build/x"]);
        }
    }

    #[test]
    fn urls_relative_paths_and_toolchain_strings_pass() {
        for honest in [
            "src=\"https://img.shields.io/appveyor/build/python-pillow/Pillow/main.svg\"",
            "/builddir/build/BUILD/gcc-8.5.0-20210514/obj-x86_64-redhat-linux",
            "\"/pytorch/build/aten/src/ATen/RegisterCUDA_0.cpp\"",
            "# Then run: ./build/bin/test_jit",
            "/dvs/p4/build/sw/rel/gpgpu/toolkit",
            "cuda9-cudnn7-py3-build/build/aten/src",
            "the /build/ directory",
            "/nix/store/ is where Nix keeps paths",
            "/nix/store/short-hash/lib",
            "/nix/stor /buil /usr/lib/build /nix",
        ] {
            assert_eq!(
                scan(honest.as_bytes(), ScanKind::Everything, 8),
                None,
                "{honest}"
            );
        }
    }

    #[test]
    fn documentation_and_python_docstrings_do_not_count_build_paths() {
        let prose = b"build with pkgdir=/build/arm-linux-gnueabi/sysroot";
        assert!(scan(prose, ScanKind::Everything, 1 << 10).is_some());
        assert_eq!(scan(prose, ScanKind::Documentation, 1 << 10), None);
        let python = "def f():\n    \"\"\"Example:\n\n        pkgdir=/build/arm/sysroot\n    \"\"\"\n    # see /build/x\n    return '#'\n";
        for window in [3, 1 << 10] {
            assert_eq!(scan(python.as_bytes(), ScanKind::Python, window), None);
        }
        let leaked = format!("{python}ROOT = \"/build/source/pkg\"\nLIB = '{STORE}'\n");
        for window in [3, 100, 1 << 10] {
            let scan = scan(leaked.as_bytes(), ScanKind::Python, window).unwrap();
            assert_eq!(scan.hits, 2, "window {window}: {scan:?}");
        }
        // a store path counts even in documentation
        assert!(scan(STORE.as_bytes(), ScanKind::Documentation, 5).is_some());
    }

    #[test]
    fn kinds_follow_the_file_name() {
        assert_eq!(
            ScanKind::of("x-1.dist-info/METADATA"),
            ScanKind::Documentation
        );
        assert_eq!(ScanKind::of("pkg/README.md"), ScanKind::Documentation);
        assert_eq!(ScanKind::of("pkg/mod.py"), ScanKind::Python);
        assert_eq!(ScanKind::of("pkg/_C.so"), ScanKind::Everything);
        assert_eq!(ScanKind::of("pkg/include/a.h"), ScanKind::Everything);
    }

    #[test]
    fn a_stream_fed_any_chunks_finds_what_a_scan_finds() {
        let data = format!("\0\x01RUNPATH={STORE}\0src: /build/source/a.c\0/build/x\0").repeat(3);
        let whole = scan(data.as_bytes(), ScanKind::Everything, 1 << 20);
        for chunk in [1, 5, 100, 1000] {
            let mut stream = LeakStream::new(ScanKind::Everything);
            for piece in data.as_bytes().chunks(chunk) {
                stream.feed(piece);
            }
            assert_eq!(stream.finish(), whole, "chunks of {chunk}");
        }
    }

    #[test]
    fn keeps_only_a_few_distinct_examples() {
        let data = b"\0/build/a\0/build/a\0/build/b\0/build/c\0/build/d".repeat(10);
        let scan = scan(&data, ScanKind::Everything, 13).unwrap();
        assert_eq!(scan.hits, 50);
        assert_eq!(texts(&scan), ["/build/a", "/build/b", "/build/c"]);
    }
}

//! Where two builds of one derivation differ, and the likely why: what
//! `cuwheel reproduce` prints for a derivation that is not deterministic,
//! with no external tool.
//!
//! In: the output the store holds and the second build's output, which
//! `nix-store --realise --check --keep-failed` keeps beside it as
//! `<out>.check` (directory trees, or single files). Out: a
//! [`FileDifference`] for each file that differs — for an ELF file its
//! differing sections and symbols ([`super::elf`]), and inside `.nv_fatbin`
//! each differing fat-binary member (the cubin or the PTX of one arch) with
//! a line diff of PTX; for other text a line diff; for other bytes the first
//! differing offset — each with its likely [`Cause`]: a timestamp, a path,
//! or order. Everything but [`localize`], which reads the trees, is pure.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::elf::{self, ElfDiff, first_difference};
use super::text::unified_diff;
use crate::audit::elf::nv_fatbin_section;
use crate::audit::fatbin::{self, FatbinMember, ImageKind};

/// What most likely made two builds differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// A number that reads as a recent time differs: a clock reached the
    /// output (a source's modification time, `__DATE__`, a build stamp).
    Timestamp,
    /// A path differs near the difference: a temporary or build directory.
    Path,
    /// The same lines (or entries) in another order.
    Order,
    /// None of the above could be told.
    Unknown,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cause::Timestamp => {
                "a timestamp (a number that reads as a recent time differs: a file's \
                 modification time, __DATE__/__TIME__ or a build stamp reached the output)"
            }
            Cause::Path => {
                "a path (a temporary or build directory reached the output; map it with \
                 -ffile-prefix-map, or give the tool a fixed path)"
            }
            Cause::Order => {
                "order (the same lines in another order: something iterates a directory, a \
                 hash table or parallel work without sorting)"
            }
            Cause::Unknown => "unknown (no timestamp, path or reordering was recognised)",
        })
    }
}

/// One fat-binary member that differs between the two builds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberDifference {
    /// nvcc's name for the image: `sm_90`, `compute_90`.
    pub image: String,
    /// A cubin's differing sections and symbols.
    pub elf: Option<ElfDiff>,
    /// A PTX image's line diff (decompressed where needed).
    pub lines: Option<String>,
    /// Present in only one of the builds.
    pub only_in: Option<&'static str>,
    pub cause: Cause,
}

/// One file that differs between the two builds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDifference {
    /// The path inside the output (empty for an output that is one file).
    pub path: String,
    pub elf: Option<ElfDiff>,
    pub members: Vec<MemberDifference>,
    /// A text file's line diff.
    pub lines: Option<String>,
    /// The first differing byte, for what is neither ELF nor text.
    pub first_offset: Option<u64>,
    /// Present in only one of the builds.
    pub only_in: Option<&'static str>,
    pub cause: Cause,
}

/// Lines of a PTX or text diff shown before the rest is counted.
const SHOWN_LINES: usize = 24;

/// Compares the output `first` with its rebuild `second`, file by file.
pub fn localize(first: &Path, second: &Path) -> Result<Vec<FileDifference>> {
    let a = read_tree(first)?;
    let b = read_tree(second)?;
    let mut paths: Vec<&String> = a.keys().chain(b.keys()).collect();
    paths.sort();
    paths.dedup();
    Ok(paths
        .into_iter()
        .filter_map(|path| match (a.get(path), b.get(path)) {
            (Some(x), Some(y)) if x == y => None,
            (Some(x), Some(y)) => Some(compare_file(path, x, y)),
            (one, _) => Some(FileDifference {
                path: path.clone(),
                elf: None,
                members: Vec::new(),
                lines: None,
                first_offset: None,
                only_in: Some(if one.is_some() {
                    "the first build"
                } else {
                    "the rebuild"
                }),
                cause: Cause::Unknown,
            }),
        })
        .collect())
}

/// Every regular file under `root` (or `root` itself), by relative path;
/// a symlink by its target, prefixed with `-> `. Not publish's
/// `verify::read_tree`, which refuses a symlink and a file root as
/// tampering: a derivation's output may be either.
fn read_tree(root: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((path, rel)) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)
                .with_context(|| format!("cannot list {}", path.display()))?
            {
                let entry = entry.with_context(|| format!("cannot list {}", path.display()))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let rel = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                stack.push((entry.path(), rel));
            }
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)
                .with_context(|| format!("cannot read the link {}", path.display()))?;
            files.insert(rel, format!("-> {}", target.display()).into_bytes());
        } else {
            let data =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            files.insert(rel, data);
        }
    }
    Ok(files)
}

/// The difference of one file present in both builds.
pub fn compare_file(path: &str, a: &[u8], b: &[u8]) -> FileDifference {
    let mut diff = FileDifference {
        path: path.to_string(),
        elf: None,
        members: Vec::new(),
        lines: None,
        first_offset: None,
        only_in: None,
        cause: Cause::Unknown,
    };
    if let Some(elf_diff) = elf::diff(a, b) {
        let fatbins = (
            nv_fatbin_section(path, a).ok().flatten(),
            nv_fatbin_section(path, b).ok().flatten(),
        );
        if let (Some(x), Some(y)) = fatbins {
            if x != y {
                diff.members = compare_fatbins(x, y);
            }
        }
        diff.cause = diff
            .members
            .iter()
            .map(|m| m.cause)
            .find(|c| *c != Cause::Unknown)
            .unwrap_or_else(|| likely_cause(a, b));
        diff.elf = Some(elf_diff);
    } else if let (Ok(x), Ok(y)) = (std::str::from_utf8(a), std::str::from_utf8(b)) {
        diff.lines = Some(shorten(&unified_diff("first build", "rebuild", x, y)));
        diff.cause = text_cause(x, y);
    } else {
        diff.first_offset = first_difference(a, b);
        diff.cause = likely_cause(a, b);
    }
    diff
}

/// The members of two `.nv_fatbin` sections that differ, matched by image
/// name (and by position among images of one name).
fn compare_fatbins(a: &[u8], b: &[u8]) -> Vec<MemberDifference> {
    let (Ok(x), Ok(y)) = (fatbin::members(a), fatbin::members(b)) else {
        return vec![MemberDifference {
            image: "(the fat binary itself)".into(),
            elf: None,
            lines: None,
            only_in: None,
            cause: likely_cause(a, b),
        }];
    };
    let (x, y) = (keyed(x), keyed(y));
    let mut keys: Vec<&(String, usize)> = x.keys().chain(y.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let image = key.0.clone();
            match (x.get(key), y.get(key)) {
                (Some(m), Some(n)) if m.payload == n.payload => None,
                (Some(m), Some(n)) => Some(compare_member(image, m, n)),
                (one, _) => Some(MemberDifference {
                    image,
                    elf: None,
                    lines: None,
                    only_in: Some(if one.is_some() {
                        "the first build"
                    } else {
                        "the rebuild"
                    }),
                    cause: Cause::Unknown,
                }),
            }
        })
        .collect()
}

/// Members by image name and position among images of that name.
fn keyed(members: Vec<FatbinMember<'_>>) -> BTreeMap<(String, usize), FatbinMember<'_>> {
    let mut table = BTreeMap::new();
    for m in members {
        let name = m.image.name();
        let n = table
            .keys()
            .filter(|(k, _): &&(String, usize)| *k == name)
            .count();
        table.insert((name, n), m);
    }
    table
}

fn compare_member(image: String, a: &FatbinMember<'_>, b: &FatbinMember<'_>) -> MemberDifference {
    let (x, y) = (a.decompressed(), b.decompressed());
    let mut diff = MemberDifference {
        image,
        elf: None,
        lines: None,
        only_in: None,
        cause: Cause::Unknown,
    };
    let (Some(x), Some(y)) = (x, y) else {
        diff.cause = likely_cause(a.payload, b.payload);
        return diff;
    };
    if a.image.kind == ImageKind::Ptx {
        let text = |bytes: &[u8]| {
            let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(&bytes[..end]).into_owned()
        };
        let (s, t) = (text(&x), text(&y));
        diff.lines = Some(shorten(&unified_diff("first build", "rebuild", &s, &t)));
        diff.cause = text_cause(&s, &t);
    } else {
        diff.elf = elf::diff(&x, &y);
        diff.cause = likely_cause(&x, &y);
    }
    diff
}

/// The first [`SHOWN_LINES`] lines of a diff, and how many more there are.
fn shorten(diff: &str) -> String {
    let lines: Vec<&str> = diff.lines().collect();
    if lines.len() <= SHOWN_LINES {
        return diff.to_string();
    }
    let mut text = lines[..SHOWN_LINES].join("\n");
    text += &format!("\n… and {} more lines\n", lines.len() - SHOWN_LINES);
    text
}

/// Seconds since the epoch that read as a build's clock: 2001 to 2100.
fn is_recent_time(value: u64) -> bool {
    (1_000_000_000..=4_102_444_800).contains(&value)
}

/// Byte sequences that name a build's own directories.
const PATH_MARKERS: [&[u8]; 5] = [
    b"/build/",
    b"/tmp/",
    b"/nix/store/",
    b"/homeless-shelter",
    b"/nix/var/",
];

/// The likely cause of the differences between two byte strings.
pub fn likely_cause(a: &[u8], b: &[u8]) -> Cause {
    let Some(at) = first_difference(a, b) else {
        return Cause::Unknown;
    };
    let at = at as usize;
    if a.len() == b.len() && binary_time_at(a, b, at) {
        return Cause::Timestamp;
    }
    let window = |bytes: &[u8]| {
        let start = at.saturating_sub(96);
        let end = (at + 96).min(bytes.len());
        bytes.get(start..end).unwrap_or_default().to_vec()
    };
    let (x, y) = (window(a), window(b));
    if digits_time(&x, &y) {
        return Cause::Timestamp;
    }
    if PATH_MARKERS
        .iter()
        .any(|m| contains(&x, m) || contains(&y, m))
    {
        return Cause::Path;
    }
    if a.len() == b.len() && same_entries(a, b, b'\0') {
        return Cause::Order;
    }
    Cause::Unknown
}

/// The likely cause of the differences between two texts.
pub fn text_cause(a: &str, b: &str) -> Cause {
    let (x, y): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let changed: Vec<(&str, &str)> = x
        .iter()
        .zip(&y)
        .filter(|(p, q)| p != q)
        .map(|(p, q)| (*p, *q))
        .collect();
    if changed
        .iter()
        .any(|(p, q)| digits_time(p.as_bytes(), q.as_bytes()))
    {
        return Cause::Timestamp;
    }
    if changed.iter().any(|(p, q)| {
        PATH_MARKERS
            .iter()
            .any(|m| contains(p.as_bytes(), m) || contains(q.as_bytes(), m))
    }) {
        return Cause::Path;
    }
    if x.len() == y.len() && same_entries(a.as_bytes(), b.as_bytes(), b'\n') {
        return Cause::Order;
    }
    likely_cause(a.as_bytes(), b.as_bytes())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Whether `a` and `b` hold the same `sep`-separated entries, in another
/// order.
fn same_entries(a: &[u8], b: &[u8], sep: u8) -> bool {
    let mut x: Vec<&[u8]> = a.split(|&c| c == sep).collect();
    let mut y: Vec<&[u8]> = b.split(|&c| c == sep).collect();
    x.sort_unstable();
    y.sort_unstable();
    x.len() > 1 && x == y
}

/// Whether the runs of digits that differ between `a` and `b`, token by
/// token, are both recent times.
fn digits_time(a: &[u8], b: &[u8]) -> bool {
    let runs = |bytes: &[u8]| -> Vec<u64> {
        bytes
            .split(|c| !c.is_ascii_digit())
            .filter(|run| (9..=10).contains(&run.len()))
            .filter_map(|run| std::str::from_utf8(run).ok()?.parse().ok())
            .collect()
    };
    let (x, y) = (runs(a), runs(b));
    x.iter()
        .zip(&y)
        .any(|(p, q)| p != q && is_recent_time(*p) && is_recent_time(*q))
}

/// Whether the bytes around `at` decode, on both sides, to two different
/// recent times: a little-endian 32- or 64-bit integer, or a ULEB128 (DWARF
/// line tables and nvcc's device line tables store modification times so).
fn binary_time_at(a: &[u8], b: &[u8], at: usize) -> bool {
    for width in [4usize, 8] {
        for start in at.saturating_sub(width - 1)..=at {
            let (Some(x), Some(y)) = (a.get(start..start + width), b.get(start..start + width))
            else {
                continue;
            };
            let read = |bytes: &[u8]| {
                let mut word = [0u8; 8];
                word[..width].copy_from_slice(bytes);
                u64::from_le_bytes(word)
            };
            let (p, q) = (read(x), read(y));
            if p != q && is_recent_time(p) && is_recent_time(q) {
                return true;
            }
        }
    }
    for start in at.saturating_sub(4)..=at {
        if let (Some(p), Some(q)) = (uleb128(&a[start..]), uleb128(&b[start..])) {
            if p != q && is_recent_time(p) && is_recent_time(q) {
                return true;
            }
        }
    }
    false
}

/// The ULEB128 number at the start of `bytes` (at most 10 bytes).
fn uleb128(bytes: &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The report's lines for the differences, indented by `indent`.
pub fn render(diffs: &[FileDifference], indent: &str) -> String {
    let mut text = String::new();
    for d in diffs {
        let name = if d.path.is_empty() {
            "(the output)"
        } else {
            &d.path
        };
        if let Some(side) = d.only_in {
            text += &format!("{indent}{name}: only in {side}\n");
            continue;
        }
        text += &format!("{indent}{name}: likely cause: {}\n", d.cause);
        if let Some(elf) = &d.elf {
            text += &elf.render(&format!("{indent}  "));
        }
        for m in &d.members {
            text += &render_member(m, &format!("{indent}  "));
        }
        if let Some(lines) = &d.lines {
            text += &indent_lines(lines, &format!("{indent}  "));
        }
        if let Some(at) = d.first_offset {
            text += &format!("{indent}  first differing byte at offset {at}\n");
        }
    }
    text
}

fn render_member(m: &MemberDifference, indent: &str) -> String {
    let kind = if m.image.starts_with("compute_") {
        "PTX"
    } else {
        "cubin"
    };
    if let Some(side) = m.only_in {
        return format!(
            "{indent}fat-binary member {} ({kind}): only in {side}\n",
            m.image
        );
    }
    let mut text = format!(
        "{indent}fat-binary member {} ({kind}) differs; likely cause: {}\n",
        m.image, m.cause
    );
    if let Some(elf) = &m.elf {
        text += &elf.render(&format!("{indent}  "));
    }
    if let Some(lines) = &m.lines {
        text += &indent_lines(lines, &format!("{indent}  "));
    }
    text
}

fn indent_lines(text: &str, indent: &str) -> String {
    text.lines().map(|l| format!("{indent}{l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modification_time_in_ptx_text_is_a_timestamp() {
        let a = ".version 9.0\n.file 1 \"/cuwheel/src/k.cu\", 1764158123, 2345\n";
        let b = ".version 9.0\n.file 1 \"/cuwheel/src/k.cu\", 1764158190, 2345\n";
        assert_eq!(text_cause(a, b), Cause::Timestamp);
    }

    #[test]
    fn a_build_directory_is_a_path() {
        let a = "x\n.file 1 \"/build/tmp.abc/k.cu\"\n";
        let b = "x\n.file 1 \"/build/tmp.xyz/k.cu\"\n";
        assert_eq!(text_cause(a, b), Cause::Path);
        let mut x = b"\x7fELF....../tmp/cc1234.o\0rest".to_vec();
        let y = b"\x7fELF....../tmp/cc9876.o\0rest".to_vec();
        assert_eq!(likely_cause(&x, &y), Cause::Path);
        x[0] = 0;
        assert_eq!(likely_cause(&x, &x), Cause::Unknown);
    }

    #[test]
    fn reordered_lines_are_order() {
        assert_eq!(text_cause("a\nb\nc\n", "b\na\nc\n"), Cause::Order);
        assert_eq!(likely_cause(b"one\0two\0", b"two\0one\0"), Cause::Order);
    }

    #[test]
    fn binary_times_are_read_little_endian_and_as_uleb128() {
        let mut a = vec![0u8; 32];
        let mut b = a.clone();
        a[8..12].copy_from_slice(&1_764_158_123u32.to_le_bytes());
        b[8..12].copy_from_slice(&1_764_158_190u32.to_le_bytes());
        assert_eq!(likely_cause(&a, &b), Cause::Timestamp);
        // 1764158123 and 1764158190 as ULEB128, as a DWARF v5 line table's
        // file entry stores a modification time.
        let leb = |mut v: u64| {
            let mut out = Vec::new();
            loop {
                let byte = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(byte);
                    return out;
                }
                out.push(byte | 0x80);
            }
        };
        let a = [b"file\0".to_vec(), leb(1_764_158_123), vec![0x10]].concat();
        let b = [b"file\0".to_vec(), leb(1_764_158_190), vec![0x10]].concat();
        assert_eq!(likely_cause(&a, &b), Cause::Timestamp);
        assert_eq!(likely_cause(b"abc1", b"abc2"), Cause::Unknown);
    }

    #[test]
    fn small_numbers_are_not_times() {
        assert_eq!(text_cause("size 1234\n", "size 1240\n"), Cause::Unknown);
    }

    #[test]
    fn long_diffs_are_shortened_with_a_count() {
        let diff: String = (0..30).map(|i| format!("-line {i}\n")).collect();
        let short = shorten(&diff);
        assert_eq!(short.lines().count(), SHOWN_LINES + 1);
        assert!(short.ends_with("… and 6 more lines\n"), "{short}");
    }
}

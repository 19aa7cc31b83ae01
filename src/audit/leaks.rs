//! Build-machine paths left in a wheel's bytes: `/nix/store/` (a Nix store
//! path the user's machine will not have) and `/build/` (the Nix sandbox's
//! build directory, and a common CI one).
//!
//! In: one member's bytes. Out: a [`LeakScan`]: how many hits and the first
//! few distinct strings around them, so the report can show what leaked.

use serde::Serialize;

/// The byte strings that must not appear in any member.
pub const LEAK_PATTERNS: [&str; 2] = ["/nix/store/", "/build/"];

/// How many distinct leaked strings a scan keeps as examples.
const EXAMPLES_KEPT: usize = 3;
/// How much printable text around a hit an example shows.
const CONTEXT_BEFORE: usize = 40;
const CONTEXT_AFTER: usize = 80;

/// One leaked string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeakExample {
    pub pattern: &'static str,
    /// Byte offset of the pattern in the member.
    pub offset: usize,
    /// The printable text around it.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeakScan {
    pub hits: usize,
    pub examples: Vec<LeakExample>,
}

/// Scans `data` for every pattern of [`LEAK_PATTERNS`]; `None` when clean.
pub fn scan(data: &[u8]) -> Option<LeakScan> {
    let mut scan = LeakScan {
        hits: 0,
        examples: Vec::new(),
    };
    for (offset, _) in data.iter().enumerate().filter(|(_, b)| **b == b'/') {
        let Some(pattern) = LEAK_PATTERNS
            .iter()
            .find(|p| data[offset..].starts_with(p.as_bytes()))
        else {
            continue;
        };
        scan.hits += 1;
        let text = context(data, offset);
        if scan.examples.len() < EXAMPLES_KEPT && !scan.examples.iter().any(|e| e.text == text) {
            scan.examples.push(LeakExample {
                pattern,
                offset,
                text,
            });
        }
    }
    (scan.hits > 0).then_some(scan)
}

/// The run of printable ASCII around `offset`, bounded on both sides.
fn context(data: &[u8], offset: usize) -> String {
    let printable = |b: &u8| (0x20..0x7f).contains(b);
    let start = data[..offset]
        .iter()
        .rev()
        .take(CONTEXT_BEFORE)
        .take_while(|b| printable(b))
        .count();
    let end = data[offset..]
        .iter()
        .take(CONTEXT_AFTER)
        .take_while(|b| printable(b))
        .count();
    String::from_utf8_lossy(&data[offset - start..offset + end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_store_and_build_paths_with_context() {
        let data = b"\0\x01RUNPATH=/nix/store/abc-gcc-12/lib\0src: /build/source/a.c\0/build/x\0";
        let scan = scan(data).unwrap();
        assert_eq!(scan.hits, 3);
        assert_eq!(scan.examples[0].pattern, "/nix/store/");
        assert_eq!(scan.examples[0].text, "RUNPATH=/nix/store/abc-gcc-12/lib");
        assert_eq!(scan.examples[0].offset, 10);
        assert_eq!(scan.examples[1].text, "src: /build/source/a.c");
        assert_eq!(scan.examples[2].text, "/build/x");
    }

    #[test]
    fn clean_bytes_and_near_misses_pass() {
        assert_eq!(scan(b"/nix/stor /buil /usr/lib/build /nix"), None);
        assert_eq!(scan(b""), None);
    }

    #[test]
    fn keeps_only_a_few_distinct_examples() {
        let data = b"/build/a\0/build/a\0/build/b\0/build/c\0/build/d\0".repeat(10);
        let scan = scan(&data).unwrap();
        assert_eq!(scan.hits, 50);
        let texts: Vec<_> = scan.examples.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, ["/build/a", "/build/b", "/build/c"]);
    }
}

//! What differs between a given wheel and the one rebuilt from the checkout.
//!
//! In: both wheels' file names, bytes and members. Out: a [`WheelDiff`]:
//! members only one wheel has; for each member in both whose bytes or mode
//! differ, an [`elf`](super::elf) diff of sections and symbols, a unified
//! line diff of UTF-8 text, or the sizes and first differing offset of
//! other bytes; and, when every member agrees, where the archives
//! themselves first differ (order, timestamps, compression).

use std::collections::BTreeMap;

use serde::Serialize;

use super::elf::{self, ElfDiff};
use super::text::unified_diff;
use crate::store::Hash;
use crate::wheel::Member;

/// One wheel as the diff sees it.
pub struct WheelBytes<'a> {
    pub file_name: &'a str,
    pub bytes: &'a [u8],
    pub members: &'a [Member],
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WheelDiff {
    /// The two file names, when they differ.
    pub file_names: Option<(String, String)>,
    pub given_sha256: String,
    pub built_sha256: String,
    pub only_given: Vec<String>,
    pub only_built: Vec<String>,
    pub members: Vec<MemberDiff>,
    /// The first differing byte of the archives, when no member differs.
    pub archive_differs_at: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberDiff {
    pub name: String,
    /// The zip's Unix modes, when they differ.
    pub modes: Option<(Option<u32>, Option<u32>)>,
    /// `None` when only the mode differs.
    pub content: Option<ContentDiff>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum ContentDiff {
    Elf(ElfDiff),
    Text {
        diff: String,
    },
    Binary {
        given_size: u64,
        built_size: u64,
        given_sha256: String,
        built_sha256: String,
        first_difference: u64,
    },
}

impl WheelDiff {
    /// True when the wheels are the same file under the same name.
    pub fn is_identical(&self) -> bool {
        self.file_names.is_none() && self.given_sha256 == self.built_sha256
    }
}

/// Compares `given` with `built`.
pub fn diff(given: &WheelBytes<'_>, built: &WheelBytes<'_>) -> WheelDiff {
    let by_name = |w: &WheelBytes<'_>| -> BTreeMap<String, usize> {
        w.members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.clone(), i))
            .collect()
    };
    let (a, b) = (by_name(given), by_name(built));
    let only_given = a.keys().filter(|n| !b.contains_key(*n)).cloned().collect();
    let only_built = b.keys().filter(|n| !a.contains_key(*n)).cloned().collect();
    let members: Vec<MemberDiff> = a
        .iter()
        .filter_map(|(name, &i)| {
            let j = *b.get(name)?;
            member_diff(&given.members[i], &built.members[j])
        })
        .collect();
    let mut result = WheelDiff {
        file_names: (given.file_name != built.file_name)
            .then(|| (given.file_name.to_string(), built.file_name.to_string())),
        given_sha256: Hash::sha256(given.bytes).to_hex(),
        built_sha256: Hash::sha256(built.bytes).to_hex(),
        only_given,
        only_built,
        members,
        archive_differs_at: None,
    };
    if result.only_given.is_empty() && result.only_built.is_empty() && result.members.is_empty() {
        result.archive_differs_at = elf::first_difference(given.bytes, built.bytes);
    }
    result
}

fn member_diff(given: &Member, built: &Member) -> Option<MemberDiff> {
    let modes = (given.unix_mode != built.unix_mode).then_some((given.unix_mode, built.unix_mode));
    let content = (given.data != built.data).then(|| content_diff(&given.name, given, built));
    if modes.is_none() && content.is_none() {
        return None;
    }
    Some(MemberDiff {
        name: given.name.clone(),
        modes,
        content,
    })
}

fn content_diff(name: &str, given: &Member, built: &Member) -> ContentDiff {
    let (a, b) = (&given.data, &built.data);
    if let Some(diff) = elf::diff(a, b) {
        return ContentDiff::Elf(diff);
    }
    if let (Ok(x), Ok(y)) = (std::str::from_utf8(a), std::str::from_utf8(b)) {
        if !x.contains('\0') && !y.contains('\0') {
            let diff = unified_diff(&format!("given/{name}"), &format!("built/{name}"), x, y);
            return ContentDiff::Text { diff };
        }
    }
    ContentDiff::Binary {
        given_size: a.len() as u64,
        built_size: b.len() as u64,
        given_sha256: Hash::sha256(a).to_hex(),
        built_sha256: Hash::sha256(b).to_hex(),
        first_difference: elf::first_difference(a, b).unwrap_or_default(),
    }
}

impl WheelDiff {
    /// The report for people: what differs, member by member.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if let Some((given, built)) = &self.file_names {
            text += &format!("file name: given {given}, built {built}\n");
        }
        text += &format!(
            "given sha256 {}\nbuilt sha256 {}\n",
            self.given_sha256, self.built_sha256
        );
        for name in &self.only_given {
            text += &format!("only in the given wheel: {name}\n");
        }
        for name in &self.only_built {
            text += &format!("only in the built wheel: {name}\n");
        }
        for member in &self.members {
            let kind = match &member.content {
                Some(ContentDiff::Elf(_)) => " (ELF)",
                Some(ContentDiff::Text { .. }) => " (text)",
                Some(ContentDiff::Binary { .. }) => " (binary)",
                None => "",
            };
            text += &format!("differs: {}{kind}\n", member.name);
            if let Some((given, built)) = member.modes {
                text += &format!("  mode: given {}, built {}\n", mode(given), mode(built));
            }
            match &member.content {
                Some(ContentDiff::Elf(diff)) => text += &diff.render("  "),
                Some(ContentDiff::Text { diff }) => {
                    for line in diff.lines() {
                        text += &format!("  {line}\n");
                    }
                }
                Some(ContentDiff::Binary {
                    given_size,
                    built_size,
                    given_sha256,
                    built_sha256,
                    first_difference,
                }) => {
                    text += &format!(
                        "  given {given_size} bytes, sha256 {given_sha256}\n  \
                         built {built_size} bytes, sha256 {built_sha256}\n  \
                         first difference at byte {first_difference}\n"
                    );
                }
                None => {}
            }
        }
        if let Some(at) = self.archive_differs_at {
            text += &format!(
                "every member is the same; the archives first differ at byte {at} \
                 (entry order, timestamps or compression)\n"
            );
        }
        text
    }
}

fn mode(mode: Option<u32>) -> String {
    mode.map_or_else(|| "none".into(), |m| format!("{m:o}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, data: &[u8]) -> Member {
        Member {
            name: name.into(),
            unix_mode: Some(0o100644),
            data: data.to_vec(),
        }
    }

    fn wheel<'a>(bytes: &'a [u8], members: &'a [Member]) -> WheelBytes<'a> {
        WheelBytes {
            file_name: "p-1-py3-none-any.whl",
            bytes,
            members,
        }
    }

    #[test]
    fn identical_wheels_have_no_difference() {
        let members = [member("a.py", b"x\n")];
        let d = diff(&wheel(b"zip", &members), &wheel(b"zip", &members));
        assert!(d.is_identical());
        assert!(d.members.is_empty() && d.archive_differs_at.is_none());
    }

    #[test]
    fn members_only_in_one_and_text_and_binary_changes_are_reported() {
        let given = [
            member("a.py", b"one\ntwo\n"),
            member("blob", b"\0\x01\x02\x03"),
            member("gone.py", b""),
        ];
        let built = [
            member("a.py", b"one\n2\n"),
            member("blob", b"\0\x01\x09\x03\x04"),
            member("new.py", b""),
        ];
        let d = diff(&wheel(b"g", &given), &wheel(b"b", &built));
        assert!(!d.is_identical());
        assert_eq!(d.only_given, ["gone.py"]);
        assert_eq!(d.only_built, ["new.py"]);
        assert_eq!(d.members.len(), 2);
        let ContentDiff::Text { diff: text } = d.members[0].content.clone().unwrap() else {
            panic!("{:?}", d.members[0]);
        };
        assert!(text.contains("-two\n+2\n"), "{text}");
        assert!(matches!(
            d.members[1].content,
            Some(ContentDiff::Binary {
                given_size: 4,
                built_size: 5,
                first_difference: 2,
                ..
            })
        ));
        let report = d.render();
        assert!(
            report.contains("only in the given wheel: gone.py"),
            "{report}"
        );
        assert!(report.contains("differs: blob (binary)"), "{report}");
        assert!(report.contains("first difference at byte 2"), "{report}");
        assert!(
            report.contains("differs: a.py (text)\n  --- given/a.py"),
            "{report}"
        );
    }

    #[test]
    fn a_mode_change_alone_is_a_difference() {
        let given = [member("run.sh", b"x")];
        let mut built = given.clone();
        built[0].unix_mode = Some(0o100755);
        let d = diff(&wheel(b"g", &given), &wheel(b"b", &built));
        assert_eq!(d.members[0].modes, Some((Some(0o100644), Some(0o100755))));
        assert_eq!(d.members[0].content, None);
        assert!(d.render().contains("mode: given 100644, built 100755"));
    }

    #[test]
    fn same_members_in_other_archive_bytes_point_at_the_archive() {
        let members = [member("a.py", b"x")];
        let d = diff(&wheel(b"zip-1", &members), &wheel(b"zip-2", &members));
        assert!(!d.is_identical());
        assert_eq!(d.archive_differs_at, Some(4));
        assert!(d.render().contains("the archives first differ at byte 4"));
    }

    #[test]
    fn another_file_name_is_not_identical() {
        let members = [member("a.py", b"x")];
        let mut other = wheel(b"zip", &members);
        other.file_name = "p-2-py3-none-any.whl";
        let d = diff(&wheel(b"zip", &members), &other);
        assert!(!d.is_identical());
        assert!(d.render().starts_with("file name: given p-1"));
    }

    #[test]
    fn an_elf_member_is_diffed_by_section() {
        // This test binary is a real ELF file: flip one byte of its .text.
        use object::read::{Object, ObjectSection};
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let file = object::read::elf::ElfFile64::<object::LittleEndian>::parse(&*exe).unwrap();
        let (start, _) = file.section_by_name(".text").unwrap().file_range().unwrap();
        let mut flipped = exe.clone();
        flipped[start as usize + 100] ^= 0xff;
        let d = diff(
            &wheel(b"g", &[member("m.so", &exe)]),
            &wheel(b"b", &[member("m.so", &flipped)]),
        );
        let Some(ContentDiff::Elf(elf)) = &d.members[0].content else {
            panic!("{:?}", d.members[0].content);
        };
        let names: Vec<&str> = elf.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [".text"]);
        assert!(elf.symbols.is_empty());
        let report = d.render();
        assert!(
            report.contains("differs: m.so (ELF)\n  section .text:\n    given "),
            "{report}"
        );
    }
}

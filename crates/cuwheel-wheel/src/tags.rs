//! Platform compatibility tags (the "Platform compatibility tags"
//! specification, PEP 425).
//!
//! In: a compressed tag set as it appears in a wheel file name
//! (`cp39.cp310-abi3-manylinux_2_28_x86_64.manylinux_2_31_x86_64`) or a list
//! of single [`Tag`]s (WHEEL's `Tag:` lines). Out: a [`TagSet`] that expands
//! to the sorted product of its parts and compresses back, or a [`TagError`]
//! naming the part that is wrong.

use std::collections::BTreeSet;
use std::fmt;

/// One `{python}-{abi}-{platform}` triple, e.g. `cp311-cp311-manylinux_2_31_x86_64`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tag {
    pub python: String,
    pub abi: String,
    pub platform: String,
}

/// A compressed tag set: every combination of its python, abi and platform
/// tags. Each part is kept sorted and free of duplicates, so two sets that
/// expand to the same tags are equal and display the same.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TagSet {
    python: Vec<String>,
    abi: Vec<String>,
    platform: Vec<String>,
}

/// Why a string is not a tag or tag set, or tags are not one set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tag `{input}`: {reason}")]
pub struct TagError {
    pub input: String,
    pub reason: String,
}

fn error(input: &str, reason: impl Into<String>) -> TagError {
    TagError {
        input: input.to_string(),
        reason: reason.into(),
    }
}

/// Splits `{python}-{abi}-{platform}` into its three parts.
fn split_triple(input: &str) -> Result<[&str; 3], TagError> {
    let parts: Vec<&str> = input.split('-').collect();
    match parts[..] {
        [python, abi, platform] => Ok([python, abi, platform]),
        _ => Err(error(
            input,
            format!(
                "expected three `-`-separated parts {{python}}-{{abi}}-{{platform}}, found {}",
                parts.len()
            ),
        )),
    }
}

/// Checks one tag component (`cp311`, `abi3`, `manylinux_2_31_x86_64`).
fn check_component(input: &str, what: &str, value: &str) -> Result<(), TagError> {
    if value.is_empty() {
        return Err(error(input, format!("the {what} tag is empty")));
    }
    if let Some(bad) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return Err(error(
            input,
            format!(
                "the {what} tag `{value}` contains {bad:?}; tags hold only ASCII letters, digits and `_`"
            ),
        ));
    }
    Ok(())
}

const PART_NAMES: [&str; 3] = ["python", "abi", "platform"];

impl Tag {
    /// Parses a single, uncompressed tag (a WHEEL `Tag:` value).
    pub fn parse(input: &str) -> Result<Tag, TagError> {
        let parts = split_triple(input)?;
        for (what, value) in PART_NAMES.iter().zip(parts) {
            check_component(input, what, value)?;
        }
        let [python, abi, platform] = parts.map(str::to_string);
        Ok(Tag {
            python,
            abi,
            platform,
        })
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.python, self.abi, self.platform)
    }
}

impl std::str::FromStr for Tag {
    type Err = TagError;
    fn from_str(s: &str) -> Result<Tag, TagError> {
        Tag::parse(s)
    }
}

impl TagSet {
    /// Parses `py1.py2-abi-plat1.plat2`.
    pub fn parse(input: &str) -> Result<TagSet, TagError> {
        let parts = split_triple(input)?;
        let mut sets: [BTreeSet<String>; 3] = Default::default();
        for ((what, value), set) in PART_NAMES.iter().zip(parts).zip(&mut sets) {
            for component in value.split('.') {
                check_component(input, what, component)?;
                set.insert(component.to_string());
            }
        }
        let [python, abi, platform] = sets.map(|set| set.into_iter().collect());
        Ok(TagSet {
            python,
            abi,
            platform,
        })
    }

    /// The set of exactly one tag.
    pub fn single(tag: &Tag) -> TagSet {
        TagSet {
            python: vec![tag.python.clone()],
            abi: vec![tag.abi.clone()],
            platform: vec![tag.platform.clone()],
        }
    }

    /// The smallest compressed set holding exactly `tags`. Fails when `tags`
    /// is empty or is not the full product of its parts (e.g. `cp311-cp311-x`
    /// with `cp312-cp312-x`, which no single file name can express).
    pub fn compress(tags: &[Tag]) -> Result<TagSet, TagError> {
        let listed = || {
            tags.iter()
                .map(Tag::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if tags.is_empty() {
            return Err(error("", "no tags given; a wheel needs at least one"));
        }
        let collect = |part: fn(&Tag) -> &String| -> Vec<String> {
            tags.iter()
                .map(part)
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect()
        };
        let set = TagSet {
            python: collect(|t| &t.python),
            abi: collect(|t| &t.abi),
            platform: collect(|t| &t.platform),
        };
        for tag in tags {
            for (what, value) in PART_NAMES
                .iter()
                .zip([&tag.python, &tag.abi, &tag.platform])
            {
                check_component(&tag.to_string(), what, value)?;
            }
        }
        let given: BTreeSet<&Tag> = tags.iter().collect();
        let expanded = set.expand();
        if let Some(missing) = expanded.iter().find(|t| !given.contains(t)) {
            return Err(error(
                &listed(),
                format!(
                    "these tags are not every combination of their python, abi and platform parts \
                     (`{missing}` is missing), so one wheel file name cannot carry them; \
                     build one wheel per combination instead"
                ),
            ));
        }
        Ok(set)
    }

    /// Every tag of the set, sorted.
    pub fn expand(&self) -> Vec<Tag> {
        let mut tags = Vec::with_capacity(self.python.len() * self.abi.len() * self.platform.len());
        for python in &self.python {
            for abi in &self.abi {
                for platform in &self.platform {
                    tags.push(Tag {
                        python: python.clone(),
                        abi: abi.clone(),
                        platform: platform.clone(),
                    });
                }
            }
        }
        // The parts are sorted, so the nested loops already yield sorted tags.
        tags
    }
}

impl fmt::Display for TagSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}-{}",
            self.python.join("."),
            self.abi.join("."),
            self.platform.join(".")
        )
    }
}

impl std::str::FromStr for TagSet {
    type Err = TagError;
    fn from_str(s: &str) -> Result<TagSet, TagError> {
        TagSet::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(s: &str) -> Tag {
        Tag::parse(s).unwrap()
    }

    #[test]
    fn expands_to_the_sorted_product() {
        let set =
            TagSet::parse("cp39.cp310-abi3-manylinux_2_31_x86_64.manylinux_2_28_x86_64").unwrap();
        let expanded: Vec<String> = set.expand().iter().map(Tag::to_string).collect();
        assert_eq!(
            expanded,
            [
                "cp310-abi3-manylinux_2_28_x86_64",
                "cp310-abi3-manylinux_2_31_x86_64",
                "cp39-abi3-manylinux_2_28_x86_64",
                "cp39-abi3-manylinux_2_31_x86_64",
            ]
        );
        assert_eq!(
            set.to_string(),
            "cp310.cp39-abi3-manylinux_2_28_x86_64.manylinux_2_31_x86_64",
            "parts are displayed sorted"
        );
    }

    #[test]
    fn compress_inverts_expand() {
        for text in [
            "py3-none-any",
            "cp311-cp311-manylinux_2_31_x86_64",
            "py2.py3-none-any",
            "cp310.cp39-abi3-manylinux_2_28_x86_64.manylinux_2_31_x86_64",
        ] {
            let set = TagSet::parse(text).unwrap();
            let mut shuffled = set.expand();
            shuffled.reverse();
            assert_eq!(TagSet::compress(&shuffled).unwrap(), set, "{text}");
            assert_eq!(set.to_string(), text);
        }
        assert_eq!(
            TagSet::single(&tag("cp311-cp311-linux_x86_64")).to_string(),
            "cp311-cp311-linux_x86_64"
        );
    }

    #[test]
    fn compress_refuses_what_is_not_a_product() {
        let err = TagSet::compress(&[
            tag("cp311-cp311-linux_x86_64"),
            tag("cp312-cp312-linux_x86_64"),
        ])
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("`cp311-cp312-linux_x86_64` is missing"),
            "{err}"
        );
        assert!(
            TagSet::compress(&[])
                .unwrap_err()
                .to_string()
                .contains("no tags")
        );
    }

    #[test]
    fn errors_name_the_bad_part() {
        let err = TagSet::parse("cp311-cp311").unwrap_err();
        assert!(err.to_string().contains("found 2"), "{err}");
        let err = TagSet::parse("cp311..cp312-abi3-any").unwrap_err();
        assert!(err.to_string().contains("python tag is empty"), "{err}");
        let err = TagSet::parse("cp311-abi3-linux x86").unwrap_err();
        assert!(
            err.to_string()
                .contains("platform tag `linux x86` contains ' '"),
            "{err}"
        );
        let err = Tag::parse("py3-none-any.linux").unwrap_err();
        assert!(err.to_string().contains("contains '.'"), "{err}");
    }
}

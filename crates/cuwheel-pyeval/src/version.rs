//! Versions (PEP 440, as restated in the "Version specifiers" specification):
//! what `packaging.version.Version` and `torch.__version__` compare by.
//! The evaluator carries its own reader (the rest of cuwheel reads versions
//! with cuwheel-wheel's, which this crate does not depend on).
//!
//! In: a version string in any spelling PEP 440 accepts (`v1.0-Alpha.1`,
//! `1.0-1`, `0.1.0+PT211_cu130`). Out: a [`Version`] whose `Display` is the
//! normalised form (`1.0a1`, `1.0.post1`, `0.1.0+pt211.cu130`) and whose
//! `Ord`/`Eq` follow PEP 440 (so `1.0 == 1.0.0`, `1.0.dev0 < 1.0a1 < 1.0 <
//! 1.0+local < 1.0.post1`), or a [`VersionError`] naming the byte where
//! parsing stopped and what was expected there.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A parsed PEP 440 version. Equality, ordering and hashing follow PEP 440,
/// which ignores trailing zeros of the release (`1.0 == 1.0.0`).
#[derive(Debug, Clone)]
pub struct Version {
    epoch: u64,
    release: Vec<u64>,
    pre: Option<PreRelease>,
    post: Option<u64>,
    dev: Option<u64>,
    local: Vec<LocalSegment>,
}

/// `a`, `b` or `rc` with its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PreRelease {
    pub kind: PreReleaseKind,
    pub number: u64,
}

/// The pre-release phases, in PEP 440 order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PreReleaseKind {
    Alpha,
    Beta,
    ReleaseCandidate,
}

/// One `.`-separated part of a local version label (`pt211`, `7`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LocalSegment {
    Number(u64),
    Text(String),
}

/// Why a string is not a PEP 440 version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid version `{input}`: {reason} (at byte {position})")]
pub struct VersionError {
    pub input: String,
    /// Byte offset into `input` where parsing stopped.
    pub position: usize,
    pub reason: String,
}

impl Version {
    /// Parses any spelling PEP 440 accepts, including surrounding whitespace,
    /// a leading `v` and upper case.
    pub fn parse(input: &str) -> Result<Version, VersionError> {
        VersionParser::new(input)?.version()
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    pub fn release(&self) -> &[u64] {
        &self.release
    }

    pub fn pre(&self) -> Option<PreRelease> {
        self.pre
    }

    pub fn post(&self) -> Option<u64> {
        self.post
    }

    pub fn dev(&self) -> Option<u64> {
        self.dev
    }

    /// The local version label's segments; empty when there is none.
    pub fn local(&self) -> &[LocalSegment] {
        &self.local
    }

    /// The same version without its local label (`0.1.0+pt211` → `0.1.0`).
    pub fn without_local(&self) -> Version {
        Version {
            local: Vec::new(),
            ..self.clone()
        }
    }

    /// Where this version sits between pre-releases and the final release:
    /// a bare dev release (`1.0.dev0`) sorts before every pre-release of 1.0,
    /// a version without pre-release after all of them.
    fn pre_key(&self) -> (u8, Option<PreRelease>) {
        match (self.pre, self.post, self.dev) {
            (None, None, Some(_)) => (0, None),
            (Some(pre), _, _) => (1, Some(pre)),
            (None, _, _) => (2, None),
        }
    }

    /// A missing dev part sorts after every dev release.
    fn dev_key(&self) -> (bool, u64) {
        match self.dev {
            Some(n) => (false, n),
            None => (true, 0),
        }
    }

    fn release_without_trailing_zeros(&self) -> &[u64] {
        let len = self
            .release
            .iter()
            .rposition(|&n| n != 0)
            .map_or(0, |i| i + 1);
        &self.release[..len]
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Version) -> Ordering {
        self.epoch
            .cmp(&other.epoch)
            .then_with(|| {
                self.release_without_trailing_zeros()
                    .cmp(other.release_without_trailing_zeros())
            })
            .then_with(|| self.pre_key().cmp(&other.pre_key()))
            .then_with(|| self.post.cmp(&other.post))
            .then_with(|| self.dev_key().cmp(&other.dev_key()))
            // No label sorts first; then segment by segment, a shorter label
            // that is a prefix of a longer one sorts first (Vec's order).
            .then_with(|| self.local.cmp(&other.local))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Version) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Version) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Version {}

impl Hash for Version {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.epoch.hash(state);
        self.release_without_trailing_zeros().hash(state);
        self.pre.hash(state);
        self.post.hash(state);
        self.dev.hash(state);
        self.local.hash(state);
    }
}

impl Ord for LocalSegment {
    /// PEP 440: numeric segments compare numerically and sort after
    /// alphanumeric ones, which compare lexicographically.
    fn cmp(&self, other: &LocalSegment) -> Ordering {
        match (self, other) {
            (LocalSegment::Number(a), LocalSegment::Number(b)) => a.cmp(b),
            (LocalSegment::Text(a), LocalSegment::Text(b)) => a.cmp(b),
            (LocalSegment::Text(_), LocalSegment::Number(_)) => Ordering::Less,
            (LocalSegment::Number(_), LocalSegment::Text(_)) => Ordering::Greater,
        }
    }
}

impl PartialOrd for LocalSegment {
    fn partial_cmp(&self, other: &LocalSegment) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for PreReleaseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PreReleaseKind::Alpha => "a",
            PreReleaseKind::Beta => "b",
            PreReleaseKind::ReleaseCandidate => "rc",
        })
    }
}

impl fmt::Display for LocalSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocalSegment::Number(n) => write!(f, "{n}"),
            LocalSegment::Text(s) => f.write_str(s),
        }
    }
}

impl fmt::Display for Version {
    /// The normalised form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.epoch != 0 {
            write!(f, "{}!", self.epoch)?;
        }
        write_joined(f, &self.release)?;
        if let Some(pre) = self.pre {
            write!(f, "{}{}", pre.kind, pre.number)?;
        }
        if let Some(post) = self.post {
            write!(f, ".post{post}")?;
        }
        if let Some(dev) = self.dev {
            write!(f, ".dev{dev}")?;
        }
        if !self.local.is_empty() {
            f.write_str("+")?;
            write_joined(f, &self.local)?;
        }
        Ok(())
    }
}

fn write_joined<T: fmt::Display>(f: &mut fmt::Formatter<'_>, parts: &[T]) -> fmt::Result {
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            f.write_str(".")?;
        }
        write!(f, "{part}")?;
    }
    Ok(())
}

impl std::str::FromStr for Version {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Version, VersionError> {
        Version::parse(s)
    }
}

/// A cursor over the lowercased, whitespace-trimmed input. Positions in
/// errors are offsets into the original input.
struct VersionParser<'a> {
    input: &'a str,
    text: Vec<u8>,
    pos: usize,
    /// Bytes of leading whitespace cut from `input`.
    offset: usize,
}

const PRE_LABELS: [(&str, PreReleaseKind); 8] = [
    // Longer spellings first, so `alpha` is not read as `a` + `lpha`.
    ("alpha", PreReleaseKind::Alpha),
    ("a", PreReleaseKind::Alpha),
    ("beta", PreReleaseKind::Beta),
    ("b", PreReleaseKind::Beta),
    ("preview", PreReleaseKind::ReleaseCandidate),
    ("pre", PreReleaseKind::ReleaseCandidate),
    ("c", PreReleaseKind::ReleaseCandidate),
    ("rc", PreReleaseKind::ReleaseCandidate),
];
const POST_LABELS: [&str; 3] = ["post", "rev", "r"];

impl<'a> VersionParser<'a> {
    fn new(input: &'a str) -> Result<VersionParser<'a>, VersionError> {
        let trimmed = input.trim_start();
        let offset = input.len() - trimmed.len();
        let trimmed = trimmed.trim_end();
        let parser = VersionParser {
            input,
            text: trimmed.as_bytes().to_ascii_lowercase(),
            pos: 0,
            offset,
        };
        if trimmed.is_empty() {
            return Err(parser.error("the version is empty; write one like `1.0` or `0.1.0+cu130`"));
        }
        if let Some((at, c)) = trimmed.char_indices().find(|(_, c)| !c.is_ascii()) {
            let mut parser = parser;
            parser.pos = at;
            return Err(parser.error(&format!(
                "character {c:?} is not allowed; versions are ASCII"
            )));
        }
        Ok(parser)
    }

    fn error(&self, reason: &str) -> VersionError {
        VersionError {
            input: self.input.to_string(),
            position: self.offset + self.pos,
            reason: reason.to_string(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn rest(&self) -> &[u8] {
        &self.text[self.pos..]
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.pos += 1;
        }
        found
    }

    fn eat_separator(&mut self) {
        if matches!(self.peek(), Some(b'-' | b'_' | b'.')) {
            self.pos += 1;
        }
    }

    /// A run of digits, or `None` if there is no digit here.
    fn number(&mut self) -> Result<Option<u64>, VersionError> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        if start == self.pos {
            return Ok(None);
        }
        let digits = std::str::from_utf8(&self.text[start..self.pos]).expect("ASCII digits");
        match digits.parse::<u64>() {
            Ok(n) => Ok(Some(n)),
            Err(_) => {
                self.pos = start;
                Err(self.error(&format!("the number {digits} is too large")))
            }
        }
    }

    /// `[-_.]? label [-_.]? number?`, where `label` is the first of `labels`
    /// found here; a missing number is 0. Consumes nothing and gives `None`
    /// if no label is here.
    fn labelled_number(&mut self, labels: &[&str]) -> Result<Option<(usize, u64)>, VersionError> {
        let start = self.pos;
        self.eat_separator();
        let Some(index) = labels
            .iter()
            .position(|label| self.rest().starts_with(label.as_bytes()))
        else {
            self.pos = start;
            return Ok(None);
        };
        self.pos += labels[index].len();
        // Like PEP 440's regular expression, a separator after the label is
        // taken even when no number follows (`1.0a-` is `1.0a0`); every later
        // part may start without a separator, so nothing is lost by that.
        self.eat_separator();
        Ok(Some((index, self.number()?.unwrap_or(0))))
    }

    fn version(mut self) -> Result<Version, VersionError> {
        self.eat(b'v');
        let first_number = self
            .number()?
            .ok_or_else(|| self.error("expected a release number such as `1.0`"))?;
        let (epoch, first) = if self.eat(b'!') {
            let first = self
                .number()?
                .ok_or_else(|| self.error("expected a release number after the epoch `N!`"))?;
            (first_number, first)
        } else {
            (0, first_number)
        };
        let mut release = vec![first];
        while self.peek() == Some(b'.')
            && self.text.get(self.pos + 1).is_some_and(u8::is_ascii_digit)
        {
            self.pos += 1;
            release.push(self.number()?.expect("a digit follows"));
        }

        let pre_spellings = PRE_LABELS.map(|(spelling, _)| spelling);
        let pre = self
            .labelled_number(&pre_spellings)?
            .map(|(index, number)| PreRelease {
                kind: PRE_LABELS[index].1,
                number,
            });

        let post = if self.peek() == Some(b'-')
            && self.text.get(self.pos + 1).is_some_and(u8::is_ascii_digit)
        {
            // The implicit post release `1.0-1`.
            self.pos += 1;
            self.number()?
        } else {
            self.labelled_number(&POST_LABELS)?.map(|(_, n)| n)
        };

        let dev = self.labelled_number(&["dev"])?.map(|(_, n)| n);

        let local = if self.eat(b'+') {
            self.local()?
        } else {
            Vec::new()
        };

        if let Some(byte) = self.peek() {
            return Err(self.error(&format!(
                "unexpected `{}`; after the release numbers only a pre-release (`a1`, `b2`, `rc1`), \
                 `.postN`, `.devN` and a local label `+label` may follow",
                byte as char
            )));
        }
        Ok(Version {
            epoch,
            release,
            pre,
            post,
            dev,
            local,
        })
    }

    /// `[a-z0-9]+ ([-_.] [a-z0-9]+)*` after the `+`.
    fn local(&mut self) -> Result<Vec<LocalSegment>, VersionError> {
        let mut segments = Vec::new();
        loop {
            let start = self.pos;
            while self.peek().is_some_and(|b| b.is_ascii_alphanumeric()) {
                self.pos += 1;
            }
            if start == self.pos {
                let reason = if segments.is_empty() {
                    "expected a local version label (letters and digits) after `+`"
                } else {
                    "expected letters or digits after the separator in the local version label"
                };
                return Err(self.error(reason));
            }
            let segment = String::from_utf8(self.text[start..self.pos].to_vec()).expect("ASCII");
            segments.push(if segment.bytes().all(|b| b.is_ascii_digit()) {
                match segment.parse::<u64>() {
                    Ok(n) => LocalSegment::Number(n),
                    Err(_) => {
                        self.pos = start;
                        return Err(self.error(&format!("the number {segment} is too large")));
                    }
                }
            } else {
                LocalSegment::Text(segment)
            });
            if matches!(self.peek(), Some(b'-' | b'_' | b'.')) {
                self.pos += 1;
            } else {
                return Ok(segments);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn normalises_the_spellings_pep440_lists() {
        // Pairs from PEP 440's "Normalization" section, plus local labels.
        for (given, normal) in [
            ("1.0", "1.0"),
            ("v1.0", "1.0"),
            ("  1.0\n", "1.0"),
            ("01.02.003", "1.2.3"),
            ("0!1.0", "1.0"),
            ("1!2.0", "1!2.0"),
            ("1.0a", "1.0a0"),
            ("1.0.a1", "1.0a1"),
            ("1.0-alpha.1", "1.0a1"),
            ("1.0ALPHA1", "1.0a1"),
            ("1.0beta", "1.0b0"),
            ("1.0_b_2", "1.0b2"),
            ("1.0c1", "1.0rc1"),
            ("1.0pre1", "1.0rc1"),
            ("1.0preview2", "1.0rc2"),
            ("1.0RC3", "1.0rc3"),
            ("1.0-post1", "1.0.post1"),
            ("1.0post", "1.0.post0"),
            ("1.0-1", "1.0.post1"),
            ("1.0.rev", "1.0.post0"),
            ("1.0r2", "1.0.post2"),
            ("1.0dev", "1.0.dev0"),
            ("1.0-dev2", "1.0.dev2"),
            ("1.0a.dev1", "1.0a0.dev1"),
            ("1.0a-", "1.0a0"),
            ("1.0.post_", "1.0.post0"),
            ("1.0rc1.post2.dev3", "1.0rc1.post2.dev3"),
            ("1.0+ubuntu-1", "1.0+ubuntu.1"),
            ("1.0+abc.007", "1.0+abc.7"),
            ("0.1.0+PT211_CU130", "0.1.0+pt211.cu130"),
            ("0.1.0+pt211cu130", "0.1.0+pt211cu130"),
            ("2.11.0+cu130", "2.11.0+cu130"),
        ] {
            assert_eq!(v(given).to_string(), normal, "{given:?}");
        }
    }

    #[test]
    fn orders_pep440s_example_list() {
        // PEP 440, "Summary of permitted suffixes and relative ordering".
        let ordered = [
            "1.dev0",
            "1.0.dev456",
            "1.0a1",
            "1.0a2.dev456",
            "1.0a12.dev456",
            "1.0a12",
            "1.0b1.dev456",
            "1.0b2",
            "1.0b2.post345.dev456",
            "1.0b2.post345",
            "1.0rc1.dev456",
            "1.0rc1",
            "1.0",
            "1.0+abc.5",
            "1.0+abc.7",
            "1.0+5",
            "1.0.post456.dev34",
            "1.0.post456",
            "1.0.15",
            "1.1.dev1",
            "1!0.1",
        ];
        for pair in ordered.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn local_labels_order_and_equality() {
        assert_eq!(v("1.0"), v("1.0.0"));
        assert_ne!(v("1.0+cu130"), v("1.0"));
        assert!(v("1.0+cu124") < v("1.0+cu130"));
        assert!(v("1.0+abc") < v("1.0+abc.1"), "a prefix sorts first");
        assert!(v("1.0+zzz") < v("1.0+1"), "numbers sort after text");
        assert_eq!(v("0.1.0+pt211cu130").without_local(), v("0.1.0"));
        let set: std::collections::HashSet<Version> = [v("1.0"), v("1.0.0"), v("1")].into();
        assert_eq!(set.len(), 1, "hash agrees with equality");
    }

    #[test]
    fn errors_say_what_and_where() {
        for (bad, position, words) in [
            ("", 0, "empty"),
            ("abc", 0, "expected a release number"),
            ("1.0+", 4, "local version label"),
            ("1.0+a..b", 6, "after the separator"),
            ("1.0-", 3, "unexpected `-`"),
            ("1..0", 1, "unexpected `.`"),
            ("1.0 beta", 3, "unexpected ` `"),
            ("1!", 2, "after the epoch"),
            ("1.0é", 3, "ASCII"),
            ("99999999999999999999", 0, "too large"),
        ] {
            let err = Version::parse(bad).unwrap_err();
            assert_eq!(err.position, position, "{bad:?}: {err}");
            let message = err.to_string();
            assert!(message.contains(words), "{bad:?}: {message}");
            assert!(
                message.contains(&format!("`{bad}`")),
                "names the input: {message}"
            );
        }
    }
}

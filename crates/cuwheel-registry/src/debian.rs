//! Debian's package metadata, read without dpkg: version ordering, the
//! `Depends`-style relation syntax, the package index of one suite and the
//! dependency closure of a toolchain's roots.
//!
//! In: the text of a suite's package index (`apt-cache dumpavail`), roots and
//! an exclude list. Out: the packages to pin, sorted by name, or every
//! dependency the suite cannot satisfy. Pure; [`super::apt`] runs apt.
//!
//! Closure rules: `Depends` and `Pre-Depends` are followed; of the
//! alternatives `a | b` the first one the suite can satisfy is taken (a
//! virtual name through the packages that `Provides` it, preferring one
//! already chosen, then the first by name); a relation with an excluded
//! alternative is dropped, because the exclude list is the statement that
//! this need is served elsewhere or not at all; version constraints are
//! checked, and one nothing satisfies is reported, never ignored.

use std::cmp::Ordering;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;

pub use cuwheel_build::lock::data::{DebianData, Patterns, gcc_recipe};

/// Compares two Debian versions as dpkg does (`epoch:upstream-revision`,
/// `~` before everything, even the end of the string).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let (a_epoch, a_upstream, a_revision) = split_version(a);
    let (b_epoch, b_upstream, b_revision) = split_version(b);
    a_epoch
        .cmp(&b_epoch)
        .then_with(|| compare_part(a_upstream, b_upstream))
        .then_with(|| compare_part(a_revision, b_revision))
}

fn split_version(version: &str) -> (u64, &str, &str) {
    let (epoch, rest) = match version.split_once(':') {
        Some((epoch, rest)) => (epoch.parse().unwrap_or(0), rest),
        None => (0, version),
    };
    match rest.rsplit_once('-') {
        Some((upstream, revision)) => (epoch, upstream, revision),
        None => (epoch, rest, ""),
    }
}

/// dpkg's `verrevcmp`: alternating non-digit and digit runs.
fn compare_part(a: &str, b: &str) -> Ordering {
    fn weight(c: Option<u8>) -> i32 {
        match c {
            Some(b'~') => -1,
            None => 0,
            Some(c) if c.is_ascii_digit() => 0,
            Some(c) if c.is_ascii_alphabetic() => i32::from(c),
            Some(c) => i32::from(c) + 256,
        }
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let (wa, wb) = (weight(a.get(i).copied()), weight(b.get(j).copied()));
            if wa != wb {
                return wa.cmp(&wb);
            }
            i += 1;
            j += 1;
        }
        let start = (i, j);
        while i < a.len() && a[i].is_ascii_digit() {
            i += 1;
        }
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let number = |digits: &[u8]| {
            let digits = std::str::from_utf8(digits).unwrap_or("0");
            let trimmed = digits.trim_start_matches('0');
            (trimmed.len(), trimmed.to_owned())
        };
        // Compare by length, then text: no overflow on long digit runs.
        let ordering = number(&a[start.0..i]).cmp(&number(&b[start.1..j]));
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// A version constraint's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Less,
    LessEq,
    Eq,
    GreaterEq,
    Greater,
}

impl Op {
    fn parse(text: &str) -> Option<Op> {
        Some(match text {
            "<<" => Op::Less,
            "<=" | "<" => Op::LessEq, // `<` is dpkg's obsolete spelling of `<=`
            "=" => Op::Eq,
            ">=" | ">" => Op::GreaterEq,
            ">>" => Op::Greater,
            _ => return None,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Op::Less => "<<",
            Op::LessEq => "<=",
            Op::Eq => "=",
            Op::GreaterEq => ">=",
            Op::Greater => ">>",
        }
    }

    fn admits(self, ordering: Ordering) -> bool {
        match self {
            Op::Less => ordering == Ordering::Less,
            Op::LessEq => ordering != Ordering::Greater,
            Op::Eq => ordering == Ordering::Equal,
            Op::GreaterEq => ordering != Ordering::Less,
            Op::Greater => ordering == Ordering::Greater,
        }
    }
}

/// One alternative of a relation: `name (op version)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    pub name: String,
    pub constraint: Option<(Op, String)>,
}

impl Relation {
    /// Whether a package (or a `Provides` entry) of this version satisfies it;
    /// `None` is an unversioned provide, which satisfies only an unversioned
    /// relation.
    fn admits(&self, version: Option<&str>) -> bool {
        match (&self.constraint, version) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some((op, wanted)), Some(version)) => op.admits(compare_versions(version, wanted)),
        }
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some((op, version)) = &self.constraint {
            write!(f, " ({} {version})", op.as_str())?;
        }
        Ok(())
    }
}

/// Parses a `Depends`-style field: `,`-separated relations, each `|`-separated
/// alternatives. Architecture qualifiers (`:any`) are dropped: the index holds
/// one architecture.
pub fn parse_relations(field: &str) -> Result<Vec<Vec<Relation>>, String> {
    field
        .split(',')
        .map(str::trim)
        .filter(|clause| !clause.is_empty())
        .map(|clause| {
            clause
                .split('|')
                .map(|alt| parse_relation(alt.trim()))
                .collect()
        })
        .collect()
}

fn parse_relation(text: &str) -> Result<Relation, String> {
    let (name, rest) = match text.find('(') {
        Some(open) => (text[..open].trim(), Some(&text[open..])),
        None => (text, None),
    };
    let name = name.split(':').next().unwrap_or(name).trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("`{text}` is not a package relation"));
    }
    let constraint = match rest {
        None => None,
        Some(rest) => {
            let inner = rest
                .strip_prefix('(')
                .and_then(|r| r.trim_end().strip_suffix(')'))
                .ok_or_else(|| format!("`{text}` has an unclosed version constraint"))?
                .trim();
            let split = inner
                .find(|c: char| !"<>=".contains(c))
                .ok_or_else(|| format!("`{text}` has no version after its operator"))?;
            let op = Op::parse(&inner[..split])
                .ok_or_else(|| format!("`{text}` has an unknown operator"))?;
            Some((op, inner[split..].trim().to_owned()))
        }
    };
    Ok(Relation {
        name: name.to_owned(),
        constraint,
    })
}

/// One binary package of a suite's index: what pinning and following it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub version: String,
    pub architecture: String,
    /// The pool path; its base name is the `.deb`'s name in the archive.
    pub filename: String,
    pub size: u64,
    pub sha256: String,
    /// `Pre-Depends` then `Depends`.
    pub depends: Vec<Vec<Relation>>,
    pub provides: Vec<Relation>,
}

impl Package {
    /// The name `apt-get download` saves the package under: apt quotes the
    /// epoch's `:` as `%3a`.
    pub fn download_name(&self) -> String {
        format!(
            "{}_{}_{}.deb",
            self.name,
            self.version.replace(':', "%3a"),
            self.architecture
        )
    }
}

/// Every package of one suite (one architecture plus `all`), by name.
#[derive(Debug, Default)]
pub struct Index {
    packages: BTreeMap<String, Package>,
    /// Virtual name → (provider, provided version).
    providers: BTreeMap<String, Vec<(String, Option<String>)>>,
}

impl Index {
    /// Reads an index in the format of `Packages` files (what `apt-cache
    /// dumpavail` prints). Where a name appears twice the newest version wins.
    pub fn parse(text: &str) -> Result<Index, String> {
        let mut index = Index::default();
        for stanza in text.split("\n\n").filter(|s| !s.trim().is_empty()) {
            let fields = parse_stanza(stanza);
            let get = |key: &str| fields.get(key).map(String::as_str);
            let Some(name) = get("Package") else {
                return Err(format!("a stanza has no Package field: {stanza:.80}"));
            };
            let missing = |key: &str| format!("package {name} has no {key} field");
            let relations = |key: &str| {
                parse_relations(get(key).unwrap_or(""))
                    .map_err(|e| format!("package {name}, field {key}: {e}"))
            };
            let mut depends = relations("Pre-Depends")?;
            depends.extend(relations("Depends")?);
            let provides = relations("Provides")?.into_iter().flatten().collect();
            let package = Package {
                name: name.to_owned(),
                version: get("Version").ok_or_else(|| missing("Version"))?.to_owned(),
                architecture: get("Architecture")
                    .ok_or_else(|| missing("Architecture"))?
                    .to_owned(),
                filename: get("Filename")
                    .ok_or_else(|| missing("Filename"))?
                    .to_owned(),
                size: get("Size")
                    .ok_or_else(|| missing("Size"))?
                    .parse()
                    .map_err(|_| format!("package {name} has a Size that is not a number"))?,
                sha256: get("SHA256").ok_or_else(|| missing("SHA256"))?.to_owned(),
                depends,
                provides,
            };
            match index.packages.get(name) {
                Some(old) if compare_versions(&old.version, &package.version).is_ge() => {}
                _ => {
                    index.packages.insert(name.to_owned(), package);
                }
            }
        }
        for package in index.packages.values() {
            for provide in &package.provides {
                let version = provide.constraint.as_ref().map(|(_, v)| v.clone());
                index
                    .providers
                    .entry(provide.name.clone())
                    .or_default()
                    .push((package.name.clone(), version));
            }
        }
        for providers in index.providers.values_mut() {
            providers.sort();
        }
        Ok(index)
    }

    pub fn get(&self, name: &str) -> Option<&Package> {
        self.packages.get(name)
    }

    /// The packages that can satisfy `relation`: the real package first,
    /// then the providers.
    fn candidates(&self, relation: &Relation) -> Vec<&Package> {
        let mut found = Vec::new();
        if let Some(package) = self.packages.get(&relation.name) {
            if relation.admits(Some(&package.version)) {
                found.push(package);
            }
        }
        for (provider, version) in self.providers.get(&relation.name).into_iter().flatten() {
            if relation.admits(version.as_deref()) {
                if let Some(package) = self.packages.get(provider) {
                    found.push(package);
                }
            }
        }
        found
    }
}

/// `Key: value` fields with continuation lines folded in.
fn parse_stanza(stanza: &str) -> BTreeMap<String, String> {
    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    let mut last: Option<String> = None;
    for line in stanza.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some(value) = last.as_ref().and_then(|key| fields.get_mut(key)) {
                value.push('\n');
                value.push_str(line.trim());
            }
        } else if let Some((key, value)) = line.split_once(':') {
            fields.insert(key.to_owned(), value.trim().to_owned());
            last = Some(key.to_owned());
        }
    }
    fields
}

/// A dependency that nothing in the suite satisfies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsatisfied {
    /// The package that needs it, or `None` for a root.
    pub needed_by: Option<String>,
    pub relation: String,
}

impl fmt::Display for Unsatisfied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.needed_by {
            Some(package) => write!(f, "{package} depends on {}", self.relation),
            None => write!(f, "root package {}", self.relation),
        }
    }
}

/// The packages `roots` need, following dependencies when `follow` is set.
/// Returns them sorted by name, or every unsatisfiable relation.
pub fn closure<'a>(
    index: &'a Index,
    roots: &[String],
    exclude: &Patterns,
    follow: bool,
) -> Result<Vec<&'a Package>, Vec<Unsatisfied>> {
    let mut chosen: BTreeMap<&str, &Package> = BTreeMap::new();
    let mut unsatisfied = Vec::new();
    let mut queue: VecDeque<&Package> = VecDeque::new();
    for root in roots {
        match index.get(root) {
            Some(package) => {
                if chosen.insert(&package.name, package).is_none() {
                    queue.push_back(package);
                }
            }
            None => unsatisfied.push(Unsatisfied {
                needed_by: None,
                relation: root.clone(),
            }),
        }
    }
    while let Some(package) = queue.pop_front().filter(|_| follow) {
        for clause in &package.depends {
            if clause.iter().any(|alt| exclude.matches(&alt.name)) {
                continue;
            }
            let candidates: Vec<&Package> = clause
                .iter()
                .map(|alt| index.candidates(alt))
                .find(|found| !found.is_empty())
                .unwrap_or_default();
            let pick = candidates
                .iter()
                .find(|c| chosen.contains_key(c.name.as_str()))
                .or(candidates.first())
                .copied();
            match pick {
                Some(dependency) if exclude.matches(&dependency.name) => {}
                Some(dependency) => {
                    if chosen.insert(&dependency.name, dependency).is_none() {
                        queue.push_back(dependency);
                    }
                }
                None => unsatisfied.push(Unsatisfied {
                    needed_by: Some(format!("{} {}", package.name, package.version)),
                    relation: clause
                        .iter()
                        .map(Relation::to_string)
                        .collect::<Vec<_>>()
                        .join(" | "),
                }),
            }
        }
    }
    if unsatisfied.is_empty() {
        Ok(chosen.into_values().collect())
    } else {
        Err(unsatisfied)
    }
}

#[cfg(test)]
#[path = "debian_tests.rs"]
mod tests;

//! Reading a TOML document so that every problem can say where it is.
//!
//! In: the text of a TOML file and its path. Out: a walk over its tables and
//! values that knows each one's key path (`tool.cuwheel.matrix.cuda[1]`) and
//! position, and collects [`ConfigProblem`]s — each with what is wrong and
//! how to fix it — instead of stopping at the first. [`config`](super::config)
//! uses it for `[project]` and the `[tool.cuwheel]` schema.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::spec::version::InvalidValue;

/// A value together with where the config wrote it, for errors found later
/// (a pattern that matches no file, an exclude that matches no cell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    pub value: T,
    pub at: Location,
}

/// A key path and the line and column (1-based) of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// `tool.cuwheel.matrix.cuda[1]`; empty for the document as a whole.
    pub key: String,
    pub line: usize,
    pub column: usize,
}

/// One problem in the config, where it is and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    pub file: PathBuf,
    pub at: Location,
    pub problem: String,
    pub fix: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: ",
            self.file.display(),
            self.at.line,
            self.at.column
        )?;
        if !self.at.key.is_empty() {
            write!(f, "{}: ", self.at.key)?;
        }
        write!(f, "{}\n    fix: {}", self.problem, self.fix)
    }
}

/// Every problem found in one `pyproject.toml`; never empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub problems: Vec<ConfigProblem>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl Location {
    /// The location of byte `offset` of `text`, for `key`.
    pub fn of(text: &str, offset: usize, key: &str) -> Location {
        let before = text.get(..offset).unwrap_or(text);
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        Location {
            key: key.to_string(),
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// A table of the document with its key path.
pub(super) struct Table<'v, 'i> {
    pub(super) key: String,
    pub(super) span: Range<usize>,
    pub(super) entries: &'v DeTable<'i>,
}

/// A value of the document with its key path.
pub(super) struct Field<'v, 'i> {
    pub(super) key: String,
    pub(super) value: &'v Spanned<DeValue<'i>>,
}

impl<'v, 'i> Table<'v, 'i> {
    pub(super) fn get(&self, name: &str) -> Option<Field<'v, 'i>> {
        self.entries.get(name).map(|value| Field {
            key: join_key(&self.key, name),
            value,
        })
    }
}

/// `tool.cuwheel` + `matrix`; keys that are not bare are quoted, as in TOML.
pub(super) fn join_key(parent: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let key = if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

/// Walks the document, recording every problem and returning what it could read.
pub(super) struct Reader<'a> {
    pub(super) file: &'a Path,
    pub(super) text: &'a str,
    pub(super) problems: Vec<ConfigProblem>,
}

impl Reader<'_> {
    /// The problems in document order (a missing key sorts at its table).
    pub(super) fn into_error(mut self) -> ConfigError {
        self.problems
            .sort_by_key(|problem| (problem.at.line, problem.at.column));
        ConfigError {
            problems: self.problems,
        }
    }

    pub(super) fn location(&self, span: &Range<usize>, key: &str) -> Location {
        Location::of(self.text, span.start, key)
    }

    pub(super) fn report_at(
        &mut self,
        offset: usize,
        key: &str,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) {
        let at = Location::of(self.text, offset, key);
        self.report_location(at, problem, fix);
    }

    pub(super) fn report_location(
        &mut self,
        at: Location,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.problems.push(ConfigProblem {
            file: self.file.to_path_buf(),
            at,
            problem: problem.into(),
            fix: fix.into(),
        });
    }

    pub(super) fn report(
        &mut self,
        field: &Field<'_, '_>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.report_at(field.value.span().start, &field.key, problem, fix);
    }

    pub(super) fn raw(&self, span: Range<usize>) -> &str {
        self.text.get(span).unwrap_or_default()
    }

    pub(super) fn wrong_type(&mut self, field: &Field<'_, '_>, expected: &str, fix: String) {
        let found = field.value.get_ref().type_str();
        self.report(field, format!("expected {expected}, found {found}"), fix);
    }

    pub(super) fn table<'v, 'i>(
        &mut self,
        field: &Field<'v, 'i>,
        fix: &str,
    ) -> Option<Table<'v, 'i>> {
        match field.value.get_ref() {
            DeValue::Table(entries) => Some(Table {
                key: field.key.clone(),
                span: field.value.span(),
                entries,
            }),
            _ => {
                self.wrong_type(field, "a table", fix.to_string());
                None
            }
        }
    }

    pub(super) fn required<'v, 'i>(
        &mut self,
        table: &Table<'v, 'i>,
        name: &str,
        fix: &str,
    ) -> Option<Field<'v, 'i>> {
        let field = table.get(name);
        if field.is_none() {
            let key = join_key(&table.key, name);
            let at = self.location(&table.span, &key);
            self.report_location(at, format!("missing key `{name}`"), fix);
        }
        field
    }

    /// Reports every key of `table` that is not in `known`.
    pub(super) fn known_keys(&mut self, table: &Table<'_, '_>, known: &[&str]) {
        for (key, _) in table.entries.iter() {
            let name: &str = key.get_ref();
            if known.contains(&name) {
                continue;
            }
            let suggestion = known
                .iter()
                .find(|candidate| similar(candidate, name))
                .map(|candidate| format!("did you mean `{candidate}`? "))
                .unwrap_or_default();
            let at = self.location(&key.span(), &join_key(&table.key, name));
            self.report_location(
                at,
                format!("unknown key `{name}`"),
                format!("{suggestion}the keys allowed here are {}", known.join(", ")),
            );
        }
    }

    pub(super) fn string<'v>(&mut self, field: &Field<'v, '_>, example: &str) -> Option<&'v str> {
        match field.value.get_ref() {
            DeValue::String(text) => Some(text.as_ref()),
            DeValue::Integer(_) | DeValue::Float(_) => {
                let raw = self.raw(field.value.span()).to_string();
                self.wrong_type(field, "a string", format!("put it in quotes: \"{raw}\""));
                None
            }
            _ => {
                self.wrong_type(field, "a string", format!("write a string, like {example}"));
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, field: &Field<'_, '_>, example: &str) -> Option<bool> {
        match field.value.get_ref() {
            DeValue::Boolean(value) => Some(*value),
            DeValue::String(text) if matches!(text.as_ref(), "true" | "false") => {
                self.wrong_type(field, "a boolean", format!("remove the quotes: {text}"));
                None
            }
            _ => {
                self.wrong_type(field, "a boolean", format!("write {example} or false"));
                None
            }
        }
    }

    pub(super) fn parsed<T: FromStr<Err = InvalidValue>>(
        &mut self,
        field: &Field<'_, '_>,
        example: &str,
    ) -> Option<T> {
        let text = self.string(field, example)?;
        match text.parse() {
            Ok(value) => Some(value),
            Err(InvalidValue { problem, fix }) => {
                self.report(field, problem, fix);
                None
            }
        }
    }

    pub(super) fn array<'v, 'i>(
        &mut self,
        field: &Field<'v, 'i>,
        example: &str,
    ) -> Option<Vec<Field<'v, 'i>>> {
        match field.value.get_ref() {
            DeValue::Array(items) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, value)| Field {
                        key: format!("{}[{i}]", field.key),
                        value,
                    })
                    .collect(),
            ),
            DeValue::String(text) => {
                let fix = format!("write a list, even of one: [{text:?}]");
                self.wrong_type(field, "a list", fix);
                None
            }
            _ => {
                self.wrong_type(field, "a list", format!("write a list, like {example}"));
                None
            }
        }
    }

    /// A list of strings each parsed by `parse`; reports empty lists when
    /// `required`, and entries equal (by `same`) to an earlier one.
    pub(super) fn list<T>(
        &mut self,
        field: &Field<'_, '_>,
        example: &str,
        required: bool,
        parse: impl Fn(&str) -> Result<T, InvalidValue>,
        same: impl Fn(&T, &T) -> bool,
    ) -> Option<Vec<Located<T>>> {
        let items = self.array(field, example)?;
        if required && items.is_empty() {
            self.report(
                field,
                "the list is empty",
                format!("list at least one, like {example}"),
            );
            return None;
        }
        let mut values: Vec<Located<T>> = Vec::new();
        let mut complete = true;
        for item in &items {
            let Some(text) = self.string(item, example) else {
                complete = false;
                continue;
            };
            let value = match parse(text) {
                Ok(value) => value,
                Err(InvalidValue { problem, fix }) => {
                    self.report(item, problem, fix);
                    complete = false;
                    continue;
                }
            };
            if let Some(earlier) = values.iter().find(|earlier| same(&earlier.value, &value)) {
                let earlier = earlier.at.key.clone();
                self.report(
                    item,
                    format!("`{text}` repeats {earlier}"),
                    "remove one of them",
                );
                complete = false;
                continue;
            }
            let at = self.location(&item.value.span(), &item.key);
            values.push(Located { value, at });
        }
        complete.then_some(values)
    }

    /// An optional list whose items need no location; see [`Reader::list`].
    pub(super) fn plain_list<T>(
        &mut self,
        table: &Table<'_, '_>,
        name: &str,
        example: &str,
        parse: impl Fn(&str) -> Result<T, InvalidValue>,
        same: impl Fn(&T, &T) -> bool,
    ) -> Option<Vec<T>> {
        match table.get(name) {
            None => Some(Vec::new()),
            Some(field) => self
                .list(&field, example, false, parse, same)
                .map(|items| items.into_iter().map(|item| item.value).collect()),
        }
    }
}

/// Whether an unknown key is probably a misspelling of `known`.
fn similar(known: &str, unknown: &str) -> bool {
    let normalise = |key: &str| key.to_ascii_lowercase().replace('_', "-");
    let (known, unknown) = (normalise(known), normalise(unknown));
    known == unknown || edit_distance(&known, &unknown) <= 2.min(known.len() / 3)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_count_lines_and_characters_from_one() {
        let text = "a = 1\nbé = [2, 3]\n";
        let at = Location::of(text, text.find('[').unwrap(), "bé");
        assert_eq!((at.line, at.column), (2, 6));
        assert_eq!(Location::of(text, 0, "").line, 1);
        // An offset past the end (or inside a character) clamps to the text.
        assert_eq!(Location::of(text, 1000, "").line, 3);
    }

    #[test]
    fn key_paths_quote_keys_that_are_not_bare() {
        assert_eq!(join_key("", "tool"), "tool");
        assert_eq!(join_key("tool", "cuwheel"), "tool.cuwheel");
        assert_eq!(
            join_key("tool.cuwheel", "nvcc flags"),
            "tool.cuwheel.\"nvcc flags\""
        );
        assert_eq!(join_key("a", "2.6"), "a.\"2.6\"");
    }

    #[test]
    fn misspellings_are_recognised_but_other_keys_are_not() {
        assert!(similar("cuda-archs", "cuda_archs"));
        assert!(similar("kernels", "kernals"));
        assert!(similar("cuda", "cudaa"));
        assert!(similar("include-dirs", "Include-Dirs"));
        assert!(!similar("cuda", "torch"));
        assert!(!similar("module", "matrix"));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}

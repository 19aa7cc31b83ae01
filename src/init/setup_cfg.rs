//! setup.cfg's `[metadata]` and `[options]`: the declarative half of a
//! setuptools project, read for what `setup(...)` leaves out.
//!
//! In: the project root. Out: its values by setup()'s keyword names, and
//! multi-line values as lists (an absent file is an empty [`SetupCfg`]).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// setup.cfg's `[metadata]` and `[options]`, for what setup() leaves out.
#[derive(Default)]
pub struct SetupCfg {
    sections: BTreeMap<String, BTreeMap<String, String>>,
}

impl SetupCfg {
    pub fn read(root: &Path) -> SetupCfg {
        let Ok(text) = fs::read_to_string(root.join("setup.cfg")) else {
            return SetupCfg::default();
        };
        let mut cfg = SetupCfg::default();
        let mut section = String::new();
        let mut key: Option<String> = None;
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
                section = name.trim().to_string();
                key = None;
            } else if line.starts_with([' ', '\t']) && !trimmed.is_empty() {
                if let (Some(k), Some(values)) = (&key, cfg.sections.get_mut(&section)) {
                    let value = values.entry(k.clone()).or_default();
                    value.push('\n');
                    value.push_str(trimmed);
                }
            } else if let Some((k, v)) = trimmed.split_once('=') {
                let k = k.trim().to_string();
                cfg.sections
                    .entry(section.clone())
                    .or_default()
                    .insert(k.clone(), v.trim().to_string());
                key = Some(k);
            }
        }
        cfg
    }

    /// A `[metadata]` or `[options]` value by setup()'s keyword.
    pub fn get(&self, keyword: &str) -> Option<&str> {
        ["metadata", "options"]
            .iter()
            .find_map(|s| self.sections.get(*s)?.get(keyword))
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// A multi-line (or comma-separated) value as a list.
    pub fn list(&self, keyword: &str) -> Vec<String> {
        self.get(keyword).map(multi_line).unwrap_or_default()
    }

    pub fn section_lists(&self, section: &str) -> Vec<(String, Vec<String>)> {
        self.sections
            .get(section)
            .map(|values| {
                values
                    .iter()
                    .map(|(k, v)| (k.clone(), multi_line(v)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn multi_line(value: &str) -> Vec<String> {
    let separator = if value.contains('\n') { '\n' } else { ',' };
    value
        .split(separator)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_cfg_gives_metadata_and_lists() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("setup.cfg"),
            "[metadata]\nlong_description = file: README.md\nclassifiers =\n\tA :: B\n\tC :: D\n; comment\n[options.extras_require]\ntest = pytest, pytest-cov\n",
        )
        .unwrap();
        let cfg = SetupCfg::read(dir.path());
        assert_eq!(cfg.get("long_description"), Some("file: README.md"));
        assert_eq!(cfg.list("classifiers"), ["A :: B", "C :: D"]);
        assert_eq!(
            cfg.section_lists("options.extras_require"),
            [(
                "test".to_string(),
                vec!["pytest".to_string(), "pytest-cov".to_string()]
            )]
        );
    }
}

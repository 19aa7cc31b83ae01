//! Derivations: the ATerm `.drv` format written and parsed byte-exactly, the
//! `.drv` file's own store path, and output paths computed the way
//! `derivation { … }` computes them — from the hash of the derivation modulo
//! its fixed-output inputs (Nix 2.8 `src/libstore/derivations.cc`,
//! `hashDerivationModulo`; `src/libexpr/primops.cc`, `derivationStrict`).
//!
//! In: a derivation's inputs, builder and environment (and, for inputs, the
//! modulo hashes of the derivations they name). Out: its `.drv` bytes, its
//! store path and its output paths — what Nix would write, without Nix.

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use super::hash::{Hash, HashAlgo};
use super::path::{self, FileIngestion, StorePath, StorePathError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivation {
    /// The derivation's name, which its `.drv` file does not spell out: Nix
    /// takes it from the file name (`<name>.drv`).
    pub name: String,
    pub outputs: BTreeMap<String, DerivationOutput>,
    /// Input derivations and which of their outputs are used.
    pub input_drvs: BTreeMap<StorePath, BTreeSet<String>>,
    pub input_srcs: BTreeSet<StorePath>,
    pub system: String,
    pub builder: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DerivationOutput {
    /// An output whose path derives from the derivation's inputs.
    InputAddressed(StorePath),
    /// A fixed-output derivation's only output, known by its content hash.
    Fixed {
        ingestion: FileIngestion,
        hash: Hash,
    },
    /// An input-addressed output whose path is not computed yet.
    Deferred,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum DerivationError {
    #[error("invalid .drv file at byte {offset}: {problem}")]
    Parse { offset: usize, problem: String },
    #[error(
        "the derivation '{name}' names the input derivation {input}, whose hash is not known: add that derivation first"
    )]
    UnknownInput { name: String, input: StorePath },
    #[error("the input derivation {input} has no output '{output}'")]
    MissingInputOutput { input: StorePath, output: String },
    #[error("the fixed-output derivation '{0}' must have exactly one output, named 'out'")]
    FixedOutputShape(String),
    #[error("the derivation '{0}' has no outputs")]
    NoOutputs(String),
    #[error("the derivation '{0}' mixes fixed and input-addressed outputs")]
    MixedOutputs(String),
    #[error(transparent)]
    StorePath(#[from] StorePathError),
}

/// The hash modulo fixed-output inputs of each output of a derivation.
pub type OutputHashes = BTreeMap<String, Hash>;

impl Derivation {
    /// The `.drv` file's bytes, as Nix writes them.
    pub fn to_aterm(&self) -> Result<String, StorePathError> {
        self.unparse(false, None)
    }

    /// The `.drv` file's store path: a text path referring to every input.
    pub fn drv_path(&self) -> Result<StorePath, StorePathError> {
        let references: BTreeSet<StorePath> = self
            .input_srcs
            .iter()
            .chain(self.input_drvs.keys())
            .cloned()
            .collect();
        path::text_path(
            self.to_aterm()?.as_bytes(),
            &format!("{}.drv", self.name),
            &references,
        )
    }

    fn is_fixed_output(&self) -> bool {
        self.outputs
            .values()
            .all(|o| matches!(o, DerivationOutput::Fixed { .. }))
    }

    /// Nix's `hashDerivationModulo`: a fixed-output derivation hashes to its
    /// content hash and path alone (so changing how it is fetched changes no
    /// dependent path); any other to the hash of its ATerm with each input
    /// derivation replaced by that input's own modulo hash.
    pub fn hash_modulo(
        &self,
        known: &BTreeMap<StorePath, OutputHashes>,
        mask_outputs: bool,
    ) -> Result<OutputHashes, DerivationError> {
        if self.is_fixed_output() {
            return self
                .outputs
                .iter()
                .map(|(output, o)| {
                    let DerivationOutput::Fixed { ingestion, hash } = o else {
                        unreachable!()
                    };
                    let path = self.fixed_output_path(*ingestion, hash)?;
                    let fingerprint = format!(
                        "fixed:out:{}{}:{}:{path}",
                        ingestion.algo_prefix(),
                        hash.algo(),
                        hash.to_hex()
                    );
                    Ok((output.clone(), Hash::sha256(fingerprint)))
                })
                .collect();
        }
        let mut inputs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (input, outputs) in &self.input_drvs {
            let hashes = known
                .get(input)
                .ok_or_else(|| DerivationError::UnknownInput {
                    name: self.name.clone(),
                    input: input.clone(),
                })?;
            for output in outputs {
                let hash =
                    hashes
                        .get(output)
                        .ok_or_else(|| DerivationError::MissingInputOutput {
                            input: input.clone(),
                            output: output.clone(),
                        })?;
                inputs
                    .entry(hash.to_hex())
                    .or_default()
                    .insert(output.clone());
            }
        }
        let hash = Hash::sha256(self.unparse(mask_outputs, Some(&inputs))?);
        Ok(self
            .outputs
            .keys()
            .map(|o| (o.clone(), hash.clone()))
            .collect())
    }

    fn fixed_output_path(
        &self,
        ingestion: FileIngestion,
        hash: &Hash,
    ) -> Result<StorePath, StorePathError> {
        path::fixed_output_path(ingestion, hash, &self.name)
    }

    /// Fills in output paths and their environment variables as
    /// `derivation { … }` does, then returns the `.drv` path. `known` must
    /// hold every input derivation; this derivation's hashes are added to it.
    pub fn instantiate(
        &mut self,
        known: &mut BTreeMap<StorePath, OutputHashes>,
    ) -> Result<StorePath, DerivationError> {
        if self.outputs.is_empty() {
            return Err(DerivationError::NoOutputs(self.name.clone()));
        }
        let fixed = self
            .outputs
            .values()
            .filter(|o| matches!(o, DerivationOutput::Fixed { .. }))
            .count();
        if fixed > 0 {
            if fixed != self.outputs.len() {
                return Err(DerivationError::MixedOutputs(self.name.clone()));
            }
            let Some(DerivationOutput::Fixed { ingestion, hash }) = self.outputs.get("out") else {
                return Err(DerivationError::FixedOutputShape(self.name.clone()));
            };
            if self.outputs.len() != 1 {
                return Err(DerivationError::FixedOutputShape(self.name.clone()));
            }
            let out = self.fixed_output_path(*ingestion, hash)?;
            self.env.insert("out".into(), out.to_string());
        } else {
            let names: Vec<String> = self.outputs.keys().cloned().collect();
            for output in &names {
                self.env.insert(output.clone(), String::new());
                self.outputs
                    .insert(output.clone(), DerivationOutput::Deferred);
            }
            let hashes = self.hash_modulo(known, true)?;
            for output in &names {
                let out = path::derivation_output_path(&hashes[output], &self.name, output)?;
                self.env.insert(output.clone(), out.to_string());
                self.outputs
                    .insert(output.clone(), DerivationOutput::InputAddressed(out));
            }
        }
        let drv_path = self.drv_path()?;
        known.insert(drv_path.clone(), self.hash_modulo(known, false)?);
        Ok(drv_path)
    }

    /// The paths of all outputs that have one.
    pub fn output_paths(&self) -> Result<BTreeMap<String, StorePath>, StorePathError> {
        let mut paths = BTreeMap::new();
        for (name, output) in &self.outputs {
            match output {
                DerivationOutput::InputAddressed(p) => {
                    paths.insert(name.clone(), p.clone());
                }
                DerivationOutput::Fixed { ingestion, hash } => {
                    paths.insert(name.clone(), self.fixed_output_path(*ingestion, hash)?);
                }
                DerivationOutput::Deferred => {}
            }
        }
        Ok(paths)
    }

    /// Nix's `Derivation::unparse`. With `mask_outputs`, output paths and
    /// their environment variables are blank; `inputs` replaces the input
    /// derivations (by their modulo hashes, for `hash_modulo`).
    fn unparse(
        &self,
        mask_outputs: bool,
        inputs: Option<&BTreeMap<String, BTreeSet<String>>>,
    ) -> Result<String, StorePathError> {
        let mut s = String::from("Derive([");
        for (i, (name, output)) in self.outputs.iter().enumerate() {
            let (path, algo, hash) = match output {
                DerivationOutput::InputAddressed(p) if !mask_outputs => {
                    (p.to_string(), String::new(), String::new())
                }
                DerivationOutput::InputAddressed(_) | DerivationOutput::Deferred => {
                    Default::default()
                }
                DerivationOutput::Fixed { ingestion, hash: h } => (
                    self.fixed_output_path(*ingestion, h)?.to_string(),
                    format!("{}{}", ingestion.algo_prefix(), h.algo()),
                    h.to_hex(),
                ),
            };
            sep(&mut s, i);
            s.push('(');
            for (j, field) in [name.as_str(), &path, &algo, &hash].into_iter().enumerate() {
                sep(&mut s, j);
                quote(&mut s, field);
            }
            s.push(')');
        }
        s.push_str("],[");
        let write_input = |s: &mut String, i: usize, key: &str, outputs: &BTreeSet<String>| {
            sep(s, i);
            s.push('(');
            quote(s, key);
            s.push_str(",[");
            for (j, o) in outputs.iter().enumerate() {
                sep(s, j);
                quote(s, o);
            }
            s.push_str("])");
        };
        match inputs {
            Some(inputs) => {
                for (i, (key, outputs)) in inputs.iter().enumerate() {
                    write_input(&mut s, i, key, outputs);
                }
            }
            None => {
                for (i, (path, outputs)) in self.input_drvs.iter().enumerate() {
                    write_input(&mut s, i, &path.to_string(), outputs);
                }
            }
        }
        s.push_str("],[");
        for (i, src) in self.input_srcs.iter().enumerate() {
            sep(&mut s, i);
            quote(&mut s, &src.to_string());
        }
        s.push_str("],");
        quote(&mut s, &self.system);
        s.push(',');
        quote(&mut s, &self.builder);
        s.push_str(",[");
        for (i, arg) in self.args.iter().enumerate() {
            sep(&mut s, i);
            quote(&mut s, arg);
        }
        s.push_str("],[");
        for (i, (key, value)) in self.env.iter().enumerate() {
            sep(&mut s, i);
            s.push('(');
            quote(&mut s, key);
            s.push(',');
            let masked = mask_outputs && self.outputs.contains_key(key);
            quote(&mut s, if masked { "" } else { value });
            s.push(')');
        }
        s.push_str("])");
        Ok(s)
    }

    /// Parses a `.drv` file; `name` is the derivation's name (the file name
    /// without `.drv`), as Nix takes it.
    pub fn parse(bytes: &[u8], name: &str) -> Result<Derivation, DerivationError> {
        let text = std::str::from_utf8(bytes).map_err(|e| DerivationError::Parse {
            offset: e.valid_up_to(),
            problem: "the text is not UTF-8".into(),
        })?;
        let mut p = Parser { text, pos: 0 };
        let drv = p.derivation(name)?;
        if p.pos != text.len() {
            return Err(p.error("unexpected text after the derivation"));
        }
        Ok(drv)
    }
}

fn sep(s: &mut String, index: usize) {
    if index > 0 {
        s.push(',');
    }
}

/// Nix's `printString`: quotes, backslashes, newlines, returns and tabs are
/// escaped; every other character, non-ASCII included, is written as is.
fn quote(s: &mut String, value: &str) {
    s.push('"');
    for c in value.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c => s.push(c),
        }
    }
    s.push('"');
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, problem: impl Into<String>) -> DerivationError {
        DerivationError::Parse {
            offset: self.pos,
            problem: problem.into(),
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), DerivationError> {
        if self.text[self.pos..].starts_with(token) {
            self.pos += token.len();
            Ok(())
        } else {
            Err(self.error(format!("expected '{token}'")))
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        let found = self.text[self.pos..].starts_with(token);
        if found {
            self.pos += token.len();
        }
        found
    }

    /// Nix's `parseString`: `\n`, `\r`, `\t` are control characters and any
    /// other escaped character stands for itself.
    fn string(&mut self) -> Result<String, DerivationError> {
        self.expect("\"")?;
        let mut out = String::new();
        let mut chars = self.text[self.pos..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 'r')) => out.push('\r'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, other)) => out.push(other),
                    None => break,
                },
                c => out.push(c),
            }
        }
        self.pos = self.text.len();
        Err(self.error("a string is not closed"))
    }

    fn store_path(&mut self) -> Result<StorePath, DerivationError> {
        let start = self.pos;
        let text = self.string()?;
        text.parse()
            .map_err(|e: StorePathError| DerivationError::Parse {
                offset: start,
                problem: e.to_string(),
            })
    }

    /// A bracketed, comma-separated list of items.
    fn list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T, DerivationError>,
    ) -> Result<Vec<T>, DerivationError> {
        self.expect("[")?;
        let mut items = Vec::new();
        if self.eat("]") {
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            if self.eat("]") {
                return Ok(items);
            }
            self.expect(",")?;
        }
    }

    fn output(&mut self, drv_name: &str) -> Result<(String, DerivationOutput), DerivationError> {
        self.expect("(")?;
        let name = self.string()?;
        self.expect(",")?;
        let path_start = self.pos;
        let path = self.string()?;
        self.expect(",")?;
        let algo = self.string()?;
        self.expect(",")?;
        let hash_start = self.pos;
        let hash = self.string()?;
        self.expect(")")?;
        let at = |offset, problem: String| DerivationError::Parse { offset, problem };
        let output = if algo.is_empty() {
            if path.is_empty() {
                DerivationOutput::Deferred
            } else {
                DerivationOutput::InputAddressed(
                    path.parse()
                        .map_err(|e: StorePathError| at(path_start, e.to_string()))?,
                )
            }
        } else {
            let (ingestion, algo_name) = match algo.strip_prefix("r:") {
                Some(rest) => (FileIngestion::Recursive, rest),
                None => (FileIngestion::Flat, algo.as_str()),
            };
            let algo = HashAlgo::from_name(algo_name).map_err(|e| at(hash_start, e.to_string()))?;
            if hash.is_empty() {
                return Err(at(
                    hash_start,
                    "content-addressed outputs without a fixed hash are not supported".into(),
                ));
            }
            let hash = Hash::parse(&hash, Some(algo)).map_err(|e| at(hash_start, e.to_string()))?;
            let expected = path::fixed_output_path(ingestion, &hash, drv_name)
                .map_err(|e| at(path_start, e.to_string()))?;
            if path != expected.to_string() {
                return Err(at(
                    path_start,
                    format!("the fixed output path should be {expected}, not {path}"),
                ));
            }
            DerivationOutput::Fixed { ingestion, hash }
        };
        Ok((name, output))
    }

    fn derivation(&mut self, name: &str) -> Result<Derivation, DerivationError> {
        self.expect("Derive(")?;
        let outputs = self.list(|p| p.output(name))?;
        self.expect(",")?;
        let input_drvs = self.list(|p| {
            p.expect("(")?;
            let path = p.store_path()?;
            p.expect(",")?;
            let outputs = p.list(Parser::string)?;
            p.expect(")")?;
            Ok((path, outputs.into_iter().collect::<BTreeSet<_>>()))
        })?;
        self.expect(",")?;
        let input_srcs = self.list(Parser::store_path)?;
        self.expect(",")?;
        let system = self.string()?;
        self.expect(",")?;
        let builder = self.string()?;
        self.expect(",")?;
        let args = self.list(Parser::string)?;
        self.expect(",")?;
        let env = self.list(|p| {
            p.expect("(")?;
            let key = p.string()?;
            p.expect(",")?;
            let value = p.string()?;
            p.expect(")")?;
            Ok((key, value))
        })?;
        self.expect(")")?;
        Ok(Derivation {
            name: name.to_owned(),
            outputs: outputs.into_iter().collect(),
            input_drvs: input_drvs.into_iter().collect(),
            input_srcs: input_srcs.into_iter().collect(),
            system,
            builder,
            args,
            env: env.into_iter().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A derivation Nix 2.8 instantiated (see `path.rs`'s test for the expression).
    const NIX_DRV: &str = r#"Derive([("out","/nix/store/x8hgzpnhkv8x410b9zvfirr9arwvvpwx-t","","")],[],[],"x86_64-linux","/bin/sh",["-c","echo hi"],[("a","x\"y\\z\n\tü"),("builder","/bin/sh"),("name","t"),("out","/nix/store/x8hgzpnhkv8x410b9zvfirr9arwvvpwx-t"),("system","x86_64-linux")])"#;

    fn simple() -> Derivation {
        Derivation {
            name: "t".into(),
            outputs: [("out".to_string(), DerivationOutput::Deferred)].into(),
            input_drvs: BTreeMap::new(),
            input_srcs: BTreeSet::new(),
            system: "x86_64-linux".into(),
            builder: "/bin/sh".into(),
            args: vec!["-c".into(), "echo hi".into()],
            env: [
                ("a", "x\"y\\z\n\tü"),
                ("builder", "/bin/sh"),
                ("name", "t"),
                ("system", "x86_64-linux"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        }
    }

    #[test]
    fn instantiates_like_nix() {
        let mut drv = simple();
        let path = drv.instantiate(&mut BTreeMap::new()).unwrap();
        assert_eq!(drv.to_aterm().unwrap(), NIX_DRV);
        assert_eq!(
            path.to_string(),
            "/nix/store/vm4x362lgfqkgnq4dlf5jv991npcqrpb-t.drv"
        );
    }

    #[test]
    fn parses_what_nix_wrote() {
        let drv = Derivation::parse(NIX_DRV.as_bytes(), "t").unwrap();
        assert_eq!(drv.env["a"], "x\"y\\z\n\tü");
        assert_eq!(drv.to_aterm().unwrap(), NIX_DRV);
    }

    #[test]
    fn parse_errors_give_the_offset() {
        let err = Derivation::parse(b"Derive([(\"out\"", "t").unwrap_err();
        assert_eq!(
            err,
            DerivationError::Parse {
                offset: 14,
                problem: "expected ','".into()
            }
        );
        let bad_path = NIX_DRV.replace(
            "x8hgzpnhkv8x410b9zvfirr9arwvvpwx-t\",\"\"",
            "x8hgz-t\",\"\"",
        );
        let err = Derivation::parse(bad_path.as_bytes(), "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("32-character"), "{err}");
    }

    #[test]
    fn unknown_input_is_named() {
        let mut drv = simple();
        let input: StorePath = "/nix/store/vm4x362lgfqkgnq4dlf5jv991npcqrpb-t.drv"
            .parse()
            .unwrap();
        drv.input_drvs
            .insert(input.clone(), ["out".to_string()].into());
        let err = drv.instantiate(&mut BTreeMap::new()).unwrap_err();
        assert_eq!(
            err,
            DerivationError::UnknownInput {
                name: "t".into(),
                input
            }
        );
    }

    #[test]
    fn an_illegal_name_is_an_error_not_an_empty_path() {
        let mut drv = simple();
        drv.name = "two words".into();
        drv.outputs = [(
            "out".to_string(),
            DerivationOutput::Fixed {
                ingestion: FileIngestion::Flat,
                hash: Hash::sha256(b""),
            },
        )]
        .into();
        assert!(matches!(
            drv.to_aterm(),
            Err(StorePathError::IllegalChar { bad: ' ', .. })
        ));
        assert!(drv.instantiate(&mut BTreeMap::new()).is_err());
    }

    fn arb_text() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[a-z\"\\\\\n\r\t ü€\u{1}]{0,12}").unwrap()
    }

    proptest! {
        #[test]
        fn write_parse_write_is_identity(
            args in proptest::collection::vec(arb_text(), 0..4),
            env in proptest::collection::btree_map(arb_text(), arb_text(), 0..6),
            outputs in proptest::collection::btree_set("[a-z]{1,5}", 1..4),
        ) {
            let mut drv = simple();
            drv.args = args;
            drv.env = env;
            drv.outputs = outputs.into_iter().map(|o| (o, DerivationOutput::Deferred)).collect();
            drv.instantiate(&mut BTreeMap::new()).unwrap();
            let text = drv.to_aterm().unwrap();
            let parsed = Derivation::parse(text.as_bytes(), "t").unwrap();
            prop_assert_eq!(&parsed, &drv);
            prop_assert_eq!(parsed.to_aterm().unwrap(), text);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Derivation::parse(&bytes, "t");
        }

        #[test]
        fn parse_never_panics_on_near_misses(cut in 0..NIX_DRV.len(), junk in "[\\[\\](),\"\\\\a-z/]{0,6}") {
            let mut text = NIX_DRV.as_bytes()[..cut].to_vec();
            text.extend_from_slice(junk.as_bytes());
            let _ = Derivation::parse(&text, "t");
        }
    }
}

//! RECORD, the wheel's list of files with their hashes and sizes
//! (binary distribution format, "The .dist-info directory"; the "Recording
//! installed projects" specification for the CSV form).
//!
//! In: member paths and bytes, or RECORD's text. Out: RECORD's text (rows
//! `path,sha256=<urlsafe base64, no padding>,size`, RECORD itself as
//! `RECORD,,`, CSV quoting where a path needs it) or the parsed
//! [`RecordEntry`] rows, or a [`RecordError`] naming the line.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::Digest;

/// One row of RECORD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordEntry {
    pub path: String,
    /// Absent only for RECORD itself (and signature files).
    pub hash: Option<FileHash>,
    pub size: Option<u64>,
}

/// `algorithm=digest` with the digest in urlsafe base64 without padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHash {
    pub algorithm: String,
    pub digest: String,
}

/// Why RECORD's text cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("RECORD line {line}: {reason}")]
pub struct RecordError {
    /// 1-based.
    pub line: usize,
    pub reason: String,
}

impl FileHash {
    /// The sha256 of `data`, as RECORD writes it.
    pub fn sha256(data: &[u8]) -> FileHash {
        FileHash {
            algorithm: "sha256".to_string(),
            digest: URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(data)),
        }
    }

    /// Parses `algorithm=digest`.
    pub fn parse(text: &str) -> Result<FileHash, String> {
        match text.split_once('=') {
            Some((algorithm, digest)) if !algorithm.is_empty() && !digest.is_empty() => {
                Ok(FileHash {
                    algorithm: algorithm.to_string(),
                    digest: digest.to_string(),
                })
            }
            _ => Err(format!(
                "the hash `{text}` is not of the form `sha256=<urlsafe base64 digest>`"
            )),
        }
    }

    /// Whether `data` has this hash. Fails, saying why, when the algorithm is
    /// not one the wheel specification allows (sha256 or stronger; md5 and
    /// sha1 are forbidden) or the digest is not urlsafe base64 of the right
    /// length.
    pub fn check(&self, data: &[u8]) -> Result<bool, String> {
        let mut hasher = self.hasher()?;
        hasher.update(data);
        self.matches(&hasher.finish())
    }

    /// A hasher for this row's algorithm, to hash a member as it streams;
    /// fails like [`check`](Self::check) for a forbidden algorithm.
    pub fn hasher(&self) -> Result<RecordHasher, String> {
        match self.algorithm.as_str() {
            "sha256" => Ok(RecordHasher::Sha256(sha2::Sha256::new())),
            "sha384" => Ok(RecordHasher::Sha384(sha2::Sha384::new())),
            "sha512" => Ok(RecordHasher::Sha512(sha2::Sha512::new())),
            other => Err(format!(
                "hash algorithm `{other}` is not allowed; RECORD must use sha256 or stronger"
            )),
        }
    }

    /// Whether `actual`, a digest made with [`hasher`](Self::hasher), is this hash.
    pub fn matches(&self, actual: &[u8]) -> Result<bool, String> {
        // Tolerate padding on read; we never write it.
        let recorded = URL_SAFE_NO_PAD
            .decode(self.digest.trim_end_matches('='))
            .map_err(|_| {
                format!(
                    "the digest `{}` is not urlsafe base64 (hex digests are not allowed)",
                    self.digest
                )
            })?;
        if recorded.len() != actual.len() {
            return Err(format!(
                "the digest `{}` decodes to {} bytes, but {} gives {} (is it hex?)",
                self.digest,
                recorded.len(),
                self.algorithm,
                actual.len()
            ));
        }
        Ok(recorded == actual)
    }

    /// The hash with this row's algorithm and `digest`, as RECORD writes it.
    pub fn with_digest(&self, digest: &[u8]) -> FileHash {
        FileHash {
            algorithm: self.algorithm.clone(),
            digest: URL_SAFE_NO_PAD.encode(digest),
        }
    }
}

/// A RECORD hash computed over bytes as they stream.
#[derive(Debug, Clone)]
pub enum RecordHasher {
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

impl RecordHasher {
    pub fn update(&mut self, data: &[u8]) {
        match self {
            RecordHasher::Sha256(h) => h.update(data),
            RecordHasher::Sha384(h) => h.update(data),
            RecordHasher::Sha512(h) => h.update(data),
        }
    }

    pub fn finish(self) -> Vec<u8> {
        match self {
            RecordHasher::Sha256(h) => h.finalize().to_vec(),
            RecordHasher::Sha384(h) => h.finalize().to_vec(),
            RecordHasher::Sha512(h) => h.finalize().to_vec(),
        }
    }
}

impl fmt::Display for FileHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.algorithm, self.digest)
    }
}

impl RecordEntry {
    /// The row for a member with these bytes.
    pub fn for_data(path: &str, data: &[u8]) -> RecordEntry {
        RecordEntry {
            path: path.to_string(),
            hash: Some(FileHash::sha256(data)),
            size: Some(data.len() as u64),
        }
    }

    /// The row RECORD has for itself: `path,,`.
    pub fn unhashed(path: &str) -> RecordEntry {
        RecordEntry {
            path: path.to_string(),
            hash: None,
            size: None,
        }
    }
}

/// RECORD's text: one row per entry in the given order, `\n` line endings.
pub fn write_record(entries: &[RecordEntry]) -> String {
    let mut out = String::new();
    for entry in entries {
        push_csv_field(&mut out, &entry.path);
        out.push(',');
        if let Some(hash) = &entry.hash {
            push_csv_field(&mut out, &hash.to_string());
        }
        out.push(',');
        if let Some(size) = entry.size {
            out.push_str(&size.to_string());
        }
        out.push('\n');
    }
    out
}

/// Quotes a field the way Python's `csv` module does (minimal quoting).
fn push_csv_field(out: &mut String, field: &str) {
    if field.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&field.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(field);
    }
}

/// Parses RECORD's text. Accepts `\n` and `\r\n` line endings and skips
/// blank lines; every other row must have exactly three fields.
pub fn parse_record(text: &str) -> Result<Vec<RecordEntry>, RecordError> {
    let mut entries = Vec::new();
    let mut rest = text;
    let mut line = 1;
    while !rest.is_empty() {
        let row_line = line;
        let fail = |reason: String| RecordError {
            line: row_line,
            reason,
        };
        let (fields, after, lines_used) = split_csv_row(rest).map_err(fail)?;
        rest = after;
        line += lines_used;
        if fields.len() == 1 && fields[0].is_empty() {
            continue;
        }
        let [path, hash, size] = <[String; 3]>::try_from(fields).map_err(|fields| {
            fail(format!(
                "expected 3 fields `path,hash,size`, found {}",
                fields.len()
            ))
        })?;
        if path.is_empty() {
            return Err(fail("the path is empty".to_string()));
        }
        let hash = if hash.is_empty() {
            None
        } else {
            Some(FileHash::parse(&hash).map_err(fail)?)
        };
        let size = if size.is_empty() {
            None
        } else {
            Some(size.parse::<u64>().map_err(|_| {
                fail(format!(
                    "the size `{size}` is not a non-negative whole number"
                ))
            })?)
        };
        entries.push(RecordEntry { path, hash, size });
    }
    Ok(entries)
}

/// Splits one CSV row off the front of `text`. Returns its fields, the text
/// after the row's line ending, and how many lines the row spanned.
fn split_csv_row(text: &str) -> Result<(Vec<String>, &str, usize), String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut lines = 1;
    let mut chars = text.char_indices().peekable();
    let mut quoted = false;
    let mut field_start = true;
    while let Some((at, c)) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek().map(|&(_, n)| n) == Some('"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => {
                    quoted = false;
                    match chars.peek().map(|&(_, n)| n) {
                        None | Some(',' | '\n' | '\r') => {}
                        Some(other) => {
                            return Err(format!(
                                "unexpected {other:?} after a closing quote; a quoted field must end at `,` or the line end"
                            ));
                        }
                    }
                }
                '\n' => {
                    lines += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field_start => quoted = true,
            ',' => {
                fields.push(std::mem::take(&mut field));
                field_start = true;
                continue;
            }
            '\r' if chars.peek().map(|&(_, n)| n) == Some('\n') => {
                fields.push(field);
                return Ok((fields, &text[at + 2..], lines));
            }
            '\n' => {
                fields.push(field);
                return Ok((fields, &text[at + 1..], lines));
            }
            '"' => {
                return Err(
                    "a `\"` inside an unquoted field; quote the field and double the `\"`"
                        .to_string(),
                );
            }
            _ => field.push(c),
        }
        field_start = false;
    }
    if quoted {
        return Err("a quoted field is not closed before the end of RECORD".to_string());
    }
    fields.push(field);
    Ok((fields, "", lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_bytes() {
        // sha256("") = e3b0c442...b855; sha256("hello\n") = 5891b5b5...be03.
        assert_eq!(
            FileHash::sha256(b"").to_string(),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
        assert_eq!(
            FileHash::sha256(b"hello\n").to_string(),
            "sha256=WJG1tSLV3whtD_CxEPvZ0hu0_HFjrzTQgoai6Eb2vgM"
        );
        assert_eq!(FileHash::sha256(b"x").check(b"x"), Ok(true));
        assert_eq!(FileHash::sha256(b"x").check(b"y"), Ok(false));
    }

    #[test]
    fn check_refuses_weak_and_malformed_digests() {
        let md5 = FileHash::parse("md5=1B2M2Y8AsgTpgAmY7PhCfg").unwrap();
        assert!(md5.check(b"").unwrap_err().contains("not allowed"));
        let hex = FileHash::parse(
            "sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        )
        .unwrap();
        assert!(hex.check(b"").unwrap_err().contains("is it hex?"));
        let bad = FileHash::parse("sha256=!!!").unwrap();
        assert!(bad.check(b"").unwrap_err().contains("not urlsafe base64"));
        let padded =
            FileHash::parse("sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=").unwrap();
        assert_eq!(padded.check(b""), Ok(true));
    }

    #[test]
    fn writes_and_parses_rows_with_quoting() {
        let entries = vec![
            RecordEntry::for_data("pkg/__init__.py", b""),
            RecordEntry::for_data("pkg/a,b \"c\".txt", b"hello\n"),
            RecordEntry::unhashed("pkg-1.0.dist-info/RECORD"),
        ];
        let text = write_record(&entries);
        assert_eq!(
            text,
            "pkg/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
             \"pkg/a,b \"\"c\"\".txt\",sha256=WJG1tSLV3whtD_CxEPvZ0hu0_HFjrzTQgoai6Eb2vgM,6\n\
             pkg-1.0.dist-info/RECORD,,\n"
        );
        assert_eq!(parse_record(&text).unwrap(), entries);
        assert_eq!(parse_record(&text.replace('\n', "\r\n")).unwrap(), entries);
    }

    #[test]
    fn parse_errors_name_the_line() {
        for (text, line, words) in [
            ("a,,\nb,sha256=x\n", 2, "found 2"),
            ("a,,\n\nb,sha256=x,-1\n", 3, "not a non-negative"),
            ("a,nohash,1\n", 1, "not of the form"),
            ("\"a,,\n", 1, "not closed"),
            ("a\"b,,\n", 1, "inside an unquoted"),
            ("\"a\"b,,\n", 1, "after a closing quote"),
            (",,\n", 1, "path is empty"),
        ] {
            let err = parse_record(text).unwrap_err();
            assert_eq!(err.line, line, "{text:?}: {err}");
            assert!(err.to_string().contains(words), "{text:?}: {err}");
        }
    }
}

//! The simple indexes of a set of published wheels, as files (pure: no I/O).
//!
//! In: every [`PublishedWheel`] the index holds and where the wheel files are
//! ([`WheelLinks`]). Out: the relative path and bytes of every index file,
//! in PyTorch's layout: a combined index at the root and one per CUDA variant
//! (`cu130/`), each with a project list (`index.html`, `index.json`) and one
//! page per project (`<normalized-name>/index.html`, `…/index.json`).
//!
//! The HTML is PEP 503 with PEP 629's repository version, `#sha256=` on every
//! link, `data-requires-python` and the PEP 658/714 metadata attributes
//! (`data-dist-info-metadata` and `data-core-metadata`). The JSON beside it is
//! PEP 691 at API version 1.1 (PEP 700: `versions` and `size`; no
//! `upload-time`, which would be a wall-clock value). Files are sorted, so the
//! same wheels always give the same bytes.
//!
//! The PEP 691 JSON is also how the current state is read back
//! ([`ProjectPage`]): what a published wheel's page says about it is all a
//! later publish needs to list it again.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::spec::CudaVersion;
use crate::wheel::{LocalSegment, Version, WheelFilename};

/// PEP 691 / PEP 700 API version written in both the JSON and the HTML.
pub const API_VERSION: &str = "1.1";

/// The file names of an index page, HTML and JSON, in every index directory.
pub const HTML_PAGE: &str = "index.html";
pub const JSON_PAGE: &str = "index.json";

/// One wheel as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedWheel {
    /// The file name, which is also its name in the index directory.
    pub filename: WheelFilename,
    /// The file name exactly as stored (the link's text).
    pub file: String,
    /// Hex sha256 of the wheel file.
    pub sha256: String,
    pub size: u64,
    /// Hex sha256 of its METADATA, stored beside it as `<file>.metadata`.
    pub metadata_sha256: String,
    /// METADATA's `Requires-Python`.
    pub requires_python: Option<String>,
}

impl PublishedWheel {
    /// The PEP 503 normalized project name: the project page's directory.
    pub fn project(&self) -> String {
        self.filename.name.normalized()
    }

    /// The CUDA variant index (`cu130`) this wheel belongs to, if any.
    pub fn variant(&self) -> Option<String> {
        variant_of(&self.filename.version)
    }
}

/// Where the index pages link the wheel files: relative to the index
/// directory's root (the default), or under an absolute base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WheelLinks {
    /// The wheels lie in the directory the combined index is served from.
    Relative,
    /// The wheels are served at `<url>/<file>`; no trailing `/`.
    BaseUrl(String),
}

impl WheelLinks {
    /// `--base-url` as given, an `http://`, `https://` or `file://` URL
    /// with no query or fragment; a trailing `/` is dropped.
    /// Messages show the URL [`crate::url::redact`]ed.
    pub fn base_url(url: &str) -> Result<WheelLinks, String> {
        let shown = crate::url::redact(url);
        let refuse = |why: &str| {
            Err(format!(
                "--base-url `{shown}` is not usable: {why}; give the http://, https:// or file:// \
                 URL the wheels are served under, e.g. https://example.org/whl"
            ))
        };
        let Some(scheme) = crate::url::scheme(url) else {
            return refuse("it has no scheme");
        };
        let rest = &url[scheme.len() + 3..];
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https" | "file") {
            return refuse(&format!("the scheme `{scheme}` is not http, https or file"));
        }
        // Before any character is named: a password's may be among them.
        if rest.contains('@') {
            return refuse(
                "it holds `@`: give it without user or password (the index pages would show \
                 them), and percent-encode an `@` of a path as %40",
            );
        }
        if let Some(bad) = url
            .chars()
            .find(|c| c.is_whitespace() || c.is_control() || "\"'<>\\`{}|^".contains(*c))
        {
            return refuse(&format!(
                "it holds {bad:?}, which a URL cannot hold unencoded"
            ));
        }
        if url.contains(['?', '#']) {
            return refuse("it has a query or fragment, after which a wheel's name cannot go");
        }
        // The URL parser's word on the rest (a port out of range, a bad
        // host); its messages never quote the input.
        match crate::url::Url::parse(url) {
            Err(e) => return refuse(&format!("it is not a valid URL ({e})")),
            Ok(parsed) if crate::url::has_credentials(&parsed) => {
                return refuse("it holds a user or password");
            }
            Ok(_) => {}
        }
        let host = rest.split('/').next().unwrap_or_default();
        if scheme == "file" {
            if !rest.starts_with('/') {
                return refuse("a file URL must name an absolute path (file:///srv/whl)");
            }
        } else if host.is_empty() {
            return refuse("it needs a host");
        }
        Ok(WheelLinks::BaseUrl(format!(
            "{scheme}://{}",
            rest.trim_end_matches('/')
        )))
    }

    /// The links a page was written with, from one of its files' name and
    /// URL (`depth` directories below the root); `None` when neither form fits.
    pub fn infer(file: &str, url: &str, depth: usize) -> Option<WheelLinks> {
        if url == WheelLinks::Relative.href(file, depth) {
            return Some(WheelLinks::Relative);
        }
        let base = url
            .strip_suffix(&encode_path_segment(file))?
            .strip_suffix('/')?;
        Some(WheelLinks::BaseUrl(base.to_string()))
    }

    /// The link to `file` from a project page `depth` directories below the root.
    fn href(&self, file: &str, depth: usize) -> String {
        match self {
            WheelLinks::Relative => format!("{}{}", "../".repeat(depth), encode_path_segment(file)),
            WheelLinks::BaseUrl(url) => format!("{url}/{}", encode_path_segment(file)),
        }
    }
}

/// The CUDA variant named in a version's local label: `0.1.0+pt211cu130` →
/// `cu130`, `1.0+cu124.post` → `cu124`; `None` when no segment carries
/// `cu` followed by a compact CUDA version (`cpu`, `pt211`, no label).
pub fn variant_of(version: &Version) -> Option<String> {
    version.local().iter().find_map(|segment| match segment {
        LocalSegment::Text(text) => cuda_in_segment(text),
        LocalSegment::Number(_) => None,
    })
}

/// The first `cu<digits>` in a segment whose digits end the segment and
/// read as a CUDA version in its one canonical compact spelling.
fn cuda_in_segment(text: &str) -> Option<String> {
    text.match_indices("cu").find_map(|(at, _)| {
        let digits = &text[at + 2..];
        let cuda = CudaVersion::from_compact(digits)?;
        (cuda.label() == format!("cu{digits}")).then(|| cuda.label())
    })
}

/// Every index file for `wheels`: relative path (`/`-separated) → bytes.
pub fn render_indexes(wheels: &[PublishedWheel], links: &WheelLinks) -> BTreeMap<String, Vec<u8>> {
    let mut sorted: Vec<&PublishedWheel> = wheels.iter().collect();
    sorted.sort_by(|a, b| {
        (a.project(), &a.filename.version, &a.file).cmp(&(
            b.project(),
            &b.filename.version,
            &b.file,
        ))
    });
    let mut variants: BTreeMap<String, Vec<&PublishedWheel>> = BTreeMap::new();
    for wheel in &sorted {
        if let Some(variant) = wheel.variant() {
            variants.entry(variant).or_default().push(wheel);
        }
    }
    let mut files = BTreeMap::new();
    render_index("", &sorted, links, &mut files);
    for (variant, wheels) in &variants {
        render_index(&format!("{variant}/"), wheels, links, &mut files);
    }
    files
}

/// One simple index under `prefix` (`""` or `cu130/`).
fn render_index(
    prefix: &str,
    wheels: &[&PublishedWheel],
    links: &WheelLinks,
    files: &mut BTreeMap<String, Vec<u8>>,
) {
    let mut projects: BTreeMap<String, Vec<&PublishedWheel>> = BTreeMap::new();
    for wheel in wheels {
        projects.entry(wheel.project()).or_default().push(wheel);
    }
    let depth = prefix.matches('/').count() + 1;
    let names: Vec<&str> = projects.keys().map(String::as_str).collect();
    files.insert(
        format!("{prefix}{HTML_PAGE}"),
        project_list_html(&names).into_bytes(),
    );
    files.insert(
        format!("{prefix}{JSON_PAGE}"),
        to_json(&ProjectList::new(&names)),
    );
    for (project, wheels) in &projects {
        files.insert(
            format!("{prefix}{project}/{HTML_PAGE}"),
            project_page_html(project, wheels, links, depth).into_bytes(),
        );
        files.insert(
            format!("{prefix}{project}/{JSON_PAGE}"),
            to_json(&ProjectPage::new(project, wheels, links, depth)),
        );
    }
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    crate::json::canonical(value).into_bytes()
}

/// The `<head>` every page shares; PEP 629 names the API version there.
fn html_start(title: &str) -> String {
    let title = escape_html(title);
    format!(
        "<!DOCTYPE html>\n<html>\n  <head>\n    \
         <meta name=\"pypi:repository-version\" content=\"{API_VERSION}\">\n    \
         <title>{title}</title>\n  </head>\n  <body>\n    <h1>{title}</h1>\n"
    )
}

const HTML_END: &str = "  </body>\n</html>\n";

fn project_list_html(projects: &[&str]) -> String {
    let mut html = html_start("Simple index");
    for project in projects {
        let _ = writeln!(
            html,
            "    <a href=\"{}/\">{}</a><br>",
            encode_path_segment(project),
            escape_html(project)
        );
    }
    html + HTML_END
}

fn project_page_html(
    project: &str,
    wheels: &[&PublishedWheel],
    links: &WheelLinks,
    depth: usize,
) -> String {
    let mut html = html_start(&format!("Links for {project}"));
    for wheel in wheels {
        let _ = write!(
            html,
            "    <a href=\"{}#sha256={}\"",
            escape_html(&links.href(&wheel.file, depth)),
            wheel.sha256
        );
        if let Some(requires) = &wheel.requires_python {
            let _ = write!(html, " data-requires-python=\"{}\"", escape_html(requires));
        }
        let metadata = format!("sha256={}", wheel.metadata_sha256);
        let _ = writeln!(
            html,
            " data-dist-info-metadata=\"{metadata}\" data-core-metadata=\"{metadata}\">{}</a><br>",
            escape_html(&wheel.file)
        );
    }
    html + HTML_END
}

/// `&`, `<`, `>`, `"` and `'` as entities, so text and attribute values
/// (`>=3.9`) stay what they are.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes everything but RFC 3986's unreserved characters, so a
/// local label's `+` becomes `%2B` (object stores read a bare `+` as a space).
pub fn encode_path_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// PEP 691's `meta` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    #[serde(rename = "api-version")]
    pub api_version: String,
}

impl Meta {
    fn current() -> Meta {
        Meta {
            api_version: API_VERSION.to_string(),
        }
    }
}

/// PEP 691's project list (`index.json` of an index's root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectList {
    pub meta: Meta,
    pub projects: Vec<ProjectEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectEntry {
    pub name: String,
}

impl ProjectList {
    fn new(names: &[&str]) -> ProjectList {
        ProjectList {
            meta: Meta::current(),
            projects: names
                .iter()
                .map(|name| ProjectEntry {
                    name: name.to_string(),
                })
                .collect(),
        }
    }
}

/// PEP 691's project page (`<project>/index.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectPage {
    pub meta: Meta,
    pub name: String,
    /// PEP 700: every version with a file, in PEP 440 order.
    pub versions: Vec<String>,
    pub files: Vec<FileEntry>,
}

/// One file of a PEP 691 project page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub filename: String,
    pub url: String,
    pub hashes: BTreeMap<String, String>,
    #[serde(
        rename = "requires-python",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub requires_python: Option<String>,
    /// PEP 714's name for the METADATA file's hashes.
    #[serde(rename = "core-metadata")]
    pub core_metadata: BTreeMap<String, String>,
    /// PEP 658's original name, kept for older clients.
    #[serde(rename = "dist-info-metadata")]
    pub dist_info_metadata: BTreeMap<String, String>,
    /// PEP 700.
    pub size: u64,
}

impl ProjectPage {
    fn new(
        project: &str,
        wheels: &[&PublishedWheel],
        links: &WheelLinks,
        depth: usize,
    ) -> ProjectPage {
        let versions: BTreeSet<&Version> = wheels.iter().map(|w| &w.filename.version).collect();
        let sha256 = |hex: &str| BTreeMap::from([("sha256".to_string(), hex.to_string())]);
        ProjectPage {
            meta: Meta::current(),
            name: project.to_string(),
            versions: versions.iter().map(|v| v.to_string()).collect(),
            files: wheels
                .iter()
                .map(|wheel| FileEntry {
                    filename: wheel.file.clone(),
                    url: links.href(&wheel.file, depth),
                    hashes: sha256(&wheel.sha256),
                    requires_python: wheel.requires_python.clone(),
                    core_metadata: sha256(&wheel.metadata_sha256),
                    dist_info_metadata: sha256(&wheel.metadata_sha256),
                    size: wheel.size,
                })
                .collect(),
        }
    }

    /// The wheels this page lists, as a later publish lists them again;
    /// `Err` names what does not read back (a file name, a missing hash).
    pub fn wheels(&self) -> Result<Vec<PublishedWheel>, String> {
        self.files
            .iter()
            .map(|file| {
                let filename = WheelFilename::parse(&file.filename).map_err(|e| e.to_string())?;
                let hash = |hashes: &BTreeMap<String, String>, what: &str| {
                    hashes
                        .get("sha256")
                        .cloned()
                        .ok_or_else(|| format!("`{}` has no sha256 {what}", file.filename))
                };
                Ok(PublishedWheel {
                    filename,
                    file: file.filename.clone(),
                    sha256: hash(&file.hashes, "hash")?,
                    size: file.size,
                    metadata_sha256: hash(&file.core_metadata, "core-metadata hash")?,
                    requires_python: file.requires_python.clone(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel(file: &str, requires_python: Option<&str>) -> PublishedWheel {
        PublishedWheel {
            filename: WheelFilename::parse(file).unwrap(),
            file: file.to_string(),
            sha256: format!("{:064x}", file.len()),
            size: 1000 + file.len() as u64,
            metadata_sha256: format!("{:064x}", 7),
            requires_python: requires_python.map(str::to_string),
        }
    }

    #[test]
    fn variant_is_the_cuda_label_in_the_local_version() {
        for (version, variant) in [
            ("0.1.0+pt211cu130", Some("cu130")),
            ("0.1.0+cu124", Some("cu124")),
            ("0.1.0+pt29.cu128", Some("cu128")),
            ("0.1.0+cu130.7", Some("cu130")),
            ("0.1.0+PT211CU130", Some("cu130")),
            ("0.1.0", None),
            ("0.1.0+cpu", None),
            ("0.1.0+pt211", None),
            ("0.1.0+cuda130", None),
            ("0.1.0+cu0130", None),
            ("0.1.0+cu1", None),
            ("0.1.0+cu130x", None),
        ] {
            let parsed = Version::parse(version).unwrap();
            assert_eq!(variant_of(&parsed).as_deref(), variant, "{version}");
        }
    }

    #[test]
    fn escapes_html_and_encodes_urls() {
        assert_eq!(
            escape_html(">=3.9, <4 & 'x' \"y\""),
            "&gt;=3.9, &lt;4 &amp; &#39;x&#39; &quot;y&quot;"
        );
        assert_eq!(
            encode_path_segment("demo_ext-0.1.0+pt211cu130-py3-none-any.whl"),
            "demo_ext-0.1.0%2Bpt211cu130-py3-none-any.whl"
        );
        assert_eq!(encode_path_segment("a b!~"), "a%20b%21~");
    }

    #[test]
    fn project_page_is_pep503_with_hashes_and_metadata() {
        let w = wheel("demo_ext-0.1.0+pt211cu130-py3-none-any.whl", Some(">=3.9"));
        let files = render_indexes(std::slice::from_ref(&w), &WheelLinks::Relative);
        let page = String::from_utf8(files["cu130/demo-ext/index.html"].clone()).unwrap();
        let meta = format!("sha256={:064x}", 7);
        assert_eq!(
            page,
            format!(
                "<!DOCTYPE html>\n<html>\n  <head>\n    \
                 <meta name=\"pypi:repository-version\" content=\"1.1\">\n    \
                 <title>Links for demo-ext</title>\n  </head>\n  <body>\n    \
                 <h1>Links for demo-ext</h1>\n    \
                 <a href=\"../../demo_ext-0.1.0%2Bpt211cu130-py3-none-any.whl#sha256={}\" \
                 data-requires-python=\"&gt;=3.9\" data-dist-info-metadata=\"{meta}\" \
                 data-core-metadata=\"{meta}\">demo_ext-0.1.0+pt211cu130-py3-none-any.whl</a><br>\n  \
                 </body>\n</html>\n",
                w.sha256
            )
        );
        let root = String::from_utf8(files["demo-ext/index.html"].clone()).unwrap();
        assert!(
            root.contains("href=\"../demo_ext-0.1.0%2Bpt211cu130"),
            "{root}"
        );
        let list = String::from_utf8(files["cu130/index.html"].clone()).unwrap();
        assert!(
            list.contains("<a href=\"demo-ext/\">demo-ext</a><br>"),
            "{list}"
        );
    }

    #[test]
    fn layout_has_a_combined_index_and_one_per_variant() {
        let wheels = [
            wheel("demo_ext-0.1.0+pt211cu130-py3-none-any.whl", None),
            wheel("demo_ext-0.1.0+pt211cu128-py3-none-any.whl", None),
            wheel("Other.Pkg-2.0-py3-none-any.whl", None),
        ];
        let links = WheelLinks::base_url("https://example.test/whl/").unwrap();
        let files = render_indexes(&wheels, &links);
        let paths: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            [
                "cu128/demo-ext/index.html",
                "cu128/demo-ext/index.json",
                "cu128/index.html",
                "cu128/index.json",
                "cu130/demo-ext/index.html",
                "cu130/demo-ext/index.json",
                "cu130/index.html",
                "cu130/index.json",
                "demo-ext/index.html",
                "demo-ext/index.json",
                "index.html",
                "index.json",
                "other-pkg/index.html",
                "other-pkg/index.json",
            ]
        );
        let page: ProjectPage = serde_json::from_slice(&files["demo-ext/index.json"]).unwrap();
        assert_eq!(page.versions, ["0.1.0+pt211cu128", "0.1.0+pt211cu130"]);
        assert_eq!(
            page.files[1].url,
            "https://example.test/whl/demo_ext-0.1.0%2Bpt211cu130-py3-none-any.whl"
        );
        // What a page says reads back as the wheels it was made from.
        let mut read = page.wheels().unwrap();
        read.sort_by(|a, b| a.file.cmp(&b.file));
        assert_eq!(read, [wheels[1].clone(), wheels[0].clone()]);
    }

    #[test]
    fn base_urls_are_checked_and_links_read_back() {
        for ok in [
            "https://example.test/whl",
            "http://127.0.0.1:8000/",
            "file:///srv/whl",
        ] {
            WheelLinks::base_url(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        assert_eq!(
            WheelLinks::base_url("HTTPS://example.test/whl/"),
            Ok(WheelLinks::BaseUrl("https://example.test/whl".into()))
        );
        for secret in ["pw", "pa/ss", "PW"] {
            for url in [
                format!("https://user:{secret}@example.test/"),
                format!("HTTPS://user:{secret}@example.test/?q"),
            ] {
                let err = WheelLinks::base_url(&url).unwrap_err();
                assert!(!err.contains(&format!(":{secret}")), "{err}");
            }
        }
        for (bad, words) in [
            ("example.test/whl", "no scheme"),
            ("ftp://example.test", "`ftp`"),
            ("https://example.test/a b", "' '"),
            ("https://example.test/\"><script>", "'\"'"),
            ("https://example.test/?token=1", "query"),
            ("https://user:pw@example.test/", "without user"),
            ("https://user:pa/ss@example.test/", "without user"),
            ("HTTPS://user:PW@example.test/", "without user"),
            ("https://example.test/a\nb", "'\\n'"),
            ("file://relative/dir", "absolute path"),
        ] {
            let err = WheelLinks::base_url(bad).unwrap_err();
            assert!(
                err.contains(&format!("`{}`", crate::url::redact(bad))) && err.contains(words),
                "{bad}: {err}"
            );
        }
        let file = "demo_ext-0.1.0+pt211cu130-py3-none-any.whl";
        let base = WheelLinks::base_url("https://example.test/whl").unwrap();
        for links in [WheelLinks::Relative, base] {
            assert_eq!(
                WheelLinks::infer(file, &links.href(file, 2), 2),
                Some(links)
            );
        }
        assert_eq!(
            WheelLinks::infer(file, "https://elsewhere/other.whl", 1),
            None
        );
    }

    #[test]
    fn the_same_wheels_in_any_order_give_the_same_bytes() {
        let mut wheels = vec![
            wheel("demo_ext-0.2.0+pt211cu130-py3-none-any.whl", None),
            wheel("demo_ext-0.1.0+pt211cu130-py3-none-any.whl", Some("<4")),
            wheel("zeta-1.0-py3-none-any.whl", None),
        ];
        let first = render_indexes(&wheels, &WheelLinks::Relative);
        wheels.reverse();
        assert_eq!(render_indexes(&wheels, &WheelLinks::Relative), first);
    }
}

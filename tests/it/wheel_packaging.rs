//! Cross-check with pypa/packaging, the library pip itself uses (its copy
//! vendored in the test venv's pip): on a few thousand generated version
//! strings, names and compressed tag sets, our PEP 440 validity, normal form
//! and order, PEP 503 normalisation and tag expansion must equal packaging's.

use crate::common::{Rng, TestEnv};
use cuwheel::wheel::{TagSet, Version, normalize_name};

/// A string near the PEP 440 grammar: mostly valid spellings, some not.
fn near_version(rng: &mut Rng) -> String {
    let sep = |rng: &mut Rng| rng.pick(&["", "", ".", "-", "_"]).to_string();
    let number = |rng: &mut Rng| match rng.below(6) {
        0 => format!("0{}", rng.below(10)),
        _ => rng.below(25).to_string(),
    };
    let mut s = String::new();
    s.push_str(rng.pick(&["", "", "", "v", "V", " "]));
    if rng.chance(10) {
        s.push_str(&format!("{}!", number(rng)));
    }
    let parts: Vec<String> = (0..1 + rng.below(4)).map(|_| number(rng)).collect();
    s.push_str(&parts.join("."));
    if rng.chance(40) {
        s.push_str(&sep(rng));
        s.push_str(rng.pick(&[
            "a", "b", "c", "rc", "alpha", "beta", "pre", "preview", "RC", "Alpha",
        ]));
        s.push_str(&sep(rng));
        if rng.chance(70) {
            s.push_str(&number(rng));
        }
    }
    if rng.chance(30) {
        if rng.chance(30) {
            s.push_str(&format!("-{}", number(rng)));
        } else {
            s.push_str(&sep(rng));
            s.push_str(rng.pick(&["post", "rev", "r", "POST"]));
            s.push_str(&sep(rng));
            if rng.chance(70) {
                s.push_str(&number(rng));
            }
        }
    }
    if rng.chance(30) {
        s.push_str(&sep(rng));
        s.push_str(rng.pick(&["dev", "DEV"]));
        s.push_str(&sep(rng));
        if rng.chance(70) {
            s.push_str(&number(rng));
        }
    }
    if rng.chance(40) {
        s.push('+');
        let segments = 1 + rng.below(3);
        for i in 0..segments {
            if i > 0 {
                s.push_str(rng.pick(&[".", "-", "_", "+", ".."]));
            }
            s.push_str(rng.pick(&[
                "pt211", "cu130", "CU124", "7", "007", "abc", "", "a1b2", "ubuntu",
            ]));
        }
    }
    if rng.chance(8) {
        // Damage: a stray character somewhere.
        let at = rng.below(s.len() + 1);
        let junk = rng.pick(&["-", ".", "!", "+", "x", " ", "_", "é"]);
        if s.is_char_boundary(at) {
            s.insert_str(at, junk);
        }
    }
    s.push_str(rng.pick(&["", "", "", " ", "\t"]));
    s
}

fn near_name(rng: &mut Rng) -> String {
    let pieces = [
        "Demo", "ext", "A", "b", "1", "-", "_", ".", "--", "._-", "Torch", "x",
    ];
    (0..1 + rng.below(6)).map(|_| rng.pick(&pieces)).collect()
}

fn tag_set(rng: &mut Rng) -> String {
    let mut part = |choices: &[&str]| -> String {
        let n = 1 + rng.below(3);
        (0..n)
            .map(|_| rng.pick(choices))
            .collect::<Vec<_>>()
            .join(".")
    };
    let python = part(&["cp39", "cp310", "cp311", "py3", "py2"]);
    let abi = part(&["abi3", "none", "cp311"]);
    let platform = part(&[
        "any",
        "manylinux_2_28_x86_64",
        "manylinux_2_31_x86_64",
        "linux_x86_64",
    ]);
    format!("{python}-{abi}-{platform}")
}

/// packaging's verdicts on the inputs, as JSON.
const PACKAGING_SCRIPT: &str = r#"
import bisect, json, sys
from pip._vendor.packaging.version import Version, InvalidVersion
from pip._vendor.packaging.utils import canonicalize_name
from pip._vendor.packaging.tags import parse_tag
data = json.load(sys.stdin)
parsed = []
for s in data["versions"]:
    try:
        parsed.append(Version(s))
    except InvalidVersion:
        parsed.append(None)
distinct = sorted(set(v for v in parsed if v is not None))
print(json.dumps({
    "normal": [None if v is None else str(v) for v in parsed],
    "rank": [None if v is None else bisect.bisect_left(distinct, v) for v in parsed],
    "names": [canonicalize_name(n) for n in data["names"]],
    "tags": [sorted(str(t) for t in parse_tag(t)) for t in data["tags"]],
}))
"#;

#[test]
fn versions_names_and_tags_agree_with_pypa_packaging() {
    let env = TestEnv::get();
    let mut rng = Rng(0x5eed_cafe_f00d_0440);
    let versions: Vec<String> = (0..3000).map(|_| near_version(&mut rng)).collect();
    let names: Vec<String> = (0..500).map(|_| near_name(&mut rng)).collect();
    let tags: Vec<String> = (0..300).map(|_| tag_set(&mut rng)).collect();
    let input = serde_json::json!({"versions": versions, "names": names, "tags": tags});

    let output =
        crate::common::python_with_stdin(&env, PACKAGING_SCRIPT, input.to_string().as_bytes());
    let verdict: serde_json::Value = serde_json::from_slice(&output).unwrap();

    // Validity and normal form.
    let ours: Vec<Option<Version>> = versions.iter().map(|s| Version::parse(s).ok()).collect();
    let mut valid = 0;
    for (i, s) in versions.iter().enumerate() {
        let theirs = verdict["normal"][i].as_str();
        let mine = ours[i].as_ref().map(Version::to_string);
        assert_eq!(mine.as_deref(), theirs, "version {s:?}");
        valid += usize::from(theirs.is_some());
    }
    assert!(
        valid > 1000 && valid < 2900,
        "a fair mix of valid ({valid}) and invalid inputs"
    );

    // Order: each valid version's rank among the distinct valid ones.
    let mut distinct: Vec<&Version> = ours.iter().flatten().collect();
    distinct.sort();
    distinct.dedup_by(|a, b| a == b);
    for (i, version) in ours.iter().enumerate() {
        if let Some(version) = version {
            let rank = distinct.partition_point(|v| *v < version);
            assert_eq!(
                Some(rank as u64),
                verdict["rank"][i].as_u64(),
                "rank of {:?} ({version})",
                versions[i]
            );
        }
    }

    for (i, name) in names.iter().enumerate() {
        assert_eq!(
            Some(normalize_name(name).as_str()),
            verdict["names"][i].as_str(),
            "name {name:?}"
        );
    }
    for (i, set) in tags.iter().enumerate() {
        let mine: Vec<String> = TagSet::parse(set)
            .unwrap()
            .expand()
            .iter()
            .map(|t| t.to_string())
            .collect();
        let theirs: Vec<String> = serde_json::from_value(verdict["tags"][i].clone()).unwrap();
        assert_eq!(mine, theirs, "tag set {set}");
    }
}

//! Bounded property tests of the wheel-format parsers: no input makes them
//! panic, and what they produce survives a round trip.
//!
//! Case counts are kept small enough that the whole file runs in seconds.

use std::path::Path;

use cuwheel_wheel::{
    CoreMetadata, FileHash, ProjectName, RecordEntry, Tag, TagSet, Version, WheelArchive,
    WheelBuilder, WheelFilename, WheelInfo, ZipTimestamp, check_member_path, parse_record,
    write_record,
};
use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A version in normalised form, from its parts.
fn normal_version() -> impl Strategy<Value = String> {
    let local_segment = prop_oneof![
        "[a-z][a-z0-9]{0,5}",
        (0u64..100_000).prop_map(|n| n.to_string())
    ];
    (
        0u64..3,
        prop::collection::vec(0u64..2000, 1..5),
        prop::option::of((prop_oneof!["a", "b", "rc"], 0u64..50)),
        prop::option::of(0u64..50),
        prop::option::of(0u64..50),
        prop::collection::vec(local_segment, 0..4),
    )
        .prop_map(|(epoch, release, pre, post, dev, local)| {
            let mut s = String::new();
            if epoch > 0 {
                s.push_str(&format!("{epoch}!"));
            }
            let release: Vec<String> = release.iter().map(u64::to_string).collect();
            s.push_str(&release.join("."));
            if let Some((kind, n)) = pre {
                s.push_str(&format!("{kind}{n}"));
            }
            if let Some(n) = post {
                s.push_str(&format!(".post{n}"));
            }
            if let Some(n) = dev {
                s.push_str(&format!(".dev{n}"));
            }
            if !local.is_empty() {
                s.push('+');
                s.push_str(&local.join("."));
            }
            s
        })
}

/// Strings close to versions: every spelling PEP 440 allows and many it does not.
const NEAR_VERSION: &str = "[ vV]?[0-9]{1,3}(!?[0-9]{0,2})([._-]?[0-9]{1,3}){0,3}\
    ([-_.]?(a|b|c|rc|alpha|beta|pre|preview|post|rev|r|dev)[-_.]?[0-9]{0,2}){0,3}\
    (\\+[a-zA-Z0-9]{0,4}([-_.+][a-zA-Z0-9]{0,4}){0,2})? ?";

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn version_parse_never_panics(s in any::<String>()) {
        let _ = Version::parse(&s);
    }

    #[test]
    fn near_versions_parse_to_a_fixed_point(s in NEAR_VERSION) {
        if let Ok(version) = Version::parse(&s) {
            let normal = version.to_string();
            let again = Version::parse(&normal).unwrap();
            prop_assert_eq!(&again, &version);
            prop_assert_eq!(again.to_string(), normal);
        }
    }

    #[test]
    fn normal_versions_display_as_written(s in normal_version()) {
        let version = Version::parse(&s).unwrap();
        prop_assert_eq!(version.to_string(), s);
    }

    #[test]
    fn version_order_is_consistent(a in normal_version(), b in normal_version()) {
        let (a, b) = (Version::parse(&a).unwrap(), Version::parse(&b).unwrap());
        prop_assert_eq!(a.cmp(&b), b.cmp(&a).reverse());
        prop_assert_eq!(a == b, a.cmp(&b).is_eq());
        prop_assert!(a.without_local() <= a);
    }

    #[test]
    fn name_tag_and_filename_parsers_never_panic(s in any::<String>()) {
        let _ = ProjectName::new(&s);
        let _ = Tag::parse(&s);
        let _ = TagSet::parse(&s);
        let _ = WheelFilename::parse(&s);
        let _ = check_member_path(&s);
    }

    #[test]
    fn near_filenames_round_trip(
        s in "[A-Za-z0-9._]{1,8}-[0-9][0-9a-z.+]{0,8}(-[0-9][a-z0-9]{0,2})?-[a-z0-9.]{1,10}-[a-z0-9_.]{1,8}-[a-z0-9_.]{1,12}\\.whl"
    ) {
        if let Ok(name) = WheelFilename::parse(&s) {
            let again = WheelFilename::parse(&name.to_string()).unwrap();
            prop_assert_eq!(again.to_string(), name.to_string());
            prop_assert_eq!(again, name);
        }
    }

    #[test]
    fn tag_sets_expand_and_compress_back(
        python in prop::collection::vec("[a-z0-9_]{1,6}", 1..4),
        abi in prop::collection::vec("[a-z0-9_]{1,6}", 1..3),
        platform in prop::collection::vec("[a-z0-9_]{1,12}", 1..4),
    ) {
        let text = format!("{}-{}-{}", python.join("."), abi.join("."), platform.join("."));
        let set = TagSet::parse(&text).unwrap();
        let expanded = set.expand();
        prop_assert!(expanded.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
        prop_assert_eq!(TagSet::compress(&expanded).unwrap(), set.clone());
        prop_assert_eq!(TagSet::parse(&set.to_string()).unwrap(), set);
    }

    #[test]
    fn record_and_header_parsers_never_panic(s in any::<String>()) {
        let _ = parse_record(&s);
        let _ = CoreMetadata::parse(&s);
        let _ = WheelInfo::parse(&s);
    }

    #[test]
    fn record_and_header_parsers_never_panic_on_near_input(
        s in "([a-zA-Z\",=: \\t-]{0,12}[\r\n]{0,2}){0,8}"
    ) {
        let _ = parse_record(&s);
        let _ = CoreMetadata::parse(&s);
        let _ = WheelInfo::parse(&s);
    }

    #[test]
    fn record_round_trips(
        rows in prop::collection::vec(("[^\u{0}]{1,20}", prop::collection::vec(any::<u8>(), 0..40), any::<bool>()), 0..8)
    ) {
        let entries: Vec<RecordEntry> = rows
            .iter()
            .map(|(path, data, hashed)| if *hashed {
                RecordEntry::for_data(path, data)
            } else {
                RecordEntry::unhashed(path)
            })
            .collect();
        prop_assert_eq!(parse_record(&write_record(&entries)).unwrap(), entries);
        for (_, data, _) in &rows {
            prop_assert_eq!(FileHash::sha256(data).check(data), Ok(true));
        }
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn wheel_archive_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = WheelArchive::from_bytes(Path::new("x-1.0-py3-none-any.whl"), &bytes);
    }

    #[test]
    fn wheel_archive_never_panics_on_damaged_wheels(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = small_wheel();
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Ok(archive) = WheelArchive::from_bytes(Path::new("x-1.0-py3-none-any.whl"), &bytes) {
            let _ = archive.verify();
        }
    }
}

/// A valid wheel to damage.
fn small_wheel() -> Vec<u8> {
    let metadata = CoreMetadata::new(
        ProjectName::new("x").unwrap(),
        Version::parse("1.0").unwrap(),
    );
    let mut wheel = WheelBuilder::new(metadata, TagSet::parse("py3-none-any").unwrap(), None);
    wheel
        .add_member("x/__init__.py", b"print('x')\n".repeat(20), false)
        .unwrap();
    wheel
        .add_member("x/run", b"#!/bin/sh\n".to_vec(), true)
        .unwrap();
    wheel.to_bytes(ZipTimestamp::EARLIEST).unwrap()
}

//! Bounded fuzzing: the ELF-facts and fat-binary parsers never panic, on
//! arbitrary bytes and on real files (built here with gcc and nvcc) with
//! bytes flipped and tails cut off. They may return errors; they must not
//! crash or hang.

use std::sync::OnceLock;

use crate::audit_support;
use crate::common::TestEnv;
use cuwheel::audit::elf::{self, ElfFacts};
use cuwheel::audit::fatbin;
use proptest::prelude::*;

const SOURCE: &str = r#"
#include <map>
#include <string>
#include <cmath>
std::map<std::string, double> table;
extern "C" double lookup(const char *key) { return std::lgamma(table[key]); }
extern "C" void *PyInit_fuzz(void) { return &table; }
"#;

/// A real shared object with RPATH, versioned imports and C++ symbols.
fn real_elf() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let file = audit_support::gcc(
            dir.path(),
            "fuzz.so",
            SOURCE,
            true,
            &[
                "-shared",
                "-fPIC",
                "-Wl,-rpath,$ORIGIN/../lib",
                "-Wl,-z,x86-64-v2",
            ],
        );
        std::fs::read(file).unwrap()
    })
}

/// A real `.nv_fatbin` section with SASS and PTX, compressed and not.
fn real_fatbin() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let env = TestEnv::get();
        let dir = tempfile::tempdir().unwrap();
        let object = audit_support::nvcc(
            &env,
            dir.path(),
            "fuzz.o",
            audit_support::KERNEL,
            &[
                "-c",
                "-gencode",
                "arch=compute_80,code=sm_80",
                "-gencode",
                "arch=compute_90,code=[sm_90,compute_90]",
            ],
        );
        let data = std::fs::read(object).unwrap();
        elf::nv_fatbin_section("fuzz.o", &data)
            .unwrap()
            .unwrap()
            .to_vec()
    })
}

/// `bytes` with each `(position, value)` written and then cut to `keep` of its length.
fn mutate(bytes: &[u8], flips: &[(prop::sample::Index, u8)], keep: prop::sample::Index) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for (at, value) in flips {
        let i = at.index(out.len());
        out[i] = *value;
    }
    out.truncate(keep.index(out.len() + 1));
    out
}

fn parse_elf(data: &[u8]) {
    let _ = ElfFacts::parse("fuzzed.so", data);
    let _ = elf::nv_fatbin_section("fuzzed.so", data);
}

#[test]
fn the_real_inputs_parse_before_mutation() {
    let facts = ElfFacts::parse("fuzz.so", real_elf()).unwrap();
    assert!(facts.needed.iter().any(|n| n == "libstdc++.so.6"));
    assert_eq!(
        fatbin::parse(real_fatbin()).unwrap().image_names(),
        ["sm_80", "sm_90", "compute_90"]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn elf_parser_never_panics_on_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
    ) {
        parse_elf(&bytes);
        // the same bytes behind a valid x86_64 ELF64 identification, so the
        // parser gets past the magic
        let mut with_header = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 62, 0];
        with_header.extend(&bytes);
        parse_elf(&with_header);
    }

    #[test]
    fn elf_parser_never_panics_on_mutated_real_objects(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
        keep in any::<prop::sample::Index>(),
    ) {
        parse_elf(&mutate(real_elf(), &flips, keep));
    }

    #[test]
    fn fatbin_parser_never_panics_on_mutated_real_sections(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
        keep in any::<prop::sample::Index>(),
    ) {
        let _ = fatbin::parse(&mutate(real_fatbin(), &flips, keep));
    }
}

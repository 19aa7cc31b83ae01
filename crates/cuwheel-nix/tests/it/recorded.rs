//! The `.drv` file and the `nix-store --query` text that Nix 2.8, 2.26 and
//! 2.34 wrote for the same derivation (recorded by `scripts/nix-probe.sh`):
//! the same bytes, read the same way, and the facts `nix derivation show`
//! printed (in each version's own JSON shape) found in what cuwheel parses.

use cuwheel_nix::derivation::Derivation;
use cuwheel_nix::{DerivationOutput, StorePath};

const VERSIONS: &[(&str, &[u8], &str, &str)] = &[
    (
        "2.8",
        include_bytes!("../fixtures/nix-2.8/probe.drv"),
        include_str!("../fixtures/nix-2.8/derivation-show.json"),
        include_str!("../fixtures/nix-2.8/query.txt"),
    ),
    (
        "2.26",
        include_bytes!("../fixtures/nix-2.26/probe.drv"),
        include_str!("../fixtures/nix-2.26/derivation-show.json"),
        include_str!("../fixtures/nix-2.26/query.txt"),
    ),
    (
        "2.34",
        include_bytes!("../fixtures/nix-2.34/probe.drv"),
        include_str!("../fixtures/nix-2.34/derivation-show.json"),
        include_str!("../fixtures/nix-2.34/query.txt"),
    ),
];

const OUT: &str = "/nix/store/9ig68rx140vsnp7zrfa1b93j1qjy6g3z-probe";
const SRC: &str = "/nix/store/an9bwcrjx6nykli0sg6i4z5z02dhdqn5-probe.txt";

#[test]
fn every_version_wrote_the_same_drv_and_cuwheel_reads_it() {
    for (version, drv, shown, query) in VERSIONS {
        assert_eq!(*drv, VERSIONS[0].1, "Nix {version} wrote other .drv bytes");
        let parsed = Derivation::parse(drv, "probe").unwrap();
        let out: StorePath = OUT.parse().unwrap();
        assert_eq!(
            parsed.outputs["out"],
            DerivationOutput::InputAddressed(out.clone())
        );
        assert_eq!(
            parsed
                .input_srcs
                .iter()
                .map(StorePath::to_absolute)
                .collect::<Vec<_>>(),
            [SRC]
        );
        assert_eq!(parsed.to_aterm().unwrap().as_bytes(), *drv);
        // `nix derivation show` names the same output and source, whatever
        // its shape (keyed by path, by base name, or wrapped).
        let json: serde_json::Value = serde_json::from_str(shown).unwrap();
        let text = json.to_string();
        assert!(text.contains(OUT), "Nix {version}: {text}");
        assert!(text.contains(&SRC["/nix/store/".len()..]), "Nix {version}");
        // `nix-store --query` text: references, NAR hash, size, deriver.
        assert_eq!(
            *query,
            format!(
                "# nix-store --query --references\n{SRC}\n# nix-store --query --hash\n\
                 sha256:0kgrccpiwsj9xl41zgmcnxig8x5s51rs4bcb4r5qzrlayykpazbp\n\
                 # nix-store --query --size\n496\n# nix-store --query --deriver\nunknown-deriver\n"
            ),
            "Nix {version}"
        );
    }
}

//! The Nix wrapper's pure parts: pinned options, hints, shortened command
//! lines, the cache asked for, `.narinfo` files of a `file://` cache.

use super::*;

#[test]
fn failures_carry_advice() {
    assert!(
        hint_for("error: executing '/bin/false-never-run': No such file")
            .to_string()
            .contains("cuwheel fetch")
    );
    assert_eq!(hint_for("something else").to_string(), "");
}

#[test]
fn every_call_pins_the_sandbox_and_builds_in_parallel() {
    for program in ["nix-store", "nix", "nix-instantiate"] {
        let text = describe(&Nix::system().command(program));
        assert!(
            text.contains(
                "--option sandbox true --option sandbox-fallback false --option substituters '' \
                 --option max-jobs auto"
            ),
            "{text}"
        );
    }
}

#[test]
fn flake_commands_do_not_warn_of_a_dirty_tree() {
    let text = describe(&Nix::system().command("nix"));
    assert!(text.contains("--option warn-dirty false"), "{text}");
}

#[test]
fn a_failed_command_with_many_paths_is_shown_short_and_nixs_message_whole() {
    let paths: Vec<StorePath> = (0..233)
        .map(|i| format!("/nix/store/{:032}-p{i}", 0).parse().unwrap())
        .collect();
    let mut cmd = Nix::system().command("nix-store");
    cmd.arg("--realise")
        .args(paths.iter().map(StorePath::to_absolute));
    let message = "error: a message of Nix's own, ".repeat(40);
    let err = NixError::Failed {
        command: describe(&cmd),
        status: "exit status: 1".into(),
        stderr: message.clone(),
        hint: Hint::default(),
    }
    .to_string();
    assert!(err.contains("\u{2026} and 231 more store paths"), "{err}");
    assert!(err.contains(&message));
    assert!(err.len() < message.len() + 400, "{}", err.len());
}

#[test]
fn the_cache_asked_for_is_read_from_the_options() {
    let options: Vec<String> = [
        "--option",
        "substituters",
        "file:///c",
        "--option",
        "trusted-public-keys",
        "k-1:AA==",
    ]
    .map(String::from)
    .into();
    assert_eq!(
        wanted_cache(&options),
        Some(WantedCache {
            url: "file:///c".into(),
            public_key: "k-1:AA==".into()
        })
    );
    assert_eq!(wanted_cache(&[]), None);
}

#[test]
fn a_file_caches_narinfo_is_read_and_a_missing_one_is_not_valid() {
    let dir = tempfile::tempdir().unwrap();
    let text = include_str!("../../cuwheel-nix/tests/fixtures/nix-2.34/cache.narinfo");
    let info = NarInfo::parse(text).unwrap();
    let path = info.store_path.clone();
    std::fs::write(
        dir.path().join(format!("{}.narinfo", path.hash_part())),
        text,
    )
    .unwrap();
    let read = narinfo_of(dir.path(), &path).unwrap();
    assert!(read.valid);
    assert_eq!(read.nar_size, 496);
    let other: StorePath = "/nix/store/00000000000000000000000000000000-missing"
        .parse()
        .unwrap();
    assert!(!narinfo_of(dir.path(), &other).unwrap().valid);
}

#[test]
fn missing_program_says_how_to_install() {
    let err = Nix::system()
        .run(Command::new("nix-definitely-not-installed"))
        .unwrap_err();
    assert!(err.to_string().contains("apt-get install nix-bin"), "{err}");
}

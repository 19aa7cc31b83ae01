//! A command line as an error message shows it: short enough to read. In:
//! a program and its arguments. Out: the program, subcommand and options as
//! given (quoted where empty or spaced), the first store paths and then
//! "… and N more store paths", each long argument cut, and the whole held
//! to [`MAX_CHARS`] characters. Also [`excerpt`]: the head of a long output.

/// The most characters of a command line an error shows.
pub const MAX_CHARS: usize = 300;
/// Store paths shown before the rest are counted.
const STORE_PATHS_SHOWN: usize = 2;
/// The most characters of one argument shown.
const ARG_CHARS: usize = 80;

/// `program args…`, shortened (see the module doc).
pub fn shown_command<I, S>(program: &str, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut words = vec![program.to_owned()];
    let mut store_paths = 0;
    for arg in args {
        let arg = arg.as_ref();
        if arg.starts_with("/nix/store/") {
            store_paths += 1;
            if store_paths > STORE_PATHS_SHOWN {
                continue;
            }
        }
        words.push(quoted(&cut(arg, ARG_CHARS)));
    }
    if store_paths > STORE_PATHS_SHOWN {
        let more = store_paths - STORE_PATHS_SHOWN;
        words.push(format!(
            "\u{2026} and {more} more store path{}",
            if more == 1 { "" } else { "s" }
        ));
    }
    cut(&words.join(" "), MAX_CHARS)
}

fn quoted(arg: &str) -> String {
    if arg.is_empty() || arg.contains(' ') {
        format!("'{arg}'")
    } else {
        arg.to_owned()
    }
}

/// `text` cut to `max` characters, "…" marking a cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max - 1).collect();
    format!("{head}\u{2026}")
}

/// The first `max` characters of a program's output, and how long it was
/// when it was longer.
pub fn excerpt(output: &str, max: usize) -> String {
    if output.chars().count() <= max {
        return output.to_owned();
    }
    let head: String = output.chars().take(max).collect();
    format!("{head}\u{2026} ({} bytes in all)", output.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_paths_past_the_first_two_are_counted() {
        let paths: Vec<String> = (0..233).map(|i| format!("/nix/store/{i:032}-p")).collect();
        let args = ["path-info", "--json", "--option", "substituters", ""]
            .iter()
            .map(|s| s.to_string())
            .chain(paths);
        let shown = shown_command("nix", args);
        assert_eq!(
            shown,
            format!(
                "nix path-info --json --option substituters '' /nix/store/{0:032}-p \
                 /nix/store/{1:032}-p \u{2026} and 231 more store paths",
                0, 1
            )
        );
    }

    #[test]
    fn no_command_line_is_longer_than_the_limit() {
        let long = "x".repeat(10_000);
        let shown = shown_command("nix", vec![long.as_str(); 50]);
        assert!(shown.chars().count() <= MAX_CHARS, "{}", shown.len());
        assert!(shown.ends_with('\u{2026}'));
        assert_eq!(
            shown_command("nix-store", ["--add", "a b"]),
            "nix-store --add 'a b'"
        );
    }

    #[test]
    fn a_long_output_is_cut_and_measured() {
        assert_eq!(excerpt("short", 10), "short");
        assert_eq!(excerpt("abcdefghij", 4), "abcd\u{2026} (10 bytes in all)");
    }
}

//! Nix expression literals that cuwheel writes into `.nix` text (a project's
//! `flake.nix`, the expressions `flake` evaluates). In: a Rust string. Out:
//! the Nix string literal that evaluates back to it.

/// A Nix string literal: `"…"`, with `\`, `"` and `${` escaped, so the text
/// comes back unchanged and nothing in it is interpolated.
pub fn nix_string(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace("${", "\\${");
    format!("\"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::nix_string;

    #[test]
    fn quotes_backslashes_and_interpolations_are_escaped() {
        assert_eq!(nix_string("plain"), "\"plain\"");
        assert_eq!(nix_string(r#"a\b "c" ${d} $e"#), r#""a\\b \"c\" \${d} $e""#);
    }
}

//! Words of the build scripts the plan writes, quoted for POSIX `sh`.
//!
//! In: a word, literal or naming environment variables. Out: its text in a
//! script, such that `sh` passes exactly that word (variables expanded once,
//! nothing split or globbed).

/// A literal word: bare when it is only safe characters, else in single
/// quotes (a `'` inside written `'\''`).
pub fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "+-./:=@_,%^".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A word that starts with the value of `$var` and goes on with `rest`
/// (a literal): `"$cuda"/bin/nvcc`.
pub fn var_then(var: &str, rest: &str) -> String {
    let rest = if rest.is_empty() {
        String::new()
    } else {
        quote(rest)
    };
    format!("\"${var}\"{rest}")
}

/// A literal `prefix` followed by the value of `$var` and then `rest`:
/// `-ffile-prefix-map="$cuda"=cuda`.
pub fn literal_var_literal(prefix: &str, var: &str, rest: &str) -> String {
    let prefix = if prefix.is_empty() {
        String::new()
    } else {
        quote(prefix)
    };
    format!("{prefix}{}", var_then(var, rest))
}

/// The start of every compile and link script: what a compiler or linker
/// can observe besides its inputs, fixed (design decision 13). The Nix
/// sandbox already fixes the host name, the user and group ids, the build
/// directory and the environment it passes; this fixes the file-creation
/// mask, the time zone, the locale and `__DATE__`/`__TIME__` (gcc, and so
/// nvcc's host passes, take them from `SOURCE_DATE_EPOCH`).
pub const FIXED_OBSERVABLES: &str = "\
# What a compiler can observe besides its inputs is fixed: the file-creation mask, the time\n\
# zone, the locale, and __DATE__/__TIME__ (from SOURCE_DATE_EPOCH).\n\
umask 022\n\
export TZ=UTC LANG=C LC_ALL=C SOURCE_DATE_EPOCH=1\n";

/// After the inputs are staged: every file in the build directory gets the
/// store's modification time (1 s after the epoch). nvcc's device line
/// table (`-lineinfo`, `-G`) records each source's modification time and
/// size, and `__TIMESTAMP__` expands to it; a copy made at build time
/// would carry the build's clock.
pub const FIXED_MTIMES: &str = "\
# Staged sources keep no build-time clock: CUDA's device line table (-lineinfo, -G) records mtimes.\n\
find . ! -type l -exec touch -d @1 {} +\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_words_stay_bare_and_others_are_single_quoted() {
        assert_eq!(quote("-DNAME=1"), "-DNAME=1");
        assert_eq!(quote("--use_fast_math"), "--use_fast_math");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("-DMSG=a b"), "'-DMSG=a b'");
        assert_eq!(quote("-DS=\"x\""), "'-DS=\"x\"'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote("*.cu"), "'*.cu'");
    }

    #[test]
    fn variables_are_double_quoted_between_literals() {
        assert_eq!(var_then("cuda", "/bin/nvcc"), "\"$cuda\"/bin/nvcc");
        assert_eq!(var_then("src", ""), "\"$src\"");
        assert_eq!(
            literal_var_literal("-ffile-prefix-map=", "cuda", "=cuda"),
            "-ffile-prefix-map=\"$cuda\"=cuda"
        );
    }
}

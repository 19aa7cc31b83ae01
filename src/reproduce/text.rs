//! A line diff of two texts in the unified style of `diff -u`.
//!
//! In: the two texts and the names to print for them. Out: `---`/`+++`
//! headers and `@@ -a,b +c,d @@` hunks with three lines of context, from
//! a longest common subsequence of the lines; empty when the lines agree.

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// Above this many cells (lines × lines, after the common head and tail are
/// taken off) the table of common-subsequence lengths is not built: the
/// diff then names the first differing line instead.
const MAX_TABLE: usize = 16_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Keep,
    Remove,
    Add,
}

/// The unified diff of `old` and `new`, or an empty string when their lines
/// are equal.
pub fn unified_diff(old_name: &str, new_name: &str, old: &str, new: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    if a == b {
        return String::new();
    }
    let mut text = format!("--- {old_name}\n+++ {new_name}\n");
    let Some(edits) = edit_script(&a, &b) else {
        let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        text += &format!(
            "(too long to diff line by line: {} and {} lines, first differing at line {})\n",
            a.len(),
            b.len(),
            head + 1
        );
        return text;
    };
    for hunk in hunks(&edits) {
        text += &render_hunk(&edits[hunk.clone()], &a, &b, &edits[..hunk.start]);
    }
    text
}

/// The edits turning `a` into `b` (common head and tail kept, the middle
/// from a longest common subsequence), or `None` when the middle is too big.
fn edit_script(a: &[&str], b: &[&str]) -> Option<Vec<Edit>> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let (n, m) = (ma.len(), mb.len());
    if (n + 1).saturating_mul(m + 1) > MAX_TABLE {
        return None;
    }
    // lcs[i][j]: the length of a longest common subsequence of ma[i..], mb[j..].
    let width = m + 1;
    let mut lcs = vec![0u32; (n + 1) * width];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i * width + j] = if ma[i] == mb[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let mut edits = vec![Edit::Keep; head];
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && ma[i] == mb[j] {
            edits.push(Edit::Keep);
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i * width + j + 1] >= lcs[(i + 1) * width + j]) {
            edits.push(Edit::Add);
            j += 1;
        } else {
            edits.push(Edit::Remove);
            i += 1;
        }
    }
    // Removals before additions within a change reads best; the walk above
    // prefers additions on ties, so reorder each run of changes.
    let mut k = head;
    while k < edits.len() {
        let end = (k..edits.len())
            .find(|&e| edits[e] == Edit::Keep)
            .unwrap_or(edits.len());
        edits[k..end].sort_by_key(|e| *e != Edit::Remove);
        k = end + 1;
    }
    edits.extend(std::iter::repeat_n(Edit::Keep, tail));
    Some(edits)
}

/// Ranges of `edits` to print: each change with its context, changes whose
/// contexts touch merged.
fn hunks(edits: &[Edit]) -> Vec<std::ops::Range<usize>> {
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    for (k, edit) in edits.iter().enumerate() {
        if *edit == Edit::Keep {
            continue;
        }
        let start = k.saturating_sub(CONTEXT);
        let end = (k + 1 + CONTEXT).min(edits.len());
        match ranges.last_mut() {
            Some(last) if start <= last.end => last.end = end,
            _ => ranges.push(start..end),
        }
    }
    ranges
}

fn render_hunk(hunk: &[Edit], a: &[&str], b: &[&str], before: &[Edit]) -> String {
    // Where the hunk starts in each text: the lines the edits before it consumed.
    let mut i = before.iter().filter(|e| **e != Edit::Add).count();
    let mut j = before.iter().filter(|e| **e != Edit::Remove).count();
    let old_len = hunk.iter().filter(|e| **e != Edit::Add).count();
    let new_len = hunk.iter().filter(|e| **e != Edit::Remove).count();
    let mut text = format!("@@ -{} +{} @@\n", range(i, old_len), range(j, new_len));
    for edit in hunk {
        let (mark, line) = match edit {
            Edit::Keep => {
                i += 1;
                j += 1;
                (' ', a[i - 1])
            }
            Edit::Remove => {
                i += 1;
                ('-', a[i - 1])
            }
            Edit::Add => {
                j += 1;
                ('+', b[j - 1])
            }
        };
        text.push(mark);
        text += line;
        if !line.ends_with('\n') {
            text += "\n\\ No newline at end of file\n";
        }
    }
    text
}

/// `start,len` as diff prints it: 1-based, and the line before an empty range.
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified_diff("a", "b", "x\ny\n", "x\ny\n"), "");
    }

    #[test]
    fn one_changed_line_gets_context_and_diffs_header() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified_diff("given/M", "built/M", old, new),
            "--- given/M\n+++ built/M\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn far_apart_changes_make_two_hunks_and_near_ones_one() {
        let old: String = (1..=20).map(|n| format!("{n}\n")).collect();
        let far = old.replace("2\n", "two\n").replace("19\n", "nineteen\n");
        let diff = unified_diff("a", "b", &old, &far);
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
        assert!(diff.contains("@@ -1,5 +1,5 @@\n 1\n-2\n+two\n"), "{diff}");
        let near = old.replace("5\n", "five\n").replace("9\n", "nine\n");
        assert_eq!(
            unified_diff("a", "b", &old, &near).matches("@@ -").count(),
            1
        );
    }

    #[test]
    fn insertions_deletions_and_a_missing_last_newline() {
        assert_eq!(
            unified_diff("a", "b", "x\ny\n", "x\nnew\ny\n"),
            "--- a\n+++ b\n@@ -1,2 +1,3 @@\n x\n+new\n y\n"
        );
        assert_eq!(
            unified_diff("a", "b", "x\ny\n", "y\n"),
            "--- a\n+++ b\n@@ -1,2 +1 @@\n-x\n y\n"
        );
        assert_eq!(
            unified_diff("a", "b", "", "x\n"),
            "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n"
        );
        assert_eq!(
            unified_diff("a", "b", "x\n", "x"),
            "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn a_replaced_run_lists_removals_before_additions() {
        let diff = unified_diff("a", "b", "k\np\nq\nk2\n", "k\nr\ns\nk2\n");
        assert!(diff.ends_with(" k\n-p\n-q\n+r\n+s\n k2\n"), "{diff}");
    }

    #[test]
    fn applying_the_edit_script_gives_the_new_text() {
        // Every Keep/Remove/Add sequence must consume both texts exactly.
        let cases = [
            ("a\nb\nc\n", "c\nb\na\n"),
            ("a\nb\na\nb\n", "b\na\nb\na\n"),
            ("", ""),
            ("x\n", ""),
        ];
        for (old, new) in cases {
            let a: Vec<&str> = old.split_inclusive('\n').collect();
            let b: Vec<&str> = new.split_inclusive('\n').collect();
            let edits = edit_script(&a, &b).unwrap();
            let (mut i, mut j, mut out) = (0, 0, Vec::new());
            for e in edits {
                match e {
                    Edit::Keep => {
                        assert_eq!(a[i], b[j]);
                        out.push(a[i]);
                        i += 1;
                        j += 1;
                    }
                    Edit::Remove => i += 1,
                    Edit::Add => {
                        out.push(b[j]);
                        j += 1;
                    }
                }
            }
            assert_eq!((i, out), (a.len(), b));
        }
    }
}

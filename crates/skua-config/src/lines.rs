//! Splitting configuration text into logical lines, with HTCondor's continuation rules.
//!
//! * Trailing whitespace of every physical line is dropped; a logical line continues while it
//!   ends in `\` (the backslash is removed, the next line's leading whitespace is dropped).
//! * A physical line that starts (after whitespace) with `#` is a comment. As the first line of
//!   a logical line it is returned whole (the caller skips it) and never continues. Inside a
//!   continuation only its **last character** is kept: so a comment ending in `\` is skipped and
//!   the continuation goes on, while any other comment ends the logical line and leaves its last
//!   character behind (`A = one \` + `# hello world` gives `A = one d`), as HTCondor does.
//! * The last line of a file that has no final newline is appended as it is (no trimming, no
//!   comment or continuation handling), again as HTCondor does.

/// C `isspace` in the "C" locale.
pub fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// Trims C whitespace at both ends.
pub fn trim_c(s: &str) -> &str {
    s.trim_matches(is_c_space)
}

/// HTCondor's logical lines of a text: yields `(line number of the first physical line, logical line)`.
pub struct LineReader<'a> {
    lines: Vec<(&'a str, bool)>,
    pos: usize,
}

impl<'a> LineReader<'a> {
    /// A reader over `text`.
    pub fn new(text: &'a str) -> Self {
        let mut lines: Vec<(&str, bool)> = text.split('\n').map(|l| (l, true)).collect();
        // `split` yields a final piece after the last '\n': empty when the text ends in a
        // newline (drop it), otherwise a last line without newline.
        if let Some(last) = lines.pop() {
            if !last.0.is_empty() {
                lines.push((last.0, false));
            }
        }
        LineReader { lines, pos: 0 }
    }

    /// Line number (1-based) of the most recently read physical line.
    pub fn current_line(&self) -> usize {
        self.pos
    }

    /// The next logical line and the number of its first physical line.
    pub fn next_line(&mut self) -> Option<(usize, String)> {
        let mut buf = String::new();
        let mut first_line = 0usize;
        let mut continuing = false;
        loop {
            let Some(&(raw, had_newline)) = self.lines.get(self.pos) else {
                return if continuing {
                    Some((first_line, buf))
                } else {
                    None
                };
            };
            self.pos += 1;
            if first_line == 0 {
                first_line = self.pos;
            }
            if !had_newline {
                buf.push_str(raw);
                return Some((first_line, buf));
            }
            let content = raw
                .trim_end_matches(is_c_space)
                .trim_start_matches(is_c_space);
            let piece = if content.starts_with('#') {
                if !continuing {
                    return Some((first_line, content.to_string()));
                }
                // Inside a continuation only the last character of a comment line survives.
                match content.char_indices().last() {
                    Some((i, _)) => &content[i..],
                    None => "",
                }
            } else {
                content
            };
            buf.push_str(piece);
            if buf.ends_with('\\') {
                buf.pop();
                continuing = true;
                continue;
            }
            return Some((first_line, buf));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<(usize, String)> {
        let mut r = LineReader::new(text);
        let mut out = Vec::new();
        while let Some(l) = r.next_line() {
            out.push(l);
        }
        out
    }

    #[test]
    fn plain_lines_are_trimmed() {
        assert_eq!(
            all("  A = 1  \nB=2\n"),
            vec![(1, "A = 1".to_string()), (2, "B=2".to_string())]
        );
    }

    #[test]
    fn continuation_joins_and_drops_leading_space() {
        assert_eq!(
            all("A = one \\\n  two\n"),
            vec![(1, "A = one two".to_string())]
        );
        assert_eq!(all("A = one\\\ntwo\n"), vec![(1, "A = onetwo".to_string())]);
        assert_eq!(
            all("A = one \\\n\nB\n"),
            vec![(1, "A = one ".to_string()), (3, "B".to_string())]
        );
    }

    #[test]
    fn comments_inside_continuations() {
        assert_eq!(
            all("A = one \\\n# x \\\n  two\n"),
            vec![(1, "A = one two".to_string())]
        );
        assert_eq!(
            all("A = one \\\n# hello world\n"),
            vec![(1, "A = one d".to_string())]
        );
        assert_eq!(
            all("# c \\\nA = 1\n"),
            vec![(1, "# c \\".to_string()), (2, "A = 1".to_string())]
        );
    }

    #[test]
    fn last_line_without_newline_is_raw() {
        assert_eq!(all("A = one \\"), vec![(1, "A = one \\".to_string())]);
        assert_eq!(
            all("A = one \\\n   two  "),
            vec![(1, "A = one    two  ".to_string())]
        );
        assert_eq!(all("A = one \\\n"), vec![(1, "A = one ".to_string())]);
    }
}

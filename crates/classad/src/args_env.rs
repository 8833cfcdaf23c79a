//! HTCondor's argument and environment strings, the one implementation of
//! their syntax: the ClassAd functions (`argsToList`, `listToArgs`,
//! `envV1ToV2`, `mergeEnvironment`), the submit language (`arguments`,
//! `environment`) and the starter (a job ad's `Arguments`, `Args`,
//! `Environment`, `Env`) all read and write them here.
//!
//! * V2 (new) syntax: white space (space, tab, newline, carriage return)
//!   separates words; `'...'` groups, a doubled `''` inside a group is one
//!   `'`. Written with white space and `'` inside single quotes, an empty
//!   word as `''`. A V2 environment is a V2 word list of `NAME=value`.
//! * V1 (old) arguments: words separated by white space.
//! * V1 environment: `NAME=value` entries separated by `;`
//!   ([`V1Delimiters`] says which other separators count), leading blanks
//!   of each entry dropped, empty entries skipped.
//!
//! Everything works on bytes (the ClassAd functions see byte strings); the
//! `&str` functions at the end are for callers that hold text. Only ASCII
//! bytes separate or quote, so text split or joined here stays UTF-8.

/// A malformed argument or environment string.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// A `'` group that is never closed; the text after the `'`.
    #[error("unbalanced quote starting here: '{0}")]
    UnbalancedQuote(String),
    /// A lone `"` in the body of a submit file's double-quoted value.
    #[error("unescaped double quote inside a quoted value")]
    UnescapedDoubleQuote,
    /// An environment entry without `=` or without a name.
    #[error("environment entry \"{0}\" is not of the form NAME=value")]
    NotNameValue(String),
}

/// What a `"` is in V2 text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoubleQuotes {
    /// An ordinary character: V2 text as a job ad stores it.
    Ordinary,
    /// The inside of a submit file's double-quoted value: `""` stands for
    /// one `"` and a lone `"` is an error outside a `'` group (inside one,
    /// `""` and `"` are both one `"`).
    Doubled,
}

/// Splits V2 text into its words.
pub fn split_v2(s: &[u8], quotes: DoubleQuotes) -> Result<Vec<Vec<u8>>, SyntaxError> {
    let doubled = quotes == DoubleQuotes::Doubled;
    let mut words = Vec::new();
    let mut cur = Vec::new();
    let mut have = false;
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\'' => {
                have = true;
                let start = i + 1;
                i += 1;
                loop {
                    match s.get(i) {
                        None => {
                            let rest = String::from_utf8_lossy(&s[start..]).into_owned();
                            return Err(SyntaxError::UnbalancedQuote(rest));
                        }
                        Some(b'\'') if s.get(i + 1) == Some(&b'\'') => {
                            cur.push(b'\'');
                            i += 2;
                        }
                        Some(b'\'') => break,
                        Some(b'"') if doubled && s.get(i + 1) == Some(&b'"') => {
                            cur.push(b'"');
                            i += 2;
                        }
                        Some(&c) => {
                            cur.push(c);
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            b'"' if doubled => {
                if s.get(i + 1) != Some(&b'"') {
                    return Err(SyntaxError::UnescapedDoubleQuote);
                }
                cur.push(b'"');
                have = true;
                i += 2;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                if have {
                    have = false;
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => {
                have = true;
                cur.push(c);
                i += 1;
            }
        }
    }
    if have {
        words.push(cur);
    }
    Ok(words)
}

/// Appends one word in V2 form, after a space if `out` is not empty:
/// white space and `'` inside single quotes (a `'` doubled, adjacent quoted
/// sections merged), an empty word as `''`.
pub fn push_v2_word(word: &[u8], out: &mut Vec<u8>) {
    if !out.is_empty() {
        out.push(b' ');
    }
    if word.is_empty() {
        out.extend_from_slice(b"''");
    }
    for &c in word {
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\'') {
            if out.last() == Some(&b'\'') {
                out.pop();
            } else {
                out.push(b'\'');
            }
            if c == b'\'' {
                out.push(b'\'');
            }
            out.push(c);
            out.push(b'\'');
        } else {
            out.push(c);
        }
    }
}

/// Words joined in V2 form.
pub fn join_v2<S: AsRef<[u8]>>(words: &[S]) -> Vec<u8> {
    let mut out = Vec::new();
    for w in words {
        push_v2_word(w.as_ref(), &mut out);
    }
    out
}

/// Whether a byte separates V1 arguments.
pub fn is_v1_arg_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Splits V1 arguments: the runs of bytes between white space.
pub fn split_v1_args(s: &[u8]) -> Vec<&[u8]> {
    s.split(|&b| is_v1_arg_space(b))
        .filter(|t| !t.is_empty())
        .collect()
}

/// Which separators a V1 environment string has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum V1Delimiters {
    /// `;` only; leading spaces and tabs of an entry dropped (the submit
    /// file's `environment` and the job ad's `Env` as Skua reads them).
    Semicolon,
    /// HTCondor's `Env` class: `;`, or the first character if it is one of
    /// the delimiters HTCondor permits (`|` and others), and newlines; all
    /// leading white space of an entry dropped (`envV1ToV2`).
    Auto,
}

/// The delimiters HTCondor permits as the first character of a V1
/// environment string.
const PERMITTED_DELIMITERS: &[u8] = b"!#$%&*+,-/:;<>?@^`|~\x1F";

/// The non-empty entries of a V1 environment string.
pub fn v1_env_entries(s: &[u8], delimiters: V1Delimiters) -> Vec<&[u8]> {
    let (delim, rest, newline, blanks): (u8, &[u8], bool, &[u8]) = match delimiters {
        V1Delimiters::Semicolon => (b';', s, false, b" \t"),
        V1Delimiters::Auto => match s.first() {
            Some(&first) if PERMITTED_DELIMITERS.contains(&first) => {
                (first, &s[1..], true, b" \t\n\r")
            }
            _ => (b';', s, true, b" \t\n\r"),
        },
    };
    rest.split(|&b| b == delim || (newline && b == b'\n'))
        .map(|e| {
            let skip = e.iter().take_while(|b| blanks.contains(b)).count();
            &e[skip..]
        })
        .filter(|e| !e.is_empty())
        .collect()
}

/// An environment entry's name and value: split at the first `=`; `None`
/// without one or with an empty name.
pub fn env_entry(entry: &[u8]) -> Option<(&[u8], &[u8])> {
    match entry.iter().position(|&b| b == b'=') {
        Some(0) | None => None,
        Some(i) => Some((&entry[..i], &entry[i + 1..])),
    }
}

// ----- text -----------------------------------------------------------------

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The words of V2 text (see [`split_v2`]).
pub fn v2_words(s: &str, quotes: DoubleQuotes) -> Result<Vec<String>, SyntaxError> {
    Ok(split_v2(s.as_bytes(), quotes)?
        .iter()
        .map(|w| text(w))
        .collect())
}

/// Words joined in V2 form (see [`join_v2`]).
pub fn join_v2_text<S: AsRef<str>>(words: &[S]) -> String {
    let mut out = Vec::new();
    for w in words {
        push_v2_word(w.as_ref().as_bytes(), &mut out);
    }
    text(&out)
}

/// The words of V1 arguments.
pub fn v1_words(s: &str) -> Vec<String> {
    split_v1_args(s.as_bytes()).into_iter().map(text).collect()
}

/// Environment entries as `(name, value)` pairs, in order.
pub fn name_value_pairs<S: AsRef<[u8]>>(
    entries: &[S],
) -> Result<Vec<(String, String)>, SyntaxError> {
    entries
        .iter()
        .map(|e| match env_entry(e.as_ref()) {
            Some((name, value)) => Ok((text(name), text(value))),
            None => Err(SyntaxError::NotNameValue(text(e.as_ref()))),
        })
        .collect()
}

/// The variables of a V2 environment, in order.
pub fn env_v2_pairs(s: &str, quotes: DoubleQuotes) -> Result<Vec<(String, String)>, SyntaxError> {
    name_value_pairs(&split_v2(s.as_bytes(), quotes)?)
}

/// The variables of a V1 environment (`;`-separated), in order.
pub fn env_v1_pairs(s: &str) -> Result<Vec<(String, String)>, SyntaxError> {
    name_value_pairs(&v1_env_entries(s.as_bytes(), V1Delimiters::Semicolon))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str, q: DoubleQuotes) -> Result<Vec<String>, SyntaxError> {
        v2_words(s, q)
    }

    #[test]
    fn v2_words_as_stored_in_a_job_ad() {
        let o = DoubleQuotes::Ordinary;
        assert_eq!(
            words("one two' 'three four", o).unwrap(),
            ["one", "two three", "four"]
        );
        assert_eq!(words("a''''b", o).unwrap(), ["a'b"]);
        assert_eq!(words("a '' b", o).unwrap(), ["a", "", "b"]);
        assert_eq!(words(r#"say "hi""#, o).unwrap(), ["say", "\"hi\""]);
        assert_eq!(words(" \t\r\n", o).unwrap(), Vec::<String>::new());
        assert_eq!(
            words("a 'bc", o),
            Err(SyntaxError::UnbalancedQuote("bc".into()))
        );
    }

    #[test]
    fn v2_words_in_a_submit_files_quoted_value() {
        let d = DoubleQuotes::Doubled;
        assert_eq!(
            words(r#"say ""hello"" world"#, d).unwrap(),
            ["say", "\"hello\"", "world"]
        );
        assert_eq!(words(r#"'a""b"c'"#, d).unwrap(), ["a\"b\"c"]);
        assert_eq!(words(r#"a "b"#, d), Err(SyntaxError::UnescapedDoubleQuote));
    }

    #[test]
    fn v2_writing_quotes_only_what_it_must_and_reads_back() {
        let cases: [(&[&str], &str); 5] = [
            (&["a", "b c"], "a b' 'c"),
            (&["a'b"], "a''''b"),
            (&[""], "''"),
            (&["x  y", "", "z"], "x'  'y '' z"),
            (&[], ""),
        ];
        for (ws, want) in cases {
            assert_eq!(join_v2_text(ws), want);
            assert_eq!(words(want, DoubleQuotes::Ordinary).unwrap(), ws, "{want}");
        }
    }

    #[test]
    fn v1_arguments_and_environments() {
        assert_eq!(v1_words(" a\tb\r\nc  "), ["a", "b", "c"]);
        assert_eq!(
            env_v1_pairs("A=1; B=two;;").unwrap(),
            [("A".into(), "1".into()), ("B".into(), "two".into())]
        );
        assert_eq!(
            env_v1_pairs("A=1;B"),
            Err(SyntaxError::NotNameValue("B".into()))
        );
        // `|` is an ordinary character unless the delimiters are automatic.
        assert_eq!(
            v1_env_entries(b"|A=1|B=2", V1Delimiters::Semicolon),
            [&b"|A=1|B=2"[..]]
        );
        assert_eq!(
            v1_env_entries(b"|A=1|\n B=2", V1Delimiters::Auto),
            [&b"A=1"[..], b"B=2"]
        );
        assert_eq!(
            v1_env_entries(b"A=1\nB=2", V1Delimiters::Semicolon),
            [&b"A=1\nB=2"[..]]
        );
        assert_eq!(env_entry(b"=x"), None);
        assert_eq!(env_entry(b"A=b=c"), Some((&b"A"[..], &b"b=c"[..])));
    }

    #[test]
    fn v2_environment_pairs() {
        assert_eq!(
            env_v2_pairs("A=1 B='two words'", DoubleQuotes::Ordinary).unwrap(),
            [("A".into(), "1".into()), ("B".into(), "two words".into())]
        );
        assert!(env_v2_pairs("A", DoubleQuotes::Ordinary).is_err());
    }
}

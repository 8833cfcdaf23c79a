//! Arguments and environment in the submit language; the V2 and V1 syntax
//! itself is `classad::args_env`, shared with the ClassAd functions and the
//! starter.
//!
//! * Old arguments (no surrounding `"`): kept as written in `Args`; `\"` stands for a quote and
//!   a bare `"` is an error.
//! * New arguments (surrounded by `"`): split on whitespace; `'...'` groups (a doubled `''`
//!   inside is one `'`); `""` is a literal `"`. Stored joined in V2 form in `Arguments`.
//! * Environment: new syntax as for arguments, each word `NAME=value`; old syntax `;`-separated
//!   `NAME=value` entries. Both end up in V2 form in `Environment`.

use classad::args_env::{self, DoubleQuotes};

/// Splits the inside of a new-syntax (double-quoted) value into words.
pub(crate) fn split_v2(body: &str) -> Result<Vec<String>, String> {
    args_env::v2_words(body, DoubleQuotes::Doubled).map_err(|e| e.to_string())
}

/// Words joined in V2 form.
pub(crate) fn join_v2<S: AsRef<str>>(words: &[S]) -> String {
    args_env::join_v2_text(words)
}

/// Whether a value is in the new (double-quoted) syntax.
pub(crate) fn is_v2(value: &str) -> bool {
    value.starts_with('"')
}

/// The inside of a new-syntax value (without the surrounding quotes).
fn v2_body(value: &str) -> Result<&str, String> {
    let inner = &value[1..];
    match inner.strip_suffix('"') {
        Some(body) if !inner.is_empty() => Ok(body),
        _ => Err("a value starting with a double quote must end with one".to_string()),
    }
}

/// The arguments command: `Ok((is_v2, text))`, where the text is the `Arguments` (V2) or
/// `Args` (old syntax) value.
pub(crate) fn arguments(value: &str) -> Result<(bool, String), String> {
    if is_v2(value) {
        let words = split_v2(v2_body(value)?)?;
        Ok((true, join_v2(&words)))
    } else {
        let mut out = String::new();
        let mut chars = value.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&'"') => {
                    chars.next();
                    out.push('"');
                }
                '"' => {
                    return Err(format!(
                        "found an unescaped double quote in old-syntax arguments: {value}"
                    ))
                }
                other => out.push(other),
            }
        }
        // The words are what counts: runs of whitespace become one space.
        Ok((false, args_env::v1_words(&out).join(" ")))
    }
}

/// The environment command as `(name, value)` pairs in the order written.
pub(crate) fn environment(value: &str) -> Result<Vec<(String, String)>, String> {
    let pairs = if is_v2(value) {
        args_env::env_v2_pairs(v2_body(value)?, DoubleQuotes::Doubled)
    } else {
        args_env::env_v1_pairs(value)
    };
    pairs.map_err(|e| e.to_string())
}

/// `getenv` patterns (`*` wildcards, `!` negation, case-insensitive) applied to a name: the
/// last pattern that matches decides.
pub(crate) fn getenv_selects(patterns: &[String], name: &str) -> bool {
    let mut selected = false;
    for p in patterns {
        let (neg, pat) = match p.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, p.as_str()),
        };
        if wildcard_ci(pat, name) {
            selected = !neg;
        }
    }
    selected
}

/// `*`-only wildcard match, ASCII case-insensitive.
fn wildcard_ci(pat: &str, s: &str) -> bool {
    let p: Vec<char> = pat.chars().map(|c| c.to_ascii_lowercase()).collect();
    let t: Vec<char> = s.chars().map(|c| c.to_ascii_lowercase()).collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && p[pi] != '*' && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_v2_values_split_back_into_the_words_written() {
        let cases: [(&str, &[&str]); 4] = [
            (r#""one 'two three' four""#, &["one", "two three", "four"]),
            (r#""say ""hello"" world""#, &["say", "\"hello\"", "world"]),
            (r#""it''s 'a b'''""#, &["its", "a b'"]),
            (r#""a '' b""#, &["a", "", "b"]),
        ];
        for (input, words) in cases {
            let (_, stored) = arguments(input).unwrap();
            let back = args_env::v2_words(&stored, DoubleQuotes::Ordinary).unwrap();
            assert_eq!(back, words, "{input}");
        }
    }

    #[test]
    fn new_syntax_arguments() {
        let cases = [
            (r#""one 'two three' four""#, "one two' 'three four"),
            (r#""say ""hello"" world""#, r#"say "hello" world"#),
            (r#""it''s 'a b'''""#, "its a' 'b''''"),
            (r#""""#, ""),
            (r#""a '' b""#, "a '' b"),
        ];
        for (input, want) in cases {
            assert_eq!(
                arguments(input).map(|a| a.1),
                Ok(want.to_string()),
                "{input}"
            );
        }
    }

    #[test]
    fn old_syntax_arguments() {
        assert_eq!(
            arguments(r#"one \"two\" three"#),
            Ok((false, r#"one "two" three"#.to_string()))
        );
        assert!(arguments(r#"a "b"#).is_err());
        assert_eq!(arguments("-c x;y"), Ok((false, "-c x;y".to_string())));
    }

    #[test]
    fn environments() {
        assert_eq!(
            environment("A=1;B=two"),
            Ok(vec![("A".into(), "1".into()), ("B".into(), "two".into())])
        );
        assert_eq!(
            environment(r#""A=1 B='two words' C=""q""""#),
            Ok(vec![
                ("A".into(), "1".into()),
                ("B".into(), "two words".into()),
                ("C".into(), "\"q\"".into())
            ])
        );
        assert!(environment(r#""A=1 'unbalanced""#).is_err());
    }

    #[test]
    fn getenv_patterns() {
        let p = vec!["CONDOR*".to_string(), "path".to_string()];
        assert!(getenv_selects(&p, "CONDOR_CONFIG"));
        assert!(getenv_selects(&p, "PATH"));
        assert!(!getenv_selects(&p, "HOME"));
        let n = vec!["*".to_string(), "!HOME".to_string()];
        assert!(!getenv_selects(&n, "HOME"));
        assert!(getenv_selects(&n, "TZ"));
    }
}

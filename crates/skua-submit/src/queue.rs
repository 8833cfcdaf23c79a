//! The queue statement: `queue [N] [vars] [in|from|matching [files|dirs]] [slice] items`.

use skua_config::{is_c_space, trim_c};

/// Where a queue statement's items come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForeachMode {
    /// `queue [N]`: one job per count, no items.
    None,
    /// `queue ... in ...`: the items are listed.
    In,
    /// `queue ... from ...`: rows of a file, a command's output (`cmd |`) or an inline list.
    From,
    /// `queue ... matching ...`: file-name patterns; which kinds of entry match.
    Matching {
        /// Regular files match.
        files: bool,
        /// Directories match.
        dirs: bool,
    },
}

/// A Python-like `[start:stop:step]` slice of the item list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slice {
    /// First index (negative: from the end).
    pub start: Option<i64>,
    /// End index, exclusive (negative: from the end).
    pub stop: Option<i64>,
    /// Step (positive).
    pub step: Option<i64>,
}

impl Slice {
    /// Whether the item at `index` of a list of `len` items is selected.
    pub fn selects(&self, index: usize, len: usize) -> bool {
        let len = len as i64;
        let norm = |v: i64| if v < 0 { (len + v).max(0) } else { v.min(len) };
        let start = self.start.map_or(0, norm);
        let stop = self.stop.map_or(len, norm);
        let step = self.step.unwrap_or(1).max(1);
        let i = index as i64;
        i >= start && i < stop && (i - start) % step == 0
    }
}

/// A parsed queue statement (after macro expansion of its line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueArgs {
    /// The count expression as written (empty: 1).
    pub count: String,
    /// The loop variables (empty: `Item`).
    pub vars: Vec<String>,
    /// Where the items come from.
    pub mode: ForeachMode,
    /// The slice, if any.
    pub slice: Option<Slice>,
    /// The item text after the keyword and slice: the items (`in`, `matching`), a file name or
    /// `command |` (`from`), or the inside of a one-line `( ... )` list.
    pub items: String,
    /// The list is inline (parenthesised): `items` holds its text.
    pub inline: bool,
    /// The line ends with an open `(`: the list continues on the following lines, up to a
    /// line starting with `)`.
    pub open_list: bool,
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// Parses the text after the word `queue`. `Err` holds the reason it is invalid.
pub fn parse_queue_args(text: &str) -> Result<QueueArgs, String> {
    let text = trim_c(text);
    // Find the first keyword that stands as a word.
    let mut keyword = None;
    let mut pos = 0;
    for word in text.split(|c: char| is_c_space(c) || c == ',') {
        let lower = word.to_ascii_lowercase();
        if matches!(lower.as_str(), "in" | "from" | "matching") {
            keyword = Some((pos, lower));
            break;
        }
        pos += word.len() + 1;
    }
    let Some((kpos, kw)) = keyword else {
        return Ok(QueueArgs {
            count: text.to_string(),
            vars: Vec::new(),
            mode: ForeachMode::None,
            slice: None,
            items: String::new(),
            inline: false,
            open_list: false,
        });
    };
    let before = trim_c(&text[..kpos]);
    let mut after = trim_c(&text[kpos + kw.len()..]);

    // Split `[N] [vars]`: the variables are the trailing run of identifiers.
    let tokens: Vec<&str> = before
        .split(|c: char| is_c_space(c) || c == ',')
        .filter(|t| !t.is_empty())
        .collect();
    let mut first_var = tokens.len();
    while first_var > 0 && is_ident(tokens[first_var - 1]) {
        first_var -= 1;
    }
    // A lone leading identifier with nothing before it is a variable, unless there are more
    // tokens that cannot be variables (handled by the loop above).
    let vars: Vec<String> = tokens[first_var..].iter().map(|t| t.to_string()).collect();
    let count = if first_var == 0 {
        String::new()
    } else {
        // The count is everything before the first variable token.
        let first = tokens[first_var.min(tokens.len() - 1)];
        let cut = if first_var < tokens.len() {
            find_token(before, first, first_var, &tokens)
        } else {
            before.len()
        };
        trim_c(&before[..cut]).to_string()
    };

    let mode = match kw.as_str() {
        "in" => ForeachMode::In,
        "from" => ForeachMode::From,
        _ => {
            let (word, rest) = split_word(after);
            match word.to_ascii_lowercase().as_str() {
                "files" => {
                    after = rest;
                    ForeachMode::Matching {
                        files: true,
                        dirs: false,
                    }
                }
                "dirs" => {
                    after = rest;
                    ForeachMode::Matching {
                        files: false,
                        dirs: true,
                    }
                }
                _ => ForeachMode::Matching {
                    files: true,
                    dirs: true,
                },
            }
        }
    };
    let mut slice = None;
    if let Some(rest) = after.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            let inner = &rest[..end];
            if inner.contains(':') {
                slice = Some(parse_slice(inner)?);
                after = trim_c(&rest[end + 1..]);
            }
        }
    }
    let (items, inline, open_list) = if let Some(rest) = after.strip_prefix('(') {
        match rest.rfind(')') {
            Some(end) => (rest[..end].to_string(), true, false),
            None => (trim_c(rest).to_string(), true, true),
        }
    } else {
        (after.to_string(), false, false)
    };
    if !inline && items.is_empty() {
        return Err(format!("no items after '{kw}'"));
    }
    Ok(QueueArgs {
        count,
        vars,
        mode,
        slice,
        items,
        inline,
        open_list,
    })
}

/// Byte offset in `before` where token number `index` (equal to `tok`) starts.
fn find_token(before: &str, tok: &str, index: usize, tokens: &[&str]) -> usize {
    let mut from = 0;
    for t in tokens.iter().take(index) {
        if let Some(p) = before[from..].find(t) {
            from += p + t.len();
        }
    }
    before[from..].find(tok).map_or(before.len(), |p| from + p)
}

fn split_word(s: &str) -> (&str, &str) {
    match s.find(is_c_space) {
        Some(i) => (&s[..i], trim_c(&s[i..])),
        None => (s, ""),
    }
}

fn parse_slice(inner: &str) -> Result<Slice, String> {
    let parts: Vec<&str> = inner.split(':').collect();
    if parts.len() > 3 {
        return Err(format!("invalid slice [{inner}]"));
    }
    let num = |s: &str| -> Result<Option<i64>, String> {
        let s = trim_c(s);
        if s.is_empty() {
            Ok(None)
        } else {
            s.parse::<i64>()
                .map(Some)
                .map_err(|_| format!("invalid slice [{inner}]"))
        }
    };
    let slice = Slice {
        start: num(parts[0])?,
        stop: num(parts.get(1).copied().unwrap_or(""))?,
        step: num(parts.get(2).copied().unwrap_or(""))?,
    };
    if slice.step.is_some_and(|s| s <= 0) {
        return Err(format!("invalid slice step in [{inner}]"));
    }
    Ok(slice)
}

/// The lines of an item list: trimmed, empty lines and `#` comments left out.
pub(crate) fn list_lines(text: &str) -> Vec<String> {
    text.split('\n')
        .map(|l| trim_c(l.trim_end_matches('\r')))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The rows of a `from` list: every line (comments in an inline list were already left out
/// by the reader; a file's lines are all rows), trimmed; blank lines are rows too, but the
/// text after the last newline is not.
pub(crate) fn rows(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .split('\n')
        .map(|l| trim_c(l.trim_end_matches('\r')).to_string())
        .collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// Items of an `in` list or `matching` patterns: separated by commas and whitespace.
pub(crate) fn split_items(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || is_c_space(c))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// One row of a `from` list split over `nvars` variables: fields separated by a comma and/or
/// whitespace; the last variable takes the rest of the row; missing fields are empty.
pub(crate) fn split_row(row: &str, nvars: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(nvars);
    let mut rest = trim_c(row);
    for i in 0..nvars {
        if i + 1 == nvars {
            out.push(rest.to_string());
            break;
        }
        let end = rest
            .find(|c: char| c == ',' || is_c_space(c))
            .unwrap_or(rest.len());
        out.push(rest[..end].to_string());
        let mut r = rest[end..].trim_start_matches(is_c_space);
        if let Some(after_comma) = r.strip_prefix(',') {
            r = after_comma.trim_start_matches(is_c_space);
        }
        rest = r;
    }
    out
}

/// Shell-style glob match of one path component: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`. A leading
/// `.` of the name must be matched explicitly.
pub(crate) fn glob_match(pat: &str, name: &str) -> bool {
    if name.starts_with('.') && !pat.starts_with('.') {
        return false;
    }
    let p: Vec<char> = pat.chars().collect();
    let t: Vec<char> = name.chars().collect();
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|k| glob_at(&p[1..], &t[k..])),
        Some('?') => !t.is_empty() && glob_at(&p[1..], &t[1..]),
        Some('[') => {
            let Some(close) = p.iter().skip(2).position(|&c| c == ']').map(|i| i + 2) else {
                return t.first() == Some(&'[') && glob_at(&p[1..], &t[1..]);
            };
            let Some(&c) = t.first() else { return false };
            let mut set = &p[1..close];
            let negate = matches!(set.first(), Some('!' | '^'));
            if negate {
                set = &set[1..];
            }
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != negate && glob_at(&p[close + 1..], &t[1..])
        }
        Some(&c) => t.first() == Some(&c) && glob_at(&p[1..], &t[1..]),
    }
}

/// Whether a pattern component holds glob characters.
pub(crate) fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> QueueArgs {
        parse_queue_args(text).unwrap()
    }

    #[test]
    fn forms() {
        let a = q("");
        assert_eq!((a.count.as_str(), a.mode), ("", ForeachMode::None));
        assert_eq!(q("3").count, "3");
        let a = q("2 x in (a b)");
        assert_eq!(a.count, "2");
        assert_eq!(a.vars, vec!["x".to_string()]);
        assert_eq!((a.items.as_str(), a.inline), ("a b", true));
        let a = q("a, b from items.txt");
        assert_eq!(a.vars, vec!["a".to_string(), "b".to_string()]);
        assert_eq!((a.items.as_str(), a.inline), ("items.txt", false));
        let a = q("f matching files in*.txt");
        assert_eq!(
            a.mode,
            ForeachMode::Matching {
                files: true,
                dirs: false
            }
        );
        assert_eq!(a.items, "in*.txt");
        let a = q("in [1:3] a, b, c, d");
        assert_eq!(
            a.slice,
            Some(Slice {
                start: Some(1),
                stop: Some(3),
                step: None
            })
        );
        let a = q("from (");
        assert!(a.open_list);
        assert!(parse_queue_args("x in").is_err());
    }

    #[test]
    fn slices() {
        let s = Slice {
            start: None,
            stop: None,
            step: Some(2),
        };
        let picked: Vec<usize> = (0..5).filter(|&i| s.selects(i, 5)).collect();
        assert_eq!(picked, vec![0, 2, 4]);
        let s = Slice {
            start: Some(-2),
            stop: None,
            step: None,
        };
        let picked: Vec<usize> = (0..5).filter(|&i| s.selects(i, 5)).collect();
        assert_eq!(picked, vec![3, 4]);
    }

    #[test]
    fn rows() {
        assert_eq!(split_row(" x, y", 2), vec!["x", "y"]);
        assert_eq!(split_row("z,w", 2), vec!["z", "w"]);
        assert_eq!(split_row("a b c d", 2), vec!["a", "b c d"]);
        assert_eq!(split_row("only", 3), vec!["only", "", ""]);
        assert_eq!(split_row("a b", 1), vec!["a b"]);
    }

    #[test]
    fn globs() {
        assert!(glob_match("*.dat", "a.dat"));
        assert!(!glob_match("*.dat", ".a.dat"));
        assert!(glob_match("in?.txt", "in1.txt"));
        assert!(glob_match("f[0-9]", "f7"));
        assert!(!glob_match("f[!0-9]", "f7"));
    }
}

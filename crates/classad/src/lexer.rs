//! The ClassAd lexer (bytes in, tokens with positions out).

use crate::error::ParseError;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok<'a> {
    Int(i64),
    Real(f64),
    /// A string literal: borrowed from the source when it has no escapes.
    Str(std::borrow::Cow<'a, [u8]>),
    Ident(&'a str),
    /// `'quoted name'`
    QIdent(String),
    True,
    False,
    Undefined,
    Error,
    Is,
    Isnt,
    /// An operator or punctuation, e.g. `"=?="`, `"("`.
    Op(&'static str),
    Eof,
}

impl Tok<'_> {
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Int(i) => format!("integer {i}"),
            Tok::Real(r) => format!("real {r}"),
            Tok::Str(_) => "string literal".into(),
            Tok::Ident(s) => format!("name `{s}`"),
            Tok::QIdent(s) => format!("name '{s}'"),
            Tok::True => "`true`".into(),
            Tok::False => "`false`".into(),
            Tok::Undefined => "`undefined`".into(),
            Tok::Error => "`error`".into(),
            Tok::Is => "`is`".into(),
            Tok::Isnt => "`isnt`".into(),
            Tok::Op(o) => format!("`{o}`"),
            Tok::Eof => "end of input".into(),
        }
    }

    /// Whether this token ends an operand (so a following `-` is binary).
    fn is_operand_end(&self) -> bool {
        matches!(
            self,
            Tok::Int(_)
                | Tok::Real(_)
                | Tok::Str(_)
                | Tok::Ident(_)
                | Tok::QIdent(_)
                | Tok::True
                | Tok::False
                | Tok::Undefined
                | Tok::Error
                | Tok::Op(")")
                | Tok::Op("]")
                | Tok::Op("}")
        )
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Token<'a> {
    pub tok: Tok<'a>,
    pub line: u32,
    pub col: u32,
}

pub(crate) struct Lexer<'a> {
    /// The source as text (names are sliced from it) and as bytes.
    text: &'a str,
    src: &'a [u8],
    pos: usize,
    line: u32,
    line_start: usize,
    /// Condor (old-semantics) mode: leading-zero integers are rejected.
    strict: bool,
    /// Old ClassAd syntax: backslashes in strings are literal except `\"`.
    old_strings: bool,
    prev_operand: bool,
}

const OPS1: &[u8] = b"+-*/%<>=!~&|^?:.,;()[]{}";

fn op1(c: u8) -> &'static str {
    match c {
        b'+' => "+",
        b'-' => "-",
        b'*' => "*",
        b'/' => "/",
        b'%' => "%",
        b'<' => "<",
        b'>' => ">",
        b'=' => "=",
        b'!' => "!",
        b'~' => "~",
        b'&' => "&",
        b'|' => "|",
        b'^' => "^",
        b'?' => "?",
        b':' => ":",
        b'.' => ".",
        b',' => ",",
        b';' => ";",
        b'(' => "(",
        b')' => ")",
        b'[' => "[",
        b']' => "]",
        b'{' => "{",
        _ => "}",
    }
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(text: &'a str, strict: bool, old_strings: bool) -> Lexer<'a> {
        Lexer {
            text,
            src: text.as_bytes(),
            pos: 0,
            line: 1,
            line_start: 0,
            strict,
            old_strings,
            prev_operand: false,
        }
    }

    fn err(&self, at: usize, msg: impl Into<String>) -> ParseError {
        let (line, col) = self.line_col(at);
        ParseError::new(line, col, msg)
    }

    pub(crate) fn line_col(&self, at: usize) -> (u32, u32) {
        // `at` is always at or after line_start for errors raised while
        // scanning the current token.
        if at >= self.line_start {
            (self.line, (at - self.line_start) as u32 + 1)
        } else {
            let mut line = 1;
            let mut start = 0;
            for (i, b) in self.src[..at].iter().enumerate() {
                if *b == b'\n' {
                    line += 1;
                    start = i + 1;
                }
            }
            (line, (at - start) as u32 + 1)
        }
    }

    fn peek_at(&self, i: usize) -> u8 {
        self.src.get(self.pos + i).copied().unwrap_or(0)
    }

    fn newline(&mut self, at: usize) {
        self.line += 1;
        self.line_start = at + 1;
    }

    fn skip_space(&mut self) -> Result<(), ParseError> {
        loop {
            let c = self.peek_at(0);
            if c == b'\n' {
                self.newline(self.pos);
                self.pos += 1;
            } else if is_c_space(c) {
                self.pos += 1;
            } else if c == b'/' && self.peek_at(1) == b'/' {
                while self.pos < self.src.len() && self.src[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else if c == b'/' && self.peek_at(1) == b'*' {
                let start = self.pos;
                self.pos += 2;
                loop {
                    if self.pos >= self.src.len() {
                        return Err(self.err(start, "unterminated comment"));
                    }
                    if self.src[self.pos] == b'*' && self.peek_at(1) == b'/' {
                        self.pos += 2;
                        break;
                    }
                    if self.src[self.pos] == b'\n' {
                        self.newline(self.pos);
                    }
                    self.pos += 1;
                }
            } else {
                return Ok(());
            }
        }
    }

    pub(crate) fn next_token(&mut self) -> Result<Token<'a>, ParseError> {
        self.skip_space()?;
        let start = self.pos;
        let (line, col) = (self.line, (start - self.line_start) as u32 + 1);
        let tok = self.scan(start)?;
        self.prev_operand = tok.is_operand_end();
        Ok(Token { tok, line, col })
    }

    fn scan(&mut self, start: usize) -> Result<Tok<'a>, ParseError> {
        if self.pos >= self.src.len() {
            return Ok(Tok::Eof);
        }
        let c = self.src[self.pos];
        if c.is_ascii_digit() || (c == b'.' && self.peek_at(1).is_ascii_digit()) {
            return self.number(start, false);
        }
        if c == b'-'
            && !self.prev_operand
            && (self.peek_at(1).is_ascii_digit()
                || (self.peek_at(1) == b'.' && self.peek_at(2).is_ascii_digit()))
        {
            self.pos += 1;
            return self.number(start, true);
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = self.pos;
            while self.pos < self.src.len()
                && (self.src[self.pos].is_ascii_alphanumeric() || self.src[self.pos] == b'_')
            {
                self.pos += 1;
            }
            let text: &'a str = self.text;
            // ASCII letters, digits and `_` only: both ends are character
            // boundaries.
            let word = text.get(s..self.pos).unwrap_or_default();
            let kw = |k: &str| word.eq_ignore_ascii_case(k);
            // keywords by length first: most names are none of them
            return Ok(match word.len() {
                2 if kw("is") => Tok::Is,
                4 if kw("true") => Tok::True,
                4 if kw("isnt") => Tok::Isnt,
                5 if kw("false") => Tok::False,
                5 if kw("error") => Tok::Error,
                9 if kw("undefined") => Tok::Undefined,
                _ => Tok::Ident(word),
            });
        }
        if c == b'"' {
            return self.string(start);
        }
        if c == b'\'' {
            let bytes = self.quoted(start, b'\'')?;
            return Ok(Tok::QIdent(String::from_utf8_lossy(&bytes).into_owned()));
        }
        if c == b'?' {
            // `?:` (Elvis), also with blanks between the two characters
            let mut j = self.pos + 1;
            while j < self.src.len() && is_c_space(self.src[j]) {
                j += 1;
            }
            if self.src.get(j) == Some(&b':') {
                for k in self.pos + 1..j {
                    if self.src[k] == b'\n' {
                        self.newline(k);
                    }
                }
                self.pos = j + 1;
                return Ok(Tok::Op("?:"));
            }
        }
        // The longest operator that starts here (`=?=` before `==` before
        // `=`), by its first character.
        let (n1, n2) = (self.peek_at(1), self.peek_at(2));
        let (op, len): (&'static str, usize) = match c {
            b'=' if n1 == b'?' && n2 == b'=' => ("=?=", 3),
            b'=' if n1 == b'!' && n2 == b'=' => ("=!=", 3),
            b'=' if n1 == b'=' => ("==", 2),
            b'>' if n1 == b'>' && n2 == b'>' => (">>>", 3),
            b'>' if n1 == b'>' => (">>", 2),
            b'>' if n1 == b'=' => (">=", 2),
            b'<' if n1 == b'=' => ("<=", 2),
            b'<' if n1 == b'<' => ("<<", 2),
            b'!' if n1 == b'=' => ("!=", 2),
            b'&' if n1 == b'&' => ("&&", 2),
            b'|' if n1 == b'|' => ("||", 2),
            _ if OPS1.contains(&c) => (op1(c), 1),
            _ => return Err(self.err(start, format!("unexpected character {}", describe_byte(c)))),
        };
        self.pos += len;
        Ok(Tok::Op(op))
    }

    fn number(&mut self, start: usize, negative: bool) -> Result<Tok<'a>, ParseError> {
        let s = self.pos;
        while self.peek_at(0).is_ascii_digit() {
            self.pos += 1;
        }
        let int_end = self.pos;
        let mut is_real = false;
        if self.peek_at(0) == b'.' {
            // digits must follow the point
            if !self.peek_at(1).is_ascii_digit() {
                return Err(self.err(
                    self.pos,
                    "a real number needs digits after the decimal point",
                ));
            }
            is_real = true;
            self.pos += 1;
            while self.peek_at(0).is_ascii_digit() {
                self.pos += 1;
            }
        }
        if matches!(self.peek_at(0), b'e' | b'E') {
            let mut j = 1;
            if matches!(self.peek_at(1), b'+' | b'-') {
                j = 2;
            }
            if !self.peek_at(j).is_ascii_digit() {
                return Err(self.err(self.pos, "a real number's exponent needs digits"));
            }
            is_real = true;
            self.pos += j;
            while self.peek_at(0).is_ascii_digit() {
                self.pos += 1;
            }
        }
        let text = self.text.get(s..self.pos).unwrap_or("0");
        if is_real {
            let v: f64 = text
                .parse()
                .map_err(|_| self.err(start, "malformed real number"))?;
            return Ok(Tok::Real(if negative { -v } else { v }));
        }
        let digits = &self.src[s..int_end];
        // The reference rejects a leading zero in HTCondor's default mode by
        // looking at the token's first character, so a negative literal
        // folded with its `-` (`-010`) escapes the check and is converted
        // as in strict mode.
        let lenient = self.strict || negative;
        if digits.len() > 1 && digits[0] == b'0' {
            if !lenient {
                return Err(self.err(start, "integer literals may not have a leading zero"));
            }
            // Strict mode: base-10 conversion that stops at the first
            // non-digit, as the reference library does (`0x10` is 0).
            if digits.iter().any(|d| *d >= b'8') {
                return Err(self.err(start, "malformed octal literal"));
            }
        }
        if !lenient && digits == b"0" && matches!(self.peek_at(0), b'x' | b'X') {
            return Err(self.err(start, "hexadecimal literals are not supported"));
        }
        if lenient
            && digits == b"0"
            && matches!(self.peek_at(0), b'x' | b'X')
            && self.peek_at(1).is_ascii_hexdigit()
        {
            self.pos += 1;
            while self.peek_at(0).is_ascii_hexdigit() {
                self.pos += 1;
            }
            return Ok(Tok::Int(0));
        }
        let mut v: i64 = 0;
        let mut overflow = false;
        for d in digits {
            let digit = (d - b'0') as i64;
            let next = if negative {
                v.checked_mul(10).and_then(|x| x.checked_sub(digit))
            } else {
                v.checked_mul(10).and_then(|x| x.checked_add(digit))
            };
            match next {
                Some(n) => v = n,
                None => {
                    overflow = true;
                    break;
                }
            }
        }
        Ok(Tok::Int(if overflow { 0 } else { v }))
    }

    fn string(&mut self, start: usize) -> Result<Tok<'a>, ParseError> {
        if self.old_strings {
            // Old syntax: backslashes are literal, except before a quote:
            // `\"` followed by anything but the end of the line is a quote
            // inside the string (whose own closing quote must follow), and
            // at the end of the line a backslash closing the string.
            // Fast path: a closing quote with no backslash before it.
            let src: &'a [u8] = self.src;
            let body = &src[self.pos + 1..];
            if let Some(end) = body.iter().position(|b| matches!(b, b'"' | b'\\')) {
                if body[end] == b'"' {
                    self.pos += end + 2;
                    return Ok(Tok::Str(std::borrow::Cow::Borrowed(&body[..end])));
                }
            }
            self.pos += 1;
            let mut out = Vec::new();
            let mut prev = 0u8;
            loop {
                let Some(&c) = self.src.get(self.pos) else {
                    return Err(self.err(start, "unterminated string"));
                };
                self.pos += 1;
                if c != b'"' {
                    out.push(c);
                    prev = c;
                    continue;
                }
                if prev != b'\\' {
                    return Ok(Tok::Str(out.into()));
                }
                match self.src.get(self.pos) {
                    Some(&next) if next != b'\n' => {
                        if let Some(last) = out.last_mut() {
                            *last = b'"';
                        }
                        prev = 0;
                    }
                    _ => return Ok(Tok::Str(out.into())),
                }
            }
        }
        // Fast path: no escapes and no newline before the closing quote.
        let src: &'a [u8] = self.src;
        let body = &src[self.pos + 1..];
        if let Some(end) = body.iter().position(|b| matches!(b, b'"' | b'\\' | b'\n')) {
            if body[end] == b'"' {
                self.pos += end + 2;
                return Ok(Tok::Str(std::borrow::Cow::Borrowed(&body[..end])));
            }
        }
        let bytes = self.quoted(start, b'"')?;
        Ok(Tok::Str(bytes.into()))
    }

    /// Reads a `"`- or `'`-delimited literal with new-syntax escapes.
    fn quoted(&mut self, start: usize, q: u8) -> Result<Vec<u8>, ParseError> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            if self.pos >= self.src.len() {
                return Err(self.err(start, "unterminated string"));
            }
            let c = self.src[self.pos];
            if c == q {
                self.pos += 1;
                return Ok(out);
            }
            if c == b'\n' {
                self.newline(self.pos);
            }
            if c != b'\\' {
                out.push(c);
                self.pos += 1;
                continue;
            }
            let e = self.peek_at(1);
            self.pos += 2;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'v' => out.push(11),
                b'a' => out.push(7),
                b'0'..=b'7' => {
                    let max = if e <= b'3' { 3 } else { 2 };
                    let mut v: u32 = (e - b'0') as u32;
                    let mut n = 1;
                    while n < max && matches!(self.peek_at(0), b'0'..=b'7') {
                        v = v * 8 + (self.peek_at(0) - b'0') as u32;
                        self.pos += 1;
                        n += 1;
                    }
                    if v == 0 {
                        return Err(self.err(start, "a string may not contain a NUL character"));
                    }
                    out.push(v as u8);
                }
                0 if self.pos > self.src.len() => {
                    return Err(self.err(start, "unterminated string"));
                }
                other => {
                    if other == b'\n' {
                        self.newline(self.pos - 1);
                    }
                    out.push(other)
                }
            }
        }
    }
}

fn describe_byte(c: u8) -> String {
    if c.is_ascii_graphic() {
        format!("`{}`", c as char)
    } else {
        format!("0x{c:02x}")
    }
}

/// C's `isspace` in the C locale: blank, tab, newline, vertical tab, form
/// feed, carriage return.
pub(crate) fn is_c_space(c: u8) -> bool {
    c.is_ascii_whitespace() || c == 0x0b
}

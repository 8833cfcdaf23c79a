//! Parsing of expressions, new-style ads (`[a = 1; b = "x"]`) and old-style
//! ads (one `Name = expr` per line).

use std::sync::Arc;

use crate::ad::{AdBuilder, ClassAd};
use crate::ast::{BinOp, Call, Expr, UnOp};
use crate::error::ParseError;
use crate::lexer::{is_c_space, Lexer, Tok, Token};
use crate::name::Name;
use crate::time::{self, TzFn};
use crate::value::Value;

/// Deepest expression tree the parser builds; deeper input is rejected
/// (bounded recursion everywhere downstream: evaluation, printing, drop).
pub const MAX_DEPTH: u32 = 1000;

/// Parser options.
#[derive(Clone, Copy)]
pub struct ParseOptions {
    /// STRICT_CLASSAD_EVALUATION: leading-zero integers accepted, `;` is not
    /// an argument separator.
    pub strict: bool,
    /// Local time zone for `absTime("...")` strings without an offset.
    pub tz: TzFn,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            strict: false,
            tz: time::utc_zone,
        }
    }
}

pub(crate) struct Parser<'a> {
    lex: Lexer<'a>,
    tok: Token<'a>,
    opts: ParseOptions,
    /// Old ClassAd syntax: adjacent string literals are not merged.
    old: bool,
    /// Current recursion depth (checked on the way down, so hostile
    /// nesting is rejected before it can exhaust the stack).
    nesting: u32,
    /// A token that could not be read. It stands as the end of the input
    /// until the grammar needs a token there, and then is the error: as in
    /// the reference, a complete expression followed by unreadable text
    /// (`1 @`, `1 "abc`) parses when trailing text is ignored (old-style ad
    /// lines) and is rejected otherwise.
    pending: Option<ParseError>,
}

type PResult<T> = Result<T, ParseError>;

/// The next token, or (an end-of-input stand-in and) the error of a token
/// that cannot be read.
fn read_token<'a>(lex: &mut Lexer<'a>) -> (Token<'a>, Option<ParseError>) {
    match lex.next_token() {
        Ok(t) => (t, None),
        Err(e) => (
            Token {
                tok: Tok::Eof,
                line: e.line,
                col: e.col,
            },
            Some(e),
        ),
    }
}

fn bin_info(tok: &Tok) -> Option<(u8, BinOp)> {
    Some(match tok {
        Tok::Op("||") => (1, BinOp::Or),
        Tok::Op("&&") => (2, BinOp::And),
        Tok::Op("|") => (3, BinOp::BitOr),
        Tok::Op("^") => (4, BinOp::BitXor),
        Tok::Op("&") => (5, BinOp::BitAnd),
        Tok::Op("==") => (6, BinOp::Eq),
        Tok::Op("!=") => (6, BinOp::Ne),
        Tok::Op("=?=") | Tok::Is => (6, BinOp::Is),
        Tok::Op("=!=") | Tok::Isnt => (6, BinOp::Isnt),
        Tok::Op("<") => (7, BinOp::Lt),
        Tok::Op("<=") => (7, BinOp::Le),
        Tok::Op(">") => (7, BinOp::Gt),
        Tok::Op(">=") => (7, BinOp::Ge),
        Tok::Op("<<") => (8, BinOp::Shl),
        Tok::Op(">>") => (8, BinOp::Shr),
        Tok::Op(">>>") => (8, BinOp::UShr),
        Tok::Op("+") => (9, BinOp::Add),
        Tok::Op("-") => (9, BinOp::Sub),
        Tok::Op("*") => (10, BinOp::Mul),
        Tok::Op("/") => (10, BinOp::Div),
        Tok::Op("%") => (10, BinOp::Mod),
        _ => return None,
    })
}

impl<'a> Parser<'a> {
    pub(crate) fn new(src: &'a str, opts: ParseOptions, old_strings: bool) -> PResult<Parser<'a>> {
        Parser::with_check(src, opts, old_strings, true)
    }

    /// A parser; `check_nul` false when the caller has checked that `src`
    /// holds no NUL byte.
    fn with_check(
        src: &'a str,
        opts: ParseOptions,
        old_strings: bool,
        check_nul: bool,
    ) -> PResult<Parser<'a>> {
        // Strings are C strings in the reference: a NUL byte can neither be
        // written (`\0` is rejected) nor stored, so it is rejected anywhere.
        if check_nul {
            if let Some(at) = src.bytes().position(|b| b == 0) {
                return Err(error_at(src.as_bytes(), at, "input contains a NUL byte"));
            }
        }
        let mut lex = Lexer::new(src, opts.strict, old_strings);
        let (tok, pending) = read_token(&mut lex);
        Ok(Parser {
            lex,
            tok,
            opts,
            old: old_strings,
            nesting: 0,
            pending,
        })
    }

    fn advance(&mut self) -> PResult<Token<'a>> {
        if let Some(e) = &self.pending {
            return Err(e.clone());
        }
        let (next, pending) = read_token(&mut self.lex);
        self.pending = pending;
        Ok(std::mem::replace(&mut self.tok, next))
    }

    fn err_here(&self, msg: impl Into<String>) -> ParseError {
        ParseError::new(self.tok.line, self.tok.col, msg)
    }

    fn unexpected(&self, wanted: &str) -> ParseError {
        if let Some(e) = &self.pending {
            return e.clone();
        }
        self.err_here(format!(
            "expected {wanted}, found {}",
            self.tok.tok.describe()
        ))
    }

    fn expect_op(&mut self, op: &'static str) -> PResult<()> {
        if self.tok.tok == Tok::Op(op) {
            self.advance()?;
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{op}`")))
        }
    }

    fn too_deep(&self) -> ParseError {
        self.err_here(format!(
            "expression nested more than {MAX_DEPTH} levels deep"
        ))
    }

    pub(crate) fn at_eof(&self) -> bool {
        self.tok.tok == Tok::Eof && self.pending.is_none()
    }

    pub(crate) fn expect_eof(&mut self) -> PResult<()> {
        // As in an ad's attribute list, trailing semicolons are allowed.
        while self.tok.tok == Tok::Op(";") {
            self.advance()?;
        }
        if self.at_eof() {
            Ok(())
        } else {
            Err(self.unexpected("end of expression"))
        }
    }

    /// expression := logical-or [ '?' expression ':' expression ]
    pub(crate) fn expr(&mut self) -> PResult<(Expr, u32)> {
        if self.nesting >= MAX_DEPTH {
            return Err(self.too_deep());
        }
        self.nesting += 1;
        let r = stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || self.expr_inner());
        self.nesting -= 1;
        r
    }

    fn expr_inner(&mut self) -> PResult<(Expr, u32)> {
        let (cond, d0) = self.binary(1)?;
        if self.tok.tok == Tok::Op("?") {
            self.advance()?;
            let (a, d1) = self.expr()?;
            self.expect_op(":")?;
            let (b, d2) = self.expr()?;
            return self.depth(Expr::Cond(Box::new((cond, a, b))), d0.max(d1).max(d2));
        }
        Ok((cond, d0))
    }

    fn depth(&self, e: Expr, child: u32) -> PResult<(Expr, u32)> {
        if child + 1 > MAX_DEPTH {
            return Err(self.too_deep());
        }
        Ok((e, child + 1))
    }

    fn binary(&mut self, min_prec: u8) -> PResult<(Expr, u32)> {
        let (mut lhs, mut d) = self.unary()?;
        while let Some((prec, op)) = bin_info(&self.tok.tok) {
            if prec < min_prec {
                break;
            }
            self.advance()?;
            let (rhs, dr) = self.binary(prec + 1)?;
            let (e, nd) = self.depth(Expr::Binary(op, Box::new(lhs), Box::new(rhs)), d.max(dr))?;
            lhs = e;
            d = nd;
        }
        Ok((lhs, d))
    }

    fn unary(&mut self) -> PResult<(Expr, u32)> {
        let op = match self.tok.tok {
            Tok::Op("-") => UnOp::Neg,
            Tok::Op("+") => UnOp::Plus,
            Tok::Op("!") => UnOp::Not,
            Tok::Op("~") => UnOp::BitNot,
            _ => return self.postfix(),
        };
        self.advance()?;
        // Iterative over chains of prefix operators, so `!!!!...x` cannot
        // exhaust the stack before the depth check.
        let mut ops = vec![op];
        loop {
            let op = match self.tok.tok {
                Tok::Op("-") => UnOp::Neg,
                Tok::Op("+") => UnOp::Plus,
                Tok::Op("!") => UnOp::Not,
                Tok::Op("~") => UnOp::BitNot,
                _ => break,
            };
            if ops.len() as u32 >= MAX_DEPTH {
                return Err(self.too_deep());
            }
            ops.push(op);
            self.advance()?;
        }
        let (mut e, mut d) = self.postfix()?;
        while let Some(op) = ops.pop() {
            let (ne, nd) = self.depth(Expr::Unary(op, Box::new(e)), d)?;
            e = ne;
            d = nd;
        }
        Ok((e, d))
    }

    fn postfix(&mut self) -> PResult<(Expr, u32)> {
        let (mut e, mut d) = self.primary()?;
        loop {
            match self.tok.tok {
                Tok::Op(".") => {
                    self.advance()?;
                    // The reference accepts repeated dots (`a..b` is `a.b`).
                    while self.tok.tok == Tok::Op(".") {
                        self.advance()?;
                    }
                    let name = self.attr_name()?;
                    let (ne, nd) = self.depth(Expr::Select(Box::new(e), name), d)?;
                    e = ne;
                    d = nd;
                }
                // The reference parses Elvis `a ?: b` as a postfix operator
                // whose right side is again a postfix expression: it binds
                // tighter than every prefix and binary operator, and
                // `a ?: -b` is a parse error.
                Tok::Op("?:") => {
                    self.advance()?;
                    let (rhs, dr) = self.postfix()?;
                    let (ne, nd) =
                        self.depth(Expr::Elvis(Box::new(e), Box::new(rhs)), d.max(dr))?;
                    e = ne;
                    d = nd;
                }
                Tok::Op("[") => {
                    self.advance()?;
                    let (idx, di) = self.expr()?;
                    self.expect_op("]")?;
                    let (ne, nd) =
                        self.depth(Expr::Index(Box::new(e), Box::new(idx)), d.max(di))?;
                    e = ne;
                    d = nd;
                }
                _ => return Ok((e, d)),
            }
        }
    }

    /// An attribute name after `.` or in an ad: identifier or 'quoted'.
    fn attr_name(&mut self) -> PResult<Name> {
        match &self.tok.tok {
            Tok::Ident(s) => {
                let n = Name::new(s);
                self.advance()?;
                Ok(n)
            }
            Tok::QIdent(_) => {
                let s = self.quoted_names()?;
                Ok(Name::new(&s))
            }
            _ => Err(self.unexpected("an attribute name")),
        }
    }

    /// Adjacent 'quoted' names are concatenated, like adjacent strings.
    fn quoted_names(&mut self) -> PResult<String> {
        let mut s = String::new();
        while let Tok::QIdent(q) = &self.tok.tok {
            s.push_str(q);
            self.advance()?;
        }
        Ok(s)
    }

    fn primary(&mut self) -> PResult<(Expr, u32)> {
        let lit = |v: Value| Ok((Expr::Lit(v), 1));
        match &self.tok.tok {
            Tok::Int(i) => {
                let i = *i;
                self.advance()?;
                lit(Value::Int(i))
            }
            Tok::Real(r) => {
                let r = *r;
                self.advance()?;
                lit(Value::Real(r))
            }
            Tok::Str(_) => {
                let Tok::Str(first) = self.advance()?.tok else {
                    return Err(self.unexpected("a string"));
                };
                // Adjacent literals are one string (new syntax only).
                if self.old || !matches!(self.tok.tok, Tok::Str(_)) {
                    return lit(Value::Str(Arc::from(&*first)));
                }
                let mut bytes = first.into_owned();
                while let Tok::Str(s) = &self.tok.tok {
                    bytes.extend_from_slice(s);
                    self.advance()?;
                }
                lit(Value::Str(Arc::from(bytes)))
            }
            Tok::True => {
                self.advance()?;
                lit(Value::Bool(true))
            }
            Tok::False => {
                self.advance()?;
                lit(Value::Bool(false))
            }
            Tok::Undefined => {
                self.advance()?;
                lit(Value::Undefined)
            }
            Tok::Error => {
                self.advance()?;
                lit(Value::Error)
            }
            Tok::Ident(name) => {
                let name: &'a str = name;
                self.advance()?;
                if self.tok.tok == Tok::Op("(") {
                    return self.call(name);
                }
                Ok((Expr::Attr(Name::new(name)), 1))
            }
            Tok::QIdent(_) => {
                let s = self.quoted_names()?;
                Ok((Expr::Attr(Name::new(&s)), 1))
            }
            Tok::Op(".") => {
                self.advance()?;
                while self.tok.tok == Tok::Op(".") {
                    self.advance()?;
                }
                let name = self.attr_name()?;
                Ok((Expr::AbsAttr(name), 1))
            }
            Tok::Op("(") => {
                self.advance()?;
                let (e, d) = self.expr()?;
                self.expect_op(")")?;
                self.depth(Expr::Paren(Box::new(e)), d)
            }
            Tok::Op("{") => {
                self.advance()?;
                let mut items = Vec::new();
                let mut d = 0;
                if self.tok.tok != Tok::Op("}") {
                    loop {
                        let (e, de) = self.expr()?;
                        d = d.max(de);
                        items.push(e);
                        if self.tok.tok == Tok::Op(",") {
                            self.advance()?;
                            continue;
                        }
                        break;
                    }
                }
                self.expect_op("}")?;
                self.depth(Expr::List(Arc::new(items)), d)
            }
            Tok::Op("[") => {
                self.advance()?;
                let (ad, d) = self.ad_body("]")?;
                self.expect_op("]")?;
                self.depth(Expr::Ad(ad), d)
            }
            _ => Err(self.unexpected("an expression")),
        }
    }

    fn call(&mut self, name: &str) -> PResult<(Expr, u32)> {
        self.expect_op("(")?;
        let mut args = Vec::new();
        let mut d = 0;
        if self.tok.tok != Tok::Op(")") {
            loop {
                let (e, de) = self.expr()?;
                d = d.max(de);
                args.push(e);
                let sep = self.tok.tok == Tok::Op(",")
                    || (!self.opts.strict && self.tok.tok == Tok::Op(";"));
                if sep {
                    self.advance()?;
                    continue;
                }
                break;
            }
        }
        self.expect_op(")")?;
        // absTime("...") and relTime("...") with a literal string are folded
        // at parse time; an invalid string is a parse error.
        if args.len() == 1 {
            if let Expr::Lit(Value::Str(s)) = &args[0] {
                let text = String::from_utf8_lossy(s);
                if name.eq_ignore_ascii_case("absTime") {
                    return match time::parse_abstime(&text, self.opts.tz) {
                        Some(t) => Ok((Expr::Lit(Value::AbsTime(t)), 1)),
                        None => Err(self.err_here(format!("invalid absolute time \"{text}\""))),
                    };
                }
                // The canonical text of the special reals is `real("INF")`,
                // `real("-INF")`, `real("NaN")`: read it back as the literal,
                // so that printed infinities and NaN parse to what they were.
                if name == "real" {
                    let special = match &*text {
                        "INF" => Some(f64::INFINITY),
                        "-INF" => Some(f64::NEG_INFINITY),
                        "NaN" => Some(f64::NAN),
                        _ => None,
                    };
                    if let Some(r) = special {
                        return Ok((Expr::Lit(Value::Real(r)), 1));
                    }
                }
                if name.eq_ignore_ascii_case("relTime") {
                    return match time::parse_reltime(&text) {
                        Some(r) => Ok((Expr::RelTimeStr(r), 1)),
                        None => Err(self.err_here(format!("invalid relative time \"{text}\""))),
                    };
                }
            }
        }
        let func = crate::functions::lookup(name);
        self.depth(
            Expr::Call(Box::new(Call {
                name: Arc::from(name),
                func,
                args,
            })),
            d,
        )
    }

    /// The attributes of a new-style ad, up to (not including) `close`.
    /// Extra semicolons are ignored.
    pub(crate) fn ad_body(&mut self, close: &'static str) -> PResult<(ClassAd, u32)> {
        let mut ad = AdBuilder::with_capacity(8);
        let mut d = 0;
        if self.tok.tok == Tok::Op(close) {
            return Ok((ad.build(), d));
        }
        loop {
            while self.tok.tok == Tok::Op(";") {
                self.advance()?;
            }
            // Semicolons may separate or trail attributes, but an ad of
            // semicolons only (`[;]`) is rejected, as by the reference.
            if self.tok.tok == Tok::Op(close) && !ad.is_empty() {
                return Ok((ad.build(), d));
            }
            let name = self.attr_name()?;
            self.expect_op("=")?;
            let (e, de) = self.expr()?;
            d = d.max(de);
            ad.insert(name, e);
            if self.tok.tok == Tok::Op(";") {
                continue;
            }
            if self.tok.tok == Tok::Op(close) {
                return Ok((ad.build(), d));
            }
            return Err(self.unexpected(&format!("`;` or `{close}`")));
        }
    }
}

/// A parse error at byte offset `at` of `src`, with its line and column.
fn error_at(src: &[u8], at: usize, msg: &str) -> ParseError {
    let before = &src[..at];
    let line = before.iter().filter(|b| **b == b'\n').count() as u32 + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1);
    ParseError::new(line, (at - line_start) as u32 + 1, msg)
}

fn check_utf8(src: &[u8]) -> PResult<&str> {
    std::str::from_utf8(src).map_err(|e| error_at(src, e.valid_up_to(), "input is not valid UTF-8"))
}

/// Parses one complete expression (all input must be consumed).
pub fn parse_expr(src: &str) -> PResult<Expr> {
    parse_expr_with(src, ParseOptions::default())
}

/// Parses one complete expression with options.
pub fn parse_expr_with(src: &str, opts: ParseOptions) -> PResult<Expr> {
    let mut p = Parser::new(src, opts, false)?;
    let (e, _) = p.expr()?;
    p.expect_eof()?;
    Ok(e)
}

/// Parses an expression from bytes; invalid UTF-8 is a parse error.
pub fn parse_expr_bytes(src: &[u8]) -> PResult<Expr> {
    parse_expr(check_utf8(src)?)
}

/// Parses a new-style ad `[ a = 1; b = "x" ]` (all input must be consumed).
pub fn parse_ad(src: &str) -> PResult<ClassAd> {
    parse_ad_with(src, ParseOptions::default())
}

/// Parses a new-style ad with options.
pub fn parse_ad_with(src: &str, opts: ParseOptions) -> PResult<ClassAd> {
    let mut p = Parser::new(src, opts, false)?;
    p.expect_op("[")?;
    let (ad, _) = p.ad_body("]")?;
    p.expect_op("]")?;
    p.expect_eof()?;
    Ok(ad)
}

/// Parses an old-style ad: one `Name = expression` per line, as
/// `condor_q -l` prints them. Following HTCondor's reader: blank lines
/// before the ad are skipped; after that a line of only white space ends
/// the ad, lines whose first character other than blanks and tabs is `#`
/// are skipped, and a line that does not parse ends the ad (an error if no
/// attribute was read). Backslashes in strings are literal except `\"`.
pub fn parse_old_ad(src: &str) -> PResult<ClassAd> {
    parse_old_ad_with(src, ParseOptions::default())
}

/// Old-style ad parsing with options.
pub fn parse_old_ad_with(src: &str, opts: ParseOptions) -> PResult<ClassAd> {
    // About one attribute per line of some 20 bytes: sized once (within
    // reason: the text may hold more than one ad), built before it is
    // shared.
    let mut ad = AdBuilder::with_capacity((src.len() / 20).clamp(4, 256));
    let mut any = false;
    let body = src.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    let skipped_lines = src[..src.len() - body.len()].matches('\n').count();
    let mut rest = body;
    let mut lineno = skipped_lines;
    while !rest.is_empty() {
        // One plain scan (lines are short) finds the end of the line and
        // whether it holds a NUL byte (then the line's parser reports it).
        let mut check_nul = false;
        let mut end = newline_or_nul(rest.as_bytes());
        if let Some(i) = end {
            if rest.as_bytes()[i] == 0 {
                check_nul = true;
                end = rest.bytes().position(|b| b == b'\n');
            }
        }
        let (line, next) = match end {
            // a line ending in `\r\n` loses both
            Some(i) => (
                rest[..i].strip_suffix('\r').unwrap_or(&rest[..i]),
                &rest[i + 1..],
            ),
            None => (rest, ""),
        };
        rest = next;
        lineno += 1;
        if line.bytes().all(is_c_space) {
            break;
        }
        if line.bytes().find(|b| !matches!(b, b' ' | b'\t')) == Some(b'#') {
            continue;
        }
        match old_line(line, opts, check_nul) {
            Ok((name, e)) => {
                ad.insert(Name::new(name), e);
                any = true;
            }
            Err(mut err) => {
                if !any {
                    err.line = lineno as u32;
                    return Err(err);
                }
                break;
            }
        }
    }
    if !any {
        return Err(ParseError::new(1, 1, "no attributes found"));
    }
    Ok(ad.build())
}

/// The position of the first newline or NUL byte in `b`, eight bytes at a
/// time.
fn newline_or_nul(b: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let mut chunks = b.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let w = u64::from_le_bytes(w);
        let x = w ^ NL;
        // the lowest byte that is zero in `w` or in `x` sets the lowest
        // high bit (bits above it may be set by the borrow: never below)
        let hits = (w.wrapping_sub(LO) & !w & HI) | (x.wrapping_sub(LO) & !x & HI);
        if hits != 0 {
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&c| c == b'\n' || c == 0)
        .map(|p| at + p)
}

/// Parses one `Name = expr` line of an old-style ad. Leading white space is
/// skipped; the name is everything before the first `=` with trailing
/// blanks (not tabs) removed, so it may hold any character; anything after
/// the first complete expression is ignored.
pub fn parse_old_line(line: &str, opts: ParseOptions) -> PResult<(String, Expr)> {
    let (name, e) = old_line(line, opts, true)?;
    Ok((name.to_string(), e))
}

/// [`parse_old_line`], the name borrowed from the line; `check_nul` false
/// when the caller knows the line holds no NUL byte.
fn old_line(line: &str, opts: ParseOptions, check_nul: bool) -> PResult<(&str, Expr)> {
    let line = line.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    let eq = line
        .bytes()
        .position(|b| b == b'=')
        .ok_or_else(|| ParseError::new(1, 1, "expected `Name = expression`"))?;
    let name = line[..eq].trim_end_matches(' ');
    if name.is_empty() {
        return Err(ParseError::new(1, 1, "missing attribute name"));
    }
    let rhs = &line[eq + 1..];
    let mut p = Parser::with_check(rhs, opts, true, check_nul)
        .map_err(|e| ParseError::new(1, e.col + eq as u32 + 1, e.msg))?;
    let (e, _) = p
        .expr()
        .map_err(|e| ParseError::new(1, e.col + eq as u32 + 1, e.msg))?;
    Ok((name, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_or_nul_finds_the_first_of_either() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'\n' || c == 0);
        let mut cases: Vec<Vec<u8>> = vec![b"".to_vec(), b"abc".to_vec(), b"\n".to_vec()];
        for len in 0..20 {
            for at in 0..len {
                for mark in [b'\n', 0u8] {
                    // high bytes and bytes next to the marks' values around it
                    let mut v: Vec<u8> = (0..len)
                        .map(|i| [0x0b, 0x09, 0xff, 0x01, b'a'][i % 5])
                        .collect();
                    v[at] = mark;
                    cases.push(v.clone());
                    if at + 1 < len {
                        v[at + 1] = if mark == 0 { b'\n' } else { 0 };
                        cases.push(v);
                    }
                }
            }
        }
        for c in &cases {
            assert_eq!(newline_or_nul(c), naive(c), "{c:?}");
        }
    }

    #[test]
    fn parse_errors_carry_position() {
        let e = parse_expr("1 +\n  * 2").unwrap_err();
        assert_eq!((e.line, e.col), (2, 3));
        assert!(e.msg.contains("expected an expression"), "{}", e.msg);
        let e = parse_expr("\"abc").unwrap_err();
        assert!(e.msg.contains("unterminated string"));
    }

    #[test]
    fn hostile_input_is_rejected_without_panicking() {
        let deep = "(".repeat(100_000);
        assert!(parse_expr(&deep).is_err());
        let deep_ok = format!("{}1{}", "(".repeat(2000), ")".repeat(2000));
        assert!(parse_expr(&deep_ok).unwrap_err().msg.contains("nested"));
        let chain = vec!["1"; 50_000].join("+");
        assert!(parse_expr(&chain).is_err());
        let nots = format!("{}x", "!".repeat(100_000));
        assert!(parse_expr(&nots).is_err());
        assert!(parse_expr_bytes(b"\"\xff\"")
            .unwrap_err()
            .msg
            .contains("UTF-8"));
        let huge = "9".repeat(100_000);
        assert!(parse_expr(&huge).is_ok());
        assert!(parse_expr("/* never closed").is_err());
    }
}

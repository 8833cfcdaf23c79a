//! Builtin functions: miscellaneous (`ifThenElse`, `eval`, `debug`,
//! `unparse`, `unresolved`).

use std::cell::Cell;
use std::collections::BTreeMap;

use super::Builtin;
use crate::ad::ClassAd;
use crate::ast::{Expr, UnOp};
use crate::eval::{Evaluator, FrameId, Val};
use crate::name::{well_known as wk, Name, Sym};
use crate::parser::ParseOptions;
use crate::unparse::{write_name, write_value};
use crate::value::Value;

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("ifThenElse", if_then_else),
    ("eval", eval),
    ("debug", debug),
    ("unparse", unparse),
    ("unresolved", unresolved),
];

/// How many `eval()` calls may be nested (the reference library's
/// recursion budget); beyond it the whole evaluation fails.
const MAX_EVAL_NESTING: u32 = 1000;

/// The reference library's budget for following attribute definitions when
/// collecting external references (`unresolved()`).
const MAX_REF_DEPTH: u32 = 1000;

/// `ifThenElse(c, a, b)`: exactly three arguments, behaves like `c ? a : b`
/// (only the chosen branch is evaluated). Numbers are truthy when non-zero,
/// an `undefined` condition gives `undefined`, any other type `error`.
fn if_then_else(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [cond, then, other] = args else {
        return Val::Error;
    };
    let take_then = match ev.eval_in(cond, cur) {
        Val::Bool(b) => b,
        Val::Int(i) => i != 0,
        Val::Real(r) => r != 0.0,
        Val::Undefined => return Val::Undefined,
        _ => return Val::Error,
    };
    ev.eval_in(if take_then { then } else { other }, cur)
}

thread_local! {
    static EVAL_NESTING: Cell<u32> = const { Cell::new(0) };
}

/// Counts one level of `eval()` nesting for as long as it lives.
struct NestingGuard;

impl NestingGuard {
    /// Enters one level; `None` when the budget is exhausted.
    fn enter() -> Option<NestingGuard> {
        EVAL_NESTING.with(|n| {
            let depth = n.get();
            if depth >= MAX_EVAL_NESTING {
                None
            } else {
                n.set(depth + 1);
                Some(NestingGuard)
            }
        })
    }
}

impl Drop for NestingGuard {
    fn drop(&mut self) {
        EVAL_NESTING.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// `eval(x)`: converts `x` to a string as `string()` does, parses it as an
/// expression (with the evaluator's strictness) and evaluates it in the
/// current scope. `undefined`, `error` or text that does not parse give
/// `error`; nesting `eval()` too deeply makes the whole evaluation fail.
fn eval(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [arg] = args else { return Val::Error };
    let v = ev.eval_in(arg, cur);
    if matches!(v, Val::Undefined | Val::Error) {
        return Val::Error;
    }
    let text = super::to_text(ev, &v);
    let Ok(src) = std::str::from_utf8(&text) else {
        return Val::Error;
    };
    let opts = ParseOptions {
        strict: ev.is_strict(),
        tz: ev.opts.tz,
    };
    let Ok(expr) = crate::parser::parse_expr_with(src, opts) else {
        return Val::Error;
    };
    let Some(_guard) = NestingGuard::enter() else {
        return ev.fail();
    };
    stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || ev.eval_in(&expr, cur))
}

/// `debug(x)`: evaluates and returns `x` (the reference also logs the
/// evaluation, which a pure core does not).
fn debug(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [arg] = args else { return Val::Error };
    ev.eval_in(arg, cur)
}

/// `unparse(attr)`: the pretty-printed text of the expression bound to
/// `attr` in the current ad (not its parents, not the match target), or
/// `""` when there is none. The argument is not evaluated; anything but
/// an attribute reference is `error`. Only a plain name can be found: the
/// reference looks the printed reference up as an attribute name, so
/// `MY.a`, `.a` or a name that needs quoting give `""`.
fn unparse(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [arg] = args else { return Val::Error };
    let name = match arg {
        Expr::Attr(n) => n,
        Expr::AbsAttr(_) | Expr::Select(..) => return Val::str(""),
        _ => return Val::Error,
    };
    let (Some(frame), true) = (cur, is_plain_name(name)) else {
        return Val::str("");
    };
    match ev.frame_of(frame).lookup_sym(name.sym) {
        Some(e) => Val::str(pretty(e)),
        None => Val::str(""),
    }
}

/// Whether a name unparses as itself (no quotes needed).
fn is_plain_name(name: &Name) -> bool {
    let mut printed = String::new();
    write_name(name.as_str(), &mut printed);
    printed == name.as_str()
}

/// The reference library's `PrettyPrint` text of an expression: the
/// canonical unparse, except that every list and ad is laid out over
/// several lines (lists indented by 3, ads by 4, ad attributes ordered by
/// name length, then case-insensitively, as the reference stores them).
pub(crate) fn pretty(e: &Expr) -> String {
    let mut p = Pretty {
        indent: 0,
        out: String::new(),
    };
    p.expr(e);
    p.out
}

struct Pretty {
    indent: usize,
    out: String,
}

const LIST_INDENT: usize = 3;
const AD_INDENT: usize = 4;

impl Pretty {
    fn newline(&mut self) {
        self.out.push('\n');
        self.out.extend(std::iter::repeat_n(' ', self.indent));
    }

    fn expr(&mut self, e: &Expr) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.expr_inner(e));
    }

    fn expr_inner(&mut self, e: &Expr) {
        match e {
            Expr::Lit(v) => self.value(v),
            Expr::RelTimeStr(r) => {
                self.out.push_str("relTime(\"");
                self.out.push_str(&crate::time::format_reltime_literal(*r));
                self.out.push_str("\")");
            }
            Expr::Attr(n) => write_name(n.as_str(), &mut self.out),
            Expr::AbsAttr(n) => {
                self.out.push('.');
                write_name(n.as_str(), &mut self.out);
            }
            Expr::Select(base, n) => {
                self.expr(base);
                self.out.push('.');
                if n.as_str().eq_ignore_ascii_case("parent") {
                    write_name(n.as_str(), &mut self.out);
                } else {
                    self.out.push_str(n.as_str());
                }
            }
            Expr::Index(base, idx) => {
                self.expr(base);
                self.out.push('[');
                self.expr(idx);
                self.out.push(']');
            }
            Expr::Unary(op, a) => {
                self.out.push_str(match op {
                    UnOp::Neg => " -",
                    UnOp::Plus => " +",
                    UnOp::Not => " !",
                    UnOp::BitNot => " ~",
                });
                self.expr(a);
            }
            Expr::Binary(op, a, b) => {
                self.expr(a);
                self.out.push(' ');
                self.out.push_str(op.symbol());
                self.out.push(' ');
                self.expr(b);
            }
            Expr::Cond(c) => {
                self.expr(&c.0);
                self.out.push_str(" ? ");
                self.expr(&c.1);
                self.out.push_str(" : ");
                self.expr(&c.2);
            }
            Expr::Elvis(a, b) => {
                self.expr(a);
                self.out.push_str(" ?: ");
                self.expr(b);
            }
            Expr::Paren(a) => {
                self.out.push('(');
                self.expr(a);
                self.out.push(')');
            }
            Expr::Call(c) => {
                self.out.push_str(&c.name);
                self.out.push('(');
                for (i, a) in c.args.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.expr(a);
                }
                self.out.push(')');
            }
            Expr::List(items) => self.list(items),
            Expr::Ad(ad) => self.ad(ad),
        }
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::List(items) => self.list(items),
            Value::Ad(ad) => self.ad(ad),
            other => write_value(other, &mut self.out),
        }
    }

    fn list(&mut self, items: &[Expr]) {
        self.indent += LIST_INDENT;
        self.newline();
        self.out.push('{');
        self.indent += LIST_INDENT;
        for (i, e) in items.iter().enumerate() {
            self.newline();
            self.expr(e);
            if i + 1 < items.len() {
                self.out.push(',');
            }
        }
        self.indent -= LIST_INDENT;
        self.newline();
        self.out.push('}');
        self.indent -= LIST_INDENT;
    }

    fn ad(&mut self, ad: &ClassAd) {
        let mut attrs: Vec<(&Name, &Expr)> = ad.iter_chained().collect();
        attrs.sort_by(|(a, _), (b, _)| attr_order(a.as_str(), b.as_str()));
        self.indent += AD_INDENT;
        self.newline();
        self.out.push('[');
        self.indent += AD_INDENT;
        for (i, (name, e)) in attrs.iter().enumerate() {
            self.newline();
            write_name(name.as_str(), &mut self.out);
            self.out.push_str(" = ");
            self.expr(e);
            if i + 1 < attrs.len() {
                self.out.push_str("; ");
            }
        }
        self.indent -= AD_INDENT;
        self.newline();
        self.out.push(']');
        self.indent -= AD_INDENT;
    }
}

/// The order in which the reference library keeps an ad's attributes:
/// shorter names first, then case-insensitively.
fn attr_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| crate::eval::strcasecmp(a.as_bytes(), b.as_bytes()))
}

/// `unresolved(attr[, pattern])`: the references in the expression bound to
/// `attr` (followed transitively through the attributes they name) that do
/// not resolve by lexical scoping from the ad they appear in, sorted
/// case-insensitively and joined with `,` (a leading `target.` dropped).
/// With a pattern (PCRE, caseless), whether any such reference matches it.
/// The first argument is not evaluated and must be an attribute reference
/// (else `error`); if it names nothing the result is `undefined`. A
/// non-string pattern makes the whole evaluation fail; an invalid one is
/// `error`. If the references cannot be followed (a cycle, a scope that is
/// not an ad) the list is empty.
fn unresolved(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.is_empty() || args.len() > 2 {
        return Val::Error;
    }
    if !matches!(args[0], Expr::Attr(_) | Expr::AbsAttr(_) | Expr::Select(..)) {
        return Val::Error;
    }
    let Some((expr, frame)) = ev.find_attr_expr(&args[0], cur) else {
        return Val::Undefined;
    };
    let pattern = match args.get(1) {
        None => None,
        Some(p) => match ev.eval_in(p, cur) {
            Val::Str(s) => {
                match super::support::compile_regex(&s, "(*NOTEMPTY)", true, false, false, false) {
                    Some(re) => Some(re),
                    None => return Val::Error,
                }
            }
            _ => return ev.fail(),
        },
    };
    let mut collector = RefCollector {
        ev,
        refs: BTreeMap::new(),
        depth: MAX_REF_DEPTH,
    };
    let names: Vec<String> = if collector.collect(&expr, Some(frame)) {
        collector.refs.into_values().map(strip_target).collect()
    } else {
        Vec::new()
    };
    match pattern {
        Some(re) => Val::Bool(
            names
                .iter()
                .any(|n| re.is_match(n.as_bytes()).unwrap_or(false)),
        ),
        None => Val::str(names.join(",")),
    }
}

/// Drops a leading `target.` (any case) from a reference name.
fn strip_target(name: String) -> String {
    match name.get(..7) {
        Some(prefix) if prefix.eq_ignore_ascii_case("target.") => name[7..].to_string(),
        _ => name,
    }
}

/// Where a bare name leads when looked up by lexical scoping only.
enum Scoped {
    /// An attribute's expression and the frame it lives in.
    Expr(Expr, FrameId),
    /// Not defined anywhere in scope: an external reference.
    Undefined,
    /// A special name (`CurrentTime`) that refers to no attribute.
    Opaque,
    /// The lookup cannot be followed (e.g. a special name denoting a whole
    /// ad, whose walk would come back to the reference itself).
    Fail,
}

/// Collects external references, as the reference library's
/// `_GetExternalReferences` with full names does.
struct RefCollector<'e> {
    ev: &'e mut Evaluator,
    /// Keyed by the lowercased name; the first spelling seen is kept.
    refs: BTreeMap<Vec<u8>, String>,
    depth: u32,
}

impl RefCollector<'_> {
    fn add(&mut self, name: String) {
        self.refs
            .entry(name.to_ascii_lowercase().into_bytes())
            .or_insert(name);
    }

    /// Walks `e` evaluated with `cur` as the current ad; false when the
    /// walk cannot be completed.
    fn collect(&mut self, e: &Expr, cur: Option<FrameId>) -> bool {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.collect_inner(e, cur))
    }

    fn collect_inner(&mut self, e: &Expr, cur: Option<FrameId>) -> bool {
        match e {
            Expr::Lit(_) | Expr::RelTimeStr(_) => true,
            Expr::Attr(n) => match cur {
                Some(start) => self.follow(start, n),
                None => false,
            },
            Expr::AbsAttr(n) => match self.ev.root {
                Some(root) => self.follow(root, n),
                None => false,
            },
            Expr::Select(base, n) => match super::support::eval_contained(self.ev, base, cur) {
                Val::Undefined => {
                    self.add(format!("{}.{}", crate::unparse::unparse(base), n.as_str()));
                    true
                }
                Val::Ad(f) => self.follow(f, n),
                _ => false,
            },
            Expr::Index(a, b) | Expr::Binary(_, a, b) | Expr::Elvis(a, b) => {
                self.collect(a, cur) && self.collect(b, cur)
            }
            Expr::Unary(_, a) | Expr::Paren(a) => self.collect(a, cur),
            Expr::Cond(c) => {
                self.collect(&c.0, cur) && self.collect(&c.1, cur) && self.collect(&c.2, cur)
            }
            Expr::Call(c) => c.args.iter().all(|a| self.nested(a, cur)),
            Expr::List(items) => items.iter().all(|a| self.nested(a, cur)),
            Expr::Ad(ad) => ad.iter_chained().all(|(_, a)| self.nested(a, cur)),
        }
    }

    /// Walks a sub-expression one level deeper in the recursion budget.
    fn nested(&mut self, e: &Expr, cur: Option<FrameId>) -> bool {
        if self.depth == 0 {
            return false;
        }
        self.depth -= 1;
        let ok = self.collect(e, cur);
        self.depth += 1;
        ok
    }

    /// Resolves `name` from `start`; follows it if it is an attribute,
    /// records it if it is undefined.
    fn follow(&mut self, start: FrameId, name: &Name) -> bool {
        match lookup_in_scope(self.ev, start, name.sym) {
            Scoped::Expr(e, frame) => self.nested(&e, Some(frame)),
            Scoped::Undefined => {
                self.add(name.as_str().to_string());
                true
            }
            Scoped::Opaque => true,
            Scoped::Fail => false,
        }
    }
}

/// The reference library's `LookupInScope`: the current ad, then its
/// lexical parents up to the root; special names answer where the first
/// lookup fails. Unlike attribute evaluation, the other side of a match is
/// never consulted.
fn lookup_in_scope(ev: &Evaluator, start: FrameId, sym: Sym) -> Scoped {
    let mut current = start;
    loop {
        if let Some(e) = ev.frame_of(current).lookup_sym(sym) {
            return Scoped::Expr(e.clone(), current);
        }
        let at_root = ev.root == Some(current);
        if at_root && ev.matching && matches!(sym, wk::LEFT | wk::RIGHT | wk::LCTX | wk::RCTX) {
            return Scoped::Fail;
        }
        let superscope = if at_root {
            None
        } else {
            ev.frame_parent(current)
        };
        match sym {
            wk::TOPLEVEL | wk::ROOT | wk::SELF | wk::PARENT => return Scoped::Fail,
            wk::MY if !ev.is_strict() => return Scoped::Fail,
            wk::CURRENT_TIME if !ev.is_strict() => return Scoped::Opaque,
            _ => {}
        }
        match superscope {
            Some(s) if s != start => current = s,
            _ => return Scoped::Undefined,
        }
    }
}

#[cfg(test)]
mod tests {

    use crate::functions::testing::{ev, ev_in, ev_match};

    #[test]
    fn if_then_else_is_lazy() {
        assert_eq!(ev("ifThenElse(true, 1, 2)"), "1");
        assert_eq!(ev("ifThenElse(0.0, 1, 2)"), "2");
        assert_eq!(ev("ifThenElse(2.5, 1, 2)"), "1");
        assert_eq!(ev("ifThenElse(undefined, 1, 2)"), "undefined");
        assert_eq!(ev("ifThenElse(error, 1, 2)"), "error");
        assert_eq!(ev("ifThenElse(\"a\", 1, 2)"), "error");
        assert_eq!(ev("ifThenElse({}, 1, 2)"), "error");
        assert_eq!(ev("ifThenElse(true, 1, 1/0)"), "1");
        assert_eq!(ev("ifThenElse(false, 1/0, 2)"), "2");
        assert_eq!(ev("ifThenElse(true, 1)"), "error");
        assert_eq!(ev("IFTHENELSE(true, 1, 2)"), "1");
    }

    #[test]
    fn eval_parses_and_evaluates_in_scope() {
        assert_eq!(ev("eval(\"1 + 2\")"), "3");
        assert_eq!(ev("eval(1 + 2)"), "3");
        assert_eq!(ev("eval(\"\")"), "error");
        assert_eq!(ev("eval(\"1 +\")"), "error");
        assert_eq!(ev("eval(undefined)"), "error");
        assert_eq!(ev("eval(\"a + 1\")"), "undefined");
        assert_eq!(ev_in("eval(\"a + 1\")", "[a = 1]"), "2");
        assert_eq!(ev_in("eval(num)", "[num = \"42\"]"), "42");
        assert_eq!(
            ev_match("eval(\"TARGET.a + MY.a\")", "[a = 3]", "[a = 10]"),
            "13"
        );
        assert_eq!(ev("eval(\"[a=1].a\")"), "1");
    }

    #[test]
    fn runaway_eval_fails() {
        assert_eq!(ev_in("x", "[x = eval(s); s = \"eval(s)\"]"), "error");
    }

    #[test]
    fn random_numbers() {
        assert_eq!(ev("random(1)"), "0");
        assert_eq!(ev("random(1.0) < 1.0"), "true");
        assert_eq!(ev("random() >= 0.0 && random() < 1.0"), "true");
        assert_eq!(ev("random(10) >= 0 && random(10) < 10"), "true");
        assert_eq!(ev("random(-1)"), "error");
        assert_eq!(ev("isError(random(-1))"), "error");
        assert_eq!(ev("random(\"a\")"), "error");
        assert_eq!(ev("random(1, 2)"), "error");
    }

    #[test]
    fn debug_returns_its_argument() {
        assert_eq!(ev("debug(1 + 2)"), "3");
        assert_eq!(ev("debug(undefined)"), "undefined");
        assert_eq!(ev("debug()"), "error");
    }

    #[test]
    fn unparse_pretty_prints_attributes() {
        assert_eq!(ev_in("unparse(q)", "[p = 1; q = p + 1]"), "\"p + 1\"");
        assert_eq!(
            ev_in("unparse(l)", "[l = {1, 2}]"),
            r#""\n   {\n      1,\n      2\n   }""#
        );
        assert_eq!(
            ev_in(
                "unparse(n)",
                "[n = [p = 1; r = \"in\"; m = [k = 5; j = q * 2]]]"
            ),
            r#""\n    [\n        m = \n            [\n                j = q * 2; \n                k = 5\n            ]; \n        p = 1; \n        r = \"in\"\n    ]""#
        );
        assert_eq!(ev_in("unparse(CAMEL)", "[camel = 11]"), "\"11\"");
        assert_eq!(ev("unparse(c)"), "\"\"");
        assert_eq!(ev_in("unparse(missing)", "[a = 1]"), "\"\"");
        assert_eq!(ev_in("unparse(MY.a)", "[a = 1]"), "\"\"");
        assert_eq!(ev("unparse(1 + 2)"), "error");
        assert_eq!(ev("unparse(a, b)"), "error");
        assert_eq!(ev_match("unparse(x)", "[a = 1]", "[x = 2]"), "\"\"");
    }

    #[test]
    fn unresolved_lists_external_references() {
        assert_eq!(
            ev_in("unresolved(q)", "[p = 1; q = p + missing]"),
            "\"missing\""
        );
        assert_eq!(
            ev_in("unresolved(q)", "[p = Zeta + 1; q = p + alpha + ZETA]"),
            "\"alpha,Zeta\""
        );
        assert_eq!(ev_in("unresolved(a)", "[a = 3]"), "\"\"");
        assert_eq!(ev("unresolved(a)"), "undefined");
        assert_eq!(ev_in("unresolved(missing)", "[a = 3]"), "undefined");
        assert_eq!(ev_in("unresolved(1)", "[a = 3]"), "error");
        assert_eq!(ev_in("unresolved(a + missing)", "[a = 3]"), "error");
        assert_eq!(ev_in("unresolved(c1)", "[c1 = c2; c2 = c1]"), "\"\"");
        assert_eq!(
            ev_match("unresolved(q)", "[q = x + TARGET.y + z]", "[x = 1]"),
            "\"x,y,z\""
        );
        assert_eq!(ev_in("unresolved(q, \"^m\")", "[q = missing]"), "true");
        assert_eq!(ev_in("unresolved(q, \"^z\")", "[q = missing]"), "false");
        assert_eq!(ev_in("unresolved(q, \"[\")", "[q = missing]"), "error");
        assert_eq!(ev_in("unresolved(q, 1)", "[q = missing]"), "error");
    }
}

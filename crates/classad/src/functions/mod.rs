//! The builtin function library: the reference library's functions and
//! HTCondor's additions (string lists, `split*`, environment helpers, ...).
//!
//! Each family lives in its own module and exports a table of
//! `(name, implementation)`; names are matched case-insensitively once, at
//! parse time, into a [`FuncId`].

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};

mod args_env;
mod list;
mod math;
mod misc;
mod nested;
mod regex;
mod split;
mod string;
mod string_lists;
mod support;
mod time;
mod types;
mod user_db;

/// The signature of a builtin: the evaluator, the unevaluated arguments and
/// the current scope.
pub(crate) type Builtin = fn(&mut Evaluator, &[Expr], Option<FrameId>) -> Val;

/// A resolved builtin function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuncId(u16);

struct Table {
    funcs: Vec<Builtin>,
    by_name: HashMap<String, u16>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table {
            funcs: Vec::new(),
            by_name: HashMap::new(),
        };
        for family in [
            types::FUNCS,
            misc::FUNCS,
            string::FUNCS,
            regex::FUNCS,
            list::FUNCS,
            math::FUNCS,
            time::FUNCS,
            string_lists::FUNCS,
            split::FUNCS,
            args_env::FUNCS,
            nested::FUNCS,
            user_db::FUNCS,
            &[("\0version_miscased", version_miscased as Builtin)],
        ] {
            for (name, f) in family {
                let id = t.funcs.len() as u16;
                t.funcs.push(*f);
                t.by_name.insert(name.to_ascii_lowercase(), id);
            }
        }
        t
    })
}

/// The version comparisons the reference dispatches on their exact
/// spelling: another spelling still resolves, but only to a function that
/// checks its arguments and yields ERROR (UNDEFINED for an UNDEFINED one).
const EXACT_CASE: [&str; 5] = [
    "versionLT",
    "versionLE",
    "versionGT",
    "versionGE",
    "versionEQ",
];

/// Resolves a function name (case-insensitive).
pub(crate) fn lookup(name: &str) -> Option<FuncId> {
    let key = if EXACT_CASE
        .iter()
        .any(|c| c.eq_ignore_ascii_case(name) && *c != name)
    {
        "\0version_miscased".to_string()
    } else {
        name.to_ascii_lowercase()
    };
    table().by_name.get(&key).map(|&i| FuncId(i))
}

/// A version comparison spelled in another case (see `EXACT_CASE`).
fn version_miscased(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let [a, b] = args else { return Val::Error };
    let (a, b) = (ev.eval_in(a, cur), ev.eval_in(b, cur));
    if a.is_undef() || b.is_undef() {
        Val::Undefined
    } else {
        Val::Error
    }
}

/// Whether `name` is a builtin function.
pub fn is_builtin(name: &str) -> bool {
    lookup(name).is_some()
}

pub(crate) fn call(f: FuncId, ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    (table().funcs[f.0 as usize])(ev, args, cur)
}

/// Evaluates every argument.
pub(crate) fn eval_args(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Vec<Val> {
    args.iter().map(|a| ev.eval_in(a, cur)).collect()
}

/// The text of a value as `strcat`/`string()` convert it (strings as is,
/// everything else unparsed).
pub(crate) fn to_text(ev: &Evaluator, v: &Val) -> Vec<u8> {
    match v {
        Val::Str(s) => s.to_vec(),
        Val::Abs(t) => crate::time::format_abstime(*t).into_bytes(),
        Val::Rel(r) => crate::time::format_reltime(*r).into_bytes(),
        other => crate::unparse::unparse_value(&ev.to_value(other.clone())).into_bytes(),
    }
}

/// Helpers for the families' unit tests: evaluate source text with no ad,
/// with a MY ad, or in a match, and print the value canonically.
#[cfg(test)]
pub(crate) mod testing {
    use crate::{parse_ad, parse_expr, Evaluator};

    pub(crate) fn ev(src: &str) -> String {
        let e = parse_expr(src).expect("test expression parses");
        crate::eval(&e).to_string()
    }

    pub(crate) fn ev_in(src: &str, ad: &str) -> String {
        let e = parse_expr(src).expect("test expression parses");
        let ad = parse_ad(ad).expect("test ad parses");
        Evaluator::default().eval(&e, Some(&ad), None).to_string()
    }

    pub(crate) fn ev_match(src: &str, my: &str, target: &str) -> String {
        let e = parse_expr(src).expect("test expression parses");
        let my = parse_ad(my).expect("test ad parses");
        let target = parse_ad(target).expect("test ad parses");
        Evaluator::default()
            .eval(&e, Some(&my), Some(&target))
            .to_string()
    }
}

//! Builtin functions: evaluation in nested ads (`evalInEachContext`,
//! `countMatches`).

use std::sync::Arc;

use super::support::{eval_contained, rooted_contained};
use super::Builtin;
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[
    ("evalInEachContext", eval_in_each_context),
    ("countMatches", count_matches),
];

/// What `evalInEachContext` and `countMatches` iterate over: the
/// expression to evaluate and the list items (with the list's scope)
/// that should evaluate to ads.
struct Contexts {
    expr: Expr,
    items: Arc<Vec<Expr>>,
    scope: Option<FrameId>,
    /// The scope of ad literals written in a literal list (their enclosing
    /// ad, whatever the lookup of the first argument did).
    ad_scope: Option<FrameId>,
}

impl Contexts {
    /// The scope `item` of the list is evaluated in: an ad literal's own
    /// enclosing ad, any other item the list's scope.
    fn scope_of(&self, item: &Expr) -> Option<FrameId> {
        if matches!(item, Expr::Ad(_)) {
            self.ad_scope
        } else {
            self.scope
        }
    }
}

/// The contexts of `evalInEachContext` / `countMatches`. `Err` carries the
/// result for an `undefined` second argument (`None`) or `error`.
fn contexts(
    ev: &mut Evaluator,
    args: &[Expr],
    cur: Option<FrameId>,
) -> Result<Contexts, Option<Val>> {
    let [expr, list] = args else {
        return Err(Some(Val::Error));
    };
    // The reference leaves its evaluation state in the ad where it looked
    // the first argument up, and evaluates a list argument from there.
    let list_scope = ev.deref_scope(expr, cur);
    // An attribute reference stands for the expression it names, if any.
    let expr = match expr {
        Expr::Attr(_) | Expr::AbsAttr(_) | Expr::Select(..) => ev
            .find_attr_expr(expr, cur)
            .map(|(e, _)| e)
            .unwrap_or_else(|| expr.clone()),
        _ => expr.clone(),
    };
    match list {
        Expr::List(items) => Ok(Contexts {
            expr,
            items: items.clone(),
            scope: list_scope,
            ad_scope: cur,
        }),
        other => match eval_contained(ev, other, list_scope) {
            Val::List(items, scope) => Ok(Contexts {
                expr,
                items,
                scope,
                ad_scope: scope,
            }),
            Val::Undefined => Err(None),
            _ => Err(Some(Val::Error)),
        },
    }
}

/// Evaluates `expr` with the ad that `item` evaluates to as its scope:
/// `undefined` if the item is `undefined`, `error` if it is not an ad.
/// Failed evaluations give `error` for that item only.
fn eval_in_context(ev: &mut Evaluator, expr: &Expr, item: &Expr, scope: Option<FrameId>) -> Val {
    match eval_contained(ev, item, scope) {
        Val::Ad(f) => {
            // In HTCondor's default mode a name missing from the context ad
            // falls back to the other side of the match its parent is in.
            let saved = ev.frame_alt(f);
            if !ev.is_strict() && saved.is_none() {
                let inherited = ev.frame_parent(f).and_then(|p| ev.frame_alt(p));
                ev.set_frame_alt(f, inherited);
            }
            let v = rooted_contained(ev, expr, Some(f));
            ev.set_frame_alt(f, saved);
            v
        }
        Val::Undefined => Val::Undefined,
        _ => Val::Error,
    }
}

/// `evalInEachContext(expr, ads)`: the list of the values of `expr`
/// evaluated in each ad of the list (an attribute reference is replaced by
/// the expression it names, if it names one). `undefined` if the list is.
fn eval_in_each_context(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let contexts = match contexts(ev, args, cur) {
        Ok(v) => v,
        Err(e) => return e.unwrap_or(Val::Undefined),
    };
    let mut out = Vec::with_capacity(contexts.items.len());
    for item in contexts.items.iter() {
        let scope = contexts.scope_of(item);
        let v = eval_in_context(ev, &contexts.expr, item, scope);
        out.push(ev.val_to_expr(v));
    }
    Val::List(Arc::new(out), None)
}

/// `countMatches(expr, ads)`: how many ads of the list `expr` is true in
/// (a non-zero number counts as true); 0 if the list is `undefined`.
fn count_matches(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    let contexts = match contexts(ev, args, cur) {
        Ok(v) => v,
        Err(e) => return e.unwrap_or(Val::Int(0)),
    };
    let mut n: i64 = 0;
    for item in contexts.items.iter() {
        let scope = contexts.scope_of(item);
        let hit = match eval_in_context(ev, &contexts.expr, item, scope) {
            Val::Bool(b) => b,
            Val::Int(i) => i != 0,
            Val::Real(r) => r != 0.0,
            _ => false,
        };
        n += i64::from(hit);
    }
    Val::Int(n)
}

#[cfg(test)]
mod tests {
    use crate::functions::testing::{ev, ev_in, ev_match};

    #[test]
    fn evaluation_in_nested_ads() {
        assert_eq!(
            ev("evalInEachContext(x * 2, {[x = 1], [x = 2]})"),
            "{ 2,4 }"
        );
        assert_eq!(
            ev("evalInEachContext(x * 2, {[x = 1], [y = 2]})"),
            "{ 2,undefined }"
        );
        assert_eq!(
            ev("evalInEachContext(x, {1, undefined})"),
            "{ error,undefined }"
        );
        assert_eq!(ev("evalInEachContext(x, undefined)"), "undefined");
        assert_eq!(ev("evalInEachContext(x, 1)"), "error");
        assert_eq!(ev("evalInEachContext(x)"), "error");
        assert_eq!(ev_in("evalInEachContext(a, {[a = 5]})", "[a = 3]"), "{ 3 }");
        assert_eq!(
            ev_in("evalInEachContext(c, {[a = 5]})", "[a = 3; c = a + 1]"),
            "{ 6 }"
        );
        assert_eq!(
            ev_in(
                "evalInEachContext(x * 10, ads)",
                "[ads = {[x = 1], [x = 2]}]"
            ),
            "{ 10,20 }"
        );
        assert_eq!(
            ev_match(
                "evalInEachContext(x, {[x = 1], [x = 2]})",
                "[a = 1]",
                "[x = 99]"
            ),
            "{ 99,99 }"
        );
        assert_eq!(ev("countMatches(x > 1, {[x = 1], [x = 2], [x = 3]})"), "2");
        assert_eq!(
            ev("countMatches(x, {[x = true], [x = 1], [x = \"t\"]})"),
            "2"
        );
        assert_eq!(ev("countMatches(x, undefined)"), "0");
        assert_eq!(ev("countMatches(x)"), "error");
    }
}

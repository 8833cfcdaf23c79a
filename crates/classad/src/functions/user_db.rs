//! Builtin functions: the user database (`userHome`, `userMap`).

use super::support::{as_str, eval_all, eval_contained};
use super::Builtin;
use crate::ast::Expr;
use crate::eval::{Evaluator, FrameId, Val};

pub(super) const FUNCS: &[(&str, Builtin)] = &[("userHome", user_home), ("userMap", user_map)];

/// `userHome(user[, default])`: HTCondor's default configuration disables
/// the user-database lookup (and a pure core has none), so the result is
/// `default` if it is a non-empty string, else `undefined` (`error` when
/// `user` is neither a string nor `undefined`). A wrong number of
/// arguments makes the whole evaluation fail, as in the reference.
fn user_home(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.is_empty() || args.len() > 2 {
        return ev.fail();
    }
    // Failed evaluations of the arguments are ignored by the reference.
    let default = match args.get(1).map(|a| eval_contained(ev, a, cur)) {
        Some(Val::Str(s)) if !s.is_empty() => Some(s),
        _ => None,
    };
    let user = eval_contained(ev, &args[0], cur);
    match (user, default) {
        (_, Some(d)) => Val::Str(d),
        (Val::Undefined | Val::Str(_), None) => Val::Undefined,
        (_, None) => Val::Error,
    }
}

/// `userMap(map, input[, preferred[, default]])`: no user maps are
/// configured, so no mapping exists: `undefined` (or the value of
/// `default` with four arguments); `error` if `map` or `input` is.
fn user_map(ev: &mut Evaluator, args: &[Expr], cur: Option<FrameId>) -> Val {
    if args.len() < 2 || args.len() > 4 {
        return Val::Error;
    }
    let vals = eval_all(ev, args, cur);
    let names_ok = as_str(&vals[0]).is_some() && as_str(&vals[1]).is_some();
    if !names_ok && (vals[0].is_err() || vals[1].is_err()) {
        return Val::Error;
    }
    match vals.get(3) {
        Some(default) => default.clone(),
        None => Val::Undefined,
    }
}

#[cfg(test)]
mod tests {
    use crate::functions::testing::ev;

    #[test]
    fn user_database() {
        assert_eq!(ev("userHome(\"no_such_user\")"), "undefined");
        assert_eq!(
            ev("userHome(\"no_such_user\", \"/default\")"),
            "\"/default\""
        );
        assert_eq!(ev("userHome(1)"), "error");
        assert_eq!(ev("userHome(1, \"/d\")"), "\"/d\"");
        assert_eq!(ev("userHome()"), "error");
        assert_eq!(ev("userMap(\"m\", \"in\")"), "undefined");
        assert_eq!(ev("userMap(\"m\", \"in\", \"pref\")"), "undefined");
        assert_eq!(ev("userMap(\"m\", \"in\", \"pref\", 7)"), "7");
        assert_eq!(ev("userMap(error, \"in\")"), "error");
        assert_eq!(ev("userMap(\"m\")"), "error");
    }
}

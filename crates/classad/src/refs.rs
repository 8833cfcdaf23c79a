//! Which attributes an expression refers to, as HTCondor's
//! `GetInternalReferences`/`GetExternalReferences` tell it: the
//! negotiator learns from slot ads which job attributes matter for
//! matching, and the schedd groups jobs by them (autoclusters).

use std::collections::BTreeSet;

use crate::ad::ClassAd;
use crate::ast::Expr;
use crate::name::well_known as wk;

/// The attribute references of an expression evaluated in an ad (`MY`)
/// against another (`TARGET`), with names folded to lower case.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct References {
    /// Attributes looked up in `MY`: `MY.x`, and bare `x` defined in the ad.
    pub internal: BTreeSet<String>,
    /// Attributes looked up in `TARGET`: `TARGET.x`, and bare `x` the ad
    /// does not define (HTCondor falls through to the target for those).
    pub external: BTreeSet<String>,
}

/// The references of `expr` evaluated in `ad`, following bare references
/// to the ad's own attributes into their definitions (so `START` that uses
/// `IsShortJob` defined in the ad reports what `IsShortJob` refers to).
pub fn references(expr: &Expr, ad: &ClassAd) -> References {
    let mut refs = References::default();
    let mut walker = Walker {
        ad,
        refs: &mut refs,
        visiting: BTreeSet::new(),
    };
    walker.walk(expr);
    refs
}

/// [`references`] of the attribute `name` of `ad` (nothing if absent);
/// the attribute itself counts as internal.
pub fn attribute_references(ad: &ClassAd, name: &str) -> References {
    match ad.lookup(name) {
        Some(e) => {
            let mut r = references(e, ad);
            r.internal.insert(name.to_ascii_lowercase());
            r
        }
        None => References::default(),
    }
}

struct Walker<'a> {
    ad: &'a ClassAd,
    refs: &'a mut References,
    visiting: BTreeSet<String>,
}

impl Walker<'_> {
    fn bare(&mut self, name: &str) {
        let folded = name.to_ascii_lowercase();
        match self.ad.lookup(name) {
            Some(e) => {
                self.refs.internal.insert(folded.clone());
                if self.visiting.insert(folded) {
                    self.walk(e);
                }
            }
            None => {
                if !matches!(folded.as_str(), "my" | "target" | "other" | "parent") {
                    self.refs.external.insert(folded);
                }
            }
        }
    }

    fn walk(&mut self, expr: &Expr) {
        match expr {
            Expr::Lit(_) | Expr::RelTimeStr(_) => {}
            Expr::Attr(n) => self.bare(n.as_str()),
            Expr::AbsAttr(n) => self.bare(n.as_str()),
            Expr::Select(base, n) => match base.as_ref() {
                Expr::Attr(scope) if scope.sym == wk::TARGET => {
                    self.refs.external.insert(n.as_str().to_ascii_lowercase());
                }
                Expr::Attr(scope) if scope.sym == wk::MY => self.bare_internal(n.as_str()),
                other => self.walk(other),
            },
            Expr::Index(a, b) | Expr::Binary(_, a, b) | Expr::Elvis(a, b) => {
                self.walk(a);
                self.walk(b);
            }
            Expr::Unary(_, a) | Expr::Paren(a) => self.walk(a),
            Expr::Cond(c) => {
                self.walk(&c.0);
                self.walk(&c.1);
                self.walk(&c.2);
            }
            Expr::Call(call) => {
                for a in &call.args {
                    self.walk(a);
                }
            }
            Expr::List(items) => {
                for a in items.iter() {
                    self.walk(a);
                }
            }
            Expr::Ad(_) => {}
        }
    }

    fn bare_internal(&mut self, name: &str) {
        let folded = name.to_ascii_lowercase();
        self.refs.internal.insert(folded.clone());
        if let Some(e) = self.ad.lookup(name) {
            if self.visiting.insert(folded) {
                self.walk(e);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{parse_ad, parse_expr};

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn bare_names_split_by_definition_and_follow_definitions() {
        let ad = parse_ad("[ Start = IsShort && TARGET.ImageSize < Memory; IsShort = JobKind == \"short\"; Memory = 100 ]").unwrap();
        let r = attribute_references(&ad, "Start");
        assert_eq!(r.internal, set(&["start", "isshort", "memory"]));
        assert_eq!(r.external, set(&["imagesize", "jobkind"]));
    }

    #[test]
    fn scopes_and_cycles() {
        let ad = parse_ad("[ A = B; B = A + MY.C + target.D ]").unwrap();
        let e = parse_expr("A + other").unwrap();
        let r = references(&e, &ad);
        assert_eq!(r.internal, set(&["a", "b", "c"]));
        assert_eq!(r.external, set(&["d"]));
    }

    #[test]
    fn function_arguments_and_lists_count() {
        let ad = ClassAd::new();
        let e =
            parse_expr("member(Owner, { \"a\", TARGET.x }) ? ifThenElse(y, 1, 2) : z[0]").unwrap();
        let r = references(&e, &ad);
        assert_eq!(r.external, set(&["owner", "x", "y", "z"]));
    }
}

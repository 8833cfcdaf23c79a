//! ClassAds: ordered, case-insensitive maps from names to expressions.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::ast::Expr;
use crate::name::{Name, Sym};

/// A multiplicative hasher for interned symbols.
#[derive(Default)]
pub(crate) struct SymHasher(u64);
impl Hasher for SymHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(5) ^ *b as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
type SymMap = HashMap<Sym, u32, BuildHasherDefault<SymHasher>>;

const LINEAR_LIMIT: usize = 12;

#[derive(Clone, Default)]
struct AdInner {
    names: Vec<Name>,
    exprs: Vec<Expr>,
    /// Symbol -> position, kept only once the ad outgrows a linear scan.
    index: Option<SymMap>,
    /// The ad defines `MY`, `TARGET` or `OTHER` itself (rare), which
    /// disables the evaluator's match fast path for it.
    scope_names: bool,
}

/// A ClassAd. Cloning is cheap (the attributes are shared); mutation copies
/// on write. Attribute order is insertion order; a later definition of a name
/// replaces the expression but keeps the first spelling.
#[derive(Clone, Default)]
pub struct ClassAd(Arc<AdInner>);

impl ClassAd {
    pub fn new() -> ClassAd {
        ClassAd::default()
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.0.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.names.is_empty()
    }

    fn position(&self, sym: Sym) -> Option<usize> {
        match &self.0.index {
            Some(map) => map.get(&sym).map(|&i| i as usize),
            None => self.0.names.iter().position(|n| n.sym == sym),
        }
    }

    /// The expression bound to `sym`, if any.
    #[inline]
    pub fn lookup_sym(&self, sym: Sym) -> Option<&Expr> {
        self.position(sym).map(|i| &self.0.exprs[i])
    }

    /// The expression of attribute `name` (case-insensitive).
    pub fn lookup(&self, name: &str) -> Option<&Expr> {
        self.lookup_sym(crate::name::intern(name))
    }

    /// Inserts or replaces an attribute.
    pub fn insert(&mut self, name: impl Into<Name>, expr: Expr) {
        let name = name.into();
        let inner = Arc::make_mut(&mut self.0);
        let pos = match &inner.index {
            Some(map) => map.get(&name.sym).map(|&i| i as usize),
            None => inner.names.iter().position(|n| n.sym == name.sym),
        };
        match pos {
            Some(i) => inner.exprs[i] = expr,
            None => {
                let i = inner.names.len();
                use crate::name::well_known as wk;
                if matches!(name.sym, wk::MY | wk::TARGET | wk::OTHER) {
                    inner.scope_names = true;
                }
                if let Some(map) = &mut inner.index {
                    map.insert(name.sym, i as u32);
                } else if i + 1 > LINEAR_LIMIT {
                    let mut map = SymMap::default();
                    for (j, n) in inner.names.iter().enumerate() {
                        map.insert(n.sym, j as u32);
                    }
                    map.insert(name.sym, i as u32);
                    inner.index = Some(map);
                }
                inner.names.push(name);
                inner.exprs.push(expr);
            }
        }
    }

    /// Inserts an attribute whose value is a literal.
    pub fn insert_value(&mut self, name: &str, value: impl Into<crate::Value>) {
        self.insert(name, Expr::Lit(value.into()));
    }

    /// Removes an attribute; returns its expression.
    pub fn remove(&mut self, name: &str) -> Option<Expr> {
        let sym = crate::name::intern(name);
        let i = self.position(sym)?;
        let inner = Arc::make_mut(&mut self.0);
        inner.names.remove(i);
        let e = inner.exprs.remove(i);
        if inner.index.is_some() {
            let mut map = SymMap::default();
            for (j, n) in inner.names.iter().enumerate() {
                map.insert(n.sym, j as u32);
            }
            inner.index = Some(map);
        }
        Some(e)
    }

    /// Attributes in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&Name, &Expr)> {
        self.0.names.iter().zip(self.0.exprs.iter())
    }

    /// Attribute names in insertion order.
    pub fn names(&self) -> impl Iterator<Item = &Name> {
        self.0.names.iter()
    }

    /// Copies every attribute of `other` into this ad (replacing).
    pub fn update(&mut self, other: &ClassAd) {
        for (n, e) in other.iter() {
            self.insert(n.clone(), e.clone());
        }
    }

    /// Whether the ad defines an attribute named `MY`, `TARGET` or `OTHER`.
    #[inline]
    pub(crate) fn defines_scope_names(&self) -> bool {
        self.0.scope_names
    }

    /// True when both handles share the same attributes.
    pub(crate) fn ptr_eq(&self, other: &ClassAd) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Structural equality: same attribute set (names case-insensitive), same
/// expressions.
impl PartialEq for ClassAd {
    fn eq(&self, other: &ClassAd) -> bool {
        if self.ptr_eq(other) {
            return true;
        }
        self.len() == other.len() && self.iter().all(|(n, e)| other.lookup_sym(n.sym) == Some(e))
    }
}

impl std::fmt::Debug for ClassAd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::unparse::unparse_ad(self))
    }
}

impl std::fmt::Display for ClassAd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::unparse::unparse_ad(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_replaces_but_keeps_first_spelling() {
        let mut ad = ClassAd::new();
        ad.insert("CamelCase", Expr::int(1));
        ad.insert("camelcase", Expr::int(2));
        assert_eq!(ad.len(), 1);
        assert_eq!(ad.names().next().map(|n| n.as_str()), Some("CamelCase"));
        assert_eq!(ad.lookup("CAMELCASE"), Some(&Expr::int(2)));
    }

    #[test]
    fn large_ads_use_an_index() {
        let mut ad = ClassAd::new();
        for i in 0..100 {
            ad.insert(format!("Attr{i}").as_str(), Expr::int(i));
        }
        for i in 0..100 {
            assert_eq!(ad.lookup(&format!("ATTR{i}")), Some(&Expr::int(i)));
        }
        ad.remove("attr50");
        assert_eq!(ad.lookup("Attr50"), None);
        assert_eq!(ad.lookup("Attr51"), Some(&Expr::int(51)));
        assert_eq!(ad.len(), 99);
    }
}

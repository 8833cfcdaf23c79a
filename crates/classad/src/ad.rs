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
    /// The ad this one is chained to: lookups that miss here fall through
    /// to it (HTCondor's cluster ad under a proc ad).
    parent: Option<ClassAd>,
}

impl AdInner {
    fn with_capacity(n: usize) -> AdInner {
        AdInner {
            names: Vec::with_capacity(n),
            exprs: Vec::with_capacity(n),
            index: (n > LINEAR_LIMIT)
                .then(|| SymMap::with_capacity_and_hasher(n, Default::default())),
            ..AdInner::default()
        }
    }

    fn insert(&mut self, name: Name, expr: Expr) {
        if let Some(map) = &mut self.index {
            // one probe of the index, whether the name is new or not
            match map.entry(name.sym) {
                std::collections::hash_map::Entry::Occupied(o) => {
                    self.exprs[*o.get() as usize] = expr;
                }
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(self.names.len() as u32);
                    use crate::name::well_known as wk;
                    if matches!(name.sym, wk::MY | wk::TARGET | wk::OTHER) {
                        self.scope_names = true;
                    }
                    self.names.push(name);
                    self.exprs.push(expr);
                }
            }
            return;
        }
        let pos = self.names.iter().position(|n| n.sym == name.sym);
        match pos {
            Some(i) => self.exprs[i] = expr,
            None => {
                let i = self.names.len();
                use crate::name::well_known as wk;
                if matches!(name.sym, wk::MY | wk::TARGET | wk::OTHER) {
                    self.scope_names = true;
                }
                if let Some(map) = &mut self.index {
                    map.insert(name.sym, i as u32);
                } else if i + 1 > LINEAR_LIMIT {
                    let mut map = SymMap::with_capacity_and_hasher(2 * i, Default::default());
                    for (j, n) in self.names.iter().enumerate() {
                        map.insert(n.sym, j as u32);
                    }
                    map.insert(name.sym, i as u32);
                    self.index = Some(map);
                }
                self.names.push(name);
                self.exprs.push(expr);
            }
        }
    }
}

/// An ad under construction (by the parsers): attributes are inserted
/// without the copy-on-write check of [`ClassAd::insert`], into storage
/// sized once, and the ad is shared when it is complete.
pub(crate) struct AdBuilder(AdInner);

impl AdBuilder {
    /// A builder with room for about `n` attributes.
    pub(crate) fn with_capacity(n: usize) -> AdBuilder {
        AdBuilder(AdInner::with_capacity(n))
    }

    /// As [`ClassAd::insert`].
    pub(crate) fn insert(&mut self, name: Name, expr: Expr) {
        self.0.insert(name, expr);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.names.is_empty()
    }

    pub(crate) fn build(self) -> ClassAd {
        ClassAd(Arc::new(self.0))
    }
}

/// A ClassAd. Cloning is cheap (the attributes are shared); mutation copies
/// on write. Attribute order is insertion order; a later definition of a name
/// replaces the expression but keeps the first spelling.
///
/// # Chaining
///
/// An ad may be *chained* to a parent ad ([`ClassAd::chain_to`]), as
/// HTCondor chains each job's small proc ad to the cluster ad holding the
/// attributes its jobs share. The parent is held by value (a cheap shared
/// handle, a snapshot: later changes to the caller's copy of the parent are
/// not seen). With a parent:
///
/// - [`lookup`](ClassAd::lookup), [`lookup_sym`](ClassAd::lookup_sym) and
///   therefore evaluation, matchmaking and `ad["name"]` see the parent's
///   attributes that the ad does not define itself;
/// - [`len`](ClassAd::len), [`iter`](ClassAd::iter), [`names`](ClassAd::names),
///   [`insert`](ClassAd::insert) and [`remove`](ClassAd::remove) concern the
///   ad's own attributes only (removing an own attribute lets the parent's
///   show through again);
/// - [`iter_chained`](ClassAd::iter_chained) and [`flatten`](ClassAd::flatten)
///   give the merged view; equality, the unparsers (`Display`, `unparse_ad`,
///   the old syntax) and `update` use the merged view, so a chained ad prints
///   and compares like its flattened copy.
#[derive(Clone, Default)]
pub struct ClassAd(Arc<AdInner>);

impl ClassAd {
    pub fn new() -> ClassAd {
        ClassAd::default()
    }

    /// Number of own attributes (a chained parent's are not counted).
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

    /// The expression bound to `sym`, if any (falling through to the
    /// chained parent ads).
    #[inline]
    pub fn lookup_sym(&self, sym: Sym) -> Option<&Expr> {
        let mut ad = self;
        loop {
            if let Some(i) = ad.position(sym) {
                return Some(&ad.0.exprs[i]);
            }
            ad = ad.0.parent.as_ref()?;
        }
    }

    /// The expression bound to `sym` in this ad itself, ignoring any parent.
    pub fn lookup_own_sym(&self, sym: Sym) -> Option<&Expr> {
        self.position(sym).map(|i| &self.0.exprs[i])
    }

    /// Chains this ad to `parent`: lookups that miss in this ad fall
    /// through to it. Replaces any previous parent.
    pub fn chain_to(&mut self, parent: ClassAd) {
        Arc::make_mut(&mut self.0).parent = Some(parent);
    }

    /// Removes the link to the parent ad (its attributes are no longer
    /// seen through this ad).
    pub fn unchain(&mut self) {
        if self.0.parent.is_some() {
            Arc::make_mut(&mut self.0).parent = None;
        }
    }

    /// The ad this one is chained to.
    pub fn parent_ad(&self) -> Option<&ClassAd> {
        self.0.parent.as_ref()
    }

    /// Own attributes first (insertion order), then those of the parent
    /// (and its parents) that no nearer ad shadows, in their order.
    pub fn iter_chained(&self) -> impl Iterator<Item = (&Name, &Expr)> {
        let mut levels: Vec<&ClassAd> = vec![self];
        let mut cur = self;
        while let Some(p) = cur.0.parent.as_ref() {
            levels.push(p);
            cur = p;
        }
        let levels2 = levels.clone();
        levels.into_iter().enumerate().flat_map(move |(depth, ad)| {
            let nearer: Vec<&ClassAd> = levels2[..depth].to_vec();
            ad.iter()
                .filter(move |(n, _)| nearer.iter().all(|a| a.position(n.sym).is_none()))
        })
    }

    /// A standalone copy of the merged view (no parent), attributes in
    /// [`iter_chained`](ClassAd::iter_chained) order.
    pub fn flatten(&self) -> ClassAd {
        if self.0.parent.is_none() {
            return self.clone();
        }
        let mut out = ClassAd::new();
        for (n, e) in self.iter_chained() {
            out.insert(n.clone(), e.clone());
        }
        out
    }

    /// True when both handles share one ad (not merely equal ones).
    pub fn same_ad(&self, other: &ClassAd) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Splits `ads` (each read through its chain) into the attributes all
    /// of them define with equal expressions, and per ad the rest: chaining
    /// each rest to the common ad gives back the merged views. Ads chained
    /// to one shared parent are split without comparing the parent's
    /// attributes that no ad shadows.
    pub fn factor_common(ads: &[ClassAd]) -> (ClassAd, Vec<ClassAd>) {
        let Some(first) = ads.first() else {
            return (ClassAd::new(), Vec::new());
        };
        let shared = first.parent_ad().filter(|p| {
            ads.iter()
                .all(|a| a.parent_ad().is_some_and(|q| q.same_ad(p)))
        });
        let mut common = ClassAd::new();
        for (name, e) in first.iter_chained() {
            let inherited = shared.is_some_and(|p| p.position(name.sym).is_some());
            let same = if inherited && ads.iter().all(|a| a.position(name.sym).is_none()) {
                true
            } else {
                ads[1..].iter().all(|a| a.lookup_sym(name.sym) == Some(e))
            };
            if same {
                common.insert(name.clone(), e.clone());
            }
        }
        let rests = ads
            .iter()
            .map(|a| {
                let mut rest = ClassAd::new();
                for (name, e) in a.iter_chained() {
                    if common.position(name.sym).is_none() {
                        rest.insert(name.clone(), e.clone());
                    }
                }
                rest
            })
            .collect();
        (common, rests)
    }

    /// Number of attributes of the merged view (own and inherited).
    pub fn len_chained(&self) -> usize {
        if self.0.parent.is_none() {
            return self.len();
        }
        self.iter_chained().count()
    }

    /// The expression of attribute `name` (case-insensitive).
    pub fn lookup(&self, name: &str) -> Option<&Expr> {
        self.lookup_sym(crate::name::intern(name))
    }

    /// Inserts or replaces an attribute.
    pub fn insert(&mut self, name: impl Into<Name>, expr: Expr) {
        Arc::make_mut(&mut self.0).insert(name.into(), expr);
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

    /// Own attributes in insertion order (a chained parent's are not
    /// included; see [`iter_chained`](ClassAd::iter_chained)).
    pub fn iter(&self) -> impl Iterator<Item = (&Name, &Expr)> {
        self.0.names.iter().zip(self.0.exprs.iter())
    }

    /// Attribute names in insertion order.
    pub fn names(&self) -> impl Iterator<Item = &Name> {
        self.0.names.iter()
    }

    /// Copies every attribute of `other` (its merged view, if chained)
    /// into this ad (replacing).
    pub fn update(&mut self, other: &ClassAd) {
        for (n, e) in other.iter_chained() {
            self.insert(n.clone(), e.clone());
        }
    }

    /// Whether the ad defines an attribute named `MY`, `TARGET` or `OTHER`.
    #[inline]
    pub(crate) fn defines_scope_names(&self) -> bool {
        self.0.scope_names
            || self
                .0
                .parent
                .as_ref()
                .is_some_and(|p| p.defines_scope_names())
    }

    /// True when both handles share the same attributes.
    pub(crate) fn ptr_eq(&self, other: &ClassAd) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Structural equality of the merged views: same attribute set (names
/// case-insensitive), same expressions; how the attributes are split
/// between an ad and its parents does not matter.
impl PartialEq for ClassAd {
    fn eq(&self, other: &ClassAd) -> bool {
        if self.ptr_eq(other) {
            return true;
        }
        if self.0.parent.is_none() && other.0.parent.is_none() {
            return self.len() == other.len()
                && self.iter().all(|(n, e)| other.lookup_sym(n.sym) == Some(e));
        }
        self.len_chained() == other.len_chained()
            && self
                .iter_chained()
                .all(|(n, e)| other.lookup_sym(n.sym) == Some(e))
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

    fn same(a: crate::Value, b: crate::Value) -> bool {
        a.same_literal(&b)
    }

    fn chained_job() -> (ClassAd, ClassAd) {
        let cluster = crate::parse_ad(
            "[Owner = \"alice\"; RequestCpus = 2; Cmd = \"/bin/sleep\"; \
              Requirements = TARGET.Cpus >= RequestCpus; Rank = TARGET.Memory; Big = ProcId * 10]",
        )
        .unwrap();
        let mut proc_ad =
            crate::parse_ad("[ProcId = 3; Cmd = \"/bin/true\"; Mine = RequestCpus + 1]").unwrap();
        proc_ad.chain_to(cluster.clone());
        (cluster, proc_ad)
    }

    #[test]
    fn chained_lookups_fall_through_to_the_parent() {
        let (cluster, mut job) = chained_job();
        assert_eq!(job.lookup("owner"), Some(&Expr::string("alice")));
        assert_eq!(job.lookup("Cmd"), Some(&Expr::string("/bin/true")));
        assert_eq!(job.lookup_own_sym(crate::intern("Owner")), None);
        assert_eq!(job.len(), 3);
        assert_eq!(job.iter().count(), 3);
        assert_eq!(job.len_chained(), 8);
        assert!(job.parent_ad().is_some_and(|p| p == &cluster));
        // own first, then the parent's that are not shadowed
        let names: Vec<&str> = job.iter_chained().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "ProcId",
                "Cmd",
                "Mine",
                "Owner",
                "RequestCpus",
                "Requirements",
                "Rank",
                "Big"
            ]
        );
        // removing an own attribute lets the parent's show through
        job.remove("cmd");
        assert_eq!(job.lookup("Cmd"), Some(&Expr::string("/bin/sleep")));
        job.unchain();
        assert_eq!(job.lookup("Owner"), None);
        assert!(job.parent_ad().is_none());
    }

    #[test]
    fn flatten_equality_and_printing_use_the_merged_view() {
        let (_, job) = chained_job();
        let flat = job.flatten();
        assert!(flat.parent_ad().is_none());
        assert_eq!(flat.len(), 8);
        assert_eq!(flat, job);
        assert_eq!(job, flat);
        assert_eq!(job.to_string(), flat.to_string());
        assert!(job.to_string().contains("Owner = \"alice\""));
        let old = crate::unparse_old(&Expr::Ad(job.clone()));
        assert_eq!(old, crate::unparse_old(&Expr::Ad(flat.clone())));
        let mut other = ClassAd::new();
        other.update(&job);
        assert_eq!(other, flat);
        // a different split of the same attributes is still equal
        let mut alt = crate::parse_ad("[ProcId = 3]").unwrap();
        let mut rest = flat.clone();
        rest.remove("ProcId");
        alt.chain_to(rest);
        assert_eq!(alt, job);
    }

    #[test]
    fn evaluation_sees_chained_attributes() {
        let (_, job) = chained_job();
        let mut ev = crate::Evaluator::default();
        // a proc expression referring to a cluster attribute
        assert!(same(ev.eval_attr("Mine", &job, None), crate::Value::Int(3)));
        // a cluster expression referring to a proc attribute is evaluated in
        // the proc ad's scope
        assert!(same(ev.eval_attr("Big", &job, None), crate::Value::Int(30)));
        let e = crate::parse_expr("RequestCpus * 2").unwrap();
        assert!(same(ev.eval(&e, Some(&job), None), crate::Value::Int(4)));
        let e = crate::parse_expr("MY[\"Owner\"]").unwrap();
        assert!(same(
            ev.eval(&e, Some(&job), None),
            crate::Value::from("alice")
        ));
        let machine =
            crate::parse_ad("[Cpus = 4; Memory = 1024; Requirements = TARGET.Owner == \"alice\"]")
                .unwrap();
        let m = crate::symmetric_match(&mut ev, &job, &machine);
        assert!(m.matched);
        assert!(same(
            crate::rank(&mut ev, &job, &machine),
            crate::Value::Int(1024)
        ));
        let small = crate::parse_ad("[Cpus = 1; Requirements = true]").unwrap();
        assert!(!crate::symmetric_match(&mut ev, &job, &small).matched);
    }
}

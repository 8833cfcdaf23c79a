//! The collector's pure core: an in-memory store of ads of every type.
//!
//! Ads are keyed by (type, name). The type is HTCondor's `MyType`, compared
//! case-insensitively, with the usual aliases (`Master` is `DaemonMaster`,
//! `Schedd` is `Scheduler`, `Startd` and `Slot` are `Machine`). An update
//! replaces the previous ad of its key whole, as HTCondor's collector does,
//! and the store adds its bookkeeping to the stored ad:
//!
//! - `LastHeardFrom`: the time of the update;
//! - `UpdatesTotal`, `UpdatesSequenced`, `UpdatesLost`: per-key update
//!   statistics. An update is *sequenced* when it and the ad it replaces
//!   both carry `UpdateSequenceNumber` and `DaemonStartTime`; when the start
//!   times agree and the number is not the previous one plus one, the gap is
//!   counted as lost updates (a number that went backwards counts one);
//! - `MyType` and `Name`, when the ad lacks them.
//!
//! An ad lives for its lifetime after its last update: the `lifetime`
//! argument of [`AdStore::update`] if given, else the ad's own
//! `ClassAdLifetime`, else [`StoreConfig::default_lifetime`] (HTCondor's
//! `CLASSAD_LIFETIME`, 900 s). As in HTCondor, an ad expires once
//! `now - LastHeardFrom > lifetime`: at exactly the boundary it is still
//! there.
//!
//! Nothing here does I/O or reads the clock: `now` (seconds since the
//! epoch) is an argument of every operation that needs it.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{Hash, Hasher};

use classad::time::{utc_zone, TzFn};
use classad::{intern, ClassAd, EvalOptions, Evaluator, Expr, Name, Sym, Value};

/// HTCondor's default `CLASSAD_LIFETIME`, in seconds.
pub const DEFAULT_CLASSAD_LIFETIME: u64 = 900;

/// Canonical type names and their aliases (all compared case-insensitively).
const KNOWN_TYPES: &[(&str, &[&str])] = &[
    ("Machine", &["startd", "slot"]),
    ("Scheduler", &["schedd"]),
    ("Submitter", &["submittor"]),
    ("Negotiator", &[]),
    ("DaemonMaster", &["master"]),
    ("Collector", &[]),
    ("Accounting", &[]),
    ("Defrag", &[]),
    ("Grid", &[]),
    ("License", &[]),
    ("Storage", &[]),
    ("CkptServer", &[]),
    ("Generic", &[]),
    ("HAD", &[]),
];

/// An ad type (HTCondor's `MyType`). Equality, hashing and order ignore
/// ASCII case; known aliases resolve to their canonical name.
#[derive(Clone, Debug)]
pub struct AdType {
    display: Box<str>,
    folded: Box<str>,
}

impl AdType {
    /// The type named `name` (case-insensitive; aliases resolved).
    pub fn new(name: &str) -> AdType {
        let folded = name.to_ascii_lowercase();
        for (canonical, aliases) in KNOWN_TYPES {
            if canonical.eq_ignore_ascii_case(&folded) || aliases.contains(&folded.as_str()) {
                return AdType {
                    display: (*canonical).into(),
                    folded: canonical.to_ascii_lowercase().into(),
                };
            }
        }
        AdType {
            display: name.into(),
            folded: folded.into(),
        }
    }

    /// `Machine`: slot ads of the startd.
    pub fn machine() -> AdType {
        AdType::new("Machine")
    }

    /// `Scheduler`: schedd ads.
    pub fn scheduler() -> AdType {
        AdType::new("Scheduler")
    }

    /// `Submitter`: per-submitter ads of the schedds.
    pub fn submitter() -> AdType {
        AdType::new("Submitter")
    }

    /// `Negotiator`.
    pub fn negotiator() -> AdType {
        AdType::new("Negotiator")
    }

    /// `DaemonMaster`: master ads.
    pub fn master() -> AdType {
        AdType::new("DaemonMaster")
    }

    /// The canonical spelling (or the spelling given, for unknown types).
    pub fn as_str(&self) -> &str {
        &self.display
    }

    /// Whether `name` names this type (case-insensitive, aliases resolved).
    pub fn is(&self, name: &str) -> bool {
        AdType::new(name) == *self
    }
}

impl PartialEq for AdType {
    fn eq(&self, other: &AdType) -> bool {
        self.folded == other.folded
    }
}
impl Eq for AdType {}

impl Hash for AdType {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.folded.hash(state);
    }
}

impl PartialOrd for AdType {
    fn partial_cmp(&self, other: &AdType) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for AdType {
    fn cmp(&self, other: &AdType) -> Ordering {
        self.folded.cmp(&other.folded)
    }
}

impl fmt::Display for AdType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

impl From<&str> for AdType {
    fn from(name: &str) -> AdType {
        AdType::new(name)
    }
}

/// Which ads a query or a bulk invalidation looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeFilter {
    /// Every type (HTCondor's `Any`).
    Any,
    /// One type.
    Only(AdType),
}

impl TypeFilter {
    /// `Any` (any case) is [`TypeFilter::Any`]; anything else names a type.
    pub fn parse(name: &str) -> TypeFilter {
        if name.eq_ignore_ascii_case("any") {
            TypeFilter::Any
        } else {
            TypeFilter::Only(AdType::new(name))
        }
    }

    fn admits(&self, t: &AdType) -> bool {
        match self {
            TypeFilter::Any => true,
            TypeFilter::Only(only) => only == t,
        }
    }
}

impl From<AdType> for TypeFilter {
    fn from(t: AdType) -> TypeFilter {
        TypeFilter::Only(t)
    }
}

impl From<&str> for TypeFilter {
    fn from(name: &str) -> TypeFilter {
        TypeFilter::parse(name)
    }
}

/// Settings of the store.
#[derive(Clone, Copy)]
pub struct StoreConfig {
    /// Lifetime of an ad that names none (`CLASSAD_LIFETIME`), in seconds.
    pub default_lifetime: u64,
    /// Evaluate constraints in HTCondor's strict mode
    /// (`STRICT_CLASSAD_EVALUATION`).
    pub strict: bool,
    /// The local time zone, for time functions in constraints.
    pub tz: TzFn,
}

impl Default for StoreConfig {
    fn default() -> StoreConfig {
        StoreConfig {
            default_lifetime: DEFAULT_CLASSAD_LIFETIME,
            strict: false,
            tz: utc_zone,
        }
    }
}

/// What an update did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// The key was new (no ad was replaced).
    pub inserted: bool,
    /// Updates found missing by this one's sequence number.
    pub lost: u64,
    /// The lifetime the ad now has, in seconds.
    pub lifetime: u64,
}

/// An ad that left the store (expired or invalidated).
#[derive(Clone, Debug)]
pub struct RemovedAd {
    pub ad_type: AdType,
    pub name: String,
    pub ad: ClassAd,
    /// The time of its last update.
    pub last_heard_from: i64,
}

/// One ad of a [`AdStore::snapshot`].
#[derive(Clone, Debug)]
pub struct StoredAd {
    pub ad_type: AdType,
    pub name: String,
    pub ad: ClassAd,
    /// The time of its last update.
    pub last_heard_from: i64,
    /// Its lifetime, in seconds: it expires once `now` passes
    /// `last_heard_from + lifetime`.
    pub lifetime: u64,
}

/// Per-key update statistics.
#[derive(Clone, Copy, Default)]
struct Stats {
    total: u64,
    sequenced: u64,
    lost: u64,
}

struct Entry {
    name: Box<str>,
    ad: ClassAd,
    last_heard: i64,
    lifetime: u64,
    stats: Stats,
}

impl Entry {
    fn expired(&self, now: i64) -> bool {
        (now as i128) - (self.last_heard as i128) > self.lifetime as i128
    }
}

/// The ads of one type: dense (fast to scan) with a name index.
struct Table {
    ad_type: AdType,
    index: HashMap<Box<str>, usize>,
    entries: Vec<Entry>,
}

impl Table {
    fn new(ad_type: AdType) -> Table {
        Table {
            ad_type,
            index: HashMap::new(),
            entries: Vec::new(),
        }
    }

    /// Removes entry `i` in O(1) (the last entry takes its place).
    fn remove_at(&mut self, i: usize) -> Entry {
        let e = self.entries.swap_remove(i);
        self.index.remove(&e.name);
        if let Some(moved) = self.entries.get(i) {
            if let Some(slot) = self.index.get_mut(&moved.name) {
                *slot = i;
            }
        }
        e
    }

    fn removed(&self, e: Entry) -> RemovedAd {
        RemovedAd {
            ad_type: self.ad_type.clone(),
            name: e.name.into(),
            ad: e.ad,
            last_heard_from: e.last_heard,
        }
    }
}

/// Attribute names the store reads or writes, interned once.
struct Names {
    last_heard_from: Name,
    updates_total: Name,
    updates_sequenced: Name,
    updates_lost: Name,
    my_type: Name,
    name: Name,
    lifetime: Name,
    sequence: Name,
    start_time: Name,
}

impl Names {
    fn new() -> Names {
        Names {
            last_heard_from: Name::new("LastHeardFrom"),
            updates_total: Name::new("UpdatesTotal"),
            updates_sequenced: Name::new("UpdatesSequenced"),
            updates_lost: Name::new("UpdatesLost"),
            my_type: Name::new("MyType"),
            name: Name::new("Name"),
            lifetime: Name::new("ClassAdLifetime"),
            sequence: Name::new("UpdateSequenceNumber"),
            start_time: Name::new("DaemonStartTime"),
        }
    }
}

/// The collector's store of ads. See the module documentation.
pub struct AdStore {
    config: StoreConfig,
    tables: BTreeMap<AdType, Table>,
    len: usize,
    names: Names,
}

impl Default for AdStore {
    fn default() -> AdStore {
        AdStore::new(StoreConfig::default())
    }
}

impl AdStore {
    pub fn new(config: StoreConfig) -> AdStore {
        AdStore {
            config,
            tables: BTreeMap::new(),
            len: 0,
            names: Names::new(),
        }
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Changes the lifetime of ads that do not carry their own (reconfig);
    /// ads already stored keep the lifetime they were given.
    pub fn set_default_lifetime(&mut self, lifetime: u64) {
        self.config.default_lifetime = lifetime;
    }

    /// The options constraints are evaluated with at `now`.
    pub fn eval_options(&self, now: i64) -> EvalOptions {
        EvalOptions {
            strict: self.config.strict,
            now: now as f64,
            tz: self.config.tz,
            ..EvalOptions::default()
        }
    }

    /// Stores `ad` as the ad of (`ad_type`, `name`), replacing any previous
    /// one, heard from at `now`. `lifetime` (seconds) overrides the ad's
    /// `ClassAdLifetime` and the default.
    pub fn update(
        &mut self,
        ad_type: &AdType,
        name: &str,
        mut ad: ClassAd,
        lifetime: Option<u64>,
        now: i64,
    ) -> UpdateOutcome {
        let opts = self.eval_options(now);
        let names = &self.names;
        let lifetime = lifetime
            .or_else(|| {
                int_attr(&ad, &names.lifetime, opts)
                    .filter(|l| *l > 0)
                    .map(|l| l as u64)
            })
            .unwrap_or(self.config.default_lifetime);

        let table = self
            .tables
            .entry(ad_type.clone())
            .or_insert_with(|| Table::new(ad_type.clone()));
        let pos = table.index.get(name).copied();
        let (mut stats, lost) = match pos {
            Some(i) => {
                let old = &table.entries[i];
                let (sequenced, lost) = sequence_gap(&old.ad, &ad, names, opts);
                let mut s = old.stats;
                s.sequenced += sequenced as u64;
                s.lost += lost;
                (s, lost)
            }
            None => (Stats::default(), 0),
        };
        stats.total += 1;

        ad.insert(names.last_heard_from.clone(), Expr::Lit(Value::Int(now)));
        ad.insert(names.updates_total.clone(), int_lit(stats.total));
        ad.insert(names.updates_sequenced.clone(), int_lit(stats.sequenced));
        ad.insert(names.updates_lost.clone(), int_lit(stats.lost));
        if ad.lookup_sym(names.my_type.sym()).is_none() {
            ad.insert(names.my_type.clone(), Expr::Lit(ad_type.as_str().into()));
        }
        if ad.lookup_sym(names.name.sym()).is_none() {
            ad.insert(names.name.clone(), Expr::Lit(name.into()));
        }

        let entry = Entry {
            name: name.into(),
            ad,
            last_heard: now,
            lifetime,
            stats,
        };
        match pos {
            Some(i) => table.entries[i] = entry,
            None => {
                table.index.insert(name.into(), table.entries.len());
                table.entries.push(entry);
                self.len += 1;
            }
        }
        UpdateOutcome {
            inserted: pos.is_none(),
            lost,
            lifetime,
        }
    }

    /// Removes the ad of (`ad_type`, `name`); returns it if there was one.
    pub fn invalidate(&mut self, ad_type: &AdType, name: &str) -> Option<ClassAd> {
        let table = self.tables.get_mut(ad_type)?;
        let i = table.index.get(name).copied()?;
        let e = table.remove_at(i);
        self.len -= 1;
        if table.entries.is_empty() {
            self.tables.remove(ad_type);
        }
        Some(e.ad)
    }

    /// Removes every ad of the filtered types whose constraint evaluates to
    /// true (HTCondor's invalidation by query); returns them.
    pub fn invalidate_matching(
        &mut self,
        filter: &TypeFilter,
        constraint: &Expr,
        now: i64,
    ) -> Vec<RemovedAd> {
        let mut ev = Evaluator::new(self.eval_options(now));
        self.remove_where(filter, |e| ev.eval(constraint, Some(&e.ad), None).is_true())
    }

    /// Drops every ad not refreshed within its lifetime
    /// (`now - LastHeardFrom > lifetime`); returns them.
    pub fn expire(&mut self, now: i64) -> Vec<RemovedAd> {
        self.remove_where(&TypeFilter::Any, |e| e.expired(now))
    }

    fn remove_where(
        &mut self,
        filter: &TypeFilter,
        mut doomed: impl FnMut(&Entry) -> bool,
    ) -> Vec<RemovedAd> {
        let mut out = Vec::new();
        for table in self.tables.values_mut() {
            if !filter.admits(&table.ad_type) {
                continue;
            }
            let mut i = 0;
            while i < table.entries.len() {
                if doomed(&table.entries[i]) {
                    let e = table.remove_at(i);
                    out.push(table.removed(e));
                } else {
                    i += 1;
                }
            }
        }
        self.len -= out.len();
        self.tables.retain(|_, t| !t.entries.is_empty());
        out
    }

    /// The earliest time at which [`AdStore::expire`] will drop an ad, if
    /// any ad is stored.
    pub fn next_expiry(&self) -> Option<i64> {
        self.tables
            .values()
            .flat_map(|t| t.entries.iter())
            .map(|e| {
                let at = e.last_heard as i128 + e.lifetime as i128 + 1;
                at.clamp(i64::MIN as i128, i64::MAX as i128) as i64
            })
            .min()
    }

    /// The ads of the filtered types whose `constraint`, evaluated with the
    /// ad as MY at time `now`, is true (no constraint selects every ad; a
    /// constraint that is UNDEFINED, ERROR or not a boolean or number
    /// selects nothing). A non-empty `projection` keeps only the named
    /// attributes (case-insensitive; the ad's spelling and order are kept).
    /// The order of the results is the store's: deterministic for a given
    /// history of operations, otherwise unspecified.
    pub fn query(
        &self,
        filter: &TypeFilter,
        constraint: Option<&Expr>,
        projection: &[String],
        now: i64,
    ) -> Vec<ClassAd> {
        let ads = self.candidates(filter);
        select_ads(&ads, constraint, projection, self.eval_options(now), || {
            false
        })
        .unwrap_or_default()
    }

    /// The ads of the filtered types (shared handles), in the store's
    /// order: what [`select_ads`] picks from. Taking them is cheap, so a
    /// daemon can evaluate a constraint without holding the store.
    pub fn candidates(&self, filter: &TypeFilter) -> Vec<ClassAd> {
        let tables: Box<dyn Iterator<Item = &Table>> = match filter {
            TypeFilter::Any => Box::new(self.tables.values()),
            TypeFilter::Only(t) => Box::new(self.tables.get(t).into_iter()),
        };
        tables
            .flat_map(|t| t.entries.iter().map(|e| e.ad.clone()))
            .collect()
    }

    /// The number of ads [`AdStore::query`] would return.
    pub fn count(&self, filter: &TypeFilter, constraint: Option<&Expr>, now: i64) -> usize {
        let mut n = 0;
        self.select(filter, constraint, now, |_| n += 1);
        n
    }

    fn select(
        &self,
        filter: &TypeFilter,
        constraint: Option<&Expr>,
        now: i64,
        mut found: impl FnMut(&ClassAd),
    ) {
        // A literal constraint decides for every ad at once.
        let constraint = match constraint {
            Some(Expr::Lit(v)) if !v.is_true() => return,
            Some(Expr::Lit(_)) | None => None,
            Some(e) => Some(e),
        };
        let mut ev = Evaluator::new(self.eval_options(now));
        let tables: Box<dyn Iterator<Item = &Table>> = match filter {
            TypeFilter::Any => Box::new(self.tables.values()),
            TypeFilter::Only(t) => Box::new(self.tables.get(t).into_iter()),
        };
        for table in tables {
            for e in &table.entries {
                let selected = match constraint {
                    None => true,
                    Some(c) => ev.eval(c, Some(&e.ad), None).is_true(),
                };
                if selected {
                    found(&e.ad);
                }
            }
        }
    }

    /// The stored ad of (`ad_type`, `name`).
    pub fn get(&self, ad_type: &AdType, name: &str) -> Option<&ClassAd> {
        let table = self.tables.get(ad_type)?;
        table.index.get(name).map(|&i| &table.entries[i].ad)
    }

    /// Number of ads stored, of every type.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of ads stored of one type.
    pub fn len_of(&self, ad_type: &AdType) -> usize {
        self.tables.get(ad_type).map_or(0, |t| t.entries.len())
    }

    /// The types that have at least one ad, in order of their folded names.
    pub fn types(&self) -> impl Iterator<Item = &AdType> {
        self.tables.keys()
    }

    /// Every stored ad with its key and timing (types in order of their
    /// folded names, ads in the store's order).
    pub fn snapshot(&self) -> Vec<StoredAd> {
        self.tables
            .values()
            .flat_map(|t| {
                t.entries.iter().map(|e| StoredAd {
                    ad_type: t.ad_type.clone(),
                    name: e.name.to_string(),
                    ad: e.ad.clone(),
                    last_heard_from: e.last_heard,
                    lifetime: e.lifetime,
                })
            })
            .collect()
    }
}

fn int_lit(n: u64) -> Expr {
    Expr::Lit(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

/// The integer value of attribute `name` of `ad` (literals read directly,
/// other expressions evaluated).
fn int_attr(ad: &ClassAd, name: &Name, opts: EvalOptions) -> Option<i64> {
    match ad.lookup_sym(name.sym())? {
        Expr::Lit(Value::Int(i)) => Some(*i),
        Expr::Lit(v) => v.as_int(),
        _ => Evaluator::new(opts)
            .eval_attr(name.as_str(), ad, None)
            .as_int(),
    }
}

/// (sequenced, lost) for an update from `old` to `new`.
fn sequence_gap(old: &ClassAd, new: &ClassAd, names: &Names, opts: EvalOptions) -> (bool, u64) {
    let seqs = (
        int_attr(old, &names.sequence, opts),
        int_attr(new, &names.sequence, opts),
        int_attr(old, &names.start_time, opts),
        int_attr(new, &names.start_time, opts),
    );
    let (Some(old_seq), Some(new_seq), Some(old_start), Some(new_start)) = seqs else {
        return (false, 0);
    };
    let expected = old_seq as i128 + 1;
    let new_seq = new_seq as i128;
    let lost = if old_start != new_start || new_seq == expected {
        0
    } else if new_seq < expected {
        1
    } else {
        u64::try_from(new_seq - expected).unwrap_or(u64::MAX)
    };
    (true, lost)
}

/// A copy of `ad` with only the attributes whose symbols are in `syms`.
/// The ads of `ads` whose `constraint` (evaluated with each ad as MY and
/// `opts`) is true, projected as [`AdStore::query`] describes. `stop` is
/// asked between ads; `None` when it stopped the work.
pub fn select_ads(
    ads: &[ClassAd],
    constraint: Option<&Expr>,
    projection: &[String],
    opts: EvalOptions,
    mut stop: impl FnMut() -> bool,
) -> Option<Vec<ClassAd>> {
    // A literal constraint decides for every ad at once.
    let constraint = match constraint {
        Some(Expr::Lit(v)) if !v.is_true() => return Some(Vec::new()),
        Some(Expr::Lit(_)) | None => None,
        Some(e) => Some(e),
    };
    let syms: Vec<Sym> = projection.iter().map(|p| intern(p)).collect();
    let mut ev = Evaluator::new(opts);
    let mut out = Vec::new();
    for ad in ads {
        if constraint.is_some() && stop() {
            return None;
        }
        let selected = match constraint {
            None => true,
            Some(c) => ev.eval(c, Some(ad), None).is_true(),
        };
        if selected {
            out.push(if syms.is_empty() {
                ad.clone()
            } else {
                project(ad, &syms)
            });
        }
    }
    Some(out)
}

fn project(ad: &ClassAd, syms: &[Sym]) -> ClassAd {
    let mut out = ClassAd::new();
    for (n, e) in ad.iter() {
        if syms.contains(&n.sym()) {
            out.insert(n.clone(), e.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use classad::{parse_expr, parse_old_ad};

    fn slot(name: &str, memory: i64, state: &str) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Machine");
        ad.insert_value("Name", name);
        ad.insert_value("Memory", memory);
        ad.insert_value("State", state);
        ad.insert_value("OpSys", "LINUX");
        ad
    }

    fn expr(s: &str) -> Expr {
        parse_expr(s).expect("test expression parses")
    }

    fn int(ad: &ClassAd, name: &str) -> Option<i64> {
        Evaluator::default().eval_attr(name, ad, None).as_int()
    }

    fn str_attr(ad: &ClassAd, name: &str) -> Option<String> {
        Evaluator::default().eval_attr(name, ad, None).as_string()
    }

    fn names(ads: &[ClassAd]) -> Vec<String> {
        let mut v: Vec<String> = ads.iter().filter_map(|a| str_attr(a, "Name")).collect();
        v.sort();
        v
    }

    #[test]
    fn update_adds_bookkeeping() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        let out = s.update(
            &m,
            "slot1@a",
            slot("slot1@a", 2048, "Unclaimed"),
            None,
            1000,
        );
        assert!(out.inserted);
        assert_eq!(out.lifetime, DEFAULT_CLASSAD_LIFETIME);
        let ad = s.get(&m, "slot1@a").expect("stored");
        assert_eq!(int(ad, "LastHeardFrom"), Some(1000));
        assert_eq!(int(ad, "UpdatesTotal"), Some(1));
        assert_eq!(int(ad, "UpdatesSequenced"), Some(0));
        assert_eq!(int(ad, "UpdatesLost"), Some(0));
        assert_eq!(s.len(), 1);
        assert_eq!(s.len_of(&m), 1);
    }

    #[test]
    fn missing_my_type_and_name_are_filled_in() {
        let mut s = AdStore::default();
        s.update(&AdType::new("master"), "m1", ClassAd::new(), None, 5);
        let ad = s.get(&AdType::master(), "m1").expect("stored");
        assert_eq!(str_attr(ad, "MyType").as_deref(), Some("DaemonMaster"));
        assert_eq!(str_attr(ad, "Name").as_deref(), Some("m1"));
    }

    #[test]
    fn update_replaces_the_previous_ad() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        let mut first = slot("slot1@a", 1024, "Unclaimed");
        first.insert_value("OnlyInFirst", 1i64);
        s.update(&m, "slot1@a", first, None, 100);
        let out = s.update(&m, "slot1@a", slot("slot1@a", 4096, "Claimed"), None, 200);
        assert!(!out.inserted);
        assert_eq!(s.len(), 1);
        let ad = s.get(&m, "slot1@a").expect("stored");
        assert_eq!(int(ad, "Memory"), Some(4096));
        assert_eq!(str_attr(ad, "State").as_deref(), Some("Claimed"));
        assert!(ad.lookup("OnlyInFirst").is_none(), "replaced whole");
        assert_eq!(int(ad, "LastHeardFrom"), Some(200));
        assert_eq!(int(ad, "UpdatesTotal"), Some(2));
    }

    #[test]
    fn types_are_case_insensitive_and_aliased() {
        let mut s = AdStore::default();
        s.update(
            &AdType::new("machine"),
            "slot1@a",
            slot("slot1@a", 1, "Owner"),
            None,
            1,
        );
        s.update(
            &AdType::new("MACHINE"),
            "slot2@a",
            slot("slot2@a", 1, "Owner"),
            None,
            1,
        );
        s.update(&AdType::new("Master"), "a", ClassAd::new(), None, 1);
        s.update(&AdType::new("daemonmaster"), "b", ClassAd::new(), None, 1);
        s.update(&AdType::new("MyCustom"), "c", ClassAd::new(), None, 1);
        assert_eq!(s.len_of(&AdType::new("Machine")), 2);
        assert_eq!(s.len_of(&AdType::new("DAEMONMASTER")), 2);
        assert_eq!(s.len_of(&AdType::new("mycustom")), 1);
        assert!(s.get(&AdType::new("startd"), "slot2@a").is_some());
        assert!(AdType::new("Schedd").is("scheduler"));
        assert_eq!(AdType::new("schedd").as_str(), "Scheduler");
        let q = s.query(&TypeFilter::parse("mAcHiNe"), None, &[], 1);
        assert_eq!(q.len(), 2);
        assert_eq!(TypeFilter::parse("ANY"), TypeFilter::Any);
        let types: Vec<&str> = s.types().map(|t| t.as_str()).collect();
        assert_eq!(types, ["DaemonMaster", "Machine", "MyCustom"]);
    }

    #[test]
    fn expire_exactly_at_the_lifetime_boundary() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        s.update(&m, "slot1@a", slot("slot1@a", 1, "Owner"), None, 1000);
        assert_eq!(s.next_expiry(), Some(1901));
        assert!(s.expire(1899).is_empty());
        assert!(
            s.expire(1900).is_empty(),
            "now - LastHeardFrom == lifetime stays"
        );
        assert_eq!(s.len(), 1);
        let gone = s.expire(1901);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].name, "slot1@a");
        assert_eq!(gone[0].ad_type, m);
        assert_eq!(gone[0].last_heard_from, 1000);
        assert!(s.is_empty());
        assert_eq!(s.types().count(), 0);
        assert_eq!(s.next_expiry(), None);
    }

    #[test]
    fn an_update_restarts_the_lifetime() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        s.update(&m, "x", slot("x", 1, "Owner"), None, 0);
        s.update(&m, "x", slot("x", 1, "Owner"), None, 600);
        assert!(s.expire(1000).is_empty());
        assert!(s.expire(1500).is_empty());
        assert_eq!(s.expire(1501).len(), 1);
    }

    #[test]
    fn lifetimes_per_ad() {
        let mut s = AdStore::new(StoreConfig {
            default_lifetime: 100,
            ..StoreConfig::default()
        });
        let m = AdType::machine();
        s.update(&m, "default", slot("default", 1, "Owner"), None, 0);
        let mut own = slot("own", 1, "Owner");
        own.insert_value("ClassAdLifetime", 300i64);
        assert_eq!(s.update(&m, "own", own.clone(), None, 0).lifetime, 300);
        assert_eq!(s.update(&m, "arg", own, Some(50), 0).lifetime, 50);
        let mut computed = slot("computed", 1, "Owner");
        computed.insert("ClassAdLifetime", expr("2 * 100"));
        assert_eq!(s.update(&m, "computed", computed, None, 0).lifetime, 200);

        let names_of = |v: Vec<RemovedAd>| {
            let mut n: Vec<String> = v.into_iter().map(|r| r.name).collect();
            n.sort();
            n
        };
        assert_eq!(names_of(s.expire(51)), ["arg"]);
        assert_eq!(names_of(s.expire(101)), ["default"]);
        assert_eq!(names_of(s.expire(201)), ["computed"]);
        assert!(s.expire(300).is_empty());
        assert_eq!(names_of(s.expire(301)), ["own"]);
    }

    #[test]
    fn invalidate_removes_one_key() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        for i in 0..5 {
            let n = format!("slot{i}@a");
            s.update(&m, &n, slot(&n, i, "Unclaimed"), None, 10);
        }
        let gone = s
            .invalidate(&AdType::new("MACHINE"), "slot1@a")
            .expect("was there");
        assert_eq!(str_attr(&gone, "Name").as_deref(), Some("slot1@a"));
        assert!(s.invalidate(&m, "slot1@a").is_none());
        assert!(s.invalidate(&AdType::scheduler(), "slot2@a").is_none());
        assert_eq!(s.len(), 4);
        // Every remaining key is still reachable (the index survived the
        // removal in the middle).
        for i in [0, 2, 3, 4] {
            let n = format!("slot{i}@a");
            assert_eq!(s.get(&m, &n).and_then(|a| int(a, "Memory")), Some(i));
        }
        s.update(&m, "slot4@a", slot("slot4@a", 44, "Claimed"), None, 20);
        assert_eq!(s.len(), 4);
        assert_eq!(
            s.get(&m, "slot4@a").and_then(|a| int(a, "Memory")),
            Some(44)
        );
    }

    #[test]
    fn invalidate_matching_uses_a_constraint() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        for i in 0..6 {
            let n = format!("slot{i}@host{}", i % 2);
            s.update(&m, &n, slot(&n, i, "Unclaimed"), None, 10);
        }
        s.update(&AdType::scheduler(), "host0", ClassAd::new(), None, 10);
        let gone = s.invalidate_matching(
            &TypeFilter::Only(m.clone()),
            &expr(r#"regexp("@host0$", Name)"#),
            10,
        );
        assert_eq!(gone.len(), 3);
        assert_eq!(s.len_of(&m), 3);
        assert_eq!(s.len_of(&AdType::scheduler()), 1);
    }

    #[test]
    fn query_with_constraint_projection_and_type_filter() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        s.update(&m, "slot1@a", slot("slot1@a", 512, "Unclaimed"), None, 1);
        s.update(&m, "slot2@a", slot("slot2@a", 2048, "Unclaimed"), None, 1);
        s.update(&m, "slot3@a", slot("slot3@a", 4096, "Claimed"), None, 1);
        let schedd = parse_old_ad("MyType = \"Scheduler\"\nName = \"sched@a\"\nMemory = 9999\n")
            .expect("parses");
        s.update(&AdType::scheduler(), "sched@a", schedd, None, 1);

        let c = expr(r#"Memory > 1024 && State == "Unclaimed""#);
        let q = s.query(&TypeFilter::Only(m.clone()), Some(&c), &[], 1);
        assert_eq!(names(&q), ["slot2@a"]);
        assert_eq!(s.count(&TypeFilter::Only(m.clone()), Some(&c), 1), 1);

        let big = expr("Memory > 1024");
        assert_eq!(
            names(&s.query(&TypeFilter::Any, Some(&big), &[], 1)),
            ["sched@a", "slot2@a", "slot3@a"]
        );
        assert_eq!(
            names(&s.query(&TypeFilter::parse("scheduler"), Some(&big), &[], 1)),
            ["sched@a"]
        );
        assert_eq!(s.query(&TypeFilter::Any, None, &[], 1).len(), 4);
        assert!(s
            .query(&TypeFilter::parse("Negotiator"), None, &[], 1)
            .is_empty());

        // Projection: case-insensitive names, the ad's spelling kept.
        let proj = vec![
            "NAME".to_string(),
            "memory".to_string(),
            "NoSuch".to_string(),
        ];
        let q = s.query(&TypeFilter::Only(m), Some(&c), &proj, 1);
        assert_eq!(q.len(), 1);
        let attrs: Vec<&str> = q[0].names().map(|n| n.as_str()).collect();
        assert_eq!(attrs, ["Name", "Memory"]);
    }

    #[test]
    fn literal_constraints() {
        let mut s = AdStore::default();
        s.update(&AdType::machine(), "a", slot("a", 1, "Owner"), None, 1);
        assert_eq!(s.count(&TypeFilter::Any, Some(&expr("true")), 1), 1);
        assert_eq!(s.count(&TypeFilter::Any, Some(&expr("1")), 1), 1);
        assert_eq!(s.count(&TypeFilter::Any, Some(&expr("false")), 1), 0);
        assert_eq!(s.count(&TypeFilter::Any, Some(&expr("undefined")), 1), 0);
        assert_eq!(s.count(&TypeFilter::Any, Some(&expr("\"yes\"")), 1), 0);
    }

    #[test]
    fn a_constraint_that_errors_or_is_undefined_selects_nothing() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        s.update(&m, "a", slot("a", 2048, "Unclaimed"), None, 1);
        s.update(&m, "b", slot("b", 4096, "Unclaimed"), None, 1);
        for bad in [
            "Memory / 0 > 1",
            "Memory > \"lots\"",
            "State + 1",
            "NoSuchAttribute > 3",
            "error",
            "Name",
            "nosuchfunction(Memory)",
        ] {
            let c = expr(bad);
            assert!(
                s.query(&TypeFilter::Any, Some(&c), &[], 1).is_empty(),
                "{bad} selected something"
            );
        }
    }

    #[test]
    fn constraints_see_now() {
        let mut s = AdStore::default();
        s.update(&AdType::machine(), "a", slot("a", 1, "Owner"), None, 1000);
        let fresh = expr("time() - LastHeardFrom < 60");
        assert_eq!(s.count(&TypeFilter::Any, Some(&fresh), 1030), 1);
        assert_eq!(s.count(&TypeFilter::Any, Some(&fresh), 1100), 0);
    }

    #[test]
    fn sequence_numbers_count_lost_updates() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        let with_seq = |seq: i64, start: i64| {
            let mut ad = slot("a", 1, "Owner");
            ad.insert_value("UpdateSequenceNumber", seq);
            ad.insert_value("DaemonStartTime", start);
            ad
        };
        assert_eq!(s.update(&m, "a", with_seq(1, 50), None, 1).lost, 0);
        assert_eq!(s.update(&m, "a", with_seq(2, 50), None, 2).lost, 0);
        assert_eq!(s.update(&m, "a", with_seq(6, 50), None, 3).lost, 3);
        assert_eq!(s.update(&m, "a", with_seq(5, 50), None, 4).lost, 1);
        // A restarted daemon starts counting again: nothing lost.
        assert_eq!(s.update(&m, "a", with_seq(1, 99), None, 5).lost, 0);
        // No sequence number: not sequenced.
        assert_eq!(s.update(&m, "a", slot("a", 1, "Owner"), None, 6).lost, 0);
        let ad = s.get(&m, "a").expect("stored");
        assert_eq!(int(ad, "UpdatesTotal"), Some(6));
        assert_eq!(int(ad, "UpdatesSequenced"), Some(4));
        assert_eq!(int(ad, "UpdatesLost"), Some(4));
    }

    #[test]
    fn snapshot_lists_everything() {
        let mut s = AdStore::default();
        s.update(&AdType::machine(), "a", slot("a", 1, "Owner"), Some(60), 7);
        s.update(&AdType::negotiator(), "n", ClassAd::new(), None, 8);
        let snap = s.snapshot();
        assert_eq!(snap.len(), 2);
        let a = snap.iter().find(|x| x.name == "a").expect("a");
        assert_eq!(a.ad_type, AdType::machine());
        assert_eq!((a.last_heard_from, a.lifetime), (7, 60));
        let n = snap.iter().find(|x| x.name == "n").expect("n");
        assert_eq!(n.ad_type.as_str(), "Negotiator");
        assert_eq!(n.lifetime, DEFAULT_CLASSAD_LIFETIME);
    }

    #[test]
    fn names_are_case_sensitive_keys() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        s.update(&m, "Host", ClassAd::new(), None, 1);
        s.update(&m, "host", ClassAd::new(), None, 1);
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn ten_thousand_slots() {
        let mut s = AdStore::default();
        let m = AdType::machine();
        for i in 0..10_000i64 {
            let n = format!("slot{}@host{}", i % 8, i / 8);
            let state = if i % 3 == 0 { "Claimed" } else { "Unclaimed" };
            s.update(&m, &n, slot(&n, 512 * (i % 8), state), None, 1);
        }
        assert_eq!(s.len(), 10_000);
        let c = expr(r#"Memory > 1024 && State == "Unclaimed""#);
        let expected = (0..10_000i64)
            .filter(|i| 512 * (i % 8) > 1024 && i % 3 != 0)
            .count();
        assert_eq!(s.count(&TypeFilter::Only(m), Some(&c), 1), expected);
    }

    mod model {
        use std::collections::HashMap;

        use proptest::prelude::*;

        use super::*;

        #[derive(Clone, Debug)]
        enum Op {
            Update(usize, usize, Option<u64>, i64),
            Invalidate(usize, usize),
            Expire(i64),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                4 => (0..3usize, 0..12usize, proptest::option::of(0..40u64), 0..20i64)
                    .prop_map(|(t, n, l, dt)| Op::Update(t, n, l, dt)),
                1 => (0..3usize, 0..12usize).prop_map(|(t, n)| Op::Invalidate(t, n)),
                1 => (0..60i64).prop_map(Op::Expire),
            ]
        }

        const TYPES: [&str; 3] = ["Machine", "Scheduler", "Negotiator"];

        proptest! {
            /// The store agrees with a plain map of (type, name) to (last
            /// heard, lifetime) after any sequence of updates,
            /// invalidations and expiries.
            #[test]
            fn store_matches_a_simple_model(ops in proptest::collection::vec(op(), 1..120)) {
                let mut s = AdStore::new(StoreConfig {
                    default_lifetime: 25,
                    ..StoreConfig::default()
                });
                let mut model: HashMap<(usize, String), (i64, u64)> = HashMap::new();
                let mut now = 0i64;
                for op in ops {
                    match op {
                        Op::Update(t, n, life, dt) => {
                            now += dt;
                            let name = format!("n{n}");
                            let out = s.update(&AdType::new(TYPES[t]), &name, ClassAd::new(), life, now);
                            let lifetime = life.unwrap_or(25);
                            prop_assert_eq!(out.lifetime, lifetime);
                            let old = model.insert((t, name), (now, lifetime));
                            prop_assert_eq!(out.inserted, old.is_none());
                        }
                        Op::Invalidate(t, n) => {
                            let name = format!("n{n}");
                            let gone = s.invalidate(&AdType::new(TYPES[t]), &name);
                            prop_assert_eq!(gone.is_some(), model.remove(&(t, name)).is_some());
                        }
                        Op::Expire(dt) => {
                            now += dt;
                            let mut got: Vec<(String, String)> = s
                                .expire(now)
                                .into_iter()
                                .map(|r| (r.ad_type.as_str().to_string(), r.name))
                                .collect();
                            got.sort();
                            let mut want: Vec<(String, String)> = model
                                .iter()
                                .filter(|(_, (t, l))| now - t > *l as i64)
                                .map(|((ty, n), _)| (TYPES[*ty].to_string(), n.clone()))
                                .collect();
                            want.sort();
                            model.retain(|_, (t, l)| now - *t <= *l as i64);
                            prop_assert_eq!(got, want);
                        }
                    }
                    prop_assert_eq!(s.len(), model.len());
                    prop_assert_eq!(s.snapshot().len(), model.len());
                    prop_assert_eq!(s.count(&TypeFilter::Any, None, now), model.len());
                    for ((t, name), (heard, _)) in &model {
                        let ad = s.get(&AdType::new(TYPES[*t]), name);
                        prop_assert!(ad.is_some());
                        prop_assert_eq!(ad.and_then(|a| int(a, "LastHeardFrom")), Some(*heard));
                    }
                    let next = model.values().map(|(t, l)| t + *l as i64 + 1).min();
                    prop_assert_eq!(s.next_expiry(), next);
                }
            }
        }
    }
}

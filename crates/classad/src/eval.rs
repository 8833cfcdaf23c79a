//! Evaluation: scopes, attribute resolution and the operators.
//!
//! Scopes follow the reference library. Every ad in play during one
//! evaluation is a *frame* (the ad and its lexical parent). A bare name is
//! looked up in the current frame, then its parents up to the root; the
//! special names `self`, `parent`, `root`/`toplevel` (and, in HTCondor's
//! default mode, `MY` and `CurrentTime`) are resolved where the first lookup
//! fails. In a match, MY and TARGET sit under a synthesized match ad with
//! context ads binding `MY`/`TARGET`/`OTHER`; in HTCondor's default mode a
//! bare name missing from one side is looked up in the other.
//!
//! A chained ad (a proc ad over its cluster ad) is one frame: its lookups
//! fall through to the parent inside `ClassAd::lookup_sym`, and an
//! inherited expression is evaluated in the child's frame, as HTCondor
//! does.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, OnceLock};

use crate::ad::ClassAd;
use crate::ast::{BinOp, Expr, UnOp};
use crate::name::{well_known as wk, Name, Sym};
use crate::time::{self, TzFn};
use crate::value::{AbsTime, Str, Value};

pub(crate) type FrameId = u32;

/// The reference library's limit on nested attribute evaluation.
const MAX_ATTR_DEPTH: u32 = 1000;

/// Limit on nested evaluation of any kind (trees are at most 1000 deep, and
/// at most 1000 attribute references nest them).
const MAX_EVAL_NESTING: u32 = 10_000;

/// The default work budget of one evaluation, in steps (see
/// [`Evaluator::set_step_limit`]). A step is one expression node evaluated;
/// a string or list a builtin makes costs one more step per 16 bytes or
/// per element. Real policy expressions
/// and matches take a few hundred steps; a million takes some tens of
/// milliseconds.
pub const DEFAULT_STEP_LIMIT: u64 = 1_000_000;

/// Bytes of string per step charged for a string value.
const BYTES_PER_STEP: usize = 16;

/// Memoised attribute values kept in a plain vector up to this many;
/// beyond, in a hash map.
const MEMO_LINEAR: usize = 16;

/// Evaluation options. The clock, the time zone and the random seed are
/// inputs: the evaluator never reads them from the system.
#[derive(Clone, Copy)]
pub struct EvalOptions {
    /// STRICT_CLASSAD_EVALUATION: no TARGET fallback, `MY` and
    /// `CurrentTime` are ordinary names.
    pub strict: bool,
    /// "Now", in seconds since the epoch (for `time()`, `CurrentTime`, ...).
    pub now: f64,
    /// The local time zone.
    pub tz: TzFn,
    /// Seed of `random()`.
    pub seed: u64,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            strict: false,
            now: 0.0,
            tz: time::utc_zone,
            seed: 0x5eed,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    Plain,
    /// The synthesized match ad; `LEFT`, `RIGHT`, `lCtx`, `rCtx` resolve to
    /// the frames below.
    MatchRoot,
}

/// A frame's ad: shared (an `Arc` clone, for ads met during evaluation),
/// one of the static ads of the match machinery, or the caller's own ad
/// borrowed for the length of a public entry point (no reference counting
/// at all: an atomic increment and decrement per ad and evaluation were a
/// quarter of the cost of a small evaluation such as a job's Rank).
enum AdRef {
    Shared(ClassAd),
    Static(&'static ClassAd),
    Borrowed(BorrowedAd),
}

/// A pointer to an ad the caller of a public entry point lent for the
/// call. Frames holding one are dropped before the entry point returns
/// (`Evaluator::end`), and no frame is read outside an evaluation, so the
/// pointee outlives every use (see also [`ExprRef`]).
struct BorrowedAd(*const ClassAd);

// SAFETY: a `BorrowedAd` stands for a `&ClassAd` (and `ClassAd` is `Send`
// and `Sync`); it is only read during the entry point that lent it, by the
// thread running that entry point, and no frame holds one between calls
// (`Evaluator::end`; `reset` drops any left by a panic before a frame is
// read). So the evaluator stays `Send` and `Sync`, as daemons need.
#[allow(unsafe_code)]
unsafe impl Send for BorrowedAd {}
#[allow(unsafe_code)]
unsafe impl Sync for BorrowedAd {}

impl BorrowedAd {
    #[allow(unsafe_code)]
    #[inline]
    fn get<'x>(&self) -> &'x ClassAd {
        // SAFETY: the ad is borrowed by the public entry point that made
        // this frame, for the whole call; the frame does not outlive it.
        unsafe { &*self.0 }
    }
}

impl std::ops::Deref for AdRef {
    type Target = ClassAd;
    #[inline]
    fn deref(&self) -> &ClassAd {
        match self {
            AdRef::Shared(a) => a,
            AdRef::Static(a) => a,
            AdRef::Borrowed(a) => a.get(),
        }
    }
}

pub(crate) struct Frame {
    ad: AdRef,
    parent: Option<FrameId>,
    /// HTCondor's alternate scope: the other side of a match.
    alt: Option<FrameId>,
    kind: FrameKind,
}

/// A value during evaluation: like [`Value`], but lists and ads remember
/// the scope they live in.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    Undefined,
    Error,
    Bool(bool),
    Int(i64),
    Real(f64),
    Str(Str),
    Abs(AbsTime),
    Rel(f64),
    List(Arc<Vec<Expr>>, Option<FrameId>),
    Ad(FrameId),
}

impl Val {
    pub(crate) fn str(s: impl AsRef<[u8]>) -> Val {
        Val::Str(Arc::from(s.as_ref()))
    }
    pub(crate) fn is_undef(&self) -> bool {
        matches!(self, Val::Undefined)
    }
    pub(crate) fn is_err(&self) -> bool {
        matches!(self, Val::Error)
    }
}

/// A pointer to an expression inside an ad held by a frame.
///
/// Evaluation needs `&mut self` while it walks expressions that live inside
/// the frames' ads, which the borrow checker cannot see are disjoint: the
/// expressions live in the `Arc`-shared attribute storage of a `ClassAd`
/// (never in the `frames` vector itself; for a chained ad, in its parent's
/// storage, which the child keeps alive), frames are only ever appended
/// during an evaluation, ads are never mutated through a frame, and frames
/// are dropped only by `reset()`, which runs at the public entry points
/// before evaluation starts (never reentrantly: builtins get no access to
/// them). So the pointee outlives every use of an `ExprRef`.
#[derive(Clone, Copy)]
struct ExprRef(*const Expr);

impl ExprRef {
    /// The expression. Sound only while the frame the expression was found
    /// in is alive, which this module guarantees for the whole evaluation
    /// (see the type's documentation); `ExprRef` never leaves this module.
    #[allow(unsafe_code)]
    fn get<'x>(self) -> &'x Expr {
        // SAFETY: the pointee lives in an ad owned by a live frame; frames
        // are not dropped before the evaluation that created this ExprRef
        // ends (see above).
        unsafe { &*self.0 }
    }
}

enum Found {
    Expr(ExprRef, FrameId),
    Val(Val),
    Undef,
    Fail,
}

fn match_ads() -> &'static (ClassAd, ClassAd, ClassAd) {
    static ADS: OnceLock<(ClassAd, ClassAd, ClassAd)> = OnceLock::new();
    ADS.get_or_init(|| {
        let p = |s: &str| crate::parser::parse_ad(s).unwrap_or_default();
        (
            p(
                "[symmetricMatch = RIGHT.requirements && LEFT.requirements; \
               leftMatchesRight = RIGHT.requirements; rightMatchesLeft = LEFT.requirements; \
               leftRankValue = LEFT.rank; rightRankValue = RIGHT.rank]",
            ),
            p("[other = .RIGHT; target = .RIGHT; my = .LEFT; ad = .LEFT]"),
            p("[other = .LEFT; target = .LEFT; my = .RIGHT; ad = .RIGHT]"),
        )
    })
}

const ROOT: FrameId = 0;
const LCTX: FrameId = 1;
const RCTX: FrameId = 2;
const LEFT: FrameId = 3;
const RIGHT: FrameId = 4;

/// The identity of one attribute evaluation: the expression (by address:
/// it lives in an ad some frame keeps alive for the whole evaluation), the
/// frame it is evaluated in and the root scope in force.
#[derive(Clone, Copy, PartialEq, Eq)]
struct MemoKey {
    expr: usize,
    frame: FrameId,
    root: Option<FrameId>,
}

impl Hash for MemoKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let root = self.root.map_or(0, |r| r as u64 + 1);
        let x = (self.expr as u64)
            ^ ((self.frame as u64) << 40).rotate_left(7)
            ^ root.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        state.write_u64(x);
    }
}

#[derive(Default)]
struct MemoHasher(u64);
impl Hasher for MemoHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(5) ^ *b as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (i ^ (i >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
}

/// Attribute values computed during the current evaluation.
#[derive(Default)]
struct Memo {
    small: Vec<(MemoKey, Val)>,
    map: HashMap<MemoKey, Val, BuildHasherDefault<MemoHasher>>,
}

impl Memo {
    #[inline]
    fn get(&self, key: &MemoKey) -> Option<&Val> {
        if self.map.is_empty() {
            self.small.iter().find(|(k, _)| k == key).map(|(_, v)| v)
        } else {
            self.map.get(key)
        }
    }

    fn insert(&mut self, key: MemoKey, v: Val) {
        if self.map.is_empty() {
            if self.small.len() < MEMO_LINEAR {
                self.small.push((key, v));
                return;
            }
            self.map.extend(self.small.drain(..));
        }
        self.map.insert(key, v);
    }

    fn clear(&mut self) {
        self.small.clear();
        if self.map.is_empty() {
            // (clearing an empty table still walks its control bytes)
        } else if self.map.capacity() > 4096 {
            self.map = HashMap::default();
        } else {
            self.map.clear();
        }
    }
}

/// Evaluates expressions. Reusable: buffers are kept between evaluations.
///
/// # Cost
///
/// Within one evaluation (one call of [`eval`](Evaluator::eval),
/// [`eval_attr`](Evaluator::eval_attr) or one match), the value of each
/// attribute is computed once per scope and remembered, as HTCondor's
/// library does: ads whose attributes refer to each other many times
/// (`a0 = a1 + a1; a1 = a2 + a2; ...`) cost time linear in their size,
/// not exponential. Every evaluation also has a work budget
/// ([`DEFAULT_STEP_LIMIT`] steps unless [`set_step_limit`]
/// (Evaluator::set_step_limit) says otherwise); an evaluation that runs out
/// of it stops at once and its value is ERROR, like one that nests too
/// deeply.
pub struct Evaluator {
    pub(crate) frames: Vec<Frame>,
    pub(crate) root: Option<FrameId>,
    /// Attributes being evaluated (by expression address), with the
    /// number of cycle hits when each started.
    in_progress: Vec<(usize, u64)>,
    /// How many times a cycle was found (an attribute needed while its
    /// own value was being computed). A value whose computation met a
    /// cycle depends on what was in progress and is not remembered.
    cycle_hits: u64,
    memo: Memo,
    /// Whether values are remembered (always, except in tests comparing
    /// against plain evaluation).
    memoise: bool,
    /// Work done in this evaluation, and the budget.
    steps: u64,
    step_limit: u64,
    /// The budget ran out: the whole evaluation is ERROR.
    exhausted: bool,
    attr_depth: u32,
    pub(crate) failed: bool,
    pub(crate) matching: bool,
    /// Set while an evaluation runs: the public entry points reset the
    /// frames and must not be reentered from inside an evaluation.
    running: bool,
    /// Recursion depth of `eval_in`.
    nesting: u32,
    pub(crate) opts: EvalOptions,
    rng: u64,
}

impl Default for Evaluator {
    fn default() -> Self {
        Evaluator::new(EvalOptions::default())
    }
}

impl Evaluator {
    pub fn new(opts: EvalOptions) -> Evaluator {
        Evaluator {
            frames: Vec::new(),
            root: None,
            in_progress: Vec::new(),
            cycle_hits: 0,
            memo: Memo::default(),
            memoise: true,
            steps: 0,
            step_limit: DEFAULT_STEP_LIMIT,
            exhausted: false,
            attr_depth: 0,
            failed: false,
            matching: false,
            running: false,
            nesting: 0,
            opts,
            rng: opts.seed | 1,
        }
    }

    pub fn options(&self) -> &EvalOptions {
        &self.opts
    }

    pub fn set_options(&mut self, opts: EvalOptions) {
        self.opts = opts;
    }

    /// Sets the work budget of each evaluation, in steps (see
    /// [`DEFAULT_STEP_LIMIT`]); an evaluation that needs more is ERROR.
    pub fn set_step_limit(&mut self, steps: u64) {
        self.step_limit = steps;
    }

    /// The work budget of each evaluation, in steps.
    pub fn step_limit(&self) -> u64 {
        self.step_limit
    }

    /// Whether the last evaluation ran out of its work budget (its value
    /// was then ERROR).
    pub fn budget_exhausted(&self) -> bool {
        self.exhausted
    }

    /// Turns the remembering of attribute values off or on: for tests
    /// that check it never changes a result. Without it, evaluation can
    /// take time exponential in the size of the ads.
    #[doc(hidden)]
    pub fn set_memoisation(&mut self, on: bool) {
        self.memoise = on;
    }

    /// Steps the last evaluation took.
    pub fn steps_taken(&self) -> u64 {
        self.steps
    }

    fn reset(&mut self) {
        self.frames.clear();
        self.in_progress.clear();
        self.cycle_hits = 0;
        self.memo.clear();
        self.steps = 0;
        self.exhausted = false;
        self.attr_depth = 0;
        self.nesting = 0;
        self.failed = false;
        self.matching = false;
        self.root = None;
    }

    fn push_frame(&mut self, ad: ClassAd, parent: Option<FrameId>) -> FrameId {
        self.push_frame_ref(AdRef::Shared(ad), parent)
    }

    fn push_frame_ref(&mut self, ad: AdRef, parent: Option<FrameId>) -> FrameId {
        self.frames.push(Frame {
            ad,
            parent,
            alt: None,
            kind: FrameKind::Plain,
        });
        (self.frames.len() - 1) as FrameId
    }

    /// Ends a public entry point: drops the frames, among them those that
    /// borrow the caller's ads.
    fn end(&mut self) {
        self.running = false;
        self.frames.clear();
    }

    /// Sets up the scopes: none, MY only, or a match of MY and TARGET.
    /// Returns the frame expressions are evaluated in.
    fn setup(&mut self, my: Option<&ClassAd>, target: Option<&ClassAd>) -> Option<FrameId> {
        self.reset();
        match (my, target) {
            (None, _) => None,
            (Some(m), None) => {
                let f = self.push_frame_ref(AdRef::Borrowed(BorrowedAd(m)), None);
                self.root = Some(f);
                Some(f)
            }
            (Some(m), Some(t)) => {
                let (root, lctx, rctx) = match_ads();
                let frame = |ad, parent, kind| Frame {
                    ad: AdRef::Static(ad),
                    parent,
                    alt: None,
                    kind,
                };
                self.frames.push(frame(root, None, FrameKind::MatchRoot));
                self.frames.push(frame(lctx, Some(ROOT), FrameKind::Plain));
                self.frames.push(frame(rctx, Some(ROOT), FrameKind::Plain));
                self.push_frame_ref(AdRef::Borrowed(BorrowedAd(m)), Some(LCTX));
                self.push_frame_ref(AdRef::Borrowed(BorrowedAd(t)), Some(RCTX));
                self.frames[LEFT as usize].alt = Some(RIGHT);
                self.frames[RIGHT as usize].alt = Some(LEFT);
                self.root = Some(ROOT);
                self.matching = true;
                Some(LEFT)
            }
        }
    }

    /// Evaluates `expr` with `my` as its scope and, if given, `target` as
    /// the other side of a match.
    pub fn eval(&mut self, expr: &Expr, my: Option<&ClassAd>, target: Option<&ClassAd>) -> Value {
        if self.running {
            debug_assert!(false, "Evaluator::eval called from inside an evaluation");
            return Value::Error;
        }
        let cur = self.setup(my, target);
        self.running = true;
        let v = self.eval_in(expr, cur);
        let v = self.finish(v);
        self.end();
        v
    }

    /// Evaluates attribute `name` of `my` (UNDEFINED if absent), with
    /// `target` as the other side of a match if given.
    pub fn eval_attr(&mut self, name: &str, my: &ClassAd, target: Option<&ClassAd>) -> Value {
        self.eval_sym(crate::name::intern(name), my, target)
    }

    pub(crate) fn eval_sym(&mut self, sym: Sym, my: &ClassAd, target: Option<&ClassAd>) -> Value {
        if self.running {
            debug_assert!(
                false,
                "Evaluator::eval_attr called from inside an evaluation"
            );
            return Value::Error;
        }
        let cur = self.setup(Some(my), target);
        self.running = true;
        let frame = cur.unwrap_or(ROOT);
        let v = match self.frame_lookup(frame, sym) {
            Some(found) => self.eval_hit(found),
            None => Val::Undefined,
        };
        let v = self.finish(v);
        self.end();
        v
    }

    /// Evaluates attribute `left_sym` of `left` and `right_sym` of `right`
    /// in one match of the two ads (as HTCondor's match ad evaluates
    /// `LEFT.requirements` and `RIGHT.requirements`).
    pub(crate) fn eval_pair(
        &mut self,
        left: &ClassAd,
        left_sym: Sym,
        right: &ClassAd,
        right_sym: Sym,
    ) -> (Value, Value) {
        if self.running {
            debug_assert!(
                false,
                "Evaluator::eval_pair called from inside an evaluation"
            );
            return (Value::Error, Value::Error);
        }
        self.setup(Some(left), Some(right));
        self.running = true;
        let side = |ev: &mut Evaluator, frame: FrameId, sym: Sym| {
            ev.failed = ev.exhausted;
            ev.in_progress.clear();
            ev.attr_depth = 0;
            let v = match ev.frame_lookup(frame, sym) {
                Some(found) => ev.eval_hit(found),
                None => Val::Undefined,
            };
            ev.finish(v)
        };
        let l = side(self, LEFT, left_sym);
        let r = side(self, RIGHT, right_sym);
        self.end();
        (l, r)
    }

    fn finish(&mut self, v: Val) -> Value {
        if self.failed || self.exhausted {
            return Value::Error;
        }
        self.to_value(v)
    }

    pub(crate) fn to_value(&self, v: Val) -> Value {
        match v {
            Val::Undefined => Value::Undefined,
            Val::Error => Value::Error,
            Val::Bool(b) => Value::Bool(b),
            Val::Int(i) => Value::Int(i),
            Val::Real(r) => Value::Real(r),
            Val::Str(s) => Value::Str(s),
            Val::Abs(t) => Value::AbsTime(t),
            Val::Rel(r) => Value::RelTime(r),
            Val::List(items, _) => Value::List(items),
            Val::Ad(f) => Value::Ad(self.frame_ad(f)),
        }
    }

    /// The ad of a frame; the match root is materialized with its sides.
    pub(crate) fn frame_ad(&self, f: FrameId) -> ClassAd {
        let fr = &self.frames[f as usize];
        if fr.kind == FrameKind::MatchRoot {
            let mut ad = (*fr.ad).clone();
            ad.insert("lCtx", Expr::Ad((*self.frames[LCTX as usize].ad).clone()));
            ad.insert("rCtx", Expr::Ad((*self.frames[RCTX as usize].ad).clone()));
            ad.insert("LEFT", Expr::Ad((*self.frames[LEFT as usize].ad).clone()));
            ad.insert("RIGHT", Expr::Ad((*self.frames[RIGHT as usize].ad).clone()));
            return ad;
        }
        (*fr.ad).clone()
    }

    pub(crate) fn fail(&mut self) -> Val {
        self.failed = true;
        Val::Error
    }

    /// Charges `steps` of work to the budget; false (and the evaluation
    /// failed for good) when it is used up.
    #[inline]
    pub(crate) fn charge(&mut self, steps: u64) -> bool {
        self.steps = self.steps.saturating_add(steps);
        if self.steps > self.step_limit {
            self.exhausted = true;
            self.failed = true;
            return false;
        }
        !self.exhausted
    }

    /// Bytes of string output that the rest of the budget allows (for
    /// builtins whose output can be much larger than their inputs).
    pub(crate) fn byte_allowance(&self) -> usize {
        let left = self.step_limit.saturating_sub(self.steps);
        usize::try_from(left)
            .unwrap_or(usize::MAX)
            .saturating_mul(BYTES_PER_STEP)
    }

    pub(crate) fn now(&self) -> f64 {
        self.opts.now
    }

    /// xorshift64*: deterministic given the seed in the options.
    pub(crate) fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn is_strict(&self) -> bool {
        self.opts.strict
    }

    // ----- scopes -------------------------------------------------------

    /// Looks `sym` up in the ad of frame `f` only.
    #[inline]
    fn frame_lookup(&self, f: FrameId, sym: Sym) -> Option<Found> {
        let fr = &self.frames[f as usize];
        if fr.kind == FrameKind::MatchRoot {
            let side = match sym {
                wk::LEFT => Some(LEFT),
                wk::RIGHT => Some(RIGHT),
                wk::LCTX => Some(LCTX),
                wk::RCTX => Some(RCTX),
                _ => None,
            };
            if let Some(s) = side {
                return Some(Found::Val(Val::Ad(s)));
            }
        }
        fr.ad.lookup_sym(sym).map(|e| Found::Expr(ExprRef(e), f))
    }

    /// The reference library's `LookupInScope`: the current frame, then its
    /// lexical parents up to the root; special names where the first
    /// lookup fails.
    #[inline]
    fn lookup_in_scope(&self, start: FrameId, sym: Sym) -> Found {
        // Fast path in a match: from a side's own frame, TARGET and OTHER
        // name the other side (what its context ad binds them to), unless
        // the side's ad defines such a name itself.
        if let Some(other) = self.match_other_side(start, sym) {
            return Found::Val(Val::Ad(other));
        }
        // The common case: the name is in the frame's own ad.
        let fr = &self.frames[start as usize];
        if fr.kind == FrameKind::Plain {
            if let Some(e) = fr.ad.lookup_sym(sym) {
                return Found::Expr(ExprRef(e), start);
            }
        }
        self.lookup_in_scope_walk(start, sym)
    }

    /// The side of a match that `TARGET` or `OTHER` names from the frame of
    /// the other side (what its context ad binds them to), unless that
    /// side's ad defines such a name itself.
    #[inline]
    fn match_other_side(&self, start: FrameId, sym: Sym) -> Option<FrameId> {
        if self.matching
            && (start == LEFT || start == RIGHT)
            && matches!(sym, wk::TARGET | wk::OTHER)
            && !self.frames[start as usize].ad.defines_scope_names()
        {
            Some(if start == LEFT { RIGHT } else { LEFT })
        } else {
            None
        }
    }

    /// The rest of [`Evaluator::lookup_in_scope`]: the walk up the scopes.
    fn lookup_in_scope_walk(&self, start: FrameId, sym: Sym) -> Found {
        let mut current = start;
        loop {
            if let Some(found) = self.frame_lookup(current, sym) {
                return found;
            }
            let superscope = if Some(current) == self.root {
                None
            } else {
                self.frames[current as usize].parent
            };
            let special = match sym {
                wk::TOPLEVEL | wk::ROOT | wk::SELF | wk::PARENT => true,
                wk::MY | wk::CURRENT_TIME => !self.opts.strict,
                _ => false,
            };
            if !special {
                match superscope {
                    Some(s) if s != start => current = s,
                    _ => return Found::Undef,
                }
                continue;
            }
            return match sym {
                wk::TOPLEVEL | wk::ROOT => match self.root {
                    Some(r) => Found::Val(Val::Ad(r)),
                    None => Found::Fail,
                },
                wk::SELF | wk::MY => Found::Val(Val::Ad(current)),
                wk::PARENT => match superscope {
                    Some(p) => Found::Val(Val::Ad(p)),
                    None => Found::Undef,
                },
                _ => Found::Val(Val::Int(self.opts.now as i64)),
            };
        }
    }

    /// Looks up a name from `start`, falling back (HTCondor's default mode,
    /// bare names only) to the frame's alternate scope: the other side of a
    /// match.
    #[inline]
    fn lookup_with_fallback(&self, start: FrameId, sym: Sym, bare: bool) -> Found {
        let found = self.lookup_in_scope(start, sym);
        if bare && matches!(found, Found::Undef) && !self.opts.strict {
            if let Some(alt) = self.frames[start as usize].alt {
                return self.lookup_in_scope(alt, sym);
            }
        }
        found
    }

    fn eval_hit(&mut self, found: Found) -> Val {
        match found {
            Found::Expr(e, f) => self.eval_found(e, f),
            Found::Val(v) => v,
            Found::Undef => Val::Undefined,
            Found::Fail => self.fail(),
        }
    }

    fn eval_found(&mut self, e: ExprRef, frame: FrameId) -> Val {
        // Most attributes are literals: no cycle or depth bookkeeping needed.
        if let Expr::Lit(v) = e.get() {
            return lit(v);
        }
        let key = e.0 as usize;
        let memo_key = MemoKey {
            expr: key,
            frame,
            root: self.root,
        };
        // A remembered value is the value a fresh computation would give
        // unless a cycle was met since the outermost attribute in
        // progress started (then what is in progress can matter).
        let clean = self.memoise
            && self
                .in_progress
                .first()
                .is_none_or(|&(_, hits)| hits == self.cycle_hits);
        if clean {
            if let Some(v) = self.memo.get(&memo_key) {
                return v.clone();
            }
        }
        if self.in_progress.iter().any(|&(k, _)| k == key) {
            // A cycle: the reference library yields UNDEFINED.
            self.cycle_hits += 1;
            return Val::Undefined;
        }
        if self.attr_depth >= MAX_ATTR_DEPTH {
            return self.fail();
        }
        self.attr_depth += 1;
        let hits_before = self.cycle_hits;
        self.in_progress.push((key, hits_before));
        let expr = e.get();
        // Attribute chains can nest deeply; grow the stack on demand (checked
        // every few levels: the check is not free).
        let v = if self.attr_depth.is_multiple_of(8) {
            stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || {
                self.eval_in(expr, Some(frame))
            })
        } else {
            self.eval_in(expr, Some(frame))
        };
        self.in_progress.pop();
        self.attr_depth -= 1;
        // Remember values computed without meeting a cycle or a failure
        // (a failure makes the whole evaluation ERROR anyway, unless a
        // builtin contains it, and then it must happen again).
        if self.memoise && self.cycle_hits == hits_before && !self.failed {
            self.memo.insert(memo_key, v.clone());
        }
        v
    }

    /// Looks up a bare (or absolute) name and evaluates it.
    fn eval_name(&mut self, sym: Sym, cur: Option<FrameId>, absolute: bool) -> Val {
        let start = if absolute {
            match self.root {
                Some(r) => r,
                None => return self.fail(),
            }
        } else {
            match cur {
                Some(c) => c,
                None => return Val::Undefined,
            }
        };
        let found = self.lookup_with_fallback(start, sym, !absolute);
        self.eval_hit(found)
    }

    /// Looks up `sym` starting in frame `f` (selection `x.sym`).
    pub(crate) fn select_in(&mut self, f: FrameId, sym: Sym) -> Val {
        let found = self.lookup_in_scope(f, sym);
        self.eval_hit(found)
    }

    /// Looks up `sym` only in the ad of frame `f` (subscript `ad["name"]`).
    pub(crate) fn index_in(&mut self, f: FrameId, sym: Sym) -> Val {
        match self.frame_lookup(f, sym) {
            Some(found) => self.eval_hit(found),
            None => Val::Undefined,
        }
    }

    /// The expression bound to a name in scope (for `unparse()` and
    /// friends), with the frame it lives in.
    pub(crate) fn find_attr_expr(
        &mut self,
        e: &Expr,
        cur: Option<FrameId>,
    ) -> Option<(Expr, FrameId)> {
        let (start, sym, bare) = match e {
            Expr::Attr(n) => (cur?, n.sym, true),
            Expr::AbsAttr(n) => (self.root?, n.sym, false),
            Expr::Select(base, n) => match self.eval_in(base, cur) {
                Val::Ad(f) => (f, n.sym, false),
                _ => return None,
            },
            _ => return None,
        };
        match self.lookup_with_fallback(start, sym, bare) {
            Found::Expr(e, f) => Some((e.get().clone(), f)),
            _ => None,
        }
    }

    /// The ad the reference library's evaluation state is left in after it
    /// dereferences the attribute reference `e` without evaluating it (as
    /// `evalInEachContext` does with its first argument): the ad the name
    /// was found in, or else the outermost ad its search visited (in a match,
    /// with the name in neither ad, the match ad itself). `cur` for anything
    /// that is not a reference to look up.
    pub(crate) fn deref_scope(&mut self, e: &Expr, cur: Option<FrameId>) -> Option<FrameId> {
        let (start, sym, bare) = match e {
            Expr::Attr(n) => match cur {
                Some(c) => (c, n.sym, true),
                None => return cur,
            },
            Expr::AbsAttr(n) => match self.root {
                Some(r) => (r, n.sym, false),
                None => return cur,
            },
            Expr::Select(base, n) => match self.eval_in(base, cur) {
                Val::Ad(f) => (f, n.sym, false),
                _ => return cur,
            },
            _ => return cur,
        };
        let (found, last) = self.search_end(start, sym);
        if bare && !found && !self.opts.strict {
            if let Some(alt) = self.frames[start as usize].alt {
                return Some(self.search_end(alt, sym).1);
            }
        }
        Some(last)
    }

    /// Walks the lexical scopes from `start` as [`Evaluator::lookup_in_scope`]
    /// does: whether `sym` was found, and the frame the walk ended in.
    fn search_end(&self, start: FrameId, sym: Sym) -> (bool, FrameId) {
        let mut current = start;
        loop {
            if self.frame_lookup(current, sym).is_some() {
                return (true, current);
            }
            let superscope = if Some(current) == self.root {
                None
            } else {
                self.frames[current as usize].parent
            };
            match superscope {
                Some(s) if s != start => current = s,
                _ => return (false, current),
            }
        }
    }

    /// The alternate scope (other side of a match) of frame `f`.
    pub(crate) fn frame_alt(&self, f: FrameId) -> Option<FrameId> {
        self.frames[f as usize].alt
    }

    /// Sets the alternate scope of frame `f`.
    pub(crate) fn set_frame_alt(&mut self, f: FrameId, alt: Option<FrameId>) {
        if self.frames[f as usize].alt != alt {
            // Values remembered so far may have looked names up through
            // the old alternate scope.
            self.memo.clear();
            self.frames[f as usize].alt = alt;
        }
    }

    pub(crate) fn frame_parent(&self, f: FrameId) -> Option<FrameId> {
        self.frames[f as usize].parent
    }

    pub(crate) fn frame_of(&self, f: FrameId) -> &ClassAd {
        &self.frames[f as usize].ad
    }

    /// Makes a detached frame for an ad built during evaluation.
    pub(crate) fn new_frame(&mut self, ad: ClassAd, parent: Option<FrameId>) -> FrameId {
        self.push_frame(ad, parent)
    }

    /// Evaluates `e` in a fresh context scoped at `scope` (a new root), as
    /// the reference does for `eval()` and list selection.
    pub(crate) fn eval_rooted(&mut self, e: &Expr, scope: Option<FrameId>) -> Val {
        let saved_root = self.root;
        let mut r = scope;
        if let Some(mut f) = scope {
            let mut steps = 0;
            while let Some(p) = self.frames[f as usize].parent {
                f = p;
                steps += 1;
                if steps > 10_000 {
                    break;
                }
            }
            r = Some(f);
        }
        self.root = r;
        let v = self.eval_in(e, scope);
        self.root = saved_root;
        v
    }

    // ----- expressions --------------------------------------------------

    /// Evaluates `e` with `cur` as the current scope.
    pub(crate) fn eval_in(&mut self, mut e: &Expr, cur: Option<FrameId>) -> Val {
        // Parentheses only matter for printing.
        while let Expr::Paren(inner) = e {
            e = inner;
        }
        if !self.enter() {
            return Val::Error;
        }
        if let Expr::Lit(v) = e {
            return lit(v);
        }
        self.nested(|ev| ev.eval_node(e, cur))
    }

    /// The bookkeeping of every node evaluated: the nesting limit and the
    /// work budget (one step per node, plus the size of the strings and
    /// lists builtins make, `charge_made`). False (the evaluation failed)
    /// when either is exceeded.
    #[inline]
    fn enter(&mut self) -> bool {
        if self.nesting >= MAX_EVAL_NESTING {
            // Unbounded recursion that no attribute cycle explains (e.g. a
            // list whose element subscripts the list itself): the evaluation
            // fails instead of exhausting memory.
            self.fail();
            return false;
        }
        self.steps += 1;
        if self.steps > self.step_limit || self.exhausted {
            self.exhausted = true;
            self.fail();
            return false;
        }
        true
    }

    /// Runs `f` one nesting level deeper. Trees are at most `MAX_DEPTH`
    /// deep, but attribute references nest them; make sure the stack can
    /// take the next stretch (checked every few levels: the check is not
    /// free).
    #[inline]
    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Val) -> Val {
        self.nesting += 1;
        let v = if self.nesting.is_multiple_of(8) {
            stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || f(self))
        } else {
            f(self)
        };
        self.nesting -= 1;
        v
    }

    /// Evaluates an operand of a binary operator as [`Evaluator::eval_in`]
    /// does (same steps, same result), but a literal, or a reference
    /// (`name`, `TARGET.name`, `MY.name`) to an attribute whose expression
    /// is a literal, is returned in place rather than copied.
    fn eval_operand<'x>(&mut self, mut e: &'x Expr, cur: Option<FrameId>) -> Operand<'x> {
        while let Expr::Paren(inner) = e {
            e = inner;
        }
        let found = match (e, cur) {
            (Expr::Lit(v), _) => {
                return if self.enter() {
                    Operand::Lit(v)
                } else {
                    Operand::Val(Val::Error)
                };
            }
            (Expr::Attr(n), Some(c)) => {
                if !self.enter() {
                    return Operand::Val(Val::Error);
                }
                self.lookup_with_fallback(c, n.sym, true)
            }
            (Expr::Select(base, n), Some(c)) => {
                let Expr::Attr(b) = &**base else {
                    return Operand::Val(self.eval_in(e, cur));
                };
                if !matches!(b.sym, wk::TARGET | wk::MY | wk::OTHER) {
                    return Operand::Val(self.eval_in(e, cur));
                }
                if !self.enter() {
                    return Operand::Val(Val::Error);
                }
                // as `eval_select` does
                if let Some(other) = self.match_other_side(c, b.sym) {
                    self.lookup_in_scope(other, n.sym)
                } else {
                    match self.lookup_with_fallback(c, b.sym, true) {
                        Found::Val(Val::Ad(f)) => self.lookup_in_scope(f, n.sym),
                        other => {
                            let sym = n.sym;
                            return Operand::Val(self.nested(|ev| {
                                let v = ev.eval_hit(other);
                                ev.select_value(v, sym, cur)
                            }));
                        }
                    }
                }
            }
            _ => return Operand::Val(self.eval_in(e, cur)),
        };
        if let Found::Expr(x, _) = &found {
            if let Expr::Lit(v) = x.get::<'x>() {
                return Operand::Lit(v);
            }
        }
        Operand::Val(self.nested(|ev| ev.eval_hit(found)))
    }

    /// Charges the size of a value a builtin made (one step per
    /// [`BYTES_PER_STEP`] bytes of string, per list element): only builtins
    /// make new strings and lists (an operator never concatenates; a list
    /// literal, a reference, a selection or a subscript passes on a value
    /// already paid for).
    fn charge_made(&mut self, v: Val) -> Val {
        let size = match &v {
            Val::Str(s) => s.len() / BYTES_PER_STEP,
            Val::List(items, _) => items.len(),
            _ => 0,
        };
        if size > 0 && !self.charge(size as u64) {
            return Val::Error;
        }
        v
    }

    fn eval_node(&mut self, e: &Expr, cur: Option<FrameId>) -> Val {
        match e {
            Expr::Lit(v) => lit(v),
            Expr::RelTimeStr(r) => Val::Real(*r),
            Expr::Attr(n) => self.eval_name(n.sym, cur, false),
            Expr::AbsAttr(n) => self.eval_name(n.sym, cur, true),
            Expr::Select(base, n) => self.eval_select(base, n, cur),
            Expr::Index(base, idx) => self.eval_index(base, idx, cur),
            Expr::Unary(op, a) => {
                let v = self.eval_in(a, cur);
                unary(*op, v)
            }
            Expr::Binary(BinOp::And, a, b) => self.eval_and(a, b, cur),
            Expr::Binary(BinOp::Or, a, b) => self.eval_or(a, b, cur),
            Expr::Binary(op, a, b) => {
                let x = self.eval_operand(a, cur);
                let y = self.eval_operand(b, cur);
                binary_view(*op, &x.view(), &y.view())
            }
            Expr::Cond(c) => {
                let v = self.eval_in(&c.0, cur);
                match truth(&v) {
                    Truth::True => self.eval_in(&c.1, cur),
                    Truth::False => self.eval_in(&c.2, cur),
                    Truth::Undefined => Val::Undefined,
                    Truth::Error => Val::Error,
                }
            }
            Expr::Elvis(a, b) => {
                let v = self.eval_in(a, cur);
                if v.is_undef() {
                    self.eval_in(b, cur)
                } else {
                    v
                }
            }
            Expr::Paren(a) => self.eval_in(a, cur),
            Expr::Call(c) => match c.func {
                Some(f) => {
                    let v = crate::functions::call(f, self, &c.args, cur);
                    self.charge_made(v)
                }
                None => Val::Error,
            },
            Expr::List(items) => Val::List(items.clone(), cur),
            Expr::Ad(ad) => Val::Ad(self.push_frame(ad.clone(), cur)),
        }
    }

    fn eval_select(&mut self, base: &Expr, n: &Name, cur: Option<FrameId>) -> Val {
        // `TARGET.x`, `MY.x`, `OTHER.x`: resolve the scope name directly.
        let v = match (base, cur) {
            (Expr::Attr(b), Some(c)) if matches!(b.sym, wk::TARGET | wk::MY | wk::OTHER) => {
                let found = self.lookup_with_fallback(c, b.sym, true);
                self.eval_hit(found)
            }
            _ => self.eval_in(base, cur),
        };
        self.select_value(v, n.sym, cur)
    }

    /// Selection from a value: an attribute of an ad, mapped over the
    /// elements of a list (recursively; non-ads give ERROR entries).
    fn select_value(&mut self, v: Val, sym: Sym, cur: Option<FrameId>) -> Val {
        match v {
            Val::Undefined => Val::Undefined,
            Val::Ad(f) => self.select_in(f, sym),
            Val::List(items, _) => {
                // A list can contain itself (`l = {l}; l.a`): the mapping
                // recurses without any attribute cycle, so it counts as
                // nesting, and stops at the first failure.
                if self.nesting >= MAX_EVAL_NESTING {
                    return self.fail();
                }
                self.nesting += 1;
                let v = stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || {
                    let mut out = Vec::with_capacity(items.len());
                    for item in items.iter() {
                        let elem = self.eval_rooted(item, cur);
                        let v = self.select_value(elem, sym, cur);
                        if self.failed {
                            return Val::Error;
                        }
                        out.push(self.val_to_expr(v));
                    }
                    Val::List(Arc::new(out), None)
                });
                self.nesting -= 1;
                v
            }
            _ => Val::Error,
        }
    }

    /// Turns a value back into an expression (for building lists).
    pub(crate) fn val_to_expr(&self, v: Val) -> Expr {
        match v {
            Val::List(items, _) => Expr::List(items),
            Val::Ad(f) => Expr::Ad(self.frame_ad(f)),
            other => Expr::Lit(self.to_value(other)),
        }
    }

    fn eval_index(&mut self, base: &Expr, idx: &Expr, cur: Option<FrameId>) -> Val {
        let b = self.eval_in(base, cur);
        let i = self.eval_in(idx, cur);
        match (&b, &i) {
            (Val::Error, _) | (_, Val::Error) => Val::Error,
            (Val::Undefined, _) | (_, Val::Undefined) => Val::Undefined,
            (Val::List(items, scope), Val::Int(k)) => {
                // The reference reads the index into a C `int`: its low 32
                // bits (`l[4294967297]` is `l[1]`).
                let k = *k as i32;
                match usize::try_from(k) {
                    Ok(k) if k < items.len() => {
                        let items = items.clone();
                        let scope = *scope;
                        self.eval_in(&items[k], scope)
                    }
                    _ => Val::Error,
                }
            }
            (Val::Ad(f), Val::Str(s)) => {
                let sym = crate::name::intern(&String::from_utf8_lossy(s));
                self.index_in(*f, sym)
            }
            _ => Val::Error,
        }
    }

    fn eval_and(&mut self, a: &Expr, b: &Expr, cur: Option<FrameId>) -> Val {
        let x = self.eval_in(a, cur);
        match truth(&x) {
            Truth::False => Val::Bool(false),
            Truth::Error => Val::Error,
            tx => {
                let y = self.eval_in(b, cur);
                match (tx, truth(&y)) {
                    (_, Truth::False) => Val::Bool(false),
                    (_, Truth::Error) => Val::Error,
                    (Truth::True, Truth::True) => Val::Bool(true),
                    _ => Val::Undefined,
                }
            }
        }
    }

    fn eval_or(&mut self, a: &Expr, b: &Expr, cur: Option<FrameId>) -> Val {
        let x = self.eval_in(a, cur);
        match truth(&x) {
            Truth::True => Val::Bool(true),
            Truth::Error => Val::Error,
            tx => {
                let y = self.eval_in(b, cur);
                match (tx, truth(&y)) {
                    (_, Truth::True) => Val::Bool(true),
                    (_, Truth::Error) => Val::Error,
                    (Truth::False, Truth::False) => Val::Bool(false),
                    _ => Val::Undefined,
                }
            }
        }
    }
}

/// The evaluator moves between threads (daemons evaluate on blocking
/// threads): keep it `Send` and `Sync`.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Evaluator>();
};

pub(crate) fn lit(v: &Value) -> Val {
    match v {
        Value::Undefined => Val::Undefined,
        Value::Error => Val::Error,
        Value::Bool(b) => Val::Bool(*b),
        Value::Int(i) => Val::Int(*i),
        Value::Real(r) => Val::Real(*r),
        Value::Str(s) => Val::Str(s.clone()),
        Value::AbsTime(t) => Val::Abs(*t),
        Value::RelTime(r) => Val::Rel(*r),
        Value::List(items) => Val::List(items.clone(), None),
        // An ad stored as a literal value has no enclosing scope.
        Value::Ad(_) => Val::Error,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Truth {
    True,
    False,
    Undefined,
    Error,
}

/// The boolean reading of a value in `&&`, `||`, `!` and `?:`.
pub(crate) fn truth(v: &Val) -> Truth {
    match v {
        Val::Bool(true) => Truth::True,
        Val::Bool(false) => Truth::False,
        Val::Int(i) => {
            if *i != 0 {
                Truth::True
            } else {
                Truth::False
            }
        }
        Val::Real(r) => {
            if *r != 0.0 {
                Truth::True
            } else {
                Truth::False
            }
        }
        Val::Undefined => Truth::Undefined,
        _ => Truth::Error,
    }
}

pub(crate) fn unary(op: UnOp, v: Val) -> Val {
    match (op, v) {
        (_, Val::Undefined) => Val::Undefined,
        (_, Val::Error) => Val::Error,
        (UnOp::Neg, Val::Int(i)) => Val::Int(i.wrapping_neg()),
        (UnOp::Neg, Val::Real(r)) => Val::Real(-r),
        (UnOp::Neg, Val::Rel(r)) => Val::Rel(-r),
        (UnOp::Plus, v @ (Val::Int(_) | Val::Real(_) | Val::Rel(_))) => v,
        (UnOp::Not, v) => match truth(&v) {
            Truth::True => Val::Bool(false),
            Truth::False => Val::Bool(true),
            Truth::Undefined => Val::Undefined,
            Truth::Error => Val::Error,
        },
        (UnOp::BitNot, Val::Int(i)) => Val::Int(!i),
        _ => Val::Error,
    }
}

/// A borrowed view of an operand of a binary operator: strings are seen
/// in place (in a literal of an ad, or in a value computed on the way), so
/// comparing an attribute with a string literal copies nothing and touches
/// no reference count.
#[derive(Clone, Copy)]
pub(crate) enum Sc<'a> {
    Undefined,
    Error,
    Bool(bool),
    Int(i64),
    Real(f64),
    Str(&'a [u8]),
    Abs(AbsTime),
    Rel(f64),
    List,
    Ad,
}

impl Val {
    #[inline(always)]
    pub(crate) fn view(&self) -> Sc<'_> {
        match self {
            Val::Undefined => Sc::Undefined,
            Val::Error => Sc::Error,
            Val::Bool(b) => Sc::Bool(*b),
            Val::Int(i) => Sc::Int(*i),
            Val::Real(r) => Sc::Real(*r),
            Val::Str(s) => Sc::Str(s),
            Val::Abs(t) => Sc::Abs(*t),
            Val::Rel(r) => Sc::Rel(*r),
            Val::List(..) => Sc::List,
            Val::Ad(_) => Sc::Ad,
        }
    }
}

/// The view of a literal: what [`lit`] would make of it, borrowed.
#[inline(always)]
fn lit_view(v: &Value) -> Sc<'_> {
    match v {
        Value::Undefined => Sc::Undefined,
        Value::Error => Sc::Error,
        Value::Bool(b) => Sc::Bool(*b),
        Value::Int(i) => Sc::Int(*i),
        Value::Real(r) => Sc::Real(*r),
        Value::Str(s) => Sc::Str(s),
        Value::AbsTime(t) => Sc::Abs(*t),
        Value::RelTime(r) => Sc::Rel(*r),
        Value::List(_) => Sc::List,
        // as in `lit`: an ad stored as a literal value has no scope
        Value::Ad(_) => Sc::Error,
    }
}

/// An evaluated operand: a literal found in place (in the expression or
/// in an ad some frame holds), or a computed value.
enum Operand<'x> {
    Lit(&'x Value),
    Val(Val),
}

impl Operand<'_> {
    #[inline(always)]
    fn view(&self) -> Sc<'_> {
        match self {
            Operand::Lit(v) => lit_view(v),
            Operand::Val(v) => v.view(),
        }
    }
}

enum Num {
    I(i64),
    R(f64),
}

fn num(v: &Sc) -> Option<Num> {
    match v {
        Sc::Int(i) => Some(Num::I(*i)),
        Sc::Bool(b) => Some(Num::I(*b as i64)),
        Sc::Real(r) => Some(Num::R(*r)),
        _ => None,
    }
}

fn real_result(r: f64) -> Val {
    // Any real operation that overflows to +infinity is an error in the
    // reference library (-infinity and NaN survive).
    if r == f64::INFINITY {
        Val::Error
    } else {
        Val::Real(r)
    }
}

fn arith(op: BinOp, x: &Sc, y: &Sc) -> Val {
    // time arithmetic first
    match (op, x, y) {
        (BinOp::Add, Sc::Abs(a), Sc::Rel(r)) | (BinOp::Add, Sc::Rel(r), Sc::Abs(a)) => {
            return Val::Abs(AbsTime {
                secs: a
                    .secs
                    .wrapping_add(i64::from(crate::time::c_double_to_int(*r))),
                offset: a.offset,
            });
        }
        (BinOp::Sub, Sc::Abs(a), Sc::Rel(r)) => {
            return Val::Abs(AbsTime {
                secs: a
                    .secs
                    .wrapping_sub(i64::from(crate::time::c_double_to_int(*r))),
                offset: a.offset,
            });
        }
        (BinOp::Sub, Sc::Abs(a), Sc::Abs(b)) => return Val::Rel(a.secs.wrapping_sub(b.secs) as f64),
        (BinOp::Add, Sc::Rel(a), Sc::Rel(b)) => return Val::Rel(a + b),
        (BinOp::Sub, Sc::Rel(a), Sc::Rel(b)) => return Val::Rel(a - b),
        (BinOp::Mul, Sc::Rel(a), n) | (BinOp::Mul, n, Sc::Rel(a)) => {
            return match num(n) {
                Some(Num::I(i)) if !matches!(n, Sc::Bool(_)) => Val::Rel(a * i as f64),
                Some(Num::R(r)) => Val::Rel(a * r),
                _ => Val::Error,
            };
        }
        (BinOp::Div, Sc::Rel(a), n) => {
            return match num(n) {
                Some(Num::I(i)) if !matches!(n, Sc::Bool(_)) => Val::Rel(a / i as f64),
                Some(Num::R(r)) => Val::Rel(a / r),
                _ => Val::Error,
            };
        }
        _ => {}
    }
    let (Some(a), Some(b)) = (num(x), num(y)) else {
        return Val::Error;
    };
    match (a, b) {
        (Num::I(a), Num::I(b)) => match op {
            BinOp::Add => Val::Int(a.wrapping_add(b)),
            BinOp::Sub => Val::Int(a.wrapping_sub(b)),
            BinOp::Mul => Val::Int(a.wrapping_mul(b)),
            BinOp::Div => {
                if b == 0 {
                    Val::Error
                } else if a == i64::MIN && b == -1 {
                    Val::Int(i64::MAX)
                } else {
                    Val::Int(a / b)
                }
            }
            BinOp::Mod => {
                if b == 0 {
                    Val::Error
                } else {
                    Val::Int(a.wrapping_rem(b))
                }
            }
            _ => Val::Error,
        },
        (a, b) => {
            let a = match a {
                Num::I(i) => i as f64,
                Num::R(r) => r,
            };
            let b = match b {
                Num::I(i) => i as f64,
                Num::R(r) => r,
            };
            match op {
                BinOp::Add => real_result(a + b),
                BinOp::Sub => real_result(a - b),
                BinOp::Mul => real_result(a * b),
                BinOp::Div => real_result(a / b),
                _ => Val::Error,
            }
        }
    }
}

fn bitwise(op: BinOp, x: &Sc, y: &Sc) -> Val {
    let (Sc::Int(a), Sc::Int(b)) = (x, y) else {
        return Val::Error;
    };
    let (a, b) = (*a, *b);
    match op {
        BinOp::BitAnd => Val::Int(a & b),
        BinOp::BitOr => Val::Int(a | b),
        BinOp::BitXor => Val::Int(a ^ b),
        BinOp::Shl => Val::Int(a.wrapping_shl((b & 63) as u32)),
        // The reference shifts non-negative values with the machine's shift
        // (count taken mod 64) but handles negative ones by hand: `>>`
        // shifts one bit at a time `b` times (none for b <= 0), and `>>>`
        // clears the sign after one shift, then shifts `b - 1` (mod 64).
        BinOp::Shr if a >= 0 => Val::Int(a.wrapping_shr((b & 63) as u32)),
        BinOp::Shr => {
            let n = b.clamp(0, 64);
            let mut v = a;
            for _ in 0..n {
                v = (v >> 1) | i64::MIN;
            }
            Val::Int(v)
        }
        BinOp::UShr if a >= 0 => Val::Int(a.wrapping_shr((b & 63) as u32)),
        BinOp::UShr => {
            let v = (a >> 1) & i64::MAX;
            Val::Int(v.wrapping_shr((b.wrapping_sub(1) & 63) as u32))
        }
        _ => Val::Error,
    }
}

/// ASCII case-insensitive byte comparison (C's `strcasecmp`).
pub(crate) fn strcasecmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let la = a.iter().map(|c| c.to_ascii_lowercase());
    let lb = b.iter().map(|c| c.to_ascii_lowercase());
    la.cmp(lb)
}

fn compare(op: BinOp, x: &Sc, y: &Sc) -> Val {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (x, y) {
        (Sc::Str(a), Sc::Str(b)) => Some(strcasecmp(a, b)),
        (Sc::Abs(a), Sc::Abs(b)) => Some(a.secs.cmp(&b.secs)),
        (Sc::Rel(a), Sc::Rel(b)) => a.partial_cmp(b),
        _ => match (num(x), num(y)) {
            (Some(Num::I(a)), Some(Num::I(b))) => Some(a.cmp(&b)),
            (Some(a), Some(b)) => {
                let a = match a {
                    Num::I(i) => i as f64,
                    Num::R(r) => r,
                };
                let b = match b {
                    Num::I(i) => i as f64,
                    Num::R(r) => r,
                };
                match a.partial_cmp(&b) {
                    Some(o) => Some(o),
                    // NaN: every comparison is false except `!=`
                    None => return Val::Bool(op == BinOp::Ne),
                }
            }
            _ => return Val::Error,
        },
    };
    let Some(o) = ord else {
        return Val::Bool(op == BinOp::Ne);
    };
    Val::Bool(match op {
        BinOp::Lt => o == Ordering::Less,
        BinOp::Le => o != Ordering::Greater,
        BinOp::Gt => o == Ordering::Greater,
        BinOp::Ge => o != Ordering::Less,
        BinOp::Eq => o == Ordering::Equal,
        _ => o != Ordering::Equal,
    })
}

/// `=?=`: same type and same value (strings case-sensitively).
pub(crate) fn identical(x: &Sc, y: &Sc) -> Option<bool> {
    Some(match (x, y) {
        // Two lists or two ads cannot be compared, even with `=?=`.
        (Sc::List, Sc::List) | (Sc::Ad, Sc::Ad) => return None,
        (Sc::Undefined, Sc::Undefined) | (Sc::Error, Sc::Error) => true,
        (Sc::Bool(a), Sc::Bool(b)) => a == b,
        (Sc::Int(a), Sc::Int(b)) => a == b,
        (Sc::Real(a), Sc::Real(b)) => a == b,
        (Sc::Str(a), Sc::Str(b)) => a == b,
        (Sc::Abs(a), Sc::Abs(b)) => a == b,
        (Sc::Rel(a), Sc::Rel(b)) => a == b,
        _ => false,
    })
}

pub(crate) fn binary(op: BinOp, x: Val, y: Val) -> Val {
    binary_view(op, &x.view(), &y.view())
}

/// A binary operator other than `&&` and `||` on two operands seen
/// through borrowed views (no reference count touched).
pub(crate) fn binary_view(op: BinOp, x: &Sc, y: &Sc) -> Val {
    // The common cases first: integers and reals, compared or combined.
    match (*x, *y) {
        (Sc::Int(a), Sc::Int(b)) => match op {
            BinOp::Lt => return Val::Bool(a < b),
            BinOp::Le => return Val::Bool(a <= b),
            BinOp::Gt => return Val::Bool(a > b),
            BinOp::Ge => return Val::Bool(a >= b),
            BinOp::Eq => return Val::Bool(a == b),
            BinOp::Ne => return Val::Bool(a != b),
            BinOp::Add => return Val::Int(a.wrapping_add(b)),
            BinOp::Sub => return Val::Int(a.wrapping_sub(b)),
            BinOp::Mul => return Val::Int(a.wrapping_mul(b)),
            BinOp::Div if b != 0 && b != -1 => return Val::Int(a / b),
            _ => {}
        },
        (Sc::Real(a), Sc::Real(b)) if !a.is_nan() && !b.is_nan() => match op {
            BinOp::Lt => return Val::Bool(a < b),
            BinOp::Le => return Val::Bool(a <= b),
            BinOp::Gt => return Val::Bool(a > b),
            BinOp::Ge => return Val::Bool(a >= b),
            BinOp::Eq => return Val::Bool(a == b),
            BinOp::Ne => return Val::Bool(a != b),
            _ => {}
        },
        _ => {}
    }
    match op {
        BinOp::Is | BinOp::Isnt => match identical(x, y) {
            Some(same) => Val::Bool(same == (op == BinOp::Is)),
            None => Val::Error,
        },
        _ => {
            if matches!(x, Sc::Error) || matches!(y, Sc::Error) {
                return Val::Error;
            }
            if matches!(x, Sc::Undefined) || matches!(y, Sc::Undefined) {
                return Val::Undefined;
            }
            match op {
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => arith(op, x, y),
                BinOp::BitAnd
                | BinOp::BitOr
                | BinOp::BitXor
                | BinOp::Shl
                | BinOp::Shr
                | BinOp::UShr => bitwise(op, x, y),
                _ => compare(op, x, y),
            }
        }
    }
}

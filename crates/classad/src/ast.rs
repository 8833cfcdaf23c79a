//! The expression tree.

use std::sync::Arc;

use crate::ad::ClassAd;
use crate::functions::FuncId;
use crate::name::Name;
use crate::value::Value;

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `+x`
    Plus,
    /// `!x`
    Not,
    /// `~x`
    BitNot,
}

/// Binary operators (`&&`, `||` included; they short-circuit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    UShr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    /// `=?=` / `is`
    Is,
    /// `=!=` / `isnt`
    Isnt,
    And,
    Or,
}

impl BinOp {
    /// The operator as the canonical unparser prints it.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::UShr => ">>>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Is => "is",
            BinOp::Isnt => "isnt",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

/// A function call node; the function is resolved once at parse time.
#[derive(Clone, Debug)]
pub struct Call {
    /// The name as written (its case is kept for printing).
    pub name: Arc<str>,
    /// The resolved builtin, or `None` for an unknown name (evaluates to
    /// ERROR, as in HTCondor).
    pub func: Option<FuncId>,
    pub args: Vec<Expr>,
}

/// A ClassAd expression.
#[derive(Clone, Debug)]
pub enum Expr {
    /// A literal scalar (also a folded `absTime("...")`).
    Lit(Value),
    /// A folded `relTime("...")`: printed back as `relTime("[D+]HH:MM:SS")`
    /// but, as in the reference library, it evaluates to the number of
    /// seconds as a real.
    RelTimeStr(f64),
    /// A bare attribute reference `name`.
    Attr(Name),
    /// An absolute reference `.name` (looked up from the root scope).
    AbsAttr(Name),
    /// Selection `expr.name`.
    Select(Box<Expr>, Name),
    /// Subscript `expr[index]`.
    Index(Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Cond(Box<(Expr, Expr, Expr)>),
    /// `a ?: b`
    Elvis(Box<Expr>, Box<Expr>),
    /// Explicit parentheses, kept so that unparsing reproduces them.
    Paren(Box<Expr>),
    Call(Box<Call>),
    /// A list literal `{ ... }`.
    List(Arc<Vec<Expr>>),
    /// A nested ad literal `[ ... ]`.
    Ad(ClassAd),
}

impl Expr {
    /// An integer literal.
    pub fn int(i: i64) -> Expr {
        Expr::Lit(Value::Int(i))
    }
    /// A string literal.
    pub fn string(s: &str) -> Expr {
        Expr::Lit(Value::from(s))
    }
    /// A boolean literal.
    pub fn boolean(b: bool) -> Expr {
        Expr::Lit(Value::Bool(b))
    }
}

/// The value of a numeric literal with any `-` signs applied to it folded
/// in, the way the lexer folds `-1` into one literal; `None` for anything
/// else.
fn folded_number(e: &Expr) -> Option<Value> {
    match e {
        Expr::Lit(v @ (Value::Int(_) | Value::Real(_))) => Some(v.clone()),
        Expr::Unary(UnOp::Neg, inner) => match folded_number(inner)? {
            Value::Int(i) => Some(Value::Int(i.wrapping_neg())),
            Value::Real(r) => Some(Value::Real(-r)),
            _ => None,
        },
        _ => None,
    }
}

/// Structural equality: same tree, attribute and function names compared
/// case-insensitively, literals compared as the canonical unparser prints
/// them (reals to 16 significant digits, as HTCondor does). Minus signs
/// applied to a numeric literal are folded into it (`- 1` and `-1` print
/// alike and mean the same), so `parse(unparse(e)) == e` holds.
impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        use Expr::*;
        match (folded_number(self), folded_number(other)) {
            (Some(a), Some(b)) => return a.same_literal(&b),
            (Some(_), None) | (None, Some(_)) => return false,
            (None, None) => {}
        }
        match (self, other) {
            (Lit(a), Lit(b)) => a.same_literal(b),
            (RelTimeStr(a), RelTimeStr(b)) => a.to_bits() == b.to_bits(),
            (Attr(a), Attr(b)) | (AbsAttr(a), AbsAttr(b)) => a == b,
            (Select(a, n), Select(b, m)) => n == m && a == b,
            (Index(a, i), Index(b, j)) => a == b && i == j,
            (Unary(o, a), Unary(p, b)) => o == p && a == b,
            (Binary(o, a, x), Binary(p, b, y)) => o == p && a == b && x == y,
            (Cond(a), Cond(b)) => a.0 == b.0 && a.1 == b.1 && a.2 == b.2,
            (Elvis(a, x), Elvis(b, y)) => a == b && x == y,
            (Paren(a), Paren(b)) => a == b,
            (Call(a), Call(b)) => a.name.eq_ignore_ascii_case(&b.name) && a.args == b.args,
            (List(a), List(b)) => a == b,
            (Ad(a), Ad(b)) => a == b,
            _ => false,
        }
    }
}

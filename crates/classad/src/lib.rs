//! The ClassAd language, with the semantics of HTCondor's own library.
//!
//! - [`Value`], [`Expr`], [`ClassAd`]: values, expression trees, ads.
//! - [`parse_expr`], [`parse_ad`], [`parse_old_ad`]: parsing (new and old
//!   syntax); errors carry line and column.
//! - [`unparse`] and `Display`: canonical text, such that parsing it again
//!   gives the same tree.
//! - [`Evaluator`]: evaluation with MY/TARGET scopes, in HTCondor's default
//!   mode or its strict mode.
//! - [`symmetric_match`], [`rank`]: matchmaking.
//!
//! This crate depends on nothing else in Skua and does no I/O: the clock,
//! the time zone and the random seed are inputs ([`EvalOptions`]).

mod ad;
pub mod args_env;
mod ast;
mod error;
mod eval;
mod functions;
mod lexer;
mod matching;
mod name;
mod parser;
mod refs;
pub mod time;
mod unparse;
mod value;

pub use ad::ClassAd;
pub use ast::{BinOp, Call, Expr, UnOp};
pub use error::ParseError;
pub use eval::{EvalOptions, Evaluator};
pub use functions::is_builtin;
pub use matching::{rank, symmetric_match, MatchResult};
pub use name::{intern, Name, Sym};
pub use parser::{
    parse_ad, parse_ad_with, parse_expr, parse_expr_bytes, parse_expr_with, parse_old_ad,
    parse_old_ad_with, parse_old_line, ParseOptions, MAX_DEPTH,
};
pub use refs::{attribute_references, references, References};
pub use unparse::{
    format_real_old, quote_string, unparse, unparse_ad, unparse_old, unparse_old_value,
    unparse_value, Syntax,
};
pub use value::{format_real, AbsTime, Str, Value, ValueType};

/// Evaluates an expression with default options and no ads.
pub fn eval(expr: &Expr) -> Value {
    Evaluator::default().eval(expr, None, None)
}

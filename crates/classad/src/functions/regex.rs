//! Builtin functions: regex family.

use super::Builtin;

pub(super) const FUNCS: &[(&str, Builtin)] = &[];

//! Builtin functions: math family.

use super::Builtin;

pub(super) const FUNCS: &[(&str, Builtin)] = &[];

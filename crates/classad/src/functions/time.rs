//! Builtin functions: time family.

use super::Builtin;

pub(super) const FUNCS: &[(&str, Builtin)] = &[];

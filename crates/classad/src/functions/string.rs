//! Builtin functions: string family.

use super::Builtin;

pub(super) const FUNCS: &[(&str, Builtin)] = &[];

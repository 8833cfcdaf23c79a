//! Builtin functions: misc family.

use super::Builtin;

pub(super) const FUNCS: &[(&str, Builtin)] = &[];

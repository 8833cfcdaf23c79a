//! Builtin functions: list family.

use super::Builtin;

pub(super) const FUNCS: &[(&str, Builtin)] = &[];

//! Builtin functions: types family.

use super::Builtin;

pub(super) const FUNCS: &[(&str, Builtin)] = &[];

//! Builtin functions: condor family.

use super::Builtin;

pub(super) const FUNCS: &[(&str, Builtin)] = &[];

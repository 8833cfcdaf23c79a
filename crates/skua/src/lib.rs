//! The `skua` package holds only the two thin binaries (`skua` and `skuad`)
//! and the cross-process tests that drive them as a user would.

//! Shared by `tests/counting.rs` and `tests/dynamic.rs`: the checks of an
//! index of sets (`insert_set`, `take_filter`) against a map of its filters.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Debug;

use bloomslice::{Error, Result};
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;

/// Checks `got`, the index's answer to `insert_set(id)`, against `sets`,
/// which gets `new()` for a new `id`.
pub fn insert_set<F>(sets: &mut HashMap<u64, F>, id: u64, got: Result<()>, new: impl FnOnce() -> F) -> TestCaseResult {
    if let Entry::Vacant(e) = sets.entry(id) {
        got.unwrap();
        e.insert(new());
    } else {
        prop_assert_eq!(got, Err(Error::DuplicateId(id)));
    }
    Ok(())
}

/// Checks `got`, the index's answer to `take_filter(id)`, against the
/// filter taken out of `sets`.
pub fn take_filter<F: PartialEq + Debug>(sets: &mut HashMap<u64, F>, id: u64, got: Result<F>) -> TestCaseResult {
    match sets.remove(&id) {
        Some(f) => prop_assert_eq!(got.unwrap(), f),
        None => prop_assert_eq!(got, Err(Error::UnknownId(id))),
    }
    Ok(())
}

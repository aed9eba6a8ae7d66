//! Shared by `tests/counting.rs` and `tests/dynamic.rs`: the checks of an
//! index of sets (`insert_set`, `take_filter`) against a map of its filters.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Debug;

use bloomslice::Error;
use proptest::prelude::*;
use proptest::test_runner::TestCaseResult;

/// Checks `got`, the index's answer to `insert_set(id)`, against `sets`,
/// which gets `new()` for a new `id`.
pub fn insert_set<F, E: From<Error> + PartialEq + Debug>(
    sets: &mut HashMap<u64, F>,
    id: u64,
    got: Result<(), E>,
    new: impl FnOnce() -> F,
) -> TestCaseResult {
    if let Entry::Vacant(e) = sets.entry(id) {
        got.unwrap();
        e.insert(new());
    } else {
        prop_assert_eq!(got, Err(Error::DuplicateId(id).into()));
    }
    Ok(())
}

/// Checks `got`, the index's answer to `take_filter(id)`, against the
/// filter taken out of `sets`.
pub fn take_filter<F: PartialEq + Debug, E: From<Error> + PartialEq + Debug>(
    sets: &mut HashMap<u64, F>,
    id: u64,
    got: Result<F, E>,
) -> TestCaseResult {
    match sets.remove(&id) {
        Some(f) => prop_assert_eq!(got.unwrap(), f),
        None => prop_assert_eq!(got, Err(Error::UnknownId(id).into())),
    }
    Ok(())
}

//! Shared by `tests/counting.rs` and `tests/dynamic.rs`: the checks of an
//! index of sets (`insert_set`, `take_filter`) against a map of its filters.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Debug;

use bloomslice::Error;
use proptest::prelude::*;

/// Checks `got`, the index's answer to `insert_set(id)`, against `model`,
/// which gets `empty()` for a new `id`.
pub fn insert_set<F>(
    model: &mut HashMap<u64, F>,
    id: u64,
    got: Result<(), Error>,
    empty: impl FnOnce() -> F,
) -> Result<(), TestCaseError> {
    if let Entry::Vacant(e) = model.entry(id) {
        got.unwrap();
        e.insert(empty());
    } else {
        prop_assert_eq!(got, Err(Error::DuplicateId(id)));
    }
    Ok(())
}

/// Checks `got`, the index's answer to `take_filter(id)`, against the
/// filter taken out of `model`.
pub fn take_filter<F: PartialEq + Debug>(
    model: &mut HashMap<u64, F>,
    id: u64,
    got: Result<F, Error>,
) -> Result<(), TestCaseError> {
    match model.remove(&id) {
        Some(f) => prop_assert_eq!(got.unwrap(), f),
        None => prop_assert_eq!(got, Err(Error::UnknownId(id))),
    }
    Ok(())
}

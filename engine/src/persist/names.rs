//! [`SetNames`]: the two-way map between set ids and the names people use.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// Longest set name, in bytes. Names are file names or the first column of
/// a TSV line; a longer one is almost certainly a mistake (a missing tab),
/// and the limit bounds what one id map entry can make a loader allocate.
pub const MAX_NAME_BYTES: usize = 1 << 16;

/// Names of the sets of an index: id <-> name, both ways, names unique.
///
/// The index itself knows only `u64` ids; the index file stores the names
/// next to the id map. Names are bytes (file names and keys need not be
/// UTF-8). The empty name means "no name".
///
/// ```
/// use bloomslice::SetNames;
///
/// let mut names = SetNames::new();
/// names.insert(7, "fruit")?;
/// assert_eq!(names.id(b"fruit"), Some(7));
/// assert_eq!(names.name(7), Some(&b"fruit"[..]));
/// assert!(names.insert(8, "fruit").is_err());
/// # Ok::<(), bloomslice::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetNames {
    by_id: HashMap<u64, Vec<u8>>,
    by_name: HashMap<Vec<u8>, u64>,
}

impl SetNames {
    /// No names.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names set `id` (replacing its previous name). The empty name removes
    /// the name.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateName`] when another set has this name;
    /// [`Error::CapacityOverflow`] for a name longer than [`MAX_NAME_BYTES`].
    pub fn insert(&mut self, id: u64, name: impl Into<Vec<u8>>) -> Result<()> {
        let name = name.into();
        if name.len() > MAX_NAME_BYTES {
            return Err(Error::CapacityOverflow("set name longer than MAX_NAME_BYTES"));
        }
        if name.is_empty() {
            self.remove(id);
            return Ok(());
        }
        match self.by_name.get(&name) {
            Some(&other) if other == id => return Ok(()),
            Some(_) => return Err(Error::DuplicateName(String::from_utf8_lossy(&name).into_owned())),
            None => {}
        }
        self.remove(id);
        self.by_name.insert(name.clone(), id);
        self.by_id.insert(id, name);
        Ok(())
    }

    /// Removes the name of `id`, returning it.
    pub fn remove(&mut self, id: u64) -> Option<Vec<u8>> {
        let name = self.by_id.remove(&id)?;
        self.by_name.remove(&name);
        Some(name)
    }

    /// The name of set `id`.
    pub fn name(&self, id: u64) -> Option<&[u8]> {
        self.by_id.get(&id).map(Vec::as_slice)
    }

    /// The id of the set called `name`.
    pub fn id(&self, name: &[u8]) -> Option<u64> {
        self.by_name.get(name).copied()
    }

    /// The name of `id` for display: lossy UTF-8, or `#id` for an unnamed set.
    pub fn display(&self, id: u64) -> String {
        match self.name(id) {
            Some(name) => String::from_utf8_lossy(name).into_owned(),
            None => format!("#{id}"),
        }
    }

    /// Number of named sets.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no set is named.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// `(id, name)` pairs, in increasing id order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        let mut ids: Vec<u64> = self.by_id.keys().copied().collect();
        ids.sort_unstable();
        ids.into_iter().map(|id| (id, self.by_id[&id].as_slice()))
    }

    /// Smallest id not in use by a name (for tools that allocate ids).
    pub fn next_free_id(&self) -> u64 {
        self.by_id.keys().max().map_or(0, |m| m.saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_way_and_unique() {
        let mut n = SetNames::new();
        n.insert(1, "a").unwrap();
        n.insert(2, b"\xff".to_vec()).unwrap();
        assert_eq!(n.id(b"\xff"), Some(2));
        assert_eq!(n.insert(3, "a"), Err(Error::DuplicateName("a".into())));
        n.insert(1, "b").unwrap();
        assert_eq!(n.id(b"a"), None);
        assert_eq!(n.id(b"b"), Some(1));
        n.insert(1, "b").unwrap();
        n.insert(1, "").unwrap();
        assert_eq!(n.name(1), None);
        assert_eq!(n.len(), 1);
        assert_eq!(n.display(5), "#5");
        assert!(n.insert(4, vec![b'x'; MAX_NAME_BYTES + 1]).is_err());
        assert_eq!(n.next_free_id(), 3);
    }
}

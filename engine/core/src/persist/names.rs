//! [`SetNames`]: the two-way map between set ids and the names people use.

use std::sync::{Arc, OnceLock};

use hashbrown::HashMap;

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
/// Names read from a file are kept as the file's names section and the two
/// maps are built on first use, so opening a memory-mapped index of 100 000
/// sets does not pay for 200 000 hash-map inserts before its first query.
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
#[derive(Clone, Debug, Default)]
pub struct SetNames {
    maps: OnceLock<Maps>,
    /// Names as read from a file, until `maps` is built from them.
    raw: Option<Arc<Raw>>,
}

#[derive(Clone, Debug, Default)]
struct Maps {
    // One allocation per name, shared by both maps.
    by_id: HashMap<u64, Arc<[u8]>>,
    by_name: HashMap<Arc<[u8]>, u64>,
    /// A name the file gave to two sets (only the first got it).
    duplicate: Option<String>,
}

/// A file's names section: `(id, offset, len)` spans into `blob`.
#[derive(Debug)]
pub(crate) struct Raw {
    pub(crate) blob: Vec<u8>,
    pub(crate) spans: Vec<(u64, usize, usize)>,
}

impl PartialEq for SetNames {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.maps(), other.maps());
        a.by_id == b.by_id
    }
}

impl Eq for SetNames {}

impl SetNames {
    /// No names.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names from a file's names section; the maps are built on first use.
    pub(crate) fn from_raw(raw: Raw) -> Self {
        SetNames { maps: OnceLock::new(), raw: Some(Arc::new(raw)) }
    }

    fn maps(&self) -> &Maps {
        self.maps.get_or_init(|| {
            let mut maps = Maps::default();
            if let Some(raw) = &self.raw {
                maps.by_id.reserve(raw.spans.len());
                maps.by_name.reserve(raw.spans.len());
                for &(id, off, len) in &raw.spans {
                    let name = &raw.blob[off..off + len];
                    if name.is_empty() {
                        continue;
                    }
                    if maps.by_name.contains_key(name) || maps.by_id.contains_key(&id) {
                        maps.duplicate.get_or_insert_with(|| String::from_utf8_lossy(name).into_owned());
                        continue;
                    }
                    let name: Arc<[u8]> = name.into();
                    maps.by_name.insert(Arc::clone(&name), id);
                    maps.by_id.insert(id, name);
                }
            }
            maps
        })
    }

    fn maps_mut(&mut self) -> &mut Maps {
        self.maps();
        self.raw = None;
        self.maps.get_mut().expect("built just above")
    }

    /// Builds the maps now and checks that no name was given to two sets.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateName`] for a file that names two sets alike.
    pub fn check(&self) -> Result<()> {
        match &self.maps().duplicate {
            Some(name) => Err(Error::DuplicateName(name.clone())),
            None => Ok(()),
        }
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
        match self.maps().by_name.get(name.as_slice()) {
            Some(&other) if other == id => return Ok(()),
            Some(_) => return Err(Error::DuplicateName(String::from_utf8_lossy(&name).into_owned())),
            None => {}
        }
        self.remove(id);
        let maps = self.maps_mut();
        let name: Arc<[u8]> = name.into();
        maps.by_name.insert(Arc::clone(&name), id);
        maps.by_id.insert(id, name);
        Ok(())
    }

    /// Removes the name of `id`, returning it.
    pub fn remove(&mut self, id: u64) -> Option<Vec<u8>> {
        let maps = self.maps_mut();
        let name = maps.by_id.remove(&id)?;
        maps.by_name.remove(&name);
        Some(name.to_vec())
    }

    /// The name of set `id`.
    pub fn name(&self, id: u64) -> Option<&[u8]> {
        self.maps().by_id.get(&id).map(|n| &**n)
    }

    /// The id of the set called `name`.
    pub fn id(&self, name: &[u8]) -> Option<u64> {
        self.maps().by_name.get(name).copied()
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
        self.maps().by_id.len()
    }

    /// Whether no set is named.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(id, name)` pairs, in increasing id order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        let maps = self.maps();
        let mut ids: Vec<u64> = maps.by_id.keys().copied().collect();
        ids.sort_unstable();
        ids.into_iter().map(|id| (id, &*maps.by_id[&id]))
    }

    /// One more than the largest named id (0 when none is named).
    pub fn next_free_id(&self) -> u64 {
        self.maps().by_id.keys().max().map_or(0, |m| m.saturating_add(1))
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

    #[test]
    fn raw_names_are_built_lazily_and_duplicates_reported() {
        let raw = Raw { blob: b"abab".to_vec(), spans: vec![(1, 0, 2), (2, 2, 0), (3, 2, 2)] };
        let n = SetNames::from_raw(raw);
        assert_eq!(n.id(b"ab"), Some(1));
        assert_eq!(n.name(2), None);
        assert_eq!(n.check(), Err(Error::DuplicateName("ab".into())));
        let mut ok = SetNames::from_raw(Raw { blob: b"xy".to_vec(), spans: vec![(4, 0, 1), (5, 1, 1)] });
        ok.check().unwrap();
        ok.insert(6, "z").unwrap();
        assert_eq!(ok.len(), 3);
        let mut built = SetNames::new();
        for (id, name) in [(4, "x"), (5, "y"), (6, "z")] {
            built.insert(id, name).unwrap();
        }
        assert_eq!(ok, built);
    }
}

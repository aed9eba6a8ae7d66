//! The level index file (format 3, `docs/FORMAT.md`): the levels' tree in
//! preorder (a level: its column owners, its group count, its sliced index,
//! then its groups), each level's and group's sliced index as an embedded
//! index file (format 1, or a set index file, format 2, for a flat root),
//! the set names, and an xxh3-64 of everything after the header.
//!
//! The reader checks every count against the bytes left before it
//! allocates, bounds the depth, checks every embedded file fully (their
//! own checksums and invariants) and then the tree: every column owned
//! once, a split set's pieces in order, every group used once, every set
//! in exactly one place, and every level hashed as the header says.

use std::collections::HashSet;

use xxhash_rust::xxh3::xxh3_64;

use super::{Bin, Level, LevelIndex, Node, Owner};
use crate::collection::SetIndex;
use crate::error::{Error, Result};
use crate::params::HashScheme;
use crate::persist::format::{MAGIC, scheme_code};
use crate::persist::{Loaded, SetNames, to_bytes};
use crate::sliced::SlicedIndex;

/// Major version of level index files.
pub const LEVELS_FORMAT_MAJOR: u16 = 3;
/// Minor version this build writes: 1 adds the writes since the build
/// (hidden ids, ids in both, the delta); a reader takes 0 and 1.
pub const LEVELS_FORMAT_MINOR: u16 = 1;
/// Bytes of the fixed header: magic, major, minor, 4 reserved zero bytes,
/// body length.
const HEADER_BYTES: usize = 24;
/// Deepest tree a reader accepts.
const MAX_DEPTH: usize = 32;

/// `index` and `names` (names of ids not in the index are not written) as
/// a level index file.
pub(crate) fn encode(index: &LevelIndex, names: &SetNames) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    body.extend_from_slice(&index.p.to_bits().to_le_bytes());
    body.extend_from_slice(&index.k.to_le_bytes());
    body.extend_from_slice(&scheme_code(index.scheme).to_le_bytes());
    body.extend_from_slice(&index.seed.to_le_bytes());
    ids(&index.root_ids, &mut body);
    encode_node(&index.root, &mut body)?;
    let kept: Vec<(u64, &[u8])> = names.iter().filter(|(id, _)| index.contains(*id)).collect();
    body.extend_from_slice(&(kept.len() as u64).to_le_bytes());
    for (id, name) in kept {
        body.extend_from_slice(&id.to_le_bytes());
        body.extend_from_slice(&(name.len() as u32).to_le_bytes());
        body.extend_from_slice(name);
    }
    ids(&index.hidden, &mut body);
    ids(&index.both, &mut body);
    blob(to_bytes(&*index.delta, &SetNames::new())?, &mut body);
    let mut file = Vec::with_capacity(HEADER_BYTES + body.len() + 8);
    file.extend_from_slice(&MAGIC);
    file.extend_from_slice(&LEVELS_FORMAT_MAJOR.to_le_bytes());
    file.extend_from_slice(&LEVELS_FORMAT_MINOR.to_le_bytes());
    file.extend_from_slice(&[0; 4]);
    file.extend_from_slice(&(body.len() as u64).to_le_bytes());
    file.extend_from_slice(&body);
    file.extend_from_slice(&xxh3_64(&body).to_le_bytes());
    Ok(file)
}

/// A count, then the ids.
fn ids(ids: &[u64], out: &mut Vec<u8>) {
    out.extend_from_slice(&(ids.len() as u64).to_le_bytes());
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
}

fn blob(bytes: Vec<u8>, out: &mut Vec<u8>) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&bytes);
}

// A node's kind byte.
const NODE_FLAT: u8 = 0;
/// A group's members in their own index (format 3.0).
const NODE_LEAF: u8 = 1;
const NODE_LEVEL: u8 = 2;
/// A group's members in a bin of its level.
const NODE_BINNED: u8 = 3;

fn encode_node(node: &Node, out: &mut Vec<u8>) -> Result<()> {
    let none = SetNames::new();
    match node {
        Node::Flat(set_index) => {
            out.push(NODE_FLAT);
            blob(to_bytes(set_index, &none)?, out);
        }
        Node::Leaf(index) => {
            out.push(NODE_LEAF);
            blob(to_bytes(index, &none)?, out);
        }
        Node::Binned(bin) => {
            out.push(NODE_BINNED);
            out.extend_from_slice(&bin.to_le_bytes());
        }
        Node::Level(level) => {
            out.push(NODE_LEVEL);
            out.extend_from_slice(&(level.owners.len() as u32).to_le_bytes());
            for owner in &level.owners {
                match *owner {
                    Owner::Piece { id, piece, pieces } => {
                        out.push(OWNER_PIECE);
                        out.extend_from_slice(&id.to_le_bytes());
                        out.extend_from_slice(&piece.to_le_bytes());
                        out.extend_from_slice(&pieces.to_le_bytes());
                    }
                    Owner::Group(g) => {
                        out.push(OWNER_GROUP);
                        out.extend_from_slice(&g.to_le_bytes());
                    }
                }
            }
            out.extend_from_slice(&(level.groups.len() as u32).to_le_bytes());
            blob(to_bytes(&level.index, &none)?, out);
            out.extend_from_slice(&(level.bins.len() as u32).to_le_bytes());
            for bin in &level.bins {
                out.extend_from_slice(&(bin.members.len() as u64).to_le_bytes());
                for &(id, group) in &bin.members {
                    out.extend_from_slice(&id.to_le_bytes());
                    out.extend_from_slice(&group.to_le_bytes());
                }
                blob(to_bytes(&bin.index, &none)?, out);
            }
            for group in &level.groups {
                encode_node(group, out)?;
            }
        }
    }
    Ok(())
}

// A level column's kind byte: a piece of a set, a group.
const OWNER_PIECE: u8 = 0;
const OWNER_GROUP: u8 = 1;

/// A checked cursor over the body.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| Error::CorruptFile(format!("level index file: {what} runs past the end")))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A count of items of at least `min_bytes` each, checked against the
    /// bytes left.
    fn count(&mut self, n: u64, min_bytes: usize, what: &str) -> Result<usize> {
        let left = (self.bytes.len() - self.at) as u64;
        if n.saturating_mul(min_bytes as u64) > left {
            return Err(corrupt(format!("{n} {what} cannot fit in the {left} bytes left")));
        }
        Ok(n as usize)
    }

    /// A count, then that many strictly ascending ids.
    fn ids(&mut self, what: &str) -> Result<Vec<u64>> {
        let n = self.u64(what)?;
        let n = self.count(n, 8, what)?;
        let ids = (0..n).map(|_| self.u64(what)).collect::<Result<Vec<u64>>>()?;
        if ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err(corrupt(format!("{what} are not strictly ascending")));
        }
        Ok(ids)
    }

    fn blob(&mut self, what: &str) -> Result<&'a [u8]> {
        let len = self.u64(what)?;
        let len = self.count(len, 1, what)?;
        self.take(len, what)
    }
}

fn corrupt(what: String) -> Error {
    Error::CorruptFile(format!("level index file: {what}"))
}

/// What the header says every embedded index must agree with.
struct Expect {
    /// The file's minor version (levels of minor 0 have no bins).
    minor: u16,
    k: u32,
    scheme: HashScheme,
    seed: u64,
}

impl Expect {
    fn check(&self, k: u32, scheme: HashScheme, seed: u64) -> Result<()> {
        if (k, scheme, seed) != (self.k, self.scheme, self.seed) {
            return Err(corrupt(format!(
                "an embedded index hashes with k {k}, {scheme:?}, seed {seed}; the file says k {}, {:?}, seed {}",
                self.k, self.scheme, self.seed
            )));
        }
        Ok(())
    }
}

/// Reads a level index file, fully verified.
pub(crate) fn decode(bytes: &[u8]) -> Result<Loaded<LevelIndex>> {
    if bytes.len() < 8 || bytes[..8] != MAGIC {
        return Err(Error::BadMagic);
    }
    if bytes.len() < HEADER_BYTES {
        return Err(Error::Truncated { section: "header", needed: HEADER_BYTES as u64, len: bytes.len() as u64 });
    }
    let major = u16::from_le_bytes([bytes[8], bytes[9]]);
    let minor = u16::from_le_bytes([bytes[10], bytes[11]]);
    if major != LEVELS_FORMAT_MAJOR || minor > LEVELS_FORMAT_MINOR {
        return Err(Error::UnsupportedVersion { major, minor, supported: LEVELS_FORMAT_MAJOR });
    }
    if bytes[12..16] != [0; 4] {
        return Err(corrupt("reserved header bytes are not zero".into()));
    }
    let body_len = u64::from_le_bytes(bytes[16..24].try_into().unwrap_or_default());
    let expected = (HEADER_BYTES as u64).saturating_add(body_len).saturating_add(8);
    if (bytes.len() as u64) < expected {
        return Err(Error::Truncated { section: "body", needed: expected, len: bytes.len() as u64 });
    }
    if bytes.len() as u64 > expected {
        return Err(corrupt(format!("{} bytes after the checksum", bytes.len() as u64 - expected)));
    }
    let body = &bytes[HEADER_BYTES..bytes.len() - 8];
    let sum = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap_or_default());
    if xxh3_64(body) != sum {
        return Err(Error::ChecksumMismatch { section: "level index body".into() });
    }
    let mut c = Cursor { bytes: body, at: 0 };
    let p = f64::from_bits(c.u64("p")?);
    let k = c.u32("k")?;
    let code = c.u32("hash scheme")?;
    let scheme = HashScheme::ALL
        .into_iter()
        .find(|&s| scheme_code(s) == code)
        .ok_or_else(|| corrupt(format!("unknown hash scheme code {code}")))?;
    let seed = c.u64("seed")?;
    if !(p > 0.0 && p < 1.0) {
        return Err(corrupt(format!("false-positive rate {p} is not in (0, 1)")));
    }
    let root_ids = c.ids("ids")?;
    let expect = Expect { minor, k, scheme, seed };
    let mut placed = Vec::with_capacity(root_ids.len());
    let root = decode_node(&mut c, &expect, 0, 0, &mut placed)?;
    placed.sort_unstable();
    if placed != root_ids {
        return Err(corrupt("the sets in the levels are not the file's ids, each once".into()));
    }
    let names_at = c.at;
    skip_names(&mut c)?;
    let (hidden, both, delta) = if minor == 0 {
        (Vec::new(), Vec::new(), Box::new(SetIndex::with_hashing(p, scheme, seed).map_err(Error::into_corrupt_file)?))
    } else {
        let hidden = c.ids("hidden ids")?;
        let both = c.ids("ids in both")?;
        let delta = Box::new(Loaded::<SetIndex>::from_bytes(c.blob("delta")?)?.index);
        expect.check(delta.k(), delta.scheme(), delta.seed())?;
        (hidden, both, delta)
    };
    if c.at != body.len() {
        return Err(corrupt(format!("{} bytes after the delta", body.len() - c.at)));
    }
    let ids = live_ids(&root_ids, &hidden, &both, &delta)?;
    c.at = names_at;
    let n_names = c.u64("name count")?;
    let n_names = c.count(n_names, 12, "names")?;
    let mut names = SetNames::new();
    for _ in 0..n_names {
        let id = c.u64("name id")?;
        let len = c.u32("name length")?;
        let len = c.count(u64::from(len), 1, "name bytes")?;
        let name = c.take(len, "name")?;
        if ids.binary_search(&id).is_err() {
            return Err(corrupt(format!("a name for id {id}, which holds no set")));
        }
        names.insert(id, name.to_vec()).map_err(Error::into_corrupt_file)?;
    }
    let index = LevelIndex { p, k, scheme, seed, root, root_ids, hidden, both, delta, ids };
    let info = crate::persist::FileInfo {
        version: (major, minor),
        file_bytes: bytes.len() as u64,
        checksums: vec![("level index body".into(), sum)],
        rows_verified: true,
    };
    Ok(Loaded { index, names, info })
}

/// Skips the names section (read once the live ids are known).
fn skip_names(c: &mut Cursor<'_>) -> Result<()> {
    let n = c.u64("name count")?;
    let n = c.count(n, 12, "names")?;
    for _ in 0..n {
        c.u64("name id")?;
        let len = c.u32("name length")?;
        let len = c.count(u64::from(len), 1, "name bytes")?;
        c.take(len, "name")?;
    }
    Ok(())
}

/// The live ids: the levels' not hidden, and the delta's. Checks that the
/// hidden ids are the levels', that `both` is exactly the levels' live ids
/// that the delta holds too, and that every list is strictly ascending.
fn live_ids(root_ids: &[u64], hidden: &[u64], both: &[u64], delta: &SetIndex) -> Result<Vec<u64>> {
    if hidden.iter().any(|id| root_ids.binary_search(id).is_err()) {
        return Err(corrupt("a hidden id holds no set in the levels".into()));
    }
    let mut ids: Vec<u64> = root_ids.iter().copied().filter(|id| hidden.binary_search(id).is_err()).collect();
    let mut shared: Vec<u64> = delta.ids().filter(|id| ids.binary_search(id).is_ok()).collect();
    shared.sort_unstable();
    if shared != both {
        return Err(corrupt("the ids in both the levels and the delta are not as listed".into()));
    }
    ids.extend(delta.ids().filter(|id| both.binary_search(id).is_err()));
    ids.sort_unstable();
    Ok(ids)
}

/// A node at `depth` below a level of `bins` bins (0 for the root).
fn decode_node(c: &mut Cursor<'_>, expect: &Expect, depth: usize, bins: usize, placed: &mut Vec<u64>) -> Result<Node> {
    if depth >= MAX_DEPTH {
        return Err(corrupt(format!("levels deeper than {MAX_DEPTH}")));
    }
    match c.u8("node kind")? {
        NODE_FLAT => {
            let index = Loaded::<SetIndex>::from_bytes(c.blob("flat collection")?)?.index;
            expect.check(index.k(), index.scheme(), index.seed())?;
            if index.grown_sets() > 0 {
                return Err(corrupt("a flat collection of a level index has a grown set".into()));
            }
            placed.extend(index.ids());
            Ok(Node::Flat(index))
        }
        NODE_LEAF => {
            let index = Loaded::<SlicedIndex>::from_bytes(c.blob("group")?)?.index;
            let params = index.params();
            expect.check(params.k(), params.scheme(), params.seed())?;
            placed.extend(index.ids());
            Ok(Node::Leaf(index))
        }
        NODE_LEVEL => {
            let n = c.u32("column count")?;
            let n = c.count(u64::from(n), 5, "columns")?;
            let mut owners = Vec::with_capacity(n);
            for _ in 0..n {
                owners.push(match c.u8("column kind")? {
                    OWNER_PIECE => {
                        Owner::Piece { id: c.u64("piece id")?, piece: c.u32("piece")?, pieces: c.u32("pieces")? }
                    }
                    OWNER_GROUP => Owner::Group(c.u32("group")?),
                    other => return Err(corrupt(format!("unknown column kind {other}"))),
                });
            }
            let n_groups = c.u32("group count")?;
            let n_groups = c.count(u64::from(n_groups), 1, "groups")?;
            check_owners(&owners, n_groups, placed)?;
            let index = Loaded::<SlicedIndex>::from_bytes(c.blob("level")?)?.index;
            let params = index.params();
            expect.check(params.k(), params.scheme(), params.seed())?;
            let mut columns: Vec<u64> = index.ids().collect();
            columns.sort_unstable();
            if columns.len() != n || columns.iter().enumerate().any(|(i, &id)| id != i as u64) {
                return Err(corrupt(format!("a level's columns are not 0..{n}")));
            }
            let n_bins = if expect.minor == 0 { 0 } else { c.u32("bin count")? };
            let n_bins = c.count(u64::from(n_bins), 9, "bins")?;
            let mut bins = Vec::with_capacity(n_bins);
            for _ in 0..n_bins {
                let n = c.u64("bin member count")?;
                let n = c.count(n, 12, "bin members")?;
                let members =
                    (0..n).map(|_| Ok((c.u64("member id")?, c.u32("member group")?))).collect::<Result<Vec<_>>>()?;
                let index = Loaded::<SlicedIndex>::from_bytes(c.blob("bin")?)?.index;
                let params = index.params();
                expect.check(params.k(), params.scheme(), params.seed())?;
                let mut columns: Vec<u64> = index.ids().collect();
                columns.sort_unstable();
                if members.windows(2).any(|w| w[0].0 >= w[1].0)
                    || !columns.iter().copied().eq(members.iter().map(|m| m.0))
                {
                    return Err(corrupt("a bin's members are not its columns, by ascending id".into()));
                }
                placed.extend(members.iter().map(|&(id, _)| id));
                let mut groups = super::GroupMask::default();
                for &(_, g) in &members {
                    if g as usize >= n_groups {
                        return Err(corrupt(format!("a bin member names group {g} of {n_groups}")));
                    }
                    groups.insert(g);
                }
                bins.push(Bin { index, members, groups });
            }
            let groups =
                (0..n_groups).map(|_| decode_node(c, expect, depth + 1, n_bins, placed)).collect::<Result<Vec<_>>>()?;
            // Every bin member's group is binned in that bin.
            for (b, bin) in bins.iter().enumerate() {
                for &(id, g) in &bin.members {
                    if !matches!(groups.get(g as usize), Some(Node::Binned(x)) if *x as usize == b) {
                        return Err(corrupt(format!("set {id} of bin {b} names group {g}, which is not in that bin")));
                    }
                }
            }
            Ok(Node::Level(Box::new(Level { index, owners, groups, bins })))
        }
        NODE_BINNED => {
            let bin = c.u32("bin")?;
            if bin as usize >= bins {
                return Err(corrupt(format!("a group in bin {bin} of a level of {bins} bins")));
            }
            Ok(Node::Binned(bin))
        }
        other => Err(corrupt(format!("unknown node kind {other}"))),
    }
}

/// A level's columns: every split set's pieces in order, `0..pieces`, one
/// after another; every group `0..groups` named exactly once. The split
/// sets are appended to `placed`.
fn check_owners(owners: &[Owner], groups: usize, placed: &mut Vec<u64>) -> Result<()> {
    let mut seen = HashSet::new();
    let mut column = 0;
    while column < owners.len() {
        match owners[column] {
            Owner::Piece { id, pieces, .. } => {
                let run = owners.get(column..column.saturating_add(pieces as usize));
                let whole = pieces > 0
                    && run.is_some_and(|run| {
                        run.iter().enumerate().all(|(j, o)| *o == Owner::Piece { id, piece: j as u32, pieces })
                    });
                if !whole {
                    return Err(corrupt(format!("set {id}'s pieces are not whole and in order")));
                }
                placed.push(id);
                column += pieces as usize;
            }
            Owner::Group(g) => {
                if g as usize >= groups || !seen.insert(g) {
                    return Err(corrupt(format!("group {g} is out of range or owns two columns")));
                }
                column += 1;
            }
        }
    }
    if seen.len() != groups {
        return Err(corrupt("a group owns no column".into()));
    }
    Ok(())
}

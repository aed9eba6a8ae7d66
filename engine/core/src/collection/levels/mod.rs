//! [`LevelIndex`]: a collection of sets in levels, for skewed collections
//! where flat size-classed parts answer too many false sets and read too
//! many rows.
//!
//! # Shape
//!
//! A level is one [`SlicedIndex`] of at most
//! [`LevelConfig::top_columns`] columns (64: one word a row), all of one
//! length `m` sized for a column capacity of `c` keys at the target rate
//! `p`. Its columns are of two kinds:
//!
//! - **pieces** of a large set (more than `c / 2` keys): the set is split
//!   into `s = ceil(n / c)` pieces by a hash of the key, so that a key of
//!   the set is in exactly one piece, the one [`piece_of`] names. A query
//!   reports the set only when the key's own piece answers, so the set's
//!   false-positive rate is one column's, whatever `s` (seqan's HIBF splits
//!   a user bin across technical bins without a partition, so a key may
//!   pass any of the `s`, and corrects the bins' sizes for it).
//! - **groups** of small sets (at most `c / 2` keys each), taken in order
//!   of descending size, filled up to `c` keys and kept within a size
//!   class (a factor of two; sets of up to 4 keys together) when the
//!   columns allow: the column holds the union of the members' keys, and
//!   the members' own filters sit one level below, or, for a group of more
//!   than [`LevelConfig::leaf_sets`] members, in a level again.
//!
//! The members' filters of consecutive groups of one size class (largest
//! members within a factor of 1.25) share a **bin**: one [`SlicedIndex`]
//! of at most 512 columns (one cache line a row) sized for its largest
//! member. A key that passes the columns of several groups of a bin (a
//! key many sets hold) reads the bin's rows once, and keeps the answers
//! of the groups it passed.
//!
//! A key is hashed once. It reads a level's `k` rows; only where a
//! group's column answers does it descend into that group's bin. An
//! absent key mostly stops at the top. Each set is reported once (by its
//! own piece, or by its one group), so answers need no deduplication;
//! they come in no particular order. Batches and thresholds read the top
//! level for all their keys in one batch (rows prefetched ahead); a
//! threshold descends into a group only with the keys its column passed,
//! and only when they reach the threshold's count.
//!
//! # The rate of each set
//!
//! Every filter is sized for `p` at its load: a piece for at most `c` keys,
//! a member's filter in a bin for the bin's largest member. A split set
//! answers only where its key's piece does, and a small set only where
//! its own filter does (and its group's column too), so **every set
//! answers an absent key at most at rate `p`** (small sets at about
//! `p * p`: `tests/levels.rs`, `every_set_within_its_rate`).
//!
//! # Writes
//!
//! [`LevelIndex::insert_set`], [`LevelIndex::add_keys`],
//! [`LevelIndex::remove_set`] and [`LevelIndex::replace_set`] keep the
//! levels as built: new and replaced sets go to a flat [`SetIndex`]
//! beside them (the delta, sized and grown as a [`SetIndex`] is), removed
//! and replaced sets of the levels are hidden, and keys added to a set of
//! the levels go to a filter of it in the delta, the set answering where
//! either does (at most the sum of the two rates). Only a new build lays
//! the written sets out in levels (`bloomslice build` again); files keep
//! the delta (format 3.1).
//!
//! # Choosing `c`, and whether levels pay
//!
//! `c` is the least capacity (found by bisection over the sorted sizes,
//! `O(N log K)`, no step quadratic in `N`) for which pieces and groups take
//! at most [`LevelConfig::top_columns`] columns. Levels are built where
//! they pay: their estimated rows must be at most
//! [`LevelConfig::max_memory_ratio`] times a flat [`SetIndex`]'s
//! ([`Layout::bits`]), and the cache lines a query reads fewer (a mix of
//! half present keys, which descend into their group, weighted by the
//! groups' keys, and half absent ones, which descend where a column
//! answers falsely, at its expected rate; a flat layout reads
//! [`Layout::query_lines`]). Otherwise (every set of one size, a handful
//! of sets) the index is one flat [`SetIndex`] and answers as one.
//!
//! Group loads are the sum of the members' sizes, an upper bound of their
//! union, so a group's column is never over its capacity.
//!
//! # Measured
//!
//! `bench/RESULTS.md`, section "Levels" (example `levelprobe`): on the
//! package lists, levels answer about a twentieth of the flat
//! collection's false sets per absent key in about 1.2x its memory, and
//! an absent key several times faster; a key held by hundreds of sets (a
//! shared directory) passes most groups' columns and reads most bins.
//! Small sets' keys are stored twice (their group's column and their own
//! filter), so levels take more memory than the flat collection where
//! every set is small.

mod file;
mod served;

pub use file::{LEVELS_FORMAT_MAJOR, LEVELS_FORMAT_MINOR};
pub(crate) use file::{decode as decode_file, encode as encode_file};

use crate::collection::{Layout, LayoutConfig, SetIndex};
use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};
use crate::params::{BloomParams, HashScheme};
use crate::score::{Scores, Threshold};
use crate::sliced::{BatchResults, SlicedIndex};
use crate::{BloomFilter, ReadIndex};

/// The knobs of [`LevelIndex::build`] (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelConfig {
    /// Columns of a level at most (64: one word a row; at most
    /// [`MAX_LEVEL_COLUMNS`]).
    pub top_columns: usize,
    /// A group of more members than this is split into levels again.
    pub leaf_sets: usize,
    /// Levels are built only if their estimated memory is at most this
    /// times a flat collection's.
    pub max_memory_ratio: f64,
    /// The layout of a collection where levels do not pay.
    pub layout: LayoutConfig,
    /// Threads that build the top level's parts (its groups' columns and
    /// bins, and the levels below); 0: one a core.
    pub threads: usize,
}

impl Default for LevelConfig {
    fn default() -> Self {
        LevelConfig {
            top_columns: 64,
            leaf_sets: 2048,
            max_memory_ratio: 2.0,
            layout: LayoutConfig::default(),
            threads: 0,
        }
    }
}

/// Whose a level's column is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// Piece `piece` of the `pieces` of set `id`.
    Piece { id: u64, piece: u32, pieces: u32 },
    /// Group `0` of the level's groups.
    Group(u32),
}

/// One level: its columns, the groups below it, and the bins holding the
/// members of its groups that are not levels themselves.
#[derive(Clone, Debug)]
struct Level {
    index: SlicedIndex,
    owners: Vec<Owner>,
    groups: Vec<Node>,
    bins: Vec<Bin>,
}

/// The members of consecutive groups of one level and one size class, in
/// one [`SlicedIndex`] (at most [`BIN_COLUMNS`] columns unless one group
/// is wider) sized for the largest member. A key that passes the columns
/// of several of these groups reads the bin's rows once.
#[derive(Clone, Debug)]
struct Bin {
    index: SlicedIndex,
    /// `(set id, group)` of every member, by ascending id.
    members: Vec<(u64, u32)>,
    /// The groups whose members are here.
    groups: GroupMask,
}

impl Bin {
    /// The group of member `id`.
    fn group_of(&self, id: u64) -> Option<u32> {
        self.members.binary_search_by_key(&id, |&(id, _)| id).ok().map(|at| self.members[at].1)
    }
}

/// Columns of a bin at most (one cache line a row), unless one group has
/// more members.
const BIN_COLUMNS: usize = 512;

/// Columns of a level at most (a larger [`LevelConfig::top_columns`] is
/// taken as this).
pub const MAX_LEVEL_COLUMNS: usize = 512;

/// A set of groups (or bins) of one level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct GroupMask([u64; MAX_LEVEL_COLUMNS / 64]);

impl GroupMask {
    #[inline]
    fn insert(&mut self, g: u32) {
        self.0[g as usize / 64] |= 1 << (g % 64);
    }

    #[inline]
    fn contains(&self, g: u32) -> bool {
        self.0[g as usize / 64] >> (g % 64) & 1 == 1
    }

    /// Whether every group of `other` is in `self`.
    fn covers(&self, other: &GroupMask) -> bool {
        self.0.iter().zip(&other.0).all(|(a, b)| b & !a == 0)
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            core::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    w as u32 * 64 + bit
                })
            })
        })
    }
}

/// A flat collection (a root where levels do not pay), a group's members
/// in one [`SlicedIndex`] sized for the largest (files of format 3.0), a
/// group's members in a bin of the level above (its index there), or a
/// level.
#[derive(Clone, Debug)]
enum Node {
    Flat(SetIndex),
    Leaf(SlicedIndex),
    Binned(u32),
    Level(Box<Level>),
}

/// The piece of `pieces` a key of a split set goes to: a hash of the key
/// independent of its probe positions, mapped onto `[0, pieces)`.
#[inline]
pub fn piece_of(hash: KeyHash, pieces: u32) -> u32 {
    // murmur3's 64-bit finaliser over both words.
    let mut x = hash.h1 ^ hash.h2.rotate_left(29);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    ((u128::from(x) * u128::from(pieces)) >> 64) as u32
}

/// One test on a set's path through the levels ([`LevelIndex::paths`]).
#[derive(Clone, Debug, PartialEq)]
pub enum PathStep {
    /// The filter must hold the key.
    Filter(BloomFilter),
    /// The set is split into these pieces: the key's piece
    /// (`pieces[piece_of(hash, pieces.len())]`) must hold it.
    Pieces(Vec<BloomFilter>),
    /// A set written since the build: the key must pass every step of at
    /// least one of these paths (its filters in the levels, its filters
    /// in the delta).
    AnyOf(Vec<Vec<PathStep>>),
}

impl PathStep {
    /// Whether the key hashed as `hash` passes this step.
    pub fn passes(&self, hash: KeyHash) -> bool {
        match self {
            PathStep::Filter(filter) => filter.contains_hash(hash),
            PathStep::Pieces(pieces) => pieces[piece_of(hash, pieces.len() as u32) as usize].contains_hash(hash),
            PathStep::AnyOf(paths) => paths.iter().any(|path| path.iter().all(|step| step.passes(hash))),
        }
    }
}

/// The plan of one level over sets sorted by descending size.
struct Plan {
    capacity: u64,
    /// `(set index, pieces)` of the split sets.
    split: Vec<(usize, u32)>,
    /// Ranges of the sorted sets forming each group.
    groups: Vec<core::ops::Range<usize>>,
    /// Whether groups keep to size classes (read by the tests).
    #[cfg_attr(not(test), allow(dead_code))]
    classes: bool,
}

impl Plan {
    fn columns(&self) -> usize {
        self.split.iter().map(|&(_, s)| s as usize).sum::<usize>() + self.groups.len()
    }

    /// The split of `sizes` (descending) at column capacity `c`; with
    /// `classes`, a group holds sets within a factor of two of its largest
    /// (tiny sets of up to 4 keys together), as its members share one
    /// filter length.
    fn at(sizes: &[u64], c: u64, classes: bool) -> Plan {
        let big = sizes.partition_point(|&n| n > c / 2);
        let split = (0..big).map(|i| (i, sizes[i].div_ceil(c) as u32)).collect();
        let mut groups = Vec::new();
        let (mut start, mut load) = (big, 0u64);
        for (i, &n) in sizes.iter().enumerate().skip(big) {
            if i > start && (load + n > c || (classes && n.max(4) * 2 < sizes[start])) {
                groups.push(start..i);
                (start, load) = (i, 0);
            }
            load += n;
        }
        if start < sizes.len() {
            groups.push(start..sizes.len());
        }
        Plan { capacity: c, split, groups, classes }
    }

    /// The plan of least capacity whose columns fit in `columns`, in size
    /// classes when they fit at all (see [`Plan::at`]).
    fn choose(sizes: &[u64], columns: usize) -> Plan {
        let total: u64 = sizes.iter().sum::<u64>().max(1);
        let classes = Plan::at(sizes, total, true).columns() <= columns;
        let (mut lo, mut hi) = (1u64, total);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if Plan::at(sizes, mid, classes).columns() > columns {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Plan::at(sizes, lo, classes)
    }
}

/// Estimated rows and row runs of a node over `sizes` (descending).
struct Estimate {
    bits: u64,
    /// Row runs a present key reads, on average over the keys.
    present: f64,
    /// Row runs an absent key reads, on average.
    absent: f64,
}

impl Estimate {
    /// Row runs of a query mix of half present, half absent keys.
    fn runs(&self) -> f64 {
        (self.present + self.absent) / 2.0
    }
}

fn estimate_flat(sizes: &[u64], p: f64, config: LayoutConfig) -> Result<Estimate> {
    let layout = Layout::choose(sizes, p, config)?;
    let lines = layout.query_lines() as f64;
    Ok(Estimate { bits: layout.bits(), present: lines, absent: lines })
}

/// A level reads its `k` rows; a present key then descends into its
/// group (weighted by the group's share of the keys), an absent one into
/// each group whose column answers falsely (at the column's expected
/// rate at its load).
fn estimate_plan(plan: &Plan, sizes: &[u64], p: f64, config: &LevelConfig) -> Result<Estimate> {
    let params = BloomParams::for_capacity(plan.capacity, p)?;
    let k = f64::from(params.k()) * plan.columns().div_ceil(512) as f64;
    let total = sizes.iter().sum::<u64>().max(1) as f64;
    let mut e = Estimate { bits: super::layout::part_bits(params.m(), plan.columns() as u64), present: k, absent: k };
    for group in &plan.groups {
        let sizes = &sizes[group.clone()];
        let below = estimate_group(sizes, p, config)?;
        let load: u64 = sizes.iter().sum();
        e.bits = e.bits.saturating_add(below.bits);
        e.present += load as f64 / total * below.present;
        e.absent += params.expected_fpr(load) * below.absent;
    }
    Ok(e)
}

/// Whether levels (as `plan`) pay over a flat collection for `sizes`
/// (descending, each at least 1): more sets than a level's columns, rows
/// within [`LevelConfig::max_memory_ratio`] of the flat layout's, and fewer
/// row runs a query.
fn pays(sizes: &[u64], plan: &Plan, p: f64, config: &LevelConfig) -> Result<bool> {
    if sizes.len() <= top_columns(config) {
        return Ok(false);
    }
    let flat = estimate_flat(sizes, p, config.layout)?;
    let levels = estimate_plan(plan, sizes, p, config)?;
    Ok(levels.bits as f64 <= config.max_memory_ratio * flat.bits as f64 && levels.runs() < flat.runs())
}

/// Whether a group of `sizes` is split into a level again: it has more
/// than [`LevelConfig::leaf_sets`] members and a level over them would
/// hold more than one column.
fn splits(sizes: &[u64], config: &LevelConfig) -> Option<Plan> {
    if sizes.len() <= config.leaf_sets {
        return None;
    }
    Some(Plan::choose(sizes, top_columns(config))).filter(|plan| plan.columns() > 1)
}

/// A level's columns at most (at least 2, so that a level divides, and at
/// most [`MAX_LEVEL_COLUMNS`]).
fn top_columns(config: &LevelConfig) -> usize {
    config.top_columns.clamp(2, MAX_LEVEL_COLUMNS)
}

fn estimate_group(sizes: &[u64], p: f64, config: &LevelConfig) -> Result<Estimate> {
    if let Some(plan) = splits(sizes, config) {
        return estimate_plan(&plan, sizes, p, config);
    }
    let params = BloomParams::for_capacity(sizes[0], p)?;
    let lines = f64::from(params.k()) * sizes.len().div_ceil(512) as f64;
    Ok(Estimate { bits: super::layout::part_bits(params.m(), sizes.len() as u64), present: lines, absent: lines })
}

/// A collection of sets in levels (see the [module documentation](self)).
///
/// ```
/// use bloomslice::{LevelConfig, LevelIndex, ReadIndex};
///
/// // One large set and many small ones.
/// let mut sets: Vec<(u64, Vec<String>)> = vec![(0, (0..20_000).map(|i| format!("big-{i}")).collect())];
/// for id in 1..400u64 {
///     sets.push((id, (0..id % 40 + 1).map(|i| format!("s{id}-{i}")).collect()));
/// }
/// let index = LevelIndex::build(&sets, 0.01, LevelConfig::default())?;
/// assert_eq!(index.depth(), 2);
/// assert!(index.query("big-7").contains(&0));
/// assert!(index.query("s77-3").contains(&77));
/// assert_eq!(index.len(), 400);
/// # Ok::<(), bloomslice::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct LevelIndex {
    p: f64,
    k: u32,
    scheme: HashScheme,
    seed: u64,
    root: Node,
    /// The ids of the sets the levels hold, ascending (some may be hidden).
    root_ids: Vec<u64>,
    /// Ids of the levels whose filters no longer count (removed or
    /// replaced since the build), ascending.
    hidden: Vec<u64>,
    /// The sets written since the build: new sets, replaced sets, and keys
    /// added to sets of the levels.
    delta: Box<SetIndex>,
    /// Ids of the levels (not hidden) that have keys in `delta` too,
    /// ascending: their answers are the union of both.
    both: Vec<u64>,
    /// Every live set's id, ascending.
    ids: Vec<u64>,
}

impl LevelIndex {
    /// An index of `sets` (`(id, keys)`) at false-positive rate `p` per
    /// set, with the default hash scheme and seed 0, in levels where they
    /// pay (see the module documentation; [`LevelIndex::pays`] tells from
    /// the sizes alone).
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateId`] for an id given twice, and the errors of
    /// [`SetIndex::build`].
    pub fn build<K: Key + Sync, S: AsRef<[K]>>(sets: &[(u64, S)], p: f64, config: LevelConfig) -> Result<Self> {
        Self::build_with_hashing(sets, p, config, HashScheme::default(), 0)
    }

    /// [`LevelIndex::build`] with the given hash scheme and seed.
    ///
    /// # Errors
    ///
    /// As [`LevelIndex::build`].
    pub fn build_with_hashing<K: Key + Sync, S: AsRef<[K]>>(
        sets: &[(u64, S)],
        p: f64,
        config: LevelConfig,
        scheme: HashScheme,
        seed: u64,
    ) -> Result<Self> {
        let k = BloomParams::for_capacity(1, p)?.k();
        let mut ids: Vec<u64> = sets.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        if let Some(pair) = ids.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(Error::DuplicateId(pair[0]));
        }
        let mut sorted: Vec<(u64, &[K])> = sets.iter().map(|(id, keys)| (*id, keys.as_ref())).collect();
        sorted.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        let sizes: Vec<u64> = sorted.iter().map(|(_, keys)| (keys.len() as u64).max(1)).collect();
        let hashing = Hashing { p, scheme, seed };
        let plan = Plan::choose(&sizes, top_columns(&config));
        let root = if pays(&sizes, &plan, p, &config)? {
            let threads = if config.threads == 0 {
                std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
            } else {
                config.threads
            };
            Node::Level(Box::new(hashing.level(&sorted, &sizes, &plan, &config, threads)?))
        } else {
            Node::Flat(hashing.flat(&sorted, config.layout)?)
        };
        let delta = Box::new(SetIndex::with_hashing(p, scheme, seed)?);
        Ok(LevelIndex {
            p,
            k,
            scheme,
            seed,
            root,
            root_ids: ids.clone(),
            hidden: Vec::new(),
            delta,
            both: Vec::new(),
            ids,
        })
    }

    /// Whether levels pay for sets of `sizes` keys at rate `p` under
    /// `config` (the test [`LevelIndex::build`] makes; where they do not,
    /// it builds one flat [`SetIndex`]).
    ///
    /// # Errors
    ///
    /// The errors of [`SetIndex::build`]'s layout for a bad `p`.
    pub fn pays(sizes: &[u64], p: f64, config: &LevelConfig) -> Result<bool> {
        let mut sizes: Vec<u64> = sizes.iter().map(|&n| n.max(1)).collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        pays(&sizes, &Plan::choose(&sizes, top_columns(config)), p, config)
    }

    /// The target false-positive rate of every set.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Levels a key may read: 1 for a flat collection.
    pub fn depth(&self) -> usize {
        self.root.depth()
    }

    /// The top level's columns, or `None` for a flat collection.
    pub fn top_columns(&self) -> Option<usize> {
        match &self.root {
            Node::Level(level) => Some(level.owners.len()),
            _ => None,
        }
    }

    /// `(m, columns)` of the top level, or `None` for a flat collection.
    pub fn top_shape(&self) -> Option<(u64, usize)> {
        match &self.root {
            Node::Level(level) => Some((level.index.params().m(), level.owners.len())),
            _ => None,
        }
    }

    /// Row runs a key reads at most: `k` a level on its deepest path, plus
    /// `k` a part of the flat collection it ends in.
    pub fn max_row_runs(&self) -> usize {
        self.root.max_row_runs(self.k as usize)
    }

    /// Bytes of the filters' rows, every level's.
    pub fn rows_bytes(&self) -> usize {
        self.root.rows_bytes()
    }

    /// Number of sets.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the index holds no set.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether a set is stored under `id`.
    pub fn contains(&self, id: u64) -> bool {
        self.ids.binary_search(&id).is_ok()
    }

    /// The ids of the sets, ascending.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// Bytes of memory the index holds.
    pub fn memory_bytes(&self) -> usize {
        let ids = self.ids.capacity() + self.root_ids.capacity() + self.hidden.capacity() + self.both.capacity();
        self.root.memory_bytes() + self.delta.memory_bytes() + ids * 8
    }

    /// The sets written since the build ([`LevelIndex::insert_set`] and
    /// the other writes), in a flat [`SetIndex`] beside the levels.
    pub fn delta(&self) -> &SetIndex {
        &self.delta
    }

    /// Ids of the sets of the levels removed or replaced since the build,
    /// ascending: their filters in the levels no longer answer.
    pub fn hidden(&self) -> &[u64] {
        &self.hidden
    }

    /// Every set's path: the tests a key passes, level by level, exactly
    /// when the index reports the set (a naive model of the index, for
    /// oracles and tests), by ascending id.
    ///
    /// # Errors
    ///
    /// The errors of [`SlicedIndex::filter_cloned`].
    pub fn paths(&self) -> Result<Vec<(u64, Vec<PathStep>)>> {
        let mut built = Vec::with_capacity(self.root_ids.len());
        self.root.paths(&mut Vec::new(), &mut built)?;
        built.retain(|(id, _)| self.hidden.binary_search(id).is_err());
        let parts: Vec<&SlicedIndex> = self.delta.parts().collect();
        let mut paths = Vec::with_capacity(self.ids.len());
        for (id, path) in built {
            if self.both.binary_search(&id).is_err() {
                paths.push((id, path));
            } else {
                let mut any = vec![path];
                any.extend(delta_paths(&self.delta, &parts, id)?);
                paths.push((id, vec![PathStep::AnyOf(any)]));
            }
        }
        for id in self.delta.ids() {
            if self.both.binary_search(&id).is_err() {
                let mut any = delta_paths(&self.delta, &parts, id)?;
                let path = if any.len() == 1 { any.pop().unwrap_or_default() } else { vec![PathStep::AnyOf(any)] };
                paths.push((id, path));
            }
        }
        paths.sort_unstable_by_key(|(id, _)| *id);
        Ok(paths)
    }

    /// Ids of the sets that may contain `key`, each once, in no particular
    /// order.
    pub fn query<K: Key + ?Sized>(&self, key: &K) -> Vec<u64> {
        let mut out = Vec::new();
        self.query_hash_into(key.key_hash(self.seed), &mut out);
        out
    }

    /// Scores `keys` against every set: afterwards `scores` holds, for
    /// every set, how many of the keys it may contain (a key repeated
    /// counts once per occurrence), ascending id, non-zero counts only.
    pub fn score_into<K: Key>(&self, keys: &[K], scores: &mut Scores) {
        let hashes: Vec<KeyHash> = keys.iter().map(|key| key.key_hash(self.seed)).collect();
        scores.entries.clear();
        self.counts(&hashes, 1, &mut scores.entries);
        scores.entries.sort_unstable();
        scores.keys = keys.len();
    }

    /// The sets whose count for `keys` reaches `threshold`, as
    /// `(id, count)` by ascending id, into `out` (cleared first). A level
    /// descends into a group only with the keys its column passes, and
    /// only when they are at least the threshold's count; a `min_count` of
    /// 0 returns every set.
    pub fn query_threshold_into<K: Key>(&self, keys: &[K], threshold: Threshold, out: &mut Vec<(u64, u32)>) {
        let hashes: Vec<KeyHash> = keys.iter().map(|key| key.key_hash(self.seed)).collect();
        let min_count = threshold.min_count(keys.len());
        out.clear();
        self.counts(&hashes, min_count.max(1), out);
        out.sort_unstable();
        if min_count == 0 {
            let counted = core::mem::take(out);
            out.extend(self.ids.iter().map(|&id| {
                let at = counted.binary_search_by_key(&id, |&(i, _)| i);
                (id, at.map_or(0, |at| counted[at].1))
            }));
        }
    }

    /// [`LevelIndex::query`] by the key's hash, into `out` (cleared
    /// first). Allocates nothing once `out` has grown.
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        out.clear();
        self.root.append(hash, out);
        self.finish(hash, out);
    }

    /// Answers for `hashes`, one per key, into `results` (cleared first):
    /// the top level is read for every key in one batch (its rows
    /// prefetched a few keys ahead), then each key descends.
    pub fn query_batch_hashes_into(&self, hashes: &[KeyHash], results: &mut BatchResults) {
        results.clear();
        let mut ids = Vec::new();
        if let Node::Level(level) = &self.root {
            let mut top = BatchResults::new();
            ReadIndex::query_batch_hashes(&level.index, hashes, &mut top);
            for (i, &hash) in hashes.iter().enumerate() {
                ids.clear();
                ids.extend_from_slice(top.get(i).unwrap_or_default());
                level.descend(hash, 0, &mut ids);
                self.finish(hash, &mut ids);
                results.push_answer(&ids);
            }
        } else {
            for &hash in hashes {
                self.query_hash_into(hash, &mut ids);
                results.push_answer(&ids);
            }
        }
    }

    /// The writes since the build in a key's answer `out` (the levels'):
    /// hidden sets dropped, the delta's answers added, each set once.
    fn finish(&self, hash: KeyHash, out: &mut Vec<u64>) {
        if !self.hidden.is_empty() {
            out.retain(|id| self.hidden.binary_search(id).is_err());
        }
        if !self.delta.is_empty() {
            let start = out.len();
            self.delta.query_hash_append(hash, out);
            if !self.both.is_empty() {
                // A set in both answers once.
                let mut at = out.len();
                while at > start {
                    at -= 1;
                    let id = out[at];
                    if self.both.binary_search(&id).is_ok() && out[..start].contains(&id) {
                        out.swap_remove(at);
                    }
                }
            }
        }
    }

    /// `(id, count)` of every live set whose count for `hashes` is at
    /// least `min_count` (at least 1), unordered.
    fn counts(&self, hashes: &[KeyHash], min_count: u32, out: &mut Vec<(u64, u32)>) {
        self.root.score(hashes, min_count, out);
        if self.hidden.is_empty() && self.delta.is_empty() {
            return;
        }
        out.retain(|(id, _)| self.hidden.binary_search(id).is_err() && self.both.binary_search(id).is_err());
        if !self.delta.is_empty() && hashes.len() >= min_count as usize {
            let mut found = Vec::new();
            self.delta.query_threshold_into(hashes, Threshold::count(min_count), &mut Scores::new(), &mut found);
            out.extend(found.into_iter().filter(|(id, _)| self.both.binary_search(id).is_err()));
        }
        if !self.both.is_empty() {
            // Sets in both count a key once, whichever answers: key by key.
            let mut counts = vec![0u32; self.both.len()];
            let mut ids = Vec::new();
            for &hash in hashes {
                self.query_hash_into(hash, &mut ids);
                for id in &ids {
                    if let Ok(at) = self.both.binary_search(id) {
                        counts[at] += 1;
                    }
                }
            }
            out.extend(self.both.iter().copied().zip(counts).filter(|&(_, count)| count >= min_count));
        }
    }

    /// Adds a set under a new id. It goes to the flat [`SetIndex`] beside
    /// the levels ([`LevelIndex::delta`]), sized for its keys; the levels'
    /// layout changes only when the index is built again.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateId`] for an id that holds a set, and the errors of
    /// [`SetIndex::insert_set`]; the index is unchanged after an error.
    pub fn insert_set<K: Key>(&mut self, id: u64, keys: &[K]) -> Result<()> {
        let Err(at) = self.ids.binary_search(&id) else {
            return Err(Error::DuplicateId(id));
        };
        self.ids.try_reserve(1).map_err(|_| Error::CapacityOverflow("id list"))?;
        self.delta.insert_set(id, keys)?;
        self.ids.insert(at, id);
        Ok(())
    }

    /// Removes set `id`: from the delta, and hidden in the levels.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged.
    pub fn remove_set(&mut self, id: u64) -> Result<()> {
        let at = self.ids.binary_search(&id).map_err(|_| Error::UnknownId(id))?;
        self.hidden.try_reserve(1).map_err(|_| Error::CapacityOverflow("id list"))?;
        if self.delta.contains(id) {
            self.delta.remove_set(id)?;
        }
        self.hide(id);
        self.ids.remove(at);
        Ok(())
    }

    /// Adds `keys` to set `id`. A set of the levels keeps its filters
    /// there and gains one in the delta: it answers where either does, so
    /// its rate is at most the sum of the two filters' (each as
    /// [`LevelIndex`] states; the delta's grows as [`SetIndex::add_keys`]
    /// says).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`] (the index is unchanged), and the errors of
    /// [`SetIndex::add_keys`] / [`SetIndex::insert_set`].
    pub fn add_keys<K: Key>(&mut self, id: u64, keys: &[K]) -> Result<()> {
        if !self.contains(id) {
            return Err(Error::UnknownId(id));
        }
        if self.delta.contains(id) {
            return self.delta.add_keys(id, keys);
        }
        if keys.is_empty() {
            return Ok(());
        }
        // Not in the delta, so not in `both` either.
        let at = self.both.binary_search(&id).unwrap_or_else(|at| at);
        self.both.try_reserve(1).map_err(|_| Error::CapacityOverflow("id list"))?;
        self.delta.insert_set(id, keys)?;
        self.both.insert(at, id);
        Ok(())
    }

    /// Replaces the keys of set `id` with `keys`: the set's filters in the
    /// levels are hidden and its new filter is in the delta.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`], and the errors of [`SetIndex::replace_set`] /
    /// [`SetIndex::insert_set`]; the index is unchanged after an error.
    pub fn replace_set<K: Key>(&mut self, id: u64, keys: &[K]) -> Result<()> {
        if !self.contains(id) {
            return Err(Error::UnknownId(id));
        }
        self.hidden.try_reserve(1).map_err(|_| Error::CapacityOverflow("id list"))?;
        if self.delta.contains(id) {
            self.delta.replace_set(id, keys)?;
        } else {
            self.delta.insert_set(id, keys)?;
        }
        self.hide(id);
        Ok(())
    }

    /// Hides `id`'s filters in the levels, if it has any, and drops it
    /// from `both`.
    fn hide(&mut self, id: u64) {
        if let Ok(at) = self.both.binary_search(&id) {
            self.both.remove(at);
        }
        if self.root_ids.binary_search(&id).is_ok()
            && let Err(at) = self.hidden.binary_search(&id)
        {
            self.hidden.insert(at, id);
        }
    }
}

/// The paths of a set of the delta: one a filter of it (any answers).
fn delta_paths(delta: &SetIndex, parts: &[&SlicedIndex], id: u64) -> Result<Vec<Vec<PathStep>>> {
    let filters = delta.filters(id).unwrap_or_default();
    filters.iter().map(|info| Ok(vec![PathStep::Filter(parts[info.part].filter_cloned(id)?)])).collect()
}

/// Sets as the builder takes them: `(id, keys)`.
type Sets<'a, K> = &'a [(u64, &'a [K])];

/// What every node of one index shares.
struct Hashing {
    p: f64,
    scheme: HashScheme,
    seed: u64,
}

impl Hashing {
    fn flat<K: Key>(&self, sets: &[(u64, &[K])], layout: LayoutConfig) -> Result<SetIndex> {
        SetIndex::build_with_hashing(sets, self.p, layout, self.scheme, self.seed)
    }

    /// A bin of the members of `groups` (`(group, its sets)`), sized for
    /// the largest (`largest` keys).
    fn bin<K: Key>(&self, groups: &[(u32, Sets<'_, K>)], largest: u64) -> Result<Bin> {
        let params = BloomParams::for_capacity(largest, self.p)?.with_scheme(self.scheme).with_seed(self.seed);
        let mut filters = Vec::new();
        let mut members = Vec::new();
        let mut mask = GroupMask::default();
        for &(g, sets) in groups {
            mask.insert(g);
            for (id, keys) in sets {
                let mut filter = BloomFilter::new(params)?;
                for key in *keys {
                    filter.insert_hash(key.key_hash(self.seed));
                }
                filters.push((*id, filter));
                members.push((*id, g));
            }
        }
        let mut index = SlicedIndex::new(params);
        let refs: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
        index.insert_filters(&refs)?;
        members.sort_unstable();
        Ok(Bin { index, members, groups: mask })
    }

    /// A level over `sets` sorted by descending size (`sizes`, at least 1),
    /// its parts built on up to `threads` threads.
    fn level<K: Key + Sync>(
        &self,
        sets: &[(u64, &[K])],
        sizes: &[u64],
        plan: &Plan,
        config: &LevelConfig,
        threads: usize,
    ) -> Result<Level> {
        let params = BloomParams::for_capacity(plan.capacity, self.p)?.with_scheme(self.scheme).with_seed(self.seed);
        let mut owners = Vec::with_capacity(plan.columns());
        for &(i, pieces) in &plan.split {
            owners.extend((0..pieces).map(|piece| Owner::Piece { id: sets[i].0, piece, pieces }));
        }
        // Each group is a level again, or goes to a bin: consecutive groups
        // of one size class share one of at most `BIN_COLUMNS` columns.
        let mut groups = Vec::with_capacity(plan.groups.len());
        let mut sub_plans: Vec<Option<Plan>> = Vec::with_capacity(plan.groups.len());
        let mut bins: Vec<(Vec<u32>, u64)> = Vec::new();
        let mut open_columns = 0usize;
        for (g, range) in plan.groups.iter().enumerate() {
            owners.push(Owner::Group(g as u32));
            let member_sizes = &sizes[range.clone()];
            let sub = splits(member_sizes, config);
            let is_level = sub.is_some();
            sub_plans.push(sub);
            if is_level {
                groups.push(None);
                continue;
            }
            let fits = bins.last().is_some_and(|&(_, largest)| {
                open_columns + range.len() <= BIN_COLUMNS && member_sizes[0].max(4) * 5 >= largest * 4
            });
            if !fits {
                bins.push((Vec::new(), member_sizes[0]));
                open_columns = 0;
            }
            let last = bins.len() - 1;
            bins[last].0.push(g as u32);
            open_columns += range.len();
            groups.push(Some(last as u32));
        }
        // The parts, each on its own: the split sets' pieces, every
        // group's column, every group that is a level, every bin.
        let mut jobs: Vec<Job> = (0..plan.split.len()).map(Job::Pieces).collect();
        jobs.extend((0..plan.groups.len()).map(Job::Column));
        jobs.extend(groups.iter().enumerate().filter(|(_, bin)| bin.is_none()).map(|(g, _)| Job::Level(g)));
        jobs.extend((0..bins.len()).map(Job::Bin));
        let built = par_map(&jobs, threads, |job| -> Result<Built> {
            match *job {
                Job::Pieces(i) => {
                    let ((_, keys), pieces) = (sets[plan.split[i].0], plan.split[i].1);
                    let mut filters = (0..pieces).map(|_| BloomFilter::new(params)).collect::<Result<Vec<_>>>()?;
                    for key in keys {
                        let hash = key.key_hash(self.seed);
                        filters[piece_of(hash, pieces) as usize].insert_hash(hash);
                    }
                    Ok(Built::Filters(filters))
                }
                Job::Column(g) => {
                    let mut filter = BloomFilter::new(params)?;
                    for (_, keys) in &sets[plan.groups[g].clone()] {
                        for key in *keys {
                            filter.insert_hash(key.key_hash(self.seed));
                        }
                    }
                    Ok(Built::Filters(vec![filter]))
                }
                Job::Level(g) => {
                    let range = plan.groups[g].clone();
                    let (members, member_sizes) = (&sets[range.clone()], &sizes[range]);
                    let sub = sub_plans[g].as_ref().ok_or(Error::Invalid("a level's group has no plan".into()))?;
                    Ok(Built::Level(Box::new(self.level(members, member_sizes, sub, config, 1)?)))
                }
                Job::Bin(b) => {
                    let (bin_groups, largest) = &bins[b];
                    let members: Vec<(u32, Sets<'_, K>)> =
                        bin_groups.iter().map(|&g| (g, &sets[plan.groups[g as usize].clone()])).collect();
                    Ok(Built::Bin(self.bin(&members, *largest)?))
                }
            }
        })?;
        let mut filters = Vec::with_capacity(plan.columns());
        let mut levels = Vec::new();
        let mut built_bins = Vec::with_capacity(bins.len());
        for part in built {
            match part {
                Built::Filters(f) => filters.extend(f),
                Built::Level(level) => levels.push(level),
                Built::Bin(bin) => built_bins.push(bin),
            }
        }
        let mut levels = levels.into_iter();
        let groups = groups
            .into_iter()
            .map(|bin| match bin {
                Some(b) => Ok(Node::Binned(b)),
                None => levels.next().map(Node::Level).ok_or(Error::Invalid("a level's group went missing".into())),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut index = SlicedIndex::new(params);
        let refs: Vec<(u64, &BloomFilter)> = filters.iter().enumerate().map(|(c, f)| (c as u64, f)).collect();
        index.insert_filters(&refs)?;
        Ok(Level { index, owners, groups, bins: built_bins })
    }
}

/// A part of a level to build ([`Hashing::level`]).
#[derive(Clone, Copy)]
enum Job {
    /// The pieces of split set `i` of the plan.
    Pieces(usize),
    /// Group `g`'s column.
    Column(usize),
    /// Group `g`, a level again.
    Level(usize),
    /// Bin `b`.
    Bin(usize),
}

/// A built part of a level.
enum Built {
    Filters(Vec<BloomFilter>),
    Level(Box<Level>),
    Bin(Bin),
}

/// `f` over `items` on up to `threads` scoped threads (each takes the next
/// item not yet taken), the results in the items' order; the first error
/// in that order, if any.
fn par_map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> Result<R> + Sync) -> Result<Vec<R>> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, Result<R>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break out };
                        out.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

impl Node {
    /// Appends the ids that may hold the key to `out`.
    fn append(&self, hash: KeyHash, out: &mut Vec<u64>) {
        match self {
            Node::Flat(set_index) => set_index.query_hash_append(hash, out),
            Node::Leaf(index) => index.query_hash_append(hash, out),
            // Read by the level above, with its bins.
            Node::Binned(_) => {}
            Node::Level(level) => {
                // The level's answering columns go to the end of `out`, are
                // replaced by the sets they stand for, then removed.
                let start = out.len();
                level.index.query_hash_append(hash, out);
                level.descend(hash, start, out);
            }
        }
    }
}

impl Level {
    /// Replaces the level's answering columns for the key, `out[start..]`,
    /// by the sets below them that may hold it.
    fn descend(&self, hash: KeyHash, start: usize, out: &mut Vec<u64>) {
        let end = out.len();
        let (mut groups, mut bins) = (GroupMask::default(), GroupMask::default());
        for at in start..end {
            match self.owners[out[at] as usize] {
                Owner::Piece { id, piece, pieces } => {
                    if piece_of(hash, pieces) == piece {
                        out.push(id);
                    }
                }
                Owner::Group(g) => match &self.groups[g as usize] {
                    Node::Binned(bin) => {
                        groups.insert(g);
                        bins.insert(*bin);
                    }
                    node => node.append(hash, out),
                },
            }
        }
        out.drain(start..end);
        for bin in bins.iter() {
            // The bin's answers, kept where their group's column
            // answered (all of them when every group of the bin's
            // did).
            let bin = &self.bins[bin as usize];
            let start = out.len();
            bin.index.query_hash_append(hash, out);
            if !groups.covers(&bin.groups) {
                let mut kept = start;
                for at in start..out.len() {
                    let id = out[at];
                    if bin.group_of(id).is_some_and(|g| groups.contains(g)) {
                        out[kept] = id;
                        kept += 1;
                    }
                }
                out.truncate(kept);
            }
        }
    }
}

impl Node {
    /// Appends `(id, count)` of every set below this node whose count for
    /// `hashes` is at least `min_count` (at least 1) to `out`, unordered.
    fn score(&self, hashes: &[KeyHash], min_count: u32, out: &mut Vec<(u64, u32)>) {
        if hashes.len() < min_count as usize {
            return;
        }
        match self {
            Node::Flat(set_index) => {
                let mut found = Vec::new();
                set_index.query_threshold_into(hashes, Threshold::count(min_count), &mut Scores::new(), &mut found);
                out.extend(found);
            }
            Node::Leaf(index) => {
                let mut found = Vec::new();
                index.query_threshold_into(hashes, Threshold::count(min_count), &mut Scores::new(), &mut found);
                out.extend(found);
            }
            // Counted by the level above, with its bins.
            Node::Binned(_) => {}
            Node::Level(level) => {
                // Each key's columns: pieces count where the key's own piece
                // answers, groups collect the keys their column passes.
                let mut piece_counts = vec![0u32; level.owners.len()];
                let mut group_keys: Vec<Vec<KeyHash>> = vec![Vec::new(); level.groups.len()];
                let mut top = BatchResults::new();
                ReadIndex::query_batch_hashes(&level.index, hashes, &mut top);
                for (i, &hash) in hashes.iter().enumerate() {
                    for &column in top.get(i).unwrap_or_default() {
                        match level.owners[column as usize] {
                            Owner::Piece { piece, pieces, .. } => {
                                if piece_of(hash, pieces) == piece {
                                    piece_counts[column as usize] += 1;
                                }
                            }
                            Owner::Group(g) => group_keys[g as usize].push(hash),
                        }
                    }
                }
                // A binned group's members are counted over the keys its
                // column passed, by its bin's threshold query (the bin's
                // other members dropped), where they are enough.
                let mut found = Vec::new();
                for (g, node) in level.groups.iter().enumerate() {
                    if let Node::Binned(b) = node
                        && group_keys[g].len() >= min_count as usize
                    {
                        let bin = &level.bins[*b as usize];
                        let threshold = Threshold::count(min_count);
                        bin.index.query_threshold_into(&group_keys[g], threshold, &mut Scores::new(), &mut found);
                        out.extend(found.iter().copied().filter(|&(id, _)| bin.group_of(id) == Some(g as u32)));
                    }
                }
                let mut column = 0;
                while column < level.owners.len() {
                    match level.owners[column] {
                        Owner::Piece { id, pieces, .. } => {
                            let count: u32 = piece_counts[column..column + pieces as usize].iter().sum();
                            if count >= min_count {
                                out.push((id, count));
                            }
                            column += pieces as usize;
                        }
                        Owner::Group(g) => {
                            level.groups[g as usize].score(&group_keys[g as usize], min_count, out);
                            column += 1;
                        }
                    }
                }
            }
        }
    }

    /// Appends every set's path below `above` (the steps of the levels
    /// above) to `paths`.
    fn paths(&self, above: &mut Vec<PathStep>, paths: &mut Vec<(u64, Vec<PathStep>)>) -> Result<()> {
        match self {
            Node::Flat(set_index) => {
                let parts: Vec<&SlicedIndex> = set_index.parts().collect();
                for id in set_index.ids() {
                    // A built index's sets have one filter each (none grows).
                    let mut path = above.clone();
                    if let Some(info) = set_index.filters(id).and_then(|filters| filters.first().copied()) {
                        path.push(PathStep::Filter(parts[info.part].filter_cloned(id)?));
                    }
                    paths.push((id, path));
                }
            }
            Node::Binned(_) => {}
            Node::Leaf(index) => {
                for id in index.ids() {
                    let mut path = above.clone();
                    path.push(PathStep::Filter(index.filter_cloned(id)?));
                    paths.push((id, path));
                }
            }
            Node::Level(level) => {
                let mut column = 0;
                while column < level.owners.len() {
                    match level.owners[column] {
                        Owner::Piece { id, pieces, .. } => {
                            let filters = (column..column + pieces as usize)
                                .map(|c| level.index.filter_cloned(c as u64))
                                .collect::<Result<Vec<_>>>()?;
                            let mut path = above.clone();
                            path.push(PathStep::Pieces(filters));
                            paths.push((id, path));
                            column += pieces as usize;
                        }
                        Owner::Group(g) => {
                            above.push(PathStep::Filter(level.index.filter_cloned(column as u64)?));
                            if let Node::Binned(bin) = level.groups[g as usize] {
                                let bin = &level.bins[bin as usize];
                                for &(id, group) in &bin.members {
                                    if group == g {
                                        let mut path = above.clone();
                                        path.push(PathStep::Filter(bin.index.filter_cloned(id)?));
                                        paths.push((id, path));
                                    }
                                }
                            }
                            level.groups[g as usize].paths(above, paths)?;
                            above.pop();
                            column += 1;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn max_row_runs(&self, k: usize) -> usize {
        match self {
            Node::Flat(set_index) => k * set_index.parts().filter(|part| !part.is_empty()).count(),
            Node::Leaf(_) | Node::Binned(_) => k,
            Node::Level(level) => k + level.groups.iter().map(|g| g.max_row_runs(k)).max().unwrap_or(0),
        }
    }

    fn depth(&self) -> usize {
        match self {
            Node::Flat(_) | Node::Leaf(_) | Node::Binned(_) => 1,
            Node::Level(level) => 1 + level.groups.iter().map(Node::depth).max().unwrap_or(0),
        }
    }

    fn rows_bytes(&self) -> usize {
        match self {
            Node::Flat(set_index) => set_index.parts().map(SlicedIndex::rows_bytes).sum(),
            Node::Leaf(index) => index.rows_bytes(),
            Node::Binned(_) => 0,
            Node::Level(level) => {
                level.index.rows_bytes()
                    + level.bins.iter().map(|bin| bin.index.rows_bytes()).sum::<usize>()
                    + level.groups.iter().map(Node::rows_bytes).sum::<usize>()
            }
        }
    }

    fn memory_bytes(&self) -> usize {
        match self {
            Node::Flat(set_index) => set_index.memory_bytes(),
            Node::Leaf(index) => index.memory_bytes(),
            Node::Binned(_) => 0,
            Node::Level(level) => {
                level.index.memory_bytes()
                    + level.owners.capacity() * core::mem::size_of::<Owner>()
                    + level.bins.iter().map(|bin| bin.index.memory_bytes() + bin.members.capacity() * 16).sum::<usize>()
                    + level.groups.iter().map(Node::memory_bytes).sum::<usize>()
            }
        }
    }
}

impl ReadIndex for LevelIndex {
    fn k(&self) -> u32 {
        self.k
    }
    fn seed(&self) -> u64 {
        self.seed
    }
    fn scheme(&self) -> HashScheme {
        self.scheme
    }
    fn len(&self) -> usize {
        self.ids.len()
    }
    fn contains(&self, id: u64) -> bool {
        LevelIndex::contains(self, id)
    }
    fn ids(&self) -> Vec<u64> {
        self.ids.clone()
    }
    fn memory_bytes(&self) -> usize {
        LevelIndex::memory_bytes(self)
    }
    fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        LevelIndex::query_hash_into(self, hash, out)
    }
    fn score_hashes_into(&self, hashes: &[KeyHash], scores: &mut Scores) {
        LevelIndex::score_into(self, hashes, scores)
    }
    fn query_threshold_hashes_into(
        &self,
        hashes: &[KeyHash],
        threshold: Threshold,
        _scratch: &mut Scores,
        out: &mut Vec<(u64, u32)>,
    ) {
        LevelIndex::query_threshold_into(self, hashes, threshold, out)
    }
    fn query_batch_hashes(&self, hashes: &[KeyHash], results: &mut BatchResults) {
        self.query_batch_hashes_into(hashes, results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skewed(n: u64) -> Vec<(u64, Vec<[u8; 8]>)> {
        let mut state = 7u64;
        (0..n)
            .map(|id| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let size = if id % 97 == 0 { 5_000 + (state >> 50) } else { 1 + (state >> 58) };
                (id, (0..size).map(|i| ((id << 32) | i).to_le_bytes()).collect())
            })
            .collect()
    }

    #[test]
    fn pieces_partition_a_set() {
        let mut seen = [0u32; 5];
        for x in 0..10_000u64 {
            seen[piece_of(KeyHash::from_u64(x), 5) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (1_700..2_300).contains(&n)), "{seen:?}");
    }

    #[test]
    fn plan_fits_its_columns_and_capacity() {
        let mut sizes: Vec<u64> = skewed(2_000).iter().map(|(_, k)| k.len() as u64).collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        for columns in [1, 8, 64, 300] {
            let plan = Plan::choose(&sizes, columns);
            assert!(plan.columns() <= columns, "{columns}");
            for group in &plan.groups {
                let load: u64 = sizes[group.clone()].iter().sum();
                assert!(load <= plan.capacity || group.len() == 1);
                let (first, last) = (sizes[group.start], sizes[group.end - 1]);
                assert!(!plan.classes || last.max(4) * 2 >= first, "{first} {last}");
            }
            assert_eq!(plan.classes, columns >= 8);
            for &(i, pieces) in &plan.split {
                assert!(sizes[i].div_ceil(u64::from(pieces)) <= plan.capacity);
            }
            // One less capacity needs more columns.
            if plan.capacity > 1 {
                assert!(Plan::at(&sizes, plan.capacity - 1, plan.classes).columns() > columns);
            }
        }
    }

    #[test]
    fn no_false_negative_and_each_set_once() {
        let sets = skewed(3_000);
        let config = LevelConfig { leaf_sets: 100, ..LevelConfig::default() };
        let index = LevelIndex::build(&sets, 0.01, config).unwrap();
        assert!(index.depth() >= 3, "{}", index.depth());
        let mut out = Vec::new();
        for (id, keys) in &sets {
            for key in keys.iter().step_by(7) {
                index.query_hash_into(key.key_hash(0), &mut out);
                assert!(out.contains(id));
                let mut sorted = out.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), out.len());
            }
        }
    }

    #[test]
    fn equal_sets_stay_flat() {
        let sets: Vec<(u64, Vec<[u8; 8]>)> =
            (0..200u64).map(|id| (id, (0..500u64).map(|i| (id * 1_000 + i).to_le_bytes()).collect())).collect();
        let index = LevelIndex::build(&sets, 0.01, LevelConfig::default()).unwrap();
        assert_eq!(index.depth(), 1);
        assert_eq!(index.top_columns(), None);
    }

    #[test]
    fn edge_shapes_build_and_answer() {
        let none: Vec<(u64, Vec<[u8; 8]>)> = Vec::new();
        let empty = LevelIndex::build(&none, 0.01, LevelConfig::default()).unwrap();
        assert!(empty.is_empty() && empty.query("x").is_empty());
        // Sets without keys among many: levels, and no set answers falsely
        // for its own emptiness.
        let mut sets: Vec<(u64, Vec<[u8; 8]>)> = (0..300u64).map(|id| (id, Vec::new())).collect();
        sets.push((1_000, (0..50_000u64).map(u64::to_le_bytes).collect()));
        let index = LevelIndex::build(&sets, 0.01, LevelConfig::default()).unwrap();
        assert_eq!(index.len(), 301);
        assert!(index.query(&7u64.to_le_bytes()).contains(&1_000));
        let paths = index.paths().unwrap();
        assert_eq!(paths.len(), 301);
        // Bad rates are the rates' errors.
        assert!(LevelIndex::build(&sets, 0.0, LevelConfig::default()).is_err());
        assert!(LevelIndex::build(&sets, f64::NAN, LevelConfig::default()).is_err());
        // One column a level at most, and groups of one set: still answers.
        let config = LevelConfig { top_columns: 0, leaf_sets: 0, ..LevelConfig::default() };
        let index = LevelIndex::build(&skewed(300), 0.01, config).unwrap();
        assert_eq!(index.len(), 300);
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let sets = vec![(1u64, vec!["a"]), (1, vec!["b"])];
        assert!(matches!(LevelIndex::build(&sets, 0.01, LevelConfig::default()), Err(Error::DuplicateId(1))));
    }
}

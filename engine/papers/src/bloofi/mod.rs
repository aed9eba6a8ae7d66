//! [`BloofiTree`]: the hierarchical Bloom filter index of the Bloofi paper
//! (Crainiceanu and Lemire, *Bloofi: Multidimensional Bloom Filters*,
//! Sections 4 and 5), kept as the paper describes it so that it can be set
//! beside [`bloomslice::SlicedIndex`] and the naive index.
//!
//! The leaves of the tree are the indexed filters (each under the caller's
//! `u64` id); every inner node holds the bitwise OR of its children, so a key
//! that misses a node misses its whole subtree. The tree is a B+-tree of
//! order `d` ([`BloofiConfig::order`]): inner nodes have `d..=2d` children,
//! the root `2..=2d`, and all leaves are at the same depth.
//!
//! How the code maps to the paper:
//!
//! | paper | here |
//! | --- | --- |
//! | Algorithm 1 `findMatches` | [`BloofiTree::query_hash_with_cost`] (iterative depth-first walk; its cost is the number of `findMatches` calls, that is nodes whose value is tested: the paper's *search bf-cost*) |
//! | Algorithms 2 and 3 `insert`, `insertIntoParent` | [`BloofiTree::insert_filter`]: OR the filter into every node on the way down, descend to the closest child under [`Metric`], add the leaf after the closest leaf, split on overflow (> 2d children), new root when the root splits |
//! | Algorithm 4 `delete` | [`BloofiTree::remove_set`]: remove the leaf, redistribute with a sibling or merge on underflow (< d children), recompute values up to the root, shrink a root left with one child |
//! | Algorithm 5 `update` | [`BloofiTree::update_filter`] and [`BloofiTree::insert_key`]: OR the new bits into every node from the leaf to the root |
//! | Section 5.4, "do not split a node whose bits are all ones" | [`BloofiConfig::all_ones_heuristic`] (on by default) |
//! | bulk construction (Section 7.1.2) | [`BloofiTree::bulk_build`] and [`BloofiTree::rebuild`], ordered by [`BulkOrder`] (see the `bulk` module for the cost of each order) |
//! | search bf-cost, maintenance bf-cost, storage cost (Section 7.1.1) | [`BloofiTree::query_with_cost`], [`BloofiTree::maintenance_stats`] / [`BloofiTree::last_maintenance_cost`], [`BloofiTree::storage_bytes`] |
//!
//! Two points the paper leaves open, decided here:
//!
//! - **Over-full nodes after a delete.** With the heuristic, an all-ones node
//!   may keep more than `2d` children (the tree becomes a forest under an
//!   all-ones cap). A delete can clear bits, so such a node may stop being
//!   all ones; it is then split at once into pieces of `d..=2d` children
//!   (a *deferred split*), so the invariant "more than `2d` children only
//!   when all ones" always holds.
//! - **Redistribution evens out the two nodes** as Algorithm 4 says, but the
//!   underflowing node never receives more than `2d` children, so that
//!   redistributing with an over-full all-ones sibling stays within bounds.
//!
//! Nodes live in an arena (`Vec` of slots addressed by `u32`), never behind
//! `Rc`/`RefCell`; parent links and child lists are indices.

mod bulk;

pub use bulk::BulkOrder;

use bloomslice::kernels::{Kernels, prefetch_line};
use hashbrown::{HashMap, HashSet};

use bloomslice::BloomFilter;
use bloomslice::BloomParams;
use bloomslice::Error;
use bloomslice::{Key, KeyHash};

/// Smallest order a Bloofi tree accepts: with `d = 1` an inner node could
/// have a single child and the B+-tree rules of the paper would not bound
/// the height.
pub const MIN_ORDER: usize = 2;

/// Most filters one tree holds. Node indices are `u32` with one value
/// reserved for "no node", and a tree of `N` leaves has fewer than `2N`
/// nodes (every inner node has at least two children), so `N` stays below
/// half the index space with room for the transient nodes of a split.
pub const MAX_FILTERS: usize = (u32::MAX / 2 - 1024) as usize;

/// "No node": the parent of the root, the root of an empty tree.
const NO_NODE: u32 = u32::MAX;

/// The distance used to find the closest child when inserting (and the
/// closest neighbour when ordering a bulk build). Section 7.2.6 of the paper
/// compares the three.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Metric {
    /// `|A xor B|`, bits that differ (the paper's default).
    #[default]
    Hamming,
    /// `1 - |A and B| / |A or B|` (0 when both are empty).
    Jaccard,
    /// `1 - |A and B| / sqrt(|A| |B|)` (0 when both are empty, 1 when only
    /// one is).
    Cosine,
}

impl Metric {
    /// Every metric, in the paper's order.
    pub const ALL: [Metric; 3] = [Metric::Hamming, Metric::Jaccard, Metric::Cosine];

    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Hamming => "hamming",
            Metric::Jaccard => "jaccard",
            Metric::Cosine => "cosine",
        }
    }

    /// The distance between two bit arrays given as raw words, computed
    /// with the popcount kernels of `kernels`.
    ///
    /// # Panics
    ///
    /// Panics if the slices differ in length.
    pub fn distance_words(self, kernels: &Kernels, a: &[u64], b: &[u64]) -> f64 {
        match self {
            Metric::Hamming => kernels.xor_popcount(a, b) as f64,
            Metric::Jaccard => {
                let union = kernels.or_popcount(a, b);
                let common = if union == 0 { 0 } else { kernels.and_popcount(a, b) };
                Self::jaccard(common, union)
            }
            Metric::Cosine => {
                let (na, nb) = (kernels.popcount(a), kernels.popcount(b));
                let common = if na == 0 || nb == 0 { 0 } else { kernels.and_popcount(a, b) };
                Self::cosine(na, nb, common)
            }
        }
    }

    /// The distance from the set bit counts alone: `ones_a = |A|`,
    /// `ones_b = |B|` and `common = |A and B|`. Every metric is a function of
    /// these three, which is what lets the exact greedy bulk sort run on an
    /// inverted index of set bits. Gives exactly (bit for bit) the value of
    /// [`Metric::distance_words`] on arrays with those counts.
    pub fn distance_from_counts(self, ones_a: u64, ones_b: u64, common: u64) -> f64 {
        match self {
            Metric::Hamming => (ones_a + ones_b - 2 * common) as f64,
            Metric::Jaccard => Self::jaccard(common, ones_a + ones_b - common),
            Metric::Cosine => Self::cosine(ones_a, ones_b, common),
        }
    }

    fn jaccard(common: u64, union: u64) -> f64 {
        if union == 0 { 0.0 } else { 1.0 - common as f64 / union as f64 }
    }

    fn cosine(ones_a: u64, ones_b: u64, common: u64) -> f64 {
        match (ones_a, ones_b) {
            (0, 0) => 0.0,
            (0, _) | (_, 0) => 1.0,
            _ => 1.0 - common as f64 / ((ones_a as f64) * (ones_b as f64)).sqrt(),
        }
    }

    /// The distance between two filters.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] if the filters have different parameters.
    pub fn distance(self, a: &BloomFilter, b: &BloomFilter) -> Result<f64> {
        if a.params() != b.params() {
            return Err(Error::ParamsMismatch { expected: *a.params(), found: *b.params() }.into());
        }
        Ok(self.distance_words(Kernels::detect(), a.words(), b.words()))
    }
}

impl core::fmt::Display for Metric {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a [`BloofiTree`] is shaped and maintained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BloofiConfig {
    /// The order `d` (at least [`MIN_ORDER`]): inner nodes hold `d..=2d`
    /// children, the root `2..=2d`. The paper's default is 2.
    pub order: usize,
    /// The distance that places new filters (the paper's default is Hamming).
    pub metric: Metric,
    /// Section 5.4: never split a node whose bits are all ones (it would
    /// only add levels that match every key); such nodes may hold more than
    /// `2d` children and the tree becomes a forest under them. On by default.
    pub all_ones_heuristic: bool,
}

impl Default for BloofiConfig {
    /// The paper's Table 1: order 2, Hamming, with the heuristic.
    fn default() -> Self {
        BloofiConfig { order: 2, metric: Metric::Hamming, all_ones_heuristic: true }
    }
}

impl BloofiConfig {
    /// The default configuration with order `d`.
    pub fn with_order(order: usize) -> Self {
        BloofiConfig { order, ..BloofiConfig::default() }
    }

    setters! {
        /// The same configuration with another metric.
        metric(metric: Metric) => metric;
        /// The same configuration with the Section 5.4 heuristic on or off.
        all_ones_heuristic(on: bool) => all_ones_heuristic;
    }

    fn check(&self) -> Result<()> {
        if self.order < MIN_ORDER {
            return Err(BloofiError::OrderTooSmall { order: self.order });
        }
        Ok(())
    }
}

/// What the Bloofi tree's operations fail with: its own configuration
/// errors, and the core's [`Error`]s (ids, parameters, memory) wrapped in
/// [`BloofiError::Core`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BloofiError {
    /// The order `d` is below [`MIN_ORDER`].
    #[error("Bloofi order d = {order} is below the minimum of {min}", min = MIN_ORDER)]
    OrderTooSmall {
        /// The order that was asked for.
        order: usize,
    },
    /// An error the core names (an unknown id, mismatched parameters,
    /// memory, a broken invariant).
    #[error(transparent)]
    Core(#[from] bloomslice::Error),
}

/// `Result` with [`BloofiError`].
pub type Result<T, E = BloofiError> = core::result::Result<T, E>;

/// Maintenance cost as the paper measures it (Section 7.1.1, "maintenance
/// bf-cost"): the number of distinct tree nodes an operation accessed, a
/// node counting once per operation whether its value was read or written
/// or its parent or child links were.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaintenanceStats {
    /// Successful inserts.
    pub inserts: u64,
    /// Nodes accessed by those inserts, in total.
    pub insert_nodes: u64,
    /// Successful deletes.
    pub deletes: u64,
    /// Nodes accessed by those deletes, in total.
    pub delete_nodes: u64,
    /// Successful updates (whole filters or single keys).
    pub updates: u64,
    /// Nodes accessed by those updates, in total.
    pub update_nodes: u64,
    /// Nodes whose filter value those inserts wrote (ORed into, recomputed
    /// or created), in total: the count the paper's Fig. 6b discussion
    /// describes ("only the values of the nodes from the leaf to the root
    /// need to be updated"), where `insert_nodes` also counts nodes only
    /// read.
    pub insert_written: u64,
    /// Nodes whose filter value those deletes wrote (recomputed), in total.
    pub delete_written: u64,
    /// Nodes whose filter value those updates wrote (ORed into), in total.
    pub update_written: u64,
}

/// `$name(&self)`: the mean of `$total` per `$count` (0 when the count is
/// 0), with the doc comment given.
macro_rules! means {
    ($($(#[$doc:meta])* $name:ident = $total:ident / $count:ident;)*) => {
        impl MaintenanceStats {
            $($(#[$doc])*
            pub fn $name(&self) -> f64 {
                if self.$count == 0 { 0.0 } else { self.$total as f64 / self.$count as f64 }
            })*
        }
    };
}

means! {
    /// Mean nodes accessed per insert (0 when there was none).
    mean_insert = insert_nodes / inserts;
    /// Mean nodes accessed per delete (0 when there was none).
    mean_delete = delete_nodes / deletes;
    /// Mean nodes accessed per update (0 when there was none).
    mean_update = update_nodes / updates;
    /// Mean nodes whose filter an insert wrote (0 when there was none).
    mean_insert_written = insert_written / inserts;
    /// Mean nodes whose filter a delete wrote (0 when there was none).
    mean_delete_written = delete_written / deletes;
    /// Mean nodes whose filter an update wrote (0 when there was none).
    mean_update_written = update_written / updates;
}

#[derive(Clone, Copy)]
enum OpKind {
    Insert,
    Delete,
    Update,
}

/// Counts distinct nodes touched by one operation with epoch marks, so a
/// node read twice (say, its value and then its links) counts once.
#[derive(Clone, Debug, Default)]
struct CostCounter {
    marks: Vec<u32>,
    epoch: u32,
    count: usize,
}

impl CostCounter {
    fn begin(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.marks.fill(0);
            self.epoch = 1;
        }
        self.count = 0;
    }

    #[inline]
    fn touch(&mut self, node: u32) {
        let i = node as usize;
        if i >= self.marks.len() {
            self.marks.resize(i + 1, 0);
        }
        if self.marks[i] != self.epoch {
            self.marks[i] = self.epoch;
            self.count += 1;
        }
    }
}

/// One tree node. A leaf holds an indexed filter and its id; an inner node
/// holds the OR of its children.
#[derive(Clone, Debug)]
struct Node {
    /// Parent slot, [`NO_NODE`] for the root.
    parent: u32,
    /// Children in order (empty for a leaf): the paper's `node.children`.
    children: Vec<u32>,
    /// The caller's id (leaves only).
    id: u64,
    leaf: bool,
    /// The paper's `node.val`.
    value: BloomFilter,
}

/// A Bloofi tree: a B+-tree of Bloom filters whose inner nodes are the OR of
/// their children, searched top-down with pruning (see the module docs for
/// how it maps to the paper).
///
/// ```
/// use bloomslice::{BloomFilter, BloomParams};
/// use bloomslice_papers::{BloofiConfig, BloofiTree};
///
/// let params = BloomParams::for_capacity(1_000, 0.01)?;
/// let mut tree = BloofiTree::new(params, BloofiConfig::default())?;
/// for site in 0..20u64 {
///     let mut filter = BloomFilter::new(params)?;
///     for doc in 0..50u64 {
///         filter.insert(&(site * 1000 + doc).to_le_bytes());
///     }
///     tree.insert_filter(site, &filter)?;
/// }
/// let (ids, cost) = tree.query_with_cost(&7_042u64.to_le_bytes());
/// assert!(ids.contains(&7));
/// assert!(cost >= 1 && cost <= tree.node_count());
/// tree.validate().unwrap();
/// # Ok::<(), bloomslice_papers::BloofiError>(())
/// ```
#[derive(Clone)]
pub struct BloofiTree {
    params: BloomParams,
    config: BloofiConfig,
    kernels: &'static Kernels,
    nodes: Vec<Option<Node>>,
    free: Vec<u32>,
    root: u32,
    leaf_of: HashMap<u64, u32>,
    cost: CostCounter,
    /// Nodes whose value the current operation wrote.
    written: CostCounter,
    last_cost: usize,
    stats: MaintenanceStats,
}

debug_summary!(BloofiTree, |s| params: s.params, config: s.config, filters: s.len(), nodes: s.node_count(), height: s.height());

/// `(&mut nodes[a], &nodes[b])` for two distinct live slots.
fn pair_mut(nodes: &mut [Option<Node>], a: u32, b: u32) -> (&mut Node, &Node) {
    let (a, b) = (a as usize, b as usize);
    assert_ne!(a, b, "pair_mut needs two distinct nodes");
    let (dst, src) = if a < b {
        let (lo, hi) = nodes.split_at_mut(b);
        (&mut lo[a], &hi[0])
    } else {
        let (lo, hi) = nodes.split_at_mut(a);
        (&mut hi[0], &lo[b])
    };
    (dst.as_mut().expect("live node"), src.as_ref().expect("live node"))
}

/// Splits `count` items into `pieces` runs whose lengths differ by at most
/// one, longer runs first.
fn even_sizes(count: usize, pieces: usize) -> impl Iterator<Item = usize> {
    let (base, extra) = (count / pieces, count % pieces);
    (0..pieces).map(move |i| base + usize::from(i < extra))
}

id_verbs!(BloofiTree, leaf_of, ids);
key_verbs!(BloofiTree: BloofiError);
delegate_filter_index!(BloofiTree, BloomFilter, BloofiError, new_filter: |s| BloomFilter::new(*s.params()));

impl BloofiTree {
    /// An empty tree.
    ///
    /// # Errors
    ///
    /// [`BloofiError::OrderTooSmall`] if `config.order < 2`.
    pub fn new(params: BloomParams, config: BloofiConfig) -> Result<Self> {
        config.check()?;
        Ok(BloofiTree {
            params,
            config,
            kernels: Kernels::detect(),
            nodes: Vec::new(),
            free: Vec::new(),
            root: NO_NODE,
            leaf_of: HashMap::new(),
            cost: CostCounter::default(),
            written: CostCounter::default(),
            last_cost: 0,
            stats: MaintenanceStats::default(),
        })
    }

    /// The shared filter parameters.
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// The configuration.
    pub fn config(&self) -> &BloofiConfig {
        &self.config
    }

    /// The kernel table used for distances and ORs.
    pub fn kernels(&self) -> &'static Kernels {
        self.kernels
    }

    /// Uses another kernel table (every backend gives the same answers;
    /// tests and fuzzers switch between them).
    pub fn set_kernels(&mut self, kernels: &'static Kernels) {
        self.kernels = kernels;
    }

    /// The filter stored under `id`.
    pub fn filter(&self, id: u64) -> Option<&BloomFilter> {
        self.leaf_of.get(&id).map(|&n| &self.node(n).value)
    }

    /// Number of nodes, leaves included.
    pub fn node_count(&self) -> usize {
        self.nodes.len() - self.free.len()
    }

    /// Height: edges from the root to a leaf (0 for a single leaf or an
    /// empty tree). Every leaf is at this depth.
    pub fn height(&self) -> usize {
        let mut h = 0;
        let mut n = self.root;
        while n != NO_NODE && !self.node(n).leaf {
            n = self.node(n).children[0];
            h += 1;
        }
        h
    }

    /// Children of the root (0 for an empty tree or a single leaf). Above
    /// `2d` only when the Section 5.4 heuristic kept an all-ones root from
    /// splitting.
    pub fn root_fanout(&self) -> usize {
        if self.root == NO_NODE { 0 } else { self.node(self.root).children.len() }
    }

    /// The value of the root (the OR of every indexed filter), if any.
    pub fn root_value(&self) -> Option<&BloomFilter> {
        (self.root != NO_NODE).then(|| &self.node(self.root).value)
    }

    /// Storage cost as the paper estimates it (Section 7.1.1): the bytes of
    /// one filter (`ceil(m / 64)` words) times the number of nodes, leaves
    /// included.
    pub fn storage_bytes(&self) -> usize {
        self.node_count() * self.params.words() * 8
    }

    /// Bytes of memory actually held: node values (cache-line padded),
    /// child lists, the arena and the id map.
    pub fn memory_bytes(&self) -> usize {
        let nodes: usize = self
            .nodes
            .iter()
            .flatten()
            .map(|n| n.value.memory_bytes() + n.children.capacity() * core::mem::size_of::<u32>())
            .sum();
        core::mem::size_of::<Self>()
            + nodes
            + self.nodes.capacity() * core::mem::size_of::<Option<Node>>()
            + self.free.capacity() * core::mem::size_of::<u32>()
            + self.cost.marks.capacity() * core::mem::size_of::<u32>()
            + self.leaf_of.allocation_size()
    }

    /// Nodes accessed by the last successful insert, delete or update (the
    /// paper's maintenance bf-cost of that operation).
    pub fn last_maintenance_cost(&self) -> usize {
        self.last_cost
    }

    /// Maintenance cost accumulated since the tree was built or the
    /// statistics were last reset.
    pub fn maintenance_stats(&self) -> MaintenanceStats {
        self.stats
    }

    /// Resets [`BloofiTree::maintenance_stats`].
    pub fn reset_maintenance_stats(&mut self) {
        self.stats = MaintenanceStats::default();
    }

    // ---- arena -------------------------------------------------------

    #[inline]
    fn node(&self, n: u32) -> &Node {
        self.nodes[n as usize].as_ref().expect("live node")
    }

    #[inline]
    fn node_mut(&mut self, n: u32) -> &mut Node {
        self.nodes[n as usize].as_mut().expect("live node")
    }

    #[inline]
    fn parent(&self, n: u32) -> u32 {
        self.node(n).parent
    }

    fn alloc(&mut self, node: Node) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = Some(node);
                i
            }
            None => {
                self.nodes.push(Some(node));
                (self.nodes.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, n: u32) {
        self.nodes[n as usize] = None;
        self.free.push(n);
    }

    fn new_leaf(id: u64, value: BloomFilter) -> Node {
        Node { parent: NO_NODE, children: Vec::new(), id, leaf: true, value }
    }

    /// A new inner node over `children` (which must be live and at least
    /// one), with its value computed and the children's parent links set.
    fn make_parent(&mut self, children: Vec<u32>) -> u32 {
        let value = self.node(children[0]).value.clone();
        let n = self.alloc(Node { parent: NO_NODE, children, id: 0, leaf: false, value });
        self.adopt_all(n);
        self.recompute(n);
        n
    }

    /// Points every child of `n` back at `n`.
    fn adopt_all(&mut self, n: u32) {
        for i in 0..self.node(n).children.len() {
            let c = self.node(n).children[i];
            self.node_mut(c).parent = n;
            self.cost.touch(c);
        }
    }

    /// `node.val = OR of its children's values` (reads every child).
    fn recompute(&mut self, n: u32) {
        let w = self.params.words();
        let kernels = self.kernels;
        self.cost.touch(n);
        self.written.touch(n);
        for i in 0..self.node(n).children.len() {
            let c = self.node(n).children[i];
            self.cost.touch(c);
            let (dst, src) = pair_mut(&mut self.nodes, n, c);
            let dst = &mut dst.value.words_mut()[..w];
            if i == 0 {
                dst.copy_from_slice(src.value.words());
            } else {
                kernels.or_into(dst, src.value.words());
            }
        }
    }

    /// Recomputes `n` and every ancestor of it, bottom-up.
    fn recompute_to_root(&mut self, mut n: u32) {
        while n != NO_NODE {
            self.recompute(n);
            n = self.parent(n);
        }
    }

    fn is_all_ones(&self, n: u32) -> bool {
        self.node(n).value.count_ones() == self.params.m()
    }

    /// Whether `n` has more than `2d` children and is not exempt by the
    /// Section 5.4 heuristic.
    fn needs_split(&self, n: u32) -> bool {
        let node = self.node(n);
        !node.leaf
            && node.children.len() > 2 * self.config.order
            && !(self.config.all_ones_heuristic && self.is_all_ones(n))
    }

    /// Splits an over-full node into pieces of `d..=2d` children that follow
    /// it in its parent (a new root first when `n` is the root). With
    /// `2d + 1` children this is Algorithm 3's split: `n` keeps `d + 1`, the
    /// new node takes the last `d`. Parent values do not change.
    fn split(&mut self, n: u32) {
        if self.parent(n) == NO_NODE {
            // Algorithm 2, lines 16-25: the root splits, so a new root holds it.
            let value = self.node(n).value.clone();
            let r = self.alloc(Node { parent: NO_NODE, children: vec![n], id: 0, leaf: false, value });
            self.node_mut(n).parent = r;
            self.root = r;
            self.cost.touch(r);
            self.written.touch(r);
        }
        let p = self.parent(n);
        let children = core::mem::take(&mut self.node_mut(n).children);
        let pieces = children.len().div_ceil(2 * self.config.order);
        let mut runs = Vec::with_capacity(pieces);
        let mut start = 0;
        for size in even_sizes(children.len(), pieces) {
            runs.push(children[start..start + size].to_vec());
            start += size;
        }
        let mut runs = runs.into_iter();
        self.node_mut(n).children = runs.next().expect("at least one piece");
        self.recompute(n);
        let new_nodes: Vec<u32> = runs.map(|run| self.make_parent(run)).collect();
        let at = self.position_in_parent(n) + 1;
        for &q in &new_nodes {
            self.node_mut(q).parent = p;
        }
        self.node_mut(p).children.splice(at..at, new_nodes);
        self.cost.touch(p);
    }

    /// Splits over-full nodes from `start` upwards. With `stop_when_fine`
    /// (inserts: only the node that gained a child can overflow, and its
    /// ancestors only if it split) the walk ends at the first node that
    /// needs no split; otherwise (deletes: values on the whole path may have
    /// lost bits) it checks up to the root.
    fn fix_overflow(&mut self, start: u32, stop_when_fine: bool) {
        let mut n = start;
        while n != NO_NODE {
            if self.needs_split(n) {
                self.split(n);
            } else if stop_when_fine {
                break;
            }
            n = self.parent(n);
        }
    }

    fn position_in_parent(&self, n: u32) -> usize {
        let p = self.parent(n);
        self.node(p).children.iter().position(|&c| c == n).expect("child listed in its parent")
    }

    fn leaf(&self, id: u64) -> Result<u32> {
        self.leaf_of.get(&id).copied().ok_or(Error::UnknownId(id).into())
    }

    fn begin_op(&mut self) {
        self.cost.begin();
        self.written.begin();
    }

    fn finish(&mut self, kind: OpKind) {
        let c = self.cost.count;
        self.last_cost = c;
        let (count, total, written) = match kind {
            OpKind::Insert => (&mut self.stats.inserts, &mut self.stats.insert_nodes, &mut self.stats.insert_written),
            OpKind::Delete => (&mut self.stats.deletes, &mut self.stats.delete_nodes, &mut self.stats.delete_written),
            OpKind::Update => (&mut self.stats.updates, &mut self.stats.update_nodes, &mut self.stats.update_written),
        };
        *count += 1;
        *total += c as u64;
        *written += self.written.count as u64;
    }

    // ---- maintenance ---------------------------------------------------

    /// Adds a filter under a new id (Algorithms 2 and 3): ORs it into every
    /// node on the way down, descends to the closest child under the
    /// configured [`Metric`], adds the new leaf right after the closest
    /// leaf, and splits nodes that overflow (more than `2d` children, unless
    /// the Section 5.4 heuristic exempts an all-ones node).
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`], [`Error::DuplicateId`], or
    /// [`Error::CapacityOverflow`] beyond [`MAX_FILTERS`]; the tree is
    /// unchanged after an error.
    pub fn insert_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        if self.leaf_of.contains_key(&id) {
            return Err(Error::DuplicateId(id).into());
        }
        if self.len() >= MAX_FILTERS {
            return Err(Error::CapacityOverflow("Bloofi tree node arena").into());
        }
        self.begin_op();
        let closest = if self.root == NO_NODE { NO_NODE } else { self.descend_or(filter) };
        let leaf = self.alloc(Self::new_leaf(id, filter.clone()));
        self.cost.touch(leaf);
        self.written.touch(leaf);
        self.leaf_of.insert(id, leaf);
        if closest == NO_NODE {
            self.root = leaf;
        } else {
            self.attach_after(leaf, closest);
        }
        self.finish(OpKind::Insert);
        Ok(())
    }

    /// Algorithm 2, lines 5-10: ORs `filter` into each inner node on the
    /// path and follows the child closest to `filter`. Returns the leaf
    /// reached.
    fn descend_or(&mut self, filter: &BloomFilter) -> u32 {
        let w = self.params.words();
        let (kernels, metric) = (self.kernels, self.config.metric);
        let mut n = self.root;
        loop {
            self.cost.touch(n);
            let node = self.nodes[n as usize].as_mut().expect("live node");
            if node.leaf {
                return n;
            }
            kernels.or_into(&mut node.value.words_mut()[..w], filter.words());
            self.written.touch(n);
            let node = self.node(n);
            let mut best = node.children[0];
            let mut best_distance = f64::INFINITY;
            for &c in &node.children {
                let d = metric.distance_words(kernels, self.node(c).value.words(), filter.words());
                if d < best_distance {
                    best_distance = d;
                    best = c;
                }
            }
            for i in 0..self.node(n).children.len() {
                let c = self.node(n).children[i];
                self.cost.touch(c);
            }
            n = best;
        }
    }

    /// Algorithm 3: puts `leaf` right after `sibling` in the sibling's
    /// parent (creating a root over a lone leaf root), then splits on
    /// overflow.
    fn attach_after(&mut self, leaf: u32, sibling: u32) {
        let w = self.params.words();
        if self.parent(sibling) == NO_NODE {
            let value = self.node(sibling).value.clone();
            let r = self.alloc(Node { parent: NO_NODE, children: vec![sibling], id: 0, leaf: false, value });
            self.node_mut(sibling).parent = r;
            self.root = r;
            let (dst, src) = pair_mut(&mut self.nodes, r, leaf);
            self.kernels.or_into(&mut dst.value.words_mut()[..w], src.value.words());
            self.cost.touch(r);
            self.written.touch(r);
        }
        let p = self.parent(sibling);
        let at = self.position_in_parent(sibling) + 1;
        self.node_mut(p).children.insert(at, leaf);
        self.node_mut(leaf).parent = p;
        self.cost.touch(p);
        self.fix_overflow(p, true);
    }

    /// Removes a filter (Algorithm 4): the leaf leaves its parent; a parent
    /// left with fewer than `d` children takes children from a sibling that
    /// has more than `d` (redistribute) or gives all of its children to a
    /// sibling and is removed in turn (merge); values are recomputed up to
    /// the root, and a root left with one child is replaced by that child.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the tree is unchanged after an error.
    pub fn remove_set(&mut self, id: u64) -> Result<()> {
        let leaf = self.leaf(id)?;
        self.begin_op();
        self.leaf_of.remove(&id);
        self.cost.touch(leaf);
        let mut n = self.parent(leaf);
        self.release(leaf);
        if n == NO_NODE {
            self.root = NO_NODE;
            self.finish(OpKind::Delete);
            return Ok(());
        }
        self.node_mut(n).children.retain(|&c| c != leaf);
        self.cost.touch(n);
        let d = self.config.order;
        // The lowest node from which values may have lost bits: the walk
        // for deferred splits starts there.
        let recheck_from;
        loop {
            if n == self.root {
                if self.node(n).children.len() == 1 {
                    // Lines 6-9: the tree gets shorter.
                    let only = self.node(n).children[0];
                    self.release(n);
                    self.node_mut(only).parent = NO_NODE;
                    self.cost.touch(only);
                    self.root = only;
                    recheck_from = only;
                } else {
                    self.recompute(n);
                    recheck_from = n;
                }
                break;
            }
            if self.node(n).children.len() >= d {
                // Lines 31-33: no underflow.
                self.recompute_to_root(n);
                recheck_from = n;
                break;
            }
            // Lines 11-29: underflow.
            let g = self.parent(n);
            let at = self.position_in_parent(n);
            self.cost.touch(g);
            let siblings = &self.node(g).children;
            let left = at.checked_sub(1).map(|i| siblings[i]);
            let right = siblings.get(at + 1).copied();
            for s in [left, right].into_iter().flatten() {
                self.cost.touch(s);
            }
            let count = |s: Option<u32>| s.map_or(0, |s| self.node(s).children.len());
            let (n_left, n_right) = (count(left), count(right));
            let donor = if n_left > d && n_left >= n_right {
                left
            } else if n_right > d {
                right
            } else {
                None
            };
            if let Some(s) = donor {
                self.redistribute(n, s, Some(s) == left);
                self.recompute(s);
                self.recompute_to_root(n);
                recheck_from = s;
                break;
            }
            let (s, s_is_left) = match left {
                Some(l) => (l, true),
                None => (right.expect("a non-root node has a sibling"), false),
            };
            let moved = core::mem::take(&mut self.node_mut(n).children);
            for &c in &moved {
                self.node_mut(c).parent = s;
                self.cost.touch(c);
            }
            let sib = &mut self.node_mut(s).children;
            if s_is_left {
                sib.extend(moved);
            } else {
                sib.splice(0..0, moved);
            }
            self.recompute(s);
            self.node_mut(g).children.remove(at);
            self.release(n);
            n = g;
        }
        self.fix_overflow(recheck_from, false);
        self.finish(OpKind::Delete);
        Ok(())
    }

    /// Moves children from sibling `s` into the underflowing `n` until they
    /// are even (`n` never above `2d`), from the end of `s` nearest to `n`.
    fn redistribute(&mut self, n: u32, s: u32, s_is_left: bool) {
        let (cn, cs) = (self.node(n).children.len(), self.node(s).children.len());
        let want = ((cn + cs) / 2).min(2 * self.config.order);
        let take = want - cn;
        let moved: Vec<u32> = {
            let sib = &mut self.node_mut(s).children;
            if s_is_left { sib.drain(cs - take..).collect() } else { sib.drain(..take).collect() }
        };
        for &c in &moved {
            self.node_mut(c).parent = n;
            self.cost.touch(c);
        }
        let kids = &mut self.node_mut(n).children;
        if s_is_left {
            kids.splice(0..0, moved);
        } else {
            kids.extend(moved);
        }
    }

    /// ORs `filter` into filter `id` in place (Algorithm 5): every node from
    /// the leaf to the root gets the new bits.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::UnknownId`]; the tree is
    /// unchanged after an error.
    pub fn update_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        let mut n = self.leaf(id)?;
        self.begin_op();
        let (w, kernels) = (self.params.words(), self.kernels);
        while n != NO_NODE {
            self.cost.touch(n);
            self.written.touch(n);
            let node = self.node_mut(n);
            kernels.or_into(&mut node.value.words_mut()[..w], filter.words());
            n = node.parent;
        }
        self.finish(OpKind::Update);
        Ok(())
    }

    /// Inserts one key, by its hash, into filter `id`: Algorithm 5 with a one-key filter,
    /// setting the key's `k` bits from the leaf to the root.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the tree is unchanged after an error.
    pub fn insert_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<()> {
        let mut n = self.leaf(id)?;
        self.begin_op();
        let pos = self.params.probes(hash);
        let pos: &[u32] = &pos;
        while n != NO_NODE {
            self.cost.touch(n);
            self.written.touch(n);
            let node = self.node_mut(n);
            node.value.insert_positions(pos);
            n = node.parent;
        }
        self.finish(OpKind::Update);
        Ok(())
    }

    // ---- bulk construction ---------------------------------------------

    /// Builds a tree from many filters at once: orders them so that
    /// neighbours are close ([`BulkOrder`]), then builds bottom-up, grouping
    /// each level into runs of about `d + 1` consecutive nodes (the shape
    /// the paper's bulk build, which always inserts next to the right-most
    /// leaf, leaves behind), up to a root of at most `2d` children. With the
    /// Section 5.4 heuristic, a level whose grouping would make an all-ones
    /// node is not grouped: the root takes the whole level (a forest).
    ///
    /// Bulk building leaves the maintenance statistics at zero.
    ///
    /// # Errors
    ///
    /// [`BloofiError::OrderTooSmall`], or [`Error::ParamsMismatch`],
    /// [`Error::DuplicateId`] or [`Error::CapacityOverflow`].
    pub fn bulk_build(
        params: BloomParams,
        config: BloofiConfig,
        filters: &[(u64, &BloomFilter)],
        order: BulkOrder,
    ) -> Result<Self> {
        let mut tree = BloofiTree::new(params, config)?;
        if filters.len() > MAX_FILTERS {
            return Err(Error::CapacityOverflow("Bloofi tree node arena").into());
        }
        let mut seen = HashSet::with_capacity(filters.len());
        for (id, f) in filters {
            tree.params.check_same(f.params())?;
            if !seen.insert(*id) {
                return Err(Error::DuplicateId(*id).into());
            }
        }
        let words: Vec<&[u64]> = filters.iter().map(|(_, f)| f.words()).collect();
        let perm = bulk::order(&words, config.metric, tree.kernels, order);
        tree.build_bottom_up(perm.into_iter().map(|i| (filters[i].0, filters[i].1.clone())).collect());
        Ok(tree)
    }

    /// Rebuilds the tree from its own filters as [`BloofiTree::bulk_build`]
    /// would (the paper suggests periodic reconstruction once updates have
    /// made routing imprecise). Maintenance statistics are kept.
    pub fn rebuild(&mut self, order: BulkOrder) {
        let mut leaves = Vec::with_capacity(self.len());
        let mut stack = Vec::new();
        if self.root != NO_NODE {
            stack.push(self.root);
        }
        while let Some(n) = stack.pop() {
            let node = self.nodes[n as usize].take().expect("live node");
            if node.leaf {
                leaves.push((node.id, node.value));
            } else {
                stack.extend(node.children.iter().rev());
            }
        }
        let words: Vec<&[u64]> = leaves.iter().map(|(_, f)| f.words()).collect();
        let perm = bulk::order(&words, self.config.metric, self.kernels, order);
        let mut slots: Vec<Option<(u64, BloomFilter)>> = leaves.into_iter().map(Some).collect();
        let ordered = perm.into_iter().map(|i| slots[i].take().expect("a permutation")).collect();
        self.build_bottom_up(ordered);
    }

    fn build_bottom_up(&mut self, leaves: Vec<(u64, BloomFilter)>) {
        self.nodes.clear();
        self.free.clear();
        self.leaf_of.clear();
        self.root = NO_NODE;
        self.nodes.reserve(leaves.len() + leaves.len() / self.config.order + 1);
        let mut level: Vec<u32> = Vec::with_capacity(leaves.len());
        for (id, value) in leaves {
            let n = self.alloc(Self::new_leaf(id, value));
            self.leaf_of.insert(id, n);
            level.push(n);
        }
        let d = self.config.order;
        loop {
            match level.len() {
                0 => return,
                1 => {
                    self.root = level[0];
                    return;
                }
                c if c <= 2 * d => {
                    self.root = self.make_parent(level);
                    return;
                }
                c => {
                    // About d + 1 children per node, always within d..=2d.
                    let pieces = (c / (d + 1)).clamp(c.div_ceil(2 * d), c / d);
                    let mut parents = Vec::with_capacity(pieces);
                    let mut start = 0;
                    for size in even_sizes(c, pieces) {
                        parents.push(self.make_parent(level[start..start + size].to_vec()));
                        start += size;
                    }
                    if self.config.all_ones_heuristic && parents.iter().any(|&p| self.is_all_ones(p)) {
                        for p in parents {
                            self.release(p);
                        }
                        self.root = self.make_parent(level);
                        return;
                    }
                    level = parents;
                }
            }
        }
    }

    /// The order in which [`BloofiTree::bulk_build`] would place `filters`
    /// (a permutation of `0..filters.len()`), for timing the sort apart
    /// from the build.
    pub fn bulk_order(metric: Metric, filters: &[&BloomFilter], order: BulkOrder) -> Vec<usize> {
        let words: Vec<&[u64]> = filters.iter().map(|f| f.words()).collect();
        bulk::order(&words, metric, Kernels::detect(), order)
    }

    // ---- search ----------------------------------------------------------

    /// The filter stored under `id` (a copy).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`].
    pub fn filter_cloned(&self, id: u64) -> Result<BloomFilter> {
        self.filter(id).cloned().ok_or(Error::UnknownId(id).into())
    }

    /// Ids of the filters that may contain the key hashed as `hash`, into
    /// `out` (cleared first): [`BloofiTree::query_hash_with_cost`] without
    /// the cost.
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        self.query_hash_with_cost(hash, out);
    }

    /// Ids of the filters that may contain `key` (Algorithm 1), in leaf
    /// order.
    pub fn query<K: Key + ?Sized>(&self, key: &K) -> Vec<u64> {
        self.query_with_cost(key).0
    }

    /// Ids of the filters that may contain `key`, and the search cost: the
    /// number of nodes whose value was tested (the paper's search bf-cost,
    /// 1 when the root does not match).
    pub fn query_with_cost<K: Key + ?Sized>(&self, key: &K) -> (Vec<u64>, usize) {
        let mut out = Vec::new();
        let cost = self.query_hash_with_cost(self.params.hash(key), &mut out);
        (out, cost)
    }

    /// Algorithm 1 by the key's hash: writes the matching ids into `out`
    /// (cleared first) and returns the search cost. Probe positions are
    /// computed once and reused for every node.
    ///
    /// The tree is walked level by level rather than depth first: the nodes
    /// and nodes' values are scattered over memory, so each test is a cache
    /// miss, and a level's tests are independent. Before testing a level,
    /// the probe words of every node in it are prefetched (and the arena
    /// slots of the next level as soon as they are known), so the misses of
    /// one level overlap instead of queuing one behind another. Same nodes
    /// tested, same cost and same leaf order as the depth-first walk (every
    /// leaf is at the same depth).
    pub fn query_hash_with_cost(&self, hash: KeyHash, out: &mut Vec<u64>) -> usize {
        out.clear();
        if self.root == NO_NODE {
            return 0;
        }
        let pos = self.params.probes(hash);
        let pos: &[u32] = &pos;
        let mut level = Vec::with_capacity(64);
        let mut next = Vec::with_capacity(64);
        level.push(self.root);
        let mut cost = 0;
        while !level.is_empty() {
            for &n in &level {
                let words = self.node(n).value.words().as_ptr();
                for &p in pos {
                    // Addresses only: every position is `< m`, inside the value.
                    prefetch_line(words.wrapping_add(p as usize / 64));
                }
            }
            cost += level.len();
            for &n in &level {
                let node = self.node(n);
                if !node.value.contains_positions(pos) {
                    continue;
                }
                if node.leaf {
                    out.push(node.id);
                } else {
                    for &c in &node.children {
                        prefetch_line(self.nodes.as_ptr().wrapping_add(c as usize).cast());
                    }
                    next.extend_from_slice(&node.children);
                }
            }
            core::mem::swap(&mut level, &mut next);
            next.clear();
        }
        cost
    }

    // ---- invariants --------------------------------------------------------

    /// Checks every invariant; tests and fuzzers call it after each
    /// operation. Costs a pass over every node's value.
    ///
    /// Checked: the root has no parent and is a leaf or has `2..=2d`
    /// children; other inner nodes have `d..=2d`; more than `2d` only for an
    /// all-ones node with the heuristic on; each child's parent link points
    /// back; each inner value is the OR of its children; every leaf is at
    /// the same depth, maps back from its id, and every id is present once;
    /// every live arena slot is reachable and free slots are empty.
    ///
    /// # Errors
    ///
    /// A description of the first broken invariant.
    pub fn validate(&self) -> bloomslice::Result<()> {
        let d = self.config.order;
        let w = self.params.words();
        if self.root == NO_NODE {
            if !self.leaf_of.is_empty() || self.node_count() != 0 {
                return Err(invalid!("empty tree with leaves or nodes"));
            }
            return Ok(());
        }
        let root = self
            .nodes
            .get(self.root as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| invalid!("root slot is empty"))?;
        if root.parent != NO_NODE {
            return Err(invalid!("root has a parent"));
        }
        for &f in &self.free {
            if self.nodes.get(f as usize).is_none_or(Option::is_some) {
                return Err(invalid!("free slot {f} is live or out of range"));
            }
        }
        let mut reached = 0usize;
        let mut leaves = 0usize;
        let mut leaf_depth = None;
        let mut stack = vec![(self.root, 0usize)];
        let mut acc = vec![0u64; w];
        while let Some((n, depth)) = stack.pop() {
            reached += 1;
            if reached > self.nodes.len() {
                return Err(invalid!("cycle in child links"));
            }
            let node =
                self.nodes.get(n as usize).and_then(Option::as_ref).ok_or_else(|| invalid!("node {n} is not live"))?;
            if node.value.params() != &self.params {
                return Err(invalid!("node {n} has other params"));
            }
            if node.leaf {
                if !node.children.is_empty() {
                    return Err(invalid!("leaf {n} has children"));
                }
                if self.leaf_of.get(&node.id) != Some(&n) {
                    return Err(invalid!("leaf {n} (id {}) not mapped back", node.id));
                }
                if *leaf_depth.get_or_insert(depth) != depth {
                    return Err(invalid!("leaf {n} at depth {depth}, others at {leaf_depth:?}"));
                }
                leaves += 1;
                continue;
            }
            let c = node.children.len();
            let low = if n == self.root { 2 } else { d };
            if c < low {
                return Err(invalid!("node {n} has {c} children, fewer than {low}"));
            }
            let all_ones = node.value.count_ones() == self.params.m();
            if c > 2 * d && !(self.config.all_ones_heuristic && all_ones) {
                return Err(invalid!("node {n} has {c} children, more than 2d = {}", 2 * d));
            }
            acc.fill(0);
            for &ch in &node.children {
                let child = self
                    .nodes
                    .get(ch as usize)
                    .and_then(Option::as_ref)
                    .ok_or_else(|| invalid!("child {ch} is not live"))?;
                if child.parent != n {
                    return Err(invalid!("child {ch} of {n} points at parent {}", child.parent));
                }
                for (a, b) in acc.iter_mut().zip(child.value.words()) {
                    *a |= b;
                }
                stack.push((ch, depth + 1));
            }
            if acc != node.value.words() {
                return Err(invalid!("node {n} value is not the OR of its children"));
            }
        }
        if leaves != self.leaf_of.len() {
            return Err(invalid!("{leaves} leaves reachable but {} ids mapped", self.leaf_of.len()));
        }
        if reached != self.node_count() {
            return Err(invalid!("{reached} nodes reachable but {} live", self.node_count()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    index_test_module!(512, 3);

    fn brute(tree: &BloofiTree, key: u64) -> Vec<u64> {
        let mut ids: Vec<u64> =
            tree.ids().filter(|&id| tree.filter(id).unwrap().contains(&key.to_le_bytes())).collect();
        ids.sort_unstable();
        ids
    }

    fn sorted(mut v: Vec<u64>) -> Vec<u64> {
        v.sort_unstable();
        v
    }

    #[test]
    fn order_below_two_is_an_error() {
        for order in [0, 1] {
            assert_eq!(
                BloofiTree::new(params(), BloofiConfig::with_order(order)).unwrap_err(),
                BloofiError::OrderTooSmall { order }
            );
            let f = filter([1]);
            let err = BloofiTree::bulk_build(params(), BloofiConfig::with_order(order), &[(1, &f)], BulkOrder::AsGiven);
            assert_eq!(err.unwrap_err(), BloofiError::OrderTooSmall { order });
        }
        assert!(BloofiTree::new(params(), BloofiConfig::with_order(2)).is_ok());
    }

    #[test]
    fn grows_splits_and_shrinks_with_valid_shape() {
        for order in [2, 3, 5] {
            let mut tree = BloofiTree::new(params(), BloofiConfig::with_order(order)).unwrap();
            for id in 0..200u64 {
                tree.insert_filter(id, &filter([id])).unwrap();
                tree.validate().unwrap();
            }
            assert!(tree.height() >= 2);
            for key in 0..260u64 {
                assert_eq!(sorted(tree.query(&key.to_le_bytes())), brute(&tree, key));
            }
            for id in (0..200u64).rev().step_by(3).chain((0..200).step_by(3)) {
                if tree.contains(id) {
                    tree.remove_set(id).unwrap();
                    tree.validate().unwrap();
                }
            }
            for key in 0..260u64 {
                assert_eq!(sorted(tree.query(&key.to_le_bytes())), brute(&tree, key));
            }
            let rest: Vec<u64> = tree.ids().collect();
            for id in rest {
                tree.remove_set(id).unwrap();
                tree.validate().unwrap();
            }
            assert!(tree.is_empty());
            assert_eq!(tree.node_count(), 0);
        }
    }

    #[test]
    fn all_ones_nodes_keep_growing_only_with_the_heuristic() {
        // Tiny filters full of keys: every node is all ones.
        let p = BloomParams::new(64, 4).unwrap();
        let full = |seed: u64| {
            let mut f = BloomFilter::new(p).unwrap();
            for k in 0..200u64 {
                f.insert(&(seed * 1000 + k).to_le_bytes());
            }
            f
        };
        let mut on = BloofiTree::new(p, BloofiConfig::default()).unwrap();
        let mut off = BloofiTree::new(p, BloofiConfig::default().all_ones_heuristic(false)).unwrap();
        for id in 0..40 {
            on.insert_filter(id, &full(id)).unwrap();
            off.insert_filter(id, &full(id)).unwrap();
            on.validate().unwrap();
            off.validate().unwrap();
        }
        assert_eq!(on.height(), 1);
        assert_eq!(on.root_fanout(), 40);
        assert!(off.height() > 1 && off.root_fanout() <= 4);
        // Emptying the leaves makes the over-full root split (deferred split).
        let empty = BloomFilter::new(p).unwrap();
        for id in 0..40 {
            on.remove_set(id).unwrap();
            on.insert_filter(100 + id, &empty).unwrap();
            on.validate().unwrap();
        }
        assert!(on.root_fanout() <= 4);
    }

    #[test]
    fn update_and_insert_key_reach_the_root() {
        let mut tree = BloofiTree::new(params(), BloofiConfig::default()).unwrap();
        for id in 0..30u64 {
            tree.insert_filter(id, &filter([id])).unwrap();
        }
        tree.update_filter(7, &filter([1000, 1001])).unwrap();
        tree.insert_key(9, &2000u64.to_le_bytes()).unwrap();
        tree.validate().unwrap();
        assert!(tree.query(&1000u64.to_le_bytes()).contains(&7));
        assert!(tree.query(&2000u64.to_le_bytes()).contains(&9));
        // An update touches exactly the path: height + 1 nodes.
        tree.update_filter(3, &filter([5000])).unwrap();
        assert_eq!(tree.last_maintenance_cost(), tree.height() + 1);
        let stats = tree.maintenance_stats();
        assert_eq!((stats.inserts, stats.updates), (30, 3));
        assert!(stats.mean_insert() > 1.0);
        // Values written are a subset of the nodes accessed; an update
        // writes exactly its leaf-to-root path.
        assert!(stats.insert_written <= stats.insert_nodes && stats.update_written <= stats.update_nodes);
        assert!(stats.mean_insert_written() >= 1.0);
        assert_eq!(stats.update_written, stats.update_nodes);
    }

    #[test]
    fn errors_leave_the_tree_unchanged() {
        let mut tree = BloofiTree::new(params(), BloofiConfig::default()).unwrap();
        for id in 0..10u64 {
            tree.insert_filter(id, &filter([id])).unwrap();
        }
        let before: Vec<_> = (0..20u64).map(|k| sorted(tree.query(&k.to_le_bytes()))).collect();
        let (nodes, stats) = (tree.node_count(), tree.maintenance_stats());
        bloomslice::testing::assert_write_errors(&mut tree, 3, 99);
        let other = BloomFilter::new(BloomParams::new(512, 4).unwrap()).unwrap();
        tree.validate().unwrap();
        assert_eq!((tree.node_count(), tree.maintenance_stats()), (nodes, stats));
        let after: Vec<_> = (0..20u64).map(|k| sorted(tree.query(&k.to_le_bytes()))).collect();
        assert_eq!(before, after);
        let f = filter([1]);
        let dup = BloofiTree::bulk_build(params(), BloofiConfig::default(), &[(1, &f), (1, &f)], BulkOrder::Auto);
        assert_eq!(dup.unwrap_err(), Error::DuplicateId(1).into());
        let mixed = BloofiTree::bulk_build(params(), BloofiConfig::default(), &[(1, &f), (2, &other)], BulkOrder::Auto);
        assert!(matches!(mixed.unwrap_err(), BloofiError::Core(Error::ParamsMismatch { .. })));
    }

    #[test]
    fn bulk_build_and_rebuild_answer_like_iterative_insert() {
        let filters: Vec<BloomFilter> = (0..150u64).map(|i| filter(i * 3..i * 3 + 5)).collect();
        let items: Vec<(u64, &BloomFilter)> = filters.iter().enumerate().map(|(i, f)| (i as u64 + 10, f)).collect();
        let mut iterative = BloofiTree::new(params(), BloofiConfig::default()).unwrap();
        for (id, f) in &items {
            iterative.insert_filter(*id, f).unwrap();
        }
        for order in [BulkOrder::AsGiven, BulkOrder::PaperGreedy, BulkOrder::MinHashChain, BulkOrder::Auto] {
            for d in [2, 4] {
                let config = BloofiConfig::with_order(d);
                let mut bulk = BloofiTree::bulk_build(params(), config, &items, order).unwrap();
                bulk.validate().unwrap();
                assert_eq!(bulk.len(), 150);
                for key in 0..500u64 {
                    assert_eq!(sorted(bulk.query(&key.to_le_bytes())), sorted(iterative.query(&key.to_le_bytes())));
                }
                bulk.remove_set(10).unwrap();
                bulk.insert_filter(10, &filter([1])).unwrap();
                bulk.rebuild(order);
                bulk.validate().unwrap();
                assert_eq!(bulk.len(), 150);
            }
        }
        let empty = BloofiTree::bulk_build(params(), BloofiConfig::default(), &[], BulkOrder::Auto).unwrap();
        empty.validate().unwrap();
        assert!(empty.query("x").is_empty());
    }

    #[test]
    fn search_cost_counts_tested_nodes() {
        let mut tree = BloofiTree::new(params(), BloofiConfig::default()).unwrap();
        assert_eq!(tree.query_with_cost("a"), (vec![], 0));
        tree.insert_filter(1, &filter([1])).unwrap();
        assert_eq!(tree.query_with_cost(&1u64.to_le_bytes()), (vec![1], 1));
        for id in 2..100u64 {
            tree.insert_filter(id, &filter([id])).unwrap();
        }
        // A key in one filter: at least one root-to-leaf path and every
        // sibling on it is tested; never more than every node.
        let (ids, cost) = tree.query_with_cost(&50u64.to_le_bytes());
        assert!(ids.contains(&50));
        assert!(cost > tree.height() && cost <= tree.node_count());
    }

    #[test]
    fn metrics_agree_with_their_definitions() {
        let k = Kernels::scalar();
        let a = [0b1111u64, 0];
        let b = [0b0011u64, 0b1];
        assert_eq!(Metric::Hamming.distance_words(k, &a, &b), 3.0);
        assert!((Metric::Jaccard.distance_words(k, &a, &b) - (1.0 - 2.0 / 5.0)).abs() < 1e-12);
        assert!((Metric::Cosine.distance_words(k, &a, &b) - (1.0 - 2.0 / 12f64.sqrt())).abs() < 1e-12);
        let z = [0u64, 0];
        for m in Metric::ALL {
            assert_eq!(m.distance_words(k, &z, &z), 0.0);
            assert_eq!(m.distance_words(k, &a, &a), 0.0);
        }
        assert_eq!(Metric::Cosine.distance_words(k, &a, &z), 1.0);
        assert_eq!(Metric::Jaccard.distance_words(k, &a, &z), 1.0);
    }
}

//! Test support (feature `testing`): what the differential harness of the
//! core ([`bloomslice::testing`]) needs to drive the structures of this
//! crate, shared by the property tests and the fuzz targets.

use bloomslice::BloomFilter;

use crate::bloofi::{BloofiTree, BulkOrder};

/// The maintenance hook for a [`BloofiTree`] (see
/// [`run_differential_with`](bloomslice::testing::run_differential_with)): a rebuild in place, or a bulk build from
/// the same filters, in one of the bulk orders, none of which may change
/// answers.
///
/// # Panics
///
/// If the bulk build refuses the tree's own filters (a bug).
pub fn maintain_bloofi(tree: &mut BloofiTree, how: u8) {
    let order =
        [BulkOrder::AsGiven, BulkOrder::PaperGreedy, BulkOrder::MinHashChain, BulkOrder::Auto][usize::from(how % 4)];
    if how & 4 == 0 {
        tree.rebuild(order);
    } else {
        let filters: Vec<(u64, BloomFilter)> =
            tree.ids().map(|id| (id, tree.filter_cloned(id).expect("a listed id"))).collect();
        let items: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
        *tree = BloofiTree::bulk_build(*tree.params(), *tree.config(), &items, order).expect("the tree's own filters");
    }
}

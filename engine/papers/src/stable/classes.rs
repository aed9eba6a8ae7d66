//! IBF-H's sampler: cells grouped by value, so that a cell can be drawn with
//! probability proportional to `1 / value` in one step.
//!
//! `members[v]` lists the cells holding value `v` (for `v` in `1..=M`; zero
//! cells are not listed) and `slot[c]` is cell `c`'s place in its list, so a
//! cell moves between lists in O(1) when its value changes. Each listed
//! cell of value `v` owns `floor(2^32 / v)` points of an integer range whose
//! total is kept up to date; a draw is one uniform point of that range (one
//! 64-bit random word), found by walking the at most M classes. A cell is
//! thus drawn with probability proportional to `1 / v` up to the rounding
//! of `2^32 / v` (relative error below `v / 2^32`), uniformly within its
//! class. Memory: 8 bytes per cell beside the cell's own byte.

/// `slot` value of a cell that is zero (in no list).
const NOT_LISTED: u32 = u32::MAX;

/// Cells grouped by value (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct ValueClasses {
    /// `members[v]`: the cells of value `v`; `members[0]` stays empty.
    members: Vec<Vec<u32>>,
    /// Each cell's place in its class list, or `NOT_LISTED`.
    slot: Vec<u32>,
    /// `weight[v] = floor(2^32 / v)`: each cell of value `v` owns this many
    /// points of the sampling range (`weight[0] = 0`).
    weight: Vec<u64>,
    /// Sum of the weights of every listed cell (below 2^64: fewer than 2^32
    /// cells, each of weight at most 2^32).
    total: u64,
}

impl ValueClasses {
    /// All `cells` cells zero, values up to `max`.
    pub(super) fn new(cells: usize, max: u8) -> Self {
        let classes = usize::from(max) + 1;
        ValueClasses {
            members: vec![Vec::new(); classes],
            slot: vec![NOT_LISTED; cells],
            weight: (0..classes as u64).map(|v| (1u64 << 32).checked_div(v).unwrap_or(0)).collect(),
            total: 0,
        }
    }

    /// Every cell back to zero.
    pub(super) fn clear(&mut self) {
        self.members.iter_mut().for_each(Vec::clear);
        self.slot.fill(NOT_LISTED);
        self.total = 0;
    }

    /// Records that `cell` changed from `old` to `new`.
    #[inline]
    pub(super) fn moved(&mut self, cell: u32, old: u8, new: u8) {
        if old == new {
            return;
        }
        self.total = self.total - self.weight[usize::from(old)] + self.weight[usize::from(new)];
        if old != 0 {
            let list = &mut self.members[usize::from(old)];
            let at = self.slot[cell as usize] as usize;
            // Swap-remove: the list's last cell takes `cell`'s place.
            list.swap_remove(at);
            if let Some(&moved) = list.get(at) {
                self.slot[moved as usize] = at as u32;
            }
            self.slot[cell as usize] = NOT_LISTED;
        }
        if new != 0 {
            let list = &mut self.members[usize::from(new)];
            self.slot[cell as usize] = list.len() as u32;
            list.push(cell);
        }
    }

    /// A non-zero cell drawn with probability proportional to `1 / value`
    /// from the uniform 64-bit word `r`, or `None` when every cell is zero.
    #[inline]
    pub(super) fn sample(&self, r: u64) -> Option<u32> {
        // A uniform point of [0, total): the cell owning it is the draw.
        let mut t = ((u128::from(r) * u128::from(self.total)) >> 64) as u64;
        for (list, &weight) in self.members.iter().zip(&self.weight).skip(1) {
            let span = list.len() as u64 * weight;
            if t < span {
                // Each member owns `weight` consecutive points.
                return Some(list[(t / weight) as usize]);
            }
            t -= span;
        }
        None
    }

    /// Whether the lists hold exactly the non-zero cells of `cells`, each
    /// once, in the list of its value, and `slot` inverts them.
    pub(super) fn agrees_with(&self, cells: &[u8]) -> bool {
        if self.slot.len() != cells.len() {
            return false;
        }
        let listed: usize = self.members.iter().map(Vec::len).sum();
        let nonzero = cells.iter().filter(|&&c| c != 0).count();
        let total: u64 = cells.iter().map(|&c| self.weight.get(usize::from(c)).copied().unwrap_or(0)).sum();
        listed == nonzero
            && total == self.total
            && self.members.iter().enumerate().all(|(v, list)| {
                list.iter().enumerate().all(|(i, &c)| {
                    cells.get(c as usize).is_some_and(|&value| usize::from(value) == v)
                        && self.slot[c as usize] == i as u32
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_keep_the_lists_consistent() {
        let mut cells = vec![0u8; 16];
        let mut classes = ValueClasses::new(16, 7);
        let steps = [(3u32, 5u8), (4, 5), (5, 5), (3, 4), (4, 0), (5, 7), (3, 0), (9, 1), (5, 6)];
        for (cell, value) in steps {
            classes.moved(cell, cells[cell as usize], value);
            cells[cell as usize] = value;
            assert!(classes.agrees_with(&cells));
        }
        classes.clear();
        assert!(classes.agrees_with(&[0; 16]));
        assert_eq!(classes.sample(12345), None);
    }
}

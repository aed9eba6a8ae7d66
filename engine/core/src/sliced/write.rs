//! A [`SlicedIndex`]'s writes: reserving shards, inserting filters one at
//! a time or in bulk (through 64x64 bit transposes), removing and updating
//! them, and inserting keys.

use super::*;

impl SlicedIndex {
    /// Makes sure at least `additional` free columns exist, allocating
    /// shards (or widening one) as needed. All-or-nothing.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] if memory cannot be had; the index is unchanged.
    pub fn reserve(&mut self, additional: usize) -> Result<()> {
        let m = self.params.m() as usize;
        let free: usize = self.shards.iter().map(|s| s.columns() - s.n_used).sum();
        let mut needed = additional.saturating_sub(free);
        if needed == 0 {
            return Ok(());
        }
        self.slots.try_reserve(additional).map_err(|_| Error::CapacityOverflow("id map"))?;
        let max = self.config.max_shard_columns;
        // Widen the first shard that is not at full width (doubling up to
        // 512 columns, then by 512), then add shards.
        let mut widened = None;
        if let Some((i, s)) = self.shards.iter().enumerate().find(|(_, s)| s.columns() < max) {
            let cols = shard_columns_for(s.columns() + needed).min(max);
            needed = needed.saturating_sub(cols - s.columns());
            widened = Some((i, s.widened(m, cols)?));
        }
        let mut fresh = Vec::new();
        while needed > 0 {
            let cols = shard_columns_for(needed).min(max);
            fresh.push(Shard::new(m, cols)?);
            needed = needed.saturating_sub(cols);
        }
        self.shards.try_reserve(fresh.len()).map_err(|_| Error::CapacityOverflow("shard list"))?;
        if let Some((i, s)) = widened {
            self.shards[i] = Arc::new(s);
        }
        self.shards.extend(fresh.into_iter().map(Arc::new));
        Ok(())
    }

    /// Takes a free column (reserving one first if needed).
    pub(super) fn take_column(&mut self, id: u64) -> Result<Slot> {
        self.reserve(1)?;
        let (shard, col) = self
            .shards
            .iter()
            .enumerate()
            .find(|(_, s)| s.n_used < s.columns())
            .and_then(|(i, s)| Some((i, s.first_free()?)))
            .ok_or(Error::CapacityOverflow("no free column after reserve"))?;
        let s = self.shard_mut(shard)?;
        s.used[col / 64] |= 1 << (col % 64);
        s.owners[col] = id;
        s.n_used += 1;
        let slot = Slot { shard: shard as u32, col: col as u32 };
        self.slots.insert(id, slot);
        Ok(slot)
    }

    /// Shard `si`, writable: a shard shared with a clone of this index (or
    /// with a reader's snapshot) is copied first, and rows that are a window
    /// of a mapped file are copied into memory. This is the one fallible
    /// step of every write, taken before the write changes anything.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] when the copy cannot be allocated; the
    /// index is unchanged then.
    pub(super) fn shard_mut(&mut self, si: usize) -> Result<&mut Shard> {
        writable(&mut self.shards, si)
    }

    /// Adds a filter under a new id.
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`], [`Error::DuplicateId`], or
    /// [`Error::CapacityOverflow`]; the index is unchanged after an error.
    pub fn insert_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        if self.slots.contains_key(&id) {
            return Err(Error::DuplicateId(id));
        }
        let slot = self.take_column(id)?;
        // `take_column` made the shard unique and owned.
        self.shard_mut(slot.shard as usize)?.fill_empty_column(slot.col as usize, filter);
        Ok(())
    }

    /// Adds a filter given as raw words (see [`BloomFilter::from_words`]).
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::from_words`] and [`SlicedIndex::insert_filter`].
    pub fn insert_words(&mut self, id: u64, params: &BloomParams, words: &[u64]) -> Result<()> {
        self.params.check_same(params)?;
        let filter = BloomFilter::from_words(*params, words)?;
        self.insert_filter(id, &filter)
    }

    /// Adds many filters at once: all or nothing.
    ///
    /// # Errors
    ///
    /// As [`SlicedIndex::insert_filter`], also for an id repeated inside
    /// `filters`; the index is unchanged after an error.
    pub fn insert_filters(&mut self, filters: &[(u64, &BloomFilter)]) -> Result<()> {
        let mut seen = hashbrown::HashSet::with_capacity(filters.len());
        for (id, f) in filters {
            self.params.check_same(f.params())?;
            if self.slots.contains_key(id) || !seen.insert(*id) {
                return Err(Error::DuplicateId(*id));
            }
        }
        self.reserve(filters.len())?;
        // Copy every shared or mapped shard first (the only fallible step
        // left), so that nothing below can fail half-way.
        for si in 0..self.shards.len() {
            self.shard_mut(si)?;
        }
        // Take every column first, then write 64 columns of one row word at
        // a time through a 64x64 bit transpose: each row word is written once
        // per group instead of once per filter (64x less row traffic).
        let mut placed = Vec::with_capacity(filters.len());
        for (id, f) in filters {
            placed.push((self.take_column(*id)?, *f));
        }
        placed.sort_unstable_by_key(|(slot, _)| (slot.shard, slot.col));
        let m = self.params.m() as usize;
        let mut group: [Option<&BloomFilter>; 64] = [None; 64];
        for run in placed.chunk_by(|(a, _), (b, _)| a.shard == b.shard && a.col / 64 == b.col / 64) {
            let (first, _) = run[0];
            let shard = writable(&mut self.shards, first.shard as usize)?;
            if run.len() < TRANSPOSE_MIN_GROUP || shard.sub_word() {
                for (slot, f) in run {
                    shard.fill_empty_column(slot.col as usize, f);
                }
                continue;
            }
            group.fill(None);
            for (slot, f) in run {
                group[slot.col as usize % 64] = Some(*f);
            }
            shard.or_word_group(m, first.col as usize / 64, &group, self.params.words());
        }
        Ok(())
    }

    /// Removes a filter; its column is cleared and reused later, and a shard
    /// left empty is released.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged.
    pub fn remove_set(&mut self, id: u64) -> Result<()> {
        let slot = self.slot(id)?;
        let m = self.params.m() as usize;
        let (si, col) = (slot.shard as usize, slot.col as usize);
        let s = writable(&mut self.shards, si)?;
        s.clear_column(m, col);
        s.used[col / 64] &= !(1 << (col % 64));
        s.n_used -= 1;
        self.slots.remove(&id);
        if s.n_used == 0 {
            self.shards.swap_remove(si);
            if let Some(moved) = self.shards.get(si) {
                // The former last shard now sits at `si`: re-point its ids.
                for_each_set_bit(&moved.used, |c| {
                    if let Some(slot) = self.slots.get_mut(&moved.owners[c]) {
                        slot.shard = si as u32;
                    }
                });
            }
        }
        Ok(())
    }

    /// ORs `filter` into the filter `id` (adds its keys).
    ///
    /// # Errors
    ///
    /// [`Error::ParamsMismatch`] or [`Error::UnknownId`]; the index is unchanged.
    pub fn update_filter(&mut self, id: u64, filter: &BloomFilter) -> Result<()> {
        self.params.check_same(filter.params())?;
        let slot = self.slot(id)?;
        self.shard_mut(slot.shard as usize)?.or_column(slot.col as usize, filter);
        Ok(())
    }

    /// Inserts one key, by its hash, into filter `id`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownId`]; the index is unchanged.
    pub fn insert_key_hash(&mut self, id: u64, hash: KeyHash) -> Result<()> {
        let slot = self.slot(id)?;
        let pos = self.params.probes(hash);
        let s = writable(&mut self.shards, slot.shard as usize)?;
        for &p in &pos {
            let (word, bit) = s.bit_at(p as usize, slot.col as usize);
            let w = &mut s.rows[word];
            if *w & bit == 0 {
                *w |= bit;
                s.ones += 1;
                s.logs.note_set(slot.col as usize, p as usize);
            }
        }
        Ok(())
    }
}

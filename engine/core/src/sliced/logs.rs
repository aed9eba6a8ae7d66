//! Column logs: for a column filled from empty with few set bits, the rows
//! of those bits, so that deleting (or replacing) the column clears those
//! rows instead of reading all `m`.
//!
//! A column is one bit in each of `m` rows, `columns` bits apart, so
//! clearing it without knowing where its bits are reads `m` lines: on
//! `full` N = 10 000 (m = 100 992) 6.5 MB a copy, streamed through the
//! caches beside the readers, and twice for a `ConcurrentIndex` (both
//! copies). A small set (64 keys, about 450 bits) listed in its log is
//! removed by writing only its own rows (`bench/RESULTS.md`, section
//! "Latency").
//!
//! Bounds: a log lists at most `m / CAP_DIVISOR` rows (4 bytes each, so a
//! log is at most its column's own bytes), and the logs of a shard list at
//! most a quarter as many rows as the shard has row words (at most an
//! eighth of the rows' bytes). A column whose bits pass its cap, or that
//! does not fit the shard's budget, keeps no log and is cleared by reading
//! every row, as without logs. Logs are not written to index files: a
//! loaded column has none.

use hashbrown::HashMap;

/// A log lists at most `m / CAP_DIVISOR` rows.
const CAP_DIVISOR: usize = 32;

/// The logs of one shard.
#[derive(Clone, Debug)]
pub(super) struct ColumnLogs {
    /// Column -> rows that hold its set bits. A superset: bits cleared
    /// since (by [`SlicedIndex::set_column_bits`](super::SlicedIndex::set_column_bits))
    /// stay listed. A column without an entry is unknown; a free column
    /// never has one.
    map: HashMap<u32, Vec<u32>>,
    /// Rows listed over all logs.
    listed: usize,
    /// Most rows one log may list.
    cap: usize,
    /// Most rows all logs together may list.
    budget: usize,
}

impl ColumnLogs {
    /// No logs, for a shard of `m` rows stored in `row_words` words.
    pub(super) fn new(m: usize, row_words: usize) -> Self {
        ColumnLogs { map: HashMap::new(), listed: 0, cap: m / CAP_DIVISOR, budget: row_words / 4 }
    }

    /// These logs for the same columns in a shard of `row_words` words (a
    /// widened copy: columns keep their indexes).
    pub(super) fn widened(&self, row_words: usize) -> Self {
        ColumnLogs { map: self.map.clone(), listed: self.listed, cap: self.cap, budget: self.budget.max(row_words / 4) }
    }

    /// An empty log for an empty column about to receive `ones` bits, if
    /// they fit the bounds.
    pub(super) fn start(&self, ones: usize) -> Option<Vec<u32>> {
        (ones <= self.cap && self.listed + ones <= self.budget).then(|| Vec::with_capacity(ones))
    }

    /// Takes the log of `col` out (to clear the column, or to add rows and
    /// [`ColumnLogs::put`] it back).
    pub(super) fn take(&mut self, col: usize) -> Option<Vec<u32>> {
        let log = self.map.remove(&(col as u32))?;
        self.listed -= log.len();
        Some(log)
    }

    /// Keeps `log` as the log of `col` if it is within the bounds; drops it
    /// otherwise (the column is then unknown).
    pub(super) fn put(&mut self, col: usize, log: Vec<u32>) {
        if log.len() <= self.cap && self.listed + log.len() <= self.budget {
            self.listed += log.len();
            self.map.insert(col as u32, log);
        }
    }

    /// Notes that bit (row `r`, column `col`) was just set.
    pub(super) fn note_set(&mut self, col: usize, r: usize) {
        if let Some(mut log) = self.take(col) {
            log.push(r as u32);
            self.put(col, log);
        }
    }

    /// Whether `col` has a log.
    pub(super) fn has(&self, col: usize) -> bool {
        self.map.contains_key(&(col as u32))
    }

    /// Rows listed over all logs.
    #[cfg(test)]
    pub(super) fn listed(&self) -> usize {
        self.listed
    }

    /// Bytes these logs hold.
    pub(super) fn bytes(&self) -> usize {
        self.map.allocation_size() + self.map.values().map(|l| l.capacity() * 4).sum::<usize>()
    }

    /// Checks the logs of a shard of `m` rows: each is a used column's,
    /// lists every row where `bit(row, column)` is set, and the bounds and
    /// the count of listed rows hold.
    pub(super) fn check(
        &self,
        m: usize,
        used: impl Fn(usize) -> bool,
        bit: impl Fn(usize, usize) -> bool,
    ) -> Result<(), String> {
        let mut listed = 0;
        for (&c, log) in &self.map {
            let c = c as usize;
            if !used(c) {
                return Err(format!("free column {c} has a log"));
            }
            if log.len() > self.cap {
                return Err(format!("column {c}'s log lists {} rows, past its cap {}", log.len(), self.cap));
            }
            let mut rows = vec![false; m];
            for &r in log {
                match rows.get_mut(r as usize) {
                    Some(seen) => *seen = true,
                    None => return Err(format!("column {c}'s log lists row {r} of {m}")),
                }
            }
            if let Some(r) = (0..m).find(|&r| bit(r, c) && !rows[r]) {
                return Err(format!("column {c} has a bit in row {r} that its log does not list"));
            }
            listed += log.len();
        }
        if listed != self.listed || listed > self.budget {
            return Err(format!("logs list {listed} rows, counted {} (budget {})", self.listed, self.budget));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_per_log_and_per_shard() {
        // m = 320: at most 10 rows a log; 48 row words: 12 rows in all.
        let mut logs = ColumnLogs::new(320, 48);
        assert!(logs.start(11).is_none(), "past the cap");
        let mut a = logs.start(10).unwrap();
        a.extend(0..10);
        logs.put(0, a);
        assert!(logs.has(0));
        assert!(logs.start(3).is_none(), "past the shard's budget");
        let b = logs.start(2).unwrap();
        logs.put(1, b);
        logs.note_set(1, 7);
        logs.note_set(1, 8);
        assert!(logs.has(1));
        logs.note_set(1, 9);
        assert!(!logs.has(1), "a log that passes the budget is dropped");
        logs.note_set(1, 10);
        assert!(!logs.has(1), "an unknown column stays unknown");
        assert_eq!(logs.take(0).map(|l| l.len()), Some(10));
        assert_eq!(logs.listed, 0);
        let mut c = logs.start(1).unwrap();
        c.push(3);
        logs.put(2, c);
        for r in 0..9 {
            logs.note_set(2, r);
        }
        assert!(logs.has(2));
        logs.note_set(2, 9);
        assert!(!logs.has(2), "a log that passes the cap is dropped");
        assert_eq!(logs.listed, 0);
        assert!(logs.bytes() > 0);
    }
}

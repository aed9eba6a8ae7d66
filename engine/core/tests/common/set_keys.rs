//! Keys for the `SetIndex` model tests (`collection.rs` and
//! `collection_differential.rs`, each of which includes this file with
//! `#[path]`): keys never given before, the bytes the collection is given
//! for them, and the false-positive rates the models build at.

use proptest::prelude::*;

/// The little-endian bytes of each key, as the collection is given them.
pub fn bytes(keys: &[u64]) -> Vec<[u8; 8]> {
    keys.iter().map(|k| k.to_le_bytes()).collect()
}

/// Hands out keys never handed out before (1, 2, 3, ...), so a key of one
/// set is absent from every other set unless a test repeats it.
#[derive(Debug, Default)]
pub struct FreshKeys {
    last: u64,
}

impl FreshKeys {
    /// The next `n` keys.
    pub fn take(&mut self, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                self.last += 1;
                self.last
            })
            .collect()
    }
}

/// The false-positive rates a model test builds its collection at.
pub fn rates() -> impl Strategy<Value = f64> {
    proptest::sample::select(vec![0.01, 0.05, 0.2])
}

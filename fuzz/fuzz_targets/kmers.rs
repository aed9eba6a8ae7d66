//! Canonical k-mers of arbitrary bytes, differentially: the rolling
//! iterator of `bloomslice::kmer` against every window encoded on its own
//! (and the reverse complement of the input giving the same k-mers in
//! reverse order). The first byte picks `k` (any value, so invalid lengths
//! are exercised too); the rest is the sequence.
#![no_main]

use bloomslice::kmer::{self, KmerLength, MAX_KMER_LENGTH};
use libfuzzer_sys::fuzz_target;

fn complement(b: u8) -> u8 {
    match b {
        b'A' | b'a' => b'T',
        b'C' | b'c' => b'G',
        b'G' | b'g' => b'C',
        b'T' | b't' => b'A',
        // Not a base: any byte that is not one either.
        _ => b'N',
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&k, seq)) = data.split_first() else { return };
    let k = usize::from(k);
    let Ok(len) = KmerLength::new(k) else {
        assert!(k == 0 || k > MAX_KMER_LENGTH);
        return;
    };
    let mut rolling = kmer::canonical_kmers(seq, len);
    let got: Vec<u64> = rolling.by_ref().collect();
    let mut want = Vec::new();
    let mut skipped = 0u64;
    for window in seq.windows(k) {
        match kmer::encode(window) {
            Some(code) => {
                let canonical = kmer::canonical(code, len);
                assert_eq!(kmer::decode(code, len), window.to_ascii_uppercase());
                assert_eq!(canonical, code.min(kmer::reverse_complement(code, len)));
                want.push(canonical);
            }
            None => skipped += 1,
        }
    }
    assert_eq!(got, want);
    assert_eq!(rolling.skipped(), skipped);
    assert_eq!(rolling.windows(), got.len() as u64 + skipped);
    let reverse: Vec<u8> = seq.iter().rev().map(|&b| complement(b)).collect();
    let mut back: Vec<u64> = kmer::canonical_kmers(&reverse, len).collect();
    back.reverse();
    assert_eq!(back, got);
});

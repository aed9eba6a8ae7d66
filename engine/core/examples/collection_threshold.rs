//! Threshold queries on a skewed collection against one `m` sized for its
//! largest set, the same sets, in one run:
//! `cargo run --release -p bloomslice --example collection_threshold -- [rounds]`.
//! 200 queries of 100 keys at 0.8: half drawn from one set (one key in 20
//! absent), half absent. Under callgrind, `--toggle-collect='*measured_c*'`
//! counts the collection's queries only (`'*measured_m*'`: one `m`'s).
use bloomslice::score::Scores;
use bloomslice::{BloomFilter, BloomParams, Key, KeyHash, LayoutConfig, SetIndex, SlicedIndex, Threshold};
use std::hint::black_box;
use std::time::Instant;

/// The collection's queries, kept out of line so callgrind can isolate them.
#[inline(never)]
fn measured_c(c: &SetIndex, qs: &[Vec<KeyHash>], t: Threshold) -> usize {
    qs.iter().map(|q| c.query_threshold(q, t).len()).sum()
}
/// One `m`'s queries, out of line as [`measured_c`].
#[inline(never)]
fn measured_m(m: &SlicedIndex, qs: &[Vec<KeyHash>], t: Threshold, s: &mut Scores, out: &mut Vec<(u64, u32)>) -> usize {
    qs.iter()
        .map(|q| {
            m.query_threshold_into(q, t, s, out);
            out.len()
        })
        .sum()
}
fn main() -> bloomslice::Result<()> {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let sets: Vec<(u64, Vec<KeyHash>)> = (0..730u64)
        .map(|i| {
            let n = (50_000 / (i + 1)) / if i % 3 == 0 { 1 } else { 4 } + 1;
            (i, (0..n).map(|k| ((i << 32) | k).to_le_bytes().key_hash(0)).collect())
        })
        .collect();
    let c = SetIndex::build(&sets, 0.01, LayoutConfig::default())?;
    let largest = sets.iter().map(|(_, k)| k.len()).max().unwrap() as u64;
    let mut one_m = SlicedIndex::new(BloomParams::for_capacity(largest, 0.01)?);
    for (id, keys) in &sets {
        let mut f = BloomFilter::new(*one_m.params())?;
        for &h in keys {
            f.insert_hash(h);
        }
        one_m.insert_filter(*id, &f)?;
    }
    let qs: Vec<Vec<KeyHash>> = (0..200u64)
        .map(|q| {
            if q % 2 == 0 {
                let (_, keys) = &sets[(q as usize * 7) % 730];
                (0..100)
                    .map(|j| {
                        if j % 20 == 0 {
                            (q << 20 | j | 1 << 60).to_le_bytes().key_hash(0)
                        } else {
                            keys[j as usize % keys.len()]
                        }
                    })
                    .collect()
            } else {
                (0..100u64).map(|j| (q << 20 | j | 1 << 61).to_le_bytes().key_hash(0)).collect()
            }
        })
        .collect();
    let t = Threshold::fraction(0.8)?;
    let (mut s, mut out) = (Scores::new(), Vec::new());
    // Checked before timing: a drawn query finds its set in both engines,
    // and the collection's passing sets are those its counts put at 80 or
    // more.
    for (q, keys) in qs.iter().enumerate() {
        let passing = c.query_threshold(keys, t);
        let mut scores = Scores::new();
        c.score_into(keys, &mut scores);
        let expected: Vec<(u64, u32)> = scores.iter().filter(|&(_, count)| count >= 80).collect();
        assert_eq!(passing, expected, "query {q}");
        one_m.query_threshold_into(keys, t, &mut s, &mut out);
        if q % 2 == 0 {
            let set = (q as u64 * 7) % 730;
            assert!(passing.iter().any(|&(id, _)| id == set), "collection misses query {q}");
            assert!(out.iter().any(|&(id, _)| id == set), "one m misses query {q}");
        }
    }
    let (mut bc, mut bm) = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        let x = Instant::now();
        black_box(measured_c(&c, &qs, t));
        bc = bc.min(x.elapsed().as_secs_f64() * 1e9 / 20000.0);
        let x = Instant::now();
        black_box(measured_m(&one_m, &qs, t, &mut s, &mut out));
        bm = bm.min(x.elapsed().as_secs_f64() * 1e9 / 20000.0);
    }
    println!("threshold: collection {bc:.1} ns/key, one m {bm:.1} ns/key, ratio {:.2}", bc / bm);
    Ok(())
}

//! Instructions per single-key query on a skewed collection: run with
//! QUERIES=0 and QUERIES=N under callgrind and subtract.
use bloomslice::{Key, KeyHash, LayoutConfig, SetIndex};

fn main() {
    let mut sets = Vec::new();
    for i in 0..730u64 {
        let n = (50_000 / (i + 1)) / if i % 3 == 0 { 1 } else { 4 } + 1;
        sets.push((i, (0..n).map(|k| ((i << 32) | k).to_le_bytes().key_hash(0)).collect::<Vec<KeyHash>>()));
    }
    let c = SetIndex::build(&sets, 0.01, LayoutConfig::default()).unwrap();
    let q: u64 = std::env::var("QUERIES").unwrap().parse().unwrap();
    let mut out = Vec::new();
    let mut total = 0usize;
    for j in 0..q {
        let key = if j % 2 == 0 {
            ((j % 730) << 32 | (j / 730) % 10).to_le_bytes()
        } else {
            ((1u64 << 63) | j).to_le_bytes()
        };
        c.query_into(&key, &mut out);
        total += out.len();
    }
    println!("{total}");
}

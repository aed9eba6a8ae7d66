//! Throughput of counting insert/remove against a plain Bloom filter
//! insert, and of the counting index's remove (prints; not a test).
//!
//! `cargo run --release -p bloomslice-papers --example counting_throughput`

use std::time::Instant;

use bloomslice::{BloomFilter, BloomParams};
use bloomslice_papers::{CountingBloomFilter, CountingSlicedIndex};

/// Throughput of counting insert/remove against a plain Bloom filter insert,
/// and of the counting index's remove (counters + column rewrite).
fn main() {
    let params = BloomParams::for_capacity(1_000_000, 0.01).unwrap();
    let n = 1_000_000u64;
    let keys: Vec<[u8; 8]> = (0..n).map(|i| i.to_le_bytes()).collect();
    let mut bf = BloomFilter::new(params).unwrap();
    let t = Instant::now();
    keys.iter().for_each(|k| bf.insert(k));
    let bloom = t.elapsed().as_secs_f64();
    let mut f = CountingBloomFilter::new(params).unwrap();
    let t = Instant::now();
    keys.iter().for_each(|k| f.insert(k));
    let ins = t.elapsed().as_secs_f64();
    let t = Instant::now();
    keys.iter().for_each(|k| f.remove(k).unwrap());
    let rem = t.elapsed().as_secs_f64();
    assert!(f.is_empty());
    // The index keeps m rows of at least 512 columns: a smaller m keeps it
    // at about 6 MB (m = 10M bits would be 640 MB).
    let index_params = BloomParams::for_capacity(10_000, 0.01).unwrap();
    let mut index = CountingSlicedIndex::new(index_params);
    for id in 0..64 {
        index.insert_set(id).unwrap();
    }
    let sub = &keys[..200_000];
    let t = Instant::now();
    sub.iter().enumerate().for_each(|(i, k)| index.insert_key(i as u64 % 64, k).unwrap());
    let idx_ins = t.elapsed().as_secs_f64();
    let t = Instant::now();
    sub.iter().enumerate().for_each(|(i, k)| index.remove_key(i as u64 % 64, k).unwrap());
    let idx_rem = t.elapsed().as_secs_f64();
    assert_eq!(index.index().count_ones(), 0);
    let mops = |n: usize, s: f64| n as f64 / s / 1e6;
    println!("m={} k={}: BloomFilter insert {:.1} M/s", params.m(), params.k(), mops(keys.len(), bloom));
    println!("CountingBloomFilter insert {:.1} M/s, remove {:.1} M/s", mops(keys.len(), ins), mops(keys.len(), rem));
    println!(
        "CountingSlicedIndex (64 sets, m={}) insert {:.1} M/s, remove {:.1} M/s",
        index_params.m(),
        mops(sub.len(), idx_ins),
        mops(sub.len(), idx_rem)
    );
}

//! Query cost of dynamic sets (prints; not a test): the sliced index of
//! dynamic sets against a naive list of dynamic filters, and against a
//! plain sliced index over the same member columns (the target: at least
//! 0.8x the plain index's speed). Checks answers before timing.
//!
//! `cargo run --release -p bloomslice-papers --example dynamic_speed`

use std::time::Instant;

use bloomslice::BloomParams;
use bloomslice_papers::{DynamicBloomFilter, DynamicSlicedIndex};

#[path = "../tests/common/dynamic_plain.rs"]
mod dynamic_plain;
use dynamic_plain::dynamic_and_plain;

fn main() {
    dynamic_query_cost();
    dynamic_vs_plain_speed();
}

/// Query cost of dynamic sets: the sliced index (one column per member)
/// against a naive list of dynamic filters.
fn dynamic_query_cost() {
    let p = BloomParams::for_capacity(1000, 0.01).unwrap();
    let sets = 1000u64;
    let mut index = DynamicSlicedIndex::new(p, 1000).unwrap();
    let mut list = Vec::new();
    for id in 0..sets {
        index.insert_set(id).unwrap();
        let mut d = DynamicBloomFilter::new(p, 1000).unwrap();
        // 500 to 3500 keys: 1 to 4 members per set.
        for j in 0..(500 + (id * 37) % 3000) {
            let key = (id * 10_000 + j).to_le_bytes();
            index.insert_key(id, &key).unwrap();
            d.insert(&key);
        }
        list.push(d);
    }
    let queries: Vec<[u8; 8]> = (0..20_000u64).map(|i| (i * 7919 % (sets * 10_000)).to_le_bytes()).collect();
    let t = Instant::now();
    let mut hits = 0;
    let mut out = Vec::new();
    for q in &queries {
        out.clear();
        index.query_hash_into(p.hash(q), &mut out);
        hits += out.len();
    }
    let sliced = t.elapsed().as_secs_f64() / queries.len() as f64;
    // The naive engine: a list of every set's member bit views, each key
    // hashed once, a set reported once if any of its members matches.
    let views: Vec<Vec<bloomslice::BloomFilter>> = list.iter().map(|d| d.bit_views().unwrap()).collect();
    let t = Instant::now();
    let mut naive_hits = 0;
    for q in &queries {
        let pos = p.positions(p.hash(q));
        naive_hits += views.iter().filter(|members| members.iter().any(|f| f.contains_positions(&pos))).count();
    }
    let naive = t.elapsed().as_secs_f64() / queries.len() as f64;
    assert_eq!(hits, naive_hits);
    println!(
        "{sets} dynamic sets, {} member columns: sliced {:.0} ns/query, naive list of member bit views {:.0} ns/query ({:.1}x)",
        index.columns(),
        sliced * 1e9,
        naive * 1e9,
        naive / sliced
    );
}

/// The speed target: the sliced index over dynamic sets answers at
/// least 0.8x as fast as a plain sliced index over the same member columns
/// (same count, same fill), single and batched queries.
fn dynamic_vs_plain_speed() {
    let cap = 256;
    let p = BloomParams::for_capacity(cap, 0.001).unwrap();
    for (sets, members) in [(500u64, 5u64), (1000, 10)] {
        let (dynamic, plain, owner) = dynamic_and_plain(p, cap, sets, members);
        // Half member keys, half absent keys.
        let keys: Vec<[u8; 8]> = (0..20_000u64)
            .map(|i| {
                let k = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                if i % 2 == 0 {
                    (((k % sets) << 32) | ((k >> 40) % (members * cap))).to_le_bytes()
                } else {
                    (k | (1 << 63)).to_le_bytes()
                }
            })
            .collect();
        let hashes: Vec<_> = keys.iter().map(|k| p.hash(k)).collect();
        let (mut out, mut matches) = (Vec::new(), 0usize);
        for (k, &h) in keys.iter().zip(&hashes).take(2000) {
            plain.query_hash_into(h, &mut out);
            let mut want: Vec<u64> = out.iter().map(|&c| owner[c as usize]).collect();
            want.sort_unstable();
            want.dedup();
            assert_eq!(dynamic.query(k), want);
            matches += out.len();
        }
        let time = |f: &mut dyn FnMut()| {
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let t = Instant::now();
                f();
                best = best.min(t.elapsed().as_secs_f64());
            }
            best / keys.len() as f64 * 1e9
        };
        let mut sink = 0usize;
        let plain_single = time(&mut || {
            for &h in &hashes {
                plain.query_hash_into(h, &mut out);
                sink += out.len();
            }
        });
        let dyn_single = time(&mut || {
            for &h in &hashes {
                dynamic.query_hash_into(h, &mut out);
                sink += out.len();
            }
        });
        let mut batch = bloomslice::BatchResults::new();
        let plain_batch = time(&mut || {
            for chunk in keys.chunks(1024) {
                plain.query_batch(chunk, &mut batch);
                sink += batch.total_matches();
            }
        });
        let dyn_batch = time(&mut || {
            for chunk in keys.chunks(1024) {
                dynamic.query_batch(chunk, &mut batch);
                sink += batch.total_matches();
            }
        });
        std::hint::black_box(sink);
        println!(
            "{sets} sets x {members} members = {} columns (m = {}, k = {}, {:.2} column matches/query): \
             single plain {plain_single:.0} ns, dynamic {dyn_single:.0} ns ({:.2}x); \
             batched plain {plain_batch:.0} ns, dynamic {dyn_batch:.0} ns ({:.2}x)",
            dynamic.columns(),
            p.m(),
            p.k(),
            matches as f64 / 2000.0,
            plain_single / dyn_single,
            plain_batch / dyn_batch
        );
    }
}

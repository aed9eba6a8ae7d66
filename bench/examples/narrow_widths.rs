//! Narrow shards against the same sets in a 512-column shard: memory, and
//! single-key and batched query time, for indexes of a few sets.
//!
//! For each set count, builds the index twice from the same filters: as a
//! new index sizes it (the narrowest shard that holds the sets) and with
//! 512 columns reserved first (the one shard width of file minor 1 and
//! earlier). Queries are half keys of the sets, half absent keys. Timed
//! rounds alternate between the two, and the ratio is of the medians.
//!
//! Run with `cargo run --release -p bloomslice-bench --example narrow_widths
//! -- [SETS...]` (default 1 2 5 16 100 200 300); `BLOOMSLICE_KERNELS` picks
//! the kernels. Set `NARROW_ONLY=narrow` or `NARROW_ONLY=wide` to run one
//! layout only (for instruction counts under callgrind).

use std::hint::black_box;
use std::time::Instant;

use bloomslice::{BatchResults, BloomFilter, BloomParams, SlicedIndex};

/// Keys per set.
const KEYS_PER_SET: u64 = 10_000;
/// Queries per timed round.
const QUERIES: usize = 200_000;
/// Keys per batch.
const BATCH: usize = 1000;
/// Timed rounds per layout.
const ROUNDS: usize = 7;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let counts = if args.is_empty() { vec![1, 2, 5, 16, 100, 200, 300] } else { args };
    let only = std::env::var("NARROW_ONLY").ok();
    let p = BloomParams::for_capacity(KEYS_PER_SET, 0.01).expect("params");
    println!(
        "m = {}, k = {}, {} keys a set, kernels {}",
        p.m(),
        p.k(),
        KEYS_PER_SET,
        bloomslice::kernels::Kernels::detect().backend()
    );
    println!(
        "| sets | columns | rows | memory_bytes | 512-col rows | 512-col memory_bytes | single ns/key narrow | 512-col | ratio | batch ns/key narrow | 512-col | ratio |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for n in counts {
        let filters: Vec<(u64, BloomFilter)> = (0..n as u64)
            .map(|i| {
                let mut f = BloomFilter::new(p).expect("filter");
                for key in i * KEYS_PER_SET..(i + 1) * KEYS_PER_SET {
                    f.insert(&key.to_le_bytes());
                }
                (i, f)
            })
            .collect();
        let refs: Vec<(u64, &BloomFilter)> = filters.iter().map(|(id, f)| (*id, f)).collect();
        let mut narrow = SlicedIndex::new(p);
        narrow.insert_filters(&refs).expect("insert");
        let mut wide = SlicedIndex::new(p);
        wide.reserve(512).expect("reserve");
        wide.insert_filters(&refs).expect("insert");
        // Half present keys (spread over the sets), half absent.
        let total = n as u64 * KEYS_PER_SET;
        let keys: Vec<[u8; 8]> = (0..QUERIES as u64)
            .map(|i| {
                let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                if i % 2 == 0 { x % total } else { total + x % (1 << 40) }.to_le_bytes()
            })
            .collect();
        let mut out = Vec::new();
        let mut results = BatchResults::new();
        let mut check = (Vec::new(), Vec::new());
        for key in keys.iter().take(2000) {
            narrow.query_into(key, &mut check.0);
            wide.query_into(key, &mut check.1);
            assert_eq!(check.0, check.1, "narrow and 512-column answers differ");
        }
        let single = |index: &SlicedIndex, out: &mut Vec<u64>| {
            let start = Instant::now();
            let mut hits = 0;
            for key in &keys {
                index.query_into(black_box(key), out);
                hits += out.len();
            }
            black_box(hits);
            start.elapsed().as_nanos() as f64 / keys.len() as f64
        };
        let batched = |index: &SlicedIndex, results: &mut BatchResults| {
            let start = Instant::now();
            let mut hits = 0;
            for chunk in keys.chunks(BATCH) {
                index.query_batch(black_box(chunk), results);
                hits += results.total_matches();
            }
            black_box(hits);
            start.elapsed().as_nanos() as f64 / keys.len() as f64
        };
        let (mut sn, mut sw, mut bn, mut bw) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            if only.as_deref() != Some("wide") {
                sn.push(single(&narrow, &mut out));
                bn.push(batched(&narrow, &mut results));
            }
            if only.as_deref() != Some("narrow") {
                sw.push(single(&wide, &mut out));
                bw.push(batched(&wide, &mut results));
            }
        }
        let med = |v: &mut Vec<f64>| {
            if v.is_empty() {
                return f64::NAN;
            }
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (sn, sw, bn, bw) = (med(&mut sn), med(&mut sw), med(&mut bn), med(&mut bw));
        println!(
            "| {n} | {} | {} | {} | {} | {} | {sn:.1} | {sw:.1} | {:.2} | {bn:.1} | {bw:.1} | {:.2} |",
            narrow.columns(),
            narrow.rows_bytes(),
            narrow.memory_bytes(),
            wide.rows_bytes(),
            wide.memory_bytes(),
            sn / sw,
            bn / bw
        );
    }
}

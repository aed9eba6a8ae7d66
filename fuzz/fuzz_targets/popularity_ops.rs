//! Fuzzing popularity-conscious hash counts. Arbitrary tiny popularity
//! vectors go through the optimisers: errors must be the typed ones a model
//! of the rules predicts; otherwise the dynamic program's counts are in
//! `[1, k_max]`, meet the hash budget and are within Theorem 2's additive
//! slack of the brute-force importance-ordered optimum. The counts then
//! define a `PopularityScheme`; arbitrary inserts into filters and a sliced
//! index are checked differentially (no false negatives against the exact
//! model, the index answers as the filters do).
#![no_main]

use arbitrary::Arbitrary;
use bloomslice::{BloomFilter, BloomParams, SlicedIndex};
use bloomslice_papers::popularity::optimize::{brute_force_ordered, half_fill_fpr, integer_solution};
use bloomslice_papers::{PopularityError, PopularityScheme};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    Insert { key: u8, id: u8 },
    Query { key: u8 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    pq: Vec<(u8, u8)>,
    bits_per_key: u8,
    k_max: u8,
    eps_tenths: u8,
    m: u16,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let pq: Vec<(u8, u8)> = input.pq.iter().take(6).copied().collect();
    let p: Vec<f64> = pq.iter().map(|x| f64::from(x.0)).collect();
    let q: Vec<f64> = pq.iter().map(|x| f64::from(x.1)).collect();
    let r = f64::from(input.bits_per_key % 12);
    let k_max = u32::from(input.k_max % 6);
    let eps = f64::from(input.eps_tenths % 20) / 10.0;
    let got = integer_solution(&p, &q, r, k_max, eps);
    let expected = if r <= 0.0 {
        Some("invalid")
    } else if k_max == 0 {
        Some("kmax")
    } else if eps <= 0.0 {
        Some("eps")
    } else if p.is_empty() || p.iter().sum::<f64>() == 0.0 || q.iter().sum::<f64>() == 0.0 {
        Some("invalid")
    } else if r * std::f64::consts::LN_2 < 1.0 - 1e-12 {
        Some("budget")
    } else {
        None
    };
    let ks = match (got, expected) {
        (Ok(ks), None) => ks,
        (Err(PopularityError::InvalidPopularity(_)), Some("invalid"))
        | (Err(PopularityError::InvalidMaxHashes(_)), Some("kmax"))
        | (Err(PopularityError::InvalidEpsilon(_)), Some("eps"))
        | (Err(PopularityError::InfeasibleBudget { .. }), Some("budget")) => return,
        (got, want) => panic!("{got:?}, expected {want:?}"),
    };
    let (sp, sq) = (p.iter().sum::<f64>(), q.iter().sum::<f64>());
    assert!(ks.iter().all(|&k| (1..=k_max).contains(&k)));
    let hashes: f64 = p.iter().zip(&ks).map(|(p, &k)| p / sp * f64::from(k)).sum();
    assert!(hashes <= r * std::f64::consts::LN_2 + 1e-9);
    let (_, best) = brute_force_ordered(&p, &q, r, k_max).expect("feasible");
    let value = half_fill_fpr(&q, &ks).unwrap();
    assert!(value <= best + eps / 2.0 * 0.5f64.powi(k_max as i32) + 1e-12 * sq.max(1.0), "{value} vs {best}");

    // The scheme in filters and an index.
    let Ok(params) = BloomParams::new(u64::from(input.m % 1024).max(1), 3) else {
        return;
    };
    let keys: Vec<[u8; 1]> = (0..ks.len() as u8).map(|i| [i]).collect();
    let scheme = PopularityScheme::from_assignment(params, &keys, &ks).unwrap();
    let mut filters = vec![BloomFilter::new(params).unwrap(); 4];
    let mut index = SlicedIndex::new(params);
    for id in 0..4u64 {
        index.insert_filter(id, &filters[id as usize]).unwrap();
    }
    let mut model = vec![Vec::new(); 4];
    let mut out = Vec::new();
    for op in input.ops.iter().take(100) {
        match *op {
            Op::Insert { key, id } => {
                let id = usize::from(id % 4);
                scheme.insert(&mut filters[id], &[key]).unwrap();
                scheme.insert_into_index(&mut index, id as u64, &[key]).unwrap();
                model[id].push(key);
            }
            Op::Query { key } => {
                scheme.query_index(&index, &[key], &mut out).unwrap();
                out.sort_unstable();
                let want: Vec<u64> =
                    (0..4u64).filter(|&id| scheme.contains(&filters[id as usize], &[key]).unwrap()).collect();
                assert_eq!(out, want);
                for (id, keys) in model.iter().enumerate() {
                    if keys.contains(&key) {
                        assert!(want.contains(&(id as u64)), "false negative");
                    }
                }
            }
        }
    }
    index.validate().unwrap();
});

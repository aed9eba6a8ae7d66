//! Fuzzing the stable and importance-aware Bloom filters: arbitrary
//! parameters (bad ones must be typed errors, matching a model of the rules)
//! and arbitrary operation sequences applied to one filter of every policy
//! sharing a seed. After every step: cells stay in `0..=M` (`validate`), a
//! just-inserted key is present, the SBF dominates IBF-2C and IBF-MC cell by
//! cell (same decrement draws, lower insert values), the BF covers the SBF,
//! and with P = 0 no policy ever misses a key of the exact model set.
#![no_main]

use std::collections::HashSet;

use arbitrary::Arbitrary;
use bloomslice::Error;
use bloomslice_papers::{Policy, StableBloomFilter, StableError, StableParams};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    Observe { key: u16, importance: u8 },
    Insert { key: u16, importance: u8 },
    Query { key: u16 },
    Clear,
}

#[derive(Arbitrary, Debug)]
struct Input {
    cells: u16,
    hashes: u8,
    decrements: u16,
    max_value: u16,
    max_importance: u8,
    seed: u64,
    ops: Vec<Op>,
}

/// The parameter rules, written out independently of the library.
fn expected_error(input: &Input) -> Option<StableError> {
    let (m, k, p, max) =
        (u64::from(input.cells), u32::from(input.hashes), u32::from(input.decrements), u32::from(input.max_value));
    if max == 0 {
        Some(StableError::ZeroMax)
    } else if max > 255 {
        Some(StableError::MaxTooLarge { max })
    } else if k == 0 {
        Some(StableError::ZeroHashes)
    } else if m == 0 {
        Some(Error::ZeroBits.into())
    } else if k > 64 {
        Some(Error::TooManyHashes { k: u64::from(k), max: 64 }.into())
    } else if u64::from(p) > m {
        Some(StableError::DecrementsExceedCells { decrements: p, cells: m })
    } else if input.max_importance == 0 {
        Some(StableError::ZeroMaxImportance)
    } else {
        None
    }
}

fuzz_target!(|input: Input| {
    let built = StableParams::new(
        u64::from(input.cells),
        u32::from(input.hashes),
        u32::from(input.decrements),
        u32::from(input.max_value),
    )
    .and_then(|p| p.with_max_importance(u32::from(input.max_importance)));
    let params = match (built, expected_error(&input)) {
        (Ok(params), None) => params,
        (Err(got), Some(want)) => {
            assert_eq!(got, want);
            return;
        }
        (got, want) => panic!("params {got:?}, expected error {want:?}"),
    };
    let mut filters: Vec<StableBloomFilter> =
        Policy::ALL.iter().map(|&policy| StableBloomFilter::new(params, policy, input.seed)).collect();
    let mut model: HashSet<u16> = HashSet::new();
    let exact = params.decrements() == 0;
    for op in input.ops.iter().take(256) {
        let mut answers = [false; 5];
        match *op {
            Op::Observe { key, importance } | Op::Insert { key, importance } => {
                let importance = u32::from(importance);
                let in_range = (1..=params.max_importance()).contains(&importance);
                let observe = matches!(op, Op::Observe { .. });
                for (filter, answer) in filters.iter_mut().zip(&mut answers) {
                    let before = filter.cells().to_vec();
                    let result = if observe {
                        filter.observe(&key.to_le_bytes(), importance)
                    } else {
                        filter.insert(&key.to_le_bytes(), importance).map(|()| false)
                    };
                    match result {
                        Ok(dup) => {
                            assert!(in_range);
                            *answer = dup;
                            assert!(filter.contains(&key.to_le_bytes()), "fresh key missing");
                        }
                        Err(e) => {
                            assert!(!in_range);
                            assert_eq!(
                                e,
                                StableError::ImportanceOutOfRange { importance, max: params.max_importance() }
                            );
                            assert_eq!(filter.cells(), &before[..], "error changed the filter");
                        }
                    }
                }
                if in_range {
                    let seen = !model.insert(key);
                    if exact && observe && seen {
                        assert!(answers.iter().all(|&a| a), "false negative with P = 0");
                    }
                }
            }
            Op::Query { key } => {
                for (filter, answer) in filters.iter().zip(&mut answers) {
                    *answer = filter.contains(&key.to_le_bytes());
                }
                if exact && model.contains(&key) {
                    assert!(answers.iter().all(|&a| a), "false negative with P = 0");
                }
            }
            Op::Clear => {
                filters.iter_mut().for_each(StableBloomFilter::clear);
                model.clear();
            }
        }
        // Policy::ALL order: BF, SBF, IBF-2C, IBF-MC, IBF-H.
        if answers[1] {
            assert!(answers[0], "SBF positive where BF is not");
        }
        if answers[2] || answers[3] {
            assert!(answers[1], "IBF-2C/MC positive where SBF is not");
        }
        for filter in &filters {
            filter.validate().unwrap();
        }
        let (bf, sbf, two, mc) = (filters[0].cells(), filters[1].cells(), filters[2].cells(), filters[3].cells());
        for i in 0..sbf.len() {
            assert!(sbf[i] >= two[i] && sbf[i] >= mc[i], "SBF does not dominate at cell {i}");
            assert!(sbf[i] == 0 || bf[i] == 1, "BF does not cover SBF at cell {i}");
        }
    }
});

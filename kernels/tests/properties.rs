//! Property tests, one module per backend (called directly, not through
//! `Kernels::detect`): equality with the scalar reference on arbitrary
//! inputs, and algebraic laws checked against naive bit-by-bit models. The
//! scalar table is included so the laws also pin down the reference.

#[macro_use]
mod common;

use bloomslice_kernels::arch::all;
use bloomslice_kernels::{Kernels, LookAhead};
use proptest::collection::vec;
use proptest::prelude::*;

use common::word;

/// Two word vectors of the same length.
fn pair() -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
    (0usize..200).prop_flat_map(|n| (vec(word(), n), vec(word(), n)))
}

/// Up to eight rows of at least `n` words, and `n`.
fn rows() -> impl Strategy<Value = (Vec<Vec<u64>>, usize)> {
    (0usize..120, 0usize..=8).prop_flat_map(|(n, k)| {
        (vec((vec(word(), n), vec(word(), 0..3)), k), Just(n)).prop_map(|(rows, n)| {
            let rows = rows.into_iter().map(|(mut r, extra)| {
                r.extend(extra);
                r
            });
            (rows.collect(), n)
        })
    })
}

/// Naive: bit `i` of `words`.
fn bit(words: &[u64], i: usize) -> bool {
    (words[i / 64] >> (i % 64)) & 1 == 1
}

fn naive_popcount(words: &[u64]) -> u64 {
    (0..words.len() * 64).filter(|&i| bit(words, i)).count() as u64
}

macro_rules! backend_properties {
    ($name:ident, $kernels:expr) => {
        mod $name {
            use super::*;

            fn kernels() -> Option<&'static Kernels> {
                common::backend_or_skip(stringify!($name), $kernels)
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(96))]

                #[test]
                fn matches_reference((a, b) in pair(), offset in 0u64..1 << 20) {
                    let Some(k) = kernels() else { return Ok(()) };
                    prop_assert_eq!(k.popcount(&a), all::popcount(&a));
                    prop_assert_eq!(k.and_popcount(&a, &b), all::and_popcount(&a, &b));
                    prop_assert_eq!(k.or_popcount(&a, &b), all::or_popcount(&a, &b));
                    prop_assert_eq!(k.xor_popcount(&a, &b), all::xor_popcount(&a, &b));
                    let (mut got, mut want) = (a.clone(), a.clone());
                    prop_assert_eq!(k.or_into(&mut got, &b), all::or_into(&mut want, &b));
                    prop_assert_eq!(got, want);
                    let table: Vec<u64> = (0..64 * a.len() as u64).map(|c| offset + c).collect();
                    let (mut got, mut want) = (vec![9], vec![9]);
                    k.append_mapped_bits(&a, &b, &table, &mut got);
                    all::append_mapped_bits(&a, &b, &table, &mut want);
                    prop_assert_eq!(got, want);
                }

                #[test]
                fn and_runs_equals_and_rows_on_the_same_runs((rows, n) in rows(), rev in any::<bool>()) {
                    let Some(k) = kernels() else { return Ok(()) };
                    let stride = rows.iter().map(Vec::len).max().unwrap_or(0).max(n);
                    let mut flat = vec![0u64; stride * rows.len().max(1)];
                    for (r, row) in rows.iter().enumerate() {
                        flat[r * stride..r * stride + row.len()].copy_from_slice(row);
                    }
                    let mut positions: Vec<u32> = (0..rows.len() as u32).collect();
                    if rev {
                        positions.reverse();
                    }
                    let refs: Vec<&[u64]> = positions.iter().map(|&p| &flat[p as usize * stride..][..n]).collect();
                    let (mut got, mut want) = (vec![3; n], vec![3; n]);
                    let got_any = k.and_runs(&flat, stride, &positions, &mut got);
                    let want_any = all::and_rows(&refs, &mut want);
                    prop_assert_eq!((got_any, &got), (want_any, &want));
                }

                #[test]
                fn and_rows_matches_reference_and_model((rows, n) in rows()) {
                    let Some(k) = kernels() else { return Ok(()) };
                    let refs: Vec<&[u64]> = rows.iter().map(Vec::as_slice).collect();
                    let (mut got, mut want) = (vec![3; n], vec![3; n]);
                    let got_any = k.and_rows(&refs, &mut got);
                    let want_any = all::and_rows(&refs, &mut want);
                    prop_assert_eq!((got_any, &got), (want_any, &want));
                    // The model: the AND of the first `n` words of every row.
                    let model: Vec<u64> = (0..n)
                        .map(|i| rows.iter().fold(!0, |acc, r| acc & r[i]))
                        .collect();
                    prop_assert_eq!(&got, &model);
                    prop_assert_eq!(got_any, model.iter().any(|&w| w != 0));
                }

                #[test]
                fn popcount_laws((a, b) in pair()) {
                    let Some(k) = kernels() else { return Ok(()) };
                    let (pa, pb) = (k.popcount(&a), k.popcount(&b));
                    let and = k.and_popcount(&a, &b);
                    let or = k.or_popcount(&a, &b);
                    prop_assert_eq!(pa, naive_popcount(&a));
                    prop_assert_eq!(or + and, pa + pb);
                    prop_assert_eq!(k.xor_popcount(&a, &b), or - and);
                    prop_assert_eq!(k.and_popcount(&a, &a), pa);
                    prop_assert_eq!(k.xor_popcount(&a, &a), 0);
                }

                #[test]
                fn or_into_counts_new_bits((a, b) in pair()) {
                    let Some(k) = kernels() else { return Ok(()) };
                    let before = k.popcount(&a);
                    let mut dst = a.clone();
                    let new_bits = k.or_into(&mut dst, &b);
                    prop_assert_eq!(new_bits, k.popcount(&dst) - before);
                    let model: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x | y).collect();
                    prop_assert_eq!(dst, model);
                }

                #[test]
                fn append_mapped_bits_yields_the_masked_set_bits_through_the_table(
                    (a, b) in pair(),
                    offset in 0u64..1 << 40,
                    spare in 0usize..70,
                ) {
                    let Some(k) = kernels() else { return Ok(()) };
                    // Reversed so that a wrong index cannot look right; longer
                    // than needed by `spare` entries, which must never appear.
                    let n = 64 * a.len() + spare;
                    let table: Vec<u64> = (0..n as u64).rev().map(|c| offset + c).collect();
                    let mut got = vec![u64::MAX];
                    k.append_mapped_bits(&a, &b, &table, &mut got);
                    let model: Vec<u64> = std::iter::once(u64::MAX)
                        .chain((0..a.len() * 64).filter(|&i| bit(&a, i) && bit(&b, i)).map(|i| table[i]))
                        .collect();
                    prop_assert_eq!(got, model);
                }

                #[test]
                fn count_runs_counts_each_column(
                    (rows, n) in rows(),
                    keys in (0usize..4).prop_flat_map(|per_key| vec(vec(0u32..8, per_key), 0..40)),
                    group in 1usize..12,
                    n_planes in 1usize..8,
                    live_bits in any::<u64>(),
                ) {
                    // Q keys, each ANDing up to three of the rows; the model
                    // counts, per column, the keys whose rows all hold it.
                    let Some(k) = kernels() else { return Ok(()) };
                    let stride = rows.iter().map(Vec::len).max().unwrap_or(0).max(n).max(1);
                    let mut flat = vec![0u64; stride * rows.len().max(1)];
                    for (r, row) in rows.iter().enumerate() {
                        flat[r * stride..r * stride + row.len()].copy_from_slice(row);
                    }
                    let keys: Vec<Vec<u32>> = keys
                        .into_iter()
                        .map(|key| key.into_iter().map(|p| p % rows.len().max(1) as u32).collect())
                        .collect();
                    let live = vec![live_bits; n.div_ceil(8).div_ceil(64).max(1)];
                    let mut got = vec![0u64; n * n_planes];
                    let mut want = got.clone();
                    // The backend adds `group` keys per call, the reference one.
                    let (mut got_any, mut want_any) = (false, false);
                    for (i, keys) in keys.chunks(group).enumerate() {
                        // The look-ahead is a hint: any positions (here the
                        // next keys', and one past every row) into either
                        // cache level leave the counts alone.
                        let ahead: Vec<u32> = keys.iter().flatten().map(|&p| p + 1).chain([u32::MAX]).collect();
                        let into = [LookAhead::L1, LookAhead::L2][i % 2];
                        let flat_keys = keys.concat();
                        got_any |= k.count_runs(&flat, stride, &flat_keys, keys.len(), n, &live, &mut got, &ahead, into);
                        for key in keys {
                            want_any |= all::count_runs(&flat, stride, key, 1, n, &live, &mut want, &[], into);
                        }
                    }
                    prop_assert_eq!(got_any, want_any);
                    prop_assert_eq!(&got, &want);
                    for c in 0..n * 64 {
                        let chunk = c / 512;
                        let hits = keys
                            .iter()
                            .filter(|key| key.iter().all(|&p| bit(&flat[p as usize * stride..], c)))
                            .count() as u64;
                        let expected = if (live[chunk / 64] >> (chunk % 64)) & 1 == 1 { hits % (1 << n_planes) } else { 0 };
                        let counter = (0..n_planes).map(|j| u64::from(bit(&got[j * n..], c)) << j).sum::<u64>();
                        prop_assert_eq!(counter, expected, "column {}", c);
                    }
                    for threshold in [0, 1, 2, 3, 5, 1 << n_planes, u32::MAX] {
                        let (mut ge, mut ge_ref) = (vec![7u64; n], vec![9u64; n]);
                        let any = k.count_at_least(&got, threshold, &mut ge);
                        prop_assert_eq!(any, all::count_at_least(&got, threshold, &mut ge_ref));
                        prop_assert_eq!(&ge, &ge_ref);
                        for c in 0..n * 64 {
                            let counter = (0..n_planes).map(|j| u64::from(bit(&got[j * n..], c)) << j).sum::<u64>();
                            prop_assert_eq!(bit(&ge, c), counter >= u64::from(threshold), "column {} threshold {}", c, threshold);
                        }
                        prop_assert_eq!(any, ge.iter().any(|&w| w != 0));
                    }
                }
            }
        }
    };
}

backend_properties!(scalar, Some(Kernels::scalar()));
for_each_simd_backend!(backend_properties);

//! Property tests, one module per backend (called directly, not through
//! `Kernels::detect`): equality with the scalar reference on arbitrary
//! inputs, and algebraic laws checked against naive bit-by-bit models. The
//! scalar table is included so the laws also pin down the reference.

use bloomslice_kernels::Kernels;
use bloomslice_kernels::arch::all;
use proptest::collection::vec;
use proptest::prelude::*;

/// Words biased towards the interesting cases: zero, all ones, one bit.
fn word() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => any::<u64>(),
        3 => Just(0u64),
        1 => Just(!0u64),
        2 => (0..64u32).prop_map(|b| 1u64 << b),
    ]
}

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
                let k = $kernels;
                if k.is_none() {
                    let name = stringify!($name);
                    assert!(
                        !bloomslice_kernels::dispatch::backend_required(name),
                        "{name} is required by BLOOMSLICE_REQUIRE_BACKENDS but not available on this CPU"
                    );
                    println!("skipped: {name} is not available on this CPU");
                }
                k
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(96))]

                #[test]
                fn matches_reference((a, b) in pair(), offset in 0u32..1 << 20) {
                    let Some(k) = kernels() else { return Ok(()) };
                    prop_assert_eq!((k.popcount)(&a), all::popcount(&a));
                    prop_assert_eq!((k.and_popcount)(&a, &b), all::and_popcount(&a, &b));
                    prop_assert_eq!((k.or_popcount)(&a, &b), all::or_popcount(&a, &b));
                    prop_assert_eq!((k.xor_popcount)(&a, &b), all::xor_popcount(&a, &b));
                    let (mut got, mut want) = (a.clone(), a.clone());
                    prop_assert_eq!((k.or_into)(&mut got, &b), all::or_into(&mut want, &b));
                    prop_assert_eq!(got, want);
                    let (mut got, mut want) = (vec![9], vec![9]);
                    (k.append_set_bits)(&a, offset, &mut got);
                    all::append_set_bits(&a, offset, &mut want);
                    prop_assert_eq!(got, want);
                    let init: Vec<u16> = b.iter().flat_map(|w| w.to_le_bytes()).map(|x| {
                        if x > 200 { u16::MAX } else { u16::from(x) }
                    }).collect();
                    let counters = init.len().min(a.len() * 64);
                    let (mut got, mut want) = (init.clone(), init);
                    (k.accumulate_bits)(&a, &mut got[..counters]);
                    all::accumulate_bits(&a, &mut want[..counters]);
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
                    let got_any = (k.and_runs)(&flat, stride, &positions, &mut got);
                    let want_any = all::and_rows(&refs, &mut want);
                    prop_assert_eq!((got_any, &got), (want_any, &want));
                }

                #[test]
                fn and_rows_matches_reference_and_model((rows, n) in rows()) {
                    let Some(k) = kernels() else { return Ok(()) };
                    let refs: Vec<&[u64]> = rows.iter().map(Vec::as_slice).collect();
                    let (mut got, mut want) = (vec![3; n], vec![3; n]);
                    let got_any = (k.and_rows)(&refs, &mut got);
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
                    let (pa, pb) = ((k.popcount)(&a), (k.popcount)(&b));
                    let and = (k.and_popcount)(&a, &b);
                    let or = (k.or_popcount)(&a, &b);
                    prop_assert_eq!(pa, naive_popcount(&a));
                    prop_assert_eq!(or + and, pa + pb);
                    prop_assert_eq!((k.xor_popcount)(&a, &b), or - and);
                    prop_assert_eq!((k.and_popcount)(&a, &a), pa);
                    prop_assert_eq!((k.xor_popcount)(&a, &a), 0);
                }

                #[test]
                fn or_into_counts_new_bits((a, b) in pair()) {
                    let Some(k) = kernels() else { return Ok(()) };
                    let before = (k.popcount)(&a);
                    let mut dst = a.clone();
                    let new_bits = (k.or_into)(&mut dst, &b);
                    prop_assert_eq!(new_bits, (k.popcount)(&dst) - before);
                    let model: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x | y).collect();
                    prop_assert_eq!(dst, model);
                }

                #[test]
                fn append_set_bits_yields_the_set_bits((a, _) in pair(), offset in 0u32..1 << 24) {
                    let Some(k) = kernels() else { return Ok(()) };
                    let mut got = vec![u32::MAX];
                    (k.append_set_bits)(&a, offset, &mut got);
                    let model: Vec<u32> = std::iter::once(u32::MAX)
                        .chain((0..a.len() * 64).filter(|&i| bit(&a, i)).map(|i| offset + i as u32))
                        .collect();
                    prop_assert_eq!(got, model);
                }

                #[test]
                fn accumulate_bits_adds_each_bit((a, _) in pair(), start in any::<u16>()) {
                    let Some(k) = kernels() else { return Ok(()) };
                    let init: Vec<u16> =
                        (0..a.len() * 64).map(|i| start.wrapping_add((i as u16).wrapping_mul(97))).collect();
                    let mut counters = init.clone();
                    (k.accumulate_bits)(&a, &mut counters);
                    for (i, (&before, &after)) in init.iter().zip(&counters).enumerate() {
                        prop_assert_eq!(after, before.saturating_add(u16::from(bit(&a, i))));
                    }
                }
            }
        }
    };
}

backend_properties!(scalar, Some(Kernels::scalar()));
backend_properties!(portable, Some(bloomslice_kernels::arch::portable::kernels()));
#[cfg(target_arch = "x86_64")]
backend_properties!(avx2, bloomslice_kernels::arch::x86_64::avx2::kernels());
#[cfg(target_arch = "x86_64")]
backend_properties!(avx512, bloomslice_kernels::arch::x86_64::avx512::kernels());

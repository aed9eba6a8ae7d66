//! The access pattern of a batched sliced query at N = 10 000 (`k` = 7 random
//! row runs of 1 280 bytes per key, rows about half ones), stripped of the
//! engine, to choose how runs are ANDed, prefetched and turned into column
//! numbers. Prints ns per key, best of 3 passes, for:
//!
//! - AND kernels: a test for an all-zero chunk before every run (the kernel
//!   before this change), before every pair of runs (`vpternlogq`), row at
//!   a time into an L1-resident accumulator, and two keys interleaved;
//! - prefetch: first lines into L1 `d` keys ahead (before), whole runs into
//!   L1, whole runs into L2 (`prefetcht1`) far ahead plus first lines near;
//! - extraction of the matching columns: popcount only (a floor), a branch
//!   per word and per bit, a bitmap of non-zero words with four
//!   unconditional writes of column numbers per word (then mapped to owners
//!   in a second pass), `vpcompressw` (VBMI2), and the bitmap writing the
//!   owners directly with 1 to 4 unconditional writes per word (the engine
//!   now: 2, `append_mapped_bits`);
//! - the far prefetch issued whole before the AND, or split: some runs
//!   before the AND, the rest between the AND and the extraction.
//!
//! `SHARDS` (default 1) lays out that many tables and walks (key, shard)
//! items as a batch over a wide index does: `row_variants 224 7` is `full`
//! N = 100 000 (7 shards of 1 792-byte runs, 1.2 GiB).
//!
//! Every variant's total of set bits is checked against the first one's.
//! Needs AVX-512 F/BW/VPOPCNTDQ (and VBMI2 for the compress row); prints
//! why and exits otherwise. Run:
//!
//! ```sh
//! cargo run --release -p bloomslice-bench --example row_variants [-- WORDS_PER_ROW [SHARDS]]
//! ```
#![allow(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks, missing_docs)]

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;
    use std::time::Instant;

    use bloomslice::storage::Words;
    use bloomslice_bench::args::positional;
    use bloomslice_bench::workload::xorshift64;

    const K: usize = 7;
    const KEYS: usize = 200_000;

    #[derive(Clone, Copy, PartialEq)]
    pub enum Prefetch {
        FirstLineL1 {
            d: usize,
        },
        WholeL1 {
            d: usize,
        },
        WholeL2 {
            far: usize,
            near: usize,
        },
        /// `WholeL2`, the far part split: the first `first` runs before
        /// the AND, the rest between the AND and the extraction.
        SplitL2 {
            far: usize,
            near: usize,
            first: usize,
        },
    }

    #[derive(Clone, Copy, PartialEq)]
    pub enum Extract {
        Popcount,
        BranchPerWord,
        Bitmap4,
        CompressVbmi2,
        /// `Bitmap4` writing `owners[column]` straight into the output
        /// (no column buffer, no second pass), `UNROLL` unconditional
        /// writes per non-zero word.
        Fused {
            unroll: usize,
        },
    }

    type Kernel = unsafe fn(*const u64, usize, &[u32], &mut [u64]);

    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn exit_per_run(rows: *const u64, w: usize, pos: &[u32], acc: &mut [u64]) {
        let mut c = 0;
        while c < w {
            let mut a = _mm512_loadu_si512(rows.add(pos[0] as usize * w + c).cast());
            for &p in &pos[1..] {
                if _mm512_test_epi64_mask(a, a) == 0 {
                    break;
                }
                a = _mm512_and_si512(a, _mm512_loadu_si512(rows.add(p as usize * w + c).cast()));
            }
            _mm512_storeu_si512(acc.as_mut_ptr().add(c).cast(), a);
            c += 8;
        }
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn pairs_chunk(r: &[*const u64; K], c: usize) -> __m512i {
        let l = |i: usize| _mm512_loadu_si512(r[i].add(c).cast());
        let mut a = _mm512_and_si512(l(0), l(1));
        let mut i = 2;
        while i + 1 < K {
            if _mm512_test_epi64_mask(a, a) == 0 {
                return a;
            }
            a = _mm512_ternarylogic_epi64::<0x80>(a, l(i), l(i + 1));
            i += 2;
        }
        if i < K {
            a = _mm512_and_si512(a, l(i));
        }
        a
    }

    fn runs(rows: *const u64, w: usize, pos: &[u32]) -> [*const u64; K] {
        core::array::from_fn(|i| rows.wrapping_add(pos[i] as usize * w))
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn pairs(rows: *const u64, w: usize, pos: &[u32], acc: &mut [u64]) {
        let r = runs(rows, w, pos);
        let mut c = 0;
        while c < w {
            _mm512_storeu_si512(acc.as_mut_ptr().add(c).cast(), pairs_chunk(&r, c));
            c += 8;
        }
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn row_at_a_time(rows: *const u64, w: usize, pos: &[u32], acc: &mut [u64]) {
        let r = runs(rows, w, pos);
        let mut c = 0;
        while c < w {
            let a = _mm512_and_si512(_mm512_loadu_si512(r[0].add(c).cast()), _mm512_loadu_si512(r[1].add(c).cast()));
            _mm512_storeu_si512(acc.as_mut_ptr().add(c).cast(), a);
            c += 8;
        }
        for run in &r[2..] {
            let mut c = 0;
            while c < w {
                let a = _mm512_loadu_si512(acc.as_ptr().add(c).cast());
                let a = _mm512_and_si512(a, _mm512_loadu_si512(run.add(c).cast()));
                _mm512_storeu_si512(acc.as_mut_ptr().add(c).cast(), a);
                c += 8;
            }
        }
    }

    /// Two keys per call: `pos` holds `2 K` positions, `acc` two results.
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn two_keys(rows: *const u64, w: usize, pos: &[u32], acc: &mut [u64]) {
        let (ra, rb) = (runs(rows, w, &pos[..K]), runs(rows, w, &pos[K..]));
        let mut c = 0;
        while c < w {
            let a = pairs_chunk(&ra, c);
            let b = pairs_chunk(&rb, c);
            _mm512_storeu_si512(acc.as_mut_ptr().add(c).cast(), a);
            _mm512_storeu_si512(acc.as_mut_ptr().add(w + c).cast(), b);
            c += 8;
        }
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn prefetch(rows: *const u64, w: usize, pos: &[u32], lines: usize, l2: bool) {
        for &p in pos {
            let run = rows.add(p as usize * w);
            let mut l = 0;
            while l < lines * 8 {
                if l2 {
                    _mm_prefetch::<_MM_HINT_T1>(run.add(l).cast());
                } else {
                    _mm_prefetch::<_MM_HINT_T0>(run.add(l).cast());
                }
                l += 8;
            }
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,popcnt,bmi1")]
    unsafe fn extract(mode: Extract, acc: &[u64], cols: &mut [u16], owners: &[u64], out: &mut Vec<u64>) -> u64 {
        match mode {
            Extract::Popcount => {
                let mut s = _mm512_setzero_si512();
                let mut c = 0;
                while c < acc.len() {
                    s = _mm512_add_epi64(s, _mm512_popcnt_epi64(_mm512_loadu_si512(acc.as_ptr().add(c).cast())));
                    c += 8;
                }
                _mm512_reduce_add_epi64(s) as u64
            }
            Extract::BranchPerWord => {
                out.clear();
                for (j, &word) in acc.iter().enumerate() {
                    if word == 0 {
                        continue;
                    }
                    let mut x = word;
                    while x != 0 {
                        out.push(owners[j * 64 + x.trailing_zeros() as usize]);
                        x &= x - 1;
                    }
                }
                out.len() as u64
            }
            Extract::Bitmap4 | Extract::CompressVbmi2 => {
                let mut bitmap = [0u64; 8];
                let mut c = 0;
                while c < acc.len() {
                    let v = _mm512_loadu_si512(acc.as_ptr().add(c).cast());
                    bitmap[c / 64] |= u64::from(_mm512_test_epi64_mask(v, v)) << (c % 64);
                    c += 8;
                }
                let cp = cols.as_mut_ptr();
                let mut n = 0usize;
                each_nonzero_word(&bitmap, acc, |j, x| {
                    if mode == Extract::Bitmap4 {
                        let mut y = x;
                        let base = (j * 64) as u16;
                        for t in 0..4 {
                            *cp.add(n + t) = base.wrapping_add(y.trailing_zeros() as u16);
                            y &= y.wrapping_sub(1);
                        }
                        let mut t = 4;
                        while y != 0 {
                            *cp.add(n + t) = base + y.trailing_zeros() as u16;
                            y &= y - 1;
                            t += 1;
                        }
                        n += x.count_ones() as usize;
                    } else {
                        n += compress_word(x, j, cp.add(n));
                    }
                });
                out.clear();
                out.extend(cols[..n].iter().map(|&c| owners[c as usize]));
                n as u64
            }
            Extract::Fused { unroll } => {
                let mut bitmap = [0u64; 8];
                let mut hits = 0u64;
                let mut s = _mm512_setzero_si512();
                let mut c = 0;
                while c < acc.len() {
                    let v = _mm512_loadu_si512(acc.as_ptr().add(c).cast());
                    bitmap[c / 64] |= u64::from(_mm512_test_epi64_mask(v, v)) << (c % 64);
                    s = _mm512_add_epi64(s, _mm512_popcnt_epi64(v));
                    c += 8;
                }
                hits += _mm512_reduce_add_epi64(s) as u64;
                out.clear();
                out.reserve(hits as usize + 4);
                let dst = out.as_mut_ptr();
                let own = owners.as_ptr();
                let mut n = 0usize;
                each_nonzero_word(&bitmap, acc, |j, x| {
                    let mut y = x;
                    let base = j * 64;
                    match unroll {
                        1 => fused_writes::<1>(&mut y, base, own, dst.add(n)),
                        2 => fused_writes::<2>(&mut y, base, own, dst.add(n)),
                        3 => fused_writes::<3>(&mut y, base, own, dst.add(n)),
                        _ => fused_writes::<4>(&mut y, base, own, dst.add(n)),
                    }
                    let mut t = unroll;
                    while y != 0 {
                        *dst.add(n + t) = *own.add(base + y.trailing_zeros() as usize);
                        y &= y - 1;
                        t += 1;
                    }
                    n += x.count_ones() as usize;
                });
                out.set_len(n);
                n as u64
            }
        }
    }

    /// Calls `f(j, words[j])` for every word `j` whose bit is set in
    /// `bitmap` (bit `j % 64` of `bitmap[j / 64]`), in order.
    #[inline(always)]
    fn each_nonzero_word(bitmap: &[u64; 8], words: &[u64], mut f: impl FnMut(usize, u64)) {
        for (b, &bits) in bitmap.iter().enumerate().take(words.len().div_ceil(64)) {
            let mut m = bits;
            while m != 0 {
                let j = b * 64 + m.trailing_zeros() as usize;
                m &= m - 1;
                f(j, words[j]);
            }
        }
    }

    /// `U` unconditional writes of `owners[base + lowest bit of y]`.
    #[inline(always)]
    unsafe fn fused_writes<const U: usize>(y: &mut u64, base: usize, own: *const u64, dst: *mut u64) {
        for t in 0..U {
            *dst.add(t) = *own.add(base + (y.trailing_zeros() as usize & 63));
            *y &= y.wrapping_sub(1);
        }
    }

    /// The column numbers of word `j`'s set bits through two `vpcompressw`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,popcnt")]
    unsafe fn compress_word(x: u64, j: usize, dst: *mut u16) -> usize {
        let iota = _mm512_set_epi16(
            31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
            3, 2, 1, 0,
        );
        let base = _mm512_add_epi16(iota, _mm512_set1_epi16((j * 64) as i16));
        let lo = _mm512_maskz_compress_epi16(x as u32, base);
        let hi = _mm512_maskz_compress_epi16((x >> 32) as u32, _mm512_add_epi16(base, _mm512_set1_epi16(32)));
        _mm512_storeu_si512(dst.cast(), lo);
        _mm512_storeu_si512(dst.add((x as u32).count_ones() as usize).cast(), hi);
        x.count_ones() as usize
    }

    pub struct Bench {
        rows: Words,
        w: usize,
        pos: Vec<u32>,
        owners: Vec<u64>,
        shards: usize,
    }

    impl Bench {
        /// `shards` tables of `m` rows of `w` words, walked like a batch
        /// over an index of that many shards: item `t` is key `t / shards`
        /// in shard `t % shards`, with the key's positions in each shard.
        pub fn new(w: usize, shards: usize) -> Bench {
            let m = 100_992;
            let mut rows = Words::zeroed(m * w * shards).expect("rows");
            let mut rng = 0x1234_5678_9abc_def1u64;
            for x in rows.iter_mut() {
                *x = xorshift64(&mut rng);
            }
            let mut key = [0u32; K];
            let mut pos = Vec::with_capacity(KEYS * K);
            for t in 0..KEYS {
                if t % shards == 0 {
                    key = core::array::from_fn(|_| (xorshift64(&mut rng) % m as u64) as u32);
                }
                pos.extend(key.iter().map(|&p| p + ((t % shards) * m) as u32));
            }
            let owners = (0..w as u64 * 64).map(|c| c * 3 + 1).collect();
            println!(
                "{w} words ({} bytes) per run, m = {m}, {shards} shard(s), index {} MiB, k = {K}",
                w * 8,
                (m * w * 8 * shards) >> 20
            );
            Bench { rows, w, pos, owners, shards }
        }

        /// ns per key (best of 3; a key is `shards` items) and the total of
        /// set bits found.
        pub unsafe fn run(&self, kernel: Kernel, keys_per_call: usize, pf: Prefetch, ex: Extract) -> (f64, u64) {
            let (w, rows) = (self.w, self.rows.as_ptr());
            let mut acc = vec![0u64; 2 * w + 8];
            let mut cols = vec![0u16; 2 * w * 64 + 64];
            let mut out = Vec::with_capacity(w * 64);
            let calls = KEYS / keys_per_call;
            let step = K * keys_per_call;
            let (mut best, mut total) = (f64::MAX, 0);
            for _ in 0..3 {
                total = 0;
                let t = Instant::now();
                for i in 0..calls {
                    let at = |d: usize| &self.pos[(i + d) * step..][..step];
                    match pf {
                        Prefetch::FirstLineL1 { d } if i + d < calls => prefetch(rows, w, at(d), 1, false),
                        Prefetch::WholeL1 { d } if i + d < calls => prefetch(rows, w, at(d), w / 8, false),
                        Prefetch::WholeL2 { far, near } => {
                            if i + far < calls {
                                prefetch(rows, w, at(far), w / 8, true);
                            }
                            if i + near < calls {
                                prefetch(rows, w, at(near), 1, false);
                            }
                        }
                        Prefetch::SplitL2 { far, near, first } => {
                            if i + far < calls {
                                prefetch(rows, w, &at(far)[..first], w / 8, true);
                            }
                            if i + near < calls {
                                prefetch(rows, w, at(near), 1, false);
                            }
                        }
                        _ => {}
                    }
                    kernel(rows, w, at(0), &mut acc);
                    if let Prefetch::SplitL2 { far, first, .. } = pf
                        && i + far < calls
                    {
                        prefetch(rows, w, &at(far)[first..], w / 8, true);
                    }
                    for r in 0..keys_per_call {
                        total += extract(ex, &acc[r * w..][..w], &mut cols, &self.owners, &mut out);
                    }
                }
                best = best.min(t.elapsed().as_nanos() as f64 * self.shards as f64 / KEYS as f64);
            }
            (best, total)
        }
    }

    pub fn main() {
        if !(is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vpopcntdq"))
        {
            println!("this CPU lacks AVX-512 F/BW/VPOPCNTDQ: nothing measured");
            return;
        }
        let vbmi2 = is_x86_feature_detected!("avx512vbmi2");
        let w = positional(
            "row_variants",
            1,
            160,
            |w| w > 0 && w.is_multiple_of(8) && w <= 512,
            "WORDS_PER_ROW, a multiple of 8 from 8 to 512",
        );
        let shards = positional("row_variants", 2, 1, |s| (1..=16).contains(&s), "SHARDS, from 1 to 16");
        let bench = Bench::new(w, shards);
        let mut expected = None;
        let mut check = |(ns, total): (f64, u64), name: &str| {
            assert_eq!(*expected.get_or_insert(total), total, "{name}: another answer");
            println!("{name:<72} {ns:>8.1} ns/key");
        };
        let pf_before = Prefetch::FirstLineL1 { d: 4 };
        let pf_after = Prefetch::WholeL2 { far: 4, near: 1 };
        let kernels: [(&str, Kernel, usize); 4] = [
            ("exit test per run (before)", exit_per_run, 1),
            ("exit test per pair, vpternlogq (after)", pairs, 1),
            ("row at a time into an L1 accumulator", row_at_a_time, 1),
            ("two keys interleaved, pairs", two_keys, 2),
        ];
        println!("-- AND kernels x prefetch (extraction: popcount only)");
        for (name, kernel, per_call) in kernels {
            for (pname, pf) in [
                ("first line L1 d=4", pf_before),
                ("whole run L1 d=4", Prefetch::WholeL1 { d: 4 }),
                ("whole run L2 far=4 + first line near=1", pf_after),
                ("whole run L2 far=8 + first line near=2", Prefetch::WholeL2 { far: 8, near: 2 }),
            ] {
                // SAFETY: AVX-512 F/BW/VPOPCNTDQ were detected above.
                check(unsafe { bench.run(kernel, per_call, pf, Extract::Popcount) }, &format!("{name}; {pname}"));
            }
        }
        println!("-- extraction of matching columns (pairs kernel, whole run L2 prefetch)");
        expected = None;
        let mut check = |(ns, total): (f64, u64), name: &str| {
            assert_eq!(*expected.get_or_insert(total), total, "{name}: another answer");
            println!("{name:<72} {ns:>8.1} ns/key");
        };
        for (name, ex) in [
            ("popcount only (floor)", Extract::Popcount),
            ("branch per word and bit (before)", Extract::BranchPerWord),
            ("bitmap of non-zero words, 4 writes per word, then owners", Extract::Bitmap4),
            ("bitmap, vpcompressw (VBMI2)", Extract::CompressVbmi2),
            ("bitmap, owners written directly, 4 writes per word", Extract::Fused { unroll: 4 }),
            ("bitmap, owners written directly, 2 writes per word (now)", Extract::Fused { unroll: 2 }),
            ("bitmap, owners written directly, 1 write per word", Extract::Fused { unroll: 1 }),
            ("bitmap, owners written directly, 3 writes per word", Extract::Fused { unroll: 3 }),
            ("bitmap, 4 writes per word, then owners, again", Extract::Bitmap4),
        ] {
            if ex == Extract::CompressVbmi2 && !vbmi2 {
                println!("{name:<72} (no VBMI2)");
                continue;
            }
            // SAFETY: AVX-512 F/BW/VPOPCNTDQ (and VBMI2 for its row) were
            // detected above.
            check(unsafe { bench.run(pairs, 1, pf_after, ex) }, name);
        }
        println!("-- far prefetch split around the AND (pairs kernel, owners written directly, 2 writes per word)");
        for first in [7, 3, 2, 0] {
            let pf = Prefetch::SplitL2 { far: 4, near: 1, first };
            let name = format!("first {first} of {K} runs before the AND, the rest before the extraction");
            // SAFETY: AVX-512 F/BW/VPOPCNTDQ were detected above.
            check(unsafe { bench.run(pairs, 1, pf, Extract::Fused { unroll: 2 }) }, &name);
        }
    }
}

fn main() {
    #[cfg(target_arch = "x86_64")]
    x86::main();
    #[cfg(not(target_arch = "x86_64"))]
    println!("x86-64 only: nothing measured");
}

//! `report.md` of `paper bloofi`: for each figure, the paper's observation,
//! ours with the numbers, and whether they agree; then the heuristic table
//! and the speed figures.

use std::fmt::Write as _;

use super::measure::Row;
use super::{BloofiArgs, Experiment, Grid, Outcome, ideal_cost};

/// One line of the comparison table.
struct Finding {
    figure: &'static str,
    paper: &'static str,
    ours: String,
    /// `None` when the grid cannot tell (a needed point is missing).
    agrees: Option<bool>,
}

fn row<'a>(rows: &'a [Row], label: &str, x: f64) -> Option<&'a Row> {
    rows.iter().find(|r| r.label == label && r.x == x)
}

fn xs(rows: &[Row], label: &str) -> Vec<f64> {
    let mut v: Vec<f64> = rows.iter().filter(|r| r.label == label).map(|r| r.x).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

fn val(rows: &[Row], label: &str, x: f64, f: impl Fn(&Row) -> Option<f64>) -> Option<f64> {
    row(rows, label, x).and_then(f)
}

fn series(rows: &[Row], label: &str, f: impl Fn(&Row) -> Option<f64>) -> Vec<(f64, f64)> {
    xs(rows, label).into_iter().filter_map(|x| Some((x, val(rows, label, x, &f)?))).collect()
}

/// The series of one measure of the maintenance operations: Bloofi's
/// insert and delete and Bloofi-AU's update, `f` giving the measure of a
/// row for the three in that order.
fn op_series(rows: &[Row], f: impl Fn(&Row) -> [Option<f64>; 3]) -> [Vec<(f64, f64)>; 3] {
    let labels = ["Bloofi", "Bloofi", "Bloofi-AU"];
    core::array::from_fn(|i| series(rows, labels[i], |r| f(r)[i]))
}

fn fmt_series(points: &[(f64, f64)]) -> String {
    points.iter().map(|(x, y)| format!("{}: {}", short(*x), short(*y))).collect::<Vec<_>>().join(", ")
}

/// A compact number: 3 significant digits, no exponent below 1e6.
fn short(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-4..1e6).contains(&a) {
        format!("{v:.2e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        let digits = (-a.log10()).floor() as usize + 3;
        format!("{v:.digits$}")
    }
}

/// Relative tolerance of every order comparison in the verdicts, applied
/// at every point of a series (no verdict is a majority vote): "A is lower
/// (better, cheaper, falls)" needs `A < B (1 - TOLERANCE)`; "A is at most
/// B" and "does not rise" need `A <= B (1 + TOLERANCE)`. The search and
/// maintenance costs are deterministic; 2% is about the spread between
/// runs of the noisier time figures' neighbouring points.
pub const TOLERANCE: f64 = 0.02;

/// Factor within which the paper's "similar" and "almost like" claims are
/// taken to hold (the paper gives no number).
pub const SIMILAR: f64 = 1.35;

/// The verdict rules as the report states them.
pub fn verdict_rules() -> String {
    format!(
        "Verdict rules, applied at every point of a series (never a majority of points): a claim that A is lower, better, cheaper or falls needs A < B x (1 - {t}); a claim that A is at most B, or does not rise, needs A <= B x (1 + {t}); a claim that A grows needs each point >= the previous x (1 - {t}) and the last above the first x (1 + {t}); \"similar\" or \"almost like\" needs a ratio within {SIMILAR}x; \"orders of magnitude\" needs at least 10x. Tolerance {t} = {}%.",
        TOLERANCE * 100.0,
        t = "tol",
    )
}

/// `a` is lower than `b` beyond the tolerance.
fn lower(a: f64, b: f64) -> bool {
    a < b * (1.0 - TOLERANCE)
}

/// `a` is at most `b` within the tolerance.
fn at_most(a: f64, b: f64) -> bool {
    a <= b * (1.0 + TOLERANCE)
}

/// `a` and `b` are within [`SIMILAR`] of each other.
fn similar(a: f64, b: f64) -> bool {
    a <= SIMILAR * b && b <= SIMILAR * a
}

/// Never falls by more than the tolerance from one point to the next, and
/// ends above its start.
fn increasing(points: &[(f64, f64)]) -> bool {
    points.windows(2).all(|w| w[1].1 >= w[0].1 * (1.0 - TOLERANCE))
        && ends(points).is_some_and(|(f, l)| lower(f.1, l.1))
}

/// Never rises by more than the tolerance from one point to the next, and
/// ends below its start.
fn decreasing(points: &[(f64, f64)]) -> bool {
    points.windows(2).all(|w| at_most(w[1].1, w[0].1)) && ends(points).is_some_and(|(f, l)| lower(l.1, f.1))
}

fn ends(points: &[(f64, f64)]) -> Option<((f64, f64), (f64, f64))> {
    Some((*points.first()?, *points.last()?))
}

fn findings_n(rows: &[Row], out: &mut Vec<Finding>) {
    let ns = xs(rows, "Bloofi");
    let Some(&max_n) = ns.last() else { return };
    let t = |l: &str, x: f64| val(rows, l, x, |r| Some(r.search.ms));
    let c = |l: &str, x: f64| val(rows, l, x, |r| r.search.cost);
    let ratio = t("Naive", max_n).zip(t("Bloofi", max_n)).map(|(a, b)| a / b);
    out.push(Finding {
        figure: "5a",
        paper: "Even at N = 100 000, Bloofi searches orders of magnitude faster than naive.",
        ours: format!(
            "At N = {}: naive {} ms, Bloofi {} ms per search, {}x.",
            short(max_n),
            t("Naive", max_n).map_or("-".into(), short),
            t("Bloofi", max_n).map_or("-".into(), short),
            ratio.map_or("-".into(), short)
        ),
        agrees: ratio.map(|r| r >= 10.0),
    });
    let flat_bloofi: Vec<(f64, f64)> = ns.iter().filter_map(|&x| Some((x, t("Flat", x)? / t("Bloofi", x)?))).collect();
    let cross = flat_bloofi.windows(2).find(|w| w[0].1 < 1.0 && w[1].1 >= 1.0).map(|w| w[1].0);
    out.push(Finding {
        figure: "5a",
        paper: "Flat-Bloofi is faster for few filters, Bloofi for many: the curves cross.",
        ours: format!(
            "Flat/Bloofi time ratio by N: {}; {}.",
            fmt_series(&flat_bloofi),
            match cross {
                Some(x) => format!("Bloofi overtakes Flat at N = {}", short(x)),
                None => "no crossing in this grid".into(),
            }
        ),
        agrees: (flat_bloofi.len() >= 2).then(|| {
            flat_bloofi.first().is_some_and(|f| lower(f.1, 1.0)) && flat_bloofi.last().is_some_and(|l| lower(1.0, l.1))
        }),
    });
    // `label`'s search cost over Bloofi's by N; agrees when `check` holds for every ratio.
    let vs_bloofi = |figure, paper, label: &str, check: fn(f64) -> bool| {
        let r: Vec<(f64, f64)> = ns.iter().filter_map(|&x| Some((x, c(label, x)? / c("Bloofi", x)?))).collect();
        Finding {
            figure,
            paper,
            ours: format!("{label} / Bloofi search cost by N: {}.", fmt_series(&r)),
            agrees: (!r.is_empty()).then(|| r.iter().all(|p| check(p.1))),
        }
    };
    out.push(vs_bloofi(
        "5a, 5b",
        "Bloofi-AU (built on half the data, then updated in place) performs almost like Bloofi.",
        "Bloofi-AU",
        |r| similar(r, 1.0),
    ));
    let cost = series(rows, "Bloofi", |r| r.search.cost);
    let ideal: Vec<(f64, f64)> = cost.iter().map(|&(x, _)| (x, ideal_cost(4, x as usize))).collect();
    out.push(Finding {
        figure: "5b",
        paper: "Search cost grows logarithmically while pfalse at the root is below 1 (N <= 1000), faster after; even at N = 100 000 two orders of magnitude below naive.",
        ours: format!(
            "Bloofi cost by N: {} (ideal 4 log4 N + 1: {}); naive checks N, {} times Bloofi's at the largest N.",
            fmt_series(&cost),
            fmt_series(&ideal),
            cost.last().map_or("-".into(), |&(x, y)| short(x / y))
        ),
        agrees: cost.last().map(|&(x, y)| {
            let near_ideal = cost.iter().filter(|p| p.0 <= 1000.0).all(|p| p.1 <= 2.0 * ideal_cost(4, p.0 as usize));
            near_ideal && (x < 10_000.0 || x / y >= 50.0)
        }),
    });
    out.push(vs_bloofi(
        "5b",
        "Bulk construction (global sort) searches better than iterative construction.",
        "Bloofi-Bulk",
        |r| lower(r, 1.0),
    ));
    let s = |l: &str| val(rows, l, max_n, |r| Some(r.storage_kb));
    let (naive, flat, bloofi, bulk_s) = (s("Naive"), s("Flat"), s("Bloofi"), s("Bloofi-Bulk"));
    out.push(Finding {
        figure: "5c",
        paper: "Storage grows linearly; naive lowest, Flat slightly above (rounding to 64), Bloofi below twice naive, bulk slightly above iterative.",
        ours: format!(
            "At N = {}: naive {} kB, Flat {} kB, Bloofi {} kB, Bloofi-Bulk {} kB, Sliced (memory held) {} kB.",
            short(max_n),
            naive.map_or("-".into(), short),
            flat.map_or("-".into(), short),
            bloofi.map_or("-".into(), short),
            bulk_s.map_or("-".into(), short),
            s("Sliced").map_or("-".into(), short)
        ),
        agrees: match (naive, flat, bloofi, bulk_s) {
            (Some(n), Some(f), Some(b), Some(bb)) => {
                Some(at_most(n, f) && similar(f, n) && at_most(b, 2.0 * n) && at_most(b, bb))
            }
            _ => None,
        },
    });
    let [ins, del, upd] = op_series(rows, |r| r.ops().map(|op| op.cost));
    let [ins_w, del_w, upd_w] = op_series(rows, |r| r.ops().map(|op| op.written));
    let ordered = |i: &[(f64, f64)], d: &[(f64, f64)], u: &[(f64, f64)]| {
        (!i.is_empty() && i.len() == d.len() && d.len() == u.len())
            .then(|| i.iter().zip(d).zip(u).all(|((i, d), u)| lower(d.1, i.1) && lower(u.1, d.1)))
    };
    out.push(Finding {
        figure: "6b",
        paper: "Maintenance bf-cost grows logarithmically with N; insert > delete > update (update is in place, no splits). The paper's count, as its text describes it, is the nodes whose filter an operation changes (\"only the values of the nodes from the leaf to the root need to be updated\"; a delete \"accesses fewer nodes\" as it does not search).",
        ours: format!(
            "Paper's basis, nodes whose filter value is written, by N: {}. Ours, every node read or written (siblings read to redistribute or merge, children re-ORed on the path, children compared on the insert's descent): insert {}; delete {}; update {}.",
            if ins_w.is_empty() {
                "not in this CSV (it predates the written-node count), so no verdict".to_owned()
            } else {
                format!("insert {}; delete {}; update {}", fmt_series(&ins_w), fmt_series(&del_w), fmt_series(&upd_w))
            },
            fmt_series(&ins),
            fmt_series(&del),
            fmt_series(&upd),
        ),
        // On the paper's basis when the CSV has it.
        agrees: if ins_w.is_empty() { None } else { ordered(&ins_w, &del_w, &upd_w) },
    });
    let mt = |l: &str, f: fn(&Row) -> Option<f64>| val(rows, l, max_n, f);
    let (bi, bd, bu) = (mt("Bloofi", |r| r.insert.ms), mt("Bloofi", |r| r.delete.ms), mt("Bloofi-AU", |r| r.update.ms));
    let (fi, fd, fu) = (mt("Flat", |r| r.insert.ms), mt("Flat", |r| r.delete.ms), mt("Flat-AU", |r| r.update.ms));
    let o = |v: Option<f64>| v.map_or("-".into(), short);
    out.push(Finding {
        figure: "6a",
        paper: "Bloofi: update cheapest in time; insert and delete grow with N. Flat: insert fast, delete slower (clears m words), update close to insert; Bloofi updates cheaper than Flat's, Flat inserts cheaper than Bloofi's.",
        ours: format!(
            "At N = {}, ms per operation: Bloofi insert {}, delete {}, update {}; Flat insert {}, delete {}, update {}.",
            short(max_n),
            o(bi),
            o(bd),
            o(bu),
            o(fi),
            o(fd),
            o(fu)
        ),
        agrees: match (bi, bd, bu, fi, fd, fu) {
            (Some(bi), Some(bd), Some(bu), Some(fi), Some(fd), Some(_)) => {
                Some(lower(bu, bi) && lower(bu, bd) && lower(fi, fd) && lower(fi, bi))
            }
            _ => None,
        },
    });
}

fn findings_order(rows: &[Row], out: &mut Vec<Finding>) {
    let cost = series(rows, "Bloofi", |r| r.search.cost);
    let best = cost.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
    out.push(Finding {
        figure: "7a, 7b",
        paper: "Search cost and time grow with d (cost ~ d log_d N); best at low order; close to the ideal of full trees.",
        ours: format!(
            "Bloofi cost by d: {}; lowest at d = {}.",
            fmt_series(&cost),
            best.map_or("-".into(), |b| short(b.0))
        ),
        agrees: best.zip(ends(&cost)).map(|(b, (first, last))| b.0 <= 4.0 && lower(first.1, last.1)),
    });
    let bulk = series(rows, "Bloofi-Bulk", |r| r.search.cost);
    let au = series(rows, "Bloofi-AU", |r| r.search.cost);
    out.push(Finding {
        figure: "7b",
        paper: "Bulk construction searches better than iterative; Bloofi-AU almost identical to Bloofi.",
        ours: format!("Bloofi-Bulk cost by d: {}; Bloofi-AU: {}.", fmt_series(&bulk), fmt_series(&au)),
        agrees: (!bulk.is_empty() && bulk.len() == cost.len() && au.len() == cost.len()).then(|| {
            let b = bulk.iter().zip(&cost).all(|(b, c)| lower(b.1, c.1));
            let a = au.iter().zip(&cost).all(|(a, c)| similar(a.1, c.1));
            b && a
        }),
    });
    let st = series(rows, "Bloofi", |r| Some(r.storage_kb));
    let naive = series(rows, "Naive", |r| Some(r.storage_kb));
    out.push(Finding {
        figure: "7c",
        paper: "Storage decreases with d, at most twice naive; bulk slightly above iterative.",
        ours: format!(
            "Bloofi storage (kB) by d: {}; naive {} kB.",
            fmt_series(&st),
            naive.first().map_or("-".into(), |p| short(p.1))
        ),
        agrees: naive.first().map(|n| decreasing(&st) && st.iter().all(|p| at_most(p.1, 2.0 * n.1))),
    });
    let [ins, del, upd] = op_series(rows, |r| r.ops().map(|op| op.cost));
    out.push(Finding {
        figure: "6c",
        paper: "Insert and delete bf-cost (O(d log_d N)) grow with d; update cost (O(log_d N)) falls with d.",
        ours: format!("By d: insert {}; delete {}; update {}.", fmt_series(&ins), fmt_series(&del), fmt_series(&upd)),
        agrees: ends(&ins)
            .zip(ends(&del))
            .zip(ends(&upd))
            .map(|((i, d), u)| lower(i.0.1, i.1.1) && lower(d.0.1, d.1.1) && lower(u.1.1, u.0.1)),
    });
}

fn findings_sizes(exp: Experiment, rows: &[Row], out: &mut Vec<Finding>) {
    let cost = series(rows, "Bloofi", |r| r.search.cost);
    let t = |l: &str| series(rows, l, |r| Some(r.search.ms));
    let (bt, nt, ft, st) = (t("Bloofi"), t("Naive"), t("Flat"), t("Sliced"));
    match exp {
        Experiment::Nexp => {
            out.push(Finding {
                figure: "8a",
                paper: "Bloofi's cost is always below naive's and falls to the ideal as m grows.",
                ours: format!(
                    "Bloofi cost by m: {} (ideal {}, naive 1000).",
                    fmt_series(&cost),
                    short(ideal_cost(4, 1000))
                ),
                agrees: ends(&cost)
                    .map(|(f, l)| decreasing(&cost) && similar(l.1, ideal_cost(4, 1000)) && at_most(f.1, 1000.0)),
            });
            out.push(Finding {
                figure: "8b",
                paper: "Naive time almost constant; Bloofi's falls as m grows; Flat's rises with m (locality) and beats Bloofi at small m.",
                ours: format!(
                    "Time (ms) by m: Bloofi {}; naive {}; Flat {}; Sliced {}.",
                    fmt_series(&bt),
                    fmt_series(&nt),
                    fmt_series(&ft),
                    fmt_series(&st)
                ),
                agrees: ends(&bt)
                    .zip(ends(&ft))
                    .map(|(b, f)| lower(b.1 .1, b.0 .1) && lower(f.0 .1, f.1 .1) && lower(f.0 .1, b.0 .1)),
            });
        }
        Experiment::P => {
            out.push(Finding {
                figure: "9a",
                paper: "Bloofi's cost slowly increases with p, staying close to the ideal.",
                ours: format!("Bloofi cost by p: {}.", fmt_series(&cost)),
                agrees: (!cost.is_empty()).then(|| increasing(&cost)),
            });
            out.push(Finding {
                figure: "9b",
                paper: "Search time of naive, Bloofi and Flat decreases as p grows (smaller filters, fewer hashes), Flat benefiting most.",
                ours: format!(
                    "Time (ms) by p: Bloofi {}; naive {}; Flat {}; Sliced {}.",
                    fmt_series(&bt),
                    fmt_series(&nt),
                    fmt_series(&ft),
                    fmt_series(&st)
                ),
                agrees: ends(&nt).zip(ends(&ft)).map(|(n, f)| lower(n.1 .1, n.0 .1) && lower(f.1 .1, f.0 .1)),
            });
        }
        _ => {
            out.push(Finding {
                figure: "9c",
                paper: "Flat is best and almost constant in n; Bloofi grows slightly while pfalse < 1 at the root, then degrades.",
                ours: format!(
                    "Time (ms) by n: Flat {}; Bloofi {}; naive {}; Sliced {}. Bloofi cost by n: {}.",
                    fmt_series(&ft),
                    fmt_series(&bt),
                    fmt_series(&nt),
                    fmt_series(&st),
                    fmt_series(&cost)
                ),
                // "Almost constant": Flat at the largest n within 3x of Flat
                // at the default n = 100 (n = 1 leaves rows nearly empty).
                agrees: ends(&bt).zip(ends(&ft)).zip(ft.iter().find(|p| p.0 == 100.0)).map(|((b, f), f100)| {
                    lower(b.0 .1, b.1 .1) && f.1 .1 < 3.0 * f100.1 && lower(f.1 .1, b.1 .1)
                }),
            });
        }
    }
}

fn findings_metric(rows: &[Row], out: &mut Vec<Finding>) {
    let h = series(rows, "Hamming", |r| r.search.cost);
    let c = series(rows, "Cosine", |r| r.search.cost);
    let j = series(rows, "Jaccard", |r| r.search.cost);
    out.push(Finding {
        figure: "8c, 10a",
        paper: "Search cost (and time) similar for all three metrics; Jaccard a little lower.",
        ours: format!("Cost by N: Hamming {}; Cosine {}; Jaccard {}.", fmt_series(&h), fmt_series(&c), fmt_series(&j)),
        agrees: (!h.is_empty() && h.len() == c.len() && c.len() == j.len()).then(|| {
            h.iter().zip(&c).zip(&j).all(|((h, c), j)| {
                let hi = h.1.max(c.1).max(j.1);
                let lo = h.1.min(c.1).min(j.1);
                similar(hi, lo)
            })
        }),
    });
}

fn findings_data(rows: &[Row], out: &mut Vec<Finding>) {
    let by_data = |f: fn(&Row) -> Option<f64>| [series(rows, "Bloofi-Nonrandom", f), series(rows, "Bloofi-Random", f)];
    let [a, b] = by_data(|r| r.search.cost);
    let [ta, tb] = by_data(|r| Some(r.search.ms));
    out.push(Finding {
        figure: "10b, 10c",
        paper: "Search cost and time similar for nonrandom and random data: Bloofi is robust to the distribution.",
        ours: format!(
            "Bloofi cost by N: nonrandom {}; random {}. Time (ms): nonrandom {}; random {}.",
            fmt_series(&a),
            fmt_series(&b),
            fmt_series(&ta),
            fmt_series(&tb)
        ),
        agrees: (!a.is_empty() && a.len() == b.len()).then(|| a.iter().zip(&b).all(|(x, y)| similar(x.1, y.1))),
    });
}

fn heuristic_table(rows: &[Row], s: &mut String, out: &mut Vec<Finding>) {
    let paper = |n: f64| match n as u64 {
        10_000 => Some((104.29, 110.17)),
        100_000 => Some((876.33, 974.92)),
        _ => None,
    };
    let _ = writeln!(s, "| N | paper cost, heuristic on | off | ours on | off | ours time on (ms) | off |");
    let _ = writeln!(s, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut all_better = true;
    let mut any = false;
    for x in xs(rows, "heuristic on: Bloofi") {
        let on = row(rows, "heuristic on: Bloofi", x);
        let off = row(rows, "heuristic off: Bloofi", x);
        let (pon, poff) = paper(x).map_or(("-".into(), "-".into()), |(a, b)| (format!("{a}"), format!("{b}")));
        let c = |r: Option<&Row>| r.and_then(|r| r.search.cost).map_or("-".into(), |v| format!("{v:.2}"));
        let t = |r: Option<&Row>| r.map_or("-".into(), |r| short(r.search.ms));
        let _ = writeln!(s, "| {} | {pon} | {poff} | {} | {} | {} | {} |", x, c(on), c(off), t(on), t(off));
        if let (Some(a), Some(b)) = (on.and_then(|r| r.search.cost), off.and_then(|r| r.search.cost)) {
            any = true;
            all_better &= lower(a, b);
        }
    }
    out.push(Finding {
        figure: "5.4 heuristic",
        paper: "With all-ones nodes, the heuristic lowers search cost: 104.29 vs 110.17 (N = 10 000), 876.33 vs 974.92 (N = 100 000).",
        ours: "See the table above.".into(),
        agrees: any.then_some(all_better),
    });
}

fn speed(rows: &[Row], s: &mut String) {
    let t = |l: &str, x: f64| val(rows, l, x, |r| Some(r.search.ms));
    let ns = xs(rows, "Sliced");
    let _ = writeln!(s, "One thread, times from one run (means over each loop):\n");
    if let (Some(sl), Some(fl)) = (t("Sliced", 1000.0), t("Flat", 1000.0)) {
        let _ = writeln!(
            s,
            "- N = 1000: `SlicedIndex` {} ms per search, `FlatBloofiPaper` {} ms: **{}x** one key per call (target at least 10x).",
            short(sl),
            short(fl),
            short(fl / sl)
        );
        if let Some(b) = val(rows, "Sliced", 1000.0, |r| r.search.batch_ms) {
            let _ = writeln!(
                s,
                "- N = 1000, `SlicedIndex` in batches of {} keys: {} ms per search: **{}x** `FlatBloofiPaper`.",
                super::measure::BATCH,
                short(b),
                short(fl / b)
            );
        }
    }
    if let Some(&max) = ns.last() {
        if let (Some(b), Some(n)) = (t("Bloofi", max), t("Naive", max)) {
            let _ = writeln!(
                s,
                "- N = {}: Bloofi tree {} ms per search, naive {} ms: **{}x** (target at least 50x; the paper reports about two orders of magnitude).",
                short(max),
                short(b),
                short(n),
                short(n / b)
            );
        }
        let ratios: Vec<(f64, f64)> = ns.iter().filter_map(|&x| Some((x, t("Bloofi", x)? / t("Sliced", x)?))).collect();
        let cross = ratios.windows(2).find(|w| w[0].1 >= 1.0 && w[1].1 < 1.0);
        let _ = writeln!(
            s,
            "- Bloofi / `SlicedIndex` time by N: {}; {}.",
            fmt_series(&ratios),
            match cross {
                Some(w) =>
                    format!("the tree overtakes `SlicedIndex` between N = {} and {}", short(w[0].0), short(w[1].0)),
                None if ratios.iter().all(|r| r.1 >= 1.0) =>
                    "`SlicedIndex` is faster at every N of the grid (no crossover)".into(),
                None => "no single crossover in this grid".into(),
            }
        );
        if let Some(r) = row(rows, "Bloofi", max) {
            let _ = writeln!(
                s,
                "- Iterative construction of N = {} filters: {:.1} s, **{} ms per insert**; inserting into the built tree: {} ms.",
                short(max),
                r.build_s,
                short(r.build_s * 1e3 / max),
                r.insert.ms.map_or("-".into(), short)
            );
        }
        if let Some(r) = row(rows, "Bloofi-Bulk", max) {
            let _ = writeln!(
                s,
                "- Bulk construction (`BulkOrder::Auto`) of N = {} filters: **{:.1} s** (ordering included).",
                short(max),
                r.build_s
            );
        }
    }
}

/// The Markdown report of `outcomes`.
pub(super) fn markdown(args: &BloofiArgs, grid: &Grid, outcomes: &[Outcome], seconds: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Bloofi, Section 7 reproduced\n");
    if args.replot {
        let _ = writeln!(
            s,
            "Measured by `paper bloofi {}{}` (seed {}) on {} (2 cores shared with other work: times are noisy); plots and this report redrawn from the CSVs with `--replot`.\n",
            args.experiment.name(),
            if args.quick { " --quick" } else { "" },
            args.seed,
            crate::sysinfo::cpu_model()
        );
    } else {
        let _ = writeln!(
            s,
            "`paper bloofi {}{}` (seed {}), {:.0} s on {} (2 cores shared with other work: times are noisy).\n",
            args.experiment.name(),
            if args.quick { " --quick" } else { "" },
            args.seed,
            seconds,
            crate::sysinfo::cpu_model()
        );
    }
    let _ = writeln!(
        s,
        "Defaults (Table 1): N = 1000, d = 2, n_exp = 10 000 (m = 100 992, k = 7), n = 100, p = 0.01, iterative construction, Hamming, nonrandom data; bulk builds use `BulkOrder::Auto` (the paper's exact greedy sort when estimated under two minutes, a MinHash-proposed greedy chain otherwise). Search cost and time are over \"yes\" searches (inserted values, as the paper); every engine was checked against the naive scan on {} \"yes\" and {} \"no\" searches per point before timing. Grid: N {:?}; d {:?}; n_exp {:?}; p {:?}; n {:?}; heuristic N {:?}; {} insert/delete pairs per maintenance point.\n",
        grid.check,
        grid.check,
        grid.filters,
        grid.orders,
        grid.nexps,
        grid.ps,
        grid.elements,
        grid.heuristic_filters,
        grid.ops
    );
    let mut findings = Vec::new();
    let mut heuristic = String::new();
    let mut speeds = String::new();
    for o in outcomes {
        match o.experiment {
            Experiment::N => {
                findings_n(&o.rows, &mut findings);
                speed(&o.rows, &mut speeds);
            }
            Experiment::Order => findings_order(&o.rows, &mut findings),
            Experiment::Nexp | Experiment::P | Experiment::Elements => {
                findings_sizes(o.experiment, &o.rows, &mut findings)
            }
            Experiment::Metric => findings_metric(&o.rows, &mut findings),
            Experiment::Data => findings_data(&o.rows, &mut findings),
            Experiment::Heuristic => heuristic_table(&o.rows, &mut heuristic, &mut findings),
            Experiment::Speed => speed(&o.rows, &mut speeds),
            Experiment::All => {}
        }
    }
    let _ = writeln!(s, "## Paper vs ours\n");
    let _ = writeln!(s, "{}\n", verdict_rules());
    let _ = writeln!(s, "| figure | paper | ours | agrees |");
    let _ = writeln!(s, "| --- | --- | --- | --- |");
    for f in &findings {
        let a = match f.agrees {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "n/a (grid)",
        };
        let _ = writeln!(s, "| {} | {} | {} | {a} |", f.figure, f.paper, f.ours);
    }
    if !heuristic.is_empty() {
        let _ = writeln!(s, "\n## Section 5.4 heuristic (search bf-cost)\n\n{heuristic}");
    }
    if !speeds.is_empty() {
        let _ = writeln!(s, "\n## Speed figures\n\n{speeds}");
    }
    let _ = writeln!(s, "\n## Figures\n");
    for o in outcomes {
        let _ = writeln!(s, "- `{}.csv`", o.experiment.name());
        for (stem, title) in &o.figures {
            let _ = writeln!(s, "  - {title}: [{stem}.png]({stem}.png), [{stem}.svg]({stem}.svg)");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 5b verdict "bulk searches better" for a Bloofi cost of 10 and
    /// the given bulk costs at two N.
    fn bulk_verdict(bulk: [f64; 2]) -> Option<bool> {
        let mut rows = Vec::new();
        for (x, b) in [100.0, 1000.0].into_iter().zip(bulk) {
            for (label, cost) in [("Bloofi", 10.0), ("Bloofi-Bulk", b)] {
                let mut row = Row { x, label: label.into(), ..Row::default() };
                row.search.cost = Some(cost);
                rows.push(row);
            }
        }
        let mut out = Vec::new();
        findings_n(&rows, &mut out);
        out.iter().find(|f| f.paper.starts_with("Bulk construction (global sort)")).and_then(|f| f.agrees)
    }

    /// A "better" claim needs every point better by more than the stated
    /// tolerance: one point within it, or one point worse, is a "no".
    #[test]
    fn better_needs_every_point_beyond_the_tolerance() {
        assert_eq!(bulk_verdict([9.0, 9.7]), Some(true));
        assert_eq!(bulk_verdict([9.0, 9.9]), Some(false));
        assert_eq!(bulk_verdict([9.0, 10.4]), Some(false));
        assert!(verdict_rules().contains("2%"));
    }

    #[test]
    fn helpers_apply_the_tolerance() {
        assert!(lower(97.9, 100.0) && !lower(98.0, 100.0));
        assert!(at_most(102.0, 100.0) && !at_most(102.1, 100.0));
        assert!(similar(1.3, 1.0) && !similar(1.4, 1.0));
        assert!(increasing(&[(1.0, 10.0), (2.0, 9.9), (3.0, 12.0)]));
        assert!(!increasing(&[(1.0, 10.0), (2.0, 10.1)]));
        assert!(decreasing(&[(1.0, 10.0), (2.0, 10.1), (3.0, 8.0)]));
    }
}

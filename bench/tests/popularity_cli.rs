//! End-to-end checks of `paper popularity` (Section 5.1 of the
//! popularity-conscious paper): the table, the CSV, and argument errors.

mod common;
use common::{fails, ok, paper};

#[test]
fn popularity_prints_the_table_and_writes_the_csv() {
    let csv = std::env::temp_dir().join(format!("popularity-{}.csv", std::process::id()));
    let text =
        ok(paper().args(["popularity", "--universe", "60", "--trials", "300", "--eps", "0.5", "--csv"]).arg(&csv));
    for needle in ["Section 5.1", "optimal+", "int/opt+p", " 1.00 ", " 2.00 "] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    let rows = std::fs::read_to_string(&csv).unwrap();
    let _ = std::fs::remove_file(&csv);
    assert!(rows.starts_with(
        "alpha,divergence_bits,approach,predicted_fpr,measured_fpr,hashes_per_key,measured_half_width_999,independent_probes_fpr\n"
    ));
    assert_eq!(rows.lines().count(), 1 + 5 * 4);
    assert!(rows.contains(",optimal_plus,"));
}

/// `--format json`: one object per (alpha, approach) with the fields a
/// script checks, and consistent ratios.
#[test]
fn popularity_json_has_one_object_per_alpha_and_approach() {
    let out =
        ok(paper().args(["popularity", "--universe", "60", "--trials", "400", "--eps", "0.5", "--format", "json"]));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.len(), 5 * 4);
    for row in &rows {
        for field in [
            "alpha",
            "approach",
            "predicted_fpr",
            "measured_fpr",
            "hashes_per_key",
            "ratio_to_optimal_plus_predicted",
            "ratio_to_optimal_plus_measured",
        ] {
            assert!(row.get(field).is_some(), "{field} missing in {row}");
        }
        let approach = row["approach"].as_str().unwrap();
        let opt = rows
            .iter()
            .find(|r| r["alpha"] == row["alpha"] && r["approach"] == "optimal_plus")
            .unwrap()["predicted_fpr"]
            .as_f64()
            .unwrap();
        let ratio = row["ratio_to_optimal_plus_predicted"].as_f64().unwrap();
        assert!((ratio - row["predicted_fpr"].as_f64().unwrap() / opt).abs() < 1e-12, "{row}");
        if approach == "optimal_plus" {
            assert!(row["measured_fpr"].is_null() && row["ratio_to_optimal_plus_measured"].is_null());
        } else {
            let measured = row["measured_fpr"].as_f64().unwrap();
            let ratio = row["ratio_to_optimal_plus_measured"].as_f64().unwrap();
            assert!((ratio - measured / opt).abs() < 1e-12, "{row}");
        }
    }
    let approaches: std::collections::BTreeSet<&str> = rows.iter().map(|r| r["approach"].as_str().unwrap()).collect();
    assert_eq!(approaches.into_iter().collect::<Vec<_>>(), ["integer", "optimal_plus", "rounding", "standard"]);
}

#[test]
fn bad_arguments_exit_nonzero_without_panic() {
    for (args, code) in [
        (&["popularity", "--universe", "5"][..], 2),
        (&["popularity", "--universe", "50", "--eps=-1"], 1),
        (&["popularity", "--universe", "50", "--set-size", "0"], 1),
    ] {
        fails(args, code);
    }
}

#[test]
fn popularity_out_writes_csv_and_plot() {
    let dir = std::env::temp_dir().join(format!("popularity-out-{}", std::process::id()));
    ok(paper().args(["popularity", "--universe", "40", "--trials", "200", "--eps", "0.5", "--out"]).arg(&dir));
    for file in ["popularity.csv", "popularity_fpr.svg", "popularity_fpr.png"] {
        let len = std::fs::metadata(dir.join(file)).map(|m| m.len()).unwrap_or(0);
        assert!(len > 100, "{file}: {len} bytes");
    }
    let svg = std::fs::read_to_string(dir.join("popularity_fpr.svg")).unwrap();
    assert!(svg.contains("integer DP measured") && svg.contains("optimal+ predicted"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dp_speed_reports_time_and_memory() {
    let rows = bloomslice_bench::popularity::dp_speed(&[200], 20_000).unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.seconds >= 0.0 && r.plan.bytes > 0 && r.plan.block >= 1));
    let table = bloomslice_bench::popularity::dp_speed_table(&rows);
    assert!(table.contains("integer_solution N=200") && table.contains("limited_integer_solution N=20000"));
}

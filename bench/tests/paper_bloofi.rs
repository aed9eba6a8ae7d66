//! End-to-end checks of `paper bloofi`: a quick run writes sane CSVs, SVG
//! and PNG plots and a report; bad arguments and unwritable outputs fail
//! with one line and the right exit code.

use std::path::PathBuf;
mod common;
use common::{fails, ok, paper};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bloomslice-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn quick_run_writes_csv_plots_and_report() {
    let dir = temp_dir("bloofi-quick");
    let out = paper().args(["bloofi", "all", "--quick", "--max-filters", "300", "--out"]).arg(&dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("[8/8] experiment data"), "progress on stderr: {stderr}");

    for exp in ["n", "order", "nexp", "p", "elements", "metric", "data", "heuristic"] {
        let csv = std::fs::read_to_string(dir.join(format!("{exp}.csv"))).unwrap();
        let mut lines = csv.lines();
        let header = lines.next().unwrap();
        assert!(header.contains(",label,filters,m,search_ms,"), "{exp}: {header}");
        let rows: Vec<&str> = lines.collect();
        assert!(!rows.is_empty(), "{exp} has rows");
        let columns = header.split(',').count();
        for row in &rows {
            assert_eq!(row.split(',').count(), columns, "{exp}: {row}");
            let ms: f64 = row.split(',').nth(4).unwrap().parse().unwrap();
            assert!(ms > 0.0 && ms < 1000.0, "{exp}: search time {ms} in {row}");
        }
    }
    let n = std::fs::read_to_string(dir.join("n.csv")).unwrap();
    for label in [",Naive,", ",Bloofi,", ",Bloofi-Bulk,", ",Flat,", ",Sliced,", ",Bloofi-AU,"] {
        assert!(n.contains(label), "n.csv lacks {label}");
    }

    for stem in [
        "fig05a_search_time",
        "fig05b_search_cost",
        "fig06b_maintenance_cost",
        "fig07b_search_cost",
        "fig10b_search_cost_vs_data",
    ] {
        let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<text"), "{stem}.svg");
        let png = std::fs::read(dir.join(format!("{stem}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}.png");
        assert!(png.len() > 10_000, "{stem}.png has content");
    }
    let svg = std::fs::read_to_string(dir.join("fig05b_search_cost.svg")).unwrap();
    assert!(svg.contains("Ideal") && svg.contains("Bloofi-Bulk"), "legend");

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for needle in ["## Paper vs ours", "| 5a |", "| 7c |", "| 10b, 10c |", "## Speed figures", "fig05a_search_time.png"]
    {
        assert!(report.contains(needle), "report lacks {needle:?}:\n{report}");
    }

    // --replot redraws from the CSVs without measuring.
    std::fs::remove_file(dir.join("fig05a_search_time.png")).unwrap();
    ok(paper().args(["bloofi", "all", "--replot", "--out"]).arg(&dir));
    assert!(dir.join("fig05a_search_time.png").exists());
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("redrawn from the CSVs") && report.contains("| 5a |"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_bloofi_arguments_exit_2_and_runtime_errors_exit_1() {
    for args in
        [&["bloofi", "bogus"][..], &["bloofi"], &["bloofi", "n", "--max-filters", "1"], &["bloofi", "n", "--seed", "x"]]
    {
        fails(args, 2);
    }
    let stderr = fails(&["bloofi", "heuristic", "--quick", "--out", "/dev/null/cannot"], 1);
    assert!(stderr.starts_with("error: cannot create"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn stable_writes_per_importance_csv_and_plots() {
    let dir = temp_dir("stable-plots");
    ok(paper().args(["stable", "--distinct", "300", "--out"]).arg(&dir));
    let csv = std::fs::read_to_string(dir.join("stable_by_importance.csv")).unwrap();
    assert!(csv.starts_with("distribution,repeat_fraction,policy,importance,fp_rate,fn_rate\n"));
    assert!(csv.contains("uniform,0.1,SBF,50,"), "{}", &csv[..300.min(csv.len())]);
    for stem in ["stable_fp_uniform_10", "stable_fn_inverse_50"] {
        assert!(std::fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap().contains("<svg"));
        assert_eq!(&std::fs::read(dir.join(format!("{stem}.png"))).unwrap()[1..4], b"PNG");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

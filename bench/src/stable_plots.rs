//! Per-importance plots of `paper stable --out DIR`: for every stream of the
//! Section IV-D grid (distribution x repeat fraction), the false-positive
//! and false-negative rate of each policy by importance, as one CSV
//! (`stable_by_importance.csv`) and two line charts per stream
//! (`stable_fp_DIST_RR.{svg,png}`, `stable_fn_DIST_RR.{svg,png}`).

use std::path::{Path, PathBuf};

use crate::stable_experiment::StreamResult;

use crate::plot::{LineChart, Series, write};

/// One line of the long-form CSV.
#[derive(serde::Serialize)]
struct ImportanceRow {
    distribution: &'static str,
    repeat_fraction: f64,
    policy: &'static str,
    importance: usize,
    fp_rate: f64,
    fn_rate: f64,
}

/// The long-form CSV: one line per stream, policy and importance.
pub fn csv(results: &[StreamResult]) -> String {
    crate::csv_text::from_records(results.iter().flat_map(|r| {
        r.metrics.iter().flat_map(move |m| {
            let (fp, fns) = (m.fp_by_importance(), m.fn_by_importance());
            fp.into_iter().zip(fns).enumerate().map(move |(i, (fp_rate, fn_rate))| ImportanceRow {
                distribution: r.config.distribution.name(),
                repeat_fraction: r.config.repeat_fraction,
                policy: m.policy.name(),
                importance: i + 1,
                fp_rate,
                fn_rate,
            })
        })
    }))
}

/// Writes the CSV and the charts into `dir` (created if missing); returns
/// the files written.
///
/// # Errors
///
/// A one-line description of the first file that could not be written.
pub fn write_all(results: &[StreamResult], dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    let path = dir.join("stable_by_importance.csv");
    std::fs::write(&path, csv(results)).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    files.push(path);
    for r in results {
        let c = &r.config;
        let pct = (c.repeat_fraction * 100.0).round() as u32;
        for (kind, what) in [("fp", "false-positive"), ("fn", "false-negative")] {
            let series = r
                .metrics
                .iter()
                .map(|m| {
                    let rates = if kind == "fp" { m.fp_by_importance() } else { m.fn_by_importance() };
                    Series::new(m.policy.name(), rates.iter().enumerate().map(|(i, &v)| ((i + 1) as f64, v)).collect())
                })
                .collect();
            let chart = LineChart {
                title: format!("{what} rate by importance: {} repeats {pct}%", c.distribution.name()),
                x_label: "importance".into(),
                y_label: format!("{what} rate"),
                log_x: false,
                log_y: false,
                series,
            };
            let (svg, png) = write(&chart, &dir.join(format!("stable_{kind}_{}_{pct}", c.distribution.name())))?;
            files.extend([svg, png]);
        }
    }
    Ok(files)
}

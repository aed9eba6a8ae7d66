//! Line charts written as both SVG and PNG, for the `paper` subcommands.
//!
//! A [`LineChart`] has a title, axis labels, a linear or base-10 log scale
//! on each axis and one [`Series`] per engine (or per variant); [`write()`]
//! draws it with `plotters` into `STEM.svg` and `STEM.png`.
//!
//! Text is rendered with `ab_glyph` from a font bundled in the crate
//! (`bench/assets/fonts/DejaVuSans.ttf`, DejaVu fonts licence beside it), so
//! plotting needs no system library (no fontconfig, no freetype) and gives
//! the same pictures on every machine.
//!
//! Log axes are drawn by plotting `log10(value)` on a linear axis whose
//! ticks are labelled with the powers of ten they stand for; points whose
//! value is not positive are left out of a log-scale series.
//!
//! ```no_run
//! use bloomslice_bench::plot::{LineChart, Series, write};
//!
//! let chart = LineChart {
//!     title: "Search time vs N".into(),
//!     x_label: "filters N".into(),
//!     y_label: "ms per query".into(),
//!     log_x: true,
//!     log_y: true,
//!     series: vec![Series::new("naive", vec![(100.0, 0.01), (1000.0, 0.1)])],
//! };
//! write(&chart, std::path::Path::new("/tmp/search_time")).unwrap();
//! ```

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// The bundled font's bytes (DejaVu Sans).
static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// Width and height of the PNG, in pixels (the SVG uses the same units).
pub const SIZE: (u32, u32) = (900, 600);

/// One named line of a chart: `(x, y)` points, drawn in the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series from its name and points.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series { name: name.into(), points }
    }
}

/// A line chart: one line (with point markers) per series.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Caption above the plot.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// Base-10 log scale on x.
    pub log_x: bool,
    /// Base-10 log scale on y.
    pub log_y: bool,
    /// The lines.
    pub series: Vec<Series>,
}

/// Registers the bundled font under the family name `sans-serif` once.
fn register() -> Result<(), String> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = register_font("sans-serif", FontStyle::Normal, FONT)
            .map_err(|_| "cannot load the bundled font".to_string());
    });
    result
}

/// Line colours, chosen to stay distinct in print (Tableau 10, then
/// black and darker tones for charts with more lines).
const COLOURS: [RGBColor; 16] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
    RGBColor(0, 70, 120),
    RGBColor(160, 70, 0),
    RGBColor(0, 100, 0),
    RGBColor(120, 0, 40),
    RGBColor(90, 60, 140),
];

/// Maps a value to plot space: `log10` on a log axis (`None` when not
/// positive), unchanged otherwise.
fn to_axis(v: f64, log: bool) -> Option<f64> {
    if !v.is_finite() {
        return None;
    }
    if log { (v > 0.0).then(|| v.log10()) } else { Some(v) }
}

/// The axis range covering `values` with a margin: 4% each side on a log
/// axis spanning a decade or more (whole decades around a shorter one), 5%
/// each side (and 0 included when all values are positive and
/// close to it) on a linear one.
fn axis_range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if log {
        if hi.floor() < lo || hi - lo < 1.0 {
            // Less than a decade (or none inside): whole decades around it.
            let (lo, hi) = (lo.floor(), hi.ceil());
            return if hi <= lo { (lo - 1.0, hi + 1.0) } else { (lo, hi) };
        }
        let pad = 0.04 * (hi - lo);
        (lo - pad, hi + pad)
    } else {
        if lo >= 0.0 && lo < 0.5 * hi {
            lo = 0.0;
        }
        let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
        let lo = if lo == 0.0 { 0.0 } else { lo - 0.05 * span };
        (lo, hi + 0.05 * span)
    }
}

/// Tick label of a plot-space value: `10^e` as a power of ten on a log axis
/// (empty between decades), a short number otherwise.
fn tick(v: f64, log: bool) -> String {
    if log {
        let e = v.round();
        if (v - e).abs() > 1e-6 {
            return String::new();
        }
        let e = e as i32;
        match e {
            0 => "1".into(),
            1 => "10".into(),
            2 => "100".into(),
            3 => "1000".into(),
            _ => format!("1e{e}"),
        }
    } else {
        let a = v.abs();
        if a == 0.0 {
            "0".into()
        } else if !(1e-3..1e6).contains(&a) {
            format!("{v:.0e}")
        } else if a >= 100.0 || v.fract() == 0.0 {
            format!("{v:.0}")
        } else if a >= 1.0 {
            format!("{v:.1}")
        } else {
            let s = format!("{v:.4}");
            s.trim_end_matches('0').to_string()
        }
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &LineChart) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let series: Vec<(String, Vec<(f64, f64)>)> = chart
        .series
        .iter()
        .map(|s| {
            let pts = s
                .points
                .iter()
                .filter_map(|&(x, y)| Some((to_axis(x, chart.log_x)?, to_axis(y, chart.log_y)?)))
                .collect();
            (s.name.clone(), pts)
        })
        .collect();
    let (x0, x1) = axis_range(series.iter().flat_map(|s| s.1.iter().map(|p| p.0)), chart.log_x);
    let (y0, y1) = axis_range(series.iter().flat_map(|s| s.1.iter().map(|p| p.1)), chart.log_y);
    let decades = |a: f64, b: f64| ((b.ceil() - a.floor()) as usize + 1).clamp(2, 12);
    let x_ticks = if chart.log_x { decades(x0, x1) } else { 10 };
    let y_ticks = if chart.log_y { decades(y0, y1) } else { 10 };
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    let (log_x, log_y) = (chart.log_x, chart.log_y);
    ctx.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .x_labels(x_ticks)
        .y_labels(y_ticks)
        .x_label_formatter(&|v| tick(*v, log_x))
        .y_label_formatter(&|v| tick(*v, log_y))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()
        .map_err(err)?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        ctx.draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        ctx.draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled()))).map_err(err)?;
    }
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .label_font(("sans-serif", 15))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// Draws `chart` into `STEM.svg` and `STEM.png` (the parent folder must
/// exist) and returns the two paths.
///
/// # Errors
///
/// A one-line description when the font cannot be loaded or a file cannot
/// be drawn or written.
pub fn write(chart: &LineChart, stem: &Path) -> Result<(PathBuf, PathBuf), String> {
    register()?;
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    {
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        draw(&root, chart).map_err(|e| format!("{}: {e}", svg.display()))?;
    }
    {
        let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
        draw(&root, chart).map_err(|e| format!("{}: {e}", png.display()))?;
    }
    Ok((svg, png))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_label_decades_only() {
        assert_eq!(tick(3.0, true), "1000");
        assert_eq!(tick(5.0, true), "1e5");
        assert_eq!(tick(-2.0, true), "1e-2");
        assert_eq!(tick(2.5, true), "");
        assert_eq!(tick(0.25, false), "0.25");
        assert_eq!(tick(120.0, false), "120");
    }

    #[test]
    fn log_axes_drop_non_positive_points() {
        assert_eq!(to_axis(0.0, true), None);
        assert_eq!(to_axis(100.0, true), Some(2.0));
        assert_eq!(to_axis(0.0, false), Some(0.0));
        assert_eq!(axis_range([2.2, 2.7].into_iter(), true), (2.0, 3.0));
        let (lo, hi) = axis_range([2.0, 6.0].into_iter(), true);
        assert!(lo < 2.0 && lo > 1.8 && hi > 6.0 && hi < 6.2, "{lo} {hi}");
    }

    #[test]
    fn writes_svg_and_png() {
        let dir = std::env::temp_dir().join(format!("bloomslice-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chart = LineChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_x: true,
            log_y: false,
            series: vec![Series::new("a", vec![(10.0, 1.0), (100.0, 2.0)]), Series::new("b", vec![])],
        };
        let (svg, png) = write(&chart, &dir.join("chart")).unwrap();
        let svg_text = std::fs::read_to_string(&svg).unwrap();
        assert!(svg_text.contains("<svg") && svg_text.contains("<text") && svg_text.contains("</svg>"), "{svg_text}");
        let png_bytes = std::fs::read(&png).unwrap();
        assert_eq!(&png_bytes[1..4], b"PNG");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

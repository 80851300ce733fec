//! `capa plot`: the dashboard's plots as PNG files, for people without a
//! browser. Every number of every `metrics.jsonl` line is a series (nested
//! objects joined with dots, as the page names them); a metric with
//! `_low` and `_high` siblings (an Elo and its interval) is drawn with its
//! interval as a band.

use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{Context, Result, bail};
use capa_rundir::{MetricsLine, RunDir, keys, read_metrics};
use plotters::prelude::*;
use serde_json::Value;

/// Each image's size in pixels.
const SIZE: (u32, u32) = (900, 450);
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// What the plots' horizontal axis counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XAxis {
    /// The iteration.
    Iteration,
    /// Hours of the run's iterations (self-play, training, measuring,
    /// checkpoints) since it began.
    Hours,
}

/// Every number of a metrics line, by its dotted name.
pub fn flatten(value: &Value) -> Vec<(String, f64)> {
    fn walk(value: &Value, name: &str, out: &mut Vec<(String, f64)>) {
        match value {
            Value::Number(n) => out.extend(n.as_f64().filter(|v| v.is_finite()).map(|v| (name.to_string(), v))),
            Value::Array(items) => {
                let names = name.ends_with("white_draw_black").then_some(["white", "draw", "black"]);
                for (i, item) in items.iter().enumerate() {
                    let part = names.and_then(|n| n.get(i).map(|s| s.to_string())).unwrap_or_else(|| i.to_string());
                    walk(item, &format!("{name}.{part}"), out);
                }
            }
            Value::Object(fields) => {
                for (key, item) in fields {
                    walk(item, &if name.is_empty() { key.clone() } else { format!("{name}.{key}") }, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, "", &mut out);
    out
}

/// One point of a series, with its interval where the metric has one.
#[derive(Clone, Copy)]
struct Point {
    x: f64,
    y: f64,
    interval: Option<(f64, f64)>,
}

/// One metric over the run.
struct Series {
    name: String,
    points: Vec<Point>,
}

/// The series of metrics lines `lines`, over `x`.
fn series(lines: &[MetricsLine], x: XAxis) -> Vec<Series> {
    let mut all: Vec<Series> = Vec::new();
    let mut hours = 0.0;
    for line in lines {
        hours += line.seconds() / 3600.0;
        let at = match x {
            XAxis::Iteration => line.iteration as f64,
            XAxis::Hours => hours,
        };
        let numbers = flatten(&serde_json::to_value(line).unwrap_or_default());
        let get = |key: &str| numbers.iter().find(|(k, _)| k == key).map(|&(_, v)| v);
        for (name, value) in &numbers {
            if name == "iteration" || name.ends_with("_low") || name.ends_with("_high") {
                continue;
            }
            let point =
                Point { x: at, y: *value, interval: get(&format!("{name}_low")).zip(get(&format!("{name}_high"))) };
            match all.iter_mut().find(|s| &s.name == name) {
                Some(series) => series.points.push(point),
                None => all.push(Series { name: name.clone(), points: vec![point] }),
            }
        }
    }
    all
}

/// Draws every metric of the run's `metrics.jsonl` into `out` as
/// `<metric>.png` (dots become dashes); returns the files written.
///
/// # Errors
/// A run without metrics, or a file that cannot be written.
pub fn write_plots(run: &RunDir, out: &Path, x: XAxis) -> Result<Vec<PathBuf>> {
    if run.read(keys::METRICS)?.is_none() {
        bail!("{} has no {} yet: no iteration has finished", run.location(), keys::METRICS);
    }
    let lines = read_metrics(run)?;
    if lines.is_empty() {
        bail!("{}/{} holds no complete line", run.location(), keys::METRICS);
    }
    register_font();
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut written = Vec::new();
    for series in series(&lines, x) {
        let path = out.join(format!("{}.png", series.name.replace('.', "-")));
        let png = draw(&series, x, run.location()).with_context(|| format!("cannot draw {}", series.name))?;
        capa_data::write_atomically(&path, &png).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Makes the compiled-in font plotters' `sans-serif`.
pub(crate) fn register_font() {
    static FONT_ONCE: Once = Once::new();
    FONT_ONCE.call_once(|| {
        // The font is compiled in; a failure here is a broken build, and drawing text says so.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// RGB pixels as a PNG image.
pub(crate) fn encode_png(pixels: &[u8], width: u32, height: u32) -> Result<Vec<u8>> {
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(png)
}

/// One series as a PNG image.
fn draw(series: &Series, x: XAxis, run: &str) -> Result<Vec<u8>> {
    let (width, height) = SIZE;
    let mut pixels = vec![0u8; (width * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
        let bounds = |f: fn(&Point) -> [f64; 3]| {
            let values: Vec<f64> = series.points.iter().flat_map(f).filter(|v| v.is_finite()).collect();
            let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
            if hi > lo { (lo, hi) } else { (lo - 1.0, hi + 1.0) }
        };
        let (x0, x1) = bounds(|p| [p.x; 3]);
        let (y0, y1) = bounds(|p| {
            let (low, high) = p.interval.unwrap_or((p.y, p.y));
            [p.y, low, high]
        });
        let margin = (y1 - y0) * 0.05;
        let x_label = match x {
            XAxis::Iteration => "iteration",
            XAxis::Hours => "hours",
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{} ({run})", series.name), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, (y0 - margin)..(y1 + margin))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let band: Vec<(f64, f64, f64)> =
            series.points.iter().filter_map(|p| p.interval.map(|(lo, hi)| (p.x, lo, hi))).collect();
        if !band.is_empty() {
            let outline: Vec<(f64, f64)> =
                band.iter().map(|&(x, _, hi)| (x, hi)).chain(band.iter().rev().map(|&(x, lo, _)| (x, lo))).collect();
            chart
                .draw_series(std::iter::once(Polygon::new(outline, RGBColor(47, 111, 191).mix(0.2).filled())))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let blue = RGBColor(47, 111, 191);
        // Each interval as a whisker too: evaluations are often too sparse for a band.
        chart
            .draw_series(band.iter().map(|&(x, lo, hi)| PathElement::new(vec![(x, lo), (x, hi)], blue.stroke_width(1))))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        chart
            .draw_series(LineSeries::new(series.points.iter().map(|p| (p.x, p.y)), blue.stroke_width(2)))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        chart
            .draw_series(series.points.iter().map(|p| Circle::new((p.x, p.y), 3, blue.filled())))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    encode_png(&pixels, width, height)
}

//! The plot of a series: each level's trials (or boots' means) as dots along the levels
//! in their order, each level's mean with its interval, and each segment's mean as a
//! step across its levels, so that where the series changed reads at a glance.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::format::{DisplayUnit, significant};

use super::plot::PlotError;
use crate::summary::SeriesStat;

const WIDTH: u32 = 860;
const HEIGHT: u32 = 440;
/// Okabe–Ito blue and vermillion, as the dot plots use them.
const DOTS: RGBColor = RGBColor(0, 114, 178);
const STEP: RGBColor = RGBColor(213, 94, 0);
/// Beyond this many levels the level names are not all written under the axis.
const NAMED: usize = 30;

/// The SVG text of one series' plot; `values[i]`: level i's observations on the metric's
/// scale, `display` the unit its axis is written in.
pub(crate) fn series_plot(
    s: &SeriesStat,
    values: &[Vec<f64>],
    display: &DisplayUnit,
) -> Result<String, PlotError> {
    let fail = |e: &dyn std::fmt::Display| PlotError { metric: s.metric.clone(), detail: e.to_string() };
    let n = s.level_names.len();
    let shown = |v: f64| v / display.factor;
    let mut all: Vec<f64> = values.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    for l in &s.series.levels {
        all.extend([
            l.estimate.mean,
            l.estimate.low.unwrap_or(l.estimate.mean),
            l.estimate.high.unwrap_or(l.estimate.mean),
        ]);
    }
    let (low, high) = all
        .iter()
        .map(|&v| shown(v))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !(low.is_finite() && high.is_finite()) || low.abs().max(high.abs()) > 1e100 {
        return Err(fail(&"no finite value to draw"));
    }
    let pad = ((high - low) * 0.08).max(high.abs() * 0.01).max(f64::MIN_POSITIVE);
    let (y0, y1) = (low - pad, high + pad);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let centre = ("sans-serif", 16).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
        let context: Vec<String> = s.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let title = format!(
            "{} along {}{}",
            s.metric,
            s.factor,
            if context.is_empty() { String::new() } else { format!(" ({})", context.join(" ")) }
        );
        root.draw(&Text::new(title, (WIDTH as i32 / 2, 18), centre)).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_top(36)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), y0..y1)
            .map_err(|e| fail(&e))?;
        let names = s.level_names.clone();
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(n.min(NAMED))
            .x_desc(s.factor.clone())
            .y_desc(if display.symbol.is_empty() {
                s.metric.clone()
            } else {
                format!("{} ({})", s.metric, display.symbol)
            })
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-9 && i >= 0.0 && (i as usize) < names.len() {
                    names[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| significant(*y, 3))
            .draw()
            .map_err(|e| fail(&e))?;
        // each level's observations, spread a little sideways so that equal values show
        for (i, vs) in values.iter().enumerate() {
            let k = vs.len().max(1) as f64;
            let dots = vs.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(j, &v)| {
                let x = i as f64 + 0.25 * ((j as f64 + 0.5) / k - 0.5);
                Circle::new((x, shown(v)), 2, DOTS.mix(0.45).filled())
            });
            chart.draw_series(dots).map_err(|e| fail(&e))?;
        }
        // each level's mean and interval
        for (i, l) in s.series.levels.iter().enumerate() {
            let x = i as f64;
            if let (Some(lo), Some(hi)) = (l.estimate.low, l.estimate.high) {
                let bar = PathElement::new(vec![(x, shown(lo)), (x, shown(hi))], BLACK.stroke_width(1));
                chart.draw_series(std::iter::once(bar)).map_err(|e| fail(&e))?;
            }
            chart
                .draw_series(std::iter::once(Circle::new((x, shown(l.estimate.mean)), 3, BLACK.filled())))
                .map_err(|e| fail(&e))?;
        }
        // the segments' means as steps
        for g in &s.series.segments {
            let y = shown(g.estimate.mean);
            let step = PathElement::new(
                vec![(g.first as f64 - 0.4, y), (g.last as f64 + 0.4, y)],
                STEP.stroke_width(3),
            );
            chart.draw_series(std::iter::once(step)).map_err(|e| fail(&e))?;
        }
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}

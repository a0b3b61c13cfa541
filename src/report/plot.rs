//! SVG dot plots, one per metric: every trial as a point, each cell's mean with its
//! confidence interval, coloured by the level of the compared factor.
//!
//! Cells are rows (labels stay horizontal and readable however long), values run along
//! the x axis in the metric's display unit. SVG text needs no fonts: plotters only
//! estimates label widths, and the viewer renders them.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::format::{DisplayUnit, significant};
use crate::summary::{CellStat, DriftStat};

/// Beyond this many cells a metric gets no plot: the rows would be unreadable.
pub(crate) const MAX_CELLS: usize = 60;

const WIDTH: u32 = 860;
const ROW: u32 = 30;
/// Space for the title, the axis and the legend.
const CHROME: u32 = 130;
/// The lines of the title and of the legend under it.
const TITLE_Y: i32 = 18;
const LEGEND_Y: i32 = 42;
/// A line of text under the title (the levels every row shares).
const LINE: i32 = 18;
/// The width a label's character is taken to need (plotters only estimates text, and
/// the viewer's font decides): generous, so that labels stay inside the image.
const CHAR: u32 = 7;

/// Colour-blind-safe (Okabe–Ito) colours for the levels, in order.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// One row of the plot.
pub(crate) struct Row<'a> {
    pub label: String,
    pub cell: &'a CellStat,
    /// Index of the colour (the compared factor's level), 0 without a compared factor.
    pub colour: usize,
}

/// Why a plot could not be drawn (plotters' backend errors carry no detail worth more).
#[derive(Debug, thiserror::Error)]
#[error("drawing the plot of {metric}: {detail}")]
pub struct PlotError {
    pub metric: String,
    pub detail: String,
}

/// The largest magnitude a plot's axis may reach. plotters steps over the axis to place
/// its ticks, and near f64's limits that never ends: a fuzzed trial log with one value of
/// 1e308 kept `margin report` busy for good (tests/campaign/). No measurement comes near.
const MAX_MAGNITUDE: f64 = 1e100;

/// Why the rows cannot be drawn on one axis, if they cannot.
pub(crate) fn not_drawable(rows: &[Row]) -> Option<String> {
    let (low, high) = extent(rows);
    let far = if high.abs() > low.abs() { high } else { low };
    (far.abs() > MAX_MAGNITUDE).then(|| format!("a value of {far:.3e} is beyond what a plot can draw"))
}

/// The SVG text of one metric's plot. `legend` names the colours in order; `common` is
/// the levels every row shares (said once, under the title; empty for none).
pub(crate) fn dot_plot(
    metric: &str,
    scale: &DisplayUnit,
    rows: &[Row],
    legend: &[String],
    common: &str,
) -> Result<String, PlotError> {
    let fail = |e: &dyn std::fmt::Display| PlotError { metric: metric.to_owned(), detail: e.to_string() };
    let (low, high) = extent(rows);
    let log = log_axis(low, high);
    let (x0, x1) = if log {
        // a tenth of a decade either side
        (low / scale.factor / 1.26, high / scale.factor * 1.26)
    } else {
        let pad = ((high - low) * 0.06).max(high.abs() * 1e-3).max(f64::MIN_POSITIVE);
        ((low - pad) / scale.factor, (high + pad) / scale.factor)
    };
    let n = rows.len();
    let label_width = rows.iter().map(|r| r.label.chars().count()).max().unwrap_or(4) as u32 * CHAR + 16;
    // The values keep at least half the default width; long labels widen the image
    // rather than run off its left edge.
    let width = WIDTH.max(label_width + WIDTH / 2);
    let with_legend = legend.len() > 1;
    let with_common = !common.is_empty();
    let legend_y = LEGEND_Y + if with_common { LINE } else { 0 };
    let height = CHROME + ROW * n as u32 + if with_common { LINE as u32 } else { 0 };

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let unit = if scale.symbol.is_empty() { String::new() } else { format!(" ({})", scale.symbol) };
        // The title and the legend are drawn by hand above the chart, so that the legend
        // sits on a line of its own under the title, where it can hide no point.
        let centre = ("sans-serif", 16).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
        let axis = if log { ", log scale" } else { "" };
        let title = format!("{metric}{unit}: trials, mean and confidence interval{axis}");
        root.draw(&Text::new(title, (width as i32 / 2, TITLE_Y), centre.clone())).map_err(|e| fail(&e))?;
        if with_common {
            let note = ("sans-serif", 12).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
            let text = format!("every row: {common}");
            root.draw(&Text::new(text, (width as i32 / 2, TITLE_Y + LINE), note)).map_err(|e| fail(&e))?;
        }
        let top = if with_legend { legend_y } else { TITLE_Y + if with_common { LINE } else { 0 } };
        let builder = || {
            let mut b = ChartBuilder::on(&root);
            b.margin(12).margin_top(top + 18).margin_left(label_width).x_label_area_size(36);
            b
        };
        let sheet = Sheet { axis: format!("{metric}{unit}"), scale, rows, label_width, x0 };
        // the same drawing on either axis (plotters' linear and log axes are two types)
        if log {
            let mut chart = builder()
                .build_cartesian_2d((x0..x1).log_scale(), -0.5..(n as f64 - 0.5))
                .map_err(|e| fail(&e))?;
            sheet.draw(&mut chart, &root, &fail)?;
        } else {
            let mut chart =
                builder().build_cartesian_2d(x0..x1, -0.5..(n as f64 - 0.5)).map_err(|e| fail(&e))?;
            sheet.draw(&mut chart, &root, &fail)?;
        }

        if with_legend {
            draw_legend(&root, legend, (label_width as i32, legend_y), &fail)?;
        }
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}

/// How a plot's failure is said: the metric's [`PlotError`] with the backend's words.
type Fail<'f> = dyn Fn(&dyn std::fmt::Display) -> PlotError + 'f;

/// What the chart of a plot shows, whichever its x axis: the rows, their labels, the
/// values in `scale`.
struct Sheet<'s, 'r> {
    /// The x axis' description: the metric and its unit.
    axis: String,
    scale: &'s DisplayUnit,
    rows: &'s [Row<'r>],
    label_width: u32,
    /// The left end of the x axis, where each row's label is placed.
    x0: f64,
}

impl Sheet<'_, '_> {
    /// Where row `i` is drawn: at y = n − 1 − i, so that the plot reads top to bottom like
    /// the table.
    fn at(&self, i: usize) -> f64 {
        (self.rows.len() - 1 - i) as f64
    }

    /// The axis, the row labels (drawn on `root`) and each row's points on `chart`.
    fn draw<DB: DrawingBackend, X>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>,
        root: &DrawingArea<DB, Shift>,
        fail: &Fail,
    ) -> Result<(), PlotError>
    where
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .y_labels(0)
            .x_desc(self.axis.as_str())
            .x_label_formatter(&|x| significant(*x, 3))
            .draw()
            .map_err(|e| fail(&e))?;

        // Row labels, drawn by hand so that each sits exactly on its row.
        let right = ("sans-serif", 12).into_font().color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center));
        for (i, row) in self.rows.iter().enumerate() {
            let (_, y) = chart.backend_coord(&(self.x0, self.at(i)));
            root.draw(&Text::new(row.label.clone(), (self.label_width as i32 - 4, y), right.clone()))
                .map_err(|e| fail(&e))?;
        }
        for (i, row) in self.rows.iter().enumerate() {
            self.draw_row(chart, row, self.at(i), fail)?;
        }
        Ok(())
    }

    /// One row at y = `at`: its trials, outliers crossed, its mean and interval, and a
    /// cell of two regimes' regimes.
    fn draw_row<DB: DrawingBackend, X>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>,
        row: &Row,
        at: f64,
        fail: &Fail,
    ) -> Result<(), PlotError>
    where
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let factor = self.scale.factor;
        let c = PALETTE[row.colour % PALETTE.len()];
        // Trials just above the row's centre, jittered deterministically so that equal
        // values stay visible; outliers crossed; the mean and its interval just below.
        let above = |k: usize| at + 0.12 + 0.05 * (k % 4) as f64;
        let points = row
            .cell
            .values
            .iter()
            .enumerate()
            .map(|(k, v)| Circle::new((v / factor, above(k)), 3, c.mix(0.55).filled()));
        chart.draw_series(points).map_err(|e| fail(&e))?;
        // outliers, set aside or flagged and kept (the default), crossed
        let aside = row
            .cell
            .set_aside
            .iter()
            .chain(row.cell.flagged_outliers())
            .map(|v| Cross::new((v / factor, above(0)), 5, BLACK.stroke_width(1)));
        chart.draw_series(aside).map_err(|e| fail(&e))?;
        let y = at - 0.12;
        let mean = row.cell.mean / factor;
        if let (Some(lo), Some(hi)) = (row.cell.ci_low, row.cell.ci_high) {
            let bar = ErrorBar::new_horizontal(y, lo / factor, mean, hi / factor, c.stroke_width(2), 8);
            chart.draw_series(std::iter::once(bar)).map_err(|e| fail(&e))?;
        }
        chart
            .draw_series(std::iter::once(TriangleMarker::new((mean, y), 6, c.filled())))
            .map_err(|e| fail(&e))?;
        // a cell of two regimes: each regime's mean and interval, grey, above its
        // trials, and the boundary between them across the row
        if let Some(r) = row.cell.regimes.as_deref() {
            let grey = RGBColor(90, 90, 90);
            let y = at + 0.38;
            for g in &r.regimes {
                let m = g.mean / factor;
                if let (Some(lo), Some(hi)) = (g.ci_low, g.ci_high) {
                    let bar =
                        ErrorBar::new_horizontal(y, lo / factor, m, hi / factor, grey.stroke_width(1), 5);
                    chart.draw_series(std::iter::once(bar)).map_err(|e| fail(&e))?;
                }
                chart
                    .draw_series(std::iter::once(Circle::new((m, y), 4, grey.stroke_width(1))))
                    .map_err(|e| fail(&e))?;
            }
            let b = r.boundary / factor;
            let line = PathElement::new(vec![(b, at - 0.3), (b, at + 0.45)], grey.stroke_width(1));
            chart.draw_series(std::iter::once(line)).map_err(|e| fail(&e))?;
        }
        Ok(())
    }
}

/// The legend on its line at `(x, y)`: a dot of each colour and the name it stands for.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    legend: &[String],
    (mut x, y): (i32, i32),
    fail: &Fail,
) -> Result<(), PlotError> {
    let left = ("sans-serif", 12).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    for (colour, name) in legend.iter().enumerate() {
        let c = PALETTE[colour % PALETTE.len()];
        root.draw(&Circle::new((x + 5, y), 5, c.filled())).map_err(|e| fail(&e))?;
        root.draw(&Text::new(name.clone(), (x + 14, y), left.clone())).map_err(|e| fail(&e))?;
        x += 14 + CHAR as i32 * name.chars().count() as i32 + 24;
    }
    Ok(())
}

/// Whether the values span so much that a linear axis would squash the lower ones: all
/// positive and the largest more than 10 times the smallest.
fn log_axis(low: f64, high: f64) -> bool {
    low > 0.0 && high / low > 10.0
}

/// The smallest and largest value to show: trials and interval bounds.
fn extent(rows: &[Row]) -> (f64, f64) {
    let values = rows.iter().flat_map(|r| {
        r.cell.values.iter().copied().chain(r.cell.ci_low).chain(r.cell.ci_high).chain([r.cell.mean])
    });
    values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// The SVG text of a drift's plot (docs/statistics.md, Drift within a session): every
/// trial of the session by when it started, as its difference from its cell's median in
/// %, the change's start as a vertical line, and the median of the trials on each side of
/// it as a horizontal one.
pub(crate) fn drift_plot(d: &DriftStat) -> Result<String, PlotError> {
    let fail = |e: &dyn std::fmt::Display| PlotError { metric: d.metric.clone(), detail: e.to_string() };
    let finite: Vec<(f64, f64)> =
        d.points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
    let last = finite.iter().map(|p| p.0).fold(0.0, f64::max);
    // minutes past ten of them
    let (per, unit) = if last > 600.0 { (60.0, "minutes") } else { (1.0, "seconds") };
    let (low, high) = finite.iter().fold((0.0f64, 0.0f64), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
    if low.abs().max(high.abs()) > MAX_MAGNITUDE {
        return Err(fail(&"a difference beyond what a plot can draw"));
    }
    let pad = ((high - low) * 0.08).max(0.5);
    let (y0, y1) = (low - pad, high + pad);
    let x1 = (last / per).max(f64::MIN_POSITIVE) * 1.03;
    let change = d.points.get(d.before).map(|p| p.0 / per);
    let median = |side: &[(f64, f64)]| {
        let mut ys: Vec<f64> = side.iter().map(|p| p.1).filter(|y| y.is_finite()).collect();
        (!ys.is_empty()).then(|| stats::elementary::median_in_place(&mut ys))
    };
    let cut = d.before.min(d.points.len());
    let sides =
        [(0.0, change, median(&d.points[..cut])), (change.unwrap_or(x1), Some(x1), median(&d.points[cut..]))];

    let height = 420;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let centre = ("sans-serif", 16).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
        let title = format!(
            "{} in session {} on {}: each trial against its cell's median",
            d.metric, d.session, d.host
        );
        root.draw(&Text::new(title, (WIDTH as i32 / 2, TITLE_Y), centre)).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_top(TITLE_Y + 18)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..x1, y0..y1)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc(format!("{unit} after the session's first trial"))
            .y_desc("% from the cell's median")
            .x_label_formatter(&|x| significant(*x, 3))
            .y_label_formatter(&|y| significant(*y, 3))
            .draw()
            .map_err(|e| fail(&e))?;
        let grey = RGBColor(150, 150, 150);
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(0.0, 0.0), (x1, 0.0)], grey.stroke_width(1))))
            .map_err(|e| fail(&e))?;
        let dots = finite.iter().map(|&(x, y)| Circle::new((x / per, y), 3, PALETTE[0].mix(0.6).filled()));
        chart.draw_series(dots).map_err(|e| fail(&e))?;
        for (from, to, m) in sides {
            if let (Some(to), Some(m)) = (to, m) {
                let line = PathElement::new(vec![(from, m), (to, m)], BLACK.stroke_width(2));
                chart.draw_series(std::iter::once(line)).map_err(|e| fail(&e))?;
            }
        }
        if let Some(x) = change {
            let line = PathElement::new(vec![(x, y0), (x, y1)], PALETTE[5].stroke_width(2));
            chart.draw_series(std::iter::once(line)).map_err(|e| fail(&e))?;
            let left = ("sans-serif", 12).into_font().color(&PALETTE[5]).pos(Pos::new(HPos::Left, VPos::Top));
            let (px, py) = chart.backend_coord(&(x, y1));
            root.draw(&Text::new(
                format!("the change, after {} of {} trials", d.before, d.trials),
                (px + 4, py + 2),
                left,
            ))
            .map_err(|e| fail(&e))?;
        }
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}

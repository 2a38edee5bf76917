//! Charts as inline SVG, drawn here rather than by a script library: the report must open
//! offline, years later, with nothing fetched (a CDN link is a broken chart in an archived CI
//! artifact).
//!
//! One kind of chart covers every plot of the report: numbered axes with grid lines and a label
//! each, any number of line series (solid or dashed, with a legend) and optional bars. The x
//! axis is linear in whatever the caller plots; a log axis (the percentile spectrum, the
//! histogram) is the caller's transform plus its own tick labels.

use std::fmt::Write as _;

use super::escape::escape;

/// Size of every chart, in SVG units (the page scales them).
pub const WIDTH: f64 = 640.0;
pub const HEIGHT: f64 = 280.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 46.0;

/// Colours of successive series, distinguishable in print and for common colour blindness.
pub const PALETTE: [&str; 8] = [
    "#2a6fdb", "#e8710a", "#1e8e3e", "#d93025", "#9334e6", "#12a4af", "#795548", "#5f6368",
];

/// One line.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub color: &'static str,
    pub dashed: bool,
}

/// A chart to draw.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Where the x axis ends (it starts at `x_min`); `None`: the data's largest x.
    pub x_max: Option<f64>,
    pub x_min: f64,
    /// Tick positions and labels of the x axis; empty: evenly spaced numbers.
    pub x_ticks: Vec<(f64, String)>,
    pub series: Vec<Series>,
    /// Bars `(x from, x to, height)`.
    pub bars: Vec<(f64, f64, f64)>,
    /// Extra class on the `<svg>` (tests and styles find charts by it).
    pub class: &'static str,
}

impl Chart {
    /// The `<figure>` with the chart.
    pub fn render(&self) -> String {
        let data_x = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.bars.iter().map(|b| b.1));
        let x_max = self
            .x_max
            .unwrap_or_else(|| data_x.fold(self.x_min, f64::max));
        let x_max = if x_max > self.x_min {
            x_max
        } else {
            self.x_min + 1.0
        };
        let y_data = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(self.bars.iter().map(|b| b.2))
            .filter(|v| v.is_finite())
            .fold(0.0_f64, f64::max);
        let (y_step, y_max) = nice_axis(y_data);
        let (w, h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let x_min = self.x_min;
        let sx = |x: f64| LEFT + (x - x_min) / (x_max - x_min) * w;
        let sy = |y: f64| TOP + h - (y.max(0.0) / y_max).min(1.0) * h;

        let mut svg = String::new();
        let _ = write!(
            svg,
            "<figure><figcaption>{title}</figcaption>\
             <svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart {class}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
             role=\"img\" aria-label=\"{title}\">",
            title = escape(&self.title),
            class = self.class,
        );
        // Y grid and labels.
        let mut y = 0.0;
        while y <= y_max * (1.0 + 1e-9) {
            let py = sy(y);
            let _ = write!(
                svg,
                "<line class=\"grid\" x1=\"{LEFT}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                LEFT + w,
                LEFT - 6.0,
                py + 4.0,
                tick_label(y, y_step)
            );
            y += y_step;
        }
        // X ticks.
        let ticks = if self.x_ticks.is_empty() {
            let (step, _) = nice_axis(x_max - x_min);
            let mut ticks = Vec::new();
            let mut x = x_min;
            while x <= x_max * (1.0 + 1e-9) {
                ticks.push((x, tick_label(x, step)));
                x += step;
            }
            ticks
        } else {
            self.x_ticks.clone()
        };
        for (x, label) in ticks.iter().filter(|(x, _)| *x >= x_min && *x <= x_max) {
            let px = sx(*x);
            let _ = write!(
                svg,
                "<line class=\"grid\" x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{:.1}\"/>\
                 <text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                TOP + h,
                TOP + h + 16.0,
                escape(label)
            );
        }
        // Axes and their labels.
        let _ = write!(
            svg,
            "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{bottom:.1}\" x2=\"{right:.1}\" y2=\"{bottom:.1}\"/>\
             <line class=\"axis\" x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{bottom:.1}\"/>\
             <text class=\"label\" x=\"{mid_x:.1}\" y=\"{below:.1}\" text-anchor=\"middle\">{x_label}</text>\
             <text class=\"label\" transform=\"translate(14 {mid_y:.1}) rotate(-90)\" text-anchor=\"middle\">{y_label}</text>",
            bottom = TOP + h,
            right = LEFT + w,
            mid_x = LEFT + w / 2.0,
            below = HEIGHT - 8.0,
            mid_y = TOP + h / 2.0,
            x_label = escape(&self.x_label),
            y_label = escape(&self.y_label),
        );
        for &(from, to, height) in &self.bars {
            let (x0, x1) = (sx(from), sx(to));
            let top = sy(height);
            let _ = write!(
                svg,
                "<rect class=\"bar\" x=\"{x0:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
                (x1 - x0 - 1.0).max(1.0),
                (TOP + h - top).max(0.0)
            );
        }
        for series in &self.series {
            if series.points.is_empty() {
                continue;
            }
            let coords: Vec<String> = series
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&(x, y)| format!("{:.1},{:.1}", sx(x.min(x_max)), sy(y)))
                .collect();
            let _ = write!(
                svg,
                "<polyline class=\"series\" stroke=\"{}\"{} points=\"{}\"><title>{}</title></polyline>",
                series.color,
                if series.dashed {
                    " stroke-dasharray=\"6 4\""
                } else {
                    ""
                },
                coords.join(" "),
                escape(&series.name)
            );
        }
        // Legend, top right, when there is more than one line or a named one.
        let named: Vec<&Series> = self.series.iter().filter(|s| !s.name.is_empty()).collect();
        let mut lx = LEFT + w;
        for series in named.iter().rev() {
            let text_width = series.name.chars().count() as f64 * 6.2;
            lx -= text_width + 30.0;
            let _ = write!(
                svg,
                "<line x1=\"{lx:.1}\" y1=\"14\" x2=\"{:.1}\" y2=\"14\" stroke=\"{}\" stroke-width=\"3\"{}/>\
                 <text x=\"{:.1}\" y=\"18\">{}</text>",
                lx + 18.0,
                series.color,
                if series.dashed {
                    " stroke-dasharray=\"5 3\""
                } else {
                    ""
                },
                lx + 22.0,
                escape(&series.name)
            );
        }
        svg.push_str("</svg></figure>\n");
        svg
    }
}

/// A tick step of 1, 2 or 5 × 10^k giving about five intervals, and the axis top (a multiple
/// of the step at or above `max`).
pub fn nice_axis(max: f64) -> (f64, f64) {
    if !max.is_finite() || max <= 0.0 {
        return (0.25, 1.0);
    }
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let top = (max / step - 1e-9).ceil().max(1.0) * step;
    (step, top)
}

/// A tick's text: as many decimals as the step needs, thousands grouped.
pub fn tick_label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    crate::bench::format::group_thousands(&format!("{value:.decimals$}"))
}

/// Step-line points for per-interval values: each `(end, length, value)` holds its value from
/// `end - length` to `end`, so the line starts at t = 0 and shows seconds as they were.
pub fn steps(intervals: &[(f64, f64, f64)]) -> Vec<(f64, f64)> {
    intervals
        .iter()
        .flat_map(|&(end, length, value)| [((end - length).max(0.0), value), (end, value)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_get_round_steps() {
        assert_eq!(nice_axis(10.0), (2.0, 10.0));
        assert_eq!(nice_axis(2300.0), (500.0, 2500.0));
        assert_eq!(nice_axis(0.37), (0.1, 0.4));
        assert_eq!(nice_axis(0.0), (0.25, 1.0));
        assert_eq!(tick_label(2500.0, 500.0), "2,500");
        assert_eq!(tick_label(0.30000000000000004, 0.1), "0.3");
        assert_eq!(tick_label(0.05, 0.05), "0.05");
    }

    #[test]
    fn a_chart_has_axes_ticks_labels_and_lines() {
        let chart = Chart {
            title: "Requests/s".into(),
            x_label: "time (s)".into(),
            y_label: "req/s".into(),
            series: vec![Series {
                name: "achieved".into(),
                points: steps(&[(1.0, 1.0, 100.0), (2.0, 1.0, 300.0)]),
                color: PALETTE[0],
                dashed: false,
            }],
            class: "timeline",
            ..Chart::default()
        };
        let svg = chart.render();
        assert!(svg.contains("class=\"chart timeline\""));
        assert!(svg.contains(">time (s)<") && svg.contains(">req/s<"));
        // 0, 100, 200, 300 on y; the line starts at x = 0.
        assert!(svg.matches("text-anchor=\"end\"").count() >= 4, "{svg}");
        assert!(svg.contains(&format!("points=\"{LEFT:.1},")), "{svg}");
        assert!(svg.contains("<polyline"));
    }
}

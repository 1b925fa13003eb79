//! The report's charts as SVG: grouped bars with min/max whiskers (linear or log scale) and
//! line charts (latency CDFs, sweeps). Data marks carry the classes `bar` and `series`, so
//! tests can check that a chart shows something.

use super::svg::{Scale, Svg, color, fmt_num, fmt_us};

/// One bar: its height and the whisker's ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Bar {
    pub fn single(v: f64) -> Bar {
        Bar {
            value: v,
            lo: v,
            hi: v,
        }
    }
}

/// How axis values are printed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    Micros,
    Plain,
}

impl Unit {
    fn fmt(self, v: f64) -> String {
        match self {
            Unit::Micros => fmt_us(v),
            Unit::Plain => fmt_num(v),
        }
    }
}

pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub unit: Unit,
    pub log: bool,
    /// Categories along x (e.g. workloads).
    pub groups: Vec<String>,
    /// Bars within a group (e.g. systems), one colour each.
    pub series: Vec<String>,
    /// `values[group][series]`; `None` leaves a gap.
    pub values: Vec<Vec<Option<Bar>>>,
}

const W: f64 = 940.0;
const H: f64 = 420.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 70.0;

fn frame(svg: &mut Svg, title: &str, y_label: &str, scale: &Scale, unit: Unit) {
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    svg.text(W / 2.0 - RIGHT / 2.0, 22.0, title, "middle", 15.0, 0.0);
    svg.text(18.0, TOP + ph / 2.0, y_label, "middle", 12.0, -90.0);
    for t in scale.ticks() {
        let y = TOP + ph * (1.0 - scale.norm(t));
        svg.line("grid", (LEFT, y), (LEFT + pw, y), "#dddddd", 1.0);
        svg.text(LEFT - 6.0, y + 4.0, &unit.fmt(t), "end", 11.0, 0.0);
    }
    svg.line(
        "axis",
        (LEFT, TOP + ph),
        (LEFT + pw, TOP + ph),
        "#333333",
        1.0,
    );
    svg.line("axis", (LEFT, TOP), (LEFT, TOP + ph), "#333333", 1.0);
}

/// `dashed`: `None` for bars (colour boxes), else whether each line is dashed.
fn legend(svg: &mut Svg, names: &[String], dashed: Option<&[bool]>) {
    let x = W - RIGHT + 14.0;
    for (i, n) in names.iter().enumerate() {
        let y = TOP + 8.0 + i as f64 * 18.0;
        if let Some(d) = dashed {
            let dash = d.get(i).copied().unwrap_or(false);
            svg.polyline("legend", &[(x, y), (x + 14.0, y)], color(i), dash);
        } else {
            svg.rect("legend", [x, y - 6.0, 14.0, 12.0], color(i), "");
        }
        svg.text(x + 20.0, y + 4.0, n, "start", 11.0, 0.0);
    }
}

fn value_scale(log: bool, lo: f64, hi: f64) -> Scale {
    if log {
        Scale::log_covering(lo, hi)
    } else {
        Scale::linear_to(hi)
    }
}

pub fn bar_chart(c: &BarChart) -> String {
    let bars = c.values.iter().flatten().flatten();
    let hi = bars.clone().map(|b| b.hi.max(b.value)).fold(0.0, f64::max);
    let lo = bars
        .map(|b| b.lo.min(b.value))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let scale = value_scale(c.log, lo, hi);
    let mut svg = Svg::new(W, H);
    frame(&mut svg, &c.title, &c.y_label, &scale, c.unit);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let gw = pw / c.groups.len().max(1) as f64;
    let bw = (gw * 0.8) / c.series.len().max(1) as f64;
    let y_of = |v: f64| TOP + ph * (1.0 - scale.norm(v));
    for (g, name) in c.groups.iter().enumerate() {
        let gx = LEFT + g as f64 * gw;
        svg.text(gx + gw / 2.0, TOP + ph + 16.0, name, "middle", 11.0, 0.0);
        for (s, series) in c.series.iter().enumerate() {
            let Some(b) = c.values.get(g).and_then(|r| r.get(s)).copied().flatten() else {
                continue;
            };
            let x = gx + gw * 0.1 + s as f64 * bw;
            let y = y_of(b.value);
            let tip = format!(
                "{name} / {series}: {} (min {}, max {})",
                c.unit.fmt(b.value),
                c.unit.fmt(b.lo),
                c.unit.fmt(b.hi)
            );
            svg.rect("bar", [x, y, bw * 0.92, TOP + ph - y], color(s), &tip);
            if b.hi > b.lo {
                let cx = x + bw * 0.46;
                let (y1, y2) = (y_of(b.lo), y_of(b.hi));
                svg.line("whisker", (cx, y1), (cx, y2), "#222222", 1.0);
                let cap = bw * 0.2;
                svg.line("whisker", (cx - cap, y1), (cx + cap, y1), "#222222", 1.0);
                let cap = bw * 0.2;
                svg.line("whisker", (cx - cap, y2), (cx + cap, y2), "#222222", 1.0);
            }
        }
    }
    legend(&mut svg, &c.series, None);
    svg.finish()
}

pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_unit: Unit,
    pub y_unit: Unit,
    pub x_log: bool,
    pub y_log: bool,
    /// Fixed y range, e.g. (0, 1) for a CDF; `None` fits the data.
    pub y_range: Option<(f64, f64)>,
    pub series: Vec<Series>,
}

pub fn line_chart(c: &LineChart) -> String {
    let pts = c.series.iter().flat_map(|s| s.points.iter());
    let fit = |f: fn(&(f64, f64)) -> f64| {
        let vals: Vec<f64> = pts.clone().map(f).filter(|v| v.is_finite()).collect();
        let hi = vals.iter().copied().fold(0.0, f64::max);
        let lo = vals
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        (lo, hi)
    };
    let (xlo, xhi) = fit(|p| p.0);
    let xs = value_scale(c.x_log, xlo, xhi);
    let ys = match c.y_range {
        Some((lo, hi)) if c.y_log => Scale::Log { min: lo, max: hi },
        Some((lo, hi)) => Scale::Linear { min: lo, max: hi },
        None => {
            let (ylo, yhi) = fit(|p| p.1);
            value_scale(c.y_log, ylo, yhi)
        }
    };
    let mut svg = Svg::new(W, H);
    frame(&mut svg, &c.title, &c.y_label, &ys, c.y_unit);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    for t in xs.ticks() {
        let x = LEFT + pw * xs.norm(t);
        svg.line("grid", (x, TOP), (x, TOP + ph), "#eeeeee", 1.0);
        svg.text(x, TOP + ph + 16.0, &c.x_unit.fmt(t), "middle", 11.0, 0.0);
    }
    svg.text(LEFT + pw / 2.0, H - 24.0, &c.x_label, "middle", 12.0, 0.0);
    for (i, s) in c.series.iter().enumerate() {
        let p: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!c.x_log || *x > 0.0))
            .filter(|(_, y)| !c.y_log || *y > 0.0)
            .map(|&(x, y)| (LEFT + pw * xs.norm(x), TOP + ph * (1.0 - ys.norm(y))))
            .collect();
        if p.is_empty() {
            continue;
        }
        svg.polyline("series", &p, color(i), s.dashed);
        if p.len() <= 12 {
            for &(x, y) in &p {
                svg.circle("point", x, y, 3.0, color(i));
            }
        }
    }
    let names: Vec<String> = c.series.iter().map(|s| s.name.clone()).collect();
    let dashed: Vec<bool> = c.series.iter().map(|s| s.dashed).collect();
    legend(&mut svg, &names, Some(&dashed));
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_have_marks_whiskers_and_legends() {
        let c = BarChart {
            title: "t & <x>".into(),
            y_label: "P99".into(),
            unit: Unit::Micros,
            log: true,
            groups: vec!["tpcc".into(), "vd".into()],
            series: vec!["a".into(), "b".into()],
            values: vec![
                vec![
                    Some(Bar {
                        value: 100.0,
                        lo: 50.0,
                        hi: 900.0,
                    }),
                    None,
                ],
                vec![Some(Bar::single(2_000.0)), Some(Bar::single(30.0))],
            ],
        };
        let s = bar_chart(&c);
        assert_eq!(s.matches("class=\"bar\"").count(), 3);
        assert_eq!(s.matches("class=\"whisker\"").count(), 3);
        assert!(s.contains("t &amp; &lt;x&gt;") && s.ends_with("</svg>\n"));
        let l = line_chart(&LineChart {
            title: "cdf".into(),
            x_label: "latency".into(),
            y_label: "share".into(),
            x_unit: Unit::Micros,
            y_unit: Unit::Plain,
            x_log: true,
            y_log: false,
            y_range: Some((0.0, 1.0)),
            series: vec![Series {
                name: "x".into(),
                points: vec![(10.0, 0.1), (100.0, 0.5), (0.0, 0.7), (1e4, 1.0)],
                dashed: false,
            }],
        });
        assert_eq!(l.matches("class=\"series\"").count(), 1);
        assert_eq!(
            l.matches("class=\"point\"").count(),
            3,
            "zero dropped on a log axis"
        );
    }
}

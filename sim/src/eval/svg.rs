//! A minimal SVG writer and axis scales: enough for bar and line charts, no dependencies,
//! deterministic output (numbers printed with fixed precision).

use std::fmt::Write;

/// Colours for series, chosen to stay distinguishable in print (Okabe-Ito).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Escapes text for use in element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

pub struct Svg {
    buf: String,
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Svg {
        let mut buf = String::new();
        let _ = write!(
            buf,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
             width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" \
             font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n\
             <rect x=\"0\" y=\"0\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"white\"/>\n"
        );
        Svg { buf }
    }

    /// `r`: x, y, width, height.
    pub fn rect(&mut self, class: &str, r: [f64; 4], fill: &str, title: &str) {
        let [x, y, w, h] = r;
        let _ = write!(
            self.buf,
            "<rect class=\"{class}\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{fill}\">",
            w.max(0.0),
            h.max(0.0)
        );
        if title.is_empty() {
            self.buf.push_str("</rect>\n");
        } else {
            let _ = writeln!(self.buf, "<title>{}</title></rect>", esc(title));
        }
    }

    pub fn line(&mut self, class: &str, from: (f64, f64), to: (f64, f64), stroke: &str, w: f64) {
        let ((x1, y1), (x2, y2)) = (from, to);
        let _ = writeln!(
            self.buf,
            "<line class=\"{class}\" x1=\"{x1:.2}\" y1=\"{y1:.2}\" x2=\"{x2:.2}\" y2=\"{y2:.2}\" stroke=\"{stroke}\" stroke-width=\"{w}\"/>"
        );
    }

    pub fn polyline(&mut self, class: &str, pts: &[(f64, f64)], stroke: &str, dashed: bool) {
        let mut p = String::new();
        for (x, y) in pts {
            let _ = write!(p, "{x:.2},{y:.2} ");
        }
        let dash = if dashed {
            " stroke-dasharray=\"6 3\""
        } else {
            ""
        };
        let _ = writeln!(
            self.buf,
            "<polyline class=\"{class}\" points=\"{}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"1.8\"{dash}/>",
            p.trim_end()
        );
    }

    pub fn circle(&mut self, class: &str, x: f64, y: f64, r: f64, fill: &str) {
        let _ = writeln!(
            self.buf,
            "<circle class=\"{class}\" cx=\"{x:.2}\" cy=\"{y:.2}\" r=\"{r}\" fill=\"{fill}\"/>"
        );
    }

    /// `anchor`: start, middle or end. `rotate`: degrees about (x, y).
    pub fn text(&mut self, x: f64, y: f64, s: &str, anchor: &str, size: f64, rotate: f64) {
        let tr = if rotate != 0.0 {
            format!(" transform=\"rotate({rotate} {x:.2} {y:.2})\"")
        } else {
            String::new()
        };
        let _ = writeln!(
            self.buf,
            "<text x=\"{x:.2}\" y=\"{y:.2}\" text-anchor=\"{anchor}\" font-size=\"{size}\"{tr}>{}</text>",
            esc(s)
        );
    }

    pub fn finish(mut self) -> String {
        self.buf.push_str("</svg>\n");
        self.buf
    }
}

/// A value axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear {
        min: f64,
        max: f64,
    },
    /// `min` > 0.
    Log {
        min: f64,
        max: f64,
    },
}

impl Scale {
    /// A linear scale from 0 to a round number above `max`.
    pub fn linear_to(max: f64) -> Scale {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        let step = nice_step(max / 5.0);
        Scale::Linear {
            min: 0.0,
            max: (max / step).ceil() * step,
        }
    }

    /// A log scale over whole decades covering `[lo, hi]` (non-positive values ignored).
    pub fn log_covering(lo: f64, hi: f64) -> Scale {
        let lo = if lo.is_finite() && lo > 0.0 { lo } else { 1.0 };
        let hi = if hi.is_finite() && hi > lo {
            hi
        } else {
            lo * 10.0
        };
        Scale::Log {
            min: 10f64.powf(lo.log10().floor()),
            max: 10f64.powf(hi.log10().ceil()),
        }
    }

    /// Position of `v` on the axis, 0 at `min` and 1 at `max` (clamped).
    pub fn norm(&self, v: f64) -> f64 {
        let t = match *self {
            Scale::Linear { min, max } => (v - min) / (max - min),
            Scale::Log { min, max } => {
                if v <= 0.0 {
                    0.0
                } else {
                    (v.log10() - min.log10()) / (max.log10() - min.log10())
                }
            }
        };
        if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    pub fn ticks(&self) -> Vec<f64> {
        match *self {
            Scale::Linear { min, max } => {
                let step = nice_step((max - min) / 5.0);
                let mut v = Vec::new();
                let mut t = (min / step).ceil() * step;
                while t <= max + step * 1e-9 {
                    v.push(t);
                    t += step;
                }
                v
            }
            Scale::Log { min, max } => {
                let (a, b) = (min.log10().round() as i32, max.log10().round() as i32);
                (a..=b).map(|e| 10f64.powi(e)).collect()
            }
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

/// Microseconds in a short unit: 50us, 1.5ms, 2s.
pub fn fmt_us(us: f64) -> String {
    let num = |v: f64| {
        if v >= 100.0 || v == v.round() {
            format!("{v:.0}")
        } else if v >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        }
    };
    if us >= 1e6 {
        format!("{}s", num(us / 1e6))
    } else if us >= 1e3 {
        format!("{}ms", num(us / 1e3))
    } else {
        format!("{}us", num(us))
    }
}

/// A plain number with at most 3 significant decimals.
pub fn fmt_num(v: f64) -> String {
    if v == v.round() && v.abs() < 1e9 {
        format!("{v:.0}")
    } else if v.abs() >= 0.01 {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        format!("{v:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_and_ticks() {
        let s = Scale::linear_to(7.3);
        assert_eq!(s, Scale::Linear { min: 0.0, max: 8.0 });
        assert_eq!(s.ticks(), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        let l = Scale::log_covering(35.0, 2_500.0);
        assert_eq!(
            l,
            Scale::Log {
                min: 10.0,
                max: 10_000.0
            }
        );
        assert_eq!(l.ticks(), vec![10.0, 100.0, 1_000.0, 10_000.0]);
        assert!((l.norm(100.0) - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(l.norm(0.0), 0.0);
        assert_eq!(Scale::linear_to(0.0), Scale::Linear { min: 0.0, max: 1.0 });
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_us(36.0), "36us");
        assert_eq!(fmt_us(1_500.0), "1.5ms");
        assert_eq!(fmt_us(2_000_000.0), "2s");
        assert_eq!(fmt_num(0.25), "0.25");
        assert_eq!(fmt_num(3.0), "3");
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}

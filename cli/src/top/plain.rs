//! `top` when stdout is not a terminal (or with `--once`): the same tables as text, one
//! snapshot per interval, each preceded by its title line, separated by a blank line.

use super::model::View;
use super::table;

/// Width of the plain output (what an 80-column terminal or a log shows whole).
const WIDTH: usize = 80;

pub fn render(v: &View) -> String {
    let mut out = vec![table::title(v)];
    out.extend(table::text(&table::members(v), WIDTH));
    out.push(String::new());
    out.extend(table::text(&table::volumes(v), WIDTH));
    for p in table::progress(v) {
        let bar_w = 20;
        let filled = ((p.done * bar_w as f64).round() as usize).min(bar_w);
        out.push(table::fit(
            &format!(
                "{} [{}{}] {:>3.0}% {}",
                p.label,
                "#".repeat(filled),
                ".".repeat(bar_w - filled),
                p.done * 100.0,
                p.words
            ),
            WIDTH,
        ));
    }
    out.push(table::fit(&table::steering(v), WIDTH));
    out.join("\n") + "\n"
}

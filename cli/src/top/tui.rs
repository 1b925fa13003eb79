//! `top` on a terminal: ratatui tables redrawn every interval, `q` (or Esc, Ctrl-C) quits.
//! Laid out for 80x24: title, members (one row each), volumes, progress bars, steering.

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Gauge, Paragraph, Row, Table};

use super::model::View;
use super::table;

/// Runs until `q`; `next` fetches the next view (an error is shown, and retried).
pub fn run(
    interval: Duration,
    mut next: impl FnMut() -> anyhow::Result<View>,
) -> anyhow::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = (|| -> anyhow::Result<()> {
        let mut shown: Result<View, String> = next().map_err(|e| format!("{e:#}"));
        loop {
            terminal.draw(|f| draw(f, &shown))?;
            let until = Instant::now() + interval;
            while let Some(left) = until.checked_duration_since(Instant::now()) {
                if event::poll(left)?
                    && let Event::Key(k) = event::read()?
                    && k.kind == KeyEventKind::Press
                {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c {
                        return Ok(());
                    }
                }
            }
            shown = next().map_err(|e| format!("{e:#}"));
        }
    })();
    ratatui::restore();
    result
}

fn table_widget<'a>(
    t: &'a table::Table,
    title: &'a str,
    highlight: impl Fn(&[String]) -> Style,
) -> Table<'a> {
    let widths: Vec<Constraint> = t
        .widths
        .iter()
        .map(|&w| {
            if w == 0 {
                Constraint::Fill(1)
            } else {
                Constraint::Length(w)
            }
        })
        .collect();
    let cell = |i: usize, s: &str, w: u16| {
        let text = if w == 0 {
            s.to_string()
        } else {
            table::fit(s, w as usize)
        };
        let line = if t.right[i] {
            Line::from(text).right_aligned()
        } else {
            Line::from(text)
        };
        Cell::from(line)
    };
    let header = Row::new(
        t.header
            .iter()
            .enumerate()
            .map(|(i, h)| cell(i, h, t.widths[i])),
    )
    .style(Style::default().add_modifier(Modifier::BOLD));
    let rows = t.rows.iter().map(|r| {
        Row::new(r.iter().enumerate().map(|(i, c)| cell(i, c, t.widths[i]))).style(highlight(r))
    });
    Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .block(Block::bordered().title(title))
}

fn draw(f: &mut Frame, view: &Result<View, String>) {
    let area = f.area();
    let v = match view {
        Ok(v) => v,
        Err(e) => {
            f.render_widget(
                Paragraph::new(format!("fusionraid top: {e}\n\nretrying; q quits")),
                area,
            );
            return;
        }
    };
    let members = table::members(v);
    let volumes = table::volumes(v);
    let progress = table::progress(v);
    let [title, m_area, v_area, p_area, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(members.rows.len() as u16 + 3),
        Constraint::Length(volumes.rows.len() as u16 + 3),
        Constraint::Length(progress.len() as u16),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(
        Paragraph::new(table::title(v)).style(Style::default().add_modifier(Modifier::BOLD)),
        title,
    );
    let state_style = |r: &[String]| match r.get(1).map(String::as_str) {
        Some("spiking") => Style::default().fg(Color::Yellow),
        Some("failed" | "missing") => Style::default().fg(Color::Red),
        _ => Style::default(),
    };
    f.render_widget(
        table_widget(&members, " members (device level) ", state_style),
        m_area,
    );
    f.render_widget(
        table_widget(&volumes, " volumes (as users see them) ", |_| {
            Style::default()
        }),
        v_area,
    );
    for (i, p) in progress.iter().enumerate() {
        let row = Rect {
            y: p_area.y + i as u16,
            height: 1,
            ..p_area
        };
        if row.y >= p_area.bottom() {
            break;
        }
        let [name, bar] =
            Layout::horizontal([Constraint::Length(16), Constraint::Fill(1)]).areas(row);
        f.render_widget(Paragraph::new(table::fit(&p.label, 15)), name);
        f.render_widget(
            Gauge::default()
                .ratio(p.done.clamp(0.0, 1.0))
                .label(table::fit(
                    &format!("{:.0}% {}", p.done * 100.0, p.words),
                    bar.width as usize,
                ))
                .gauge_style(Style::default().fg(Color::Cyan)),
            bar,
        );
    }
    f.render_widget(
        Paragraph::new(format!("{}   q: quit", table::steering(v))),
        foot,
    );
}

//! Plain-text rendering of an [`SloResult`].

use std::fmt::Write;

use super::target::latency;
use super::{Probe, SloResult, Verdict};
use crate::stats::{pool_line, source_text};

impl Verdict {
    /// One word for the table.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Dropped => "dropped",
            Verdict::FellBehind => "behind",
            Verdict::Latency => "latency",
        }
    }
}

impl SloResult {
    /// The runs, one line each, then what the search found.
    pub fn to_table(&self) -> String {
        let mut o = String::new();
        let s = &self.scenario;
        let _ = writeln!(o, "{}", pool_line(s));
        let _ = writeln!(
            o,
            "{}, rates scaled together | {:.3} s of arrivals per run, the first {:.3} s not \
             measured",
            source_text(&s.source),
            s.duration_s.unwrap_or(0.0),
            s.warmup_s
        );
        let _ = writeln!(
            o,
            "SLO {}; a run also fails it when it drops requests or answers fewer than {:.0}% \
             of its arrivals before they stop (\"behind\")",
            self.target,
            self.min_answered * 100.0
        );
        let label = self.target.label();
        let _ = writeln!(
            o,
            "  {:>3} {:>13} {:>13} {:>10} {:>8}  verdict",
            "run", "offered IOPS", "achieved IOPS", label, "dropped"
        );
        for (i, p) in self.probes.iter().enumerate() {
            let _ = writeln!(
                o,
                "  {:>3} {:>13.0} {:>13.0} {:>10} {:>8}  {}",
                i + 1,
                p.offered_iops,
                p.achieved_iops,
                latency(p.latency_us),
                p.dropped,
                p.verdict.word()
            );
        }
        o.push_str(&self.conclusion());
        o
    }

    fn conclusion(&self) -> String {
        let label = self.target.label();
        let mut o = String::new();
        let Some(b) = &self.best else {
            let lowest = self
                .probes
                .iter()
                .map(|p| p.offered_iops)
                .fold(f64::MAX, f64::min);
            let _ = writeln!(
                o,
                "no load met the SLO (the lowest tried: {lowest:.0} IOPS)"
            );
            self.note_line(&mut o);
            return o;
        };
        let _ = writeln!(
            o,
            "max load at the SLO: {:.0} IOPS offered, {:.0} achieved ({label} {})",
            b.offered_iops,
            b.achieved_iops,
            latency(b.latency_us)
        );
        match (&self.fails_above, self.bracket()) {
            (Some(f), Some(w)) => {
                let _ = writeln!(
                    o,
                    "  {:.0} IOPS (+{:.1}%) fails it: {}",
                    f.offered_iops,
                    w * 100.0,
                    why(f, &label)
                );
            }
            _ => {
                let _ = writeln!(
                    o,
                    "  every load tried met it: the maximum is higher (more runs, or a higher \
                     start)"
                );
            }
        }
        if let (Some(ideal), Some(share)) = (self.ideal_iops, self.of_ideal) {
            let _ = writeln!(
                o,
                "achieved / ideal: {:.0} / {ideal:.0} IOPS = {:.1}%",
                b.achieved_iops,
                share * 100.0
            );
        }
        self.note_line(&mut o);
        o
    }

    fn note_line(&self, o: &mut String) {
        if let Some(n) = &self.note {
            let _ = writeln!(o, "  stopped: {n}");
        }
    }
}

/// Why a run failed the target, in words.
fn why(p: &Probe, label: &str) -> String {
    match p.verdict {
        Verdict::Pass => "it passed".into(),
        Verdict::Dropped => format!("{} requests dropped", p.dropped),
        Verdict::FellBehind => format!(
            "{:.0} IOPS answered while {:.0} were offered",
            p.achieved_iops, p.offered_iops
        ),
        Verdict::Latency => format!("{label} {}", latency(p.latency_us)),
    }
}

//! The planner's answer as text.

use std::fmt::Write;

use super::{Target, VolumePlan, recommend, trust};

fn si(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}K", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// One table per volume, the recommendation for `target` under it, and the error band.
pub fn to_table(plans: &[VolumePlan], devices: &str, target: Option<Target>) -> String {
    let mut o = String::new();
    for p in plans {
        let _ = writeln!(
            o,
            "volume {} ({}, {} GiB, spare {} configured) on {devices}: sustained 4 KiB random \
             overwrites",
            p.volume,
            p.level,
            p.size_bytes as f64 / (1u64 << 30) as f64,
            p.configured
        );
        let _ = writeln!(
            o,
            "  {:<12} {:>5} {:>6} {:>6} {:>8} {:>7} {:>6} {:>9} {:>9} {:>6} {:>9} {:>6}  bound",
            "spare",
            "fits",
            "util",
            "moves",
            "written",
            "read",
            "flash",
            "dev/user",
            "IOPS",
            "x",
            "members",
            "f"
        );
        let base = p.points.first().map(|x| x.iops);
        for x in &p.points {
            let share = if x.share == "auto" {
                format!("auto ({:.3})", x.spare)
            } else {
                x.share.clone()
            };
            let speedup = base.map_or("-".into(), |b| format!("{:.2}", x.iops / b));
            let _ = writeln!(
                o,
                "  {share:<12} {:>5} {:>6.3} {:>6.2} {:>8.2} {:>7.2} {:>6.2} {:>9.2} {:>9} {speedup:>6} {:>9} {:>6.2}  {}",
                if x.fits { "yes" } else { "no" },
                x.utilisation,
                x.moves,
                x.written,
                x.read,
                x.flash_wa,
                x.flash_bytes_per_user_byte(),
                si(x.iops),
                si(x.member_iops),
                x.f,
                x.bound
            );
        }
        if let Some(t) = target {
            let _ = match recommend(p, t) {
                Some(x) => writeln!(o, "  recommended: spare {} ({})", x.spare, target_text(t)),
                None => writeln!(
                    o,
                    "  no priced share that fits meets {} (larger members, a smaller volume, \
                     or more members)",
                    target_text(t)
                ),
            };
        }
        o.push('\n');
    }
    let _ = writeln!(
        o,
        "written/read: device pages per user page (replicas, conversion, cleaning); flash: \
         programs per page the members are sent (their GC); dev/user: flash bytes per user \
         byte; x: IOPS over the first row's; members: the IOPS the members alone allow (Pitfalls: \
         wmax / (written + read f) per member); f: wmax/rmax of the slowest member."
    );
    let _ = writeln!(o, "{}", trust::band_line());
    if plans.iter().any(|p| p.level.starts_with("mirror")) {
        let _ = writeln!(o, "{}", trust::mirror_line());
    }
    o
}

fn target_text(t: Target) -> String {
    match t {
        Target::Iops(n) => format!("at least {} IOPS", si(n)),
        Target::WriteAmp(a) => format!("at most {a} device bytes per user byte"),
    }
}

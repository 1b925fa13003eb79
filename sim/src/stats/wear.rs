//! How fast each member wears and when, at that pace, the members wear out: the figure
//! wear-aware placement (`fusionraid_core::policy::WearLadder`) exists to move. Members of
//! one array written alike wear out together; what matters for a rebuild is the time
//! between one wear-out and the next.

use fusionraid_core::policy::WearLadder;
use serde::Serialize;

/// Wear over the run, per member and as wear-out times.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct WearReport {
    /// Share of rated life each member used during the run (after the prefill).
    pub used: Vec<f64>,
    /// Hours from new to worn out for each member, at the pace of the run's load (0: the
    /// member did not wear).
    pub hours_to_wear_out: Vec<f64>,
    /// With wear-aware placement: how fast the members held back wore, against the others
    /// (1: the policy changed nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_back_pace: Option<f64>,
    /// With wear-aware placement: each member's wear-out time over a whole life at the
    /// run's load, the ladder deciding which members are held back as their wear grows and
    /// the held ones wearing at `held_back_pace` (a projection: see [`project`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projected_hours_to_wear_out: Option<Vec<f64>>,
    /// Hours between successive wear-outs (the wear-out times sorted, then differenced;
    /// the projection's when there is one): 0 where two members wear out together.
    pub gaps_hours: Vec<f64>,
    /// The shortest and the median of `gaps_hours`, as a share of the first wear-out time:
    /// how much of an array's life separates its wear-outs.
    pub min_gap_share: f64,
    pub median_gap_share: f64,
}

impl WearReport {
    /// From each member's wear gained over `window_ns` of virtual time (members that
    /// gained none are left out of the wear-out times), and the ladder placement ran with.
    pub fn new(used: Vec<f64>, window_ns: u64, ladder: Option<WearLadder>) -> WearReport {
        let hours = window_ns.max(1) as f64 / 3.6e12;
        let pace: Vec<f64> = used.iter().map(|&u| u / hours).collect();
        let hours_to_wear_out: Vec<f64> = pace
            .iter()
            .map(|&p| if p > 0.0 { 1.0 / p } else { 0.0 })
            .collect();
        let (held_back_pace, projected) = match ladder {
            Some(l) => {
                let k = held_pace(&used, &l);
                (Some(k), Some(project(&pace, k, &l)))
            }
            None => (None, None),
        };
        let mut sorted: Vec<f64> = projected
            .as_ref()
            .unwrap_or(&hours_to_wear_out)
            .iter()
            .copied()
            .filter(|&h| h > 0.0)
            .collect();
        sorted.sort_by(f64::total_cmp);
        let gaps_hours: Vec<f64> = sorted.windows(2).map(|w| w[1] - w[0]).collect();
        let first = sorted.first().copied().unwrap_or(0.0);
        let share = |g: f64| if first > 0.0 { g / first } else { 0.0 };
        let mut g = gaps_hours.clone();
        g.sort_by(f64::total_cmp);
        WearReport {
            used,
            hours_to_wear_out,
            held_back_pace,
            projected_hours_to_wear_out: projected,
            min_gap_share: g.first().map_or(0.0, |&x| share(x)),
            median_gap_share: g.get(g.len() / 2).map_or(0.0, |&x| share(x)),
            gaps_hours,
        }
    }
}

/// The members the ladder held back at the end of the run, from their wear then.
fn held_set(used: &[f64], ladder: &WearLadder) -> u64 {
    let members: Vec<(usize, Option<f64>)> = used
        .iter()
        .enumerate()
        .map(|(d, &u)| (d, Some(u)))
        .collect();
    ladder.held_back_of(&members)
}

/// Mean wear of the held-back members over the others'.
fn held_pace(used: &[f64], ladder: &WearLadder) -> f64 {
    let held = held_set(used, ladder);
    let mean = |want: bool| {
        let v: Vec<f64> = (0..used.len())
            .filter(|&d| ladder.ranks(d) && (held >> d & 1 == 1) == want)
            .map(|d| used[d])
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let others = mean(false);
    if others > 0.0 {
        mean(true) / others
    } else {
        1.0
    }
}

/// Wear-out hours of each member over a whole life from new, under the ladder: every step,
/// the members the ladder holds back (from their wear so far) wear at `k` times the pace of
/// the others, the pool's total pace staying what the run measured (the writes a held-back
/// member does not take go to the others). Worn-out members leave the ladder. A projection:
/// it assumes the run's load for the whole life and the run's `k` for every held-back set.
/// Members outside the ladder (HDDs) take no part and are given 0.
pub fn project(pace: &[f64], k: f64, ladder: &WearLadder) -> Vec<f64> {
    let n = pace.len();
    let total: f64 = pace.iter().sum();
    let mut out = vec![0.0; n];
    if total <= 0.0 {
        return out;
    }
    let mut wear = vec![0.0f64; n];
    // Steps in which the pool as a whole wears a fortieth of a gap (no member more).
    let dt = ladder.gap / 40.0 / total;
    let mut t = 0.0;
    let worn_out = |out: &[f64]| (0..n).all(|d| !ladder.ranks(d) || out[d] > 0.0);
    while !worn_out(&out) {
        let live: Vec<(usize, Option<f64>)> = (0..n)
            .filter(|&d| ladder.ranks(d) && out[d] == 0.0)
            .map(|d| (d, Some(wear[d])))
            .collect();
        let held = ladder.held_back_of(&live);
        let weight = |d: usize| if held >> d & 1 == 1 { k } else { 1.0 };
        let sum: f64 = live.iter().map(|&(d, _)| weight(d)).sum();
        t += dt;
        for &(d, _) in &live {
            wear[d] += total * weight(d) / sum * dt;
            if wear[d] >= 1.0 {
                out[d] = t;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_wear_wears_out_together_and_skew_spreads_it() {
        let hour = 3_600_000_000_000;
        let even = WearReport::new(vec![0.01; 4], hour, None);
        assert_eq!(even.hours_to_wear_out, vec![100.0; 4]);
        assert_eq!(even.min_gap_share, 0.0);
        let skew = WearReport::new(vec![0.01, 0.008, 0.0125, 0.0], hour, None);
        // 100 h, 125 h, 80 h; the idle member is left out.
        assert_eq!(skew.gaps_hours.len(), 2);
        assert!((skew.gaps_hours[0] - 20.0).abs() < 1e-9);
        assert!((skew.min_gap_share - 0.25).abs() < 1e-9);
    }

    /// A hybrid pool's HDDs wear nothing: the projection gave them wear-out times of their
    /// own (the SSDs' writes shared out over them too) and the gaps counted them.
    #[test]
    fn hdds_take_no_part_in_the_projection() {
        let hour = 3_600_000_000_000;
        let mut used = vec![0.01; 8];
        used.extend([0.0, 0.0]);
        let ladder = WearLadder::for_pool(0.05, 10, &[8, 9]);
        let w = WearReport::new(used, hour, Some(ladder));
        let p = w.projected_hours_to_wear_out.expect("projection");
        assert_eq!(&p[8..], &[0.0, 0.0]);
        assert!(p[..8].iter().all(|&h| h > 0.0), "{p:?}");
        assert_eq!(w.gaps_hours.len(), 7);
        // Even wear: the held-back SSDs wore like the others (the HDDs' zero not counted).
        assert_eq!(w.held_back_pace, Some(1.0));
    }

    #[test]
    fn the_ladder_spreads_wear_outs_that_even_wear_would_bunch() {
        let pace = vec![0.01; 8];
        let ladder = WearLadder::new(0.05, 8);
        // Without holding back (k = 1) all eight wear out at 100 h together.
        let even = project(&pace, 1.0, &ladder);
        assert!(even.iter().all(|&h| (h - 100.0).abs() < 0.5), "{even:?}");
        // Held back members at 0.8 of the pace: the wear-outs come apart.
        let mut out = project(&pace, 0.8, &ladder);
        out.sort_by(f64::total_cmp);
        let gaps: Vec<f64> = out.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(out[0] < 100.0 && out[7] > 100.0, "{out:?}");
        assert!(gaps.iter().filter(|&&g| g > 1.0).count() >= 3, "{out:?}");
    }
}

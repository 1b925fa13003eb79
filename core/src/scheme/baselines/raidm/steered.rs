//! Sandook's placement on the mirrored log: which members a fresh mirror unit goes to, and
//! keeping steering and the units' places current (see [`super::super::sandook`]).

use super::extents::Extents;
use super::{Layout, RaidM};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::logbase::Heads;
use crate::steer::Steering;

pub(in crate::scheme::baselines) struct Steered {
    pub steer: Steering,
    pub extents: Extents,
}

impl RaidM {
    /// A mirrored log over every member whose units are placed by `steer`.
    pub(in crate::scheme::baselines) fn steered(
        cfg: &crate::scheme::baselines::BaselineConfig,
        steer: Steering,
    ) -> Result<Self, String> {
        let mut one = cfg.clone();
        one.group_width = cfg.disks;
        one.groups = Some(1);
        let mut m = Self::build(&one, "sandook")?;
        let rows = one.geometry()?.rows;
        let heads = m.groups[0].heads.in_turn();
        m.groups[0].heads = Heads::with_cleaner(heads);
        let log = &mut m.groups[0].log;
        log.space.track_freed();
        let extents = Extents::new(m.width, rows, log.space.segments());
        m.layout = Layout::Steered(Box::new(Steered { steer, extents }));
        Ok(m)
    }

    /// Give the chunks of units freed since the last call back to their members, and tell
    /// the log how many of its free units cannot be placed on the healthy members.
    pub(super) fn reclaim(&mut self, ctx: &Ctx) {
        let Layout::Steered(s) = &mut self.layout else {
            return;
        };
        let g = &mut self.groups[0];
        for mu in g.log.space.take_freed() {
            s.extents.release(mu);
        }
        let placeable = s.extents.placeable(|m| !ctx.is_failed(g.disks[m]));
        g.log.unusable = g.log.space.free_count().saturating_sub(placeable);
    }

    /// Place fresh unit `mu`: the members that must take it to keep free space usable, then
    /// write-mode members by weight, then any healthy member with room, then (one healthy
    /// member left with room) a failed member's chunk. False when no healthy member has room.
    pub(super) fn place_unit(&mut self, ctx: &mut Ctx, mu: u32) -> bool {
        self.reclaim(ctx);
        let Layout::Steered(s) = &mut self.layout else {
            return true;
        };
        let disks = &self.groups[0].disks;
        let room: Vec<bool> = (0..disks.len())
            .map(|m| !ctx.is_failed(disks[m]) && s.extents.free_rows(m) > 0)
            .collect();
        let usable = |m: usize| room[m];
        let mut pick = s.extents.must_use(usable);
        let more = s
            .steer
            .pick_writers(ctx.rng, 2 - pick.len(), |m| usable(m) && !pick.contains(&m));
        pick.extend(more);
        if pick.len() == 1 {
            // One healthy member with room: the other copy goes to a failed member's chunk
            // and is never written (a degraded write, as 4-RAIDM does).
            let spare = (0..disks.len()).find(|&m| !room[m] && s.extents.free_rows(m) > 0);
            pick.extend(spare);
        }
        if pick.len() < 2 {
            return false;
        }
        s.extents.place(mu, pick[0], pick[1]);
        self.reclaim(ctx);
        true
    }

    /// Recompute steering when due; when the write set changed, close the heads whose unit
    /// sits on a member that left it.
    pub(super) fn steer_tick(&mut self, ctx: &mut Ctx) {
        let Layout::Steered(s) = &mut self.layout else {
            return;
        };
        let members = ctx.members();
        if !s.steer.update(&members.recent_all()) {
            return;
        }
        let g = &mut self.groups[0];
        let (steer, extents) = (&s.steer, &s.extents);
        let disks = &g.disks;
        g.heads.close_if(&mut g.log, |mu| {
            extents
                .members_of(mu)
                .is_some_and(|ms| ms.iter().any(|&m| !steer.is_writer(disks[m])))
        });
        self.reclaim(ctx);
    }

    /// Every row of every member is free or holds exactly one placed unit, and every used
    /// unit is placed.
    pub(super) fn check_extents(&self) {
        let Layout::Steered(s) = &self.layout else {
            return;
        };
        let rows = s.extents.rows();
        s.extents.check(rows);
        let space = &self.groups[0].log.space;
        for mu in 0..space.segments() {
            assert!(
                space.is_free(mu) || s.extents.members_of(mu).is_some(),
                "unit {mu} in use but not placed"
            );
        }
    }

    pub(super) fn level_name(&self) -> String {
        match &self.layout {
            Layout::Neighbours => format!("mirrored log over {} disks", self.width),
            Layout::Steered(_) => format!("2 replicas, steered log over {} disks", self.width),
        }
    }

    pub(super) fn steer_deadline(&self) -> Option<crate::types::Nanos> {
        match &self.layout {
            Layout::Steered(s) => Some(s.steer.next_deadline()),
            Layout::Neighbours => None,
        }
    }
}

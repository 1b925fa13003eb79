//! Sandook's placement on the mirrored log: which members a fresh mirror unit goes to, and
//! keeping steering and the units' places current (see [`super::super::sandook`]).

use super::extents::Extents;
use super::{Layout, RaidM};
use crate::engine::ctx::Ctx;
use crate::scheme::baselines::logbase::Heads;
use crate::steer::Steering;

pub(in crate::scheme::baselines) struct Steered {
    /// Until the engine adopts it ([`crate::scheme::Scheme::take_steering`]).
    pub handover: Option<Steering>,
    pub extents: Extents,
    /// The write set's epoch the heads were last checked against.
    pub epoch: u64,
}

impl RaidM {
    /// A mirrored log over every member whose units are placed by `steer`.
    pub(in crate::scheme::baselines) fn steered(
        cfg: &crate::scheme::baselines::config::BaselineConfig,
        steer: Steering,
    ) -> Result<Self, String> {
        let mut one = cfg.clone();
        one.group_width = cfg.disks;
        one.groups = Some(1);
        let mut m = Self::build(&one, "sandook")?;
        let rows = one.geometry()?.rows;
        m.groups[0].heads = Heads::with_cleaner(super::heads(&one.raidm, m.width));
        let log = &mut m.groups[0].log;
        log.space.track_freed();
        let extents = Extents::new(m.width, rows, log.space.segments());
        m.layout = Layout::Steered(Box::new(Steered {
            handover: Some(steer),
            extents,
            epoch: 0,
        }));
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
        let (members, rng) = ctx.members_and_rng();
        let steer = members
            .steering()
            .expect("the engine runs a steered scheme's steering");
        let more = steer.pick_writers(rng, 2 - pick.len(), |m| usable(m) && !pick.contains(&m));
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

    /// When the write set changed, close the heads whose unit sits on a member that left it.
    pub(super) fn steer_tick(&mut self, ctx: &mut Ctx) {
        let Layout::Steered(s) = &mut self.layout else {
            return;
        };
        let members = ctx.members();
        let steer = members
            .steering()
            .expect("the engine runs a steered scheme's steering");
        if steer.modes_epoch() == s.epoch {
            return;
        }
        s.epoch = steer.modes_epoch();
        let g = &mut self.groups[0];
        let extents = &s.extents;
        let disks = &g.disks;
        g.heads.close_if(&mut g.log, |mu| {
            extents
                .members_of(mu)
                .is_some_and(|ms| ms.iter().any(|&m| !steer.is_writer(disks[m])))
        });
        self.reclaim(ctx);
    }

    pub(super) fn take_steering(&mut self) -> Option<Steering> {
        match &mut self.layout {
            Layout::Steered(s) => s.handover.take(),
            Layout::Neighbours => None,
        }
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
}

//! One FusionRAID volume: its zone, stripe table, Block Mapping Table, patch lists, Block
//! Pairing Table and write locks, and the bookkeeping that keeps them consistent.

use super::config::VolumeConfig;
use super::jobs::JobId;
use super::pack::{Packs, Pages, Settled};
use super::pairs::{PairTable, SlotRef, SlotState};
use crate::fasthash::FastMap;
use crate::meta::Record;
use crate::scheme::locks::BlockLocks;
use crate::space::{StripeState, StripeTable, Zone};
use crate::types::{Nanos, PAGE_SIZE};
use crate::volume::{Bmt, Entry, Loc, PageSums, PatchNode, PatchTable};

/// What a waiting write's placement depends on: spare stripes, spare slots, stripes in the
/// replicated area, open packs.
pub type SpaceMark = (u64, usize, u64, usize);

/// Blocks waiting for repair at most (more bad blocks than this are found again by the
/// next read or scrub).
pub const MAX_REPAIR: usize = 4096;

/// A request waiting for its block locks (or for free space).
#[derive(Debug)]
pub struct Parked {
    pub job: JobId,
}

pub struct Vol {
    /// Index of the volume in the pool (journal records name it).
    pub id: u8,
    /// Mapping changes not yet handed to the journal (None: metadata is not journaled).
    pub log: Option<Vec<Record>>,
    pub cfg: VolumeConfig,
    pub zone: Zone,
    pub stripes: StripeTable,
    pub bmt: Bmt,
    pub patches: PatchTable,
    /// CRC-32C of every user page (volume/sums.rs).
    pub sums: PageSums,
    /// User blocks a read or scrub found a bad copy of, waiting to be moved (relocation
    /// rewrites them from a good copy or from parity). Bounded by `MAX_REPAIR`.
    pub repair: Vec<u64>,
    /// Pages known lost: no good copy was left when they were last read (user block ->
    /// pages). Scrub leaves them out, or every pass would queue a repair that can only
    /// move them again; a user write of the pages, or a trim, takes them out. Held in
    /// memory only (after a restart the first scrub finds them once more); an entry exists
    /// only for data actually lost.
    pub lost: FastMap<u64, Pages>,
    pub pairs: PairTable,
    /// Copies of replica slots written to an HDD log instead of their SSD place.
    pub offloaded: super::offload::slots::Offloaded,
    /// Replica slots shared by the patches of several blocks.
    pub packs: Packs,
    /// RAID data blocks referenced by more than one user block (converted packs): the
    /// owners beyond the first. The stripe's valid bit means "at least one owner".
    pub raid_extra: FastMap<u64, u16>,
    pub locks: BlockLocks<Parked>,
    /// The stripe parity rows fill, and those with rows in flight (rows.rs).
    pub rows: super::rows_state::RowStripes,
    /// User blocks in the volume.
    pub blocks: u64,
    pub pages_per_block: u16,
    /// Most stripes the replicated area may take (its logical share times the copies).
    pub max_replica_stripes: u64,
    /// Stripes beyond the data and the replicated area (room for out-of-place writes).
    pub spare_stripes: u64,
    /// Live data blocks in RAID stripes (holes = RAID stripes x data columns - this).
    pub raid_valid_blocks: u64,
    /// Conversions and relocations in flight.
    pub bg_running: usize,
    /// Of those, rebuild relocations.
    pub rebuild_running: usize,
    /// User blocks a relocation (cleaning, rebuild or repair) is moving right now.
    pub relocating: crate::fasthash::FastSet<u64>,
    /// RAID blocks cleaning relocations in flight are moving owners out of, and how many:
    /// a planned batch that finishes emptying a stripe counts them as gone
    /// (`reloc_plan::stripes_emptied`), or every batch but the first of a plan would look useless.
    pub leaving: FastMap<u64, u32>,
    /// The cleaner's sweep of the BMT: where it resumes, and its buffers.
    pub sweep: super::sweep_state::Sweep,
    /// Relocations the last sweep planned and not yet started (best last), good until
    /// `reloc_batches_until`.
    pub reloc_batches: Vec<super::reloc_batch::RelocBatch>,
    pub reloc_batches_until: Nanos,
    /// Writes parked until conversion or compaction frees stripes.
    pub space_waiters: Vec<JobId>,
    /// `space_mark()` when the waiters last failed to find room: they are tried again
    /// only once it moves.
    pub waiters_mark: SpaceMark,
    /// User writes with device I/O in flight (their completion may free space).
    pub writes_in_flight: usize,
    /// After a scan found no background work it could start, the next scan waits until
    /// then (unless writes wait for space): a paused conversion must not cost a scan of the
    /// candidates on every device completion.
    pub next_bg_scan: crate::types::Nanos,
    /// Idle compaction looks again only from then (background.rs).
    pub idle_clean_after: Nanos,
    /// Mapping changes so far (any block mapped anew, patched or unmapped).
    pub mapping_changes: u64,
    /// Bytes of user data mapped (`mapped_bytes`), kept up to date by every mapping change:
    /// counting them on demand walked the whole patch table, which `serve` asks for every
    /// quarter second, on its event loop.
    mapped: u64,
    /// `mapping_changes` when idle compaction last found nothing to do with no background
    /// work in flight: it looks again only once the mappings changed.
    pub idle_clean_mark: Option<u64>,
    /// Moving data off failed members (None: nothing has failed).
    pub rebuild: Option<super::progress::Rebuild>,
    /// Data mapped onto a failed member (degraded writes, relocations and conversions,
    /// when no room clear of it was left): a finished rebuild looks again when this moves.
    pub degraded_placements: u64,
    /// Copying remapped columns back home after a member was replaced.
    pub rebalance: Option<super::progress::Rebalance>,
    /// Stripes with a column job in flight (column.rs).
    pub columns: crate::fasthash::FastSet<u32>,
    /// Donor stripes that may lend more columns (newest last).
    pub donor_open: Vec<u32>,
    /// The last scrub (None: never scrubbed since the pool came up).
    pub scrub: Option<super::progress::Scrub>,
    /// A batch of discards is in flight (trim.rs).
    pub trim_running: bool,
}

impl Vol {
    /// The columns of stripe `s` (a mask) that can not be read where they are: on a failed
    /// member, or stale (`space/stale.rs`).
    pub fn lost_mask(&self, ctx: &crate::engine::ctx::Ctx, s: u32) -> u32 {
        self.lost_mask_where(s, |d| ctx.is_failed(d))
    }

    /// `lost_mask` with the failed members as `failed` says.
    pub fn lost_mask_where(&self, s: u32, failed: impl Fn(crate::types::DiskId) -> bool) -> u32 {
        (0..self.zone.width())
            .filter(|&c| failed(self.zone.disk(s, c)))
            .fold(self.stripes.stale(s), |m, c| m | 1 << c)
    }

    /// Columns `mask` of stripe `s` hold their contents (written in place, or remapped to a
    /// rebuilt donor): those that were stale are not any more, journaled.
    pub fn restore_columns(&mut self, s: u32, mask: u32) {
        let cols = self.stripes.stale_columns_mut().clear(s, mask);
        if cols != 0 {
            self.record(|vol| Record::Restored {
                vol,
                stripe: s,
                cols,
            });
        }
    }

    /// Journal the stale marks that frees dropped (their stripes hold nothing now).
    pub fn record_freed_stale(&mut self) {
        for (stripe, cols) in self.stripes.stale_columns_mut().take_freed() {
            self.record(|vol| Record::Restored { vol, stripe, cols });
        }
    }

    /// Can column `c` of stripe `s` not be read where it is (see `lost_mask`)?
    pub fn column_lost(&self, ctx: &crate::engine::ctx::Ctx, s: u32, c: usize) -> bool {
        self.stripes.stale(s) & (1 << c) != 0 || ctx.is_failed(self.zone.disk(s, c))
    }

    pub fn new(id: u8, cfg: VolumeConfig, zone: Zone) -> Self {
        let block = zone.block_size();
        let blocks = cfg.size_bytes.div_ceil(block);
        let dcols = zone.dcols() as u64;
        let set_stripes = cfg.level.set_stripes() as u64;
        let rep_blocks = (blocks as f64 * cfg.replicated_fraction).ceil() as u64;
        let max_replica_stripes = rep_blocks.div_ceil(dcols) * set_stripes;
        let spare_stripes = zone
            .stripes()
            .saturating_sub(blocks.div_ceil(dcols) + max_replica_stripes);
        Vol {
            id,
            log: None,
            stripes: StripeTable::new(zone.stripes()),
            bmt: Bmt::new(blocks),
            patches: PatchTable::new((block / PAGE_SIZE) as u16),
            sums: PageSums::new(blocks, (block / PAGE_SIZE) as u16),
            repair: Vec::new(),
            lost: FastMap::default(),
            pairs: PairTable::default(),
            offloaded: Default::default(),
            packs: Packs::new((block / PAGE_SIZE) as u16),
            raid_extra: FastMap::default(),
            locks: BlockLocks::default(),
            rows: Default::default(),
            blocks,
            pages_per_block: (block / PAGE_SIZE) as u16,
            max_replica_stripes,
            spare_stripes,
            raid_valid_blocks: 0,
            bg_running: 0,
            rebuild_running: 0,
            relocating: Default::default(),
            leaving: FastMap::default(),
            sweep: Default::default(),
            reloc_batches: Vec::new(),
            reloc_batches_until: 0,
            space_waiters: Vec::new(),
            waiters_mark: (u64::MAX, 0, 0, 0),
            writes_in_flight: 0,
            next_bg_scan: 0,
            idle_clean_after: 0,
            mapping_changes: 0,
            mapped: 0,
            idle_clean_mark: None,
            rebuild: None,
            degraded_placements: 0,
            rebalance: None,
            columns: Default::default(),
            donor_open: Vec::new(),
            scrub: None,
            trim_running: false,
            cfg,
            zone,
        }
    }

    pub fn copies(&self) -> usize {
        self.cfg.level.copies()
    }
    /// Stripes a new pair set takes (`Level::set_stripes`).
    pub fn set_stripes(&self) -> u64 {
        self.cfg.level.set_stripes() as u64
    }
    pub fn free_share(&self) -> f64 {
        self.stripes.available() as f64 / self.stripes.len() as f64
    }
    /// Spare stripes user writes leave to background work, so conversion and relocation can
    /// always make progress (a cleaner needs a free stripe to clean into): the last
    /// `cleaner_reserve` for relocations sure to give back more than they take, and up to
    /// 16 more (1/64 of the zone) for the merges and other moves that give space back only
    /// later.
    pub fn reserve_stripes(&self) -> u64 {
        self.cleaner_reserve() + (self.stripes.len() / 64).min(16)
    }
    /// Should conversion and cleaning run for room? Below `low_water` free (a share of the
    /// zone), or within a sixteenth of the spare stripes of the writers' reserve (small
    /// zones, whose low-water mark is a stripe or two). Cleaning late is cheaper: its
    /// victims have more dead pages by then, and a plan needs only a stripe or two to work
    /// in (`reloc_plan`); every free stripe kept beyond that is spare the cleaner can not
    /// use.
    pub fn low_on_space(&self, low_water: f64) -> bool {
        self.free_share() < low_water
            || self.stripes.available() < self.reserve_stripes() + self.spare_stripes / 16
    }
    pub fn cleaner_reserve(&self) -> u64 {
        self.copies() as u64 + 2
    }
    /// Will space come back without any new background work? Writes in flight may free
    /// the blocks they replace, held stripes return with the next journal commit (when
    /// `commits_succeed`: see `FusionScheme::room_on_the_way`), and a freed stripe still
    /// pinned by a read returns when that read completes.
    pub fn room_on_the_way(&self, commits_succeed: bool) -> bool {
        self.writes_in_flight > 0
            || (commits_succeed && self.stripes.held() > 0)
            || self.stripes.pinned_free()
    }
    /// May a user write take `n` more spare stripes?
    pub fn user_may_take(&self, n: u64) -> bool {
        self.stripes.available() >= self.reserve_stripes() + n
    }
    /// What a waiting write's placement depends on: spare stripes, spare slots, stripes in
    /// the replicated area, open packs.
    pub fn space_mark(&self) -> SpaceMark {
        (
            self.stripes.available(),
            self.pairs.spare_slots(),
            self.stripes.count(StripeState::Replica),
            self.packs.open_count(),
        )
    }
    /// Is a rebuild moving data off failed members now?
    pub fn rebuilding(&self) -> bool {
        self.rebuild.as_ref().is_some_and(|r| r.done_at.is_none())
    }
    /// Is there something idle compaction may find to do (holes, or dead pages inside
    /// blocks), that it has not already found nothing to do about?
    pub fn idle_clean_wanted(&self) -> bool {
        self.idle_clean_mark != Some(self.mapping_changes)
            && (self.holes() >= 2 * self.zone.dcols() as u64 || self.patches.patched_blocks() > 0)
    }
    pub fn holes(&self) -> u64 {
        self.stripes.count(StripeState::Raid) * self.zone.dcols() as u64 - self.raid_valid_blocks
    }

    /// Does user block `ub` still reference `loc` (as base or in a patch)?
    pub fn references(&self, ub: u64, loc: Loc) -> bool {
        let e = self.bmt.get(ub);
        e.base == loc || (e.patched && self.patches.references(ub, loc))
    }

    /// `loc` no longer holds data of `ub` (unless `ub` still references it elsewhere):
    /// clear its RAID valid bit or kill its replica slot, and give back stripes left empty.
    pub fn release(&mut self, ub: u64, loc: Loc, now: Nanos) {
        if self.references(ub, loc) {
            return;
        }
        match loc {
            Loc::Unmapped => {}
            Loc::Raid(f) => {
                let (s, c) = self.zone.split(f);
                assert_eq!(
                    self.stripes.state(s),
                    StripeState::Raid,
                    "RAID location in a non-RAID stripe"
                );
                assert!(self.stripes.valid(s) & (1 << c) != 0, "releasing a hole");
                if let Some(extra) = self.raid_extra.get_mut(&f) {
                    // Other blocks still have pages in this shared block.
                    *extra -= 1;
                    if *extra == 0 {
                        self.raid_extra.remove(&f);
                    }
                    return;
                }
                self.stripes.set_valid(s, c, false);
                self.raid_valid_blocks -= 1;
                if self.stripes.valid(s) == 0 {
                    // A row stripe still taking rows stays allocated (rows_state.rs).
                    let st = if self.rows.protects(s) {
                        StripeState::Busy
                    } else {
                        StripeState::Free
                    };
                    self.stripes.set_state(s, st);
                }
            }
            Loc::Rep(key) => {
                let r = self
                    .pairs
                    .lookup(&self.zone, key)
                    .expect("replica key without a pair set");
                let set = self.pairs.set_mut(r.set);
                let slot = &mut set.slots[r.slot as usize];
                if matches!(slot.state, SlotState::Packing | SlotState::Packed) {
                    let st = self.packs.remove_owner(r, ub);
                    self.pack_changed(r, st, now);
                    return;
                }
                assert_eq!(
                    slot.state,
                    SlotState::Live(ub),
                    "replica slot not owned by the block"
                );
                slot.state = SlotState::Dead;
                self.settle_set(r.set, now);
            }
        }
    }

    /// Apply what a pack operation left of slot `r`: a pack closed with no write in flight
    /// no longer holds its set unsettled, and one with no live pages is a dead slot.
    pub fn pack_changed(&mut self, r: SlotRef, st: Settled, now: Nanos) {
        let state = match st {
            Settled::No => return,
            Settled::Live => SlotState::Packed,
            Settled::Empty => SlotState::Dead,
        };
        self.pairs.set_mut(r.set).slots[r.slot as usize].state = state;
        self.settle_set(r.set, now);
    }

    /// Stop handing out set `id`'s spare slots and pack pages so it can settle and be
    /// converted. Returns true if that freed the set (nothing live in it).
    pub fn close_set(&mut self, id: u32, now: Nanos) -> bool {
        self.pairs.close(id);
        for r in self.packs.of_set(id) {
            let st = self.packs.close(r);
            self.pack_changed(r, st, now);
            if self.pairs.get(id).is_none() {
                return true;
            }
        }
        self.settle_set(id, now)
    }

    /// A write into pack `r` is over (`ok` false: it failed; else its block was made an
    /// owner of `r` before its pages were mapped).
    pub fn pack_write_done(&mut self, r: SlotRef, ok: bool, now: Nanos) {
        let st = self.packs.write_done(r, ok);
        self.pack_changed(r, st, now);
    }

    /// References to the data blocks of RAID stripe `s` (one per owner of each block).
    pub fn stripe_refs(&self, s: u32) -> u32 {
        let valid = self.stripes.valid(s);
        let mut n = valid.count_ones();
        if !self.raid_extra.is_empty() {
            for c in 0..self.zone.dcols() {
                if valid & (1 << c) != 0 {
                    n += self
                        .raid_extra
                        .get(&self.zone.flbn(s, c))
                        .copied()
                        .unwrap_or(0) as u32;
                }
            }
        }
        n
    }

    /// The copies of slot `r` at their SSD places as (copy, stripe, column), in copy order,
    /// without those written to an HDD log instead (their SSD places are holes; copy 0
    /// never is one).
    pub fn ssd_copies(&self, r: super::pairs::SlotRef) -> Vec<(usize, u32, usize)> {
        self.pairs
            .copies(r)
            .into_iter()
            .enumerate()
            .filter(|&(ci, _)| !self.offloaded.in_log(r.set, r.slot, ci))
            .map(|(ci, (s, c))| (ci, s, c))
            .collect()
    }

    /// A set whose slots are all dead (and not converting) frees its stripes without any I/O.
    /// Returns true if the set was freed.
    pub fn settle_set(&mut self, id: u32, _now: Nanos) -> bool {
        let set = self.pairs.set(id);
        if set.is_settled() && set.live() == 0 && !set.converting {
            let set = self.pairs.remove(id);
            self.offloaded.set_gone(id);
            for &s in set.distinct_stripes() {
                self.stripes.set_state(s, StripeState::Free);
            }
            return true;
        }
        self.pairs.refresh(id);
        false
    }

    /// Data is being mapped at these (stripe, column)s: count it when one is on a failed
    /// member, so a finished rebuild takes it up again. Counted at the mapping, not at the
    /// placement: a sweep that ran in between would have found nothing yet.
    pub fn note_placement(&mut self, ctx: &crate::engine::ctx::Ctx, cols: &[(u32, usize)]) {
        if self.rebuild.is_some() && cols.iter().any(|&(s, c)| self.column_lost(ctx, s, c)) {
            self.degraded_placements += 1;
        }
    }

    /// Data of stripe `s` is being mapped: see `note_placement`.
    pub fn note_stripe(&mut self, ctx: &crate::engine::ctx::Ctx, s: u32) {
        if self.rebuild.is_some() && self.lost_mask(ctx, s) != 0 {
            self.degraded_placements += 1;
        }
    }

    /// The copies in HDD logs as a checkpoint holds them: by their set's first stripe.
    pub fn log_extents_image(&self) -> Vec<(u32, crate::meta::record::LogExtent)> {
        self.offloaded
            .iter()
            .map(|(set, e)| (self.pairs.set(set).stripes[0], *e))
            .collect()
    }

    /// Queue a journal record (when the metadata is journaled).
    pub fn record(&mut self, r: impl FnOnce(u8) -> Record) {
        if let Some(log) = self.log.as_mut() {
            log.push(r(self.id));
        }
    }

    /// Point user block `ub` wholly at `loc`, releasing everything it referenced before.
    pub fn map_whole(&mut self, ub: u64, loc: Loc, now: Nanos) {
        self.record(|vol| Record::Whole { vol, ub, loc });
        self.apply_whole(ub, loc, now);
    }

    fn apply_whole(&mut self, ub: u64, loc: Loc, now: Nanos) {
        self.mapping_changes += 1;
        if loc == Loc::Unmapped {
            self.sums.clear_block(ub);
            self.unmark_lost(ub, 0, self.pages_per_block);
        }
        let old = self.bmt.get(ub);
        // No allocation for an unpatched block (the common case): the base goes last.
        let olds = if old.patched {
            self.patches.clear(ub)
        } else {
            Vec::new()
        };
        let old_pages = if old.patched {
            self.patches.last_pages().0
        } else {
            0
        };
        let before = self.mapped_of(old.base, old_pages);
        self.bmt.set(
            ub,
            Entry {
                base: loc,
                patched: false,
            },
        );
        self.mapped = self.mapped - before + self.mapped_of(loc, 0);
        for l in olds.into_iter().chain([old.base]) {
            if l != loc {
                self.release(ub, l, now);
            }
        }
    }

    /// Record pages `[first, first+count)` of `ub` at pages `[at, at+count)` of `loc`'s
    /// block (data moved there: their checksums stay).
    pub fn map_patch(&mut self, ub: u64, first: u16, count: u16, loc: Loc, at: u16, now: Nanos) {
        if first == 0 && count == self.pages_per_block && at == 0 {
            return self.map_whole(ub, loc, now);
        }
        self.record(|vol| Record::Patch {
            vol,
            ub,
            loc,
            first,
            count,
            at,
        });
        self.apply_patch(ub, PatchNode::placed(first, count, loc, at), now);
    }

    /// A user write put pages `[first, first+count)` of `ub` at pages `[at, at+count)` of
    /// `loc`'s block; `sums` are their checksums (None: no data to checksum, size-only mode).
    /// One journal record carries both.
    #[allow(clippy::too_many_arguments)]
    pub fn map_written(
        &mut self,
        ub: u64,
        first: u16,
        count: u16,
        loc: Loc,
        at: u16,
        sums: Option<Vec<u32>>,
        now: Nanos,
    ) {
        let Some(sums) = sums else {
            return self.map_patch(ub, first, count, loc, at, now);
        };
        assert_eq!(sums.len(), count as usize, "one checksum per page written");
        self.sums.set(ub, first, &sums);
        self.unmark_lost(ub, first, count);
        self.record(|vol| Record::Written {
            vol,
            ub,
            loc,
            first,
            at,
            sums,
        });
        if first == 0 && count == self.pages_per_block && at == 0 {
            self.apply_whole(ub, loc, now);
        } else {
            self.apply_patch(ub, PatchNode::placed(first, count, loc, at), now);
        }
    }

    fn apply_patch(&mut self, ub: u64, node: PatchNode, now: Nanos) {
        self.mapping_changes += 1;
        let base = self.bmt.get(ub).base;
        let gone = crate::volume::patch_block(&mut self.bmt, &mut self.patches, ub, node);
        let (pages_before, pages_after) = self.patches.last_pages();
        let before = self.mapped_of(base, pages_before);
        let after = self.mapped_of(self.bmt.get(ub).base, pages_after);
        self.mapped = self.mapped - before + after;
        for l in gone {
            if l != Loc::Unmapped {
                self.release(ub, l, now);
            }
        }
    }

    /// The user blocks with data in slot `r`.
    pub fn slot_owners(&self, r: SlotRef) -> Vec<u64> {
        match self.pairs.set(r.set).slots[r.slot as usize].state {
            SlotState::Live(ub) => vec![ub],
            SlotState::Packing | SlotState::Packed => self.packs.owners(r).to_vec(),
            _ => Vec::new(),
        }
    }

    /// One more user block owns RAID block (`stripe`, `col`): the first makes it live, the
    /// rest share it (`raid_extra`).
    pub fn add_raid_owner(&mut self, stripe: u32, col: usize) {
        if self.stripes.valid(stripe) & (1 << col) == 0 {
            self.raid_block_live(stripe, col);
        } else {
            *self
                .raid_extra
                .entry(self.zone.flbn(stripe, col))
                .or_insert(0) += 1;
        }
    }

    pub fn raid_block_live(&mut self, stripe: u32, col: usize) {
        assert!(
            self.stripes.valid(stripe) & (1 << col) == 0,
            "column already live"
        );
        self.stripes.set_valid(stripe, col, true);
        self.raid_valid_blocks += 1;
    }

    /// User data the volume holds: whole blocks for those with a base, and only the patched
    /// pages of blocks that have nothing else (a pack stores just those pages).
    pub fn mapped_bytes(&self) -> u64 {
        self.mapped
    }

    /// The user data a block maps with base `base` and `pages` mapped pages in its patches:
    /// the whole block with a base, else those pages.
    fn mapped_of(&self, base: Loc, pages: u32) -> u64 {
        if base != Loc::Unmapped {
            self.zone.block_size()
        } else {
            pages as u64 * PAGE_SIZE
        }
    }

    /// `mapped_bytes` counted from the mapping itself: on recovery, and for the invariant
    /// check.
    pub fn count_mapped_bytes(&self) -> u64 {
        let bs = self.zone.block_size();
        let (mut patch_only, mut pages) = (0u64, 0u64);
        for (ub, nodes) in self.patches.iter() {
            if self.bmt.get(ub).base == Loc::Unmapped {
                patch_only += 1;
                pages += nodes
                    .iter()
                    .filter(|n| n.loc() != Loc::Unmapped)
                    .map(|n| n.count() as u64)
                    .sum::<u64>();
            }
        }
        (self.bmt.mapped_blocks() - patch_only) * bs + pages * PAGE_SIZE
    }

    /// After recovery installed a mapping: count what it maps.
    pub fn recount_mapped(&mut self) {
        self.mapped = self.count_mapped_bytes();
    }

    pub fn metadata_bytes(&self) -> u64 {
        self.bmt.memory_bytes()
            + self.patches.memory_bytes()
            + self.pairs.memory_bytes()
            + self.packs.memory_bytes()
            + self.sums.memory_bytes()
            + self.raid_extra.len() as u64 * 16
            + self.stripes.memory_bytes()
            + self.zone.remaps().memory_bytes()
    }
}

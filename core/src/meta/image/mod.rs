//! The durable state of FusionRAID volumes: what a checkpoint holds and what journal
//! records change. Per volume: the BMT, the patch lists and the structure (stripes and
//! column matching) of every replica pair set. Slot liveness, stripe states and free space
//! are derived from these on recovery (`scheme::fusion::durable`).
//!
//! ```text
//! image:  magic "FRIMAGE8" | volumes u32 | volume...
//! volume: blocks u64 | pages per block u16 | BMT (5 bytes per block)
//!         | patched blocks u64 | (ub u64, nodes u16, node u64 x nodes)...
//!         | sets u32 | (copies u8, stripe u32 x copies, slots u16, column u8 x copies x slots)...
//!         | checksum chunks u32 | (chunk u32, crc32c u32 per page of its 256 blocks)...
//!         | remaps u32 | (stripe u32, col u8, donor u32, dcol u8)...
//! after the volumes: failed members u16 | member u16...
//! then per volume: log extents u32 | (stripe u32, slot u16, copy u8, at u16, count u16,
//!                                     hdd u16, pos u64, offset u64)...
//! then per volume: stale stripes u32 | (stripe u32, column mask u32)...
//! then: replaced slots u16 | (member u16, generation u32)...
//! ```
//! A slot's generation is the one the device in it carries in its superblock: a random
//! number `replace` draws for each new device (0 for `create`'s, and for devices older
//! builds put in), so a device taken out of its slot, whose generation differs, is known
//! to hold stale data whatever the pool file says. Slots at 0 are left out; a "FRIMAGE7"
//! image (before generations) has none.
//! The stale columns are those a rebuild in place has not restored yet (`space/stale.rs`);
//! a "FRIMAGE6" image (before rebuilds in place) is read as one with none.
//! The failed members are those a `MemberFailed` record named and no `MemberReplaced` since:
//! stale, never to serve again as they are. The log extents are the replica copies write
//! offload put in HDD logs (`Record::Offloaded`), by the first stripe of their pair set; a
//! "FRIMAGE5" image (before write offload was journaled) is read as one with none. A patch
//! node's top byte is where its pages sit
//! in their block (`PatchNode::at`); a "FRIMAGE4" image (before pages could move, its top
//! bytes all 0) reads the same. A "FRIMAGE3" image (before failed members were recorded) is
//! read as one with none failed, a "FRIMAGE2" one (before column remapping) also as one with
//! no remaps.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::le_reader::{LeReader, Truncated};
use super::record::{LogExtent, Record};
use crate::volume::{Bmt, Entry, Loc, PageSums, PatchNode, PatchTable};

const MAGIC: [u8; 8] = *b"FRIMAGE8";
/// The image before slot generations: no replaced-slot section.
const MAGIC_V7: [u8; 8] = *b"FRIMAGE7";
/// The image before rebuilds in place: no stale-column sections.
const MAGIC_V6: [u8; 8] = *b"FRIMAGE6";
/// The image before write offload was journaled: no log-extent sections.
const MAGIC_V5: [u8; 8] = *b"FRIMAGE5";
/// The image before pages could move within blocks: the same layout, every node's place
/// its own position (new magic so that builds before it refuse images that use places).
const MAGIC_V4: [u8; 8] = *b"FRIMAGE4";
/// The image before failed members were recorded: no failed-member section.
const MAGIC_V3: [u8; 8] = *b"FRIMAGE3";
/// The image before column remapping: no remap section either.
const MAGIC_V2: [u8; 8] = *b"FRIMAGE2";

/// (stripe, column) -> (donor stripe, donor column): the zone's column remaps.
pub type RemapImage = BTreeMap<(u32, u8), (u32, u8)>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetImage {
    pub stripes: Vec<u32>,
    pub cols: Vec<[u8; 3]>,
}

pub struct VolImage {
    pub bmt: Bmt,
    pub patches: PatchTable,
    pub sums: PageSums,
    pub remaps: RemapImage,
    /// First stripe of a pair set -> its copies in HDD logs; gone with the set.
    pub offloaded: BTreeMap<u32, Vec<LogExtent>>,
    /// Stripe -> mask of its stale columns (`space/stale.rs`).
    pub stale: BTreeMap<u32, u32>,
    sets: Vec<Option<SetImage>>,
    /// stripe -> index in `sets`: a stripe is in at most one set at a time.
    owner: HashMap<u32, usize>,
}

impl VolImage {
    pub fn new(blocks: u64, pages_per_block: u16) -> Self {
        VolImage {
            bmt: Bmt::new(blocks),
            patches: PatchTable::new(pages_per_block),
            sums: PageSums::new(blocks, pages_per_block),
            remaps: RemapImage::new(),
            offloaded: BTreeMap::new(),
            stale: BTreeMap::new(),
            sets: Vec::new(),
            owner: HashMap::new(),
        }
    }

    /// Record a set. A set that shares a stripe with this one must be gone (a stripe is reused
    /// only after its old set was converted or emptied), so it is dropped.
    pub fn add_set(&mut self, s: SetImage) {
        for st in &s.stripes {
            if let Some(old) = self.owner.get(st).copied()
                && let Some(o) = self.sets[old].take()
            {
                for x in &o.stripes {
                    self.owner.remove(x);
                }
                self.offloaded.remove(&o.stripes[0]);
            }
        }
        let i = self.sets.len();
        for &st in &s.stripes {
            self.owner.insert(st, i);
        }
        self.sets.push(Some(s));
    }

    pub fn sets(&self) -> impl Iterator<Item = &SetImage> {
        self.sets.iter().flatten()
    }

    fn pages(&self) -> u16 {
        self.patches.pages_per_block()
    }

    fn check_ub(&self, ub: u64) -> Result<(), String> {
        if ub >= self.bmt.blocks() {
            return Err(format!(
                "block {ub} past the volume ({} blocks)",
                self.bmt.blocks()
            ));
        }
        Ok(())
    }

    /// Apply one mapping change exactly as the running volume made it.
    #[allow(
        clippy::too_many_lines,
        reason = "one arm per record kind, each the inverse of its change in the engine"
    )]
    fn apply(&mut self, r: &Record) -> Result<(), String> {
        match r {
            Record::Whole { ub, loc, .. } => {
                self.check_ub(*ub)?;
                self.patches.clear(*ub);
                if *loc == Loc::Unmapped {
                    self.sums.clear_block(*ub);
                }
                self.bmt.set(
                    *ub,
                    Entry {
                        base: *loc,
                        patched: false,
                    },
                );
            }
            Record::Patch {
                ub,
                loc,
                first,
                count,
                at,
                ..
            } => {
                self.check_ub(*ub)?;
                if *count == 0 || first + count > self.pages() || at + count > self.pages() {
                    return Err(format!(
                        "patch {first}+{count} (placed at {at}) outside a {}-page block",
                        self.pages()
                    ));
                }
                if *first == 0 && *count == self.pages() && *at == 0 {
                    return self.apply(&Record::Whole {
                        vol: 0,
                        ub: *ub,
                        loc: *loc,
                    });
                }
                let node = PatchNode::placed(*first, *count, *loc, *at);
                crate::volume::patch_block(&mut self.bmt, &mut self.patches, *ub, node);
            }
            Record::Retarget { ub, from, to, .. } => {
                self.check_ub(*ub)?;
                let e = self.bmt.get(*ub);
                if e.base == *from {
                    self.bmt.set(
                        *ub,
                        Entry {
                            base: *to,
                            patched: e.patched,
                        },
                    );
                }
                self.patches.replace_loc(*ub, *from, *to);
            }
            Record::SetCreate { stripes, cols, .. } => self.add_set(SetImage {
                stripes: stripes.clone(),
                cols: cols.clone(),
            }),
            Record::Written {
                ub,
                loc,
                first,
                at,
                sums,
                ..
            } => {
                self.check_ub(*ub)?;
                let count = sums.len() as u16;
                if count == 0 || *first as usize + sums.len() > self.pages() as usize {
                    return Err(format!(
                        "write of pages {first}+{count} outside a {}-page block",
                        self.pages()
                    ));
                }
                self.apply(&Record::Patch {
                    vol: 0,
                    ub: *ub,
                    loc: *loc,
                    first: *first,
                    count,
                    at: *at,
                })?;
                self.sums.set(*ub, *first, sums);
            }
            Record::Remap {
                stripe,
                col,
                donor,
                dcol,
                ..
            } => {
                // A column remapped again replaces its earlier remap (that donor's member
                // failed in turn).
                self.remaps.insert((*stripe, *col), (*donor, *dcol));
            }
            Record::Unremap { stripe, col, .. } => {
                if self.remaps.remove(&(*stripe, *col)).is_none() {
                    return Err(format!(
                        "unremap of column {col} of stripe {stripe}, which is not remapped"
                    ));
                }
            }
            Record::Offloaded { stripe, extent, .. } => {
                let set = self
                    .owner
                    .get(stripe)
                    .and_then(|&i| self.sets[i].as_ref())
                    .filter(|s| s.stripes[0] == *stripe)
                    .ok_or_else(|| format!("offloaded copy of no pair set (stripe {stripe})"))?;
                let e = extent;
                if e.slot as usize >= set.cols.len()
                    || e.copy as usize >= set.stripes.len()
                    || e.at + e.count > self.pages()
                {
                    return Err(format!(
                        "offloaded copy {} of slot {}, pages {}+{}, outside its set",
                        e.copy, e.slot, e.at, e.count
                    ));
                }
                self.offloaded.entry(*stripe).or_default().push(*e);
            }
            Record::Restored { stripe, cols, .. } => {
                // Bits that are not stale (any more) are no error: the record only says
                // these columns hold their contents.
                if let Some(m) = self.stale.get_mut(stripe) {
                    *m &= !cols;
                    if *m == 0 {
                        self.stale.remove(stripe);
                    }
                }
            }
            Record::MemberFailed { .. } | Record::MemberReplaced { .. } => {
                unreachable!("pool-wide records are applied by `Image::apply`")
            }
        }
        Ok(())
    }
}

pub struct Image {
    pub vols: Vec<VolImage>,
    /// Members that failed and were not replaced since (their contents are stale).
    pub failed: BTreeSet<u16>,
    /// Each replaced slot's generation: how many devices took it since `create`.
    pub generations: BTreeMap<u16, u32>,
}

/// Append one volume's durable state to a checkpoint image.
pub fn encode_vol<'a>(
    out: &mut Vec<u8>,
    bmt: &Bmt,
    patches: &PatchTable,
    sets: impl Iterator<Item = (&'a [u32], Vec<[u8; 3]>)>,
    sums: &PageSums,
    remaps: &[(u32, u8, u32, u8)],
) {
    out.extend_from_slice(&bmt.blocks().to_le_bytes());
    out.extend_from_slice(&patches.pages_per_block().to_le_bytes());
    out.extend_from_slice(bmt.as_bytes());
    let lists = patches.sorted();
    out.extend_from_slice(&(lists.len() as u64).to_le_bytes());
    for (ub, nodes) in lists {
        out.extend_from_slice(&ub.to_le_bytes());
        out.extend_from_slice(&(nodes.len() as u16).to_le_bytes());
        for n in nodes {
            out.extend_from_slice(&n.raw().to_le_bytes());
        }
    }
    let count_at = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut count = 0u32;
    for (stripes, cols) in sets {
        out.push(stripes.len() as u8);
        for s in stripes {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend_from_slice(&(cols.len() as u16).to_le_bytes());
        for c in &cols {
            out.extend_from_slice(&c[..stripes.len()]);
        }
        count += 1;
    }
    out[count_at..count_at + 4].copy_from_slice(&count.to_le_bytes());
    sums.encode(out);
    out.extend_from_slice(&(remaps.len() as u32).to_le_bytes());
    for &(s, c, d, dc) in remaps {
        out.extend_from_slice(&s.to_le_bytes());
        out.push(c);
        out.extend_from_slice(&d.to_le_bytes());
        out.push(dc);
    }
}

/// End an image with every volume's log extents (after `encode_failed`): the first stripe
/// of the pair set and the extent.
pub fn encode_offloaded(out: &mut Vec<u8>, per_volume: &[Vec<(u32, LogExtent)>]) {
    for extents in per_volume {
        out.extend_from_slice(&(extents.len() as u32).to_le_bytes());
        for (stripe, e) in extents {
            e.encode(*stripe, out);
        }
    }
}

/// End an image with every volume's stale columns (after `encode_offloaded`).
pub fn encode_stale(out: &mut Vec<u8>, per_volume: &[Vec<(u32, u32)>]) {
    for stale in per_volume {
        out.extend_from_slice(&(stale.len() as u32).to_le_bytes());
        for &(stripe, mask) in stale {
            out.extend_from_slice(&stripe.to_le_bytes());
            out.extend_from_slice(&mask.to_le_bytes());
        }
    }
}

/// Start an image of `volumes` volumes (then `encode_vol` each, then `encode_failed`,
/// `encode_offloaded` and `encode_stale`).
pub fn encode_header(out: &mut Vec<u8>, volumes: usize) {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(volumes as u32).to_le_bytes());
}

/// End an image with the members that failed and were not replaced.
pub fn encode_failed(out: &mut Vec<u8>, failed: &BTreeSet<u16>) {
    out.extend_from_slice(&(failed.len() as u16).to_le_bytes());
    for m in failed {
        out.extend_from_slice(&m.to_le_bytes());
    }
}

/// Slot `member` now holds a device of `generation` (0: one that carries none).
pub fn set_generation(generations: &mut BTreeMap<u16, u32>, member: u16, generation: u32) {
    if generation == 0 {
        generations.remove(&member);
    } else {
        generations.insert(member, generation);
    }
}

/// End an image with each replaced slot's generation (after `encode_stale`).
pub fn encode_generations(out: &mut Vec<u8>, generations: &BTreeMap<u16, u32>) {
    let replaced: Vec<_> = generations.iter().filter(|&(_, &g)| g > 0).collect();
    out.extend_from_slice(&(replaced.len() as u16).to_le_bytes());
    for (m, g) in replaced {
        out.extend_from_slice(&m.to_le_bytes());
        out.extend_from_slice(&g.to_le_bytes());
    }
}

/// In a checkpoint image, running out of bytes names the byte it happened at (`?` on the
/// reader's results says so).
impl From<Truncated> for String {
    fn from(t: Truncated) -> String {
        format!("checkpoint image truncated at byte {}", t.at)
    }
}

impl Image {
    /// A pool with nothing written: `(blocks, pages per block)` per volume.
    pub fn empty(shapes: &[(u64, u16)]) -> Image {
        Image {
            vols: shapes.iter().map(|&(b, p)| VolImage::new(b, p)).collect(),
            failed: BTreeSet::new(),
            generations: BTreeMap::new(),
        }
    }

    /// Encode an image (used for the empty image `create` writes and by tests).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        encode_header(&mut out, self.vols.len());
        for v in &self.vols {
            encode_vol(
                &mut out,
                &v.bmt,
                &v.patches,
                v.sets().map(|s| (s.stripes.as_slice(), s.cols.clone())),
                &v.sums,
                &v.remaps
                    .iter()
                    .map(|(&(s, c), &(d, dc))| (s, c, d, dc))
                    .collect::<Vec<_>>(),
            );
        }
        encode_failed(&mut out, &self.failed);
        let extents: Vec<Vec<(u32, LogExtent)>> = self
            .vols
            .iter()
            .map(|v| {
                v.offloaded
                    .iter()
                    .flat_map(|(&s, es)| es.iter().map(move |&e| (s, e)))
                    .collect()
            })
            .collect();
        encode_offloaded(&mut out, &extents);
        let stale: Vec<Vec<(u32, u32)>> = self
            .vols
            .iter()
            .map(|v| v.stale.iter().map(|(&s, &m)| (s, m)).collect())
            .collect();
        encode_stale(&mut out, &stale);
        encode_generations(&mut out, &self.generations);
        out
    }

    /// Decode an image; it must describe volumes of exactly these shapes.
    pub fn decode(b: &[u8], shapes: &[(u64, u16)]) -> Result<Image, String> {
        let mut c = LeReader::new(b);
        let magic = c.take(8)?;
        let has_generations = magic == MAGIC;
        let has_stale = has_generations || magic == MAGIC_V7;
        let has_offload = has_stale || magic == MAGIC_V6;
        let has_failed = has_offload || magic == MAGIC_V5 || magic == MAGIC_V4;
        let has_remaps = has_failed || magic == MAGIC_V3;
        if !has_remaps && magic != MAGIC_V2 {
            return Err(
                "checkpoint image has no FRIMAGE8 (or FRIMAGE7, 6, 5, 4, 3, 2) magic (a pool \
                 created by an older fusionraid must be created again; one written by a \
                 newer one needs that version)"
                    .into(),
            );
        }
        let n = c.u32()? as usize;
        if n != shapes.len() {
            return Err(format!(
                "checkpoint has {n} volumes, the pool {}",
                shapes.len()
            ));
        }
        let mut vols = Vec::with_capacity(n);
        for (i, &shape) in shapes.iter().enumerate() {
            vols.push(decode_vol(&mut c, i, shape, has_remaps)?);
        }
        let mut failed = BTreeSet::new();
        if has_failed {
            for _ in 0..c.u16()? {
                failed.insert(c.u16()?);
            }
        }
        if has_offload {
            for (i, v) in vols.iter_mut().enumerate() {
                decode_offloaded(&mut c, v).map_err(|e| format!("volume {i}: {e}"))?;
            }
        }
        if has_stale {
            for (i, v) in vols.iter_mut().enumerate() {
                for _ in 0..c.u32()? {
                    let (stripe, mask) = (c.u32()?, c.u32()?);
                    if mask == 0 || v.stale.insert(stripe, mask).is_some() {
                        return Err(format!(
                            "volume {i}: stale columns of stripe {stripe} listed twice or empty"
                        ));
                    }
                }
            }
        }
        let mut generations = BTreeMap::new();
        if has_generations {
            for _ in 0..c.u16()? {
                let (member, g) = (c.u16()?, c.u32()?);
                if g == 0 || generations.insert(member, g).is_some() {
                    return Err(format!(
                        "the generation of member {member}'s slot is listed twice or is 0"
                    ));
                }
            }
        }
        if !c.is_empty() {
            return Err(format!(
                "{} bytes after the checkpoint image",
                b.len() - c.at()
            ));
        }
        Ok(Image {
            vols,
            failed,
            generations,
        })
    }

    pub fn apply(&mut self, r: &Record) -> Result<(), String> {
        let vol = match *r {
            Record::MemberFailed { member } => {
                self.failed.insert(member);
                return Ok(());
            }
            Record::MemberReplaced { member, generation } => {
                self.failed.remove(&member);
                set_generation(&mut self.generations, member, generation);
                return Ok(());
            }
            _ => r.vol().expect("a volume's record") as usize,
        };
        let n = self.vols.len();
        self.vols
            .get_mut(vol)
            .ok_or_else(|| format!("record for volume {vol} of {n}"))?
            .apply(r)
    }
}

/// One volume of a checkpoint image (the `i`th, shaped `(blocks, pages per block)`).
fn decode_vol(
    c: &mut LeReader,
    i: usize,
    (blocks, ppb): (u64, u16),
    has_remaps: bool,
) -> Result<VolImage, String> {
    let b = c.u64()?;
    let p = c.u16()?;
    if (b, p) != (blocks, ppb) {
        return Err(format!(
            "volume {i}: checkpoint shape {b} blocks x {p} pages, pool {blocks} x {ppb}"
        ));
    }
    let raw = c.take(blocks as usize * 5)?.to_vec();
    let mut v = VolImage {
        bmt: Bmt::from_bytes(blocks, raw).map_err(String::from)?,
        patches: PatchTable::new(ppb),
        sums: PageSums::new(blocks, ppb),
        remaps: RemapImage::new(),
        offloaded: BTreeMap::new(),
        stale: BTreeMap::new(),
        sets: Vec::new(),
        owner: HashMap::new(),
    };
    let patched = c.u64()?;
    for _ in 0..patched {
        let ub = c.u64()?;
        v.check_ub(ub)?;
        let k = c.u16()? as usize;
        let mut nodes = Vec::with_capacity(k.min(256));
        for _ in 0..k {
            nodes.push(PatchNode::from_raw(c.u64()?).ok_or("bad patch node")?);
        }
        v.patches
            .set_list(ub, nodes)
            .map_err(|e| format!("volume {i} block {ub}: {e}"))?;
    }
    let sets = c.u32()?;
    for _ in 0..sets {
        let copies = c.u8()? as usize;
        if !(2..=3).contains(&copies) {
            return Err(format!("volume {i}: pair set with {copies} copies"));
        }
        let mut stripes = Vec::with_capacity(copies);
        for _ in 0..copies {
            stripes.push(c.u32()?);
        }
        let slots = c.u16()? as usize;
        let mut cols = Vec::with_capacity(slots.min(64));
        for _ in 0..slots {
            let mut x = [0u8; 3];
            x[..copies].copy_from_slice(c.take(copies)?);
            cols.push(x);
        }
        v.add_set(SetImage { stripes, cols });
    }
    v.sums
        .decode(|n| Ok(c.take(n)?))
        .map_err(|e| format!("volume {i}: {e}"))?;
    if has_remaps {
        let n = c.u32()?;
        for _ in 0..n {
            let (s, col, d, dc) = (c.u32()?, c.u8()?, c.u32()?, c.u8()?);
            if v.remaps.insert((s, col), (d, dc)).is_some() {
                return Err(format!(
                    "volume {i}: column {col} of stripe {s} remapped twice"
                ));
            }
        }
    }
    Ok(v)
}

/// One volume's log extents, checked against its pair sets as their records are.
fn decode_offloaded(c: &mut LeReader, v: &mut VolImage) -> Result<(), String> {
    for _ in 0..c.u32()? {
        let (stripe, extent) = LogExtent::decode(c.take(LogExtent::ENCODED_LEN)?)?;
        v.apply(&Record::Offloaded {
            vol: 0,
            stripe,
            extent,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;

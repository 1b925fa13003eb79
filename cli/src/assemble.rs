//! Opening a pool's members: `create` formats them (superblocks), `serve` assembles them
//! (reads the superblocks, puts each member in its slot, decides whether the pool can run).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use fusionraid_core::scheme::fusion::ConfigError;
use fusionraid_core::{Data, DevOp};
use fusionraid_io::member::run_sync;
use fusionraid_io::member::uring::ring::RingSlot;
use fusionraid_io::{Clock, Member, MemberSpec, OpenOptions, Waker};
use std::sync::Arc;

use crate::create_undo::Undo;
use crate::pool_config::{PoolFile, Spare};
use crate::scheme_choice::{build_engine, tolerance};
use crate::superblock::{SUPERBLOCK_BYTES, SbError, Superblock, Tier, new_uuid, uuid_string};
use fusionraid_core::meta::ImageBound;

const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// The clock and waker members are opened with; the driver must use the same ones.
#[derive(Clone)]
pub struct Io {
    pub clock: Clock,
    pub waker: Arc<Waker>,
    /// The io_uring all file members share.
    uring: RingSlot,
}

impl Io {
    pub fn new() -> anyhow::Result<Io> {
        Ok(Io {
            clock: Clock::new(),
            waker: Arc::new(Waker::new().context("creating the loop's eventfd")?),
            uring: RingSlot::default(),
        })
    }

    fn options(&self, pool: &PoolFile, i: usize, base: &Path, create: bool) -> OpenOptions {
        OpenOptions {
            waker: self.waker.clone(),
            clock: self.clock,
            // Every emulated member gets its own model seed.
            seed: pool.seed.wrapping_mul(1000).wrapping_add(i as u64),
            create_size: if create {
                pool.member_size.map(|s| s.0)
            } else {
                None
            },
            file_space: pool.file_space,
            no_space_wait: pool.no_space_wait_s * 1_000_000_000,
            base_dir: Some(base.to_path_buf()),
            uring: self.uring.clone(),
        }
    }

    fn read_sb(&self, m: &mut dyn Member) -> Result<Superblock, String> {
        let op = DevOp::Read {
            offset: 0,
            len: SUPERBLOCK_BYTES,
        };
        let data = run_sync(m, op, &self.clock, &self.waker, SYNC_TIMEOUT)
            .map_err(|e| format!("reading the superblock: {e}"))?
            .ok_or("reading the superblock returned no data")?;
        Superblock::decode(&data).map_err(|e| match e {
            SbError::Blank => "blank".to_string(),
            e => e.to_string(),
        })
    }

    /// Open `spec` as a new device for slot `index` of `pool` (files are created with the
    /// pool's member size), refuse it if it already belongs to a pool, and write its
    /// superblock with the slot's next `generation`. The device is then ready to take the
    /// slot of a failed member.
    pub fn prepare_replacement(
        &self,
        pool: &PoolIdentity,
        index: usize,
        spec: &str,
        base: &Path,
        generation: u32,
    ) -> anyhow::Result<Box<dyn Member>> {
        let spec = MemberSpec::parse(spec).map_err(|e| anyhow::anyhow!("{spec}: {e}"))?;
        let mut m = fusionraid_io::open_member(&spec, &self.options(&pool.cfg, index, base, true))
            .with_context(|| format!("opening {spec}"))?;
        if m.size_bytes() < pool.disk_bytes {
            bail!(
                "{} holds {} bytes; members of this pool use {}",
                m.name(),
                m.size_bytes(),
                pool.disk_bytes
            );
        }
        if let Ok(sb) = self.read_sb(m.as_mut()) {
            // This very slot of this pool: a replacement the engine refused a moment ago
            // ("try again later": the rebuild not yet durable) or the failed device itself.
            // Nothing of the pool's lives there any more, so it is prepared again; any
            // other pool's or slot's device is left alone.
            if sb.uuid != pool.uuid || sb.index != index as u32 {
                bail!(
                    "{} already holds member {} of pool {}; wipe it first",
                    m.name(),
                    sb.index,
                    uuid_string(&sb.uuid)
                );
            }
        }
        let sb = Superblock {
            version: Superblock::version_for(
                pool.cfg.image_bound,
                !pool.cfg.hdd_members.is_empty(),
            ),
            uuid: pool.uuid,
            index: index as u32,
            count: pool.cfg.members.len() as u32,
            disk_bytes: pool.disk_bytes,
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            config: pool.stored_config.clone(),
            tier: tier_of(&pool.cfg, index),
            generation,
        };
        self.write_sb(m.as_mut(), &sb)?;
        Ok(m)
    }

    fn write_sb(&self, m: &mut dyn Member, sb: &Superblock) -> anyhow::Result<()> {
        let bytes = sb.encode()?;
        let write = DevOp::Write {
            offset: 0,
            data: Data::Bytes(bytes),
            fua: true,
        };
        run_sync(m, write, &self.clock, &self.waker, SYNC_TIMEOUT)
            .map_err(|e| anyhow::anyhow!("writing the superblock: {e}"))?;
        run_sync(m, DevOp::Flush, &self.clock, &self.waker, SYNC_TIMEOUT)
            .map_err(|e| anyhow::anyhow!("flushing the superblock: {e}"))?;
        // Read it back: a member that does not return what it was given is no member.
        let back = self.read_sb(m).map_err(|e| anyhow::anyhow!("{e}"))?;
        if &back != sb {
            bail!("the superblock read back differs from the one written");
        }
        Ok(())
    }
}

/// What identifies a pool on a new member's superblock.
#[derive(Clone)]
pub struct PoolIdentity {
    pub cfg: PoolFile,
    pub uuid: [u8; 16],
    pub disk_bytes: u64,
    pub stored_config: String,
}

/// A pool ready to serve.
pub struct Pool {
    pub cfg: PoolFile,
    pub uuid: [u8; 16],
    pub disk_bytes: u64,
    /// Slot i is member i of the engine; `None` is missing.
    pub members: Vec<Option<Box<dyn Member>>>,
    /// Why each missing member is missing.
    pub missing: Vec<(usize, String)>,
    /// Slot i's device's generation, from its superblock (0 for a missing one).
    pub generations: Vec<u32>,
    /// The pool file as the superblocks store it (written into replacements' superblocks).
    pub stored_config: String,
}

/// The members' common usable size: the smallest, in whole pages.
fn usable_bytes(members: &[Box<dyn Member>]) -> u64 {
    members.iter().map(|m| m.size_bytes()).min().unwrap_or(0) / 4096 * 4096
}

/// Can `cfg` be laid out on members of `disk_bytes` each? The refusal says whether the
/// layout refuses the geometry (no question of size) or the members are too small.
fn check_fit(cfg: &PoolFile, disk_bytes: u64) -> anyhow::Result<()> {
    let Err(e) = build_engine(cfg, None, disk_bytes) else {
        return Ok(());
    };
    let geometry = e.chain().any(|c| {
        matches!(
            c.downcast_ref::<ConfigError>(),
            Some(ConfigError::Geometry { .. })
        )
    });
    Err(if geometry {
        let hint = if cfg.layout == "permutation" {
            ""
        } else {
            " (leave `layout` out to have it chosen, or set layout = \"permutation\", which \
             takes any member count and stripes as wide as the pool)"
        };
        e.context(format!(
            "the pool's layout ({}) refuses its geometry{hint}",
            cfg.resolved_layout()
        ))
    } else {
        let size = fusionraid_io::format_size(disk_bytes);
        e.context(format!("the pool does not fit on members of {size} each"))
    })
}

/// Formats every member of `cfg`: checks the pool fits, then writes superblocks. Refuses
/// members that already belong to a pool unless `force`. Every member is opened and
/// checked before anything is written; should a write or the final check still fail, what
/// was written is put back ([`Undo`]) and the error names the member.
pub fn create(cfg: &PoolFile, base: &Path, force: bool, io: &Io) -> anyhow::Result<Pool> {
    let specs = cfg.specs()?;
    // Member files this create makes: a create that fails removes them again.
    let mut made = MadeFiles(
        specs
            .iter()
            .filter_map(|s| s.resolved(base).file_path().cloned())
            .filter(|p| !p.exists() && !p.starts_with("/dev"))
            .collect(),
    );
    let pool = create_members(cfg, base, force, io, &specs)?;
    made.0.clear();
    Ok(pool)
}

/// Files a `create` made for its members, removed when it fails (dropped while still held).
struct MadeFiles(Vec<std::path::PathBuf>);

impl Drop for MadeFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn create_members(
    cfg: &PoolFile,
    base: &Path,
    force: bool,
    io: &Io,
    specs: &[MemberSpec],
) -> anyhow::Result<Pool> {
    let mut members = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let m = fusionraid_io::open_member(s, &io.options(cfg, i, base, true))
            .with_context(|| format!("`members[{i}]`"))?;
        members.push(m);
    }
    let disk_bytes = usable_bytes(&members);
    check_fit(cfg, disk_bytes)?;
    if !force {
        for (i, m) in members.iter_mut().enumerate() {
            if let Ok(sb) = io.read_sb(m.as_mut()) {
                bail!(
                    "`members[{i}]` ({}) already holds member {} of pool {}; use --force to \
                     overwrite it (its data is lost)",
                    m.name(),
                    sb.index,
                    uuid_string(&sb.uuid)
                );
            }
        }
    }
    // The superblocks record the resolved reserved area, so a later change of how it is
    // computed can never move the data of an existing pool.
    let mut cfg = cfg.clone();
    cfg.data_offset = Some(crate::pool_config::Size(cfg.resolved_data_offset()?));
    // Likewise the layout and the spare shares `auto` resolves to.
    cfg.layout = cfg.resolved_layout();
    let cfg = &cfg.with_spare_resolved(disk_bytes)?;
    let uuid = new_uuid()?;
    // Every member's superblock area is read before the first one is written: a member
    // that can not even be read stops the create with nothing written.
    let mut undo = Undo::default();
    for (i, m) in members.iter_mut().enumerate() {
        undo.save(io, i, m.as_mut(), 0, SUPERBLOCK_BYTES)?;
    }
    let mut pool = Pool {
        cfg: cfg.clone(),
        uuid,
        disk_bytes,
        generations: vec![0; members.len()],
        members: members.into_iter().map(Some).collect(),
        missing: Vec::new(),
        stored_config: cfg.to_toml(),
    };
    match format(&mut pool, io, &mut undo) {
        Ok(()) => Ok(pool),
        Err(e) => {
            let left = undo.restore(io, &mut pool.members);
            Err(if left.is_empty() {
                e.context("create failed; the members are as they were before it")
            } else {
                e.context(format!(
                    "create failed, and could not put back what it wrote on {}: wipe their \
                     first {SUPERBLOCK_BYTES} bytes (or use --force) before creating again",
                    left.join("; ")
                ))
            })
        }
    }
}

/// Writes the superblocks of a new pool, checks each member holds its own, and writes the
/// first checkpoint; every region it writes is saved in `undo` first.
fn format(pool: &mut Pool, io: &Io, undo: &mut Undo) -> anyhow::Result<()> {
    let cfg = &pool.cfg;
    let count = pool.members.len() as u32;
    let created_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for (i, m) in pool.members.iter_mut().enumerate() {
        let m = m.as_mut().context("a member missing at create")?;
        let sb = Superblock {
            version: Superblock::version_for(ImageBound::Zone, !cfg.hdd_members.is_empty()),
            uuid: pool.uuid,
            index: i as u32,
            count,
            disk_bytes: pool.disk_bytes,
            created_unix,
            config: pool.stored_config.clone(),
            tier: tier_of(cfg, i),
            generation: 0,
        };
        io.write_sb(m.as_mut(), &sb)
            .with_context(|| format!("`members[{i}]` ({})", m.name()))?;
    }
    // One device listed twice (the same path, or two names for it) holds only the superblock
    // written last: refuse the pool here, not at its first `serve`.
    for (i, m) in pool.members.iter_mut().enumerate() {
        let m = m.as_mut().context("a member missing at create")?;
        let sb = io
            .read_sb(m.as_mut())
            .map_err(|e| anyhow::anyhow!("`members[{i}]` ({}): {e}", m.name()))?;
        if sb.index as usize != i {
            bail!(
                "`members[{i}]` ({}) and `members[{}]` are the same device (listed twice?); \
                 every member must be a device of its own",
                m.name(),
                sb.index
            );
        }
    }
    if pool.cfg.metadata.journal {
        crate::metadata::write_initial(pool, io, undo)?;
    }
    Ok(())
}

/// Opens the members `file` lists and checks their superblocks: all from one pool, each
/// index once, geometry as the file says. Missing or unreadable members are tolerated up
/// to the volumes' parity; anything else is an error that says which member and why.
pub fn assemble(file: &PoolFile, base: &Path, io: &Io) -> anyhow::Result<Pool> {
    let specs = file.specs()?;
    let Opened { found, unusable } = open_listed(file, &specs, base, io)?;
    if found.is_empty() {
        bail!(
            "no member could be read: {}",
            unusable
                .iter()
                .map(|(_, e)| e.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let uuid = majority_pool(&found);
    let reference = found
        .iter()
        .find(|f| f.sb.uuid == uuid)
        .map(|f| f.sb.clone())
        .expect("the majority pool has a member");
    check_one_pool(&found, &reference, specs.len())?;
    let file = &as_stored(file, &reference)?;
    check_tiers(&found, file)?;
    let in_order = found.iter().all(|f| f.listed == f.sb.index as usize);
    let Placed {
        slots,
        too_small,
        generations,
    } = place_members(found, specs.len(), &reference)?;
    let empty: Vec<usize> = (0..specs.len())
        .filter(|&i| slots[i].is_none() && !too_small.iter().any(|(j, _)| *j == i))
        .collect();
    let mut missing = too_small;
    missing.extend(crate::missing::reasons(&empty, in_order, &unusable));
    missing.sort_by_key(|(i, _)| *i);
    let tol = tolerance(file);
    if missing.len() > tol {
        bail!(
            "{} members are missing and the volumes tolerate {tol}:\n  {}",
            missing.len(),
            missing
                .iter()
                .map(|(i, e)| format!("member {i}: {e}"))
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
    Ok(Pool {
        cfg: file.clone(),
        uuid,
        disk_bytes: reference.disk_bytes,
        members: slots,
        missing,
        generations,
        stored_config: reference.config.clone(),
    })
}

/// A member that opened and holds a superblock.
struct Found {
    /// Its position in the pool file's `members`.
    listed: usize,
    member: Box<dyn Member>,
    sb: Superblock,
}

/// The members of a pool file as `assemble` finds them.
struct Opened {
    found: Vec<Found>,
    /// Members that can not be opened or read, by position in the file, and why.
    unusable: Vec<(usize, String)>,
}

/// Opens every member `specs` lists and reads its superblock. A member another process has
/// open, or one that was never part of a pool, is an error; any other failure leaves the
/// member unusable (maybe missing), for `assemble` to weigh against the parity.
fn open_listed(
    file: &PoolFile,
    specs: &[MemberSpec],
    base: &Path,
    io: &Io,
) -> anyhow::Result<Opened> {
    let mut found = Vec::new();
    let mut unusable = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let mut m = match fusionraid_io::open_member(s, &io.options(file, i, base, false)) {
            Ok(m) => m,
            // Serving without a member another process is writing would not make it safe.
            Err(e) if e.in_use => return Err(e).context(format!("`members[{i}]`")),
            Err(e) => {
                unusable.push((i, e.to_string()));
                continue;
            }
        };
        match io.read_sb(m.as_mut()) {
            Ok(sb) => found.push(Found {
                listed: i,
                member: m,
                sb,
            }),
            Err(e) if e == "blank" => bail!(
                "`members[{i}]` ({s}) has no fusionraid superblock: it was never part of a pool \
                 (run `fusionraid create`), or was wiped"
            ),
            Err(e) => unusable.push((i, format!("{s}: {e}"))),
        }
    }
    Ok(Opened { found, unusable })
}

/// The pool most members belong to (the first one found among equals). A member of any
/// other pool is a mistake in the pool file, not a failure to work around.
fn majority_pool(found: &[Found]) -> [u8; 16] {
    let mut best = (found[0].sb.uuid, 0);
    for f in found {
        let c = found.iter().filter(|o| o.sb.uuid == f.sb.uuid).count();
        if c > best.1 {
            best = (f.sb.uuid, c);
        }
    }
    best.0
}

/// Every member found belongs to `reference`'s pool and agrees with it about the pool, and
/// the pool has as many members as the file lists (`listed`).
fn check_one_pool(found: &[Found], reference: &Superblock, listed: usize) -> anyhow::Result<()> {
    let uuid = reference.uuid;
    for Found {
        listed: i,
        member: m,
        sb,
    } in found
    {
        if sb.uuid != uuid {
            bail!(
                "`members[{i}]` ({}) belongs to pool {} (as member {}), not to pool {}",
                m.name(),
                uuid_string(&sb.uuid),
                sb.index,
                uuid_string(&uuid)
            );
        }
        if sb.count != reference.count
            || sb.version != reference.version
            || sb.disk_bytes != reference.disk_bytes
            || sb.config != reference.config
        {
            bail!(
                "`members[{i}]` ({}) disagrees with the other members about the pool's \
                 configuration (superblocks from different creates?)",
                m.name()
            );
        }
    }
    if reference.count as usize != listed {
        bail!(
            "pool {} has {} members but the pool file lists {listed}",
            uuid_string(&uuid),
            reference.count
        );
    }
    Ok(())
}

/// The pool file as the pool on the members has it: its geometry must be the stored one,
/// and what `create` resolved (`auto` spare shares, the data offset, the metadata area's
/// bound) comes from the members.
fn as_stored(file: &PoolFile, reference: &Superblock) -> anyhow::Result<PoolFile> {
    let stored = PoolFile::parse(&reference.config)
        .context("the pool configuration stored in the superblocks")?;
    // An `auto` spare share or layout in the file is whatever `create` resolved it to.
    let mut file = file.clone();
    if file.layout == crate::pool_config::AUTO_LAYOUT {
        file.layout = stored.layout.clone();
    }
    for (v, s) in file.volumes.iter_mut().zip(&stored.volumes) {
        if v.spare_fraction == Spare::Auto && v.name == s.name {
            v.spare_fraction = s.spare_fraction;
        }
    }
    if stored.geometry_key() != file.geometry_key() {
        bail!(
            "the pool file's geometry differs from the pool on the members\n  on the members: {}\n  \
             in the file:    {}\nchange the file back, or re-create the pool with \
             `fusionraid create --force` (destroys its data)",
            stored.geometry_key(),
            file.geometry_key()
        );
    }
    if let Some(off) = file.data_offset
        && Some(off) != stored.data_offset
    {
        bail!(
            "the pool file's data_offset {} differs from the pool's {} on the members",
            off.0,
            stored.data_offset.map_or(0, |s| s.0)
        );
    }
    if file.hdd_members != stored.hdd_members {
        bail!(
            "the pool file's hdd_members {:?} differ from the pool's {:?} on the members",
            file.hdd_members,
            stored.hdd_members
        );
    }
    // What the members say is where the data is, and how its metadata area was sized.
    file.data_offset = stored.data_offset;
    file.image_bound = reference.image_bound();
    Ok(file)
}

/// The tier `create` records for member `i` of `cfg`.
fn tier_of(cfg: &PoolFile, i: usize) -> Tier {
    if cfg.is_hdd(i) { Tier::Hdd } else { Tier::Ssd }
}

/// Every member found says of itself the tier the stored pool gives its slot.
fn check_tiers(found: &[Found], file: &PoolFile) -> anyhow::Result<()> {
    for f in found {
        let want = tier_of(file, f.sb.index as usize);
        if f.sb.tier != want {
            bail!(
                "`members[{}]` ({}) is recorded as an {} member but the pool's slot {} is an {}",
                f.listed,
                f.member.name(),
                f.sb.tier.name(),
                f.sb.index,
                want.name()
            );
        }
    }
    Ok(())
}

/// The members found, in their slots.
struct Placed {
    /// Slot i is member i of the engine; `None` is missing.
    slots: Vec<Option<Box<dyn Member>>>,
    /// Members left out for holding less than the pool uses, by slot, and why.
    too_small: Vec<(usize, String)>,
    /// Each slot's device's generation (0 for an empty slot).
    generations: Vec<u32>,
}

/// Puts each member found in the slot its superblock names; slots of `n` members nobody
/// claims stay empty. Two members claiming one slot is an error (a mistake in the pool
/// file). A member smaller than the pool's members (a file truncated, say) is left out as
/// missing, like one whose superblock is damaged: refusing to serve a pool its parity
/// covers over one damaged member would keep every volume offline for nothing.
fn place_members(found: Vec<Found>, n: usize, reference: &Superblock) -> anyhow::Result<Placed> {
    let mut slots: Vec<Option<Box<dyn Member>>> = (0..n).map(|_| None).collect();
    let mut too_small = Vec::new();
    let mut generations = vec![0; n];
    let mut names: Vec<Option<String>> = vec![None; n];
    for Found {
        listed: i,
        member: m,
        sb,
    } in found
    {
        let idx = sb.index as usize;
        if let Some(other) = &names[idx] {
            bail!(
                "`members[{i}]` ({}) and {other} both claim to be member {idx} of pool {} \
                 (the same device listed twice, or a copied image?)",
                m.name(),
                uuid_string(&reference.uuid)
            );
        }
        if m.size_bytes() < reference.disk_bytes {
            let why = format!(
                "`members[{i}]` ({}) holds {} bytes; the pool uses {} per member (truncated?)",
                m.name(),
                m.size_bytes(),
                reference.disk_bytes
            );
            names[idx] = Some(m.name().to_string());
            too_small.push((idx, why));
            continue;
        }
        if idx != i {
            tracing::info!(member = m.name(), "listed at position {i}, is member {idx}");
        }
        names[idx] = Some(m.name().to_string());
        generations[idx] = sb.generation;
        slots[idx] = Some(m);
    }
    Ok(Placed {
        slots,
        too_small,
        generations,
    })
}

//! The pool's durable mapping metadata on the members: `create` writes the initial (empty)
//! checkpoint, `serve` reads every member's metadata region and recovers the FusionRAID
//! volumes from it (core::meta has the format and the recovery itself).

use std::time::Duration;

use anyhow::Context;
use fusionraid_core::meta::RecoveryReport;
use fusionraid_core::meta::recover::region;
use fusionraid_core::scheme::fusion::FusionScheme;
use fusionraid_core::scheme::fusion::durable::meta_layout;
use fusionraid_core::{Data, DevOp, Engine};
use fusionraid_io::member::run_sync;

use crate::assemble::{Io, Pool};
use crate::create_undo::Undo;
use crate::scheme_choice::engine_config;

const META_TIMEOUT: Duration = Duration::from_secs(60);
/// Metadata is read in pieces of this size (a region can hold large checkpoints).
const READ_PIECE: u64 = 4 << 20;

/// The id that marks this pool's journal blocks and checkpoints: the superblock uuid folded.
pub fn pool_id(uuid: &[u8; 16]) -> u64 {
    let a = u64::from_le_bytes(uuid[..8].try_into().expect("8 bytes"));
    let b = u64::from_le_bytes(uuid[8..].try_into().expect("8 bytes"));
    a ^ b.rotate_left(17)
}

/// Write the empty pool's first checkpoint on every member that holds a copy, saving in
/// `undo` what each write replaces.
pub fn write_initial(pool: &mut Pool, io: &Io, undo: &mut Undo) -> anyhow::Result<()> {
    let cfg = pool
        .cfg
        .fusion_config(pool.disk_bytes, true, pool_id(&pool.uuid))?;
    let units = FusionScheme::initial_metadata(&cfg).context("building the initial checkpoint")?;
    for (disk, offset, bytes) in units {
        let m = pool.members[disk.index()]
            .as_mut()
            .context("a member missing at create")?;
        undo.save(io, disk.index(), m.as_mut(), offset, bytes.len() as u64)?;
        let op = DevOp::Write {
            offset,
            data: Data::Bytes(bytes),
            fua: true,
        };
        run_sync(m.as_mut(), op, &io.clock, &io.waker, META_TIMEOUT)
            .map_err(|e| anyhow::anyhow!("writing the initial checkpoint to {}: {e}", m.name()))?;
    }
    Ok(())
}

/// Recover the FusionRAID volumes (`redirect` off for Fusion-ND) from the members and build
/// the engine around them. Unreadable members count as missing.
pub fn recover_engine(
    pool: &mut Pool,
    redirect: bool,
    io: &Io,
) -> anyhow::Result<(Engine, RecoveryReport)> {
    let cfg = pool
        .cfg
        .fusion_config(pool.disk_bytes, redirect, pool_id(&pool.uuid))?;
    let layout = meta_layout(&cfg).context("the pool's metadata is not journaled")?;
    let (off, len) = region(&layout);
    let started = std::time::Instant::now();
    let mut regions: Vec<Option<Vec<u8>>> = Vec::with_capacity(pool.members.len());
    for slot in pool.members.iter_mut() {
        let Some(m) = slot.as_mut() else {
            regions.push(None);
            continue;
        };
        let mut buf = Vec::with_capacity(len as usize);
        let mut ok = true;
        let mut at = 0;
        while at < len {
            let n = READ_PIECE.min(len - at);
            let op = DevOp::Read {
                offset: off + at,
                len: n,
            };
            match run_sync(m.as_mut(), op, &io.clock, &io.waker, META_TIMEOUT) {
                Ok(Some(b)) => buf.extend_from_slice(&b),
                Ok(None) | Err(_) => {
                    tracing::warn!(member = m.name(), "metadata region unreadable");
                    ok = false;
                    break;
                }
            }
            at += n;
        }
        regions.push(ok.then_some(buf));
    }
    let refs: Vec<Option<&[u8]>> = regions.iter().map(|r| r.as_deref()).collect();
    let (scheme, report) = FusionScheme::recover(cfg, &refs, 0)
        .context("recovering the volumes from the members' metadata")?;
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, %report, "recovered");
    let engine = Engine::new(engine_config(&pool.cfg)?, Box::new(scheme), 0);
    Ok((engine, report))
}

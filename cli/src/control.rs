//! Operator commands for a running `serve`: `fusionraid fail N`, `fusionraid replace N
//! SPEC` and `fusionraid scrub`, sent over a control socket next to the status socket (one line in, one line out),
//! and the hot-spare keeper that replaces a failed member by a listed spare once the rebuild
//! has moved everything off it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args as ClapArgs;
use fusionraid_io::Driver;
use fusionraid_io::driver::MemberState;

use crate::assemble::{Io, PoolIdentity};
use crate::socket_server::SocketServer;
use fusionraid_core::scheme::fusion::Level;

/// The control socket that goes with a status socket.
pub fn control_path(status: &Path) -> PathBuf {
    status.with_extension("ctl")
}

/// What the serve process needs to carry out operator commands.
pub struct Operator {
    pub driver: Arc<Driver>,
    pub io: Io,
    pub pool: PoolIdentity,
    pub base: PathBuf,
    pub pool_file: PathBuf,
    /// Hot spares not used yet.
    pub spares: Mutex<Vec<String>>,
    /// Each slot's member spec as the pool file lists it now: the pool file's at start, then
    /// the device each `replace` put in. The next replace of a slot edits this entry; the
    /// entry read at start would be gone from the file after a first replace, the file
    /// would keep naming the device taken out, and the next `serve` would take that stale
    /// device back for a healthy member.
    pub members: Mutex<Vec<String>>,
}

impl Operator {
    /// The operator of a pool `serve` has just assembled from `pool_file` (members relative
    /// to `base`); its hot spares are the listed ones not among the members.
    pub fn new(
        driver: Arc<Driver>,
        io: Io,
        pool: PoolIdentity,
        base: PathBuf,
        pool_file: PathBuf,
    ) -> Operator {
        let cfg = &pool.cfg;
        let spares = cfg.spares.iter().filter(|s| !cfg.members.contains(s));
        Operator {
            driver,
            io,
            spares: Mutex::new(spares.cloned().collect()),
            members: Mutex::new(cfg.members.clone()),
            pool,
            base,
            pool_file,
        }
    }

    /// Carry out one command line; the answer starts with "ok" or "error".
    pub fn handle(&self, line: &str) -> String {
        let words: Vec<&str> = line.split_whitespace().collect();
        let r = match words.as_slice() {
            ["fail", n] | ["fail", n, "force"] => n
                .parse::<usize>()
                .map_err(|_| anyhow::anyhow!("member index expected, got {n:?}"))
                .and_then(|i| self.fail(i, words.len() == 3)),
            ["replace", n, spec] => n
                .parse::<usize>()
                .map_err(|_| anyhow::anyhow!("member index expected, got {n:?}"))
                .and_then(|i| self.replace(i, spec)),
            ["scrub"] => self
                .driver
                .start_scrub()
                .map(|()| {
                    "scrub started; `fusionraid status` shows its progress and findings".into()
                })
                .map_err(|e| anyhow::anyhow!(e)),
            _ => Err(anyhow::anyhow!(
                "unknown command {line:?} (fail N [force] | replace N SPEC | scrub)"
            )),
        };
        match r {
            Ok(s) => format!("ok: {s}"),
            Err(e) => format!("error: {e:#}"),
        }
    }

    fn fail(&self, i: usize, force: bool) -> anyhow::Result<String> {
        if i >= self.pool.cfg.members.len() {
            bail!("there is no member {i}");
        }
        if let Some(s) = self.driver.status(Duration::from_secs(5)) {
            let down = |m: &&fusionraid_io::driver::MemberStatus| {
                matches!(m.state, MemberState::Failed | MemberState::Missing)
            };
            if s.members.get(i).is_some_and(|m| down(&m)) {
                // Failed by the engine a moment ago, its record may not be committed yet:
                // answer once it is, like a failure asked for here.
                self.driver.fail_member(i).map_err(|e| anyhow::anyhow!(e))?;
                return Ok(format!("member {i} has already failed"));
            }
            // Failing a member is how an operator takes a device out; it must not be how
            // data is lost by mistake. While failed members' data is not rebuilt yet, one
            // more failure than the volumes tolerate loses whatever it still held (a RAID5
            // pool's second `fail` during the first rebuild lost hundreds of blocks).
            let others: Vec<usize> = s.members.iter().filter(down).map(|m| m.index).collect();
            let levels: Vec<Option<Level>> = self
                .pool
                .cfg
                .volumes
                .iter()
                .map(|v| v.parsed_level().ok())
                .collect();
            if !force && let Some((name, tol)) = at_risk(&s.volumes, &levels, others.len()) {
                let which = if others.is_empty() {
                    format!(
                        "a member replaced in place still has columns to rebuild, and volume \
                         {name}'s data there is not rebuilt yet"
                    )
                } else {
                    format!(
                        "member(s) {others:?} failed and volume {name}'s data on them is not \
                         rebuilt yet"
                    )
                };
                bail!(
                    "failing member {i} now would lose data: {which} (`fusionraid status` \
                     shows the rebuild), and it tolerates {tol} failed member(s); wait until \
                     the rebuild is done, or use --force"
                );
            }
        }
        // Returns once the failure is durable: a crash after this answer keeps it failed.
        self.driver.fail_member(i).map_err(|e| anyhow::anyhow!(e))?;
        Ok(format!(
            "member {i} failed (recorded in the pool's metadata); its data is being rebuilt \
             onto the other members"
        ))
    }

    fn replace(&self, i: usize, spec: &str) -> anyhow::Result<String> {
        if i >= self.pool.cfg.members.len() {
            bail!("there is no member {i}");
        }
        // One replace at a time: each edits the slot's entry the one before it wrote.
        let mut members = self.members.lock().expect("members");
        let current = members[i].clone();
        // The failed member's emulation (`emu:PRESET...:`) goes on with its slot unless the
        // new spec brings its own.
        let wrapped = keep_emu(&current, spec);
        let kept = wrapped.as_ref().map(|w| {
            format!(
                " (the failed member's {} wrapper is kept; give an emu: spec of your own to \
                 change it)",
                w.strip_suffix(spec).unwrap_or(w).trim_end_matches(':')
            )
        });
        let spec = wrapped.as_deref().unwrap_or(spec);
        // A number no device that held the slot before carries (docs/FORMAT.md): the
        // metadata records it with the replacement, so a restart that finds a device
        // taken out of the slot, even one a pool file still names, knows it is stale.
        let generation = new_generation()?;
        let m = self
            .io
            .prepare_replacement(&self.pool, i, spec, &self.base, generation)?;
        // Answered once the replacement is durable: a crash after it keeps the new device.
        self.driver
            .replace_member(i, m, generation)
            .map_err(|e| anyhow::anyhow!(e))?;
        members[i] = spec.to_string();
        let note = match update_pool_file(&self.pool_file, &current, spec) {
            Ok(()) => format!("{} now lists it", self.pool_file.display()),
            Err(e) => format!(
                "update members[{i}] in {} to \"{spec}\" yourself ({e})",
                self.pool_file.display()
            ),
        };
        Ok(format!(
            "member {i} is now {spec}{}; {note}",
            kept.unwrap_or_default()
        ))
    }

    /// Replace failed members by listed spares once their data has been rebuilt elsewhere
    /// (onto the whole pool, faster than onto one spare), or once the rebuild can go no
    /// further: the spare then takes what is left in place.
    pub fn use_spares(&self) {
        if self.spares.lock().expect("spares").is_empty() {
            return;
        }
        let Some(s) = self.driver.status(Duration::from_secs(5)) else {
            return;
        };
        let rebuilt = s
            .volumes
            .iter()
            .all(|v| v.rebuild.is_none() || matches!(rebuild_phase(v), Some("done" | "stalled")));
        if !rebuilt {
            return;
        }
        for m in s.members.iter().filter(|m| m.state == MemberState::Failed) {
            let Some(spec) = self.spares.lock().expect("spares").first().cloned() else {
                return;
            };
            match self.replace(m.index, &spec) {
                Ok(msg) => {
                    self.spares.lock().expect("spares").remove(0);
                    crate::console::tell!("fusionraid: hot spare: {msg}");
                }
                Err(e) => {
                    tracing::warn!(member = m.index, spare = %spec, "hot spare not used: {e:#}")
                }
            }
        }
    }
}

/// A random slot generation for a new device: never 0, which the devices of `create` and of
/// builds before generations carry.
fn new_generation() -> anyhow::Result<u32> {
    loop {
        let u = crate::superblock::new_uuid()?;
        let g = u32::from_le_bytes(u[..4].try_into().expect("4 bytes"));
        if g != 0 {
            return Ok(g);
        }
    }
}

/// `new` inside the `emu:` wrapper of `old` when `old` has one and `new` has none:
/// `emu:consumer:file:/x/m3.img` and `file:/x/new.img` give `emu:consumer:file:/x/new.img`.
fn keep_emu(old: &str, new: &str) -> Option<String> {
    if new.starts_with("emu:") {
        return None;
    }
    // emu:PRESET[,options]:INNER (the options hold no ':').
    let rest = old.strip_prefix("emu:")?;
    let head = rest.find(':')?;
    let wrapped = format!("emu:{}:{new}", &rest[..head]);
    fusionraid_io::MemberSpec::parse(&wrapped).ok()?;
    Some(wrapped)
}

/// The first volume (name, members its level tolerates) that one more failure could cost
/// data: its rebuild is unfinished and `down` members already fail it as many as its level
/// covers (a member replaced in place counts while it holds stale columns). Each volume by its own level: a RAID6 volume whose rebuild cannot finish (its
/// stripes span every member) does not stop a RAID5 volume's rebuilt pool from losing
/// another member, as the smallest tolerance of all volumes did. `levels` in volume order
/// (None: unknown, taken as no tolerance).
fn at_risk(
    volumes: &[fusionraid_io::driver::VolumeView],
    levels: &[Option<Level>],
    down: usize,
) -> Option<(String, usize)> {
    volumes.iter().find_map(|v| {
        let tol = levels
            .get(v.index as usize)
            .copied()
            .flatten()
            .map_or(0, Level::nparity);
        let down = down + usize::from(v.stale_columns > 0);
        (rebuild_unfinished(v) && down >= tol).then(|| (v.name.clone(), tol))
    })
}

/// The phase of a volume's rebuild (`RebuildPhase::name`): as the server reports it, or,
/// from a server that reports none, the first word of its description, which is the phase's
/// name ("rebalancing" when only a rebalance runs, the rebuild state gone with a restart).
fn rebuild_phase(v: &fusionraid_io::driver::VolumeView) -> Option<&str> {
    v.rebuild_phase.as_deref().or_else(|| {
        let r = v.rebuild.as_deref()?;
        r.split([':', ' ']).next()
    })
}

/// Is a volume's data not rebuilt yet? Exactly the phases "rebuilding", "stalled" and
/// "committing" (the rebuild's records not durable yet); "done", and a rebalance alone,
/// are not.
fn rebuild_unfinished(v: &fusionraid_io::driver::VolumeView) -> bool {
    matches!(
        rebuild_phase(v),
        Some("rebuilding" | "stalled" | "committing")
    )
}

/// Point the pool file's entry for the replaced member at the new device (the file is
/// where the next `serve` looks for members). Only an exact, unique match is edited.
fn update_pool_file(path: &Path, old: &str, new: &str) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path).context("reading the pool file")?;
    let quoted = format!("\"{old}\"");
    if text.matches(&quoted).count() != 1 {
        bail!("{quoted} does not appear exactly once");
    }
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text.replacen(&quoted, &format!("\"{new}\""), 1))
        .context("writing the pool file")?;
    std::fs::rename(&tmp, path).context("replacing the pool file")?;
    Ok(())
}

/// Serves operator commands until the returned server is dropped: one command line in, one
/// answer line out.
pub fn serve_control(path: &Path, op: Arc<Operator>) -> anyhow::Result<SocketServer> {
    SocketServer::start(path, "control", "control", move |c| {
        let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = c.set_write_timeout(Some(Duration::from_secs(10)));
        let mut line = String::new();
        // One bounded line: a client can not make us buffer without limit.
        let mut r = BufReader::new(std::io::Read::take(&c, 4096));
        if r.read_line(&mut line).is_err() {
            return;
        }
        let answer = op.handle(line.trim());
        let mut w = &c;
        let _ = w.write_all(answer.as_bytes());
        let _ = w.write_all(b"\n");
    })
}

#[derive(ClapArgs, Debug)]
#[command(after_help = "Example: fusionraid fail --pool tank.toml 3")]
pub struct FailArgs {
    /// Member index to fail.
    pub member: usize,
    /// Fail it even if that loses data (other members failed, their rebuild not done).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub target: Target,
}

#[derive(ClapArgs, Debug)]
#[command(after_help = "Example: fusionraid replace --pool tank.toml 3 file:/srv/new3.img")]
pub struct ReplaceArgs {
    /// Index of the failed member to replace.
    pub member: usize,
    /// The new device (member spec, e.g. file:new.img or /dev/sdx).
    pub spec: String,
    #[command(flatten)]
    pub target: Target,
}

#[derive(ClapArgs, Debug)]
pub struct Target {
    /// The pool file whose running serve to address (default: the demo pool's).
    #[arg(long)]
    pub pool: Option<PathBuf>,
    /// The status socket of the running serve (the control socket sits next to it).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

fn send(target: &Target, line: &str) -> anyhow::Result<()> {
    let status = crate::status_cmd::socket_for(target.socket.as_ref(), target.pool.as_ref())?;
    let path = control_path(&status);
    let mut c = UnixStream::connect(&path).with_context(|| {
        format!(
            "connecting to {} (is `fusionraid serve` running?)",
            path.display()
        )
    })?;
    c.set_read_timeout(Some(Duration::from_secs(60)))?;
    writeln!(c, "{line}")?;
    let mut answer = String::new();
    BufReader::new(c).read_line(&mut answer)?;
    let answer = answer.trim();
    if answer.starts_with("ok") {
        println!("{answer}");
        return Ok(());
    }
    // The refusal is the error: `main` prints it once, on one line, and exits non-zero.
    let why = answer.strip_prefix("error:").unwrap_or(answer).trim();
    Err(Refused(if why.is_empty() {
        "the server closed the connection without an answer".into()
    } else {
        why.to_string()
    })
    .into())
}

/// A command the running serve refused, with its reason.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error: {}", self.0)
    }
}

impl std::error::Error for Refused {}

#[derive(ClapArgs, Debug)]
pub struct ScrubArgs {
    /// The pool file, as `status` takes it (the same as --pool).
    #[arg(value_name = "POOL", conflicts_with = "pool")]
    pub pool_arg: Option<PathBuf>,
    #[command(flatten)]
    pub target: Target,
}

pub fn scrub(mut args: ScrubArgs) -> anyhow::Result<()> {
    if args.target.pool.is_none() {
        args.target.pool = args.pool_arg.take();
    }
    send(&args.target, "scrub")
}

pub fn fail(args: FailArgs) -> anyhow::Result<()> {
    let force = if args.force { " force" } else { "" };
    send(&args.target, &format!("fail {}{force}", args.member))
}

pub fn replace(args: ReplaceArgs) -> anyhow::Result<()> {
    if args.spec.contains(char::is_whitespace) {
        bail!("member specs can not contain spaces");
    }
    send(
        &args.target,
        &format!("replace {} {}", args.member, args.spec),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusionraid_io::driver::VolumeView;

    /// Issue 19: `replace 3 file:/x/new.img` for a failed `emu:consumer:file:/x/m3.img`
    /// dropped the emulation without a word.
    #[test]
    fn a_replacement_keeps_the_emu_wrapper_of_the_failed_member() {
        assert_eq!(
            keep_emu("emu:consumer:file:/x/m3.img", "file:/x/new.img").as_deref(),
            Some("emu:consumer:file:/x/new.img")
        );
        assert_eq!(
            keep_emu("emu:dc,aged,seed=3:file:m.img", "mem:64M").as_deref(),
            Some("emu:dc,aged,seed=3:mem:64M")
        );
        // The new spec's own wrapper wins; no wrapper to keep, nothing changes.
        assert_eq!(keep_emu("emu:consumer:file:a", "emu:dc:file:b"), None);
        assert_eq!(keep_emu("file:a", "file:b"), None);
    }

    fn volume(index: u32, name: &str, rebuild: Option<&str>) -> VolumeView {
        VolumeView {
            index,
            name: name.into(),
            rebuild: rebuild.map(str::to_string),
            ..Default::default()
        }
    }

    /// A RAID6 volume as wide as the pool cannot rebuild (its stripes span every member)
    /// and stays "stalled"; the RAID5 volume next to it was rebuilt. One more failure
    /// costs neither, but the pool's smallest tolerance (RAID5's 1) refused it.
    #[test]
    fn each_volume_is_judged_by_its_own_level() {
        let levels = [Some(Level::Raid6), Some(Level::Raid5)];
        let vols = [
            volume(0, "r6", Some("stalled after 0 blocks moved")),
            volume(1, "r5", Some("done: 94 blocks moved")),
        ];
        assert_eq!(at_risk(&vols, &levels, 1), None);
        assert_eq!(at_risk(&vols, &levels, 2), Some(("r6".into(), 2)));
        // The RAID5 volume still rebuilding: a second failure would cost it.
        let vols = [
            volume(0, "r6", Some("stalled after 0 blocks moved")),
            volume(1, "r5", Some("rebuilding: 3 blocks")),
        ];
        assert_eq!(at_risk(&vols, &levels, 1), Some(("r5".into(), 1)));
        // A RAID5 volume whose replaced member still has stale columns: no member failed,
        // and one more failure would still cost it.
        let mut v = volume(1, "r5", Some("rebuilding: 0 blocks moved"));
        v.stale_columns = 12;
        assert_eq!(
            at_risk(&[v], &[None, Some(Level::Raid5)], 0),
            Some(("r5".into(), 1))
        );
        // A level not known counts as no tolerance at all.
        assert_eq!(
            at_risk(&vols[1..], &[None, None], 0),
            Some(("r5".into(), 0))
        );
    }

    #[test]
    fn only_the_unfinished_phases_refuse_a_failure() {
        for r in [
            "rebuilding: 3 blocks",
            "stalled after 1",
            "committing: 2 blocks",
        ] {
            assert!(rebuild_unfinished(&volume(0, "v", Some(r))), "{r}");
        }
        for r in [
            "done: 7 blocks moved",
            "done: 1; rebalancing: 2",
            "rebalancing: 1",
        ] {
            assert!(!rebuild_unfinished(&volume(0, "v", Some(r))), "{r}");
        }
        // The phase the server reports wins over the words.
        let mut v = volume(0, "v", Some("done: 7 blocks moved"));
        v.rebuild_phase = Some("committing".into());
        assert!(rebuild_unfinished(&v));
    }
}

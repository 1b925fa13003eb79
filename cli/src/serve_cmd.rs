//! `fusionraid serve [POOL.toml]`: assemble the pool, run the engine, export every volume
//! over NBD, publish status, and shut down cleanly on Ctrl-C / SIGTERM.
//!
//! Without a pool file it serves the demo pool (see `demo.rs`), creating it on first use.

use crate::console::{say, tell};
use fusionraid_core::meta::recover::human_bytes;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use clap::Args as ClapArgs;
use fusionraid_core::meta::RecoveryReport;
use fusionraid_core::{DiskId, Engine};
use fusionraid_io::driver::ExportOptions;
use fusionraid_io::{Driver, DriverConfig, ExportMux, format_size};
use fusionraid_nbd::{Server, ServerConfig, ServerHandle};

use crate::assemble::{Io, Pool, PoolIdentity, assemble, create};
use crate::control::{Operator, control_path, serve_control};
use crate::listen_check;
use crate::metadata::recover_engine;
use crate::metrics::{MetricsServer, PoolFacts};
use crate::pool_config::{PoolFile, ServePaths};
use crate::scheme_choice::{build_engine, is_fusion, known_schemes};
use crate::signals::Termination;
use crate::socket_server::SocketServer;
use crate::status_doc::{StatusDoc, serve_status};
use crate::superblock::uuid_string;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The pool file. Without one, serves the demo pool in --dir (created on first use).
    pub pool: Option<PathBuf>,
    /// Directory of the demo pool.
    #[arg(long, default_value = crate::demo::DEFAULT_DIR)]
    pub dir: PathBuf,
    /// Scheme to run instead of the pool file's.
    #[arg(long, value_name = "NAME")]
    pub scheme: Option<String>,
    /// NBD Unix socket (overrides the pool file's serve.unix).
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// NBD TCP address, e.g. 127.0.0.1:10809 (overrides serve.tcp).
    #[arg(long, value_name = "ADDR")]
    pub tcp: Option<String>,
    /// Do not listen on TCP even if the pool file says so.
    #[arg(long)]
    pub no_tcp: bool,
    /// Status socket (overrides serve.status).
    #[arg(long, value_name = "PATH")]
    pub status: Option<PathBuf>,
    /// Export every volume with byte granularity (read-modify-write at the edge).
    #[arg(long)]
    pub rmw: bool,
    /// Serve Prometheus metrics on http://ADDR/metrics, e.g. 127.0.0.1:9108 (overrides
    /// serve.metrics; off unless asked).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
}

const NOT_DURABLE: &str = "metadata.journal = false: the mapping is kept in memory only and a \
                           restart of `serve` starts every volume empty";
/// Baselines whose mapping (a log) lives in memory only.
const NOT_CRASH_SAFE: &[&str] = &["lograid", "4-raidm", "nvraid"];

pub fn run(args: Args) -> anyhow::Result<()> {
    // Before any thread exists, so every thread inherits the blocked mask.
    let term = Termination::block();
    let (pool_path, demo_fresh) = match &args.pool {
        Some(p) => (p.clone(), false),
        None => crate::demo::prepare(&args.dir)?,
    };
    let file = PoolFile::load(&pool_path)?;
    let base = crate::create_cmd::base_dir(&pool_path)?;
    let paths = check_addresses(&file, &base, &args)?;
    let io = Io::new()?;
    let mut pool = open_pool(&file, &base, demo_fresh, &io)?;
    let scheme = args.scheme.clone().unwrap_or_else(|| file.scheme.clone());
    let started = start_engine(&mut pool, &scheme, &io)?;
    let Pool {
        cfg,
        uuid,
        members,
        missing,
        disk_bytes,
        stored_config,
        ..
    } = pool;
    let driver = start_driver(started.engine, members, &io, &cfg, started.journaled)?;
    let names: Vec<String> = cfg.volumes.iter().map(|v| v.name.clone()).collect();
    let exports = start_nbd(&driver, &cfg, &names, &paths, &args)?;
    let driver = Arc::new(driver);
    let doc = StatusDoc {
        pool: cfg.name.clone(),
        uuid: uuid_string(&uuid),
        layout: cfg.resolved_layout(),
        block_size: cfg.block_size.0,
        exports: exports.uris.clone(),
        volume_names: names,
        missing: missing
            .iter()
            .map(|(i, w)| format!("member {i}: {w}"))
            .collect(),
        notes: started.notes,
        snapshot: driver
            .status(Duration::from_secs(5))
            .context("the engine loop did not answer")?,
    };
    let facts = PoolFacts {
        scheme: scheme.clone(),
        recovery: started.recovery,
    };
    let identity = PoolIdentity {
        cfg: cfg.clone(),
        uuid,
        disk_bytes,
        stored_config,
    };
    let operator = Arc::new(Operator::new(
        driver.clone(),
        io.clone(),
        identity,
        base,
        pool_path,
    ));
    let services = Services::start(&args, &cfg, &paths, facts, doc, operator)?;

    print_banner(
        &cfg,
        &uuid,
        &scheme,
        &exports.uris,
        &paths.status,
        services.metrics.as_ref().map(|m| m.addr),
        &cfg.spare_warnings(disk_bytes),
    );
    let sig = term.wait();
    tell!("fusionraid: signal {sig}, shutting down");
    services.stop();
    exports.handle.shutdown();
    match Arc::try_unwrap(driver) {
        Ok(d) => d.shutdown(Duration::from_secs(10)),
        Err(_) => tracing::warn!("status still referenced the driver at shutdown"),
    }
    Ok(())
}

/// The pool `file` lists: in-memory members keep nothing between runs, and a demo pool
/// whose files are missing is new, so those are formatted now; any other is assembled from
/// its members.
fn open_pool(file: &PoolFile, base: &Path, demo_fresh: bool, io: &Io) -> anyhow::Result<Pool> {
    if let Some(w) = memory_overcommit(file) {
        tell!("warning: {w}");
    }
    if file.is_ephemeral() || demo_fresh {
        create(file, base, demo_fresh, io)
    } else {
        assemble(file, base, io)
    }
}

/// `mem:` members take memory only as they are written (like `nbdkit memory`), so a pool
/// larger than the machine's memory starts; writing more than fits ends with the process
/// killed and every member lost. Said once at start.
fn memory_overcommit(file: &PoolFile) -> Option<String> {
    let mem: u64 = file
        .specs()
        .ok()?
        .iter()
        .map(|s| match s {
            fusionraid_io::MemberSpec::Mem { size, .. } => *size,
            _ => 0,
        })
        .sum();
    let total = crate::host::memory_bytes()?;
    (mem > total).then(|| {
        format!(
            "the mem: members hold up to {} in all, more than this machine's {} of memory: \
             writing more than fits ends with the process killed and every member lost",
            human_bytes(mem),
            human_bytes(total)
        )
    })
}

/// Starts the engine's loop on the members; a journaled pool serves only once its first
/// commit is durable.
fn start_driver(
    engine: Engine,
    members: Vec<Option<Box<dyn fusionraid_io::Member>>>,
    io: &Io,
    cfg: &PoolFile,
    journaled: bool,
) -> anyhow::Result<Driver> {
    let driver = Driver::start(
        engine,
        members,
        io.clock,
        io.waker.clone(),
        DriverConfig {
            queue_depth: cfg.serve.queue_depth.unwrap_or(256),
        },
    )?;
    if journaled {
        wait_first_commit(&driver);
    }
    Ok(driver)
}

/// The engine of this start, and what building it found.
struct Started {
    engine: Engine,
    /// Whether the mapping is journaled (the engine recovered it from the members).
    journaled: bool,
    /// What recovery found (journaled pools only).
    recovery: Option<RecoveryReport>,
    /// Lines for `status`: what the pool does not keep, members held failed.
    notes: Vec<String>,
}

/// Builds the engine for `scheme` (recovering a journaled pool's mapping from its members)
/// and fails the members that are missing or failed before this start.
fn start_engine(pool: &mut Pool, scheme: &str, io: &Io) -> anyhow::Result<Started> {
    let mut notes = Vec::new();
    let journaled = is_fusion(scheme) && pool.cfg.metadata.journal;
    let (mut engine, recovery) = if journaled {
        let redirect = scheme.eq_ignore_ascii_case("fusionraid");
        let (engine, report) = recover_engine(pool, redirect, io)?;
        // `status` shows the report on its own `recovery:` line; not again as a note. It
        // says whether the last run stopped cleanly or crashed.
        tell!("fusionraid: recovery: {report}");
        (engine, Some(report))
    } else {
        notes.extend(durability_note(scheme));
        let engine = build_engine(&pool.cfg, Some(scheme), pool.disk_bytes)
            .with_context(|| format!("known schemes: {}", known_schemes()))?;
        (engine, None)
    };
    for (i, why) in &pool.missing {
        tell!("fusionraid: member {i} is missing ({why}); serving degraded");
        engine.fail_disk(DiskId(*i as u32), 0);
    }
    // Members the journal says failed (and were not replaced): they may read fine again,
    // but writes skipped them since, so they are stale and stay failed.
    let failed_earlier = recovery.as_ref().map_or(&[][..], |r| &r.members_failed[..]);
    for &i in failed_earlier {
        let i = usize::from(i);
        if i < pool.members.len() && pool.members[i].is_some() {
            let why = format!(
                "member {i} failed before this start and holds stale data: serving degraded \
                 until `fusionraid replace {i} SPEC` (the same device may be given again)"
            );
            tell!("fusionraid: {why}");
            notes.push(why);
            engine.fail_disk(DiskId(i as u32), 0);
        }
    }
    if let Some(r) = &recovery {
        for (i, why) in taken_out(pool, r, failed_earlier) {
            tell!("fusionraid: {why}");
            engine.fail_disk(DiskId(i as u32), 0);
            notes.push(why);
        }
    }
    if pool.cfg.is_ephemeral() {
        notes.push("members are in memory: their contents are lost at exit".into());
    }
    Ok(Started {
        engine,
        journaled,
        recovery,
        notes,
    })
}

/// Members whose device is not the one the metadata says holds their slot (its superblock's
/// slot generation differs, docs/FORMAT.md): a device taken out by `replace` that a pool
/// file names again, or one a crash stopped `replace` from putting in. Either missed writes
/// (or never held any), so it must not serve as it is. Members already held failed are left
/// out. By slot, with what `status` says.
fn taken_out(pool: &Pool, r: &RecoveryReport, failed_earlier: &[u16]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, m) in pool.members.iter().enumerate() {
        let Some(m) = m else { continue };
        let expected = r.slot_generations.get(&(i as u16)).copied().unwrap_or(0);
        let found = pool.generations[i];
        if found == expected || failed_earlier.contains(&(i as u16)) {
            continue;
        }
        out.push((
            i,
            format!(
                "member {i} ({}) is not the device the pool's metadata has in slot {i} (slot \
                 generation {found:#x}, expected {expected:#x}): it was replaced, or its \
                 replacement never completed, and holds stale data: serving degraded until \
                 `fusionraid replace {i} SPEC` (the same device may be given again), or list \
                 the slot's current device in the pool file",
                m.name()
            ),
        ));
    }
    out
}

/// What a scheme run without the journal does not keep across a restart, if anything.
fn durability_note(scheme: &str) -> Option<String> {
    if is_fusion(scheme) {
        Some(NOT_DURABLE.to_string())
    } else if NOT_CRASH_SAFE.contains(&scheme) {
        Some(format!(
            "scheme {scheme} keeps its log mapping in memory only (an evaluation baseline):                  a restart loses every volume's data"
        ))
    } else {
        None
    }
}

/// Where `serve` listens, each of those addresses checked (listen_check.rs) before the
/// members are read or written: an address in use stops it there. The demo's TCP address
/// is left out: busy, the demo serves on its Unix socket only (`start_nbd`).
fn check_addresses(file: &PoolFile, base: &Path, args: &Args) -> anyhow::Result<ServePaths> {
    let paths = listen_paths(file, base, args);
    if let Some(u) = &paths.unix {
        listen_check::unix(u, "the NBD socket")?;
    }
    if let Some(t) = &paths.tcp
        && args.pool.is_some()
    {
        listen_check::tcp(t, "NBD TCP")?;
    }
    listen_check::unix(&paths.status, "the status socket")?;
    listen_check::unix(&control_path(&paths.status), "the control socket")?;
    if let Some(m) = args.metrics.as_ref().or(file.serve.metrics.as_ref()) {
        listen_check::tcp(m, "the metrics endpoint")?;
    }
    Ok(paths)
}

/// Where to listen: the pool file's `[serve]` paths, overridden by the command line.
fn listen_paths(cfg: &PoolFile, base: &Path, args: &Args) -> ServePaths {
    let mut paths = cfg.serve.resolve(base);
    if let Some(u) = &args.unix {
        paths.unix = Some(u.clone());
    }
    if let Some(t) = &args.tcp {
        paths.tcp = Some(t.clone());
    }
    if args.no_tcp {
        paths.tcp = None;
    }
    if let Some(s) = &args.status {
        paths.status = s.clone();
    }
    paths
}

/// The running NBD server and the URI of every export it serves.
struct Exports {
    handle: ServerHandle,
    uris: Vec<String>,
}

/// Exports every volume over NBD on the Unix socket and the TCP address of `paths`.
fn start_nbd(
    driver: &Driver,
    cfg: &PoolFile,
    names: &[String],
    paths: &ServePaths,
    args: &Args,
) -> anyhow::Result<Exports> {
    let backend = driver.backend(&ExportOptions {
        preferred_bytes: cfg.block_size.0 as u32,
        names: names.to_vec(),
    });
    let unaligned = cfg
        .volumes
        .iter()
        .map(|v| v.allow_unaligned || args.rmw)
        .collect();
    let mux = Arc::new(ExportMux::new(backend, unaligned));
    let mut server = Server::new(mux).with_config(ServerConfig::default());
    let mut uris = Vec::new();
    if let Some(u) = &paths.unix {
        server = server
            .bind_unix(u)
            .with_context(|| format!("binding the NBD socket {}", u.display()))?;
        uris.extend(
            names
                .iter()
                .map(|n| format!("nbd+unix:///{n}?socket={}", u.display())),
        );
    }
    if let Some(t) = &paths.tcp {
        // The demo's TCP listener is a convenience: a busy port must not stop the demo.
        if args.pool.is_none() && std::net::TcpListener::bind(t.as_str()).is_err() {
            tell!("fusionraid: {t} is busy; serving on the Unix socket only");
        } else {
            server = server
                .bind_tcp(t.as_str())
                .with_context(|| format!("binding NBD TCP {t}"))?;
        }
    }
    let handle = server.start().context("starting the NBD server")?;
    for a in handle.tcp_addrs() {
        uris.extend(names.iter().map(|n| format!("nbd://{a}/{n}")));
    }
    Ok(Exports { handle, uris })
}

/// What `serve` runs next to the NBD exports: the status socket, the metrics endpoint (when
/// asked for), the control socket and the hot-spare keeper. Stopped in that order.
struct Services {
    metrics: Option<MetricsServer>,
    status: SocketServer,
    control: SocketServer,
    keeper: SpareKeeper,
    operator: Arc<Operator>,
}

impl Services {
    /// `doc` is the status document without its snapshot, which each request takes anew.
    fn start(
        args: &Args,
        cfg: &PoolFile,
        paths: &ServePaths,
        facts: PoolFacts,
        doc: StatusDoc,
        operator: Arc<Operator>,
    ) -> anyhow::Result<Services> {
        let snapshot_doc = {
            let d = operator.driver.clone();
            move || {
                let mut doc = doc.clone();
                doc.snapshot = d.status(Duration::from_secs(5))?;
                Some(doc)
            }
        };
        let metrics = match args.metrics.as_ref().or(cfg.serve.metrics.as_ref()) {
            Some(addr) => {
                let m = MetricsServer::start(addr, facts, snapshot_doc.clone())?;
                tracing::info!(addr = %m.addr, "metrics endpoint listening");
                Some(m)
            }
            None => None,
        };
        let status = serve_status(&paths.status, move || {
            serde_json::to_string_pretty(&snapshot_doc()?).ok()
        })?;
        let control = serve_control(&control_path(&paths.status), operator.clone())?;
        let keeper = SpareKeeper::start(operator.clone())?;
        Ok(Services {
            metrics,
            status,
            control,
            keeper,
            operator,
        })
    }

    fn stop(self) {
        drop(self.metrics);
        drop(self.status);
        drop(self.control);
        self.keeper.stop();
        drop(self.operator);
    }
}

/// The thread that puts hot spares in the slots of failed members, twice a second.
struct SpareKeeper {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl SpareKeeper {
    fn start(op: Arc<Operator>) -> std::io::Result<SpareKeeper> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("spares".into())
            .spawn(move || {
                while !flag.load(Ordering::Acquire) {
                    op.use_spares();
                    std::thread::sleep(Duration::from_millis(500));
                }
            })?;
        Ok(SpareKeeper { stop, thread })
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.thread.join();
    }
}

/// Serve only once this run's first commit (a checkpoint, unflagged) is durable: until
/// then the newest checkpoint may be the last run's clean one, and a crash before it would
/// be reported as that clean shutdown although writes were acknowledged since.
fn wait_first_commit(driver: &fusionraid_io::Driver) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < until {
        let commits = driver
            .status(Duration::from_secs(5))
            .and_then(|s| s.metadata)
            .map_or(0, |m| m.commits);
        if commits > 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    tracing::warn!("no metadata commit within 10 s of start; serving anyway");
}

fn print_banner(
    cfg: &PoolFile,
    uuid: &[u8; 16],
    scheme: &str,
    uris: &[String],
    status: &std::path::Path,
    metrics: Option<std::net::SocketAddr>,
    warnings: &[String],
) {
    say!(
        "fusionraid: serving pool '{}' ({}), scheme {scheme}, {} members",
        cfg.name,
        uuid_string(uuid),
        cfg.members.len()
    );
    for v in &cfg.volumes {
        say!(
            "  volume {:<10} {} width {} size {} spare {}{}",
            v.name,
            v.level_label(),
            v.stripe_width(),
            format_size(v.size.0),
            v.spare_fraction,
            if v.allow_unaligned {
                " (byte-granular)"
            } else {
                ""
            }
        );
    }
    for w in warnings {
        tell!("{w}");
    }
    say!("exports:");
    for u in uris {
        say!("  {u}");
    }
    if let Some(u) = uris.first() {
        let size = cfg.volumes[0].size.0;
        say!("connect, for example:");
        say!("  nbdinfo '{u}'");
        say!("  qemu-io -f raw '{u}' -c 'write -P 0xab 0 1M' -c 'read -P 0xab 0 1M'");
        say!(
            "  fio --name=t --ioengine=nbd --uri='{u}' --rw=randrw --bs=4k --iodepth=16 \
             --size={} --time_based --runtime=10",
            format_size(size)
        );
        if cfg.volumes[0].allow_unaligned {
            say!(
                "  mkdir -p /tmp/fr && nbdfuse /tmp/fr/{} '{u}' &   # then mkfs.ext4 /tmp/fr/{} \
                 and mount -o loop",
                cfg.volumes[0].name,
                cfg.volumes[0].name
            );
        }
    }
    say!("status: fusionraid status --socket {}", status.display());
    say!("top:    fusionraid top --socket {}", status.display());
    if let Some(a) = metrics {
        say!("metrics: http://{a}/metrics");
    }
    say!("stop:   Ctrl-C");
    say!("ready");
    use std::io::Write;
    let _ = std::io::stdout().flush();
}

/// A panic anywhere in `serve` (an engine invariant failed) ends the process, after the
/// usual message: the engine's state may be half-changed, so no turn may run on it again,
/// and a server that stayed up with its engine stopped left clients waiting forever on the
/// requests they had in flight. Ending it closes their connections (they see errors), and
/// the next start recovers from the journal as after kill -9.
pub fn stop_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        tell!("fusionraid: serve stops after a panic; start it again to recover from the journal");
        std::process::abort();
    }));
}

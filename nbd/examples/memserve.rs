//! Serves an in-memory export over NBD, for poking at the server by hand:
//!
//! ```text
//! cargo run -p fusionraid-nbd --example memserve -- --unix /tmp/x.sock --size 64M
//! nbdinfo 'nbd+unix:///?socket=/tmp/x.sock'
//! ```
//!
//! Options: `--unix PATH`, `--tcp ADDR` (default 127.0.0.1:10809 when no
//! listener is given), `--size N[K|M|G]` (default 64M), `--name NAME`,
//! `--min-block N` (default 4096), `--read-only`, `--rmw` (byte-granular via
//! read-modify-write, for clients such as nbdfuse). Runs until killed.

use std::process::ExitCode;
use std::sync::Arc;

use fusionraid_nbd::{
    Backend, BlockSize, DEFAULT_TCP_ADDR, ExportInfo, MemBackend, RmwBackend, Server,
};

struct Args {
    unix: Vec<String>,
    tcp: Vec<String>,
    size: u64,
    name: String,
    min_block: u32,
    read_only: bool,
    rmw: bool,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let (num, shift) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    let n: u64 = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    n.checked_shl(shift)
        .filter(|v| v >> shift == n)
        .ok_or_else(|| format!("size {s:?} too large"))
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        unix: Vec::new(),
        tcp: Vec::new(),
        size: 64 << 20,
        name: String::new(),
        min_block: 4096,
        read_only: false,
        rmw: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--unix" => a.unix.push(value()?),
            "--tcp" => a.tcp.push(value()?),
            "--size" => a.size = parse_size(&value()?)?,
            "--name" => a.name = value()?,
            "--min-block" => {
                a.min_block = value()?
                    .parse()
                    .map_err(|_| "bad --min-block".to_string())?
            }
            "--read-only" => a.read_only = true,
            "--rmw" => a.rmw = true,
            "-h" | "--help" => {
                return Err(
                    "usage: memserve [--unix PATH]... [--tcp ADDR]... [--size 64M] \
                            [--name NAME] [--min-block 4096] [--read-only] [--rmw]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if a.unix.is_empty() && a.tcp.is_empty() {
        a.tcp.push(DEFAULT_TCP_ADDR.into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let info = ExportInfo::new(args.name.clone(), args.size)
        .with_description("fusionraid-nbd in-memory export")
        .with_read_only(args.read_only)
        .with_block_size(BlockSize {
            minimum: args.min_block,
            preferred: args.min_block.max(4096),
            maximum: 32 << 20,
        });
    let run = || -> std::io::Result<()> {
        let mem = Arc::new(MemBackend::new(info));
        let backend: Arc<dyn Backend> = if args.rmw {
            Arc::new(RmwBackend::new(mem))
        } else {
            mem
        };
        let mut server = Server::new(backend);
        for p in &args.unix {
            server = server.bind_unix(p)?;
            eprintln!("listening on nbd+unix:///{}?socket={p}", args.name);
        }
        for t in &args.tcp {
            server = server.bind_tcp(t.as_str())?;
        }
        let handle = server.start()?;
        for a in handle.tcp_addrs() {
            eprintln!("listening on nbd://{a}/{}", args.name);
        }
        loop {
            std::thread::park();
        }
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memserve: {e}");
            ExitCode::FAILURE
        }
    }
}

//! Member spec strings: how a pool file or the command line names a member.
//!
//! ```text
//! file:PATH                      a file or block device, through io_uring (O_DIRECT)
//! mem:SIZE[,populate]            memory, e.g. mem:4G (contents lost at exit); pages are
//!                                allocated on first write, or all up front with populate
//! emu:PRESET[,OPT...]:INNER      INNER with the latency and stalls of an SSD model
//!                                PRESET: dc, consumer, pm1725a, sn200, hdd7200, or a
//!                                profiled serial in lower case (s39wna0kb01161, ...)
//!                                OPT: aged | seed=N | speed=F | failslow=SPEC
//!                                (SPEC: FACTORx/ON/OFF[/random] or FACTORx/ON/P%, as
//!                                `sim --fail-slow`; e.g. failslow=4x/2s/8s)
//! nbd://HOST[:PORT]/EXPORT       a remote NBD export over TCP
//! nbd+unix:///EXPORT?socket=P    a remote NBD export over a Unix socket
//! ```
//! Sizes take K, M, G, T suffixes (powers of 1024, optionally followed by "iB" or "B").

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use fusionraid_devices::fail_slow::FailSlowSpec;
use fusionraid_nbd::NbdUri;

#[derive(Clone, Debug, PartialEq)]
pub enum MemberSpec {
    File {
        path: PathBuf,
    },
    Mem {
        size: u64,
        /// Allocate every page when the member opens, not on first write.
        populate: bool,
    },
    Emu {
        preset: String,
        aged: bool,
        seed: Option<u64>,
        speed: f64,
        /// Intermittently slow by a factor ([`fusionraid_devices::fail_slow`]).
        fail_slow: Option<FailSlowSpec>,
        inner: Box<MemberSpec>,
    },
    Nbd {
        uri: String,
    },
}

/// A spec string that can not be parsed; the message says what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("member spec '{spec}': {reason}")]
pub struct SpecError {
    pub spec: String,
    pub reason: String,
}

const FORMS: &str = "expected file:PATH, mem:SIZE[,populate], emu:PRESET[,aged][,seed=N][,speed=F][,failslow=SPEC]:INNER, \
                     nbd://HOST[:PORT]/EXPORT or nbd+unix:///EXPORT?socket=PATH";

impl MemberSpec {
    pub fn parse(s: &str) -> Result<MemberSpec, SpecError> {
        let err = |reason: String| SpecError {
            spec: s.to_string(),
            reason,
        };
        if s.starts_with("nbd://") || s.starts_with("nbd+unix://") {
            NbdUri::parse(s).map_err(|e| err(e.to_string()))?;
            return Ok(MemberSpec::Nbd { uri: s.to_string() });
        }
        let Some((kind, rest)) = s.split_once(':') else {
            return Err(err(FORMS.into()));
        };
        match kind {
            "file" => {
                if rest.is_empty() {
                    return Err(err("file: needs a path".into()));
                }
                Ok(MemberSpec::File {
                    path: PathBuf::from(rest),
                })
            }
            "mem" => parse_mem(rest).map_err(err),
            "emu" => parse_emu(rest).map_err(err),
            _ => Err(err(FORMS.into())),
        }
    }

    /// The innermost file path, if this member is (or wraps) a file.
    pub fn file_path(&self) -> Option<&PathBuf> {
        match self {
            MemberSpec::File { path } => Some(path),
            MemberSpec::Emu { inner, .. } => inner.file_path(),
            _ => None,
        }
    }

    /// Members whose contents do not outlive the process (no superblock survives).
    pub fn is_ephemeral(&self) -> bool {
        match self {
            MemberSpec::Mem { .. } => true,
            MemberSpec::Emu { inner, .. } => inner.is_ephemeral(),
            _ => false,
        }
    }

    /// The same spec with relative file paths resolved against `base`.
    pub fn resolved(&self, base: &std::path::Path) -> MemberSpec {
        match self {
            MemberSpec::File { path } if path.is_relative() => MemberSpec::File {
                path: base.join(path),
            },
            MemberSpec::Emu {
                preset,
                aged,
                seed,
                speed,
                fail_slow,
                inner,
            } => MemberSpec::Emu {
                preset: preset.clone(),
                aged: *aged,
                seed: *seed,
                speed: *speed,
                fail_slow: *fail_slow,
                inner: Box::new(inner.resolved(base)),
            },
            other => other.clone(),
        }
    }
}

/// `mem:` after its colon: `SIZE[,populate]`. Errors are the reason only.
fn parse_mem(rest: &str) -> Result<MemberSpec, String> {
    let (size, populate) = match rest.split_once(',') {
        None => (rest, false),
        Some((size, "populate")) => (size, true),
        Some((_, o)) => return Err(format!("unknown mem option '{o}' (populate)")),
    };
    let size = parse_size(size)?;
    if size == 0 || size % 4096 != 0 {
        return Err(format!(
            "mem size {size} must be a positive multiple of 4096"
        ));
    }
    Ok(MemberSpec::Mem { size, populate })
}

/// `emu:` after its colon: `PRESET[,OPT...]:INNER`. Errors are the reason only.
fn parse_emu(rest: &str) -> Result<MemberSpec, String> {
    let Some((opts, inner)) = rest.split_once(':') else {
        return Err("emu: needs a preset and an inner member, e.g. emu:dc:mem:1G".into());
    };
    let mut parts = opts.split(',');
    let preset = parts.next().unwrap_or_default().to_string();
    if preset.is_empty() {
        return Err("emu: needs a preset name, e.g. emu:dc:...".into());
    }
    let known = fusionraid_devices::list_presets()
        .into_iter()
        .chain(fusionraid_devices::list_hdd_presets());
    if !known.clone().any(|p| p == preset) {
        return Err(format!(
            "unknown emu preset '{preset}' (known: {})",
            known.collect::<Vec<_>>().join(", ")
        ));
    }
    let EmuOptions {
        aged,
        seed,
        speed,
        fail_slow,
    } = parse_emu_options(parts)?;
    let inner = MemberSpec::parse(inner).map_err(|e| e.to_string())?;
    if matches!(inner, MemberSpec::Emu { .. }) {
        return Err("emu: can not wrap another emu: member".into());
    }
    Ok(MemberSpec::Emu {
        preset,
        aged,
        seed,
        speed,
        fail_slow,
        inner: Box::new(inner),
    })
}

/// The options of an `emu:` spec, between its preset and its inner member.
struct EmuOptions {
    aged: bool,
    seed: Option<u64>,
    speed: f64,
    fail_slow: Option<FailSlowSpec>,
}

fn parse_emu_options<'a>(opts: impl Iterator<Item = &'a str>) -> Result<EmuOptions, String> {
    let mut o = EmuOptions {
        aged: false,
        seed: None,
        speed: 1.0,
        fail_slow: None,
    };
    let mut seen: Vec<&str> = Vec::new();
    for opt in opts {
        // A repeated option would silently override the first; say so instead.
        let key = opt.split_once('=').map_or(opt, |(k, _)| k);
        if seen.contains(&key) {
            return Err(format!("emu option '{key}' given twice"));
        }
        seen.push(key);
        match opt.split_once('=') {
            None if opt == "aged" => o.aged = true,
            Some(("seed", v)) => o.seed = Some(v.parse().map_err(|_| format!("bad seed '{v}'"))?),
            Some(("speed", v)) => {
                o.speed = v
                    .parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite() && *f > 0.0)
                    .ok_or_else(|| format!("bad speed factor '{v}'"))?
            }
            Some(("failslow", v)) => o.fail_slow = Some(FailSlowSpec::parse(v)?),
            _ => {
                return Err(format!(
                    "unknown emu option '{opt}' (aged, seed=N, speed=F, failslow=SPEC)"
                ));
            }
        }
    }
    Ok(o)
}

impl FromStr for MemberSpec {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        MemberSpec::parse(s)
    }
}

impl fmt::Display for MemberSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemberSpec::File { path } => write!(f, "file:{}", path.display()),
            MemberSpec::Mem { size, populate } => {
                write!(f, "mem:{}", format_size(*size))?;
                if *populate {
                    write!(f, ",populate")?;
                }
                Ok(())
            }
            MemberSpec::Emu {
                preset,
                aged,
                seed,
                speed,
                fail_slow,
                inner,
            } => {
                write!(f, "emu:{preset}")?;
                if *aged {
                    write!(f, ",aged")?;
                }
                if let Some(s) = seed {
                    write!(f, ",seed={s}")?;
                }
                if *speed != 1.0 {
                    write!(f, ",speed={speed}")?;
                }
                if let Some(fs) = fail_slow {
                    write!(f, ",failslow={fs}")?;
                }
                write!(f, ":{inner}")
            }
            MemberSpec::Nbd { uri } => f.write_str(uri),
        }
    }
}

/// Parses "4096", "64K", "1M", "2G", "1T", "4KiB", "10GB" (all powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    if num.is_empty() {
        return Err(format!(
            "bad size '{s}': expected a number with an optional K/M/G/T suffix"
        ));
    }
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(format!(
                "bad size '{s}': unknown unit '{unit}' (K, M, G, T)"
            ));
        }
    };
    let n: u64 = num.parse().map_err(|_| format!("bad size '{s}'"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size '{s}' is too large"))
}

/// The largest exact unit: 65536 -> "64K", 1536 -> "1536".
pub fn format_size(n: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n != 0 && n.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert!(parse_size("G").is_err());
        assert!(parse_size("3X").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert_eq!(format_size(64 << 10), "64K");
        assert_eq!(format_size(3 << 30), "3G");
        assert_eq!(format_size(1000), "1000");
    }

    #[test]
    fn specs_round_trip() {
        for s in [
            "file:/dev/nvme0n1",
            "mem:1G",
            "mem:64M,populate",
            "emu:dc:mem:256M",
            "emu:consumer,aged,seed=3,speed=2:file:./d0.img",
            "emu:dc,aged,failslow=4x/2s/8500ms:mem:1G",
            "nbd://127.0.0.1:10809/disk",
            "nbd+unix:///disk?socket=/tmp/x.sock",
        ] {
            let p = MemberSpec::parse(s).unwrap();
            assert_eq!(p.to_string(), s);
            assert_eq!(MemberSpec::parse(&p.to_string()).unwrap(), p);
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let e = |s: &str| MemberSpec::parse(s).unwrap_err().to_string();
        assert!(e("/dev/sda").contains("expected file:PATH"));
        assert!(e("mem:12").contains("multiple of 4096"));
        assert!(e("mem:1G,prefault").contains("unknown mem option"));
        assert!(e("emu:dc").contains("inner member"));
        assert!(e("emu:dc,fast:mem:1G").contains("unknown emu option"));
        assert!(e("emu:dc:emu:dc:mem:1G").contains("can not wrap"));
        assert!(e("nbd+unix:///x").contains("socket"));
        assert!(e("file:").contains("needs a path"));
        assert!(e("emu:ssd:mem:1G").contains("unknown emu preset"));
        assert!(e("emu:dc,seed=1,seed=2:mem:1G").contains("twice"));
        assert!(e("emu:dc,speed=nan:mem:1G").contains("speed"));
        assert!(e("emu:dc,failslow=4x:mem:1G").contains("fail-slow"));
        assert!(e("mem:18446744073709551615T").contains("too large"));
    }

    #[test]
    fn resolve_and_flags() {
        let s = MemberSpec::parse("emu:dc:file:d0.img").unwrap();
        let r = s.resolved(std::path::Path::new("/pool"));
        assert_eq!(r.file_path().unwrap(), &PathBuf::from("/pool/d0.img"));
        assert!(!r.is_ephemeral());
        assert!(MemberSpec::parse("emu:dc:mem:4M").unwrap().is_ephemeral());
    }
}

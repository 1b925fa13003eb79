//! NBD URIs (doc/uri.md of the NBD project), the two unencrypted forms:
//!
//! * `nbd://host[:port][/export]` (TCP, port 10809 by default)
//! * `nbd+unix:///[export]?socket=PATH` (Unix socket)
//!
//! TLS schemes are recognised only to say they are unsupported; unknown
//! query parameters are errors (the URI spec asks parsers to diagnose them)
//! except experimental `x-` ones, which are ignored.

use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::NbdError;
use crate::proto::consts::NBD_DEFAULT_PORT;

/// Where an export lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NbdUri {
    Tcp {
        host: String,
        port: u16,
        export: String,
    },
    /// `socket` may start with a NUL byte: a Linux abstract socket.
    Unix { socket: PathBuf, export: String },
}

impl NbdUri {
    pub fn parse(uri: &str) -> Result<Self, NbdError> {
        let err = |reason: &str| NbdError::InvalidUri {
            uri: uri.to_string(),
            reason: reason.to_string(),
        };
        let (scheme, rest) = uri
            .split_once("://")
            .ok_or_else(|| err("expected nbd://... or nbd+unix://..."))?;
        let unix = match scheme.to_ascii_lowercase().as_str() {
            "nbd" => false,
            "nbd+unix" => true,
            "nbds" | "nbds+unix" => return Err(err("TLS (nbds) is not supported")),
            _ => return Err(err("scheme must be nbd or nbd+unix")),
        };
        if rest.contains('#') {
            return Err(err("fragments are not allowed"));
        }
        let (hier, query) = match rest.split_once('?') {
            Some((h, q)) => (h, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match hier.find('/') {
            Some(i) => hier.split_at(i),
            None => (hier, ""),
        };
        let export = match path.strip_prefix('/') {
            Some(p) => decode_text(p).map_err(|r| err(&format!("export name: {r}")))?,
            None => String::new(),
        };

        let mut socket = None;
        for pair in query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "socket" if unix => {
                    let v = percent_decode(value).map_err(|r| err(&format!("socket: {r}")))?;
                    if v.is_empty() {
                        return Err(err("socket= is empty"));
                    }
                    socket = Some(PathBuf::from(OsString::from_vec(v)));
                }
                "socket" => return Err(err("socket= is only valid with nbd+unix")),
                k if k.starts_with("tls-") => return Err(err("TLS parameters are not supported")),
                k if k.starts_with("x-") => {}
                k => return Err(err(&format!("unknown query parameter {k:?}"))),
            }
        }

        if unix {
            if !authority.is_empty() {
                return Err(err(
                    "nbd+unix URIs take no host (use nbd+unix:///export?socket=PATH)",
                ));
            }
            let socket = socket.ok_or_else(|| err("nbd+unix needs ?socket=PATH"))?;
            return Ok(NbdUri::Unix { socket, export });
        }

        if authority.contains('@') {
            return Err(err("user info is not supported"));
        }
        let (host, port) = split_host_port(authority).map_err(|r| err(&r))?;
        if host.is_empty() {
            return Err(err("missing host"));
        }
        Ok(NbdUri::Tcp { host, port, export })
    }

    pub fn export(&self) -> &str {
        match self {
            NbdUri::Tcp { export, .. } | NbdUri::Unix { export, .. } => export,
        }
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`; an empty port is the default.
fn split_host_port(authority: &str) -> Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or("unterminated [ in IPv6 address")?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or("junk after ]")?),
        };
        (h, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None | Some("") => NBD_DEFAULT_PORT,
        Some(p) => p.parse().map_err(|_| format!("bad port {p:?}"))?,
    };
    Ok((host.to_string(), port))
}

fn percent_decode(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                // from_str_radix alone would take "+f" as 15.
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("bad %-escape")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// Export names are UTF-8 without NUL.
fn decode_text(s: &str) -> Result<String, String> {
    let v = percent_decode(s)?;
    if v.contains(&0) {
        return Err("contains NUL".into());
    }
    String::from_utf8(v).map_err(|_| "not UTF-8".into())
}

fn percent_encode(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for &c in b {
        if c.is_ascii_alphanumeric() || b"-._~/".contains(&c) {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

impl FromStr for NbdUri {
    type Err = NbdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NbdUri::parse(s)
    }
}

impl fmt::Display for NbdUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NbdUri::Tcp { host, port, export } => {
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                write!(
                    f,
                    "nbd://{host}:{port}/{}",
                    percent_encode(export.as_bytes())
                )
            }
            NbdUri::Unix { socket, export } => write!(
                f,
                "nbd+unix:///{}?socket={}",
                percent_encode(export.as_bytes()),
                percent_encode(socket.as_os_str().as_bytes())
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tcp(host: &str, port: u16, export: &str) -> NbdUri {
        NbdUri::Tcp {
            host: host.into(),
            port,
            export: export.into(),
        }
    }

    #[test]
    fn spec_examples() {
        let p = |s: &str| NbdUri::parse(s).unwrap();
        assert_eq!(
            p("nbd://example.com/disk"),
            tcp("example.com", 10809, "disk")
        );
        assert_eq!(p("nbd://example.com/"), tcp("example.com", 10809, ""));
        assert_eq!(p("nbd://example.com"), tcp("example.com", 10809, ""));
        assert_eq!(
            p("nbd://example.com//disk"),
            tcp("example.com", 10809, "/disk")
        );
        assert_eq!(
            p("nbd://example.com/hello%20world"),
            tcp("example.com", 10809, "hello world")
        );
        assert_eq!(p("nbd://127.0.0.1:1234/x"), tcp("127.0.0.1", 1234, "x"));
        assert_eq!(p("nbd://[::1]:99/x"), tcp("::1", 99, "x"));
        assert_eq!(p("nbd://[::1]"), tcp("::1", 10809, ""));
        assert_eq!(p("nbd://h/x?x-debug=1"), tcp("h", 10809, "x"));
        assert_eq!(
            p("nbd+unix:///disk?socket=/tmp/nbd.sock"),
            NbdUri::Unix {
                socket: "/tmp/nbd.sock".into(),
                export: "disk".into()
            }
        );
        assert_eq!(
            p("nbd+unix://?socket=%00abstract"),
            NbdUri::Unix {
                socket: PathBuf::from(OsString::from_vec(b"\0abstract".to_vec())),
                export: "".into()
            }
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let reason = |s: &str| match NbdUri::parse(s) {
            Err(NbdError::InvalidUri { reason, .. }) => reason,
            other => panic!("{s}: expected an error, got {other:?}"),
        };
        assert!(reason("nbds://h/x").contains("TLS"));
        assert!(reason("http://h/x").contains("scheme"));
        assert!(reason("nbd:/h").contains("expected"));
        assert!(reason("nbd+unix:///x").contains("socket"));
        assert!(reason("nbd+unix://host/x?socket=/s").contains("no host"));
        assert!(reason("nbd://h/x?socket=/s").contains("nbd+unix"));
        assert!(reason("nbd://h:99999/x").contains("port"));
        assert!(reason("nbd://h/x?foo=1").contains("foo"));
        assert!(reason("nbd://h/x?tls-type=anon").contains("TLS"));
        assert!(reason("nbd://h/%zz").contains("escape"));
        assert!(reason("nbd://h/%+f").contains("escape"));
        assert!(reason("nbd+unix:///x?socket=%-1").contains("escape"));
        assert!(reason("nbd://h/a%00b").contains("NUL"));
        assert!(reason("nbd:///x").contains("host"));
        assert!(reason("nbd://user@h/x").contains("user"));
        assert!(reason("nbd://h/x#frag").contains("fragment"));
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(
            export in "[^\u{0}]{0,20}",
            host in "[a-z][a-z0-9.-]{0,15}",
            port: u16,
            socket in "/[a-zA-Z0-9 _%&?#=./-]{1,30}",
        ) {
            let t = NbdUri::Tcp { host, port, export: export.clone() };
            prop_assert_eq!(NbdUri::parse(&t.to_string()).unwrap(), t);
            let u = NbdUri::Unix { socket: socket.into(), export };
            prop_assert_eq!(NbdUri::parse(&u.to_string()).unwrap(), u);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = NbdUri::parse(&s);
        }
    }
}

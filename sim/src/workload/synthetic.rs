//! Synthetic tenants: open-loop load described by a few knobs instead of a Table-4 name, for
//! capacity studies such as "the highest IOPS at a latency target" ([`crate::slo`]).
//!
//! A tenant is a [`WorkloadSpec`]: Poisson arrivals at `iops`, a read share, one request
//! size, uniform random addresses over a footprint; optionally sequential runs, a hot region
//! and ON/OFF bursts, the knobs the Table-4 specs use. The text form (`fusionraid sim
//! --synthetic`) is `key=value` pairs separated by commas:
//!
//! ```
//! use fusionraid_sim::workload::parse_synthetic;
//! let t = parse_synthetic("read=0.9,bs=4k,iops=200k,footprint=8G", "syn0").unwrap();
//! assert_eq!((t.iops, t.footprint), (200_000.0, 8 << 30));
//! assert!((t.write_ratio - 0.1).abs() < 1e-9);
//! ```

use fusionraid_core::PAGE_SIZE;

use super::address::Hotspot;
use super::arrivals::Burst;
use super::sizes::SizeMix;
use super::spec::WorkloadSpec;

/// Request size of a tenant that does not give one.
pub const SYNTHETIC_BS: u64 = 4 << 10;
/// Footprint of a tenant that does not give one.
pub const SYNTHETIC_FOOTPRINT: u64 = 8 << 30;
/// Largest request size a tenant may ask for (the schemes cut requests far smaller anyway).
const MAX_BS: u64 = 1 << 30;

/// The keys `parse_synthetic` knows, as its errors list them.
const KEYS: &str = "read, bs, iops, footprint, seq, hot, burst, name";

impl WorkloadSpec {
    /// A tenant of `bs`-byte requests (a multiple of 4 KiB), `read_share` of them reads,
    /// arriving as a Poisson process at `iops`, at uniformly random page-aligned offsets in
    /// `0..footprint`.
    pub fn uniform(name: &str, read_share: f64, bs: u64, iops: f64, footprint: u64) -> Self {
        let kib = u32::try_from(bs / 1024).unwrap_or(u32::MAX);
        WorkloadSpec {
            name: name.to_string(),
            iops,
            write_ratio: 1.0 - read_share,
            write_sizes: SizeMix::fixed(kib),
            read_sizes: SizeMix::fixed(kib),
            footprint,
            write_seq: 0.0,
            read_seq: 0.0,
            hotspot: None,
            burst: Burst::POISSON,
        }
    }
}

/// Seed of synthetic tenant `index`'s generator, derived from the run seed: distinct per
/// tenant, and from the Table-4 workloads' seeds ([`super::Workload::seed_for`]).
pub fn synthetic_seed(seed: u64, index: usize) -> u64 {
    seed ^ (index as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 0x5EED_5EED
}

/// A tenant from its text form (see the module documentation); `iops` is required, `name`
/// defaults to `default_name`. Errors name the key and say what was expected.
pub fn parse_synthetic(text: &str, default_name: &str) -> Result<WorkloadSpec, String> {
    let mut t = WorkloadSpec::uniform(default_name, 1.0, SYNTHETIC_BS, f64::NAN, 0);
    t.footprint = SYNTHETIC_FOOTPRINT;
    let mut seen: Vec<&str> = Vec::new();
    let mut read = 1.0;
    let mut bs = SYNTHETIC_BS;
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim()))
            .ok_or_else(|| format!("'{part}' is not KEY=VALUE (keys: {KEYS})"))?;
        if seen.contains(&key) {
            return Err(format!("'{key}' is given twice"));
        }
        seen.push(key);
        match key {
            "read" => read = parse_share(key, value)?,
            "bs" => bs = parse_bs(value)?,
            "iops" => t.iops = parse_iops(value).map_err(|e| format!("iops: {e}"))?,
            "footprint" => t.footprint = parse_size(value)?,
            "seq" => t.read_seq = parse_share(key, value)?,
            "hot" => t.hotspot = Some(parse_hot(value)?),
            "burst" => t.burst = parse_burst(value)?,
            "name" if !value.is_empty() => t.name = value.to_string(),
            "name" => return Err("name must not be empty".into()),
            _ => return Err(format!("unknown key '{key}' (keys: {KEYS})")),
        }
    }
    if t.iops.is_nan() {
        return Err(format!("'{text}' gives no iops (e.g. iops=200000)"));
    }
    finish(t, read, bs)
}

/// Applies the read share and size, and checks what the knobs allow only together.
fn finish(mut t: WorkloadSpec, read: f64, bs: u64) -> Result<WorkloadSpec, String> {
    if t.footprint < bs {
        return Err(format!(
            "footprint of {} bytes is smaller than a request ({bs} bytes)",
            t.footprint
        ));
    }
    let kib = (bs / 1024) as u32;
    t.write_seq = t.read_seq;
    t.write_ratio = 1.0 - read;
    t.write_sizes = SizeMix::fixed(kib);
    t.read_sizes = SizeMix::fixed(kib);
    match t.problem() {
        Some(p) => Err(p),
        None => Ok(t),
    }
}

/// A share in `[0, 1]`: `0.9` or `90%`.
fn parse_share(key: &str, v: &str) -> Result<f64, String> {
    let (num, scale) = match v.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (v, 1.0),
    };
    let x = num.trim().parse::<f64>().map(|x| x / scale);
    match x {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "{key}={v}: expected a share from 0 to 1 (e.g. 0.9 or 90%)"
        )),
    }
}

/// Requests per second: `200000`, `200k`, `1.5M`; positive.
pub fn parse_iops(v: &str) -> Result<f64, String> {
    let bad = || format!("'{v}' is not a positive rate (e.g. 200000, 200k, 1.5M)");
    let (num, scale) = match v.chars().last() {
        Some('k' | 'K') => (&v[..v.len() - 1], 1e3),
        Some('m' | 'M') => (&v[..v.len() - 1], 1e6),
        _ => (v, 1.0),
    };
    let x = num.trim().parse::<f64>().map_err(|_| bad())? * scale;
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(bad())
    }
}

/// A request size: a positive multiple of 4 KiB, at most 1 GiB.
fn parse_bs(v: &str) -> Result<u64, String> {
    let b = parse_size(v).map_err(|e| format!("bs: {e}"))?;
    if b == 0 || b % PAGE_SIZE != 0 || b > MAX_BS {
        return Err(format!(
            "bs={v}: the request size must be a positive multiple of 4 KiB, at most 1 GiB"
        ));
    }
    Ok(b)
}

/// `4096`, `4k`, `4KiB`, `64M`, `8G`, `1T`: binary units.
fn parse_size(v: &str) -> Result<u64, String> {
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" | "kb" => 10,
        "m" | "mib" | "mb" => 20,
        "g" | "gib" | "gb" => 30,
        "t" | "tib" | "tb" => 40,
        u => return Err(format!("unknown size unit '{u}' in '{v}' (k, M, G, T)")),
    };
    let x: f64 = num
        .parse()
        .map_err(|_| format!("'{v}' is not a size (e.g. 4k, 8G)"))?;
    let bytes = (x * (1u64 << shift) as f64).round();
    // Volumes are at most 1 EiB (`scenario::MAX_VOLUME_BYTES`).
    if !(0.0..=(1u64 << 60) as f64).contains(&bytes) {
        return Err(format!("'{v}' is too large a size (at most 1 EiB)"));
    }
    Ok(bytes as u64)
}

/// `DATA/ACCESS`: `access` of the random requests go to the first `data` of the footprint.
fn parse_hot(v: &str) -> Result<Hotspot, String> {
    let bad = || format!("hot={v}: expected DATA/ACCESS shares (e.g. 0.2/0.8)");
    let (d, a) = v.split_once('/').ok_or_else(bad)?;
    let h = Hotspot {
        data_share: d.trim().parse().map_err(|_| bad())?,
        access_share: a.trim().parse().map_err(|_| bad())?,
    };
    match h.problem() {
        Some(p) => Err(format!("hot={v}: {p}")),
        None => Ok(h),
    }
}

/// `ON_MS/OFF_MS/OFF_RATIO`: ON/OFF periods (ms) and the OFF rate as a share of the ON rate.
fn parse_burst(v: &str) -> Result<Burst, String> {
    let bad = || format!("burst={v}: expected ON_MS/OFF_MS/OFF_RATIO (e.g. 10/30/0.1)");
    let parts: Vec<f64> = v
        .split('/')
        .map(|p| p.trim().parse::<f64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let [on_ms, off_ms, off_ratio] = parts[..] else {
        return Err(bad());
    };
    let b = Burst {
        on_ms,
        off_ms,
        off_ratio,
    };
    match b.problem() {
        Some(p) => Err(format!("burst={v}: {p}")),
        None => Ok(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::IoKind;
    use crate::workload::Generator;

    #[test]
    fn defaults_and_every_knob() {
        let t = parse_synthetic("iops=1000", "syn3").unwrap();
        assert_eq!(t.name, "syn3");
        assert_eq!(t.write_ratio, 0.0);
        assert_eq!(t.read_sizes.mean_bytes(), 4096.0);
        assert_eq!(t.footprint, SYNTHETIC_FOOTPRINT);
        assert_eq!((t.hotspot, t.burst), (None, Burst::POISSON));
        let t = parse_synthetic(
            " read=75%, bs=16KiB, iops=1.5M, footprint=64M, seq=0.5, hot=0.2/0.8, \
             burst=10/30/0.1, name=db",
            "x",
        )
        .unwrap();
        assert_eq!(t.name, "db");
        assert!((t.write_ratio - 0.25).abs() < 1e-12);
        assert_eq!(t.write_sizes.mean_bytes(), 16384.0);
        assert_eq!((t.iops, t.footprint), (1.5e6, 64 << 20));
        assert_eq!((t.read_seq, t.write_seq), (0.5, 0.5));
        assert_eq!(t.hotspot.unwrap().access_share, 0.8);
        assert_eq!(t.burst.off_ms, 30.0);
    }

    #[test]
    fn bad_text_is_explained() {
        let cases = [
            ("read=0.9", "no iops"),
            ("iops=0", "positive rate"),
            ("iops=fast", "positive rate"),
            ("iops=1k,read=1.5", "share from 0 to 1"),
            ("iops=1k,bs=6k", "multiple of 4 KiB"),
            ("iops=1k,bs=0", "multiple of 4 KiB"),
            ("iops=1k,bs=4q", "unknown size unit 'q'"),
            ("iops=1k,footprint=2k", "smaller than a request"),
            ("iops=1k,footprint=9999999T", "too large"),
            ("iops=1k,iops=2k", "'iops' is given twice"),
            ("iops=1k,colour=red", "unknown key 'colour'"),
            ("iops=1k,read", "not KEY=VALUE"),
            ("iops=1k,hot=0.2", "DATA/ACCESS"),
            ("iops=1k,hot=1.2/0.5", "shares must be"),
            ("iops=1k,burst=1/2", "ON_MS/OFF_MS/OFF_RATIO"),
            ("iops=1k,burst=0/2/0.5", "ON/OFF"),
            ("iops=1k,name=", "empty"),
        ];
        for (text, want) in cases {
            let e = parse_synthetic(text, "t").unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn generated_reads_and_rate_match_the_knobs() {
        let t = parse_synthetic("read=0.9,bs=8k,iops=20000,footprint=1G", "t").unwrap();
        let secs = 2.0;
        let recs: Vec<_> = Generator::new(t, synthetic_seed(1, 0), 0)
            .unwrap()
            .with_duration((secs * 1e9) as u64)
            .collect();
        let reads = recs.iter().filter(|r| r.kind == IoKind::Read).count();
        let share = reads as f64 / recs.len() as f64;
        assert!((share - 0.9).abs() < 0.01, "read share {share}");
        let rate = recs.len() as f64 / secs;
        assert!((rate / 20_000.0 - 1.0).abs() < 0.02, "rate {rate}");
        assert!(
            recs.iter()
                .all(|r| r.len == 8192 && r.offset + r.len <= 1 << 30)
        );
        assert_ne!(synthetic_seed(1, 0), synthetic_seed(1, 1));
    }
}

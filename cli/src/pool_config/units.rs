//! The value types of a pool file: byte sizes written with units, and spare shares.

use fusionraid_io::{format_size, parse_size};
use serde::{Deserialize, Serialize};

/// A byte count written as an integer or a string with a unit ("64K", "2G").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

impl Serialize for Size {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_size(self.0))
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
        d.deserialize_any(SizeVisitor)
    }
}

/// Says what a size may be for every kind of value (serde's untagged-enum fallback only
/// says that no variant matched).
struct SizeVisitor;

impl serde::de::Visitor<'_> for SizeVisitor {
    type Value = Size;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a size: a whole number of bytes, or a string such as \"64K\" or \"2G\"")
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Size, E> {
        Ok(Size(n))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Size, E> {
        u64::try_from(n)
            .map(Size)
            .map_err(|_| E::custom(format!("a size can not be negative ({n})")))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Size, E> {
        Err(E::custom(format!(
            "a size is a whole number of bytes or a string such as \"64K\", not {v}"
        )))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Size, E> {
        parse_size(s).map(Size).map_err(E::custom)
    }
}

/// A volume's spare share: a number (of its data), or `"auto"`: the largest share at which
/// every volume still fits on the members (core `sizing::fill_auto_spare`). `create` stores
/// the share it resolved, so later versions computing it differently never move data.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Spare {
    #[default]
    Auto,
    Share(f64),
}

/// Below this spare share sustained small random overwrites cost many device writes each
/// (the cleaner finds little dead space per block it moves), and in some geometries they
/// can still outrun the cleaner (`core/tests/space.rs`: RAID5 and RAID6 of width 4 at
/// shares up to 0.15; every tested geometry holds at 0.25).
pub const SPARE_WARN_BELOW: f64 = 0.25;

impl Spare {
    /// A warning for a resolved share too small for sustained random overwrites.
    pub fn warning(self, volume: &str) -> Option<String> {
        let share = self.share()?;
        (share < SPARE_WARN_BELOW).then(|| {
            format!(
                "warning: volume '{volume}' keeps a spare share of {share}: sustained small \
                 random overwrites will cost several device writes each, and in some \
                 geometries may outrun the cleaner; a share of 0.25 or more (a smaller \
                 volume, or larger members) is recommended"
            )
        })
    }
    pub fn share(self) -> Option<f64> {
        match self {
            Spare::Auto => None,
            Spare::Share(f) => Some(f),
        }
    }
}

impl std::fmt::Display for Spare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spare::Auto => f.write_str("auto"),
            Spare::Share(x) => write!(f, "{x}"),
        }
    }
}

impl Serialize for Spare {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Spare::Auto => s.serialize_str("auto"),
            Spare::Share(f) => s.serialize_f64(*f),
        }
    }
}

impl<'de> Deserialize<'de> for Spare {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Spare, D::Error> {
        d.deserialize_any(SpareVisitor)
    }
}

struct SpareVisitor;

impl serde::de::Visitor<'_> for SpareVisitor {
    type Value = Spare;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a share of the volume's size, such as 0.25, or \"auto\"")
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Spare, E> {
        Ok(Spare::Share(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Spare, E> {
        Ok(Spare::Share(v as f64))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Spare, E> {
        Ok(Spare::Share(v as f64))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Spare, E> {
        if s == "auto" {
            Ok(Spare::Auto)
        } else {
            Err(E::custom(format!(
                "expected a share such as 0.25 or \"auto\", not \"{}\"",
                s.escape_debug()
            )))
        }
    }
}

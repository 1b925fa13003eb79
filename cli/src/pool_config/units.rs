//! The value types of a pool file: byte sizes written with units, and spare shares.

use fusionraid_core::scheme::fusion::write_cost::WriteCost;
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

/// Below this spare share sustained small random overwrites can, in some geometries, still
/// outrun the cleaner (`core/tests/space.rs`: RAID5 and RAID6 of width 4 at shares up to
/// 0.15; every tested geometry holds at 0.25).
pub const SPARE_WARN_BELOW: f64 = 0.25;

/// Above this many pages moved by the cleaner per page written (the planner's prediction
/// for sustained 4 KiB random overwrites, `fusionraid_core::scheme::fusion::write_cost`),
/// cleaning costs more device I/O than the user's writes themselves: a share worth a warning.
pub const MOVES_WARN_ABOVE: f64 = 1.0;

impl Spare {
    /// A warning for a resolved share too small for sustained random overwrites: the cleaner
    /// is predicted (`cost`, at this share) to move more than [`MOVES_WARN_ABOVE`] pages per
    /// page written, or the share is below [`SPARE_WARN_BELOW`].
    pub fn warning(self, volume: &str, cost: &WriteCost) -> Option<String> {
        let share = self.share()?;
        let costly = cost.moves > MOVES_WARN_ABOVE;
        let outrun = share < SPARE_WARN_BELOW;
        (costly || outrun).then(|| {
            let mut w = format!(
                "warning: volume '{volume}' keeps a spare share of {share}: sustained small \
                 random overwrites are predicted to cost {:.1} device writes each (the cleaner \
                 moving {:.1} pages per page written)",
                cost.written, cost.moves
            );
            if outrun {
                w.push_str(", and in some geometries may outrun the cleaner");
            }
            w.push_str(
                "; a larger share (a smaller volume, or larger members) is recommended: \
                 `fusionraid plan POOL.toml` prices the shares",
            );
            w
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

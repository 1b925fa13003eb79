//! Named device configurations.
//!
//! Datasheet-class presets (`dc`, `consumer`) take their latency and bandwidth from the
//! FusionRAID paper's Table 3 and their spike behaviour from its §2.3 study; profile-fitted
//! presets (`pm1725a`, `sn200`, and one per profiled serial named after it in lower case) come
//! from [`crate::fit`] (frozen in [`crate::fitted`] and [`crate::fitted_fleet`]) run on
//! `data/ssd-profiles/`. A fleet name ([`fleet`]) stands for a list of presets. Numbers
//! that no source gives (die counts, program unit, block size) are stated as assumptions;
//! where a §2.3 or Pitfalls ratio pins a combination of them, the derivation is in the code.

use fusionraid_core::Nanos;

use crate::DeviceModel;
use crate::config::SsdConfig;
use crate::dist::LatencyDist;
use crate::events::{InternalEvents, MapWrites};
use crate::fitted_fleet::{PROFILED, ProfiledDrive, SANDOOK12, drive};
use crate::gc::GcPolicy;
use crate::hdd::{HddConfig, HddModel};
use crate::ssd::SsdModel;
use crate::write_buffer::FlushSpikes;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const US: f64 = 1e3;
const MS: Nanos = 1_000_000;

/// Program time that makes `dies` dies writing `unit`-byte program units deliver `mb_s`.
fn program_ns_for(dies: u32, unit: u64, mb_s: f64) -> Nanos {
    (dies as f64 * unit as f64 * 1000.0 / mb_s).round() as Nanos
}

/// Names accepted by [`preset`]: the named models, then one per profiled serial.
pub fn list_presets() -> Vec<&'static str> {
    let mut v = vec!["dc", "consumer", "pm1725a", "sn200"];
    v.extend(PROFILED.iter().map(|d| d.name));
    v
}

/// Names accepted by [`fleet`].
pub fn list_fleets() -> Vec<&'static str> {
    vec!["sandook12"]
}

/// The member presets of a named fleet, in member order.
pub fn fleet(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "sandook12" => Some(&SANDOOK12),
        _ => None,
    }
}

/// Whether members of this preset want the consumer-class settings (the paper's consumer
/// spike detector): drives without power-loss protection, whose write buffer flushes show as
/// short periodic stalls. HDDs and unknown names are not.
pub fn is_consumer_class(name: &str) -> bool {
    preset(name).is_ok_and(|c| !c.power_loss_protected)
}

/// Names accepted by [`hdd_preset`].
pub fn list_hdd_presets() -> Vec<&'static str> {
    vec!["hdd7200"]
}

pub fn preset(name: &str) -> Result<SsdConfig, String> {
    match name {
        "dc" => Ok(dc()),
        "consumer" => Ok(consumer()),
        "pm1725a" => Ok(crate::fitted::pm1725a()),
        "sn200" => Ok(crate::fitted::sn200()),
        _ => drive(name).map(ProfiledDrive::config).ok_or_else(|| {
            format!(
                "unknown SSD preset '{name}' (known: {})",
                list_presets().join(", ")
            )
        }),
    }
}

/// A ready model for any SSD or HDD preset, seeded with `seed`.
pub fn build(name: &str, seed: u64) -> Result<Box<dyn DeviceModel>, String> {
    if let Ok(c) = preset(name) {
        return Ok(Box::new(SsdModel::try_new(c.with_seed(seed))?));
    }
    match hdd_preset(name) {
        Ok(c) => Ok(Box::new(HddModel::new(c))),
        Err(_) => Err(format!(
            "unknown device preset '{name}' (known: {}, {})",
            list_presets().join(", "),
            list_hdd_presets().join(", ")
        )),
    }
}

pub fn hdd_preset(name: &str) -> Result<HddConfig, String> {
    match name {
        "hdd7200" => Ok(HddConfig::desktop_7200()),
        _ => Err(format!(
            "unknown HDD preset '{name}' (known: {})",
            list_hdd_presets().join(", ")
        )),
    }
}

/// Intel D3-S4510 240 GB-like SATA datacenter drive.
pub fn dc() -> SsdConfig {
    // Assumption: 8 TLC dies (240 GB of 256 Gbit dies), 64 KiB program units, 16 MiB blocks.
    let (channels, dies_per_channel, unit) = (4, 2, 64 * KIB);
    SsdConfig {
        name: "dc".into(),
        // Paper Table 3: 240 GB.
        capacity_bytes: 240_000_000_000,
        // Assumption: 256 GiB raw for 240 GB is 14.5% nominal; firmware keeps some, 12% left.
        factory_spare: 0.12,
        // Assumption: two read command processors at 6 us per 4 KiB page (330K IOPS) and one
        // write processor (165K IOPS), so the SATA link (137K 4 KiB reads/s at 560 MB/s)
        // stays the front-end bottleneck.
        ctrl_servers: 2,
        ctrl_write_servers: 1,
        ctrl_read_ns: 6_000,
        ctrl_write_ns: 6_000,
        // Table 3: 560/280 MB/s read/write.
        read_mb_s: 560.0,
        write_mb_s: 280.0,
        // Table 3: 36/37 us read/write latency, with the profiles' generic jitter shape.
        read_latency: LatencyDist::typical(36.0 * US),
        write_latency: LatencyDist::typical(37.0 * US),
        channels,
        dies_per_channel,
        flash_page_bytes: 16 * KIB,
        // Die share of the 36 us read (the rest is controller, ECC and link).
        die_read_ns: 25_000,
        program_unit_bytes: unit,
        // Brief §2: 195 MB/s measured sequential write is the flash's sustained rate
        // (280 MB/s is what the link and buffer take in bursts).
        program_ns: program_ns_for(channels * dies_per_channel, unit, 195.0),
        // No device data on whether this drive suspends programs for reads (the profiled NVMe
        // drives disagree: none fitted for the PM1725a, 200 us x 2 for the SN200): off.
        program_suspend: None,
        block_bytes: 16 * MIB,
        // Assumption: typical TLC block erase.
        erase_ns: 5 * MS,
        // Assumption: 32 MiB of the DRAM used as write buffer (power-loss protected).
        buffer_bytes: 32 * MIB,
        // Paper §2.3: no periodic spikes under sequential writes on DC drives.
        flush_spikes: None,
        power_loss_protected: true,
        // Paper §2.3 / Fig. 4b: aged + random 64 KiB writes -> latency far beyond 100 ms with
        // overlapping spikes once GC is triggered. With these costs an aged drive's victims
        // under writes spread over the drive are ~0.8 valid, and an urgent pass cleaning
        // 8 MiB then takes ~180 ms of writes held back. Background GC uses idle die time
        // (idle_share 1.0) and, as erased space falls, up to as much die time as host
        // programs (max_share 1.0): with these, an aged member under its share of the paper's
        // workload mix is rarely unresponsive, as §5.3 measured (`sim/tests/mix_calibration.rs`,
        // `aged_dc_spikes_under_the_paper_mix`). Watermarks and shares are assumptions.
        gc: GcPolicy::Background {
            start_bytes: 2 * GIB,
            critical_bytes: 256 * MIB,
            resume_bytes: 264 * MIB,
            max_share: 1.0,
            idle_share: 1.0,
            step_ns: 2 * MS,
        },
        events: dc_events(),
        speed_factor: 1.0,
        seed: 0x5451_0d3e,
    }
}

/// Paper §5.3: one aged D3-S4510 of the pool, under its share of the TPC-C + YCSB-A + TF + VD
/// mix, saw 4.85 spikes per minute lasting 3.79 ms each (engine's detector, redirection off).
pub const DC_SPIKES_PER_MIN: f64 = 4.85;
pub const DC_SPIKE_MS: f64 = 3.79;

/// The `dc` drive's discrete internal events (docs/DEVICE_MODELS.md, "Internal events").
///
/// Erases: each 16 MiB victim block is erased on its die in one 5 ms piece (the preset's
/// erase time), so a read can wait behind it. Under the member's share of the mix these
/// alone give 1.5-3.5 short spikes a minute (~1 ms: two reads caught behind an erase and a
/// program).
///
/// FTL metadata writes hold every request. Their length: a request caught in one becomes a
/// straggler once it has waited the detector's t (4.5-5 ms with 0.5 ms slots), and the drive
/// counts as unresponsive from its second straggler until the batch returns, so a write of
/// length L shows as a spike of about L - 4 ms. Erase spikes (~2.5 a minute of ~1 ms) and
/// metadata spikes together make §5.3's 4.85 a minute of 3.79 ms mean when the metadata
/// spikes are ~2.4 a minute of ~6.5 ms: L of ~10.5 ms, drawn uniformly from 8-13 ms (the
/// spread is an assumption). At the flash's 195 MB/s that is 1.6-2.5 MB of metadata per
/// write, about 1% of the ~240 MB mapping table of a 240 GB drive. Their spacing: under that
/// load the member's GC cleans ~2.3 GB of victim blocks a minute (37.6 MB/s of writes, flash
/// WA 1.03, victims ~3% valid), and one write per ~850 MiB cleaned gives ~2.6 a minute, of
/// which ~90% find two requests to hold (`sim/tests/mix_calibration.rs` measures the total).
fn dc_events() -> InternalEvents {
    InternalEvents {
        discrete_erases: true,
        map_writes: Some(MapWrites {
            per_cleaned_bytes: 850 * MIB,
            min_ns: 8 * MS,
            max_ns: 13 * MS,
        }),
    }
}

/// Mean flush spike of a consumer drive: paper §2.3 reports 3-12 ms.
const CONSUMER_FLUSH_MIN: Nanos = 3 * MS;
const CONSUMER_FLUSH_MAX: Nanos = 12 * MS;
/// Paper §2.3: GC spikes last ~18x a flush spike, quiet gaps ~10x a GC spike.
const GC_OVER_FLUSH_DURATION: f64 = 18.0;
const QUIET_OVER_GC: f64 = 10.0;

/// Intel 545s 240 GB-like SATA consumer drive.
pub fn consumer() -> SsdConfig {
    // Assumption: 8 TLC dies, 64 KiB program units, 16 MiB blocks (as `dc`).
    let (channels, dies_per_channel, unit) = (4, 2, 64 * KIB);
    let dies = channels * dies_per_channel;
    // Table 3: 500 MB/s sequential write; consumer drives reach it on flash (SLC-mode
    // caching), so it is also the program rate here.
    let write_mb_s = 500.0;
    let block = 16 * MIB;
    // A GC pass while rewriting a small logical space cleans blocks with (almost) no valid
    // data: its length is the erase work alone. §2.3 fixes that length
    // (18 x the mean flush spike) and the quiet gap after it (10x longer), during which the
    // host writes at `write_mb_s` the space the pass freed. Hence the watermark gap and the
    // effective erase time below (which includes the FTL's bookkeeping per block).
    let flush_mean_ns = (CONSUMER_FLUSH_MIN + CONSUMER_FLUSH_MAX) as f64 / 2.0;
    let gc_pass_ns = GC_OVER_FLUSH_DURATION * flush_mean_ns;
    let gap_bytes = (QUIET_OVER_GC * gc_pass_ns * write_mb_s / 1e3) as u64;
    let erase_ns_per_byte = gc_pass_ns * dies as f64 / gap_bytes as f64;
    SsdConfig {
        name: "consumer".into(),
        // Table 3: 240 GB.
        capacity_bytes: 240_000_000_000,
        // Pitfalls: spare capacity lifts sustained random-write IOPS up to 19x (600 ->
        // 11,500) between 0% and 50% user spare. With greedy-class cleaning that takes a
        // small effective factory spare; 4% puts the model's 0%->50% gain at ~12x.
        factory_spare: 0.04,
        ctrl_servers: 2,
        ctrl_write_servers: 1,
        ctrl_read_ns: 6_000,
        ctrl_write_ns: 6_000,
        // Table 3: 550/500 MB/s, 50/60 us.
        read_mb_s: 550.0,
        write_mb_s,
        read_latency: LatencyDist::typical(50.0 * US),
        write_latency: LatencyDist::typical(60.0 * US),
        channels,
        dies_per_channel,
        flash_page_bytes: 16 * KIB,
        die_read_ns: 35_000,
        program_unit_bytes: unit,
        program_ns: program_ns_for(dies, unit, write_mb_s),
        program_suspend: None,
        block_bytes: block,
        erase_ns: (erase_ns_per_byte * block as f64) as Nanos,
        // Assumption: 16 MiB write buffer; one blocking flush per 128 MiB written (§2.3 calls
        // the spikes "clearly periodic" but gives no period; this is ~4 per second at full
        // sequential speed).
        buffer_bytes: 16 * MIB,
        flush_spikes: Some(FlushSpikes {
            every_bytes: 128 * MIB,
            min_ns: CONSUMER_FLUSH_MIN,
            max_ns: CONSUMER_FLUSH_MAX,
        }),
        power_loss_protected: false,
        gc: GcPolicy::Blocking {
            low_bytes: 512 * MIB,
            high_bytes: 512 * MIB + gap_bytes,
            // A pass never blocks longer than ~2 clean-drive passes; aged drives instead
            // spike more often (§2.3: "aged SSDs see more severe and frequent spikes").
            max_pass_ns: (2.0 * gc_pass_ns) as Nanos,
        },
        events: InternalEvents::default(),
        speed_factor: 1.0,
        seed: 0x0545_5c00,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid() {
        for name in list_presets() {
            let c = preset(name).unwrap();
            c.validate().unwrap();
            assert_eq!(c.name, name);
        }
        for name in list_hdd_presets() {
            hdd_preset(name).unwrap().validate().unwrap();
        }
        assert!(preset("nope").unwrap_err().contains("dc, consumer"));
        for name in list_presets().into_iter().chain(list_hdd_presets()) {
            assert_eq!(build(name, 1).unwrap().name(), name);
        }
        assert!(build("nope", 1).is_err());
        assert!(preset("s39wna0kb01161").is_ok() && preset("S39WNA0KB01161").is_err());
    }

    #[test]
    fn fleets_name_known_presets_and_classes_follow_power_loss_protection() {
        for f in list_fleets() {
            let members = fleet(f).unwrap();
            assert!(members.iter().all(|m| preset(m).is_ok()), "{f}");
        }
        assert_eq!(fleet("sandook12").unwrap().len(), 12);
        assert!(fleet("dc").is_none());
        assert!(is_consumer_class("consumer"));
        for name in ["dc", "pm1725a", "sdm00001c5d1", "hdd7200", "nope"] {
            assert!(!is_consumer_class(name), "{name}");
        }
    }

    #[test]
    fn derived_numbers_match_their_sources() {
        let dc = dc();
        assert!((dc.flash_write_mb_s() - 195.0).abs() < 0.5);
        let c = consumer();
        assert!((c.flash_write_mb_s() - 500.0).abs() < 0.5);
        // Erase-only pass over the watermark gap: 18 x 7.5 ms.
        if let GcPolicy::Blocking {
            low_bytes,
            high_bytes,
            ..
        } = c.gc
        {
            let pass =
                (high_bytes - low_bytes) as f64 * c.gc_costs().erase_ns_per_byte / c.dies() as f64;
            assert!((pass / 1e6 - 135.0).abs() < 1.0, "{pass}");
        } else {
            panic!("consumer GC must be blocking");
        }
    }
}

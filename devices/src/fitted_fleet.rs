//! One frozen fit per profiled drive: the output of [`crate::fit::fit_profiles`] on each of the
//! 18 serials in `data/ssd-profiles/`, as a preset named after the serial in lower case
//! (`s39wna0kb01161`), and the named heterogeneous fleet [`SANDOOK12`].
//!
//! Regenerate with `cargo run --release -p fusionraid-devices --example fit_fleet`;
//! `tests/calibration.rs::refit_reproduces_frozen_presets` (ignored, slow) checks that these
//! are still exactly the fit's output.
//!
//! Every serial has the three mixes the fit needs (`100r`, `1000w` and one of
//! `100w`/`250w`/`500w`): seven drives were profiled at `100r`, `250w` and `1000w` only, so
//! their program time and throughput are fitted on `250w` and `1000w` alone (the read and
//! write-acknowledgement paths use the same curves as for the others).

use crate::config::{ProgramSuspend, SsdConfig};
use crate::fit::FitParams;
use crate::fitted::{nvme_template, table};

const KIB: u64 = 1 << 10;

/// Vendor and model of the drive a serial belongs to, as far as the data says (its README
/// names the PM1725a and SN200 prefixes; the other Samsung serials are not attributed).
pub fn model_of(serial: &str) -> &'static str {
    if serial.starts_with("S39WNA0K") {
        "Samsung PM1725a"
    } else if serial.starts_with("SDM") {
        "WD SN200"
    } else if serial.starts_with('S') {
        "Samsung (model not stated)"
    } else {
        "unknown"
    }
}

/// One profiled drive's frozen fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProfiledDrive {
    /// As in the profile file names.
    pub serial: &'static str,
    /// The preset name: the serial in lower case.
    pub name: &'static str,
    pub model: &'static str,
    /// Lowest-load rows of `100r` and `1000w` (us: median, 90th, 99th, 99.9th, 99.99th): the
    /// unloaded latency distributions the fit reads off directly.
    pub read_us: [f64; 5],
    pub write_us: [f64; 5],
    pub params: FitParams,
}

impl ProfiledDrive {
    pub fn config(&self) -> SsdConfig {
        nvme_template(
            self.name,
            table(self.read_us),
            table(self.write_us),
            &self.params,
        )
    }
}

/// Every profiled serial, in file-name order.
pub const PROFILED: [ProfiledDrive; 18] = [
    ProfiledDrive {
        serial: "S39WNA0KB01161",
        name: "s39wna0kb01161",
        model: "Samsung PM1725a",
        read_us: [76.0, 89.0, 94.0, 135.0, 155.0],
        write_us: [17.0, 19.0, 22.0, 35.0, 39.0],
        params: FitParams {
            ctrl_servers: 2,
            write_servers: 1,
            read_cap_iops: 397_577.0 * 1.01,
            write_cap_iops: 257_711.0 * 1.01,
            dies: 32,
            die_read_ns: 40_000,
            program_ns: 2_600_000,
            program_unit_bytes: 172 * KIB,
            suspend: None,
        },
    },
    ProfiledDrive {
        serial: "S39WNA0KC01659",
        name: "s39wna0kc01659",
        model: "Samsung PM1725a",
        read_us: [75.0, 88.0, 110.0, 143.0, 159.0],
        write_us: [16.0, 17.0, 21.0, 35.0, 45.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 991_393.0 * 1.01,
            write_cap_iops: 324_199.0 * 1.01,
            dies: 64,
            die_read_ns: 50_000,
            program_ns: 2_600_000,
            program_unit_bytes: 80 * KIB,
            suspend: None,
        },
    },
    ProfiledDrive {
        serial: "S39WNA0KC02074",
        name: "s39wna0kc02074",
        model: "Samsung PM1725a",
        read_us: [74.0, 88.0, 108.0, 141.0, 156.0],
        write_us: [15.0, 17.0, 20.0, 32.0, 48.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 1_031_599.0 * 1.01,
            write_cap_iops: 333_016.0 * 1.01,
            dies: 64,
            die_read_ns: 50_000,
            program_ns: 2_600_000,
            program_unit_bytes: 80 * KIB,
            suspend: None,
        },
    },
    ProfiledDrive {
        serial: "S39WNA0KC02077",
        name: "s39wna0kc02077",
        model: "Samsung PM1725a",
        read_us: [75.0, 89.0, 119.0, 148.0, 180.0],
        write_us: [14.0, 16.0, 26.0, 35.0, 196.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 988_135.0 * 1.01,
            write_cap_iops: 299_495.0 * 1.01,
            dies: 64,
            die_read_ns: 50_000,
            program_ns: 2_720_000,
            program_unit_bytes: 76 * KIB,
            suspend: None,
        },
    },
    ProfiledDrive {
        serial: "S39WNA0KC02078",
        name: "s39wna0kc02078",
        model: "Samsung PM1725a",
        read_us: [75.0, 89.0, 118.0, 149.0, 177.0],
        write_us: [14.0, 16.0, 26.0, 36.0, 213.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 988_122.0 * 1.01,
            write_cap_iops: 299_485.0 * 1.01,
            dies: 64,
            die_read_ns: 50_000,
            program_ns: 2_720_000,
            program_unit_bytes: 76 * KIB,
            suspend: None,
        },
    },
    ProfiledDrive {
        serial: "S39WNA0KC02087",
        name: "s39wna0kc02087",
        model: "Samsung PM1725a",
        read_us: [75.0, 88.0, 119.0, 147.0, 173.0],
        write_us: [14.0, 16.0, 26.0, 37.0, 347.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 987_835.0 * 1.01,
            write_cap_iops: 298_919.0 * 1.01,
            dies: 64,
            die_read_ns: 50_000,
            program_ns: 2_720_000,
            program_unit_bytes: 76 * KIB,
            suspend: None,
        },
    },
    ProfiledDrive {
        serial: "S39WNA0KC02089",
        name: "s39wna0kc02089",
        model: "Samsung PM1725a",
        read_us: [75.0, 89.0, 119.0, 148.0, 179.0],
        write_us: [14.0, 16.0, 26.0, 35.0, 227.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 988_116.0 * 1.01,
            write_cap_iops: 298_930.0 * 1.01,
            dies: 64,
            die_read_ns: 50_000,
            program_ns: 2_720_000,
            program_unit_bytes: 76 * KIB,
            suspend: None,
        },
    },
    ProfiledDrive {
        serial: "S47ANA0M400877",
        name: "s47ana0m400877",
        model: "Samsung (model not stated)",
        read_us: [77.0, 93.0, 138.0, 167.0, 203.0],
        write_us: [15.0, 16.0, 27.0, 38.0, 124.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 712_883.0 * 1.01,
            write_cap_iops: 323_452.0 * 1.01,
            dies: 64,
            die_read_ns: 70_000,
            program_ns: 2_600_000,
            program_unit_bytes: 136 * KIB,
            suspend: Some(ProgramSuspend {
                suspend_ns: 400_000,
                max_per_program: 1,
            }),
        },
    },
    ProfiledDrive {
        serial: "S47ANA0M400923",
        name: "s47ana0m400923",
        model: "Samsung (model not stated)",
        read_us: [78.0, 93.0, 126.0, 154.0, 173.0],
        write_us: [17.0, 19.0, 23.0, 37.0, 128.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 691_070.0 * 1.01,
            write_cap_iops: 379_987.0 * 1.01,
            dies: 64,
            die_read_ns: 70_000,
            program_ns: 2_600_000,
            program_unit_bytes: 80 * KIB,
            suspend: Some(ProgramSuspend {
                suspend_ns: 300_000,
                max_per_program: 1,
            }),
        },
    },
    ProfiledDrive {
        serial: "S47ANA0M403316",
        name: "s47ana0m403316",
        model: "Samsung (model not stated)",
        read_us: [78.0, 94.0, 139.0, 172.0, 208.0],
        write_us: [15.0, 16.0, 27.0, 39.0, 61.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 712_336.0 * 1.01,
            write_cap_iops: 323_972.0 * 1.01,
            dies: 64,
            die_read_ns: 70_000,
            program_ns: 2_300_000,
            program_unit_bytes: 60 * KIB,
            suspend: None,
        },
    },
    ProfiledDrive {
        serial: "S47ANA0M403318",
        name: "s47ana0m403318",
        model: "Samsung (model not stated)",
        read_us: [78.0, 94.0, 140.0, 170.0, 211.0],
        write_us: [15.0, 17.0, 27.0, 38.0, 51.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 707_207.0 * 1.01,
            write_cap_iops: 322_154.0 * 1.01,
            dies: 64,
            die_read_ns: 70_000,
            program_ns: 2_990_000,
            program_unit_bytes: 168 * KIB,
            suspend: Some(ProgramSuspend {
                suspend_ns: 400_000,
                max_per_program: 1,
            }),
        },
    },
    ProfiledDrive {
        serial: "S47ANA0M403393",
        name: "s47ana0m403393",
        model: "Samsung (model not stated)",
        read_us: [76.0, 92.0, 119.0, 151.0, 167.0],
        write_us: [16.0, 17.0, 21.0, 34.0, 38.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 695_375.0 * 1.01,
            write_cap_iops: 358_957.0 * 1.01,
            dies: 64,
            die_read_ns: 70_000,
            program_ns: 2_600_000,
            program_unit_bytes: 68 * KIB,
            suspend: Some(ProgramSuspend {
                suspend_ns: 200_000,
                max_per_program: 1,
            }),
        },
    },
    ProfiledDrive {
        serial: "S47ANA0M403400",
        name: "s47ana0m403400",
        model: "Samsung (model not stated)",
        read_us: [77.0, 92.0, 121.0, 150.0, 168.0],
        write_us: [16.0, 18.0, 22.0, 37.0, 50.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 695_283.0 * 1.01,
            write_cap_iops: 330_316.0 * 1.01,
            dies: 64,
            die_read_ns: 70_000,
            program_ns: 2_210_000,
            program_unit_bytes: 68 * KIB,
            suspend: Some(ProgramSuspend {
                suspend_ns: 400_000,
                max_per_program: 1,
            }),
        },
    },
    ProfiledDrive {
        serial: "S5CVNA0N101050",
        name: "s5cvna0n101050",
        model: "Samsung (model not stated)",
        read_us: [76.0, 92.0, 125.0, 156.0, 185.0],
        write_us: [16.0, 17.0, 21.0, 33.0, 42.0],
        params: FitParams {
            ctrl_servers: 1,
            write_servers: 1,
            read_cap_iops: 715_805.0 * 1.01,
            write_cap_iops: 330_671.0 * 1.01,
            dies: 64,
            die_read_ns: 70_000,
            program_ns: 2_000_000,
            program_unit_bytes: 60 * KIB,
            suspend: Some(ProgramSuspend {
                suspend_ns: 400_000,
                max_per_program: 1,
            }),
        },
    },
    ProfiledDrive {
        serial: "SDM000015A60",
        name: "sdm000015a60",
        model: "WD SN200",
        read_us: [83.0, 85.0, 102.0, 137.0, 152.0],
        write_us: [16.0, 17.0, 20.0, 23.0, 25.0],
        params: FitParams {
            ctrl_servers: 16,
            write_servers: 1,
            read_cap_iops: 1_042_456.0 * 1.2,
            write_cap_iops: 478_370.0 * 1.03,
            dies: 128,
            die_read_ns: 70_000,
            program_ns: 382_500,
            program_unit_bytes: 8 * KIB,
            suspend: None,
        },
    },
    ProfiledDrive {
        serial: "SDM00001C5D1",
        name: "sdm00001c5d1",
        model: "WD SN200",
        read_us: [85.0, 88.0, 109.0, 141.0, 155.0],
        write_us: [18.0, 20.0, 22.0, 25.0, 28.0],
        params: FitParams {
            ctrl_servers: 16,
            write_servers: 1,
            read_cap_iops: 1_055_985.0 * 1.2,
            write_cap_iops: 479_422.0 * 1.01,
            dies: 128,
            die_read_ns: 70_000,
            program_ns: 450_000,
            program_unit_bytes: 12 * KIB,
            suspend: Some(ProgramSuspend {
                suspend_ns: 100_000,
                max_per_program: 1,
            }),
        },
    },
    ProfiledDrive {
        serial: "SDM000024C8D",
        name: "sdm000024c8d",
        model: "WD SN200",
        read_us: [85.0, 88.0, 110.0, 142.0, 173.0],
        write_us: [19.0, 20.0, 23.0, 26.0, 29.0],
        params: FitParams {
            ctrl_servers: 16,
            write_servers: 1,
            read_cap_iops: 1_050_750.0 * 1.2,
            write_cap_iops: 497_336.0 * 1.03,
            dies: 128,
            die_read_ns: 70_000,
            program_ns: 450_000,
            program_unit_bytes: 12 * KIB,
            suspend: Some(ProgramSuspend {
                suspend_ns: 100_000,
                max_per_program: 1,
            }),
        },
    },
    ProfiledDrive {
        serial: "SDM000024DB4",
        name: "sdm000024db4",
        model: "WD SN200",
        read_us: [85.0, 88.0, 110.0, 140.0, 155.0],
        write_us: [19.0, 20.0, 23.0, 26.0, 29.0],
        params: FitParams {
            ctrl_servers: 16,
            write_servers: 1,
            read_cap_iops: 1_051_309.0 * 1.2,
            write_cap_iops: 476_922.0 * 1.03,
            dies: 128,
            die_read_ns: 70_000,
            program_ns: 382_500,
            program_unit_bytes: 8 * KIB,
            suspend: Some(ProgramSuspend {
                suspend_ns: 100_000,
                max_per_program: 1,
            }),
        },
    },
];

/// The drive frozen under preset `name`, if any.
pub fn drive(name: &str) -> Option<&'static ProfiledDrive> {
    PROFILED.iter().find(|d| d.name == name)
}

/// A 12-drive heterogeneous fleet (Sandook's evaluation used 12 SSDs), in serial order:
/// every drive profiled at five or nine mixes but one (so program behaviour is fitted on
/// several mixed curves), which leaves out the four PM1725a profiled at three mixes only and,
/// of the two five-mix S47ANA0M drives, the one whose fit is further from its curves
/// (S47ANA0M403318). Both vendors and the three performance classes of the data are in it:
/// three PM1725a (one whose reads saturate at 0.4M IOPS, two at 1M; 25%-write loads saturate
/// near 35K), five other Samsung drives (0.65M reads, 70K at 25% writes) and the four WD
/// SN200 (1.05M reads, 750K at 25% writes).
pub const SANDOOK12: [&str; 12] = [
    "s39wna0kb01161",
    "s39wna0kc01659",
    "s39wna0kc02074",
    "s47ana0m400877",
    "s47ana0m400923",
    "s47ana0m403393",
    "s47ana0m403400",
    "s5cvna0n101050",
    "sdm000015a60",
    "sdm00001c5d1",
    "sdm000024c8d",
    "sdm000024db4",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serials_in_lower_case_and_the_fleet_is_distinct_and_mixed() {
        for d in &PROFILED {
            assert_eq!(d.name, d.serial.to_ascii_lowercase());
            assert_eq!(d.model, model_of(d.serial));
            assert_eq!(d.config().name, d.name);
        }
        let mut names: Vec<&str> = PROFILED.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PROFILED.len());
        let mut fleet = SANDOOK12.to_vec();
        fleet.sort_unstable();
        fleet.dedup();
        assert_eq!(fleet.len(), 12);
        let models: Vec<&str> = SANDOOK12.iter().map(|n| drive(n).unwrap().model).collect();
        assert!(models.contains(&"WD SN200") && models.contains(&"Samsung PM1725a"));
    }
}

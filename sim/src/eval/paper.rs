//! The numbers the FusionRAID paper (Jiang et al., FAST'21; `shared/seeds/001_*.txt`) states in
//! its text, with where they are stated. The figures' bar heights are not in the text, so
//! only these can be compared; where the paper gives no number the report says so.

/// Fig. 10 (§5.2, the paragraph after the figure): FusionRAID against one baseline, over the
/// 8 workloads of the 20 mixes.
#[derive(Clone, Copy, Debug)]
pub struct Fig10Claim {
    pub baseline: &'static str,
    /// Mean and largest reduction of the median (0.49 = 49% lower).
    pub median_reduction_avg: f64,
    pub median_reduction_max: f64,
    /// Mean and largest P99 ratio baseline / FusionRAID.
    pub p99_factor_avg: f64,
    pub p99_factor_max: f64,
}

pub const FIG10: [Fig10Claim; 4] = [
    Fig10Claim {
        baseline: "4-raid5",
        median_reduction_avg: 0.49,
        median_reduction_max: 0.87,
        p99_factor_avg: 15.0,
        p99_factor_max: 32.0,
    },
    Fig10Claim {
        baseline: "raid50",
        median_reduction_avg: 0.81,
        median_reduction_max: 0.97,
        p99_factor_avg: 35.0,
        p99_factor_max: 62.0,
    },
    Fig10Claim {
        baseline: "lograid",
        median_reduction_avg: 0.76,
        median_reduction_max: 0.98,
        p99_factor_avg: 34.0,
        p99_factor_max: 61.0,
    },
    Fig10Claim {
        baseline: "toleraid",
        median_reduction_avg: 0.45,
        median_reduction_max: 0.85,
        p99_factor_avg: 8.3,
        p99_factor_max: 14.0,
    },
];
pub const FIG10_SOURCE: &str = "paper §5.2, text on Fig. 10";

/// Fig. 12 (§5.3): 4-RAIDM against 4-RAID5 over the main mix's workloads.
pub const FIG12_RAIDM_MEDIAN_REDUCTION: (f64, f64) = (0.021, 0.89);
pub const FIG12_RAIDM_P99_FACTOR: (f64, f64) = (5.9, 12.0);
/// 4-RAIDM's P99 under TPC-C, in microseconds.
pub const FIG12_RAIDM_TPCC_P99_US: f64 = 202_000.0;
pub const FIG12_SOURCE: &str = "paper §5.3, text on Fig. 12";

/// Table 6 (§5.3): Fusion-ND -> FusionRAID.
pub const TABLE6_SLOWEST1_FACTOR: (f64, f64) = (1.1, 2.3);
pub const TABLE6_REDIRECTED_WRITES: f64 = 0.0073;
/// Measured on Fusion-ND with detection on and redirection off.
pub const TABLE6_SPIKES_PER_SSD_MIN: f64 = 4.85;
pub const TABLE6_SPIKE_MS: f64 = 3.79;
pub const TABLE6_SOURCE: &str = "paper §5.3, Table 6 and the text next to it";

/// Fig. 13 (§5.4): conversion adds about this much write amplification on average.
pub const FIG13_CONVERSION_WA_INCREASE: f64 = 0.056;
/// Space over user data: 4-RAID5 pays one parity block per 6+1 stripe; 4-RAIDM mirrors;
/// FusionRAID without conversion is near 2 ("slightly varying"), with conversion back to the
/// 4-RAID5 level (1.17 in the design brief's summary).
pub const FIG13_SPACE_RAID5: f64 = 7.0 / 6.0;
pub const FIG13_SPACE_RAIDM: f64 = 2.0;
pub const FIG13_SPACE_NOCONV: f64 = 2.0;
pub const FIG13_SPACE_CONV: f64 = 7.0 / 6.0;
pub const FIG13_SOURCE: &str = "paper §5.4, Fig. 13(a)-(c) and text";

/// Fig. 11b (§5.2): NV-RAID with growing NVRAM (the paper's sizes are in GB).
pub const FIG11B_YCSBA_SMALL_BUFFER_P99_US: f64 = 40_000.0;
pub const FIG11B_YCSBA_SMALL_BUFFER_FACTOR: f64 = 30.0;
/// Medians with a 256 GB buffer: (NV-RAID, FusionRAID) in microseconds.
pub const FIG11B_TPCC_MEDIANS_256G: (f64, f64) = (28.0, 96.0);
pub const FIG11B_YCSBA_MEDIANS_256G: (f64, f64) = (391.0, 320.0);
pub const FIG11B_SOURCE: &str = "paper §5.2, text on Fig. 11(b)";

pub const FIG14_SOURCE: &str = "paper §5.4, text on Fig. 14";
pub const FIG13D_SOURCE: &str = "paper §5.4, text on Fig. 13(d)";
pub const TABLE4_SOURCE: &str = "paper Table 4";

/// The Pitfalls study (Jeremic, Mühl, Busse and Richling, "The Pitfalls of Deploying
/// Solid-State Drive RAIDs"; its talk, `shared/seeds/003_*.txt`): how much more sustained
/// 4 KiB random-write throughput spare capacity (device capacity left unwritten) buys. The
/// talk gives the largest speed-ups only, not the spare shares of its x axis nor the drive.
/// One SSD: "up to 19x" (600 -> 11,500 IOPS), slide "Random Write Performance of SSDs (II)".
pub const PITFALLS_SSD_SPEEDUP: f64 = 19.0;
pub const PITFALLS_SSD_IOPS: (f64, f64) = (600.0, 11_500.0);
/// Parity-less RAIDs (0, 1, 10): "up to 15x 19x" over the drive counts measured, slide
/// "Parity-less SSD RAIDs: Random Write Performance (I)".
pub const PITFALLS_PARITYLESS_SPEEDUP: (f64, f64) = (15.0, 19.0);
/// Parity-based RAIDs (5, 6): "up to 9x 14x", 20% below the study's own model, slide
/// "Parity-based SSD RAIDs: Evaluation (I)".
pub const PITFALLS_PARITY_SPEEDUP: (f64, f64) = (9.0, 14.0);
pub const PITFALLS_SOURCE: &str = "Pitfalls of SSD RAIDs (Jeremic et al.), talk slides on random \
                                   write performance (shared/seeds/003)";

/// SeRW (Deng, Cao, Wang, Liu, Yao, Dong and Yang, "SeRW: Adaptively Separating Read and
/// Write upon SSDs of Hybrid Storage Server in Clouds"; its talk, `shared/seeds/004_*.txt`):
/// writes redirected from busy SSDs to append-only logs on idle HDDs, on production nodes
/// A1, A2, B1, B2 against the plain SSD-first mode. Reads faster by up to these factors
/// (mean, P99, P99.9, P99.99; the tail factors are node B2's 32.2%, 76.7% and 76.4% cuts),
/// slides "Conclusion" and "Read Performance".
pub const SERW_READ_GAIN: [f64; 4] = [2.07, 1.48, 4.29, 4.24];
/// SSD bytes written lower by 8.8-37.5% (B1 and A2), slide "SSD Written Data Reduction".
pub const SERW_SSD_WRITE_CUT: (f64, f64) = (0.088, 0.375);
/// Share of write requests redirected, 1.6-35.6% (B1 and A2), same slide.
pub const SERW_REDIRECTED: (f64, f64) = (0.016, 0.356);
/// HDD utilisation under 10% on average: the talk's motivation (nodes B, before SeRW), not a
/// figure measured with it; slide "Motivation".
pub const SERW_HDD_UTIL: f64 = 0.10;
pub const SERW_SOURCE: &str = "SeRW talk (Deng et al., HUST and Alibaba), slides on read \
                               performance and SSD written data (shared/seeds/004)";

/// Fail-slow drives in the field (docs/DEVICE_MODELS.md, section 6): how often a pool is in
/// the state the `failslow` experiment sets. Tail at Store (Hao, Soundararajan,
/// Sundararaman, Chien and Gunawi, FAST'16; 4,000 SSDs over 87 days): an SSD is more than
/// 2x slower than its RAID group's peers 0.6% of the time, and a group holds at least one
/// such drive 2.2% of the time.
pub const TAIL_AT_STORE_SLOW_TIME: f64 = 0.006;
pub const TAIL_AT_STORE_GROUP_TIME: f64 = 0.022;
/// Its threshold factor: "more than 2x slower than the peers".
pub const TAIL_AT_STORE_FACTOR: f64 = 2.0;
pub const TAIL_AT_STORE_SOURCE: &str = "Tail at Store (Hao et al., FAST'16), SSD slowdowns";
/// Perseus (Lu et al., FAST'23; about 248K drives at Alibaba over ten months): about 0.12%
/// of drives fail-slow.
pub const PERSEUS_FAILSLOW_DRIVES: f64 = 0.0012;
pub const PERSEUS_SOURCE: &str = "Perseus (Lu et al., FAST'23), fail-slow drives at Alibaba";
/// Sandook (NSDI'26; its talk, `shared/seeds/002_*.txt`): 12 SSDs, 90% reads, SLO P90 < 1 ms.
/// Read/write segregation raises the pool's throughput from 1.2M to 2.2M IOPS, slides
/// "2. Read/write segregation".
pub const SANDOOK_SEGREGATION_IOPS: (f64, f64) = (1.2e6, 2.2e6);
/// "95% of ideal throughput", slides "Multiplexing SSDs over mixed read/write workloads".
pub const SANDOOK_OF_IDEAL: f64 = 0.95;
/// "1.7x raw storage throughput" (over equal-weight balancing, as issue 20 reads it), slide
/// "Conclusion".
pub const SANDOOK_RAW_GAIN: f64 = 1.7;
pub const SANDOOK_SOURCE: &str = "Sandook talk (NSDI'26), slides on read/write segregation, \
                                  multiplexing and the conclusion (shared/seeds/002)";

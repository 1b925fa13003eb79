//! Counters the engine and schemes keep for reports (redirections, conversions, ...).

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub requests: u64,
    pub replies: u64,
    pub failed_requests: u64,
    pub rejected_busy: u64,
    pub disk_failures: u64,
    /// Writes whose first-choice location touched an unresponsive disk and went elsewhere.
    pub redirected_writes: u64,
    /// Pair sets opened on stripes drawn away from an unresponsive disk: the small writes
    /// they take are steered around it without a first choice to count as redirected.
    pub steered_pair_sets: u64,
    /// Reads served from another replica or rebuilt from parity to avoid a slow disk.
    pub redirected_reads: u64,
    pub reconstructed_reads: u64,
    pub hedged_reads: u64,
    /// Of those, reads of RAID blocks rebuilt from their stripe while the direct read was
    /// still out, and the rebuilds that answered first.
    pub hedged_raid_reads: u64,
    pub hedged_raid_reads_won: u64,
    /// Writes placed a second time because a device write waited on an unresponsive member,
    /// and those the second placement answered.
    pub hedged_writes: u64,
    pub hedged_writes_won: u64,
    pub full_stripe_writes: u64,
    /// User writes of a sequential stream held and sent as part of a full-stripe write
    /// (stripe gathering, `FusionConfig::gather_ns`).
    pub gathered_writes: u64,
    /// Parity rows written (`FusionConfig::row_ns`): each carries one small user write per
    /// data column.
    pub row_writes: u64,
    pub replicated_block_writes: u64,
    /// Replica writes sent to an HDD log instead of a busy SSD (issue 21), and their bytes.
    pub offloaded_writes: u64,
    pub offloaded_bytes: u64,
    /// Replica writes whose copy 0 (kept at conversion, never offloaded) went to an SSD
    /// the offload rule found busy.
    pub offload_primary_busy: u64,
    /// Reads served from a copy in an HDD log: no SSD copy of the pages was readable.
    pub log_reads: u64,
    pub conversions: u64,
    pub relocations: u64,
    pub pair_sets_freed_without_conversion: u64,
    /// Bytes users asked to write.
    pub user_bytes_written: u64,
    /// Bytes the engine wrote to devices on behalf of users (foreground).
    pub device_bytes_written_fg: u64,
    /// Bytes written by background work (parity fill at conversion, compaction).
    pub device_bytes_written_bg: u64,
    pub device_bytes_read_bg: u64,
    pub write_retries: u64,
    /// Device reads whose data failed its page checksum (read again elsewhere).
    pub checksum_errors: u64,
    /// Pages no copy and no parity could restore (their read failed with an error).
    pub unrecoverable_pages: u64,
    /// Blocks moved off a bad copy (repair after a checksum error).
    pub repaired_blocks: u64,
    /// RAID stripes whose parity a scrub found wrong and rewrote.
    pub parity_rewrites: u64,
    /// Columns of RAID stripes a rebuild reconstructed into donor blocks (distributed
    /// spare space) after a member failed.
    pub rebuilt_columns: u64,
    /// Stale columns (their member replaced by a blank device while they held data) a
    /// rebuild reconstructed and wrote in place.
    pub rebuilt_in_place: u64,
    /// Bytes discarded on members (the scheme told them a range holds nothing it needs).
    pub device_bytes_trimmed: u64,
    /// Discards a member refused (advisory: the member is not failed for it).
    pub trim_errors: u64,
    /// Spare stripes whose blocks were discarded (proactive discard).
    pub stripes_trimmed: u64,
    /// Spare stripes left undiscarded because space was short when their turn came.
    pub trims_dropped: u64,
}

impl EngineStats {
    /// Device bytes written per user byte written.
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.device_bytes_written_fg + self.device_bytes_written_bg) as f64
            / self.user_bytes_written as f64
    }
}

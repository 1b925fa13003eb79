//! What this machine has, read from /proc.

/// The machine's physical memory (`MemTotal`), in bytes.
pub fn memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = info.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    Some(kib.split_whitespace().next()?.parse::<u64>().ok()? * 1024)
}

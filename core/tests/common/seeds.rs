//! Which seeds of the model and crash tests turn on the engine's optional paths. Each test
//! says what such a seed then does differently (its scenario and request mix); the shares
//! are picked apart from one another so that some seeds combine paths.

/// Seeds with hedged writes, and member stalls to make them count (a quarter).
pub fn hedges_writes(seed: u64) -> bool {
    seed % 4 == 3
}

/// Seeds that gather sequential writes into full stripes (a seventh): most of their
/// requests continue the volume's previous write, a block or two long.
pub fn gathers(seed: u64) -> bool {
    seed % 7 == 2
}

/// Seeds that write parity rows (a fifth): most of their writes are 1, 2 or 4 pages inside
/// a block, at least 16 in flight.
pub fn rows(seed: u64) -> bool {
    seed % 5 == 3
}

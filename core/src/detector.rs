//! Per-disk latency-spike detector (FusionRAID §4.3).

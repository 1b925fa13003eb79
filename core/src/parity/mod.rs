//! Parity: RAID5 XOR and RAID6 P+Q over GF(2^8), compatible with Linux md.

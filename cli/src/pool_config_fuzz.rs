//! Fuzzing the pool file: random bytes, and valid pool files changed in structure-aware ways
//! (truncated, flipped bytes, hostile values, duplicate keys and tables, unicode). Parsing
//! must never panic, and a pool file it accepts must be one the rest of the program can use:
//! it serialises into a superblock and parses back to itself, and an engine built from it
//! (when it fits the members) runs requests and timers without panicking.

use fusionraid_core::{Data, DevOp, Engine, Op, Request};
use proptest::prelude::*;

use crate::fuzz_util::{apply, cases, mutation};
use crate::pool_config::PoolFile;
use crate::scheme_choice::build_engine;
use crate::superblock::Superblock;

/// Member size the accepted pools are built on.
const DISK: u64 = 64 << 20;

/// A valid pool file with every optional setting present or absent.
fn valid_pool() -> impl Strategy<Value = String> {
    let volume = (
        prop_oneof![Just(("raid5", 1usize)), Just(("raid6", 2usize))],
        0usize..4,
        1u64..64,
        proptest::option::of(0.0f64..=1.0),
        proptest::option::of(0.0f64..=4.0),
        proptest::option::of(any::<bool>()),
    );
    (
        (
            prop_oneof![Just(5usize), Just(7), Just(8), Just(9)],
            prop_oneof![Just("4K"), Just("64K"), Just("1M")],
            prop_oneof![Just("mols"), Just("permutation"), Just("groups")],
            prop_oneof![Just("fusionraid"), Just("fusion-nd"), Just("raid50")],
            proptest::option::of(1u64..100_000),
            proptest::option::of(1usize..10_000),
        ),
        (
            proptest::option::of(prop_oneof![Just("dc"), Just("consumer")]),
            proptest::option::of(1u64..10_000),
            proptest::option::of(any::<bool>()),
            proptest::option::of(0u64..100_000),
            proptest::option::of(0.0f64..1000.0),
        ),
        proptest::collection::vec(volume, 1..3),
    )
        .prop_map(|(top, policy, vols)| {
            let (n, bs, layout, scheme, hedge, maxreq) = top;
            let (preset, slot, conv, idle, pause) = policy;
            let mut t = String::from("name = \"fz\"\n");
            let members: Vec<&str> = (0..n).map(|_| "\"mem:64M\"").collect();
            t += &format!("members = [{}]\n", members.join(", "));
            t += &format!("block_size = \"{bs}\"\nlayout = \"{layout}\"\n");
            t += &format!("scheme = \"{scheme}\"\n");
            if let Some(h) = hedge {
                t += &format!("hedge_us = {h}\n");
            }
            if let Some(m) = maxreq {
                t += &format!("max_requests = {m}\n");
            }
            t += "[detector]\n";
            if let Some(p) = preset {
                t += &format!("preset = \"{p}\"\n");
            }
            if let Some(s) = slot {
                t += &format!("slot_us = {s}\n");
            }
            t += "[conversion]\n";
            if let Some(c) = conv {
                t += &format!("enabled = {c}\n");
            }
            if let Some(i) = idle {
                t += &format!("idle_ms = {i}\n");
            }
            if let Some(p) = pause {
                t += &format!("pause_mb_per_s = {p}\n");
            }
            let block: u64 = match bs {
                "4K" => 4 << 10,
                "64K" => 64 << 10,
                _ => 1 << 20,
            };
            for (i, ((level, np), extra, blocks, rep, spare, unaligned)) in
                vols.into_iter().enumerate()
            {
                t += &format!("[[volume]]\nname = \"v{i}\"\nlevel = \"{level}\"\n");
                t += &format!("width = {}\nsize = {}\n", np + 2 + extra, blocks * block);
                if let Some(r) = rep {
                    t += &format!("replicated_fraction = {r}\n");
                }
                if let Some(s) = spare {
                    t += &format!("spare_fraction = {s}\n");
                }
                if let Some(u) = unaligned {
                    t += &format!("allow_unaligned = {u}\n");
                }
            }
            t += "[serve]\nunix = \"nbd.sock\"\nqueue_depth = 64\n";
            t
        })
}

/// What every accepted pool file must satisfy; panics (failing the property) otherwise.
fn check_accepted(p: &PoolFile) {
    // What `create` stores in the superblocks must fit there and parse back to the same
    // pool: `serve` compares the two.
    let stored = p.to_toml();
    let sb = Superblock {
        version: crate::superblock::VERSION,
        uuid: [1; 16],
        index: 0,
        count: p.members.len() as u32,
        disk_bytes: DISK,
        created_unix: 0,
        config: stored.clone(),
        tier: crate::superblock::Tier::Ssd,
        generation: 0,
    };
    let back = Superblock::decode(&sb.encode().expect("an accepted pool fits a superblock"));
    let again = PoolFile::parse(&back.expect("round trip").config)
        .unwrap_or_else(|e| panic!("stored config does not parse back: {e:#}\n{stored}"));
    assert_eq!(&again, p, "the stored pool differs from the accepted one");
    assert_eq!(again.geometry_key(), p.geometry_key());
    p.detector_config().expect("an accepted detector config");
    let total = p
        .volumes
        .iter()
        .try_fold(0u64, |a, v| a.checked_add(v.size.0));
    assert!(total.is_some(), "volume sizes overflow");
    // Engines over many members allocate a lot; the interesting cases are small.
    if p.members.len() <= 16
        && let Ok(mut e) = build_engine(p, None, DISK)
    {
        drive(&mut e);
    }
}

/// A write and a read through the engine with instant devices, then timers for a while:
/// the policies' numbers (idle time, hedging, detector slots) take part in deadline
/// arithmetic.
fn drive(e: &mut Engine) {
    let mut now = 1_000_000;
    let write = Op::Write {
        offset: 0,
        data: Data::Bytes(vec![0x5a; 4096]),
        fua: false,
    };
    let read = Op::Read {
        offset: 0,
        len: 4096,
    };
    for (id, op) in [(1, write), (2, read)] {
        let _ = e.submit(Request { id, volume: 0, op }, now);
    }
    for _ in 0..200 {
        while let Some(io) = e.poll_device_io() {
            let r = match io.op {
                DevOp::Read { len, .. } => Ok(Some(Data::Bytes(vec![0; len as usize]))),
                _ => Ok(None),
            };
            e.handle_completion(io.id, r, now).expect("known I/O");
        }
        while e.poll_reply().is_some() {}
        match e.poll_timeout() {
            Some(t) => {
                now = now.max(t);
                e.handle_timeout(now);
            }
            None => break,
        }
        now += 3_000_000;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn generated_pools_are_accepted(text in valid_pool()) {
        let p = PoolFile::parse(&text).map_err(|e| TestCaseError::fail(format!("{e:#}\n{text}")))?;
        check_accepted(&p);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(p) = PoolFile::parse(&String::from_utf8_lossy(&bytes)) {
            check_accepted(&p);
        }
    }

    #[test]
    fn mutated_pools_are_rejected_cleanly_or_sane(
        text in valid_pool(),
        ms in proptest::collection::vec(mutation(), 1..4),
    ) {
        let text = ms.iter().fold(text, |t, m| apply(&t, m));
        match PoolFile::parse(&text) {
            Ok(p) => check_accepted(&p),
            Err(e) => {
                // serde's message for a value no variant of an untagged enum took says
                // nothing about what was expected.
                let msg = format!("{e:#}");
                prop_assert!(!msg.is_empty() && !msg.contains("untagged"), "{}", msg);
            }
        }
    }
}

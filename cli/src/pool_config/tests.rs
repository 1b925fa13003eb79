//! The pool file's parsing, defaults, validation and spare shares.

use fusionraid_core::scheme::fusion::sizing;

use super::units::{MOVES_WARN_ABOVE, SPARE_WARN_BELOW};
use super::*;

#[test]
fn small_spare_shares_are_warned_about_with_their_predicted_cost() {
    let warn = |share: &str| {
        PoolFile::parse(&format!(
            "members = [\"mem:2G\", \"mem:2G\", \"mem:2G\", \"mem:2G\", \"mem:2G\"]\n\
             [[volume]]\nname = \"v\"\nlevel = \"raid5\"\nwidth = 4\nsize = \"1G\"\n\
             spare_fraction = {share}\n"
        ))
        .unwrap()
        .spare_warnings(2 << 30)
    };
    let w = warn("0.1");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("'v'") && w[0].contains("pages per page written") && w[0].contains("outrun"),
        "{}",
        w[0]
    );
    // The cleaner moves more than a page per page written at 0.1 (the warning's number).
    let moves: f64 = w[0]
        .split("moving ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(moves > MOVES_WARN_ABOVE, "{moves}");
    assert!(warn(&SPARE_WARN_BELOW.to_string()).is_empty());
    assert!(warn("0.5").is_empty());
    assert!(
        warn("\"auto\"").is_empty(),
        "auto is resolved (to the room left) before it is judged"
    );
}

#[test]
fn spare_share_is_a_number_or_auto_and_auto_resolves_to_what_fits() {
    let with = |line: &str| {
        PoolFile::parse(&GOOD.replace("size = \"16M\"", &format!("size = \"16M\"\n{line}")))
            .unwrap()
            .volumes[0]
            .spare_fraction
    };
    assert_eq!(with(""), Spare::Auto);
    assert_eq!(with("spare_fraction = \"auto\""), Spare::Auto);
    assert_eq!(with("spare_fraction = 1"), Spare::Share(1.0));
    assert_eq!(with("spare_fraction = 0.5"), Spare::Share(0.5));

    // Five 64 MiB members hold far more than one 16 MiB volume: auto takes the cap.
    let p = PoolFile::parse(GOOD).unwrap();
    let r = p.with_spare_resolved(64 << 20).unwrap();
    let Spare::Share(share) = r.volumes[0].spare_fraction else {
        panic!("unresolved");
    };
    assert_eq!(share, sizing::AUTO_SPARE_MAX);
    // Stored and parsed back, it is the same geometry.
    let again = PoolFile::parse(&r.to_toml()).unwrap();
    assert_eq!(again.geometry_key(), r.geometry_key());
    // On members that only just hold the volume, less.
    let tight = p.with_spare_resolved(8 << 20).unwrap();
    assert!(
        matches!(tight.volumes[0].spare_fraction, Spare::Share(s) if s < share),
        "{:?}",
        tight.volumes[0].spare_fraction
    );
}

const GOOD: &str = r#"
name = "t"
members = ["mem:64M", "mem:64M", "mem:64M", "mem:64M", "mem:64M"]
[[volume]]
name = "v0"
level = "raid5"
width = 4
size = "16M"
"#;

#[test]
fn defaults_and_round_trip() {
    let p = PoolFile::parse(GOOD).unwrap();
    assert_eq!(p.block_size, Size(64 << 10));
    assert_eq!(p.scheme, "fusionraid");
    assert!(p.is_ephemeral());
    let again = PoolFile::parse(&p.to_toml()).unwrap();
    assert_eq!(again, p);
}

fn err(patch: &str) -> String {
    let text = format!("{GOOD}\n{patch}");
    format!("{:#}", PoolFile::parse(&text).unwrap_err())
}

#[test]
fn errors_name_the_field() {
    assert!(err("[detector]\npreset = \"x\"").contains("detector.preset"));
    assert!(err("[detector]\nx_high = 0").contains("detector"));
    assert!(
        err("[[volume]]\nname = \"v0\"\nlevel = \"raid5\"\nwidth = 4\nsize = \"1M\"")
            .contains("used twice")
    );
    assert!(
        err("[[volume]]\nname = \"w\"\nlevel = \"raid9\"\nwidth = 4\nsize = \"1M\"")
            .contains("level")
    );
    assert!(
        err("[[volume]]\nname = \"w\"\nlevel = \"raid5\"\nwidth = 4\nsize = \"100K\"")
            .contains("size")
    );
    assert!(
        err("[[volume]]\nname = \"w\"\nlevel = \"raid5\"\nwidth = 4\nsize = \"1Q\"")
            .contains("unknown unit")
    );
    assert!(err("bogus = 1").contains("bogus"));
    let bad = GOOD.replace("\"mem:64M\", \"mem:64M\"]", "\"mem:64M\", \"disk0\"]");
    assert!(format!("{:#}", PoolFile::parse(&bad).unwrap_err()).contains("members[4]"));
    let mixed = GOOD.replace("\"mem:64M\"]", "\"file:/tmp/x\"]");
    assert!(format!("{:#}", PoolFile::parse(&mixed).unwrap_err()).contains("in memory"));
}

/// Values the fuzzer found (pool_config_fuzz.rs) that would overflow, allocate without
/// bound, or fail to round-trip through the superblock if accepted.
#[test]
fn hostile_values_are_refused_with_the_field_named() {
    let top = |line: &str| {
        let text = format!("{line}\n{GOOD}");
        format!("{:#}", PoolFile::parse(&text).unwrap_err())
    };
    assert!(top("hedge_us = 9223372036854775807").contains("hedge_us"));
    assert!(top("write_hedge_us = 9223372036854775807").contains("write_hedge_us"));
    assert!(top("raid_hedge_us = 9223372036854775807").contains("raid_hedge_us"));
    assert!(top("gather_us = 100001").contains("gather_us"));
    assert!(top("row_us = 100001").contains("row_us"));
    assert!(top("wear_gap = 0.9").contains("wear_gap"));
    assert!(top("wear_gap = 0").contains("wear_gap"));
    assert!(top("wear_gap = nan").contains("wear_gap"));
    assert!(top("max_requests = 9223372036854775807").contains("max_requests"));
    assert!(top("block_size = -1").contains("can not be negative"));
    assert!(top("block_size = 1.5").contains("whole number"));
    let esc = GOOD.replace("name = \"t\"", "name = \"a\\u001b[2Jb\"");
    assert!(format!("{:#}", PoolFile::parse(&esc).unwrap_err()).contains("control"));
    assert!(top("member_size = \"4K\"").contains("member_size"));
    assert!(err("[conversion]\nidle_ms = 9223372036854775807").contains("idle_ms"));
    assert!(err("[conversion]\nspare_low_water = nan").contains("spare_low_water"));
    assert!(err("[conversion]\npause_mb_per_s = -inf").contains("pause_mb_per_s"));
    assert!(err("[conversion]\nmax_concurrent = 0").contains("max_concurrent"));
    assert!(err("[detector]\nslot_us = 9223372036854775807").contains("slot_us"));
    assert!(err("[serve]\nqueue_depth = 9223372036854775807").contains("queue_depth"));
    let vol = |extra: &str| {
        err(&format!(
            "[[volume]]\nname = \"w\"\nlevel = \"raid6\"\nwidth = 4\nsize = \"1M\"\n{extra}"
        ))
    };
    assert!(vol("replicated_fraction = nan").contains("replicated_fraction"));
    assert!(vol("spare_fraction = inf").contains("spare_fraction"));
    assert!(vol("spare_fraction = 5").contains("spare_fraction"));
    assert!(vol("spare_fraction = \"lots\"").contains("\"auto\""));
    let narrow = GOOD.replace("width = 4", "width = 2");
    assert!(format!("{:#}", PoolFile::parse(&narrow).unwrap_err()).contains("width"));
    let huge = GOOD.replace("size = \"16M\"", "size = \"16777215T\"");
    let p = PoolFile::parse(&huge).unwrap();
    let Err(e) = crate::scheme_choice::build_engine(&p, None, 64 << 20) else {
        panic!("16 EiB of volumes on 64 MiB members was accepted");
    };
    assert!(format!("{e:#}").contains("members offer"), "{e:#}");
}

/// GOOD with a `[steer]` section appended.
fn steered(section: &str) -> PoolFile {
    PoolFile::parse(&format!("{GOOD}\n[steer]\n{section}\n")).unwrap()
}

#[test]
fn steering_is_sandooks_always_and_fusionraids_when_enabled() {
    let p = PoolFile::parse(GOOD).unwrap();
    assert!(p.steer_config("fusionraid").unwrap().is_none());
    let s = p.steer_config("sandook").unwrap().unwrap();
    assert!(s.profile_weights && s.segregation && s.congestion);
    let on = steered("enabled = true");
    let f = on.steer_config("fusionraid").unwrap().unwrap();
    assert!(f.profile_weights && !f.segregation && f.congestion);
    assert!(on.steer_config("fusion-nd").unwrap().is_none());
    let cfg = on.fusion_config(64 << 20, true, 0).unwrap();
    assert!(cfg.steer.is_some());
    assert!(
        on.fusion_config(64 << 20, false, 0)
            .unwrap()
            .steer
            .is_none()
    );
    let only = steered("enabled = true\nmechanisms = [\"segregation\"]");
    let c = only.steer_config("fusionraid").unwrap().unwrap();
    assert!(c.segregation && !c.profile_weights && !c.congestion);
    // The section round-trips through the file `create` writes.
    let again = PoolFile::parse(&only.to_toml()).unwrap();
    assert_eq!(again.steer, only.steer);
}

#[test]
fn bad_steering_is_refused_with_the_key() {
    let e = steered("mechanisms = [\"magic\"]")
        .steer_config("sandook")
        .unwrap_err();
    assert!(format!("{e:#}").contains("steer.mechanisms"), "{e:#}");
    let e = steered("serials = [\"S39WNA0KB01161\"]")
        .member_curves()
        .unwrap_err();
    assert!(format!("{e:#}").contains("steer.profiles"), "{e:#}");
    let e = steered("profiles = \"/nonexistent\"\nserials = [\"X\"]")
        .member_curves()
        .unwrap_err();
    assert!(format!("{e:#}").contains("steer.serials[0]"), "{e:#}");
    assert!(PoolFile::parse(&format!("{GOOD}\n[steer]\nbogus = 1\n")).is_err());
}

#[test]
fn member_curves_come_from_profiles_by_serial_and_from_emulated_models() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/ssd-profiles"
    );
    let p = PoolFile::parse(&format!(
        "{}\n[steer]\nprofiles = \"{dir}\"\nserials = [\"S39WNA0KB01161\", \"\"]\n",
        GOOD.replace(
            "\"mem:64M\", \"mem:64M\", \"mem:64M\", \"mem:64M\", \"mem:64M\"",
            "\"mem:64M\", \"emu:sn200:mem:64M\", \"mem:64M\", \"mem:64M\", \"mem:64M\""
        )
    ))
    .unwrap();
    let c = p.member_curves().unwrap();
    assert_eq!(c.len(), 5);
    let measured = c[0].as_ref().expect("the profiled serial");
    assert_eq!(measured.curves.len(), 9, "one curve per profiled mix");
    assert!(
        c[1].as_ref().is_some_and(|s| s.curves.len() >= 2),
        "swept model"
    );
    assert!(c[2..].iter().all(Option::is_none));
}

/// A mirror volume next to a RAID5 one: `copies` (default 2) fixes the width, the level
/// reaches the engine, and what `create` stores reads back the same.
#[test]
fn mirror_volumes_take_copies_and_imply_their_width() {
    let with = |extra: &str| {
        format!("{GOOD}\n[[volume]]\nname = \"m\"\nlevel = \"mirror\"\nsize = \"8M\"\n{extra}")
    };
    let p = PoolFile::parse(&with("")).unwrap();
    let m = &p.volumes[1];
    assert_eq!(m.parsed_level(), Ok(Level::Mirror { copies: 2 }));
    assert_eq!(m.stripe_width(), 2);
    let p3 = PoolFile::parse(&with("copies = 3")).unwrap();
    assert_eq!(
        p3.volumes[1].parsed_level(),
        Ok(Level::Mirror { copies: 3 })
    );
    assert_eq!(p3.volumes[1].stripe_width(), 3);
    assert_ne!(p3.geometry_key(), p.geometry_key(), "copies are geometry");
    let again = PoolFile::parse(&p3.to_toml()).unwrap();
    assert_eq!(again, p3);
    let f = p3.fusion_config(64 << 20, true, 0).unwrap();
    assert_eq!(f.volumes[1].level, Level::Mirror { copies: 3 });
    assert_eq!(f.volumes[1].width, 3);
    assert_eq!(f.volumes[0].level, Level::Raid5);
    // A pool file without mirrors serialises as before (old superblocks read the same).
    assert!(!PoolFile::parse(GOOD).unwrap().to_toml().contains("copies"));
    let bad = |extra: &str| format!("{:#}", PoolFile::parse(&with(extra)).unwrap_err());
    assert!(bad("copies = 4").contains("2 or 3"));
    assert!(bad("width = 4").contains("width"));
    let raid_copies = GOOD.replace("width = 4", "width = 4\ncopies = 2");
    let e = format!("{:#}", PoolFile::parse(&raid_copies).unwrap_err());
    assert!(e.contains("copies"), "{e}");
    let no_width = GOOD.replace("width = 4\n", "");
    assert!(format!("{:#}", PoolFile::parse(&no_width).unwrap_err()).contains("width"));
}

/// Issue 21: `hdd_members` names a hybrid pool's HDDs; they take no stripes (the engine's
/// geometry gets them), the geometry key includes them, and the baselines refuse them.
#[test]
fn hdd_members_are_checked_and_reach_the_engine() {
    let file = |hdds: &str| {
        PoolFile::parse(&format!(
            "members = [\"mem:2G\", \"mem:2G\", \"mem:2G\", \"mem:2G\", \"mem:2G\", \"mem:2G\", \"mem:2G\"]\n\
             hdd_members = {hdds}\n\
             [[volume]]\nname = \"v\"\nlevel = \"raid5\"\nwidth = 4\nsize = \"1G\"\n"
        ))
    };
    let p = file("[1, 5]").unwrap();
    assert!(p.is_hdd(1) && p.is_hdd(5) && !p.is_hdd(0));
    assert_eq!(
        p.fusion_config(2 << 30, true, 0).unwrap().pool.hdds,
        vec![1, 5]
    );
    assert_ne!(p.geometry_key(), file("[]").unwrap().geometry_key());
    assert_eq!(
        PoolFile::parse(&p.to_toml()).unwrap(),
        p,
        "stored and read back"
    );
    for (bad, why) in [
        ("[7]", "not a member index"),
        ("[3, 1]", "ascending"),
        ("[1, 1]", "ascending"),
        ("[0, 1, 2, 3, 4, 5, 6]", "at least one SSD"),
    ] {
        let e = format!("{:#}", file(bad).unwrap_err());
        assert!(e.contains(why), "{bad}: {e}");
    }
    let e = crate::scheme_choice::build_scheme(&p, "raid50", 2 << 30)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("HDD") && e.contains("fusionraid"), "{e}");
    assert!(crate::scheme_choice::build_scheme(&p, "fusionraid", 2 << 30).is_ok());
}

/// Issue 21: `[offload]` turns write offload on with SeRW's threshold and a log size; it
/// needs HDD members, and survives being stored and read back.
#[test]
fn offload_section_reaches_the_engine_and_needs_hdds() {
    let file = |hdds: &str, offload: &str| {
        PoolFile::parse(&format!(
            "members = [\"mem:2G\", \"mem:2G\", \"mem:2G\", \"mem:2G\", \"mem:2G\", \"mem:2G\"]\n\
             hdd_members = {hdds}\n{offload}\n\
             [[volume]]\nname = \"v\"\nlevel = \"raid5\"\nwidth = 4\nsize = \"1G\"\n"
        ))
    };
    let p = file(
        "[5]",
        "[offload]\nenabled = true\nqueue_threshold = 1\nmin_outstanding = 2.5\nlog_size = \"64M\"",
    )
    .unwrap();
    let o = p.fusion_config(2 << 30, true, 0).unwrap().offload.unwrap();
    assert_eq!(
        (o.queue_threshold, o.min_outstanding, o.log_bytes),
        (1, 2.5, Some(64 << 20))
    );
    assert_eq!(
        PoolFile::parse(&p.to_toml()).unwrap(),
        p,
        "stored and read back"
    );
    let off = file("[5]", "").unwrap();
    assert!(
        off.fusion_config(2 << 30, true, 0)
            .unwrap()
            .offload
            .is_none()
    );
    for (hdds, offload, why) in [
        ("[]", "[offload]\nenabled = true", "needs HDD members"),
        (
            "[5]",
            "[offload]\nenabled = true\nlog_size = \"1K\"",
            "at least 4K",
        ),
        (
            "[5]",
            "[offload]\nenabled = true\nthreshold = 3",
            "unknown field",
        ),
        (
            "[5]",
            "[offload]\nenabled = true\nmin_outstanding = -1.0",
            "min_outstanding",
        ),
    ] {
        let e = format!("{:#}", file(hdds, offload).unwrap_err());
        assert!(e.contains(why), "{offload}: {e}");
    }
}

/// `file_space` names one of two ways; the default is left out of the stored text, so pools
/// created before the key existed keep the same stored configuration.
#[test]
fn file_space_is_reserved_or_thin() {
    use fusionraid_io::member::uring::FileSpace;
    let with = |line: &str| PoolFile::parse(&format!("{line}\n{GOOD}"));
    assert_eq!(
        PoolFile::parse(GOOD).unwrap().file_space,
        FileSpace::Reserved
    );
    let thin = with("file_space = \"thin\"").unwrap();
    assert_eq!(thin.file_space, FileSpace::Thin);
    assert!(thin.to_toml().contains("file_space = \"thin\""));
    assert!(
        !PoolFile::parse(GOOD)
            .unwrap()
            .to_toml()
            .contains("file_space")
    );
    let e = format!("{:#}", with("file_space = \"thick\"").unwrap_err());
    assert!(e.contains("file_space") || e.contains("thick"), "{e}");
}

/// `no_space_wait_s`: 60 s unless set, left out of the stored text at its default, and
/// bounded so a typo is not a write held for days.
#[test]
fn no_space_wait_defaults_to_a_minute_and_is_bounded() {
    let with = |line: &str| PoolFile::parse(&format!("{line}\n{GOOD}"));
    let default = PoolFile::parse(GOOD).unwrap();
    assert_eq!(default.no_space_wait_s, 60);
    assert!(!default.to_toml().contains("no_space_wait_s"));
    let zero = with("no_space_wait_s = 0").unwrap();
    assert_eq!(zero.no_space_wait_s, 0);
    assert!(zero.to_toml().contains("no_space_wait_s = 0"));
    let e = format!("{:#}", with("no_space_wait_s = 100000").unwrap_err());
    assert!(e.contains("no_space_wait_s"), "{e}");
}

/// A pool file that names no layout gets MOLS where MOLS lays out every volume and the
/// permutation layout otherwise (three drives with a 2+1 stripe, six drives, a stripe as
/// wide as the pool); a named layout is kept as it is.
#[test]
fn the_default_layout_fits_the_geometry() {
    let pool = |members: usize, vols: &str, top: &str| {
        let list = vec!["\"mem:64M\""; members].join(", ");
        PoolFile::parse(&format!("{top}members = [{list}]\n{vols}")).unwrap()
    };
    let vol = |level: &str, width: usize| {
        format!(
            "[[volume]]\nname = \"v{width}\"\nlevel = \"{level}\"\nwidth = {width}\nsize = \"8M\"\n"
        )
    };
    assert_eq!(PoolFile::parse(GOOD).unwrap().layout, "auto");
    for (members, vols, want) in [
        (5, vol("raid5", 4), "mols"),
        (7, vol("raid5", 5) + &vol("raid6", 6), "mols"),
        (5, vol("raid5", 5), "permutation"),
        (3, vol("raid5", 3), "permutation"),
        (6, vol("raid5", 5), "permutation"),
        (7, vol("raid5", 4) + &vol("raid6", 7), "permutation"),
    ] {
        let p = pool(members, &vols, "");
        assert_eq!(p.resolved_layout(), want, "{members} members, {vols}");
        assert!(p.layout_kind().is_ok(), "{members} members, {vols}");
    }
    // HDD members hold no stripes: the SSDs alone decide.
    let hybrid = |members: usize, hdds: &str| {
        pool(
            members,
            &vol("raid5", 4),
            &format!("hdd_members = {hdds}\n"),
        )
    };
    assert_eq!(hybrid(7, "[5, 6]").resolved_layout(), "mols");
    assert_eq!(hybrid(8, "[6, 7]").resolved_layout(), "permutation");
    // A three-way mirror on three drives.
    let m3 = "[[volume]]\nname = \"m\"\nlevel = \"mirror\"\ncopies = 3\nsize = \"8M\"\n";
    assert_eq!(pool(3, m3, "").resolved_layout(), "permutation");
    // Named layouts stay what they are, refusals included.
    assert_eq!(
        pool(5, &vol("raid5", 4), "layout = \"groups\"\n").resolved_layout(),
        "groups"
    );
    let p = pool(6, &vol("raid5", 5), "layout = \"mols\"\n");
    assert!(
        p.layout_kind().is_ok(),
        "the layout refuses later, at create"
    );
}

//! `fusionraid create / serve / status` on file members: superblocks, assembly errors,
//! degraded start, schemes. Uses only our own NBD client (no external tools).

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use fusionraid_nbd::Client;

const T: Duration = Duration::from_secs(60);

/// A pool of five 96 MiB file members (created by `create`).
fn file_pool(dir: &Path, extra: &str) -> std::path::PathBuf {
    let members: Vec<String> = (0..5).map(|i| format!("\"file:d{i}.img\"")).collect();
    pool_file(
        dir,
        &format!(
            "name = \"files\"\nmembers = [{}]\nmember_size = \"96M\"\n{extra}{}{}",
            members.join(", "),
            volume("v0", "raid5", 4, "32M", false),
            volume("v1", "raid6", 4, "16M", true)
        ),
    )
}

fn create(pool: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["create", pool.to_str().unwrap()];
    args.extend(extra);
    run(BIN, &args, T)
}

fn fails_with(out: Output, needle: &str) {
    assert!(
        !out.status.success(),
        "expected failure, got:\n{}",
        out.stdout
    );
    assert!(
        out.stderr.contains(needle),
        "expected {needle:?} in:\n{}",
        out.stderr
    );
}

fn write_read(uri: &str, seed: u64) {
    let mut c = Client::connect(uri).unwrap();
    let data = pattern(seed, 3 << 20);
    c.write_at(&data, 1 << 20).unwrap();
    c.flush().unwrap();
    let mut back = vec![0u8; data.len()];
    c.read_at(&mut back, 1 << 20).unwrap();
    assert!(back == data, "read back differs");
    c.disconnect().unwrap();
}

fn read_expect(uri: &str, seed: u64) {
    let mut c = Client::connect(uri).unwrap();
    let data = pattern(seed, 3 << 20);
    let mut back = vec![0u8; data.len()];
    c.read_at(&mut back, 1 << 20).unwrap();
    assert!(
        back == data,
        "data written before the restart is gone or changed"
    );
    c.disconnect().unwrap();
}

#[test]
fn create_serve_status_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let pool = file_pool(dir.path(), "");
    let out = create(&pool, &[]).ok("create");
    assert!(
        out.stdout.contains("created pool 'files'"),
        "{}",
        out.stdout
    );
    // A second create refuses to overwrite the pool.
    fails_with(create(&pool, &[]), "already holds member 0");

    let s = Serve::start(&pool, &[]);
    write_read(&s.uri("v0"), 1);
    write_read(&s.uri("v1"), 2);
    let text = s.status_text(false);
    for needle in [
        "pool: files",
        "state: ONLINE",
        "healthy",
        "v0",
        "raid6 2+2",
        "REPLICATED",
        "BACKLOG",
        "No known data errors",
        "metadata: journaled",
        "recovery: new pool, first start since create (checkpoint seq 1,",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    let json: serde_json::Value = serde_json::from_str(&s.status_text(true)).unwrap();
    assert_eq!(json["snapshot"]["members"].as_array().unwrap().len(), 5);
    assert!(
        json["snapshot"]["volumes"][0]["mapped_bytes"]
            .as_u64()
            .unwrap()
            >= 3 << 20
    );
    s.stop();

    // The superblocks and the journaled mapping survive: serve assembles the same pool again
    // and both volumes still hold what was flushed.
    let s = Serve::start(&pool, &[]);
    read_expect(&s.uri("v0"), 1);
    read_expect(&s.uri("v1"), 2);
    write_read(&s.uri("v0"), 3);
    s.stop();
    let s = Serve::start(&pool, &[]);
    read_expect(&s.uri("v0"), 3);
    s.stop();
}

/// A second `serve` of a pool already served (by hand next to a service, with its own
/// sockets) would have two engines write the same members as if alone, each allocating
/// the free stripes the other is filling, and data flushed through the first would read
/// back as errors; `create --force` would likewise format a pool under its server. Both
/// are refused: every file member is locked while it is open.
#[test]
fn a_served_pool_is_refused_to_a_second_serve_and_to_create() {
    let dir = tempfile::tempdir().unwrap();
    let pool = file_pool(dir.path(), "");
    create(&pool, &[]).ok("create");
    let s = Serve::start(&pool, &[]);
    write_read(&s.uri("v0"), 7);
    let d = dir.path();
    let (sock, status) = (d.join("b.sock"), d.join("b-status.sock"));
    let second = [
        "serve",
        pool.to_str().unwrap(),
        "--unix",
        sock.to_str().unwrap(),
        "--status",
        status.to_str().unwrap(),
        "--no-tcp",
    ];
    fails_with(
        run(BIN, &second, Duration::from_secs(20)),
        "in use by another process",
    );
    fails_with(create(&pool, &["--force"]), "in use by another process");
    read_expect(&s.uri("v0"), 7);
    s.stop();
    // Stopped, the pool is free to serve again.
    let s = Serve::start(&pool, &[]);
    read_expect(&s.uri("v0"), 7);
    s.stop();
}

#[test]
fn assembly_errors_are_clear_and_degraded_start_works() {
    let dir = tempfile::tempdir().unwrap();
    let pool = file_pool(dir.path(), "");
    create(&pool, &[]).ok("create");
    let d = dir.path();

    // One member missing: RAID5 and RAID6 both tolerate it.
    std::fs::rename(d.join("d3.img"), d.join("away.img")).unwrap();
    let s = Serve::start(&pool, &[]);
    write_read(&s.uri("v0"), 4);
    let text = s.status_text(false);
    assert!(text.contains("DEGRADED"), "{text}");
    assert!(text.contains("missing"), "{text}");
    let err = s.stop();
    assert!(err.contains("serving degraded"), "{err}");

    // Two missing: more than RAID5 tolerates.
    std::fs::rename(d.join("d4.img"), d.join("away4.img")).unwrap();
    fails_with(
        run(BIN, &["serve", pool.to_str().unwrap()], T),
        "tolerate 1",
    );
    std::fs::rename(d.join("away.img"), d.join("d3.img")).unwrap();
    std::fs::rename(d.join("away4.img"), d.join("d4.img")).unwrap();

    // The same member listed twice: `create` refuses it (it would format a pool no
    // `serve` takes).
    let text = std::fs::read_to_string(&pool).unwrap();
    let twice = tempfile::tempdir().unwrap();
    let tpool = file_pool(twice.path(), "");
    let t = std::fs::read_to_string(&tpool).unwrap();
    std::fs::write(&tpool, t.replace("file:d4.img", "file:d3.img")).unwrap();
    fails_with(create(&tpool, &[]), "are the same device");
    // The same member listed twice.
    let dup = dir.path().join("dup.toml");
    std::fs::write(&dup, text.replace("file:d4.img", "file:d3.img")).unwrap();
    fails_with(
        run(BIN, &["serve", dup.to_str().unwrap()], T),
        "both claim to be member 3",
    );

    // A member of another pool.
    let other = tempfile::tempdir().unwrap();
    let opool = file_pool(other.path(), "");
    create(&opool, &[]).ok("create other");
    let mixed = dir.path().join("mixed.toml");
    let elsewhere = other.path().join("d2.img");
    std::fs::write(
        &mixed,
        text.replace("file:d2.img", &format!("file:{}", elsewhere.display())),
    )
    .unwrap();
    fails_with(
        run(BIN, &["serve", mixed.to_str().unwrap()], T),
        "belongs to pool",
    );

    // A blank member.
    let blank = dir.path().join("blank.toml");
    std::fs::write(d.join("b.img"), vec![0u8; 96 << 20]).unwrap();
    std::fs::write(&blank, text.replace("file:d1.img", "file:b.img")).unwrap();
    fails_with(
        run(BIN, &["serve", blank.to_str().unwrap()], T),
        "no fusionraid superblock",
    );

    // Geometry changed behind create's back.
    let grown = dir.path().join("grown.toml");
    std::fs::write(&grown, text.replace("size = \"32M\"", "size = \"48M\"")).unwrap();
    fails_with(
        run(BIN, &["serve", grown.to_str().unwrap()], T),
        "geometry differs",
    );

    // A volume's spare or replicated share sizes its zone: a change would move the next
    // volume's data.
    for field in ["spare_fraction = 0.5", "replicated_fraction = 0.2"] {
        let roomier = dir.path().join("roomier.toml");
        std::fs::write(
            &roomier,
            text.replacen("size = \"32M\"", &format!("size = \"32M\"\n{field}"), 1),
        )
        .unwrap();
        fails_with(
            run(BIN, &["serve", roomier.to_str().unwrap()], T),
            "geometry differs",
        );
    }

    // --force re-creates.
    create(&pool, &["--force"]).ok("create --force");
}

/// A member file cut short (its superblock intact) is damage, like a corrupted
/// superblock: the pool is served degraded without it, the reason named, rather than
/// refused whole while its parity covers the loss.
#[test]
fn a_truncated_member_is_missing_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let pool = file_pool(dir.path(), "");
    create(&pool, &[]).ok("create");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("d2.img"))
        .unwrap();
    f.set_len(40 << 20).unwrap();
    drop(f);
    let s = Serve::start(&pool, &[]);
    write_read(&s.uri("v0"), 5);
    let text = s.status_text(false);
    assert!(text.contains("DEGRADED"), "{text}");
    let err = s.stop();
    assert!(err.contains("member 2 is missing"), "{err}");
    assert!(err.contains("the pool uses"), "{err}");
}

/// Members listed in another order than at create each take the slot their superblock
/// names; one that can not be read is named as itself, not as the member listed at the
/// missing slot's position (which is present and serving).
#[test]
fn a_missing_member_listed_out_of_order_is_named_right() {
    let dir = tempfile::tempdir().unwrap();
    let pool = file_pool(dir.path(), "");
    create(&pool, &[]).ok("create");
    let text = std::fs::read_to_string(&pool).unwrap();
    let listed = (0..5)
        .map(|i| format!("\"file:d{i}.img\""))
        .collect::<Vec<_>>()
        .join(", ");
    let shuffled = ["d3", "d1", "d4", "d0", "d2"]
        .map(|d| format!("\"file:{d}.img\""))
        .join(", ");
    assert!(text.contains(&listed), "{text}");
    std::fs::write(&pool, text.replace(&listed, &shuffled)).unwrap();
    std::fs::rename(dir.path().join("d4.img"), dir.path().join("away.img")).unwrap();
    let s = Serve::start(&pool, &[]);
    write_read(&s.uri("v0"), 6);
    let err = s.stop();
    let line = err
        .lines()
        .find(|l| l.contains("member 4 is missing"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("d4.img"), "{line}");
    assert!(!line.contains("d2.img"), "{line}");
}

#[test]
fn bad_pool_files_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "members = []\n[[volume]]\nname=\"a\"\nlevel=\"raid5\"\nwidth=4\nsize=\"1M\"",
            "members",
        ),
        (
            "members = [\"mem:64M\"]\nblock_size = \"3K\"\n[[volume]]\nname=\"a\"\nlevel=\"raid5\"\nwidth=4\nsize=\"1M\"",
            "block_size",
        ),
        (
            "members = [\"floppy:a\"]\n[[volume]]\nname=\"a\"\nlevel=\"raid5\"\nwidth=4\nsize=\"1M\"",
            "members[0]",
        ),
        (
            "members = [\"mem:64M\"]\n[[volume]]\nname=\"a\"\nlevel=\"raid5\"\nwidth=4\nsize=\"1M\"\ncolour=1",
            "colour",
        ),
    ];
    for (text, field) in cases {
        let p = pool_file(dir.path(), text);
        fails_with(run(BIN, &["serve", p.to_str().unwrap()], T), field);
    }
    // A pool too large for its members.
    let p = mem_pool(dir.path(), 5, "16M", &volume("a", "raid5", 4, "1G", false));
    fails_with(run(BIN, &["serve", p.to_str().unwrap()], T), "does not fit");
    // An unknown scheme lists the known ones.
    let p = mem_pool(dir.path(), 5, "64M", &volume("a", "raid5", 4, "8M", false));
    fails_with(
        run(
            BIN,
            &["serve", p.to_str().unwrap(), "--scheme", "raid99"],
            T,
        ),
        "raid50",
    );
}

#[test]
fn every_scheme_serves() {
    let dir = tempfile::tempdir().unwrap();
    let p = mem_pool(
        dir.path(),
        8,
        "128M",
        &volume("a", "raid5", 4, "16M", false),
    );
    for scheme in [
        "fusionraid",
        "fusion-nd",
        "raid50",
        "4-raid5",
        "lograid",
        "toleraid",
        "nvraid",
        "4-raidm",
        "sitout",
        "sandook",
    ] {
        let s = Serve::start(&p, &["--scheme", scheme]);
        write_read(&s.uri("a"), 9);
        let text = s.status_text(false);
        assert!(text.contains(&format!("scheme: {scheme}")), "{text}");
        // Only a steering scheme shows members' modes, weights and rate factors.
        assert_eq!(text.contains("modes:"), scheme == "sandook", "{text}");
        s.stop();
    }
}

/// A pool file's `[steer]` turns Sandook's mechanisms on for FusionRAID: data goes through
/// intact and `status` shows each member's mode, weights and rate factor.
#[test]
fn fusionraid_serves_with_steering_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let vols = format!(
        "{}\n[steer]\nenabled = true\nmechanisms = [\"weights\", \"segregation\", \"congestion\"]\n",
        volume("a", "raid5", 4, "16M", false)
    );
    let p = mem_pool(dir.path(), 8, "128M", &vols);
    let s = Serve::start(&p, &[]);
    write_read(&s.uri("a"), 11);
    let text = s.status_text(false);
    assert!(
        text.contains("modes:") && text.contains("WRITE WT"),
        "{text}"
    );
    s.stop();
}

/// A pool file that names no layout works on any member count: three drives take a RAID5
/// 2+1 volume and a three-way mirror (stripes as wide as the pool), six drives a 4+1
/// volume. `create` stores the layout it chose, and the pool serves, restarts and reads
/// back what it was given.
#[test]
fn pools_without_a_layout_fit_any_member_count() {
    for (members, volumes, layout) in [
        (
            3,
            volume("r", "raid5", 3, "16M", false)
                + "[[volume]]\nname = \"m\"\nlevel = \"mirror\"\ncopies = 3\nsize = \"8M\"\n",
            "permutation",
        ),
        (6, volume("r", "raid5", 5, "16M", false), "permutation"),
        (5, volume("r", "raid5", 4, "16M", false), "mols"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let list: Vec<String> = (0..members).map(|i| format!("\"file:d{i}.img\"")).collect();
        let p = pool_file(
            dir.path(),
            &format!(
                "name = \"any\"\nmembers = [{}]\nmember_size = \"128M\"\n{volumes}",
                list.join(", ")
            ),
        );
        create(&p, &[]).ok("create");
        let s = Serve::start(&p, &[]);
        let text = s.status_text(false);
        assert!(text.contains(&format!("layout {layout}")), "{text}");
        write_read(&s.uri("r"), members as u64);
        s.stop();
        let s = Serve::start(&p, &[]);
        read_expect(&s.uri("r"), members as u64);
        s.stop();
    }
}

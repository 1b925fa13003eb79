//! Operator commands on a running pool: `fusionraid fail`, the rebuild onto the other
//! members, a hot spare taking the failed slot by itself, `fusionraid replace` for a second
//! failure, and a restart that finds the new members through the updated pool file.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use fusionraid_nbd::Client;

const T: Duration = Duration::from_secs(60);

fn write_all(uri: &str, data: &[u8]) {
    let mut c = Client::connect(uri).unwrap();
    c.write_at(data, 0).unwrap();
    c.flush().unwrap();
    c.disconnect().unwrap();
}

fn read_check(uri: &str, want: &[u8], what: &str) {
    let mut c = Client::connect(uri).unwrap();
    let mut back = vec![0u8; want.len()];
    c.read_at(&mut back, 0).unwrap();
    assert!(back == want, "{what}: data differs");
    c.disconnect().unwrap();
}

fn ctl(s: &Serve, args: &[&str]) -> Output {
    let mut a = args.to_vec();
    a.extend(["--socket", s.status.to_str().unwrap()]);
    run(BIN, &a, T)
}

fn member_line(status: &str, name: &str) -> String {
    status
        .lines()
        .find(|l| l.contains(name))
        .unwrap_or_default()
        .to_string()
}

/// Waits up to a minute for the hot spare `spare` to take failed member `slot`'s place.
fn wait_for_hot_spare(s: &mut Serve, spare: &str, slot: usize) {
    let spare_in = |st: &str| {
        let l = member_line(st, spare);
        l.contains("ONLINE") || in_service(&l)
    };
    let end = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let st = s.status_text(false);
        if spare_in(&st) {
            return;
        }
        if std::time::Instant::now() >= end {
            // What the pool and the server said when it gave up, to tell a slow rebuild
            // from a stuck one or a refused replacement.
            s.guard.stop(Duration::from_secs(5));
            let err = s
                .stderr
                .recv_timeout(Duration::from_secs(2))
                .unwrap_or_default();
            panic!(
                "timed out waiting for the hot spare to replace member {slot}; status:\n{st}\n\
                 server stderr:\n{err}"
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// `fusionraid replace SLOT SPEC`, offered again while the engine says "try again": "done"
/// shows once the rebuild's last records are durable, when the engine takes the new device;
/// should it refuse, the same device may be offered again.
fn replace_when_allowed(s: &Serve, slot: &str, spec: &str) {
    let mut tries = 0;
    loop {
        let out = ctl(s, &["replace", slot, spec]);
        if out.status.success() {
            return;
        }
        tries += 1;
        assert!(
            out.stderr.contains("try again") && tries < 100,
            "fusionraid replace: {}",
            out.stderr
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn fail_rebuild_hot_spare_replace_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let members: Vec<String> = (0..8).map(|i| format!("\"file:d{i}.img\"")).collect();
    let p = pool_file(
        d,
        &format!(
            "name = \"ops\"\nmembers = [{}]\nspares = [\"file:spare0.img\"]\nmember_size = \"64M\"\n\
             block_size = \"16K\"\nlayout = \"permutation\"\n{}",
            members.join(", "),
            volume("v", "raid5", 4, "12M", false)
        ),
    );
    run(BIN, &["create", p.to_str().unwrap()], T).ok("create");
    let s = Serve::start(&p, &[]);
    let data = pattern(5, 12 << 20);
    write_all(&s.uri("v"), &data);

    // Replacing a healthy member is refused.
    let out = ctl(&s, &["replace", "2", "file:new2.img"]);
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(out.stderr.contains("has not failed"), "{}", out.stderr);
    // The refused device now carries a superblock for slot 2: offered again for that slot
    // it is prepared again (the engine decides), for another slot it is refused.
    let again = ctl(&s, &["replace", "2", "file:new2.img"]);
    assert!(again.stderr.contains("has not failed"), "{}", again.stderr);
    let other = ctl(&s, &["replace", "3", "file:new2.img"]);
    assert!(
        other.stderr.contains("already holds member 2"),
        "{}",
        other.stderr
    );

    // Fail member 2: the rebuild moves its data, then the hot spare takes the slot.
    ctl(&s, &["fail", "2"]).ok("fusionraid fail");
    let mut s = s;
    wait_for_hot_spare(&mut s, "spare0.img", 2);
    let st = s.status_text(false);
    assert!(st.contains("rebuild: done"), "{st}");
    read_check(&s.uri("v"), &data, "after the hot spare");

    // A second failure, replaced by hand once its rebuild is done.
    ctl(&s, &["fail", "5"]).ok("fusionraid fail 5");
    wait_for("the second rebuild", Duration::from_secs(60), || {
        s.status_text(false).contains("rebuild: done")
    });
    replace_when_allowed(&s, "5", "file:new5.img");
    read_check(&s.uri("v"), &data, "after replace");
    let data2 = pattern(6, 12 << 20);
    write_all(&s.uri("v"), &data2);
    s.stop();

    // The pool file now lists the new members; serve assembles them.
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(
        text.contains("spare0.img") && text.contains("new5.img"),
        "{text}"
    );
    let s = Serve::start(&p, &[]);
    let st = s.status_text(false);
    assert!(!st.contains("FAULTED") && !st.contains("missing"), "{st}");
    // What recovery found is said once, on the recovery: line, not again as a note.
    let report = st
        .lines()
        .find_map(|l| l.strip_prefix("recovery: "))
        .unwrap_or_else(|| panic!("no recovery line in\n{st}"));
    assert_eq!(st.matches(report).count(), 1, "{st}");
    read_check(&s.uri("v"), &data2, "after restart");
    s.stop();
}

/// `fusionraid fail` of a second member while the first one's data is not rebuilt: on a
/// RAID5 pool that loses data (a second `fail` during the first rebuild loses hundreds of
/// blocks), so it is refused unless --force; failing a member that has already failed says
/// so.
#[test]
fn failing_beyond_the_tolerance_during_a_rebuild_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    // Every stripe spans all four members: the rebuild can find no spare block and stays
    // stalled, so the refusal does not depend on timing.
    let p = file_pool(d, "guard", 4, "32M", &volume("v", "raid5", 4, "4M", false));
    let s = Serve::start(&p, &[]);
    let data = pattern(9, 4 << 20);
    write_all(&s.uri("v"), &data);
    ctl(&s, &["fail", "0"]).ok("fusionraid fail 0");
    let again = ctl(&s, &["fail", "0"]).ok("fusionraid fail 0 again");
    assert!(again.stdout.contains("already failed"), "{}", again.stdout);
    // The stalled rebuild says why: the geometry, not the space.
    wait_for(
        "the stalled rebuild to give its reason",
        Duration::from_secs(60),
        || {
            s.status_text(false)
                .contains("a stripe of width 4 needs 4 members and 3 work")
        },
    );
    let out = ctl(&s, &["fail", "1"]);
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(out.stderr.contains("would lose data"), "{}", out.stderr);
    // The refusal is said once, on one line of stderr, and nothing else is printed.
    assert_eq!(out.stdout, "", "a refusal prints nothing on stdout");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {:?}", out.stderr);
    assert!(
        lines[0].starts_with("error: failing member 1"),
        "{}",
        out.stderr
    );
    read_check(&s.uri("v"), &data, "after the refused fail");
    ctl(&s, &["fail", "1", "--force"]).ok("fusionraid fail 1 --force");
    let st = s.status_text(false);
    assert!(member_line(&st, "d1.img").contains("failed"), "{st}");
    s.stop();
}

/// A pool file of `n` `file:` members `d0.img`... of `member_size`, permutation layout,
/// 16 KiB blocks, with `volume` (a `[[volume]]` table), created.
fn file_pool(d: &Path, name: &str, n: usize, member_size: &str, volume: &str) -> PathBuf {
    let members: Vec<String> = (0..n).map(|i| format!("\"file:d{i}.img\"")).collect();
    let p = pool_file(
        d,
        &format!(
            "name = \"{name}\"\nmembers = [{}]\nmember_size = \"{member_size}\"\n\
             block_size = \"16K\"\nlayout = \"permutation\"\n{volume}",
            members.join(", "),
        ),
    );
    run(BIN, &["create", p.to_str().unwrap()], T).ok("create");
    p
}

/// A RAID6 volume of `size_mib` as wide as its six members, written whole, member 2 failed
/// and the rebuild stalled (no stripe can be whole on five). Returns the pool file, the
/// server and the data.
fn wide_pool_stalled(d: &Path, member_size: &str, size_mib: usize) -> (PathBuf, Serve, Vec<u8>) {
    let p = file_pool(
        d,
        "wide",
        6,
        member_size,
        &volume("v", "raid6", 6, &format!("{size_mib}M"), false),
    );
    let s = Serve::start(&p, &[]);
    let data = pattern(size_mib as u64, size_mib << 20);
    write_all(&s.uri("v"), &data);
    ctl(&s, &["fail", "2"]).ok("fail 2");
    wait_for("the rebuild to stall", Duration::from_secs(60), || {
        s.status_text(false).contains("stalled")
    });
    (p, s, data)
}

/// After a rebuild in place onto member 2: members 0 and 4 fail, and every read then needs
/// what the rebuild wrote onto member 2.
fn survives_two_more_failures(s: Serve, data: &[u8]) {
    ctl(&s, &["fail", "0"]).ok("fail 0");
    ctl(&s, &["fail", "4"]).ok("fail 4");
    read_check(
        &s.uri("v"),
        data,
        "members 0 and 4 failed after the rebuild in place",
    );
    s.stop();
}

/// A volume as wide as the pool has no stripe clear of a failed member, so its rebuild
/// stalls and says why (issue 19, case 2). `replace` then puts the new device in at once,
/// the rebuild finishes in place onto it, the state survives a restart, and the pool again
/// survives as many failures of other members as RAID6 covers.
#[test]
fn a_stalled_rebuild_finishes_in_place_on_the_replacement() {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let (p, s, data) = wide_pool_stalled(d, "32M", 8);
    let st = s.status_text(false);
    assert!(st.contains("rebuilt in place onto the new device"), "{st}");
    let out = ctl(
        &s,
        &["replace", "2", &format!("file:{}/n2.img", d.display())],
    );
    assert!(out.status.success(), "replace refused: {}", out.stderr);
    read_check(&s.uri("v"), &data, "just replaced");
    wait_for("the rebuild in place", Duration::from_secs(60), || {
        s.status_text(false).contains("rebuild: done")
    });
    let st = s.status_text(false);
    assert!(st.contains("stale columns rebuilt in place"), "{st}");
    read_check(&s.uri("v"), &data, "rebuilt in place");
    s.stop();

    let s = Serve::start(&p, &[]);
    let st = s.status_text(false);
    assert!(
        !st.contains("FAULTED") && !st.contains("stale data"),
        "{st}"
    );
    survives_two_more_failures(s, &data);
}

/// kill -9 of `serve` while a rebuild in place runs: nothing acknowledged is lost. The
/// restart either carries on with the rebuild (the replacement's checkpoint was durable) or
/// finds the member failed again (it was not), and then the same device is put back; either
/// way the rebuild finishes and the pool survives two more failures.
#[test]
fn kill_9_during_a_rebuild_in_place_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let (p, s, data) = wide_pool_stalled(d, "96M", 48);
    let spec = format!("file:{}/n2.img", d.display());
    let out = ctl(&s, &["replace", "2", &spec]);
    assert!(out.status.success(), "replace refused: {}", out.stderr);
    let mut s = s;
    s.signal(libc::SIGKILL);
    drop(s);

    let s = Serve::start(&p, &[]);
    read_check(
        &s.uri("v"),
        &data,
        "after kill -9 during the rebuild in place",
    );
    let st = s.status_text(false);
    let again = member_line(&st, "n2.img").contains("failed");
    eprintln!("after the restart, member 2 failed again: {again}");
    if again {
        let out = ctl(&s, &["replace", "2", &spec]);
        assert!(
            out.status.success(),
            "replace again refused: {}",
            out.stderr
        );
    }
    wait_for("the rebuild in place", Duration::from_secs(120), || {
        s.status_text(false).contains("rebuild: done")
    });
    read_check(&s.uri("v"), &data, "rebuilt in place after the restart");
    survives_two_more_failures(s, &data);
}

/// The same slot replaced twice by one `serve`: each replace edits the pool file's entry for
/// the slot as it is then, so the file names the device last put in. It used to look for
/// the entry `serve` had read at start, gone after the first replace, and leave the file
/// naming the device the second replace took out; the next `serve` took that stale device
/// back as a healthy member (checksum errors on every block it had missed).
#[test]
fn a_slot_replaced_twice_is_listed_with_its_last_device() {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let p = file_pool(d, "twice", 5, "32M", &volume("v", "raid5", 4, "4M", false));
    let s = Serve::start(&p, &[]);
    let data = pattern(11, 4 << 20);
    write_all(&s.uri("v"), &data);
    for new in ["a.img", "b.img"] {
        // The second fail waits for the rebuild onto the first replacement.
        wait_for("fail 1 to be accepted", T, || {
            let out = ctl(&s, &["fail", "1"]);
            assert!(
                out.status.success() || out.stderr.contains("wait until the rebuild is done"),
                "fail 1: {}",
                out.stderr
            );
            out.status.success()
        });
        replace_when_allowed(&s, "1", &format!("file:{new}"));
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(&format!("\"file:{new}\"")), "{text}");
    }
    s.stop();
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(
        !text.contains("d1.img") && !text.contains("a.img"),
        "the pool file still names a device taken out:\n{text}"
    );
    let s = Serve::start(&p, &[]);
    read_check(&s.uri("v"), &data, "after restart");
    let st = s.status_text(false);
    assert!(in_service(&member_line(&st, "b.img")), "{st}");
    assert!(st.contains(" 0 checksum errors"), "{st}");
    s.stop();
}

/// A device `replace` took out of its slot, named again by a pool file (an old copy of the
/// file, a configuration tool): the slot generation in its superblock is not the one the
/// pool's metadata recorded with the replacement, so `serve` holds it failed instead of
/// serving the writes it missed, and says why. The same device may then be put back. (It
/// used to come back healthy, every block it missed a checksum error.)
#[test]
fn a_device_replaced_out_stays_out_when_a_pool_file_names_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let p = file_pool(d, "back", 5, "32M", &volume("v", "raid5", 4, "4M", false));
    let before_replace = std::fs::read_to_string(&p).unwrap();
    let s = Serve::start(&p, &[]);
    write_all(&s.uri("v"), &pattern(1, 4 << 20));
    ctl(&s, &["fail", "1"]).ok("fail 1");
    replace_when_allowed(&s, "1", "file:new1.img");
    wait_for("the rebuild", T, || {
        s.status_text(false).contains("rebuild: done")
    });
    let data = pattern(2, 4 << 20);
    write_all(&s.uri("v"), &data);
    s.stop();

    // The pool file as it was: it names d1.img, which missed `data`.
    std::fs::write(&p, &before_replace).unwrap();
    let s = Serve::start(&p, &[]);
    let st = s.status_text(false);
    assert!(member_line(&st, "d1.img").contains("failed"), "{st}");
    assert!(
        st.contains("not the device the pool's metadata has in slot 1"),
        "{st}"
    );
    read_check(&s.uri("v"), &data, "the device taken out held failed");
    let st = s.status_text(false);
    assert!(st.contains(" 0 checksum errors"), "{st}");
    // Put back, it is rebuilt and the next start takes it as the slot's device.
    replace_when_allowed(&s, "1", "file:d1.img");
    wait_for("the rebuild onto d1.img", T, || {
        s.status_text(false).contains("rebuild: done")
    });
    s.stop();
    let s = Serve::start(&p, &[]);
    let st = s.status_text(false);
    assert!(in_service(&member_line(&st, "d1.img")), "{st}");
    read_check(&s.uri("v"), &data, "after d1.img was put back");
    assert!(s.status_text(false).contains(" 0 checksum errors"), "{st}");
    s.stop();
}

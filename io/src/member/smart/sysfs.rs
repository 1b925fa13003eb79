//! Which NVMe controller a block device belongs to, found in sysfs.
//!
//! SMART / Health is asked of a controller (its character device, `/dev/nvme0`), while a
//! member names a namespace or a partition of one (`/dev/nvme0n1p1`). The kernel lays the
//! device tree out as `.../nvme/nvme0/nvme0n1/nvme0n1p1`: a partition's directory (marked by
//! a `partition` file) sits inside its namespace's, and a namespace's inside its
//! controller's. With native NVMe multipath the namespace sits in its subsystem instead
//! (`.../nvme-subsystem/nvme-subsys0/nvme0n1`), next to links to the subsystem's
//! controllers, and any of them answers for the drive. `/sys/class/block/NAME` and
//! `/sys/dev/block/MAJOR:MINOR` link into that tree.
//!
//! Every function takes the sysfs root, so tests walk a fake tree in a temporary directory.

use std::io;
use std::path::{Path, PathBuf};

/// Why a block device has no NVMe controller to ask.
#[derive(Debug, thiserror::Error)]
pub enum Lookup {
    #[error("no sysfs entry {0}: {1}")]
    NoEntry(PathBuf, io::Error),
    #[error("{0} is not an NVMe namespace")]
    NotNvme(String),
    #[error("no controller found for NVMe namespace {0}")]
    NoController(String),
}

/// The controller (its name under `/dev`, e.g. "nvme0") of the block device named `name`
/// (e.g. "nvme0n1p1").
pub fn controller_of_block(sys: &Path, name: &str) -> Result<String, Lookup> {
    controller_of_link(&sys.join("class/block").join(name))
}

/// The controller of the block device numbered `major:minor` (a member's `st_rdev`, which
/// also covers members named through `/dev/disk/by-id` links).
pub fn controller_of_devnum(sys: &Path, major: u32, minor: u32) -> Result<String, Lookup> {
    controller_of_link(&sys.join(format!("dev/block/{major}:{minor}")))
}

fn controller_of_link(link: &Path) -> Result<String, Lookup> {
    let mut dir = link
        .canonicalize()
        .map_err(|e| Lookup::NoEntry(link.to_path_buf(), e))?;
    if dir.join("partition").exists() {
        dir.pop();
    }
    let ns = file_name(&dir);
    if !is_namespace(&ns) {
        return Err(Lookup::NotNvme(ns));
    }
    let parent = dir.parent().map(file_name).unwrap_or_default();
    if is_controller(&parent) {
        return Ok(parent);
    }
    if parent.starts_with("nvme-subsys") {
        let subsys = dir.parent().expect("a parent has a path");
        let mut ctrls: Vec<String> = std::fs::read_dir(subsys)
            .map_err(|e| Lookup::NoEntry(subsys.to_path_buf(), e))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| is_controller(n))
            .collect();
        // Natural order, so nvme2 comes before nvme10.
        ctrls.sort_by_key(|n| n[4..].parse::<u64>().unwrap_or(u64::MAX));
        return ctrls.into_iter().next().ok_or(Lookup::NoController(ns));
    }
    Err(Lookup::NoController(ns))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// "nvme0": a controller.
fn is_controller(name: &str) -> bool {
    name.strip_prefix("nvme").is_some_and(digits)
}

/// "nvme0n1", or a multipath path "nvme0c1n1": a namespace.
fn is_namespace(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("nvme") else {
        return false;
    };
    let Some((ctrl, ns)) = rest.split_once('n') else {
        return false;
    };
    let ctrl_ok = match ctrl.split_once('c') {
        Some((a, b)) => digits(a) && digits(b),
        None => digits(ctrl),
    };
    ctrl_ok && digits(ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    /// Makes `dir` (and its parents) under `root`, and a `partition` file in it when asked.
    fn dev_dir(root: &Path, rel: &str, partition: bool) {
        let d = root.join(rel);
        fs::create_dir_all(&d).unwrap();
        if partition {
            fs::write(d.join("partition"), "1\n").unwrap();
        }
    }

    /// A fake sysfs with the kernel's links: a PCIe NVMe drive with a partition, a
    /// multipath namespace, a virtio disk and a loop device.
    fn fake_sys() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let pci = "devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme";
        dev_dir(r, &format!("{pci}/nvme0/nvme0n1"), false);
        dev_dir(r, &format!("{pci}/nvme0/nvme0n1/nvme0n1p1"), true);
        dev_dir(r, &format!("{pci}/nvme12/nvme12c12n1"), false);
        dev_dir(r, &format!("{pci}/nvme3"), false);
        dev_dir(
            r,
            "devices/virtual/nvme-subsystem/nvme-subsys12/nvme12n1",
            false,
        );
        dev_dir(
            r,
            "devices/pci0000:00/0000:00:02.0/virtio1/block/vda",
            false,
        );
        dev_dir(
            r,
            "devices/pci0000:00/0000:00:02.0/virtio1/block/vda/vda1",
            true,
        );
        dev_dir(r, "devices/virtual/block/loop0", false);
        fs::create_dir_all(r.join("class/block")).unwrap();
        fs::create_dir_all(r.join("dev/block")).unwrap();
        let sub = r.join("devices/virtual/nvme-subsystem/nvme-subsys12");
        // The subsystem links to its controllers (two paths to one drive).
        symlink(format!("../../../../{pci}/nvme12"), sub.join("nvme12")).unwrap();
        symlink(format!("../../../../{pci}/nvme3"), sub.join("nvme3")).unwrap();
        for (name, target) in [
            ("nvme0n1", format!("{pci}/nvme0/nvme0n1")),
            ("nvme0n1p1", format!("{pci}/nvme0/nvme0n1/nvme0n1p1")),
            ("nvme12c12n1", format!("{pci}/nvme12/nvme12c12n1")),
            (
                "nvme12n1",
                "devices/virtual/nvme-subsystem/nvme-subsys12/nvme12n1".into(),
            ),
            (
                "vda",
                "devices/pci0000:00/0000:00:02.0/virtio1/block/vda".into(),
            ),
            (
                "vda1",
                "devices/pci0000:00/0000:00:02.0/virtio1/block/vda/vda1".into(),
            ),
            ("loop0", "devices/virtual/block/loop0".into()),
        ] {
            symlink(format!("../../{target}"), r.join("class/block").join(name)).unwrap();
        }
        symlink(
            format!("../../{pci}/nvme0/nvme0n1/nvme0n1p1"),
            r.join("dev/block/259:1"),
        )
        .unwrap();
        symlink("../../devices/virtual/block/loop0", r.join("dev/block/7:0")).unwrap();
        t
    }

    #[test]
    fn a_namespace_resolves_to_its_controller() {
        let t = fake_sys();
        assert_eq!(controller_of_block(t.path(), "nvme0n1").unwrap(), "nvme0");
    }

    #[test]
    fn a_partition_resolves_through_its_namespace() {
        let t = fake_sys();
        assert_eq!(controller_of_block(t.path(), "nvme0n1p1").unwrap(), "nvme0");
        assert_eq!(controller_of_devnum(t.path(), 259, 1).unwrap(), "nvme0");
    }

    #[test]
    fn a_multipath_namespace_resolves_to_a_controller_of_its_subsystem() {
        let t = fake_sys();
        // The lowest-numbered controller, by number rather than by text.
        assert_eq!(controller_of_block(t.path(), "nvme12n1").unwrap(), "nvme3");
        assert_eq!(
            controller_of_block(t.path(), "nvme12c12n1").unwrap(),
            "nvme12"
        );
    }

    #[test]
    fn other_block_devices_are_not_nvme() {
        let t = fake_sys();
        for name in ["vda", "vda1", "loop0"] {
            let e = controller_of_block(t.path(), name).unwrap_err();
            assert!(matches!(e, Lookup::NotNvme(_)), "{name}: {e}");
        }
        let e = controller_of_devnum(t.path(), 7, 0).unwrap_err();
        assert!(matches!(e, Lookup::NotNvme(ref n) if n == "loop0"), "{e}");
        let e = controller_of_devnum(t.path(), 8, 0).unwrap_err();
        assert!(matches!(e, Lookup::NoEntry(..)), "{e}");
    }

    #[test]
    fn names() {
        assert!(is_controller("nvme0") && is_controller("nvme17"));
        assert!(!is_controller("nvme") && !is_controller("nvme0n1"));
        assert!(!is_controller("nvme-subsys0"));
        assert!(is_namespace("nvme0n1") && is_namespace("nvme2c3n14"));
        assert!(!is_namespace("nvme0") && !is_namespace("nvme0n1p1"));
        assert!(!is_namespace("nvmen1") && !is_namespace("nvme0n"));
        assert!(!is_namespace("vda") && !is_namespace("nvme0c1"));
    }
}

//! Device-reported wear of `file:` members on NVMe drives (issue 22 part 4).
//!
//! A member that is an NVMe namespace or a partition of one gets a [`SmartMonitor`]: a
//! thread of its own that reads the controller's SMART / Health log page (`ioctl.rs`) at
//! start and then every [`REFRESH`], and keeps the last answer. `Member::wear` and
//! `status` only read that answer, so a SMART read (an admin command the drive may take
//! its time over) never runs on the event loop or on the I/O path.
//!
//! Anything that keeps the page from being read (a member that is a file, a virtio, loop
//! or SATA disk, no CAP_SYS_ADMIN, a controller refusing the command) means no wear, logged
//! once, and never an error for serving: the member's bytes written by the engine
//! (`status`'s WRITTEN) stay its measure of use.
//!
//! The sysfs walk (`sysfs.rs`) and the page's parsing (`page.rs`) are pure and tested on
//! hand-built inputs; the ioctl itself has not run against an NVMe drive here (the
//! development machine has virtio disks only).

mod ioctl;
pub mod page;
pub mod sysfs;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use page::Health;

/// How often the page is read again: wear moves by a percent over weeks of writes, and
/// every read is an admin command the drive serves next to the pool's I/O.
pub const REFRESH: Duration = Duration::from_secs(300);

/// The last reading of one controller's SMART / Health page.
#[derive(Clone, Debug, PartialEq)]
enum Reading {
    /// Not read yet (the first read runs as the member opens).
    Pending,
    Health(Health),
    /// The last read failed: why.
    Failed(String),
}

/// Reads one NVMe controller's SMART / Health page off the event loop and keeps the last
/// answer. Dropping it stops its thread (at once if it is waiting, after the read if one
/// is running).
pub struct SmartMonitor {
    controller: PathBuf,
    last: Arc<Mutex<Reading>>,
    /// Dropped with the monitor, which wakes the thread to exit.
    _stop: mpsc::Sender<()>,
}

impl SmartMonitor {
    /// A monitor for the block device numbered `rdev` (a member's `st_rdev`), when it is an
    /// NVMe namespace or a partition of one; `None` (logged at debug) otherwise.
    pub fn for_block_device(member: &str, rdev: u64) -> Option<SmartMonitor> {
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        match sysfs::controller_of_devnum(Path::new("/sys"), major, minor) {
            Ok(ctrl) => SmartMonitor::start(member, Path::new("/dev").join(ctrl)),
            Err(e) => {
                tracing::debug!(member, "no device-reported wear: {e}");
                None
            }
        }
    }

    /// Starts reading the controller at `controller` (e.g. `/dev/nvme0`) every `REFRESH`.
    fn start(member: &str, controller: PathBuf) -> Option<SmartMonitor> {
        let last = Arc::new(Mutex::new(Reading::Pending));
        let (stop, stopped) = mpsc::channel::<()>();
        let thread_last = last.clone();
        let ctrl = controller.clone();
        let member_name = member.to_string();
        let spawned = std::thread::Builder::new()
            .name(format!("smart-{}", file_name(&controller)))
            .spawn(move || {
                let mut logged = false;
                loop {
                    let r = read(&ctrl);
                    log_once(&member_name, &ctrl, &r, &mut logged);
                    *thread_last.lock().unwrap_or_else(|p| p.into_inner()) = r;
                    match stopped.recv_timeout(REFRESH) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        _ => return,
                    }
                }
            });
        match spawned {
            Ok(_) => Some(SmartMonitor {
                controller,
                last,
                _stop: stop,
            }),
            Err(e) => {
                tracing::warn!(member, "no device-reported wear: thread not started: {e}");
                None
            }
        }
    }

    /// The last page read, if the last read succeeded.
    pub fn health(&self) -> Option<Health> {
        match &*self.last.lock().unwrap_or_else(|p| p.into_inner()) {
            Reading::Health(h) => Some(*h),
            _ => None,
        }
    }

    /// What `status` should say about this member's SMART reads: why there is no wear.
    pub fn note(&self) -> Option<String> {
        match &*self.last.lock().unwrap_or_else(|p| p.into_inner()) {
            Reading::Failed(why) => Some(format!(
                "no device-reported wear: SMART / Health of {} unreadable: {why}",
                self.controller.display()
            )),
            _ => None,
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read(ctrl: &Path) -> Reading {
    match ioctl::read_smart_page(ctrl) {
        Ok(p) => match page::parse(&p) {
            Ok(h) => Reading::Health(h),
            Err(e) => Reading::Failed(e.to_string()),
        },
        Err(e) => Reading::Failed(e.to_string()),
    }
}

/// Logs the first reading only: at warn when it failed (an NVMe drive whose wear the
/// operator expects to see), at debug when it succeeded. Later readings are not logged;
/// `status` shows them (a failure as the member's note).
fn log_once(member: &str, ctrl: &Path, r: &Reading, logged: &mut bool) {
    if *logged {
        return;
    }
    *logged = true;
    match r {
        Reading::Health(h) => tracing::debug!(
            member,
            controller = %ctrl.display(),
            percent_used = h.percent_used,
            bytes_written = h.bytes_written(),
            "NVMe SMART read"
        ),
        Reading::Failed(why) => tracing::warn!(
            member,
            controller = %ctrl.display(),
            "no device-reported wear: SMART / Health unreadable: {why} (admin commands \
             need CAP_SYS_ADMIN)"
        ),
        Reading::Pending => *logged = false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// The non-NVMe block devices of this machine (virtio, loop) have no monitor: `None`,
    /// not an error and no thread.
    #[test]
    fn other_block_devices_get_no_monitor() {
        for dev in ["/dev/vda", "/dev/loop0"] {
            let Ok(meta) = std::fs::metadata(dev) else {
                continue;
            };
            assert!(
                SmartMonitor::for_block_device(dev, meta.rdev()).is_none(),
                "{dev}"
            );
        }
    }

    /// A controller that does not answer (here a path that is no device) reads as no
    /// wear, with the reason as the member's note.
    #[test]
    fn an_unreadable_controller_means_no_wear_and_a_note() {
        let ctrl = PathBuf::from("/nonexistent/nvme9");
        let r = read(&ctrl);
        assert!(matches!(r, Reading::Failed(_)), "{r:?}");
        let m = SmartMonitor {
            controller: ctrl,
            last: Arc::new(Mutex::new(r)),
            _stop: mpsc::channel().0,
        };
        assert_eq!(m.health(), None);
        let note = m.note().expect("the failed read is reported");
        assert!(note.contains("/nonexistent/nvme9"), "{note}");
    }

    /// A page read is what the member reports; before the first read, nothing.
    #[test]
    fn the_last_page_read_is_the_wear() {
        let h = Health {
            percent_used: 7,
            data_units_written: 2,
        };
        let m = SmartMonitor {
            controller: PathBuf::from("/dev/nvme0"),
            last: Arc::new(Mutex::new(Reading::Pending)),
            _stop: mpsc::channel().0,
        };
        assert_eq!((m.health(), m.note()), (None, None));
        *m.last.lock().unwrap() = Reading::Health(h);
        assert_eq!((m.health(), m.note()), (Some(h), None));
    }
}

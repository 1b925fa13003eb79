//! Get Log Page through the kernel's NVMe admin passthrough (`NVME_IOCTL_ADMIN_CMD` on the
//! controller's character device; `linux/nvme_ioctl.h`).
//!
//! The crates that wrap this (`nvme-cli-sys`, `nvme-telem`, `libnvme`) are young or bind
//! the C library, and would bring `nix` or a C build for what is one 72-byte struct and one
//! request number: both are defined here, the struct's size checked at compile time.
//!
//! Not exercised on the development machine (no NVMe device there, virtio disks only): the
//! struct, the request number and the command words are checked against the header and the
//! specification by tests; the call itself needs an NVMe drive and has not run on one. The
//! kernel allows admin commands to CAP_SYS_ADMIN only; a refusal is an error like any other
//! and the caller shows no wear.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::page::PAGE_LEN;

/// `struct nvme_passthru_cmd` (alias `nvme_admin_cmd`).
#[repr(C)]
#[derive(Debug, Default)]
struct AdminCmd {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

const _: () = assert!(std::mem::size_of::<AdminCmd>() == 72);

/// `_IOWR(type, nr, size)` as `asm-generic/ioctl.h` builds it (read and write bits 3).
const fn iowr(ty: u8, nr: u8, size: usize) -> libc::c_ulong {
    (3 << 30) | ((size as libc::c_ulong) << 16) | ((ty as libc::c_ulong) << 8) | nr as libc::c_ulong
}

/// `NVME_IOCTL_ADMIN_CMD = _IOWR('N', 0x41, struct nvme_admin_cmd)`.
const NVME_IOCTL_ADMIN_CMD: libc::c_ulong = iowr(b'N', 0x41, std::mem::size_of::<AdminCmd>());

/// Admin opcode Get Log Page.
const GET_LOG_PAGE: u8 = 0x02;
/// Log identifier of SMART / Health Information.
const LID_SMART: u8 = 0x02;
/// The controller as a whole (every namespace), which every controller supports for this log.
const NSID_ALL: u32 = 0xFFFF_FFFF;
/// How long the drive may take; the caller runs off the event loop, so this only bounds a
/// thread's wait.
const TIMEOUT_MS: u32 = 5_000;

/// The Get Log Page command for the SMART / Health page into `buf`.
fn smart_command(buf: &mut [u8; PAGE_LEN]) -> AdminCmd {
    // Command dword 10: log identifier in bits 7:0, the number of dwords to transfer
    // minus one (its lower 16 bits, NUMDL) in bits 31:16.
    let numd = (PAGE_LEN / 4 - 1) as u32;
    AdminCmd {
        opcode: GET_LOG_PAGE,
        nsid: NSID_ALL,
        addr: buf.as_mut_ptr() as u64,
        data_len: PAGE_LEN as u32,
        cdw10: (numd << 16) | u32::from(LID_SMART),
        timeout_ms: TIMEOUT_MS,
        ..AdminCmd::default()
    }
}

/// Reads the SMART / Health log page from the controller at `ctrl` (e.g. `/dev/nvme0`).
pub fn read_smart_page(ctrl: &Path) -> io::Result<[u8; PAGE_LEN]> {
    let f = File::open(ctrl)?;
    let mut buf = [0u8; PAGE_LEN];
    let mut cmd = smart_command(&mut buf);
    // SAFETY: `cmd` is a `struct nvme_admin_cmd` whose `addr` and `data_len` describe
    // `buf`, which outlives the call; the kernel writes at most `data_len` bytes there and
    // the command's `result` field, and keeps neither pointer after returning.
    let r = unsafe {
        libc::ioctl(
            f.as_raw_fd(),
            NVME_IOCTL_ADMIN_CMD,
            &mut cmd as *mut AdminCmd,
        )
    };
    match r {
        0 => Ok(buf),
        r if r < 0 => Err(io::Error::last_os_error()),
        // A positive value is the NVMe completion status: the drive refused the command.
        status => Err(io::Error::other(format!(
            "Get Log Page (SMART) failed with NVMe status {status:#x}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value `linux/nvme_ioctl.h` gives on every Linux architecture with the generic
    /// ioctl encoding (x86, arm64, riscv).
    #[test]
    fn request_number_matches_the_header() {
        assert_eq!(NVME_IOCTL_ADMIN_CMD, 0xC048_4E41);
    }

    #[test]
    fn the_command_asks_for_the_whole_smart_page_of_the_controller() {
        let mut buf = [0u8; PAGE_LEN];
        let c = smart_command(&mut buf);
        assert_eq!(c.opcode, 0x02);
        assert_eq!(c.nsid, 0xFFFF_FFFF);
        assert_eq!(c.data_len, 512);
        // 128 dwords: NUMDL 127, log 02h.
        assert_eq!(c.cdw10, 0x007F_0002);
        assert_eq!((c.cdw11, c.cdw12, c.cdw13), (0, 0, 0));
        assert_eq!(c.addr, buf.as_ptr() as u64);
    }

    #[test]
    fn a_device_that_is_no_nvme_controller_is_an_error() {
        // A regular file: the ioctl is refused (ENOTTY), never a page of zeros.
        let f = tempfile::NamedTempFile::new().unwrap();
        assert!(read_smart_page(f.path()).is_err());
        assert!(read_smart_page(Path::new("/nonexistent/nvme0")).is_err());
    }
}

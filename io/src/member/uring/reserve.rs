//! Space for `file:` members that are regular files. A sparse file takes space from its file
//! system only as the pool writes it, so a file system that fills up (other files, other
//! members of the same pool, an undersized disk) refuses the pool a write into its own
//! member, and the engine fails a member whose write fails: every member on that file
//! system at once, and the pool with them. A member file is therefore allocated in full
//! when it is created and whenever it is opened (holes an older version's trims or a
//! sparse file made by hand left are filled), and a trim zeroes its range in place
//! (ZERO_RANGE) rather than punching it out: a punch followed by a new allocation would
//! leave a moment in which another writer can take the space.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use fusionraid_core::meta::recover::human_bytes;

/// How a `file:` member that is a regular file uses its file system's space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileSpace {
    /// Allocated in full and kept so (the default).
    #[default]
    Reserved,
    /// Sparse: space is taken as the pool writes and given back by trims (punched holes).
    /// A file system that fills up then fails the members it refuses writes to.
    Thin,
}

/// What reserving a member file's space achieved.
#[derive(Debug, PartialEq, Eq)]
pub enum Reserved {
    /// Every byte is allocated.
    Whole,
    /// The file system can not preallocate (no `fallocate`): the file stays as it is.
    Unsupported,
    /// The file system ran out of space: `allocated` of the file's bytes are, and the file
    /// system has `free` bytes left.
    Short { allocated: u64, free: u64 },
}

/// Makes the member file `path` (which does not exist) of `size` bytes, allocated in full
/// when `space` says so; a file that can not be made whole is removed again (nothing of the
/// pool is in it yet). The error says what failed, after the path.
pub fn create(path: &Path, size: u64, space: FileSpace) -> Result<(), String> {
    let f = File::create_new(path).map_err(|e| format!("could not be created: {e}"))?;
    let made = f
        .set_len(size)
        .map_err(|e| format!("could not be sized: {e}"))
        .and_then(|()| match space {
            FileSpace::Thin => Ok(()),
            FileSpace::Reserved => match reserve(&f, size) {
                Ok(Reserved::Short { free, .. }) => Err(format!(
                    "does not fit: the member needs {}, its file system has {} free",
                    human_bytes(size),
                    human_bytes(free)
                )),
                Ok(_) => Ok(()),
                Err(e) => Err(format!("could not be allocated: {e}")),
            },
        });
    if made.is_err() {
        let _ = std::fs::remove_file(path);
    }
    made
}

/// Fills the holes of an existing member file; what the operator should know when its
/// space could not be reserved.
pub fn on_open(file: &File, size: u64) -> io::Result<Option<String>> {
    Ok(match reserve(file, size)? {
        Reserved::Whole => None,
        Reserved::Unsupported => Some(
            "its file system can not preallocate: the member's space is not reserved, and a \
             write the full file system refuses fails the member"
                .to_string(),
        ),
        Reserved::Short { allocated, free } => Some(format!(
            "its file system is full ({} free): {} of the member's {} are not allocated, and \
             a write there that the file system refuses fails the member; free space there, \
             or move the member",
            human_bytes(free),
            human_bytes(size - allocated),
            human_bytes(size)
        )),
    })
}

/// Allocates whatever part of `file` (a regular file of `size` bytes) is not allocated yet.
pub fn reserve(file: &File, size: u64) -> io::Result<Reserved> {
    if allocated(file)? >= size {
        return Ok(Reserved::Whole);
    }
    // SAFETY: a plain system call on a file descriptor this `File` owns.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size as libc::off_t) };
    if r == 0 {
        return Ok(Reserved::Whole);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Ok(Reserved::Unsupported),
        Some(libc::ENOSPC | libc::EDQUOT) => Ok(Reserved::Short {
            allocated: allocated(file)?.min(size),
            free: free_bytes(file).unwrap_or(0),
        }),
        _ => Err(e),
    }
}

/// Bytes of `file` its file system has allocated.
fn allocated(file: &File) -> io::Result<u64> {
    Ok(file.metadata()?.blocks() * 512)
}

/// Bytes an unprivileged writer may still take on `file`'s file system.
pub fn free_bytes(file: &File) -> Option<u64> {
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `st` is written by the call before it is read, and only when it succeeds.
    let r = unsafe { libc::fstatvfs(file.as_raw_fd(), st.as_mut_ptr()) };
    if r != 0 {
        return None;
    }
    // SAFETY: fstatvfs succeeded and filled `st`.
    let st = unsafe { st.assume_init() };
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_file_is_allocated_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.img");
        let f = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        let size = 8 << 20;
        f.set_len(size).unwrap();
        assert!(allocated(&f).unwrap() < size, "set_len leaves a hole");
        let got = reserve(&f, size).unwrap();
        if got == Reserved::Unsupported {
            eprintln!("this file system can not preallocate; nothing to check");
            return;
        }
        assert_eq!(got, Reserved::Whole);
        assert!(allocated(&f).unwrap() >= size);
        assert_eq!(f.metadata().unwrap().len(), size, "the size is unchanged");
    }
}

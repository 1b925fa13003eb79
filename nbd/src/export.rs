//! What an export looks like from the protocol's point of view: its name,
//! size, size constraints and which optional commands it supports. The server
//! advertises this; the client learns it during the handshake.

use crate::proto::consts::*;

/// The three size constraints of the spec's "Size constraints" section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSize {
    /// Smallest addressable length and alignment (power of two, <= 64 KiB).
    pub minimum: u32,
    /// Smallest size with efficient I/O (power of two, >= max(minimum, 512)).
    pub preferred: u32,
    /// Largest READ/WRITE payload (>= preferred).
    pub maximum: u32,
}

impl BlockSize {
    /// What a client must assume when the server advertises nothing: any
    /// alignment, 4 KiB preferred, 32 MiB payloads.
    pub const UNADVERTISED: BlockSize = BlockSize {
        minimum: 1,
        preferred: 4096,
        maximum: DEFAULT_MAX_PAYLOAD,
    };

    /// Our volumes are built from 4 KiB pages; anything smaller would need a
    /// read-modify-write that the NBD layer cannot do atomically, so this is
    /// the default we advertise.
    pub const PAGE_4K: BlockSize = BlockSize {
        minimum: 4096,
        preferred: 4096,
        maximum: DEFAULT_MAX_PAYLOAD,
    };

    /// Checks the MUSTs the spec puts on advertised values.
    pub fn validate(&self) -> Result<(), String> {
        let BlockSize {
            minimum,
            preferred,
            maximum,
        } = *self;
        if !minimum.is_power_of_two() || minimum > MAX_MINIMUM_BLOCK_SIZE {
            return Err(format!(
                "minimum block size {minimum} must be a power of two <= {MAX_MINIMUM_BLOCK_SIZE}"
            ));
        }
        if !preferred.is_power_of_two() || preferred < minimum.max(512) {
            return Err(format!(
                "preferred block size {preferred} must be a power of two >= max(minimum, 512)"
            ));
        }
        if maximum < preferred {
            return Err(format!(
                "maximum payload {maximum} must be >= preferred block size {preferred}"
            ));
        }
        Ok(())
    }
}

/// One export: everything the handshake tells a client about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportInfo {
    /// Name matched against NBD_OPT_GO / NBD_OPT_EXPORT_NAME.
    pub name: String,
    /// Free text for humans (NBD_INFO_DESCRIPTION and NBD_OPT_LIST).
    pub description: String,
    pub size: u64,
    pub read_only: bool,
    pub block_size: BlockSize,
    /// Advertise NBD_FLAG_SEND_FLUSH (the backend will see Flush commands).
    pub flush: bool,
    /// Advertise NBD_FLAG_SEND_FUA (writes may carry `fua: true`).
    pub fua: bool,
    /// Advertise NBD_FLAG_SEND_TRIM.
    pub trim: bool,
    /// Advertise NBD_FLAG_SEND_WRITE_ZEROES (with NBD_CMD_FLAG_NO_HOLE).
    pub write_zeroes: bool,
    /// Advertise NBD_FLAG_CAN_MULTI_CONN: only if flush/FUA effects are
    /// visible on every connection when the reply is sent.
    pub can_multi_conn: bool,
}

impl ExportInfo {
    /// A writable export with 4 KiB constraints, flush and FUA, nothing else.
    pub fn new(name: impl Into<String>, size: u64) -> Self {
        ExportInfo {
            name: name.into(),
            description: String::new(),
            size,
            read_only: false,
            block_size: BlockSize::PAGE_4K,
            flush: true,
            fua: true,
            trim: false,
            write_zeroes: false,
            can_multi_conn: false,
        }
    }

    pub fn with_description(mut self, d: impl Into<String>) -> Self {
        self.description = d.into();
        self
    }

    pub fn with_read_only(mut self, v: bool) -> Self {
        self.read_only = v;
        self
    }

    pub fn with_block_size(mut self, bs: BlockSize) -> Self {
        self.block_size = bs;
        self
    }

    pub fn with_trim(mut self, v: bool) -> Self {
        self.trim = v;
        self
    }

    pub fn with_write_zeroes(mut self, v: bool) -> Self {
        self.write_zeroes = v;
        self
    }

    pub fn with_multi_conn(mut self, v: bool) -> Self {
        self.can_multi_conn = v;
        self
    }

    /// The 16-bit transmission flags the server sends for this export.
    /// Write-only features are not advertised on a read-only export: a
    /// client could only get EPERM from them.
    pub fn transmission_flags(&self) -> u16 {
        let mut f = NBD_FLAG_HAS_FLAGS;
        let mut set = |cond: bool, bit: u16| {
            if cond {
                f |= bit;
            }
        };
        set(self.read_only, NBD_FLAG_READ_ONLY);
        set(self.flush, NBD_FLAG_SEND_FLUSH);
        set(self.fua && !self.read_only, NBD_FLAG_SEND_FUA);
        set(self.trim && !self.read_only, NBD_FLAG_SEND_TRIM);
        set(
            self.write_zeroes && !self.read_only,
            NBD_FLAG_SEND_WRITE_ZEROES,
        );
        set(self.can_multi_conn, NBD_FLAG_CAN_MULTI_CONN);
        f
    }

    /// Rebuilds an `ExportInfo` from what a server sent (client side).
    pub fn from_wire(
        name: String,
        description: String,
        size: u64,
        flags: u16,
        block_size: BlockSize,
    ) -> Self {
        ExportInfo {
            name,
            description,
            size,
            read_only: flags & NBD_FLAG_READ_ONLY != 0,
            block_size,
            flush: flags & NBD_FLAG_SEND_FLUSH != 0,
            fua: flags & NBD_FLAG_SEND_FUA != 0,
            trim: flags & NBD_FLAG_SEND_TRIM != 0,
            write_zeroes: flags & NBD_FLAG_SEND_WRITE_ZEROES != 0,
            can_multi_conn: flags & NBD_FLAG_CAN_MULTI_CONN != 0,
        }
    }

    /// Checks what the server is about to advertise against the spec.
    pub fn validate(&self) -> Result<(), String> {
        for (what, s) in [("name", &self.name), ("description", &self.description)] {
            if s.len() > MAX_STRING_LEN || s.contains('\0') {
                return Err(format!(
                    "export {what} must be <= {MAX_STRING_LEN} bytes without NUL"
                ));
            }
        }
        self.block_size
            .validate()
            .map_err(|e| format!("export {:?}: {e}", self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_capabilities() {
        let e = ExportInfo::new("a", 1 << 20);
        assert_eq!(
            e.transmission_flags(),
            NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA
        );
        let e = e
            .with_trim(true)
            .with_write_zeroes(true)
            .with_multi_conn(true);
        let f = e.transmission_flags();
        assert!(f & NBD_FLAG_SEND_TRIM != 0);
        assert!(f & NBD_FLAG_SEND_WRITE_ZEROES != 0);
        assert!(f & NBD_FLAG_CAN_MULTI_CONN != 0);
        let ro = e.with_read_only(true).transmission_flags();
        assert!(ro & NBD_FLAG_READ_ONLY != 0);
        assert_eq!(
            ro & (NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES | NBD_FLAG_SEND_FUA),
            0
        );
    }

    #[test]
    fn flags_round_trip_through_wire() {
        let e = ExportInfo::new("n", 8192)
            .with_trim(true)
            .with_multi_conn(true);
        let back = ExportInfo::from_wire(
            e.name.clone(),
            String::new(),
            e.size,
            e.transmission_flags(),
            e.block_size,
        );
        assert_eq!(back, e);
    }

    #[test]
    fn block_size_rules() {
        assert!(BlockSize::PAGE_4K.validate().is_ok());
        assert!(BlockSize::UNADVERTISED.validate().is_ok());
        let bad = |minimum, preferred, maximum| {
            BlockSize {
                minimum,
                preferred,
                maximum,
            }
            .validate()
            .is_err()
        };
        assert!(bad(3, 4096, 1 << 20));
        assert!(bad(1 << 17, 1 << 17, 1 << 20));
        assert!(bad(4096, 512, 1 << 20));
        assert!(bad(512, 256, 1 << 20));
        assert!(bad(4096, 8192, 4096));
    }

    #[test]
    fn names_are_checked() {
        assert!(ExportInfo::new("a\0b", 0).validate().is_err());
        assert!(ExportInfo::new("x".repeat(4097), 0).validate().is_err());
        assert!(ExportInfo::new("x".repeat(4096), 0).validate().is_ok());
    }
}

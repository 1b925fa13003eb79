//! NBD protocol.

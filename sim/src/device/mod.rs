//! SSD and HDD device models.

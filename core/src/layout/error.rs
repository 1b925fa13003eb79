/// A geometry the layouts cannot build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    #[error("stripe width {width} is too wide for a pool of {disks} disks (at most {max})")]
    TooWide {
        width: usize,
        disks: usize,
        max: usize,
    },
    #[error("stripe width {width} is too narrow (at least {min})")]
    TooNarrow { width: usize, min: usize },
    #[error(
        "MOLS layout needs a prime-power pool size; {disks} is not (try 8, 9, 16, 25, 27, 29, 31, 32 ...)"
    )]
    NotPrimePower { disks: usize },
    #[error("{0}")]
    Other(String),
}

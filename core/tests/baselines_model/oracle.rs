//! The oracle, with block-device semantics: a read returns, page by page, what the last
//! write acknowledged before it was submitted left there, or what a write overlapping it in
//! time wrote; trimmed pages may read as anything. Acknowledged writes are applied in
//! acknowledgement order (the schemes order overlapping writes).

use std::rc::Rc;

use fusionraid_core::PAGE_SIZE;

/// One page, in bytes.
pub const PS: usize = PAGE_SIZE as usize;

/// What a write-like request did to its range.
pub enum WKind {
    Data(Vec<u8>),
    Zeroes,
    Trim,
}

pub struct WriteRec {
    pub vol: usize,
    pub offset: u64,
    pub len: u64,
    pub kind: WKind,
}

impl WriteRec {
    /// Whether page `p` (volume page index) may read as `got` because of this write.
    pub fn allows(&self, p: u64, got: &[u8]) -> bool {
        let first = self.offset / PAGE_SIZE;
        if p < first || p >= first + self.len / PAGE_SIZE {
            return false;
        }
        match &self.kind {
            WKind::Data(d) => {
                let o = ((p - first) * PAGE_SIZE) as usize;
                &d[o..o + PS] == got
            }
            WKind::Zeroes => got.iter().all(|&b| b == 0),
            WKind::Trim => true,
        }
    }
}

pub struct Oracle {
    pub data: Vec<Vec<u8>>,
    /// Pages whose content is unspecified (trimmed since last written).
    pub unknown: Vec<Vec<bool>>,
}

impl Oracle {
    pub fn apply(&mut self, w: &WriteRec) {
        let (o, l) = (w.offset as usize, w.len as usize);
        let (p0, pn) = (o / PS, l / PS);
        match &w.kind {
            WKind::Data(d) => self.data[w.vol][o..o + l].copy_from_slice(d),
            WKind::Zeroes => self.data[w.vol][o..o + l].fill(0),
            WKind::Trim => {}
        }
        let unknown = matches!(w.kind, WKind::Trim);
        self.unknown[w.vol][p0..p0 + pn].fill(unknown);
    }
}

/// A read in flight, and what each of its pages may read as: what acknowledged writes left
/// there when it was submitted (`base`, unless unspecified), or what a write overlapping it in
/// time wrote (`cands`).
pub struct PendingRead {
    pub vol: usize,
    pub offset: u64,
    pub len: u64,
    pub base: Vec<u8>,
    pub base_unknown: Vec<bool>,
    pub cands: Vec<Rc<WriteRec>>,
}

pub enum Pending {
    Read(PendingRead),
    Write(Rc<WriteRec>),
    Flush,
}

/// A write as submitted, and when it was acknowledged, to explain a mismatch.
pub struct Submitted {
    pub id: u64,
    pub at: u64,
    pub acked: Option<u64>,
    pub w: Rc<WriteRec>,
}

pub fn overlaps(a_off: u64, a_len: u64, b_off: u64, b_len: u64) -> bool {
    a_off < b_off + b_len && b_off < a_off + a_len
}

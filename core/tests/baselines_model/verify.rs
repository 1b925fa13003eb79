//! Checking what the scheme returned: each read against what the oracle allows it to see
//! (and, when nothing explains a page, which writes touched it), and the final read-back.

use fusionraid_core::{Op, PAGE_SIZE, Request};

use crate::model::Model;
use crate::oracle::{PS, PendingRead};

impl Model<'_> {
    pub fn check_read(&self, pr: &PendingRead, got: &[u8]) {
        assert_eq!(got.len() as u64, pr.len);
        for (i, page) in got.chunks(PS).enumerate() {
            let vp = pr.offset / PAGE_SIZE + i as u64;
            let ok = pr.base_unknown[i]
                || page == &pr.base[i * PS..(i + 1) * PS]
                || pr.cands.iter().any(|w| w.allows(vp, page));
            if !ok {
                self.explain_mismatch(pr, i, page);
            }
        }
    }

    /// Page `i` of read `pr` came back as `page`, which no write explains: say which writes
    /// touched it, then fail.
    pub fn explain_mismatch(&self, pr: &PendingRead, i: usize, page: &[u8]) -> ! {
        let (d, vol) = (&self.d, pr.vol);
        let vp = pr.offset / PAGE_SIZE + i as u64;
        let base = &pr.base[i * PS..(i + 1) * PS];
        for s in &self.history {
            let w = &s.w;
            if w.vol == vol && (w.allows(vp, base) || w.allows(vp, page)) {
                eprintln!(
                    "write {} submitted {} acked {:?} range {}+{} matches {}",
                    s.id,
                    s.at,
                    s.acked,
                    w.offset,
                    w.len,
                    if w.allows(vp, page) { "got" } else { "want" }
                );
            }
        }
        eprintln!(
            "now {} failed disks {:?}",
            d.now,
            (0..self.sc.cfg.disks)
                .filter(|&x| d.disks[x].failed)
                .collect::<Vec<_>>()
        );
        let first = page.iter().zip(base).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "read of vol {vol} at {} len {}: page {i} (volume page {vp}) differs at byte {first}: got {:#x} want {:#x} ({} overlapping writes)\n{}",
            pr.offset,
            pr.len,
            page[first],
            base[first],
            pr.cands.len(),
            d.engine.scheme().debug_state()
        );
    }

    /// Every volume read back whole and compared with the oracle exactly.
    pub fn read_back(&mut self) {
        let sc = self.sc;
        for (vol, &size) in sc.cfg.volumes.iter().enumerate() {
            let chunk = sc.cfg.max_request_bytes;
            let mut off = 0;
            while off < size {
                let len = chunk.min(size - off);
                let id = self.next_id;
                self.next_id += 1;
                assert!(self.d.submit(Request {
                    id,
                    volume: vol as u32,
                    op: Op::Read { offset: off, len }
                }));
                self.d.drain();
                let rep = self.d.take_replies().pop().expect("read-back reply");
                let got = rep
                    .result
                    .unwrap_or_else(|e| panic!("read-back of vol {vol} at {off}: {e}"))
                    .expect("data")
                    .into_bytes()
                    .expect("bytes");
                for (i, page) in got.chunks(PS).enumerate() {
                    let p = (off / PAGE_SIZE) as usize + i;
                    let want = &self.oracle.data[vol][p * PS..(p + 1) * PS];
                    assert!(
                        self.oracle.unknown[vol][p] || page == want,
                        "final read-back of vol {vol} differs at page {p} (block {})",
                        p as u64 * PAGE_SIZE / sc.cfg.block_size
                    );
                }
                off += len;
            }
        }
    }
}

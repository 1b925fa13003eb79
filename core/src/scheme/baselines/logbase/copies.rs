//! The runs a job wrote in place, each as one or more copies on the members: a run lands once
//! every copy of it is back, and counts as written if any copy was.

use super::Run;

#[derive(Default)]
pub struct Copies {
    pub runs: Vec<Run>,
    /// Copies written, and copies still in flight, per run.
    written: Vec<u8>,
    left: Vec<u8>,
    /// Copies in flight over all runs.
    pub pending: u32,
}

impl Copies {
    /// The index the next run gets.
    pub fn next(&self) -> usize {
        self.runs.len()
    }

    /// `run` went out as `issued` copies.
    pub fn push(&mut self, run: Run, issued: u8) {
        self.runs.push(run);
        self.written.push(0);
        self.left.push(issued);
        self.pending += issued as u32;
    }

    /// A copy of run `i` is back (`ok`: it was written). True when it was the run's last.
    pub fn copy_back(&mut self, i: usize, ok: bool) -> bool {
        if ok {
            self.written[i] += 1;
        }
        self.left[i] -= 1;
        self.pending -= 1;
        self.left[i] == 0
    }

    /// Whether any copy of run `i` was written.
    pub fn written(&self, i: usize) -> bool {
        self.written[i] > 0
    }
}

//! Prefill: write every volume once, in full stripes, before the run starts.
//!
//! A read of a block that was never written is answered by the engine without any device
//! I/O, so on fresh volumes most reads of a run would cost nothing and read latency would
//! mean little. Real volumes hold data. The prefill writes each volume sequentially in the
//! largest requests the scheme takes (whole stripes, so they land in the RAID area), with
//! every device I/O completing at once at time 0: it shapes the engine's metadata and
//! allocation state but leaves the device models untouched (their flash state is set by
//! ageing alone). It costs no virtual time, except for schemes that wait on timers (a write
//! buffer destaged in batches): the clock then jumps from deadline to deadline, and the run
//! starts where the prefill ended. Its bytes are left out of the report's counters.

use fusionraid_core::{Data, DeviceIo, Op, PAGE_SIZE, Request};

use super::oracle::word_for;
use super::store::fill_word;
use super::{Sim, SimError};

/// Target size of one prefill request.
const PREFILL_REQUEST_BYTES: u64 = 4 << 20;

/// Virtual time a prefill may take (schemes that wait on timers move the clock on).
const PREFILL_LIMIT_NS: u64 = 3_600_000_000_000;

impl Sim {
    pub(super) fn prefill(&mut self) -> Result<(), SimError> {
        let sc = &self.scenario;
        let stripe_data =
            sc.pool.block_size * (sc.width.saturating_sub(sc.level.nparity()).max(1) as u64);
        // Whole stripes, 4 MiB or so per request: large enough to cost little per byte,
        // small enough that a scheme copying payloads per block is not slowed down much.
        let stripes = (PREFILL_REQUEST_BYTES / stripe_data).max(1);
        let chunk = (stripes * stripe_data).min(self.max_request_bytes / PAGE_SIZE * PAGE_SIZE);
        let seed = sc.seed;
        let mut ios = Vec::new();
        for v in 0..self.volume_sizes.len() {
            let size = self.volume_sizes[v];
            if let Some(d) = &mut self.data {
                d.oracle.set_prefilled(v as u32, seed);
            }
            let mut off = 0;
            while off < size {
                let len = chunk.min(size - off);
                let data = match &self.data {
                    None => Data::Size(len),
                    Some(_) => {
                        let mut buf = vec![0u8; len as usize];
                        let first = off / PAGE_SIZE;
                        for (i, c) in buf.chunks_exact_mut(PAGE_SIZE as usize).enumerate() {
                            fill_word(c, word_for(seed, v as u32, first + i as u64, 0));
                        }
                        Data::Bytes(buf)
                    }
                };
                let req = Request {
                    id: u64::MAX,
                    volume: v as u32,
                    op: Op::Write {
                        offset: off,
                        data,
                        fua: false,
                    },
                };
                self.engine
                    .submit(req, self.now)
                    .map_err(|e| SimError::Scenario(format!("prefill of volume {v}: {e}")))?;
                loop {
                    ios.extend(std::iter::from_fn(|| self.engine.poll_device_io()));
                    if let Some(r) = self.engine.poll_reply() {
                        if let Err(e) = r.result {
                            return Err(SimError::Scenario(format!(
                                "prefill of volume {v} at {off}: {e}"
                            )));
                        }
                        break;
                    }
                    if ios.is_empty() {
                        // Waiting for a timer (a write buffer, a batch): let time pass.
                        self.prefill_tick()?;
                        continue;
                    }
                    for io in ios.drain(..) {
                        self.complete_at_once(io)?;
                    }
                }
                off += len;
            }
        }
        // Let the scheme finish what the prefill started (destaging, background I/O), at
        // once where it issues I/O, on its timers where it waits.
        while !self.engine.is_idle() {
            ios.extend(std::iter::from_fn(|| self.engine.poll_device_io()));
            if ios.is_empty() {
                self.prefill_tick()?;
            }
            for io in ios.drain(..) {
                self.complete_at_once(io)?;
            }
        }
        while self.engine.poll_reply().is_some() {}
        self.baseline = self.engine.stats().clone();
        Ok(())
    }

    /// Advances virtual time to the engine's next deadline and handles it.
    fn prefill_tick(&mut self) -> Result<(), SimError> {
        let Some(t) = self.engine.poll_timeout() else {
            return Err(self.stuck("prefill: the scheme waits, but for no I/O and no timer"));
        };
        // At least 1 us per tick, so a deadline that does not advance cannot spin forever.
        self.now = t.max(self.now + 1_000);
        if self.now > PREFILL_LIMIT_NS {
            return Err(self.stuck("prefill: over an hour of virtual time"));
        }
        self.engine.handle_timeout(self.now);
        Ok(())
    }

    /// Completes a device I/O at the current instant, bypassing the device model.
    fn complete_at_once(&mut self, io: DeviceIo) -> Result<(), SimError> {
        let result = match &mut self.data {
            None => Ok(None),
            Some(d) => {
                d.apply(io.disk.index(), io.id, &io.op);
                d.results.remove(&io.id.0).unwrap_or(Ok(None))
            }
        };
        self.engine
            .handle_completion(io.id, result, self.now)
            .map_err(|e| self.stuck(&e.to_string()))
    }
}

//! A write buffer between a write-through cache and memory.
//!
//! Time is the CPU's cycle count. Writes enter at the tail; memory retires the head when it is
//! free, taking `page_cycles` when the write falls in the same memory page as the previous write it
//! retired (page mode) and `other_cycles` otherwise; an entry is freed when its write completes.
//! A read miss has priority over queued writes but waits for a write already started; while the
//! read is served, memory is busy and no write starts. A write that finds the buffer full stalls
//! until the head completes.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteBufferConfig {
    pub depth: u32,
    pub page_cycles: u32,
    pub other_cycles: u32,
    /// Bytes of a memory page for page-mode writes.
    pub page_size: u64,
}

struct Entry {
    page: u64,
    /// Completion time once started.
    finish: Option<u64>,
}

pub struct WriteBuffer {
    cfg: WriteBufferConfig,
    page_shift: u32,
    queue: VecDeque<Entry>,
    /// Memory is busy (a write or a read) until this time.
    busy_until: u64,
    last_page: u64,
    pub writes: u64,
    pub full_stalls: u64,
    pub read_waits: u64,
}

impl WriteBuffer {
    pub fn new(cfg: &WriteBufferConfig) -> WriteBuffer {
        WriteBuffer {
            page_shift: cfg.page_size.max(1).trailing_zeros(),
            cfg: cfg.clone(),
            queue: VecDeque::with_capacity(cfg.depth as usize),
            busy_until: 0,
            last_page: u64::MAX,
            writes: 0,
            full_stalls: 0,
            read_waits: 0,
        }
    }

    /// Starts and completes writes as memory allows, up to time `now`.
    fn advance(&mut self, now: u64) {
        while let Some(head) = self.queue.front_mut() {
            let finish = match head.finish {
                Some(f) => f,
                None => {
                    let start = self.busy_until;
                    if start > now {
                        return;
                    }
                    let cost = if head.page == self.last_page {
                        self.cfg.page_cycles
                    } else {
                        self.cfg.other_cycles
                    };
                    self.last_page = head.page;
                    let f = start + u64::from(cost);
                    head.finish = Some(f);
                    self.busy_until = f;
                    f
                }
            };
            if finish > now {
                return;
            }
            self.queue.pop_front();
        }
    }

    /// A write at time `now`; returns the stall cycles (buffer full).
    pub fn write(&mut self, now: u64, addr: u64) -> u64 {
        self.writes += 1;
        self.advance(now);
        let mut t = now;
        while self.queue.len() >= self.cfg.depth as usize {
            // The head is started by advance() once memory is free; wait for it to finish.
            let next = match self.queue.front().and_then(|h| h.finish) {
                Some(f) => f,
                None => self.busy_until,
            };
            t = t.max(next);
            self.advance(t);
        }
        if t > now {
            self.full_stalls += 1;
        }
        self.queue.push_back(Entry {
            page: addr >> self.page_shift,
            finish: None,
        });
        // Memory idle since busy_until cannot start this write in the past.
        self.busy_until = self.busy_until.max(t);
        self.advance(t);
        t - now
    }

    /// A read from memory at `now` taking `cycles`; returns the stall spent waiting for a write
    /// already in progress (the read's own cycles are the caller's).
    pub fn read(&mut self, now: u64, cycles: u64) -> u64 {
        self.advance(now);
        let mut wait = 0;
        if let Some(Some(f)) = self.queue.front().map(|h| h.finish) {
            if f > now {
                wait = f - now;
                self.read_waits += 1;
            }
        }
        let start = now + wait;
        // The write it waited for is done; queued writes must not start before the read.
        if wait > 0 {
            self.queue.pop_front();
        }
        self.busy_until = self.busy_until.max(start) + cycles;
        wait
    }

    /// Entries occupied at `now` (for tests).
    pub fn occupancy(&mut self, now: u64) -> usize {
        self.advance(now);
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds() -> WriteBuffer {
        WriteBuffer::new(&WriteBufferConfig {
            depth: 6,
            page_cycles: 1,
            other_cycles: 5,
            page_size: 4096,
        })
    }

    #[test]
    fn page_mode_writes_drain_fast() {
        let mut w = ds();
        // Eight back-to-back writes to one page at time 0: the first takes 5 cycles (no open
        // page), the rest 1 each. Six fit; the 7th waits for the head (done at 5), the 8th for
        // the second (done at 6).
        let stalls: Vec<u64> = (0..8).map(|i| w.write(0, 0x1000 + 4 * i)).collect();
        assert_eq!(stalls, [0, 0, 0, 0, 0, 0, 5, 6]);
        assert_eq!(w.full_stalls, 2);
        assert_eq!(w.occupancy(100), 0);
    }

    #[test]
    fn writes_to_other_pages_take_five_cycles_each() {
        let mut w = ds();
        let stalls: Vec<u64> = (0..8).map(|i| w.write(0, i * 8192)).collect();
        // Completions at 5, 10, 15...: the 7th write waits until 5, the 8th until 10.
        assert_eq!(stalls, [0, 0, 0, 0, 0, 0, 5, 10]);
    }

    #[test]
    fn reads_wait_only_for_a_started_write() {
        let mut w = ds();
        w.write(0, 0x1000); // starts at 0, done at 5
        w.write(0, 0x9000); // queued behind it
        assert_eq!(
            w.read(2, 15),
            3,
            "waits for the write in progress, not the queued one"
        );
        // Memory is busy with the read until 5 + 15 = 20; the second write starts then.
        assert_eq!(w.occupancy(19), 1);
        assert_eq!(w.occupancy(25), 0);
        assert_eq!(w.read(30, 15), 0);
        assert_eq!(w.read_waits, 1);
    }
}

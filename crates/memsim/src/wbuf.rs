//! A write buffer between a write-through cache and memory.
//!
//! Time is the CPU's cycle count. Writes enter at the tail; memory retires the head when it is
//! free, taking `page_cycles` when the write falls in the same memory page as the previous write it
//! retired (page mode) and `other_cycles` otherwise; an entry is freed when its write completes.
//! A read miss has priority over queued writes but waits for a write already started; while the
//! read is served, memory is busy and no write starts. A write that finds the buffer full stalls
//! until the head completes.
//!
//! With merging (`merge_bytes` > 0), a write whose aligned block of that many bytes already has
//! an entry that has not started joins that entry instead of taking a new one: no entry, no
//! stall, and one memory write less. An entry that has started is on its way to memory and takes
//! nothing more. Without merging (0, the default) every write is an entry of its own.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteBufferConfig {
    pub depth: u32,
    pub page_cycles: u32,
    pub other_cycles: u32,
    /// Bytes of a memory page for page-mode writes.
    pub page_size: u64,
    /// Width in bytes of the aligned block a waiting entry merges writes over (a power of two);
    /// 0 turns merging off.
    #[serde(default)]
    pub merge_bytes: u64,
}

impl WriteBufferConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.depth == 0 {
            return Err("write buffer depth must be at least 1".into());
        }
        if self.merge_bytes != 0 && !self.merge_bytes.is_power_of_two() {
            return Err(format!(
                "write buffer merge width {} is not a power of two (0 turns merging off)",
                self.merge_bytes
            ));
        }
        Ok(())
    }
}

struct Entry {
    page: u64,
    /// Merge block (the address shifted by the merge width).
    block: u64,
    /// Completion time once started.
    finish: Option<u64>,
}

pub struct WriteBuffer {
    cfg: WriteBufferConfig,
    page_shift: u32,
    /// log2 of the merge width, when merging.
    merge_shift: Option<u32>,
    queue: VecDeque<Entry>,
    /// Memory is busy (a write or a read) until this time.
    busy_until: u64,
    last_page: u64,
    pub writes: u64,
    pub full_stalls: u64,
    pub read_waits: u64,
    /// Writes that joined a waiting entry.
    pub merges: u64,
}

impl WriteBuffer {
    pub fn new(cfg: &WriteBufferConfig) -> WriteBuffer {
        WriteBuffer {
            page_shift: cfg.page_size.max(1).trailing_zeros(),
            merge_shift: (cfg.merge_bytes > 0).then(|| cfg.merge_bytes.trailing_zeros()),
            cfg: cfg.clone(),
            // A deep buffer grows only as writes wait in it.
            queue: VecDeque::with_capacity(cfg.depth.min(64) as usize),
            busy_until: 0,
            last_page: u64::MAX,
            writes: 0,
            full_stalls: 0,
            read_waits: 0,
            merges: 0,
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
        let block = self.merge_shift.map_or(addr, |s| addr >> s);
        if self.merge_shift.is_some()
            && self
                .queue
                .iter()
                .any(|e| e.finish.is_none() && e.block == block)
        {
            self.merges += 1;
            return 0;
        }
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
            block,
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
            merge_bytes: 0,
        })
    }

    fn two_deep(merge_bytes: u64) -> WriteBuffer {
        WriteBuffer::new(&WriteBufferConfig {
            depth: 2,
            page_cycles: 1,
            other_cycles: 5,
            page_size: 4096,
            merge_bytes,
        })
    }

    /// Four words of one 16-byte block, then another page, all at time 0, in two entries.
    const BURST: [u64; 5] = [0x1000, 0x1004, 0x1008, 0x100c, 0x2000];

    #[test]
    fn without_merging_each_write_is_an_entry() {
        let mut w = two_deep(0);
        // 0x1000 starts at once (done at 5); 0x1004 waits; 0x1008 finds the buffer full until 5,
        // when 0x1004 starts in the open page (done at 6); 0x100c waits for it, 0x2000 for
        // 0x1008 (done at 7).
        let stalls: Vec<u64> = BURST.iter().map(|&a| w.write(0, a)).collect();
        assert_eq!(stalls, [0, 0, 5, 6, 7]);
        assert_eq!(w.merges, 0);
    }

    #[test]
    fn writes_to_a_waiting_block_merge() {
        let mut w = two_deep(16);
        // 0x1000 has started, so 0x1004 takes the second entry; 0x1008 and 0x100c join it.
        // 0x2000 is another block and waits for the head (done at 5).
        let stalls: Vec<u64> = BURST.iter().map(|&a| w.write(0, a)).collect();
        assert_eq!(stalls, [0, 0, 0, 0, 5]);
        assert_eq!((w.writes, w.merges), (5, 2));
        // The merged entry is one memory write: started at 5 in the open page, done at 6; then
        // 0x2000 (another page) from 6 to 11.
        assert_eq!(w.occupancy(10), 1);
        assert_eq!(w.occupancy(11), 0);
    }

    #[test]
    fn merge_width_bounds_the_block() {
        let mut w = two_deep(8);
        // 8-byte blocks: 0x1008 starts a block of its own, and the buffer is full again.
        let stalls: Vec<u64> = BURST.iter().map(|&a| w.write(0, a)).collect();
        assert_eq!(stalls, [0, 0, 5, 0, 6]);
        assert_eq!(w.merges, 1);
        assert!(WriteBufferConfig {
            depth: 2,
            page_cycles: 1,
            other_cycles: 5,
            page_size: 4096,
            merge_bytes: 12,
        }
        .validate()
        .unwrap_err()
        .contains("power of two"));
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

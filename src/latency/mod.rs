//! Wakeup latency under load: how late a periodic thread runs, per scheduling class and wake path,
//! with every missed period accounted for, worst cases per window and a buffer-underrun model.

pub mod accounting;
pub mod buffer;
pub mod compute;
pub mod document;
pub mod histogram;
pub mod intervals;
pub mod load;
pub mod report;
pub mod ringbuf;
pub mod seconds;
pub mod stacks;
pub mod stage_capture;
pub mod stages;
pub mod threads;
pub mod trace;
pub mod tracefs;

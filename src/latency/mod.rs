//! Wakeup latency under load: how late a periodic thread runs, per scheduling class and wake path,
//! with every missed period accounted for, worst cases per window and a buffer-underrun model.

pub mod accounting;
pub mod buffer;
pub mod document;
pub mod histogram;
pub mod load;
pub mod report;
pub mod threads;
pub mod trace;

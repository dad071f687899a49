//! Wakeup latency under load: how late a periodic thread runs, per scheduling class and wake path,
//! with every missed period accounted for, worst cases per window and a buffer-underrun model.

/// Tests that run real measuring threads on the last CPU take turns: two at once would each see
/// the other's wakes and load, and one test's figures would no longer be its own.
#[cfg(test)]
pub(crate) static MEASURED_CPU: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub mod accounting;
pub mod buffer;
pub mod compute;
pub mod document;
pub mod elfsyms;
pub mod figures;
pub mod histogram;
pub mod html;
pub mod intervals;
pub mod load;
pub mod ringbuf;
pub mod run;
pub mod seconds;
pub mod session;
pub mod stacks;
pub mod stage_capture;
pub mod stages;
pub mod text;
pub mod threads;
pub mod timeline;
pub mod trace;
pub mod values;

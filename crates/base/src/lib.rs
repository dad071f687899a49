//! osmeter's base layer: general-purpose helpers every other layer stands on, none of which knows
//! what a probe, a run or a store is.
//!
//! - [`units`]: units of figures and the one number formatter; [`columns`]: tables that fit a
//!   terminal; [`text`]: stored strings escaped for a terminal or a spreadsheet; [`suggest`]:
//!   "did you mean";
//! - [`console`]: stderr and stdout that a closed pipe cannot turn into a panic (the `eprintln!`
//!   every module uses); [`progress`]: progress lines of long jobs;
//! - [`error`]: exit codes and the usage error (`usage!`); [`interrupt`]: stopping cleanly on a
//!   signal;
//! - [`clock`]: timestamps, run ids, `--since` times; [`system`]: page size, USER_HZ, a random
//!   seed; [`memory_room`]: the memory osmeter may still take; [`mounts`]: the mount table;
//!   [`detached`]: file systems mounted nowhere; [`parallel`]: work spread over the CPUs;
//! - [`files`]: the one atomic writer of output files, and the XDG directories; [`scratch`]:
//!   private scratch directories and files; [`programs`]: finding programs and starting them
//!   without osmeter's secrets; [`guard`]: a command whose whole process tree ends with osmeter.

// First, so that its `eprintln!` (quiet when stderr is closed) is the one every module here uses.
#[macro_use]
pub mod console;

pub mod clock;
pub mod columns;
pub mod detached;
pub mod error;
pub mod files;
pub mod guard;
pub mod interrupt;
pub mod memory_room;
pub mod mounts;
pub mod parallel;
pub mod programs;
pub mod progress;
pub mod scratch;
pub mod suggest;
pub mod system;
pub mod text;
pub mod units;

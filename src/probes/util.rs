//! Small helpers shared by probes: reading parameters. (A system call's failure is named where it
//! is made; a process that cannot start, through crate::system::processes.)

pub use crate::results::params::{param_bool, param_str, param_u64};

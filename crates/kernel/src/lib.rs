//! osmeter's kernel layer: what reaches into the running kernel or reads its objects, standing on
//! osmeter-base and below the meter, so that every part that measures or explains kernel time
//! shares one way in and one naming.
//!
//! - [`tracefs`]: the one place osmeter touches tracefs (a private detached mount, instances of
//!   its own named by owner, stale ones swept);
//! - [`lockdown`]: the lockdown level, which decides what even root may not trace;
//! - [`function_tracer`]: whether the function tracer can be aimed at chosen functions, and if
//!   not why;
//! - [`kernel_parts`]: kernel symbol tables and what a kernel function does (memsim's category,
//!   a profile's component);
//! - [`elf`]: function symbols of ELF objects, for user-space names.

// osmeter's `eprintln!` (quiet when stderr is closed: osmeter_base::console) for every module
// declared below, in place of std's: a macro of another crate comes only by path, which would not
// shadow std's, so this textual one stands first and forwards to it.
macro_rules! eprintln {
    ($($arg:tt)*) => {
        ::osmeter_base::eprintln!($($arg)*)
    };
}

pub mod elf;
pub mod function_tracer;
pub mod kernel_parts;
pub mod lockdown;
pub mod tracefs;

//! Getting traces: valgrind's lackey for the user-mode references of a command, and QEMU with
//! osmeter's plugin for the whole system (user and kernel, physical addresses).

pub mod system;
pub mod valgrind;

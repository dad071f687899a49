//! Full-system reference traces: a small Linux guest under QEMU (TCG) runs one command between two
//! marker instructions, and osmeter's QEMU plugin streams every instruction fetch and data access
//! of that window, user and kernel, with physical addresses, into an osmeter trace.
//!
//! Pieces: `kernel` finds or fetches the guest kernel, `initramfs` builds the guest's only file
//! system, `workloads` are the built-in commands, `qemu` boots the guest, `stream` decodes the
//! plugin's records (`windows` those of every window of a counting boot), `count` boots to
//! count, and `capture` ties them together. The plugin itself is C in qemu-plugin/, GPL-licensed
//! apart from this crate; osmeter carries the compiled plugin and writes it out for QEMU to load,
//! never linking it.

pub mod archive;
pub mod capture;
pub mod count;
pub mod debver;
pub mod initramfs;
pub mod kernel;
pub mod kernel_cache;
pub mod marker;
pub mod qemu;
pub mod stream;
pub mod windows;
pub mod workloads;

/// The static program the guest runs around the traced command (helpers/guest.c).
pub const GUEST_HELPER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/osmeter-guest"));
/// The QEMU plugin (qemu-plugin/osmeter-trace.c), compiled by build.rs.
pub const PLUGIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/osmeter-trace.so"));
/// Where the guest helper lives inside the guest.
pub const GUEST_HELPER_PATH: &str = "/bin/osmeter-guest";

/// The sidecar file holding the guest kernel's symbol table beside a trace.
pub fn symbols_sidecar(trace: &std::path::Path) -> std::path::PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".kallsyms");
    std::path::PathBuf::from(s)
}

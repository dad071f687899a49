//! A description of the system a run came from. (Basic fields; the full fingerprint lands later.)

use serde_json::{json, Value};
use std::path::Path;

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

pub fn collect(scratch: Option<&Path>) -> Value {
    let _ = scratch;
    json!({
        "kernel_release": read_trimmed("/proc/sys/kernel/osrelease"),
        "tool_version": env!("CARGO_PKG_VERSION"),
    })
}

//! Compiles the helper programs in helpers/ that probes run as child processes, the program that
//! full-system guests run around a traced command, and the QEMU plugin in qemu-plugin/ (a separate
//! GPL program that osmeter writes out for QEMU to load), and leaves them in OUT_DIR for
//! `include_bytes!`. A helper that cannot be built is replaced by an empty file and a warning, so
//! the crate still builds; what needs it then reports itself unavailable.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=helpers/hello.c");
    println!("cargo:rerun-if-changed=helpers/guest.c");
    println!("cargo:rerun-if-changed=qemu-plugin/osmeter-trace.c");
    println!("cargo:rerun-if-env-changed=CC");

    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let source = Path::new("helpers/hello.c");

    build_helper(
        &compiler,
        source,
        &out.join("hello-dynamic"),
        &[],
        "the dynamically linked exec helper could not be built (is a C compiler installed?); \
         process.exec with link=dynamic will be skipped",
    );
    build_helper(
        &compiler,
        source,
        &out.join("hello-static"),
        &["-static"],
        "the statically linked exec helper could not be built (no static libc; install \
         libc6-dev, then `touch helpers/hello.c` and rebuild); process.exec with link=static \
         will be skipped",
    );
    build_helper(
        &compiler,
        Path::new("helpers/guest.c"),
        &out.join("osmeter-guest"),
        &["-static"],
        "the full-system guest helper could not be built (needs a static libc: libc6-dev); \
         osmeter trace --system will be unavailable",
    );
    build_helper(
        &compiler,
        Path::new("qemu-plugin/osmeter-trace.c"),
        &out.join("osmeter-trace.so"),
        &["-shared", "-fPIC", "-fvisibility=hidden"],
        "the QEMU trace plugin could not be built; osmeter trace --system will be unavailable",
    );
}

/// Compiles `source` to `dest`; on any failure writes an empty `dest` and warns instead of failing.
fn build_helper(compiler: &str, source: &Path, dest: &Path, extra: &[&str], warning: &str) {
    let result = Command::new(compiler)
        .args(["-O2", "-s", "-o"])
        .arg(dest)
        .arg(source)
        .args(extra)
        .output();
    let ok = match result {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            if let Some(first) = err.lines().find(|l| !l.trim().is_empty()) {
                println!("cargo:warning={compiler}: {first}");
            }
            false
        }
        Err(e) => {
            println!("cargo:warning=cannot run {compiler}: {e}");
            false
        }
    };
    if !ok {
        println!("cargo:warning={warning}");
        std::fs::write(dest, b"").expect("OUT_DIR is writable");
    }
}

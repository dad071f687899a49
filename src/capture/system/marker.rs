//! The marker instructions a program executes to open and close a window that osmeter's QEMU
//! plugin counts or traces: 7-byte no-ops (`nopl 0x??4d534f(%rax)`, see qemu-plugin/), harmless
//! outside the guest.

/// Opens a window.
#[inline(never)]
pub fn start() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a no-op instruction; it reads and writes nothing.
    unsafe {
        std::arch::asm!(
            ".byte 0x0f, 0x1f, 0x80, 0x4f, 0x53, 0x4d, 0x01",
            options(nostack)
        )
    };
}

/// Closes the window [`start`] opened.
#[inline(never)]
pub fn end() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `start`.
    unsafe {
        std::arch::asm!(
            ".byte 0x0f, 0x1f, 0x80, 0x4f, 0x53, 0x4d, 0x02",
            options(nostack)
        )
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn markers_are_harmless_outside_the_guest() {
        super::start();
        super::end();
    }
}

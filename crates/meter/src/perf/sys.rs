//! The perf_event_open(2) ABI: the attribute block, the system call, and the layout of what read(2)
//! returns. Kept apart from the policy (which events, which scopes, what to do on failure).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub const TYPE_HARDWARE: u32 = 0;
pub const TYPE_SOFTWARE: u32 = 1;
pub const TYPE_HW_CACHE: u32 = 3;

pub const HW_CPU_CYCLES: u64 = 0;
pub const HW_INSTRUCTIONS: u64 = 1;
pub const HW_BRANCH_MISSES: u64 = 5;
pub const HW_STALLED_CYCLES_FRONTEND: u64 = 7;
pub const HW_STALLED_CYCLES_BACKEND: u64 = 8;

pub const SW_TASK_CLOCK: u64 = 1;
pub const SW_PAGE_FAULTS: u64 = 2;
pub const SW_CONTEXT_SWITCHES: u64 = 3;
pub const SW_CPU_MIGRATIONS: u64 = 4;
pub const SW_PAGE_FAULTS_MIN: u64 = 5;
pub const SW_PAGE_FAULTS_MAJ: u64 = 6;

pub const CACHE_L1D: u64 = 0;
pub const CACHE_L1I: u64 = 1;
pub const CACHE_LL: u64 = 2;
pub const CACHE_DTLB: u64 = 3;
pub const CACHE_ITLB: u64 = 4;

/// `config` of a PERF_TYPE_HW_CACHE event counting read misses of `cache`.
pub const fn cache_read_miss(cache: u64) -> u64 {
    const OP_READ: u64 = 0;
    const RESULT_MISS: u64 = 1;
    cache | (OP_READ << 8) | (RESULT_MISS << 16)
}

pub const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
pub const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
pub const FORMAT_ID: u64 = 1 << 2;
pub const FORMAT_GROUP: u64 = 1 << 3;

// Bits of the flags word, in the kernel's bit-field order.
pub const FLAG_DISABLED: u64 = 1 << 0;
pub const FLAG_INHERIT: u64 = 1 << 1;
pub const FLAG_EXCLUDE_USER: u64 = 1 << 4;
pub const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
pub const FLAG_EXCLUDE_HV: u64 = 1 << 6;
pub const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;

/// First published layout of `struct perf_event_attr` (PERF_ATTR_SIZE_VER0, 64 bytes). Every kernel
/// with perf_event accepts it, and nothing osmeter uses lives in the later extensions.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfEventAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
}

pub const ATTR_SIZE_VER0: u32 = 64;
const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == ATTR_SIZE_VER0 as usize);

impl PerfEventAttr {
    pub fn new(type_: u32, config: u64, read_format: u64, flags: u64) -> Self {
        PerfEventAttr {
            type_,
            size: ATTR_SIZE_VER0,
            config,
            read_format,
            flags,
            ..Default::default()
        }
    }
}

/// perf_event_open(attr, pid, cpu = -1 (any), group_fd, PERF_FLAG_FD_CLOEXEC). Returns the errno on
/// failure.
pub fn open(
    attr: &PerfEventAttr,
    pid: libc::pid_t,
    group: Option<&OwnedFd>,
) -> Result<OwnedFd, i32> {
    open_on(attr, pid, -1, group, 0)
}

/// PERF_FLAG_PID_CGROUP: `pid` is a descriptor of a cgroup directory, and `cpu` must be a CPU.
pub const PERF_FLAG_PID_CGROUP: libc::c_ulong = 1 << 2;

/// perf_event_open on one CPU (or -1) with extra flags (e.g. [`PERF_FLAG_PID_CGROUP`]) beside
/// PERF_FLAG_FD_CLOEXEC. Returns the errno on failure.
pub fn open_on(
    attr: &PerfEventAttr,
    pid: libc::pid_t,
    cpu: libc::c_int,
    group: Option<&OwnedFd>,
    flags: libc::c_ulong,
) -> Result<OwnedFd, i32> {
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
    let group_fd = group.map_or(-1, |g| g.as_raw_fd());
    // SAFETY: attr points to a live, correctly sized perf_event_attr; the kernel only reads it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid,
            cpu,
            group_fd,
            PERF_FLAG_FD_CLOEXEC | flags,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Reads the counter block of `fd` into `buf`; returns the number of u64 words read.
pub fn read_words(fd: &OwnedFd, buf: &mut [u64]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of its whole length in bytes.
    let n = unsafe {
        libc::read(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            std::mem::size_of_val(buf),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize / 8)
}

/// One value of a read, with the times of its group (or of itself when read alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value {
    pub id: u64,
    pub value: u64,
    pub enabled_ns: u64,
    pub running_ns: u64,
}

/// Layout with GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID:
/// `nr, time_enabled, time_running, {value, id} * nr`.
pub fn parse_group(words: &[u64], out: &mut Vec<Value>) -> bool {
    let [nr, enabled, running, rest @ ..] = words else {
        return false;
    };
    let nr = *nr as usize;
    if rest.len() < nr * 2 {
        return false;
    }
    out.extend(rest.chunks_exact(2).take(nr).map(|pair| Value {
        id: pair[1],
        value: pair[0],
        enabled_ns: *enabled,
        running_ns: *running,
    }));
    true
}

/// Layout with TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID: `value, time_enabled, time_running, id`.
pub fn parse_single(words: &[u64]) -> Option<Value> {
    match words {
        [value, enabled, running, id, ..] => Some(Value {
            id: *id,
            value: *value,
            enabled_ns: *enabled,
            running_ns: *running,
        }),
        _ => None,
    }
}

/// The id the kernel gave an event (PERF_EVENT_IOC_ID), used to match group read entries.
pub fn event_id(fd: &OwnedFd) -> Option<u64> {
    // _IOR('$', 7, u64)
    const PERF_EVENT_IOC_ID: libc::c_ulong = 0x8008_2407;
    let mut id = 0u64;
    // SAFETY: the ioctl writes one u64 into id.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ID as _, &mut id as *mut u64) };
    (r == 0).then_some(id)
}

/// Starts counting on an event created disabled (PERF_EVENT_IOC_ENABLE); for a group leader, the
/// whole group.
pub fn enable(fd: &OwnedFd) -> bool {
    // _IO('$', 0)
    const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
    // SAFETY: the ioctl takes no argument memory.
    unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE as _, 0) == 0 }
}

/// Name of an errno value, for messages ("EINVAL").
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::ENOENT => "ENOENT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENODEV => "ENODEV",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::ENOSYS => "ENOSYS",
        libc::E2BIG => "E2BIG",
        libc::EBUSY => "EBUSY",
        libc::ESRCH => "ESRCH",
        _ => "errno",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_config_encodes_cache_op_and_result() {
        // LLC read miss: cache id 2, op read (0) in bits 8-15, result miss (1) in bits 16-23.
        assert_eq!(cache_read_miss(CACHE_LL), 0x1_00_02);
        assert_eq!(cache_read_miss(CACHE_ITLB), 0x1_00_04);
    }

    #[test]
    fn group_read_layout() {
        let words = [2, 1000, 500, 11, 7, 22, 8];
        let mut out = Vec::new();
        assert!(parse_group(&words, &mut out));
        assert_eq!(
            out,
            vec![
                Value {
                    id: 7,
                    value: 11,
                    enabled_ns: 1000,
                    running_ns: 500
                },
                Value {
                    id: 8,
                    value: 22,
                    enabled_ns: 1000,
                    running_ns: 500
                },
            ]
        );
        // Truncated: claims two members, holds one.
        out.clear();
        assert!(!parse_group(&[2, 1, 1, 5, 6], &mut out));
        assert!(out.is_empty());
    }

    #[test]
    fn single_read_layout() {
        assert_eq!(
            parse_single(&[42, 10, 9, 3]),
            Some(Value {
                id: 3,
                value: 42,
                enabled_ns: 10,
                running_ns: 9
            })
        );
        assert_eq!(parse_single(&[1, 2]), None);
    }
}

//! Sampling through perf_event: one event on the calling thread (and, inherited, on the threads and
//! processes it starts afterwards), its samples written by the kernel into a ring buffer mapped
//! into this process, each with the instruction pointer, thread, time, period and the kernel and
//! user call chains. The hardware cycle counter where the machine has one, the software cpu-clock
//! (a timer) where it has not. Decoding is apart from the ring so it can be tested on known bytes.

use super::sys::{self, PerfEventAttr};
use osmeter_base::system::page_size;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

pub const SAMPLE_IP: u64 = 1 << 0;
pub const SAMPLE_TID: u64 = 1 << 1;
pub const SAMPLE_TIME: u64 = 1 << 2;
pub const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub const SAMPLE_PERIOD: u64 = 1 << 8;
/// What every sample carries, in the kernel's record order: ip, pid/tid, time, period, callchain.
pub const SAMPLE_TYPE: u64 =
    SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_PERIOD | SAMPLE_CALLCHAIN;

const FLAG_FREQ: u64 = 1 << 10;
const RECORD_LOST: u32 = 2;
const RECORD_THROTTLE: u32 = 5;
const RECORD_SAMPLE: u32 = 9;
/// Call-chain entries at or above this are context markers, not addresses.
const CONTEXT_MAX: u64 = (-4095i64) as u64;
const CONTEXT_KERNEL: u64 = (-128i64) as u64;
const CONTEXT_USER: u64 = (-512i64) as u64;
const MISC_CPUMODE_MASK: u16 = 7;
const MISC_KERNEL: u16 = 1;

/// Samples per second of CPU time: a few thousand in a quarter of a second, well below the
/// kernel's default limit (perf_event_max_sample_rate, 100000) and its throttling.
pub const SAMPLE_HZ: u64 = 20_000;
/// Data pages of the ring: 512 KiB, within the 516 KiB an unprivileged user may lock
/// (perf_event_mlock_kb) with the header page; drained after every sample of the workload.
const RING_PAGES: usize = 128;

/// What the samples are taken on.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SamplingSource {
    /// PERF_COUNT_HW_CPU_CYCLES at a frequency; a sample's period is cycles.
    Cycles,
    /// PERF_COUNT_SW_CPU_CLOCK, a timer; a sample's period is nanoseconds.
    CpuClock,
}

impl SamplingSource {
    pub fn name(self) -> &'static str {
        match self {
            SamplingSource::Cycles => "cycles",
            SamplingSource::CpuClock => "cpu-clock",
        }
    }
}

/// One decoded sample. Chains are leaf first, without the kernel's context markers.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Sample {
    pub pid: u32,
    pub tid: u32,
    pub time_ns: u64,
    pub period: u64,
    pub ip: u64,
    /// Taken while the CPU was in the kernel.
    pub in_kernel: bool,
    pub kernel_chain: Vec<u64>,
    pub user_chain: Vec<u64>,
}

/// What a ring held besides samples.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub struct RingStats {
    /// Samples the kernel dropped because the ring was full.
    pub lost: u64,
    /// Times the kernel throttled the event for sampling too often.
    pub throttled: u64,
    /// Records neither decoded nor known (truncated, or a type this reader ignores).
    pub skipped: u64,
}

/// Decodes one record (header included). Returns the sample, or adds what else it was to `stats`.
pub fn decode_record(record: &[u8], stats: &mut RingStats) -> Option<Sample> {
    let word = |i: usize| -> Option<u64> {
        record
            .get(i * 8..i * 8 + 8)
            .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
    };
    let header = word(0)?;
    let kind = header as u32;
    let misc = (header >> 32) as u16;
    match kind {
        RECORD_SAMPLE => {}
        RECORD_LOST => {
            stats.lost += word(2).unwrap_or(0);
            return None;
        }
        RECORD_THROTTLE => {
            stats.throttled += 1;
            return None;
        }
        _ => {
            stats.skipped += 1;
            return None;
        }
    }
    let decoded = (|| {
        let ip = word(1)?;
        let ids = word(2)?;
        let mut s = Sample {
            pid: ids as u32,
            tid: (ids >> 32) as u32,
            time_ns: word(3)?,
            period: word(4)?,
            ip,
            in_kernel: misc & MISC_CPUMODE_MASK == MISC_KERNEL,
            ..Sample::default()
        };
        let nr = word(5)? as usize;
        let mut in_kernel_part = s.in_kernel;
        for i in 0..nr {
            let addr = word(6 + i)?;
            if addr >= CONTEXT_MAX {
                in_kernel_part = match addr {
                    CONTEXT_KERNEL => true,
                    CONTEXT_USER => false,
                    // Hypervisor and guest contexts: nothing osmeter names.
                    _ => continue,
                };
                continue;
            }
            if in_kernel_part {
                s.kernel_chain.push(addr);
            } else {
                s.user_chain.push(addr);
            }
        }
        Some(s)
    })();
    if decoded.is_none() {
        stats.skipped += 1;
    }
    decoded
}

/// Why sampling could not start, for the run's note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub errno: i32,
    pub reason: String,
}

/// One event per CPU, each with its ring, stopped until [`Sampler::enable`]. The kernel maps no
/// ring of an inherited event that follows a task across CPUs (cpu -1), so, as `perf record` does,
/// the task is sampled on every CPU, and the copies its children inherit write to the ring of the
/// CPU they run on.
pub struct Sampler {
    rings: Vec<Ring>,
    pub source: SamplingSource,
    pub stats: RingStats,
}

struct Ring {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

impl Sampler {
    /// Opens sampling on the calling thread, inherited by the threads and processes it creates from
    /// now on: on cycles if the machine counts them, else on cpu-clock.
    pub fn open() -> Result<Sampler, Refused> {
        // No PMU (a VM, this kind of machine): the timer samples the same code paths.
        Self::open_on(SamplingSource::Cycles).or_else(|_| Self::open_on(SamplingSource::CpuClock))
    }

    pub fn open_on(source: SamplingSource) -> Result<Sampler, Refused> {
        Self::open_target(source, 0, sys::FLAG_INHERIT, 0)
    }

    /// Opens sampling of every process in the cgroup (v2) directory `cgroup`, whoever started
    /// them, on every CPU: an application workload's cgroup. Needs what CPU-wide sampling needs
    /// (root, CAP_PERFMON or kernel.perf_event_paranoid at 0 or below).
    pub fn open_cgroup(cgroup: &std::path::Path) -> Result<Sampler, Refused> {
        let dir = open_cgroup_dir(cgroup)?;
        let fd = dir.as_raw_fd();
        Self::open_target(SamplingSource::Cycles, fd, 0, sys::PERF_FLAG_PID_CGROUP).or_else(|_| {
            Self::open_target(SamplingSource::CpuClock, fd, 0, sys::PERF_FLAG_PID_CGROUP)
        })
    }

    /// Samples every process of the cgroup `cgroup` as well, on this sampler's source, into rings
    /// of their own: a partner the workload did not start (the run's FUSE server), whose time is
    /// the workload's too. Switched on and off, and drained, with the rest.
    pub fn add_cgroup(&mut self, cgroup: &std::path::Path) -> Result<(), Refused> {
        let dir = open_cgroup_dir(cgroup)?;
        let more = Self::open_target(self.source, dir.as_raw_fd(), 0, sys::PERF_FLAG_PID_CGROUP)?;
        self.rings.extend(more.rings);
        Ok(())
    }

    /// One event per online CPU on `pid` (0: the calling thread; a cgroup descriptor with
    /// [`sys::PERF_FLAG_PID_CGROUP`]).
    fn open_target(
        source: SamplingSource,
        pid: libc::pid_t,
        inherit: u64,
        open_flags: libc::c_ulong,
    ) -> Result<Sampler, Refused> {
        let mut attr = attr(source);
        attr.flags |= inherit;
        let mut rings = Vec::new();
        for cpu in online_cpus() {
            let fd = match sys::open_on(&attr, pid, cpu as libc::c_int, None, open_flags) {
                Ok(fd) => fd,
                // Gone offline since the list was read.
                Err(libc::ENODEV) if !rings.is_empty() => continue,
                Err(errno) => {
                    return Err(Refused {
                        errno,
                        reason: refusal(errno, source),
                    })
                }
            };
            rings.push(Ring::map(fd)?);
        }
        if rings.is_empty() {
            return Err(Refused {
                errno: libc::ENODEV,
                reason: "no online CPU listed in /sys/devices/system/cpu/online".into(),
            });
        }
        Ok(Sampler {
            rings,
            source,
            stats: RingStats::default(),
        })
    }

    /// Starts sampling, on the inherited copies too.
    pub fn enable(&self) -> bool {
        self.rings.iter().all(|r| sys::enable(&r.fd))
    }

    pub fn disable(&self) -> bool {
        // _IO('$', 1)
        const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
        self.rings.iter().all(|r| {
            // SAFETY: the ioctl takes no argument memory.
            unsafe { libc::ioctl(r.fd.as_raw_fd(), PERF_EVENT_IOC_DISABLE as _, 0) == 0 }
        })
    }

    /// Takes every record the kernel has written since the last drain, ring after ring.
    pub fn drain(&mut self, out: &mut Vec<Sample>) {
        for ring in &self.rings {
            ring.drain(out, &mut self.stats);
        }
    }
}

fn open_cgroup_dir(cgroup: &std::path::Path) -> Result<std::fs::File, Refused> {
    std::fs::File::open(cgroup).map_err(|e| Refused {
        errno: e.raw_os_error().unwrap_or(libc::EIO),
        reason: format!("cannot open the cgroup {}: {e}", cgroup.display()),
    })
}

fn attr(source: SamplingSource) -> PerfEventAttr {
    // Inherited (by the threads and processes the thread starts) when it samples a thread.
    let flags = sys::FLAG_DISABLED | sys::FLAG_EXCLUDE_HV;
    let rate = SAMPLE_HZ.min(max_sample_rate()).max(1);
    let mut attr = match source {
        SamplingSource::Cycles => {
            let mut a = PerfEventAttr::new(sys::TYPE_HARDWARE, sys::HW_CPU_CYCLES, 0, flags);
            a.flags |= FLAG_FREQ;
            a.sample_period = rate;
            a
        }
        SamplingSource::CpuClock => {
            let mut a = PerfEventAttr::new(sys::TYPE_SOFTWARE, SW_CPU_CLOCK, 0, flags);
            a.sample_period = 1_000_000_000 / rate;
            a
        }
    };
    attr.sample_type = SAMPLE_TYPE;
    attr
}

impl Ring {
    fn map(fd: OwnedFd) -> Result<Ring, Refused> {
        let page = page_size();
        let len = (RING_PAGES + 1) * page;
        // SAFETY: mapping a perf_event descriptor as the ABI describes; checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let errno = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            return Err(Refused {
                errno,
                reason: format!(
                    "cannot map a sampling ring ({}): the locked-memory limit \
                     (kernel.perf_event_mlock_kb, ulimit -l) is below {} KiB a CPU",
                    sys::errno_name(errno),
                    len / 1024
                ),
            });
        }
        let base = base.cast::<u8>();
        // SAFETY: the header page is mapped; data_offset and data_size are u64 at 1040 and 1048.
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(1040).cast::<u64>()) as usize,
                std::ptr::read_volatile(base.add(1048).cast::<u64>()) as usize,
            )
        };
        // Kernels before 4.1 leave both zero: the data follows the header page.
        let (data_offset, data_size) = if size == 0 {
            (page, RING_PAGES * page)
        } else {
            (off, size)
        };
        Ok(Ring {
            fd,
            base,
            len,
            data_offset,
            data_size,
        })
    }

    fn drain(&self, out: &mut Vec<Sample>, stats: &mut RingStats) {
        // SAFETY: data_head (offset 1024) and data_tail (1032) are u64 in the mapped header page;
        // the kernel writes head and reads tail, this process the other way round.
        let (head_ptr, tail_ptr) = unsafe {
            (
                self.base.add(1024).cast::<u64>(),
                self.base.add(1032).cast::<u64>(),
            )
        };
        // SAFETY: see above.
        let head = unsafe { std::ptr::read_volatile(head_ptr) };
        // The records up to head are visible only after head itself was read.
        fence(Ordering::Acquire);
        // SAFETY: see above.
        let mut tail = unsafe { std::ptr::read_volatile(tail_ptr) };
        let mut record = Vec::new();
        while tail + 8 <= head {
            self.copy_out(tail, 8, &mut record);
            let size = u16::from_ne_bytes([record[6], record[7]]) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            self.copy_out(tail, size as usize, &mut record);
            if let Some(s) = decode_record(&record, stats) {
                out.push(s);
            }
            tail += size;
        }
        // The kernel may overwrite what was read only after it is read.
        fence(Ordering::Release);
        // SAFETY: see above.
        unsafe { std::ptr::write_volatile(tail_ptr, tail) };
    }

    /// Copies `len` bytes of the data area from stream position `pos`, across its end if need be.
    fn copy_out(&self, pos: u64, len: usize, out: &mut Vec<u8>) {
        out.clear();
        let start = (pos % self.data_size as u64) as usize;
        let first = len.min(self.data_size - start);
        // SAFETY: both slices lie inside the mapped data area.
        unsafe {
            let data = self.base.add(self.data_offset);
            out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
            out.extend_from_slice(std::slice::from_raw_parts(data, len - first));
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping the ring mapped in `map`, once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// CPUs listed in /sys/devices/system/cpu/online ("0-3,8"), or those sysconf counts.
fn online_cpus() -> Vec<usize> {
    let listed: Vec<usize> = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap_or_default()
        .trim()
        .split(',')
        .filter_map(|part| match part.split_once('-') {
            Some((a, b)) => Some(a.parse().ok()?..=b.parse().ok()?),
            None => part.parse().ok().map(|a| a..=a),
        })
        .flatten()
        .collect();
    if !listed.is_empty() {
        return listed;
    }
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (0..n.max(1) as usize).collect()
}

const SW_CPU_CLOCK: u64 = 0;

/// The kernel's limit on samples per second (it lowers it itself when sampling takes too long).
pub fn max_sample_rate() -> u64 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(SAMPLE_HZ)
}

/// Why the kernel refused, and what to do about it.
fn refusal(errno: i32, source: SamplingSource) -> String {
    let paranoid = super::paranoid().map_or_else(|| "unreadable".into(), |p| p.to_string());
    match errno {
        libc::EACCES | libc::EPERM => format!(
            "the kernel refused to sample ({}) on {}: kernel call chains need root, CAP_PERFMON \
             or kernel.perf_event_paranoid at 1 or below (it is {paranoid}); in a container the \
             runtime's seccomp profile may refuse perf_event_open too",
            sys::errno_name(errno),
            source.name()
        ),
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => format!(
            "{} cannot be sampled here ({}): this kernel or VM offers no such event",
            source.name(),
            sys::errno_name(errno)
        ),
        libc::ENOSYS => "this kernel has no perf_event support (ENOSYS)".to_string(),
        _ => format!(
            "the kernel refused to sample on {} ({})",
            source.name(),
            sys::errno_name(errno)
        ),
    }
}

#[cfg(test)]
#[path = "sampling_tests.rs"]
mod tests;

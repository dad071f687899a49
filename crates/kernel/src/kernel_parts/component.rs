//! Kernel components for profiles: a function's component comes first from the few names that the
//! usual root causes of a slowdown own (mitigation thunks, seccomp and LSM hooks, netfilter, locks,
//! tracing and BPF), then from memsim's category of the same name, mapped coarser.

use super::category::{classify, Category};
use super::symbols::base_name;
use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Component {
    /// System call and exception entry, dispatch and exit.
    EntryExit,
    /// Speculative-execution mitigations: return and indirect-branch thunks, buffer clearing, IBPB.
    Mitigations,
    /// seccomp, LSM hooks, audit, capability checks.
    Security,
    /// VFS, path walk, page cache, file systems, block I/O, pipes and poll.
    Vfs,
    /// Pages, slabs, mappings, page tables, TLB, page faults.
    Memory,
    /// Block copies and copies to and from user space.
    Copy,
    Scheduler,
    /// fork, exec, exit, signals.
    Process,
    Network,
    /// Packet filtering: nftables and iptables rule evaluation, conntrack, NAT, the netfilter hooks.
    Netfilter,
    /// Spinlocks, mutexes, rwsems, RCU read sides.
    Locking,
    /// Hard and soft interrupts, timers, IPIs.
    Interrupts,
    /// Tracepoints, ftrace, kprobes, perf, BPF programs.
    Tracing,
    Idle,
    Other,
}

impl Component {
    pub const ALL: [Component; 15] = [
        Component::EntryExit,
        Component::Mitigations,
        Component::Security,
        Component::Vfs,
        Component::Memory,
        Component::Copy,
        Component::Scheduler,
        Component::Process,
        Component::Network,
        Component::Netfilter,
        Component::Locking,
        Component::Interrupts,
        Component::Tracing,
        Component::Idle,
        Component::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Component::EntryExit => "entry-exit",
            Component::Mitigations => "mitigations",
            Component::Security => "security",
            Component::Vfs => "vfs",
            Component::Memory => "memory",
            Component::Copy => "copy",
            Component::Scheduler => "scheduler",
            Component::Process => "process",
            Component::Network => "network",
            Component::Netfilter => "netfilter",
            Component::Locking => "locking",
            Component::Interrupts => "interrupts",
            Component::Tracing => "tracing",
            Component::Idle => "idle",
            Component::Other => "other",
        }
    }

    /// The coarser view of a memsim category. A kernel address no symbol covers has no component
    /// of its own: profiles give it its caller's.
    pub fn of_category(c: Category) -> Component {
        match c {
            Category::Syscall => Component::EntryExit,
            Category::Exception | Category::Memory => Component::Memory,
            Category::Block => Component::Copy,
            Category::Sched => Component::Scheduler,
            Category::Process => Component::Process,
            Category::Fs => Component::Vfs,
            Category::Net => Component::Network,
            Category::Irq => Component::Interrupts,
            Category::Idle => Component::Idle,
            Category::Other | Category::NoSymbol => Component::Other,
        }
    }
}

/// Prefixes owned by a component before memsim's rules are asked, first match wins (memsim counts
/// netfilter as networking; profiles name it apart). The entry code
/// switches CR3 for PTI inline (no symbol of its own), so PTI's cost shows in entry-exit.
const OWNED: &[(Component, &[&str])] = &[
    (
        Component::Mitigations,
        &[
            "__x86_return_thunk",
            "__x86_indirect_thunk",
            "__x86_indirect_call_thunk",
            "__x86_indirect_jump_thunk",
            "__x86_indirect_its_thunk",
            "__x86_return_skl",
            "call_depth_return_thunk",
            "its_return_thunk",
            "retbleed_",
            "srso_",
            "entry_untrain_ret",
            "zen_untrain_ret",
            "entry_ibpb",
            "write_ibpb",
            "clear_bhb_loop",
            "mds_clear_cpu_buffers",
            "x86_clear_cpu_buffers",
            "spec_ctrl_",
            "x86_spec_ctrl",
            "indirect_thunk",
        ],
    ),
    (
        Component::Security,
        &[
            "__secure_computing",
            "__seccomp_",
            "seccomp_",
            "security_",
            "selinux_",
            "apparmor_",
            "aa_",
            "avc_",
            "bpf_lsm_",
            "landlock_",
            "tomoyo_",
            "smack_",
            "yama_",
            "ima_",
            "integrity_",
            "audit_",
            "__audit_",
            "cap_capable",
            "ns_capable",
            "capable",
            "cap_",
        ],
    ),
    (
        Component::Tracing,
        &[
            "bpf_",
            "__bpf_",
            "___bpf_",
            "trace_",
            "__trace_",
            "__traceiter_",
            "tracing_",
            "perf_",
            "__perf_",
            "ftrace_",
            "__ftrace_",
            "function_trace_call",
            "__fentry__",
            "kprobe_",
            "kretprobe_",
            "ring_buffer_",
            // The trace ring buffer's own steps (`rb_` alone is the red-black tree's).
            "rb_reserve_next_event",
            "__rb_reserve_next",
            "rb_commit",
            "rb_end_commit",
            "rb_move_tail",
            "rb_wakeups",
            "rb_time_",
            "rb_update_write_stamp",
            "rb_try_to_discard",
            "rb_set_commit_to_write",
            "rb_add_timestamp",
            "rb_event_",
            "syscall_trace_",
        ],
    ),
    (
        // A firewall's cost is a root cause of its own: the rest of the network stack is not.
        Component::Netfilter,
        &[
            "nf_",
            "__nf_",
            "nft_",
            "__nft_",
            "ipt_do_table",
            "ip6t_do_table",
            "arpt_do_table",
            "ebt_do_table",
            "xt_",
            "ipv4_conntrack",
            "ipv6_conntrack",
            "iptable_",
            "ip6table_",
        ],
    ),
    (
        Component::Locking,
        &[
            "_raw_spin",
            "_raw_read",
            "_raw_write",
            "raw_spin_",
            "queued_spin",
            "queued_read",
            "queued_write",
            "native_queued_spin",
            "__pv_queued_spin",
            "mutex_",
            "__mutex_",
            "down_read",
            "down_write",
            "up_read",
            "up_write",
            "rwsem_",
            "osq_",
            "__rcu_read_",
            "rcu_read_",
        ],
    ),
];

/// The component of a kernel function, by name (compiler suffixes ignored).
pub fn component_of(name: &str) -> Component {
    let base = base_name(name);
    OWNED
        .iter()
        .find(|(_, prefixes)| prefixes.iter().any(|p| base.starts_with(p)))
        .map_or_else(|| Component::of_category(classify(base)), |(c, _)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usual_root_causes_are_named_apart() {
        let cases = [
            ("__seccomp_filter", Component::Security),
            ("__secure_computing", Component::Security),
            ("security_file_permission", Component::Security),
            ("__audit_syscall_exit", Component::Security),
            ("__x86_return_thunk", Component::Mitigations),
            ("__x86_indirect_thunk_rax", Component::Mitigations),
            ("clear_bhb_loop", Component::Mitigations),
            ("_raw_spin_lock_irqsave", Component::Locking),
            ("mutex_lock", Component::Locking),
            ("__traceiter_sys_enter", Component::Tracing),
            ("function_trace_call", Component::Tracing),
            ("bpf_prog_run_pin_on_cpu", Component::Tracing),
            ("ftrace_syscall_enter", Component::Tracing),
            ("rb_reserve_next_event", Component::Tracing),
            ("nft_do_chain", Component::Netfilter),
            ("nf_hook_slow", Component::Netfilter),
            ("nft_immediate_eval", Component::Netfilter),
            ("ipt_do_table", Component::Netfilter),
            ("nf_conntrack_in", Component::Netfilter),
        ];
        for (name, want) in cases {
            assert_eq!(component_of(name), want, "{name}");
        }
        // The red-black tree shares the ring buffer's prefix, not its component.
        assert_ne!(component_of("rb_insert_color"), Component::Tracing);
    }

    #[test]
    fn memsim_categories_map_into_components() {
        let cases = [
            ("entry_SYSCALL_64", Component::EntryExit),
            ("do_syscall_64", Component::EntryExit),
            ("__x64_sys_getppid", Component::EntryExit),
            ("vfs_read", Component::Vfs),
            ("handle_mm_fault", Component::Memory),
            ("kmem_cache_alloc", Component::Memory),
            ("_copy_to_user", Component::Copy),
            ("schedule", Component::Scheduler),
            ("tcp_sendmsg", Component::Network),
            ("do_idle", Component::Idle),
            ("copy_process", Component::Process),
            ("vfs_read.cold", Component::Vfs),
        ];
        for (name, want) in cases {
            assert_eq!(component_of(name), want, "{name}");
        }
        for c in Category::ALL {
            assert!(Component::ALL.contains(&Component::of_category(c)));
        }
    }

    #[test]
    fn names_are_unique_and_serde_uses_them() {
        let mut names: Vec<_> = Component::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Component::ALL.len());
        for c in Component::ALL {
            assert_eq!(
                serde_json::to_string(&c).unwrap(),
                format!("\"{}\"", c.name())
            );
        }
    }
}

use super::*;
use crate::latency::trace::parse;

fn frames(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn an_interrupt_sample_names_what_it_cut_into() {
    // Taken by the tick while the kernel handled a page fault (as seen on this VM).
    let f = frames(&[
        "trace_event_raw_event_hrtimer_expire_entry",
        "__hrtimer_run_queues",
        "hrtimer_interrupt",
        "__sysvec_apic_timer_interrupt",
        "sysvec_apic_timer_interrupt",
        "asm_sysvec_apic_timer_interrupt",
        "clear_page_erms",
        "get_page_from_freelist",
        "exc_page_fault",
        "asm_exc_page_fault",
    ]);
    assert_eq!(leaf(&f), Leaf::Kernel(6));
    // The same interrupt arriving in user space: the stack ends at the entry.
    assert_eq!(leaf(&f[..6]), Leaf::User);
}

#[test]
fn a_switch_sample_names_where_the_cpu_was_given_up() {
    let preempted_in_kernel = frames(&[
        "trace_event_raw_event_sched_switch",
        "__schedule",
        "preempt_schedule_irq",
        "irqentry_exit",
        "asm_sysvec_apic_timer_interrupt",
        "copy_page_range",
        "dup_mm",
    ]);
    assert_eq!(leaf(&preempted_in_kernel), Leaf::Kernel(5));
    let yielded_at_a_resched_point = frames(&[
        "__schedule",
        "__cond_resched",
        "zap_pte_range",
        "unmap_page_range",
    ]);
    assert_eq!(leaf(&yielded_at_a_resched_point), Leaf::Kernel(2));
    let went_to_sleep = frames(&[
        "__schedule",
        "schedule",
        "schedule_hrtimeout_range",
        "do_epoll_wait",
        "__x64_sys_epoll_wait",
        "do_syscall_64",
        "entry_SYSCALL_64_after_hwframe",
    ]);
    assert_eq!(leaf(&went_to_sleep), Leaf::Kernel(3));
    // Preempted on the way back from a system call: it was returning to user space.
    let returning = frames(&[
        "trace_event_raw_event_sched_switch",
        "__traceiter_sched_switch",
        "__schedule",
        "schedule",
        "exit_to_user_mode_loop",
        "do_syscall_64",
        "entry_SYSCALL_64_after_hwframe",
    ]);
    assert_eq!(leaf(&returning), Leaf::User);
    assert_eq!(leaf(&[]), Leaf::Unknown);
}

/// A cause-capture window as tracefs prints it: events, their kernel stacks (from triggers) and
/// user stacks (from the userstacktrace option). The thread was due at 10.000100 and woke at
/// 10.009000 on CPU 1.
const WINDOW: &str = "\
# tracer: nop
            hog-200     [001] d.h1.    10.000050: hrtimer_expire_entry: hrtimer=0000 function=tick_nohz_handler now=1
            hog-200     [001] d.h1.    10.000051: <user stack trace>
 => /usr/bin/hog[+0x1139]
            hog-200     [001] d.h1.    10.000052: <stack trace>
 => trace_event_raw_event_hrtimer_expire_entry
 => __hrtimer_run_queues
 => hrtimer_interrupt
 => asm_sysvec_apic_timer_interrupt
            hog-200     [001] d.h1.    10.004000: hrtimer_expire_entry: hrtimer=0000 function=tick_nohz_handler now=2
            hog-200     [001] d.h1.    10.004001: <user stack trace>
 => /usr/bin/hog[+0x1139]
            hog-200     [001] d.h1.    10.004002: <stack trace>
 => trace_event_raw_event_hrtimer_expire_entry
 => __hrtimer_run_queues
 => asm_sysvec_apic_timer_interrupt
            hog-200     [001] d.h1.    10.006000: irq_handler_entry: irq=11 name=virtio0
            hog-200     [001] d.h1.    10.006002: <stack trace>
 => trace_event_raw_event_irq_handler_entry
 => __handle_irq_event_percpu
 => asm_common_interrupt
 => clear_page_erms
 => do_anonymous_page
            other-300   [000] d.h1.    10.006500: irq_handler_entry: irq=12 name=eth0
            other-300   [000] d.h1.    10.006501: <stack trace>
 => trace_event_raw_event_irq_handler_entry
 => asm_common_interrupt
 => memcpy_orig
            hog-200     [001] d..2.    10.008990: sched_switch: prev_comm=hog prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=lat-normal-timer next_pid=100 next_prio=120
            hog-200     [001] d..2.    10.008995: <stack trace>
 => trace_event_raw_event_sched_switch
 => __schedule
 => preempt_schedule_irq
 => irqentry_exit
 => asm_sysvec_apic_timer_interrupt
 => clear_page_erms
 => do_anonymous_page
 => __handle_mm_fault
";

#[test]
fn samples_in_the_window_carry_their_stacks() {
    let events = parse(WINDOW);
    assert_eq!(events[1].name, "<user stack trace>");
    assert_eq!(events[1].frames, ["/usr/bin/hog[+0x1139]"]);
    let samples = samples_in(&events, 1, 10_000_100_000, 10_009_000_000);
    // The first tick is before the deadline; CPU 0's interrupt is another CPU's.
    assert_eq!(samples.len(), 3, "{samples:#?}");
    assert_eq!(samples[0].function, "[user] hog (hog)");
    assert_eq!(samples[0].user_stack, ["/usr/bin/hog[+0x1139]"]);
    assert_eq!(samples[0].offset_ns, 3_900_000);
    assert_eq!(samples[1].event, "irq_handler_entry");
    assert_eq!(samples[1].function, "clear_page_erms");
    assert_eq!(
        samples[1].kernel_stack,
        ["clear_page_erms", "do_anonymous_page"]
    );
    assert_eq!(samples[2].event, "sched_switch");
    assert_eq!(samples[2].task, "hog");
    assert_eq!(samples[2].function, "clear_page_erms");
}

#[test]
fn causes_are_counted_by_function_across_episodes() {
    let events = parse(WINDOW);
    let a = samples_in(&events, 1, 10_000_100_000, 10_009_000_000);
    let b = samples_in(&events, 1, 10_005_000_000, 10_007_000_000);
    let causes = aggregate([a.as_slice(), b.as_slice()]);
    assert_eq!(causes[0].function, "clear_page_erms");
    assert_eq!(causes[0].samples, 3);
    assert_eq!(causes[0].episodes, 2);
    assert_eq!(causes[0].tasks, ["hog"]);
    assert!((causes[0].share - 0.75).abs() < 1e-9);
    assert_eq!(causes[1].samples, 1);
    let text = render(&causes, 2, 5);
    assert!(text.contains("4 stack samples in 2 episode(s)"), "{text}");
    assert!(text.contains("clear_page_erms"));
    assert!(text.contains("called from do_anonymous_page"));
    assert!(render(&[], 3, 5).contains("no stack samples in the 3 episode(s)"));
}

#[test]
fn task_names_lose_their_pid_only() {
    assert_eq!(task_name("hog-200"), "hog");
    assert_eq!(task_name("kworker/1:1-events-42"), "kworker/1:1-events");
    assert_eq!(task_name("<idle>-0"), "<idle>");
    assert_eq!(task_name("plain"), "plain");
}

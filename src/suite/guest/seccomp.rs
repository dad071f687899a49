//! A seccomp filter for the guest's probes, asked for on the kernel command line
//! (`--append osmeter.seccomp=RULES`): the cost a container runtime's profile adds to every
//! system call, counted exactly. The filter checks the architecture, loads the call's first
//! argument and compares it with RULES values no probe passes, then allows the call, so every
//! call runs RULES + 5 filter instructions (reading an argument keeps the kernel from caching the
//! verdict per call number, as it does since Linux 5.11). `SECCOMP_FILTER_FLAG_SPEC_ALLOW` keeps
//! the kernel from also turning on the speculative store bypass mitigation, so only the filter is
//! counted. As `--append` sets, several lengths boot side by side in one command.

use anyhow::{bail, Result};

/// The kernel parameter that asks for the filter (the kernel ignores a dotted parameter of a
/// module it does not have).
pub const PARAMETER: &str = "osmeter.seccomp";

/// More comparisons than a classic BPF program may hold (4096 instructions) are refused.
pub const MOST_RULES: u32 = 4000;

/// The rules asked for on a kernel command line: None without the parameter.
pub fn rules_in(cmdline: &str) -> Result<Option<u32>> {
    let mut found = None;
    for word in cmdline.split_whitespace() {
        let Some(v) = word
            .strip_prefix(PARAMETER)
            .and_then(|r| r.strip_prefix('='))
        else {
            continue;
        };
        match v.parse::<u32>() {
            Ok(n) if n <= MOST_RULES => found = Some(n),
            _ => bail!(
                "{PARAMETER}={v}: give the number of comparisons in the filter, 0 to {MOST_RULES}"
            ),
        }
    }
    Ok(found)
}

fn statement(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The filter's program (architecture check, argument load, `rules` failing comparisons, allow).
pub fn program(rules: u32) -> Vec<libc::sock_filter> {
    // struct seccomp_data: nr at 0, arch at 4, instruction pointer at 8, args from 16.
    const ARCH: u32 = 4;
    const FIRST_ARG: u32 = 16;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    let mut p = vec![
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, ARCH),
        jump(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            AUDIT_ARCH_X86_64,
            1,
            0,
        ),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, FIRST_ARG),
    ];
    for r in 0..rules {
        p.push(jump(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0xfeed_0000 + r,
            0,
            0,
        ));
    }
    p.push(statement(
        libc::BPF_RET | libc::BPF_K,
        libc::SECCOMP_RET_ALLOW,
    ));
    p
}

/// Puts this process, and every process it starts, under a filter of `rules` comparisons.
/// Irreversible.
pub fn install(rules: u32) -> Result<()> {
    install_program(&program(rules)).map_err(|e| {
        anyhow::anyhow!("the guest kernel refused the seccomp filter of {rules} rules: {e}")
    })
}

/// Installs `prog` (built beforehand: nothing here allocates but the error).
fn install_program(prog: &[libc::sock_filter]) -> std::io::Result<()> {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: plain prctl; no pointers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fprog points at `prog`, alive across the call; the kernel copies the program.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW,
            &fprog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_is_read_from_the_command_line_and_checked() {
        assert_eq!(rules_in("console=ttyS0 quiet").unwrap(), None);
        assert_eq!(rules_in("quiet osmeter.seccomp=64 x=1").unwrap(), Some(64));
        assert_eq!(rules_in("osmeter.seccomp=0").unwrap(), Some(0));
        // A later one wins, as for the kernel's own parameters.
        assert_eq!(
            rules_in("osmeter.seccomp=1 osmeter.seccomp=2").unwrap(),
            Some(2)
        );
        assert_eq!(rules_in("osmeter.seccompx=3").unwrap(), None);
        for bad in [
            "osmeter.seccomp=",
            "osmeter.seccomp=-1",
            "osmeter.seccomp=5000",
        ] {
            let err = rules_in(bad).unwrap_err().to_string();
            assert!(err.contains("0 to 4000"), "{err}");
        }
    }

    #[test]
    fn the_program_grows_by_one_comparison_per_rule() {
        assert_eq!(program(0).len(), 5);
        assert_eq!(program(64).len(), 69);
        let p = program(2);
        assert_eq!(p[4].k, 0xfeed_0000);
        assert_eq!(p[5].k, 0xfeed_0001);
        assert_eq!(p.last().unwrap().k, libc::SECCOMP_RET_ALLOW);
    }

    /// In a child, so that the test process stays unfiltered: the filter is installed and a
    /// system call still works under it.
    #[test]
    fn the_filter_installs_and_allows_every_call() {
        let prog = program(16);
        // SAFETY: the child only makes system calls (nothing that allocates) and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = install_program(&prog).is_ok() && unsafe { libc::getppid() } > 0;
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}

//! Measuring a child process: its exit status and its own resource usage (peak RSS).

/// Wait for `pid` and return its exit status and its own resource usage.
pub fn wait4(pid: u32) -> (i32, libc::rusage) {
    let mut status = 0;
    // SAFETY: `rusage` is plain old data that wait4 fills in; `pid` is our own unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid as libc::pid_t, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    (code, usage)
}

//! Measuring a child process: its exit status and its own resource usage (peak RSS, CPU time).

use std::time::Duration;

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

/// The CPU time the child used: user plus system time (`ru_utime + ru_stime`). On Linux this
/// also counts any children it waited for itself.
pub fn cpu_time(usage: &libc::rusage) -> Duration {
    let (user, system) = user_and_system(usage);
    user + system
}

/// The child's user and system time apart, in that order.
pub fn user_and_system(usage: &libc::rusage) -> (Duration, Duration) {
    let of = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    (of(usage.ru_utime), of(usage.ru_stime))
}

/// Peak resident set size in KiB (`ru_maxrss` is in KiB on Linux).
pub fn peak_rss_kib(usage: &libc::rusage) -> u64 {
    usage.ru_maxrss as u64
}

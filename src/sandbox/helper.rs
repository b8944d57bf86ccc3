//! The sandbox helper: `agentloop-sandbox [--policy JSON] -- PROGRAM ARGS…` (or, where that
//! program is not installed beside agentloop, `agentloop __sandbox-exec …`), the process
//! agentloop starts for every command (a Bash call, a hook, a background shell).
//!
//! It becomes a child subreaper, forks, and in the child applies the policy — read-only
//! bind mounts of the protected paths (`super::mounts`), dropped capabilities
//! (`super::caps`), Landlock (`super::landlock`),
//! the seccomp filter (`super::seccomp`), `no_new_privs` — then executes the program. It
//! never runs the program when a step fails: the command gets exit code 126 and one line on
//! stderr. Without `--policy` the command runs unconfined, but still under the reaper.
//!
//! The parent waits. Every process the command starts is its descendant or, orphaned, is
//! re-parented to it, whatever it does (`cmd &`, `nohup`, `setsid -f`, a double fork). When
//! the program exits, or the helper gets SIGTERM, SIGINT, SIGHUP or SIGQUIT (a timeout, an
//! interrupt, the end of the run), it kills every one of them and waits until none is left;
//! then it exits as the program did. So nothing a call started outlives the call.
//!
//! It runs before agentloop starts any thread (`main` dispatches to it first), so the child
//! may allocate between `fork` and `exec`.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;

use super::policy::Policy;

/// The hidden subcommand that runs the helper.
pub const SUBCOMMAND: &str = "__sandbox-exec";

/// The helper as a program of its own (`src/bin/agentloop-sandbox.rs`), installed beside
/// `agentloop`: the same code, without the rest of agentloop to load at each start.
pub const PROGRAM: &str = "agentloop-sandbox";

/// Exit code when the sandbox could not be applied (the program never ran).
pub const EXIT_SANDBOX_FAILED: i32 = 126;
/// The signals that tell the helper to stop the command and everything it started.
const STOP_SIGNALS: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

/// Exit code when the program could not be executed.
pub const EXIT_NOT_EXECUTED: i32 = 127;

/// What the helper was asked to do.
#[derive(Debug, PartialEq)]
struct Request {
    policy: Option<Policy>,
    argv: Vec<OsString>,
}

/// What is wrong with the helper's arguments.
#[derive(Debug, thiserror::Error)]
enum RequestError {
    /// `--policy` last.
    #[error("--policy needs a value")]
    PolicyMissing,
    /// A `--policy` that is not UTF-8.
    #[error("--policy is not UTF-8")]
    PolicyNotUtf8,
    /// A `--policy` that is not a policy.
    #[error("bad --policy: {0}")]
    BadPolicy(serde_json::Error),
    /// Another argument before `--` (`None` when it is not UTF-8).
    #[error("unexpected argument {0:?}")]
    Unexpected(Option<String>),
    /// Nothing to run.
    #[error("no program after --")]
    NoProgram,
}

/// Why the policy could not be applied (the program is not run).
#[derive(Debug, thiserror::Error)]
enum ConfineError {
    /// The dangerous capabilities could not be dropped.
    #[error(transparent)]
    Caps(#[from] super::caps::CapsError),
    /// Landlock refused the rules.
    #[error(transparent)]
    Landlock(#[from] super::landlock::LandlockError),
    /// `PR_SET_NO_NEW_PRIVS` failed.
    #[error("no_new_privs: {0}")]
    NoNewPrivs(std::io::Error),
    /// The seccomp filter could not be installed.
    #[error(transparent)]
    Seccomp(#[from] super::seccomp::SeccompError),
}

/// Read the helper's arguments (those after the subcommand).
fn parse(args: &[OsString]) -> Result<Request, RequestError> {
    let mut policy = None;
    let mut rest = args.iter();
    loop {
        match rest.next().map(|a| a.to_str()) {
            Some(Some("--policy")) => {
                let json = rest.next().ok_or(RequestError::PolicyMissing)?;
                let json = json.to_str().ok_or(RequestError::PolicyNotUtf8)?;
                policy = Some(serde_json::from_str(json).map_err(RequestError::BadPolicy)?);
            }
            Some(Some("--")) => break,
            Some(other) => return Err(RequestError::Unexpected(other.map(str::to_owned))),
            None => return Err(RequestError::NoProgram),
        }
    }
    let argv: Vec<OsString> = rest.cloned().collect();
    if argv.is_empty() {
        return Err(RequestError::NoProgram);
    }
    Ok(Request { policy, argv })
}

/// Run the helper with `args` (those after [`SUBCOMMAND`]); returns the exit code when it
/// does not end by re-raising the program's signal.
pub fn main(args: &[OsString]) -> i32 {
    let request = match parse(args) {
        Ok(request) => request,
        Err(e) => {
            eprintln!("agentloop {SUBCOMMAND}: {e}");
            return EXIT_SANDBOX_FAILED;
        }
    };
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let watched = signal_set(&[[libc::SIGCHLD].as_slice(), &STOP_SIGNALS].concat());
    let mut previous = empty_set();
    // SAFETY: both sets are initialised sigset_t values.
    unsafe {
        libc::sigprocmask(libc::SIG_BLOCK, &raw const watched, &raw mut previous);
    }
    let child = spawn_child(&Start { request: &request, previous });
    if child < 0 {
        eprintln!("agentloop {SUBCOMMAND}: clone: {}", std::io::Error::last_os_error());
        return EXIT_SANDBOX_FAILED;
    }
    let ending = wait_for(child, &watched);
    let leftovers = kill_descendants();
    match ending {
        Ending::Exited(code) => {
            if leftovers > 0 {
                eprintln!(
                    "agentloop: stopped {leftovers} process{} the command left running when it ended \
                     (use run_in_background for servers)",
                    if leftovers == 1 { "" } else { "es" }
                );
            }
            code
        }
        Ending::Signalled(signal) => reraise(signal),
        Ending::Stopped(signal) => 128 + signal,
    }
}

/// What the child starts from.
struct Start<'a> {
    request: &'a Request,
    /// The signal mask the helper was started with, restored in the child.
    previous: libc::sigset_t,
}

/// Bytes of the child's own stack until it executes the program.
const CHILD_STACK: usize = 1 << 20;

/// Start the child as `vfork` does — sharing this process's memory, this process suspended
/// until the child executes the program or exits — but on a stack of its own, so it can run
/// the confinement code without a copy of the address space. Returns its pid, or -1.
fn spawn_child(start: &Start<'_>) -> libc::pid_t {
    extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Start` that `spawn_child` keeps alive until this child has
        // executed the program or exited (CLONE_VFORK suspends it until then).
        let start = unsafe { &*arg.cast::<Start<'_>>() };
        // SAFETY: restores the mask the helper was started with, in this child only.
        unsafe {
            libc::sigprocmask(libc::SIG_SETMASK, &raw const start.previous, std::ptr::null_mut());
        }
        exec_confined(start.request)
    }
    let mut stack = vec![0u8; CHILD_STACK];
    // SAFETY: the stack grows down from its end, 16-byte aligned; the child runs on it while
    // this process is suspended (CLONE_VFORK), and this process has one thread, so nothing
    // else touches the shared memory meanwhile. The child changes only its own signal mask,
    // credentials, namespaces and filters, which are per task.
    unsafe {
        let top = stack.as_mut_ptr().add(CHILD_STACK);
        let top = top.sub(top as usize % 16);
        libc::clone(
            child_main,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_ref(start).cast_mut().cast(),
        )
    }
}

/// How the helper's wait ended.
enum Ending {
    /// The program exited with this code.
    Exited(i32),
    /// A signal killed the program.
    Signalled(i32),
    /// The helper was told to stop by this signal.
    Stopped(i32),
}

/// Wait for `child` to end or for a stop signal, reaping orphans meanwhile.
fn wait_for(child: libc::pid_t, watched: &libc::sigset_t) -> Ending {
    loop {
        loop {
            let mut status = 0;
            // SAFETY: status is a valid out-pointer.
            let pid = unsafe { libc::waitpid(-1, &raw mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            if pid == child {
                if libc::WIFEXITED(status) {
                    return Ending::Exited(libc::WEXITSTATUS(status));
                }
                if libc::WIFSIGNALED(status) {
                    return Ending::Signalled(libc::WTERMSIG(status));
                }
            }
        }
        // SAFETY: watched is an initialised set; no siginfo is asked for.
        let signal = unsafe { libc::sigwaitinfo(watched, std::ptr::null_mut()) };
        if STOP_SIGNALS.contains(&signal) {
            return Ending::Stopped(signal);
        }
    }
}

/// In the child: apply the policy, then execute the program; never returns.
fn exec_confined(request: &Request) -> ! {
    if let Some(policy) = &request.policy
        && let Err(e) = confine(policy)
    {
        eprintln!("agentloop: sandbox: {e}; the command was not run");
        // SAFETY: _exit ends the child without running the parent's destructors.
        unsafe { libc::_exit(EXIT_SANDBOX_FAILED) }
    }
    let argv: Vec<CString> =
        request.argv.iter().map(|a| CString::new(a.as_bytes()).unwrap_or_else(|_| CString::from(c"?"))).collect();
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    // SAFETY: argv is a null-terminated array of valid C strings that outlive the call.
    unsafe {
        libc::execvp(pointers[0], pointers.as_ptr());
    }
    eprintln!("agentloop: cannot run {}: {}", request.argv[0].to_string_lossy(), std::io::Error::last_os_error());
    // SAFETY: as above.
    unsafe { libc::_exit(EXIT_NOT_EXECUTED) }
}

/// Apply `policy` to this process: mounts, Landlock, `no_new_privs`, seccomp.
fn confine(policy: &Policy) -> Result<(), ConfineError> {
    let mounted = super::mounts::protect(&policy.read_only).is_ok();
    super::caps::drop_dangerous()?;
    super::landlock::restrict(policy, !mounted)?;
    // SAFETY: prctl with integer arguments (Landlock has set it already; this is explicit).
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(ConfineError::NoNewPrivs(std::io::Error::last_os_error()));
    }
    Ok(super::seccomp::install(policy.network)?)
}

/// SIGKILL every descendant until none is left (orphans come back to this subreaper, so
/// the loop ends when `waitpid` finds no child); returns how many were killed.
fn kill_descendants() -> usize {
    let mut killed = std::collections::BTreeSet::new();
    loop {
        for pid in descendants() {
            // SAFETY: kill with a positive pid of our own descendant.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            killed.insert(pid);
        }
        let mut status = 0;
        // SAFETY: status is a valid out-pointer.
        let reaped = unsafe { libc::waitpid(-1, &raw mut status, libc::WNOHANG) };
        if reaped < 0 {
            // ECHILD: nothing left.
            return killed.len();
        }
        if reaped == 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// Every live descendant of this process, parents before children.
fn descendants() -> Vec<libc::pid_t> {
    let mut found = Vec::new();
    let mut queue = vec![std::process::id() as libc::pid_t];
    while let Some(pid) = queue.pop() {
        for child in children_of(pid) {
            found.push(child);
            queue.push(child);
        }
    }
    found
}

/// The children of every thread of `pid` (`/proc/PID/task/*/children`).
fn children_of(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let mut children = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            children.extend(text.split_whitespace().filter_map(|p| p.parse::<libc::pid_t>().ok()));
        }
    }
    children
}

/// End this process by `signal` as the program ended, without a core dump.
fn reraise(signal: i32) -> i32 {
    // SAFETY: plain calls on this process: no core file, default action, unblock, raise.
    unsafe {
        let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &raw const none);
        libc::signal(signal, libc::SIG_DFL);
        let set = signal_set(&[signal]);
        libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
        libc::raise(signal);
    }
    128 + signal
}

fn empty_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the zeroed set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        set
    }
}

fn signal_set(signals: &[i32]) -> libc::sigset_t {
    let mut set = empty_set();
    for &signal in signals {
        // SAFETY: set is initialised.
        unsafe {
            libc::sigaddset(&raw mut set, signal);
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_a_policy_and_the_program() {
        let policy = Policy::read_only(std::path::Path::new("/w"), &[], Vec::new());
        let json = serde_json::to_string(&policy).unwrap();
        let request = parse(&os(&["--policy", &json, "--", "bash", "-c", "ls"])).unwrap();
        assert_eq!(request, Request { policy: Some(policy), argv: os(&["bash", "-c", "ls"]) });
        assert_eq!(parse(&os(&["--", "true"])).unwrap().policy, None);
    }

    #[test]
    fn refuses_a_missing_program_or_a_bad_policy() {
        assert_eq!(parse(&os(&["--"])).unwrap_err().to_string(), "no program after --");
        assert!(parse(&os(&["--policy", "{", "--", "x"])).unwrap_err().to_string().starts_with("bad --policy: "));
        assert_eq!(parse(&os(&["-x"])).unwrap_err().to_string(), r#"unexpected argument Some("-x")"#);
    }
}

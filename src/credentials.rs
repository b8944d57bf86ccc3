//! The model credentials and the other secret-looking variables of agentloop's own
//! environment, held in this process's memory and taken out of its environment.
//!
//! Bash commands, hooks and MCP servers start without them (`crate::tools::shell_env`), but
//! a child could still read them from agentloop itself: `/proc/<agentloop pid>/environ` shows
//! the environment block the process was started with, whatever the process later removed
//! from its environment (`cat /proc/$PPID/environ` in a Bash call). So `main` calls [`seal`]
//! first thing, while the process has one thread:
//!
//! 1. every variable the shell environment removes by default (`is_secret`: the model
//!    credentials `ANTHROPIC_API_KEY` and `ANTHROPIC_AUTH_TOKEN`, and every name containing
//!    `KEY`, `SECRET`, `TOKEN`, `PASSWORD`, `PASSWD` or `CREDENTIAL`) is copied into this
//!    module's store;
//! 2. its value is overwritten with NUL bytes where it lies, in the environment block itself,
//!    so `/proc/<pid>/environ` reads `ANTHROPIC_API_KEY=` and nothing after it;
//! 3. it is removed from the process environment, so nothing started with agentloop's
//!    environment (a re-exec of agentloop, a hidden subcommand, a program spawned without an
//!    explicit environment) inherits it;
//! 4. the process is made non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): its `/proc/<pid>`
//!    files then belong to root, and reading `environ` or `mem`, `ptrace(2)` and
//!    `process_vm_readv(2)` need `CAP_SYS_PTRACE`, so a process of the same user (a Bash
//!    command, a hook, an MCP server) cannot read the values out of agentloop's memory, and
//!    no core dump of it holds them. Root is not stopped by this, which is why 2 is needed.
//!    A program agentloop starts is dumpable again once it `exec`s.
//!
//! Everything in agentloop that reads these variables reads them here (`var`,
//! `vars_os`): the model client's credentials, the environment Bash and hooks start from
//! (which gives back what `shellEnvironment.keep` names), the variables an MCP configuration
//! expands, and what a user's stdio MCP server inherits. Until [`seal`] is called (agentloop
//! used as a library, unit tests) they read the process environment, as before.
//!
//! What remains: the values are in the process's memory, where the model client needs them,
//! so root (or anyone with `CAP_SYS_PTRACE`) can still read them from `/proc/<pid>/mem`.
//! `/proc/<pid>/cmdline` never held them: no flag takes a credential.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;
use std::sync::OnceLock;

use crate::tools::shell_env;

/// The variables [`seal`] took, in the order of the environment, the first of each name.
static SEALED: OnceLock<Vec<(OsString, OsString)>> = OnceLock::new();

/// Whether [`seal`] takes the variable `name`: what the shell environment removes when the
/// settings keep nothing ([`shell_env::is_removed`]).
pub(crate) fn is_secret(name: &OsStr) -> bool {
    shell_env::is_removed(name, &[])
}

/// Take the secret variables out of the process environment and make the process
/// non-dumpable (the steps in the module documentation). The first call does it; later calls
/// do nothing. Returns how many variables were taken.
///
/// # Safety
/// No other thread may exist: the environment block and the environment are changed in
/// place, which races with any other thread reading or changing the environment (the
/// contract of [`std::env::remove_var`]). `main` calls it before it parses the command line
/// or starts the async runtime.
pub unsafe fn seal() -> usize {
    if SEALED.get().is_some() {
        return 0;
    }
    let taken = {
        // SAFETY: the caller guarantees this is the only thread, so nothing else reads or
        // changes the environment while these slices into it live.
        let mut entries = unsafe { block::entries() };
        take(&mut entries)
    };
    for (name, _) in &taken {
        // SAFETY: the only thread, as above. The name came out of the environment, so it is
        // not empty and holds no `=` or NUL.
        unsafe { std::env::remove_var(name) };
    }
    let count = taken.len();
    let _ = SEALED.set(taken);
    block::forbid_dumps();
    count
}

/// The variable `name` of agentloop's environment as it was at startup: the sealed value of
/// a secret, the process environment's for anything else (and for everything before
/// [`seal`]). `None` when unset or not UTF-8, like `std::env::var(name).ok()`.
pub(crate) fn var(name: &str) -> Option<String> {
    var_os(name)?.into_string().ok()
}

/// [`var`] as an `OsString`.
pub(crate) fn var_os(name: &str) -> Option<OsString> {
    let sealed = SEALED.get().map_or(&[][..], Vec::as_slice);
    lookup(sealed, OsStr::new(name)).or_else(|| std::env::var_os(name))
}

/// agentloop's environment as it was at startup: the process environment, then the sealed
/// variables.
pub(crate) fn vars_os() -> Vec<(OsString, OsString)> {
    let sealed = SEALED.get().map_or(&[][..], Vec::as_slice);
    merged(sealed, std::env::vars_os())
}

/// The value of `name` among `sealed`.
fn lookup(sealed: &[(OsString, OsString)], name: &OsStr) -> Option<OsString> {
    sealed.iter().find(|(n, _)| n == name).map(|(_, value)| value.clone())
}

/// `current` (less any name of `sealed`, whose sealed value wins), then `sealed`.
fn merged(
    sealed: &[(OsString, OsString)],
    current: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut vars: Vec<_> = current.into_iter().filter(|(name, _)| lookup(sealed, name).is_none()).collect();
    vars.extend(sealed.iter().cloned());
    vars
}

/// Take the values of the secret variables out of `entries`, each one `NAME=VALUE` as the
/// environment block holds it: every secret value is overwritten with NUL bytes where it
/// lies (the entry then reads `NAME=`), and the variables are returned, the first of each
/// name (the one `getenv` finds). Entries without `=` are left alone.
fn take(entries: &mut [&mut [u8]]) -> Vec<(OsString, OsString)> {
    let mut taken: Vec<(OsString, OsString)> = Vec::new();
    for entry in entries.iter_mut() {
        let Some(eq) = entry.iter().position(|&b| b == b'=') else { continue };
        let (name, rest) = entry.split_at_mut(eq);
        let name = OsStr::from_bytes(name);
        if !is_secret(name) {
            continue;
        }
        let value = &mut rest[1..];
        if lookup(&taken, name).is_none() {
            taken.push((name.to_owned(), OsStr::from_bytes(value).to_owned()));
        }
        wipe(value);
    }
    taken
}

/// Overwrite `bytes` with zeros.
fn wipe(bytes: &mut [u8]) {
    for byte in bytes {
        // SAFETY: `byte` is a valid, aligned, exclusive reference. The write is volatile so
        // that it is not dropped as a store no Rust code reads back.
        unsafe { std::ptr::write_volatile(byte, 0) };
    }
}

/// The process's environment block and its dumpable flag: the only unsafe code here.
mod block {
    use std::collections::HashSet;

    use libc::c_char;

    unsafe extern "C" {
        /// The C library's environment: a NULL-terminated array of pointers to
        /// `NAME=VALUE` strings. At startup they point into the block the kernel copied onto
        /// the stack, which `/proc/<pid>/environ` shows.
        static mut environ: *mut *mut c_char;
    }

    /// The bytes of every entry of the environment, without their NUL terminators (each
    /// string once, should two entries point at the same one).
    ///
    /// # Safety
    /// No other thread may exist, and nothing may read or change the environment while the
    /// slices live.
    pub(super) unsafe fn entries() -> Vec<&'static mut [u8]> {
        let mut entries = Vec::new();
        let mut seen = HashSet::new();
        // SAFETY: reading the pointer value of `environ` (no reference to the static is
        // made); no other thread can change it.
        let mut at = unsafe { environ };
        if at.is_null() {
            return entries;
        }
        loop {
            // SAFETY: `at` points into the NULL-terminated array, at or before its NULL.
            let entry = unsafe { *at };
            if entry.is_null() {
                return entries;
            }
            if seen.insert(entry as usize) {
                // SAFETY: `entry` is a NUL-terminated string of the environment: the block
                // the kernel wrote (writable stack memory) or one `setenv` allocated. It
                // lives as long as the process and, with one thread and the environment left
                // alone meanwhile, nothing else uses it while the slice lives; each string is
                // taken once, so the slices do not alias.
                let bytes = unsafe { std::slice::from_raw_parts_mut(entry.cast::<u8>(), libc::strlen(entry)) };
                entries.push(bytes);
            }
            // SAFETY: `entry` was not the terminating NULL, so the next element exists.
            at = unsafe { at.add(1) };
        }
    }

    /// Make the process non-dumpable (see the module documentation); whether it worked.
    #[cfg(target_os = "linux")]
    pub(super) fn forbid_dumps() -> bool {
        // SAFETY: PR_SET_DUMPABLE takes an integer, no pointers, and changes only this
        // process's dumpable flag.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, libc::c_ulong::from(0_u8)) == 0 }
    }

    /// No dumpable flag to clear off Linux.
    #[cfg(not(target_os = "linux"))]
    pub(super) fn forbid_dumps() -> bool {
        false
    }
}

/// The credential the model client would use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Credential {
    /// `ANTHROPIC_API_KEY` (preferred when both are set).
    ApiKey,
    /// `ANTHROPIC_AUTH_TOKEN`.
    AuthToken,
    /// Neither.
    None,
}

impl Credential {
    /// The credential the variables `lookup` gives would select, as the model client
    /// chooses: a non-blank `ANTHROPIC_API_KEY`, else a non-blank `ANTHROPIC_AUTH_TOKEN`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Credential {
        let set = |name: &str| lookup(name).is_some_and(|v| !v.trim().is_empty());
        match (set("ANTHROPIC_API_KEY"), set("ANTHROPIC_AUTH_TOKEN")) {
            (true, _) => Credential::ApiKey,
            (false, true) => Credential::AuthToken,
            (false, false) => Credential::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter().map(|(n, v)| (OsString::from(n), OsString::from(v))).collect()
    }

    #[test]
    fn secret_values_are_taken_and_wiped_where_they_lie() {
        let mut block: Vec<Vec<u8>> = [
            "PATH=/bin",
            "ANTHROPIC_API_KEY=sk-ant-1",
            "GITHUB_TOKEN=gh",
            "NOEQUALS_TOKEN",
            "=x",
            "ANTHROPIC_API_KEY=second",
            "KEYLESS_PATH=",
            "LANG=C",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        let mut entries: Vec<&mut [u8]> = block.iter_mut().map(Vec::as_mut_slice).collect();
        let taken = take(&mut entries);
        assert_eq!(taken, pairs(&[("ANTHROPIC_API_KEY", "sk-ant-1"), ("GITHUB_TOKEN", "gh"), ("KEYLESS_PATH", "")]));
        let shown: Vec<&[u8]> = block.iter().map(Vec::as_slice).collect();
        assert_eq!(
            shown,
            [
                &b"PATH=/bin"[..],
                b"ANTHROPIC_API_KEY=\0\0\0\0\0\0\0\0",
                b"GITHUB_TOKEN=\0\0",
                b"NOEQUALS_TOKEN",
                b"=x",
                b"ANTHROPIC_API_KEY=\0\0\0\0\0\0",
                b"KEYLESS_PATH=",
                b"LANG=C",
            ]
        );
    }

    #[test]
    fn the_store_wins_over_the_process_environment_and_comes_last() {
        let sealed = pairs(&[("ANTHROPIC_API_KEY", "sk-sealed"), ("MY_TOKEN", "t")]);
        assert_eq!(lookup(&sealed, OsStr::new("ANTHROPIC_API_KEY")), Some(OsString::from("sk-sealed")));
        assert_eq!(lookup(&sealed, OsStr::new("PATH")), None);
        let current = pairs(&[("PATH", "/bin"), ("ANTHROPIC_API_KEY", "set-later"), ("LANG", "C")]);
        assert_eq!(
            merged(&sealed, current),
            pairs(&[("PATH", "/bin"), ("LANG", "C"), ("ANTHROPIC_API_KEY", "sk-sealed"), ("MY_TOKEN", "t")])
        );
    }

    #[test]
    fn the_secrets_are_those_the_shell_environment_removes() {
        for name in ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GITHUB_TOKEN", "DB_PASSWORD", "aws_secret"] {
            assert!(is_secret(OsStr::new(name)), "{name}");
        }
        for name in ["PATH", "HOME", "ANTHROPIC_BASE_URL", "AGENTLOOP_HOME"] {
            assert!(!is_secret(OsStr::new(name)), "{name}");
        }
    }

    /// Unsealed (as in this test binary), a lookup reads the process environment.
    #[test]
    fn unsealed_lookups_read_the_process_environment() {
        assert!(SEALED.get().is_none());
        assert_eq!(var("PATH"), std::env::var("PATH").ok());
        assert_eq!(var("AGENTLOOP_CREDENTIALS_TEST_SURELY_UNSET"), None);
        assert_eq!(vars_os(), std::env::vars_os().collect::<Vec<_>>());
    }
}

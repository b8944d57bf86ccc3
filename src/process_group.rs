//! The process groups of running Bash and hook commands. Each command runs in its own group
//! (its id is the leader's pid); a [`ProcessGroup`] stops the whole group on drop unless the
//! command finished normally, and is listed in a process-wide registry while it lives, so a
//! hard exit (a second Ctrl+C) can stop every group still running with [`kill_all`] before
//! the process goes: `process::exit` runs no destructor.
//!
//! A command started through the sandbox helper ([`crate::sandbox::helper`]) is stopped
//! with SIGTERM: the helper, the group's leader, then SIGKILLs every process the command
//! started, those that left the group (`setsid`) included. Any other group gets SIGKILL.

use std::sync::Mutex;

/// Groups of commands that are running now.
static LIVE: Registry = Registry(Mutex::new(Vec::new()));

/// A list of live group ids, each with the signal that stops it.
#[derive(Debug)]
struct Registry(Mutex<Vec<(libc::pid_t, libc::c_int)>>);

impl Registry {
    fn ids(&self) -> std::sync::MutexGuard<'_, Vec<(libc::pid_t, libc::c_int)>> {
        // A panic while the lock was held leaves a plain list of ids: still usable.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn kill_all(&self) -> usize {
        let groups = self.ids().clone();
        for &(pgid, signal) in &groups {
            signal_group(pgid, signal);
        }
        groups.len()
    }
}

/// A command's process group: SIGKILLed on drop unless [`ProcessGroup::disarm`]ed, and
/// registered for [`kill_all`] until then.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<libc::pid_t>,
    signal: libc::c_int,
    registry: &'static Registry,
}

impl ProcessGroup {
    /// The group led by the process `pid` (a child spawned with `process_group(0)`), or a
    /// group that does nothing when the child has no pid (it has already been reaped).
    pub fn of(pid: Option<u32>) -> Self {
        Self::registered(pid, libc::SIGKILL, &LIVE)
    }

    /// The group of a command started with [`crate::sandbox::Sandbox::command`]: through
    /// the helper when `helper` (stopped with SIGTERM, see the module doc), else directly.
    pub fn of_command(pid: Option<u32>, helper: bool) -> Self {
        Self::registered(pid, if helper { libc::SIGTERM } else { libc::SIGKILL }, &LIVE)
    }

    fn registered(pid: Option<u32>, signal: libc::c_int, registry: &'static Registry) -> Self {
        let pgid = pid.and_then(|id| libc::pid_t::try_from(id).ok()).filter(|&id| id > 1);
        if let Some(id) = pgid {
            registry.ids().push((id, signal));
        }
        ProcessGroup { pgid, signal, registry }
    }

    /// Stop every process in the group (and, through the helper, every process the command
    /// started).
    pub fn kill(&self) {
        if let Some(pgid) = self.pgid {
            signal_group(pgid, self.signal);
        }
    }

    /// The command finished normally: leave processes that detached from its output alone.
    pub fn disarm(mut self) {
        self.unregister();
    }

    fn unregister(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let mut live = self.registry.ids();
            if let Some(at) = live.iter().position(|&(id, _)| id == pgid) {
                live.swap_remove(at);
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.pgid.is_some() {
            self.kill();
            self.unregister();
        }
    }
}

/// SIGKILL every registered group (the commands still running); returns how many there were.
/// Their [`ProcessGroup`]s stay registered until dropped.
pub fn kill_all() -> usize {
    LIVE.kill_all()
}

fn signal_group(pgid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) takes no pointers; a negative pid addresses the process group, and
    // `pgid > 1`, so this never signals our own group or every process.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    #[test]
    fn kill_all_kills_registered_groups_and_disarm_unregisters() {
        let spawn = || Command::new("sleep").arg("100").process_group(0).stdout(Stdio::null()).spawn().unwrap();
        let (mut a, mut b) = (spawn(), spawn());
        // A registry of its own: the global one holds the groups of tests running beside this one.
        let registry: &'static Registry = Box::leak(Box::new(Registry(Mutex::new(Vec::new()))));
        let live = || registry.ids().clone();
        let group_a = ProcessGroup::registered(Some(a.id()), libc::SIGKILL, registry);
        let group_b = ProcessGroup::registered(Some(b.id()), libc::SIGKILL, registry);
        let ids: Vec<libc::pid_t> = live().iter().map(|&(id, _)| id).collect();
        assert!(ids.contains(&(a.id() as libc::pid_t)) && ids.contains(&(b.id() as libc::pid_t)));
        group_b.disarm();
        assert!(!live().iter().any(|&(id, _)| id == b.id() as libc::pid_t));
        assert_eq!(registry.kill_all(), 1);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(a.wait().unwrap().signal(), Some(libc::SIGKILL));
        drop(group_a);
        assert!(!live().iter().any(|&(id, _)| id == a.id() as libc::pid_t));
        // The disarmed group was left running.
        assert_eq!(b.try_wait().unwrap(), None);
        b.kill().unwrap();
        b.wait().unwrap();
    }
}

//! The system-call filter of a sandboxed command: what Landlock cannot bound.
//!
//! - `ptrace`, `process_vm_readv` and `process_vm_writev` fail: no reading another
//!   process's memory, whatever the credentials.
//! - `io_uring_*` fail: io_uring performs socket and file operations the filter cannot see.
//! - Mount calls fail: the protected paths' read-only bind mounts stay in place (Landlock
//!   refuses them too).
//! - With the network closed, `socket` fails for every family but `AF_UNIX` (and that one
//!   too unless the settings allow Unix sockets); with local binding allowed, TCP sockets
//!   may be made (Landlock then refuses every connect). `socketpair` always works.
//! - `ioctl(TIOCSTI)` fails: no typing into a terminal.
//! - On x86-64, the x32 system-call numbers fail, and a 32-bit call (another audit
//!   architecture) kills the process: both would pass around the numbers above.
//!
//! Refused calls fail with `EPERM`, so programs report a plain error.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};

use super::policy::Network;

/// Why the filter could not be built or installed.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    /// The filter did not compile.
    #[error("seccomp: {0}")]
    Filter(#[from] seccompiler::BackendError),
    /// The kernel refused it.
    #[error("seccomp: {0}")]
    Install(#[from] seccompiler::Error),
    /// This architecture has no filter.
    #[error("seccomp: no filter for this architecture")]
    Architecture,
}

/// Install the filter for `network` on the calling thread (it needs `no_new_privs`, which
/// Landlock has set).
///
/// # Errors
/// [`SeccompError`]: the command must not run then.
pub fn install(network: Network) -> Result<(), SeccompError> {
    let program = program(network)?;
    seccompiler::apply_filter(&program)?;
    Ok(())
}

/// The compiled filter.
fn program(network: Network) -> Result<BpfProgram, SeccompError> {
    let arch = if cfg!(target_arch = "x86_64") {
        TargetArch::x86_64
    } else if cfg!(target_arch = "aarch64") {
        TargetArch::aarch64
    } else if cfg!(target_arch = "riscv64") {
        TargetArch::riscv64
    } else {
        return Err(SeccompError::Architecture);
    };
    let filter =
        SeccompFilter::new(rules(network)?, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?;
    let compiled: BpfProgram = filter.try_into()?;
    Ok(if cfg!(target_arch = "x86_64") { [refuse_x32().as_slice(), &compiled].concat() } else { compiled })
}

/// On x86-64, the same calls by their x32 numbers (`nr | 0x4000_0000`) fail first.
fn refuse_x32() -> [sock_filter; 3] {
    const LD_W_ABS: u16 = 0x20;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    const X32_BIT: u32 = 0x4000_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    [
        // A = seccomp_data.nr
        sock_filter { code: LD_W_ABS, jt: 0, jf: 0, k: 0 },
        // if A >= X32_BIT: fall through to the refusal, else skip it
        sock_filter { code: JGE_K, jt: 0, jf: 1, k: X32_BIT },
        sock_filter { code: RET_K, jt: 0, jf: 0, k: RET_ERRNO | libc::EPERM as u32 },
    ]
}

/// The calls that fail, with the argument conditions under which they do (none: always).
fn rules(network: Network) -> Result<BTreeMap<i64, Vec<SeccompRule>>, SeccompError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fsconfig,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_open_by_handle_at,
    ] {
        rules.insert(call, Vec::new());
    }
    let arg = |index, op, value: u64| SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value);
    rules.insert(libc::SYS_ioctl, vec![SeccompRule::new(vec![arg(1, SeccompCmpOp::Eq, libc::TIOCSTI)?])?]);
    if let Network::Closed { unix_sockets, local_binding } = network {
        let unix = libc::AF_UNIX as u64;
        let (inet, inet6) = (libc::AF_INET as u64, libc::AF_INET6 as u64);
        let mut socket = Vec::new();
        // Families never allowed with the network closed.
        let mut other = vec![arg(0, SeccompCmpOp::Ne, inet)?, arg(0, SeccompCmpOp::Ne, inet6)?];
        if unix_sockets {
            other.push(arg(0, SeccompCmpOp::Ne, unix)?);
        }
        socket.push(SeccompRule::new(other)?);
        if !local_binding {
            socket.push(SeccompRule::new(vec![arg(0, SeccompCmpOp::Eq, inet)?])?);
            socket.push(SeccompRule::new(vec![arg(0, SeccompCmpOp::Eq, inet6)?])?);
        } else {
            // Only stream sockets: Landlock bounds TCP, nothing bounds UDP or raw sockets.
            for family in [inet, inet6] {
                for kind in
                    [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_RDM, libc::SOCK_SEQPACKET, 10 /* SOCK_PACKET */]
                {
                    socket.push(SeccompRule::new(vec![
                        arg(0, SeccompCmpOp::Eq, family)?,
                        arg(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?,
                    ])?);
                }
            }
        }
        rules.insert(libc::SYS_socket, socket);
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_network_setting_compiles() {
        for network in [
            Network::Open,
            Network::CLOSED,
            Network::Closed { unix_sockets: true, local_binding: false },
            Network::Closed { unix_sockets: true, local_binding: true },
        ] {
            let program = program(network).unwrap();
            assert!(program.len() > 10, "{network:?}: {} instructions", program.len());
        }
    }
}

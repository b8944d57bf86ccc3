//! Capabilities a sandboxed command never keeps, even when agentloop runs as root: those
//! that pass around Landlock or the seccomp filter (`CAP_SYS_PTRACE` reads another
//! process's memory and environment, `CAP_DAC_READ_SEARCH` opens files by handle without a
//! path, `CAP_SYS_ADMIN` mounts) or reach the whole machine. They leave the bounding set too,
//! so nothing the command executes (a set-uid program included) gets them back.

/// The capabilities dropped (numbers from `linux/capability.h`).
const DROPPED: &[(u32, &str)] = &[
    (1, "CAP_DAC_OVERRIDE"),
    (2, "CAP_DAC_READ_SEARCH"),
    (5, "CAP_KILL"),
    (12, "CAP_NET_ADMIN"),
    (13, "CAP_NET_RAW"),
    (16, "CAP_SYS_MODULE"),
    (17, "CAP_SYS_RAWIO"),
    (18, "CAP_SYS_CHROOT"),
    (19, "CAP_SYS_PTRACE"),
    (21, "CAP_SYS_ADMIN"),
    (22, "CAP_SYS_BOOT"),
    (25, "CAP_SYS_TIME"),
    (32, "CAP_MAC_OVERRIDE"),
    (33, "CAP_MAC_ADMIN"),
    (34, "CAP_SYSLOG"),
    (37, "CAP_AUDIT_READ"),
    (38, "CAP_PERFMON"),
    (39, "CAP_BPF"),
    (40, "CAP_CHECKPOINT_RESTORE"),
];

#[repr(C)]
struct Header {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const VERSION_3: u32 = 0x2008_0522;

/// The kernel refused to read or lower this process's capability sets.
#[derive(Debug, thiserror::Error)]
pub enum CapsError {
    /// `capget(2)` failed.
    #[error("capget: {0}")]
    Get(std::io::Error),
    /// `capset(2)` failed.
    #[error("capset: {0}")]
    Set(std::io::Error),
}

/// Drop [`DROPPED`] from this process's bounding, ambient, effective, permitted and
/// inheritable sets.
///
/// # Errors
/// [`CapsError`] when the kernel refuses (then the command must not run).
pub fn drop_dangerous() -> Result<(), CapsError> {
    for &(cap, _) in DROPPED {
        // SAFETY: prctl with integer arguments. EINVAL (an unknown capability on an old
        // kernel) is fine: nobody can have it. EPERM without CAP_SETPCAP means it is not in
        // our sets to begin with unless we are privileged, checked below.
        unsafe {
            libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
        }
    }
    // SAFETY: as above; clearing the ambient set only lowers it.
    unsafe {
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0);
    }
    let mut header = Header { version: VERSION_3, pid: 0 };
    let mut data = [Data::default(); 2];
    // SAFETY: header and data are the layout capget(2) expects for version 3.
    if unsafe { libc::syscall(libc::SYS_capget, &raw mut header, data.as_mut_ptr()) } != 0 {
        return Err(CapsError::Get(std::io::Error::last_os_error()));
    }
    for &(cap, _) in DROPPED {
        let (word, bit) = ((cap / 32) as usize, 1u32 << (cap % 32));
        data[word].effective &= !bit;
        data[word].permitted &= !bit;
        data[word].inheritable &= !bit;
    }
    // SAFETY: as above; capset only lowers sets here, which is always allowed.
    if unsafe { libc::syscall(libc::SYS_capset, &raw mut header, data.as_ptr()) } != 0 {
        return Err(CapsError::Set(std::io::Error::last_os_error()));
    }
    Ok(())
}

//! Read-only protected paths through a mount namespace of the command's own: each existing
//! path of [`super::Policy::read_only`] is bind-mounted onto itself read-only. A mount
//! point cannot be written into, renamed or removed, which Landlock alone cannot express
//! for a path inside a writable directory.
//!
//! The namespace needs `CAP_SYS_ADMIN` (root) or an unprivileged user namespace; where
//! neither is possible, [`protect`] says so and the caller carves the paths out of
//! Landlock's write rules instead ([`super::grants`]).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why the protected paths could not be mounted read-only.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// Neither a mount namespace nor a user namespace with one could be made.
    #[error("no mount namespace: {0}")]
    Namespace(std::io::Error),
    /// The user namespace's id maps could not be written.
    #[error("cannot write {file} for a user namespace: {error}")]
    IdMap {
        /// The `/proc/self` file.
        file: &'static str,
        /// Why.
        error: std::io::Error,
    },
    /// A path that cannot be handed to the kernel.
    #[error("{} holds a NUL", .0.display())]
    Nul(PathBuf),
    /// A mount failed.
    #[error("mount {}: {error}", .target.display())]
    Mount {
        /// The mount point.
        target: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// Make the existing `paths` read-only for the calling process and what it runs.
///
/// # Errors
/// [`MountError`] when no mount namespace could be made or a mount failed.
pub fn protect(paths: &[PathBuf]) -> Result<(), MountError> {
    let existing: Vec<&PathBuf> =
        paths.iter().filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.file_type().is_symlink())).collect();
    if existing.is_empty() {
        return Ok(());
    }
    enter_namespace()?;
    // Nothing done here propagates back to the user's mounts.
    mount(None, Path::new("/"), libc::MS_REC | libc::MS_PRIVATE)?;
    for path in existing {
        mount(Some(path), path, libc::MS_BIND)?;
        let flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | locked_flags(path);
        mount(None, path, flags)?;
    }
    Ok(())
}

/// A new mount namespace: directly with `CAP_SYS_ADMIN`, else inside a new user namespace
/// that maps the caller's own ids.
fn enter_namespace() -> Result<(), MountError> {
    // SAFETY: unshare takes flags only.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } == 0 {
        return Ok(());
    }
    // SAFETY: as above; getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err(MountError::Namespace(std::io::Error::last_os_error()));
    }
    let write = |file: &'static str, text: String| {
        std::fs::write(file, text).map_err(|error| MountError::IdMap { file, error })
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// The flags of the mount holding `path` that a user namespace may not clear on remount.
fn locked_flags(path: &Path) -> libc::c_ulong {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return 0 };
    // SAFETY: `c` is a valid C string and `stat` a writable statvfs for the call.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &raw mut stat) } != 0 {
        return 0;
    }
    let mut flags = 0;
    for (st, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if stat.f_flag & st != 0 {
            flags |= ms;
        }
    }
    flags
}

fn mount(source: Option<&Path>, target: &Path, flags: libc::c_ulong) -> Result<(), MountError> {
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|_| MountError::Nul(p.to_path_buf()));
    let target_c = c(target)?;
    let source_c = source.map(c).transpose()?;
    let source_ptr = source_c.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: every pointer is a valid C string or null, as mount(2) allows for these flags.
    let done = unsafe { libc::mount(source_ptr, target_c.as_ptr(), std::ptr::null(), flags, std::ptr::null()) };
    if done == 0 {
        Ok(())
    } else {
        Err(MountError::Mount { target: target.to_path_buf(), error: std::io::Error::last_os_error() })
    }
}

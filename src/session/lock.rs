//! One writer per transcript: an advisory `flock` on a lock file beside it.
//!
//! `<id>.jsonl.lock` holds the pid of the process that appends to `<id>.jsonl`. The kernel
//! releases the lock when that process exits, however it exits, so a lock left by a crash is
//! free at once; the file itself is removed when the lock is dropped (a crash leaves it, and
//! the next writer takes it over).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::{Result, SessionError, io_error};

/// The lock on one transcript, held until dropped.
#[derive(Debug)]
pub struct SessionLock {
    /// The locked descriptor: closing it releases the lock.
    file: File,
    path: PathBuf,
}

impl SessionLock {
    /// Take the lock of the transcript at `transcript` (which need not exist yet) without
    /// waiting, and write this process's pid into the lock file.
    ///
    /// # Errors
    /// [`SessionError::InUse`] when another process (or another writer of this one) holds it;
    /// [`SessionError::Io`] when the lock file cannot be created or locked.
    pub fn acquire(transcript: &Path) -> Result<SessionLock> {
        let path = lock_path(transcript);
        loop {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(io_error(&path))?;
            if let Err(e) = try_lock(&file) {
                if e.kind() != io::ErrorKind::WouldBlock {
                    return Err(io_error(&path)(e));
                }
                let session = transcript.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                return Err(SessionError::InUse { session, pid: holder(&mut file) });
            }
            // The holder before us may have removed the file between our open and our lock:
            // the lock is ours only if the path still names the file we locked.
            let same = match (std::fs::metadata(&path), file.metadata()) {
                (Ok(on_disk), Ok(locked)) => ids(&on_disk) == ids(&locked),
                _ => false,
            };
            if !same {
                continue;
            }
            // Dropped on a failure to write the pid (a full disk), the lock removes its file.
            let mut lock = SessionLock { file, path };
            lock.file.set_len(0).map_err(io_error(&lock.path))?;
            lock.file.write_all(format!("{}\n", std::process::id()).as_bytes()).map_err(io_error(&lock.path))?;
            return Ok(lock);
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        // Removed while still locked, so that no one takes a file that is going away; the
        // lock goes with the descriptor, closed after this.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The lock file of the transcript at `transcript`: `<name>.lock` beside it.
pub fn lock_path(transcript: &Path) -> PathBuf {
    let mut name = transcript.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    transcript.with_file_name(name)
}

fn ids(metadata: &std::fs::Metadata) -> (u64, u64) {
    (metadata.dev(), metadata.ino())
}

/// `flock(LOCK_EX | LOCK_NB)`: the lock, or `WouldBlock` when someone holds it.
fn try_lock(file: &File) -> io::Result<()> {
    // SAFETY: flock takes a descriptor, which `file` keeps open for the call.
    let status = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if status == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The pid the holder wrote into the lock file, if it has written one yet.
fn holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

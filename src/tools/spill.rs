//! The run's directory of spilled tool results (`agentloop-<run id>/` in the temp directory):
//! results over the cap are saved whole there, readable only by the user who runs agentloop
//! (directory 0700, files 0600), and the directory is removed when the run ends.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Save `content` as `file` inside `dir`, creating `dir` (mode 0700) if needed. The file is
/// created with mode 0600 and opened without following a symlink. A `dir` that exists but is
/// not a directory of ours with mode 0700 (one planted in a shared temp directory) is refused.
///
/// # Errors
/// The I/O error, or `PermissionDenied` for a directory that is not ours alone.
pub fn save(dir: &Path, file: &Path, content: &str) -> std::io::Result<()> {
    private_dir(dir)?;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file)?;
    out.write_all(content.as_bytes())
}

/// Create `dir` (mode 0700) if needed and check it is a directory of ours that only we can
/// read: one that exists but is not (a symlink, or one planted open in a shared temp
/// directory) is refused.
///
/// # Errors
/// The I/O error, or `PermissionDenied` for a directory that is not ours alone.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is not a private directory of this user", dir.display()),
        ));
    }
    Ok(())
}

/// Removes the spill directory, with everything in it, when dropped: at the end of a run,
/// however the run ends (a terminal reason, an engine error, or the run's future dropped).
#[derive(Debug)]
pub struct SpillDir {
    path: PathBuf,
}

impl SpillDir {
    /// Takes charge of `path` (it need not exist yet).
    pub fn new(path: PathBuf) -> Self {
        SpillDir { path }
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        // Only a real directory is removed: never follow a symlink someone put in its place.
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.is_dir()) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_directory_and_files_are_private_and_removed_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SpillDir::new(tmp.path().join("agentloop-run-x"));
        let file = dir.path().join("toolu_1.txt");
        save(dir.path(), &file, "whole result").unwrap();
        assert_eq!(mode(dir.path()), 0o700);
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "whole result");
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn a_directory_open_to_others_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("planted");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = save(&dir, &dir.join("a.txt"), "x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        assert_eq!(err.to_string(), format!("{} is not a private directory of this user", dir.display()));
        assert!(!dir.join("a.txt").exists());
    }

    #[test]
    fn a_symlink_in_place_of_the_directory_is_refused_and_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = save(&link, &link.join("a.txt"), "x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        drop(SpillDir::new(link.clone()));
        assert!(link.exists() && target.exists());
    }
}

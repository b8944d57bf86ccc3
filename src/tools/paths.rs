//! Path resolution for file tools: relative paths resolve against the run's working
//! directory, symlinks are resolved (dangling ones too), and a path that leaves the working
//! directory is refused unless the permission layer allowed it for this call.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use tokio::io::AsyncWriteExt;

use super::{ToolContext, ToolOutput};

/// Most symlinks followed while resolving one path (Linux's own limit); past it the path is
/// refused as a symlink loop.
pub const MAX_SYMLINKS: usize = 40;

/// Resolve `path` for a tool call.
///
/// With `must_exist`, the path itself is canonicalized (symlinks resolved); otherwise its
/// existing part is resolved with [`canonicalize_partial`], which follows a symlink even when
/// its target does not exist, and the rest is appended (for files about to be created).
///
/// # Errors
/// An error result when the path does not exist (with `must_exist`), cannot be resolved (a
/// symlink loop, a file used as a directory), or resolves outside the working directory and
/// `ctx.allow_outside` is false.
pub fn resolve(ctx: &ToolContext, path: &str, must_exist: bool) -> Result<PathBuf, ToolOutput> {
    if path.is_empty() {
        return Err(ToolOutput::error("The path is empty."));
    }
    let joined = if Path::new(path).is_absolute() { PathBuf::from(path) } else { ctx.cwd.join(path) };
    let resolved = if must_exist {
        joined
            .canonicalize()
            .map_err(|e| ToolOutput::error(format!("File does not exist or cannot be opened: {path} ({e})")))?
    } else {
        canonicalize_partial(&joined).map_err(|e| ToolOutput::error(format!("Cannot resolve {path}: {e}")))?
    };
    let root = ctx.cwd.canonicalize().unwrap_or_else(|_| ctx.cwd.clone());
    if !ctx.allow_outside && !resolved.starts_with(&root) {
        return Err(ToolOutput::error(format!(
            "Permission denied: {path} resolves to {} which is outside the working directory {}",
            resolved.display(),
            root.display()
        )));
    }
    Ok(resolved)
}

/// Resolve `path` as the kernel would on creating it: `.` and `..` are applied and every
/// existing symlink on the way is followed, the last one included and also when its target
/// does not exist (a dangling `notes.md -> /outside/x` resolves to `/outside/x`). The part
/// from the first missing component on is appended as written, with `.` and `..` applied.
///
/// The result holds no symlink: writing to it creates or changes exactly that file.
///
/// # Errors
/// `ELOOP` after [`MAX_SYMLINKS`] symlinks (a loop); the error of a component that cannot be
/// examined (a regular file used as a directory, no permission).
pub(crate) fn canonicalize_partial(path: &Path) -> io::Result<PathBuf> {
    let absolute = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir()?.join(path) };
    let mut out = PathBuf::from("/");
    // How many trailing components of `out` do not exist: those are not looked up again.
    let mut missing = 0usize;
    let mut links = 0usize;
    let mut pending: VecDeque<OsString> = parts(&absolute).collect();
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            out.pop();
            missing = missing.saturating_sub(1);
            continue;
        }
        let candidate = out.join(&part);
        if missing > 0 {
            out = candidate;
            missing += 1;
            continue;
        }
        match candidate.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                let target = std::fs::read_link(&candidate)?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                // The target's parts come next, resolved from the link's directory.
                for (i, target_part) in parts(&target).enumerate() {
                    pending.insert(i, target_part);
                }
            }
            Ok(_) => out = candidate,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                out = candidate;
                missing = 1;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The names and `..` of `path`, without its root and its `.` parts.
fn parts(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(name) => Some(name.to_owned()),
        Component::ParentDir => Some(OsString::from("..")),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    })
}

/// What [`write_no_follow`] answers when `path` is a symlink.
pub const SWAPPED_SYMLINK: &str = "it is a symbolic link, swapped in after its path was checked; not written";

/// Create or truncate the file at `path` and write `bytes`, refusing to go through a symlink
/// at `path` itself (`O_NOFOLLOW`). `path` comes from [`resolve`], whose result has no
/// symlink, so one found here was swapped in after the check.
///
/// # Errors
/// [`SWAPPED_SYMLINK`] for a symlink; otherwise the error of opening or writing the file.
pub async fn write_no_follow(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let opened = tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .await;
    let mut file = match opened {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(io::Error::other(SWAPPED_SYMLINK)),
        other => other?,
    };
    file.write_all(bytes).await?;
    file.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_inside_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "x").unwrap();
        let ctx = ToolContext::new(&root);
        assert_eq!(resolve(&ctx, "a.txt", true).unwrap(), root.join("a.txt"));
        assert_eq!(resolve(&ctx, "new/dir/b.txt", false).unwrap(), root.join("new/dir/b.txt"));
        assert!(resolve(&ctx, "../x.txt", false).unwrap_err().content.contains("outside the working directory"));
        assert!(resolve(&ctx, "missing.txt", true).unwrap_err().content.contains("does not exist"));
        std::os::unix::fs::symlink("/etc", root.join("etc-link")).unwrap();
        assert!(resolve(&ctx, "etc-link/hostname", false).unwrap_err().content.contains("outside"));
        let open = ToolContext { allow_outside: true, ..ToolContext::new(&root) };
        assert_eq!(resolve(&open, "../x.txt", false).unwrap(), root.parent().unwrap().join("x.txt"));
    }

    /// A working directory and a separate "outside" directory, both canonical.
    fn dirs() -> (tempfile::TempDir, PathBuf, tempfile::TempDir, PathBuf) {
        let (inside, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (root, out) = (inside.path().canonicalize().unwrap(), outside.path().canonicalize().unwrap());
        (inside, root, outside, out)
    }

    #[test]
    fn dangling_symlinks_resolve_to_their_targets() {
        let (_i, root, _o, out) = dirs();
        std::os::unix::fs::symlink(out.join("missing/x"), root.join("notes.md")).unwrap();
        std::os::unix::fs::symlink("new/inside.txt", root.join("rel.md")).unwrap();
        std::os::unix::fs::symlink("../elsewhere", root.join("up")).unwrap();
        std::os::unix::fs::symlink("notes.md", root.join("chain")).unwrap();
        assert_eq!(canonicalize_partial(&root.join("notes.md")).unwrap(), out.join("missing/x"));
        assert_eq!(canonicalize_partial(&root.join("rel.md")).unwrap(), root.join("new/inside.txt"));
        assert_eq!(canonicalize_partial(&root.join("up/a")).unwrap(), root.parent().unwrap().join("elsewhere/a"));
        assert_eq!(canonicalize_partial(&root.join("chain")).unwrap(), out.join("missing/x"));
        // `..` inside the missing part is applied; a symlink after it is still followed.
        assert_eq!(canonicalize_partial(&root.join("nope/../notes.md")).unwrap(), out.join("missing/x"));
        assert_eq!(canonicalize_partial(&root.join("a/b/../c/./d")).unwrap(), root.join("a/c/d"));
        // A relative path resolves against the process's current directory.
        let here = std::env::current_dir().unwrap().canonicalize().unwrap();
        assert_eq!(canonicalize_partial(Path::new("no-such-dir/x")).unwrap(), here.join("no-such-dir/x"));

        let ctx = ToolContext::new(&root);
        assert_eq!(
            resolve(&ctx, "notes.md", false).unwrap_err().content,
            format!(
                "Permission denied: notes.md resolves to {} which is outside the working directory {}",
                out.join("missing/x").display(),
                root.display()
            )
        );
        assert_eq!(resolve(&ctx, "rel.md", false).unwrap(), root.join("new/inside.txt"));
    }

    #[test]
    fn symlink_loops_and_files_used_as_directories_are_errors() {
        let (_i, root, _o, _out) = dirs();
        std::os::unix::fs::symlink("b", root.join("a")).unwrap();
        std::os::unix::fs::symlink("a", root.join("b")).unwrap();
        std::os::unix::fs::symlink("self/x", root.join("self")).unwrap();
        std::fs::write(root.join("file.txt"), "x").unwrap();
        let ctx = ToolContext::new(&root);
        for (path, error) in [
            ("a", "Too many levels of symbolic links (os error 40)"),
            ("self", "Too many levels of symbolic links (os error 40)"),
            ("file.txt/x", "Not a directory (os error 20)"),
        ] {
            assert_eq!(resolve(&ctx, path, false).unwrap_err().content, format!("Cannot resolve {path}: {error}"));
        }
    }

    #[tokio::test]
    async fn write_no_follow_refuses_a_symlink() {
        let (_i, root, _o, out) = dirs();
        std::os::unix::fs::symlink(out.join("x"), root.join("link")).unwrap();
        let err = write_no_follow(&root.join("link"), b"data").await.unwrap_err();
        assert_eq!(err.to_string(), SWAPPED_SYMLINK);
        assert!(!out.join("x").exists());
        write_no_follow(&root.join("plain"), b"data").await.unwrap();
        write_no_follow(&root.join("plain"), b"da").await.unwrap();
        assert_eq!(std::fs::read_to_string(root.join("plain")).unwrap(), "da");
    }
}

//! The directory walk shared by `Glob` and `Grep`: ripgrep's default filters (`.gitignore`,
//! `.ignore`, hidden files and directories skipped), applied whether or not the tree is a git
//! repository, walked in parallel, and the sort orders both tools print in.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use ignore::{DirEntry, WalkBuilder, WalkState};
use tokio_util::sync::CancellationToken;

/// Most walker threads used when the caller does not say.
const MAX_DEFAULT_THREADS: usize = 8;

/// Threads for a walk: `requested` when non-zero, else the machine's parallelism (at most 8).
pub fn threads(requested: usize) -> usize {
    if requested > 0 {
        return requested;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_DEFAULT_THREADS)
}

/// A walker over `root` with ripgrep's default filters, working outside git repositories too.
///
/// Symbolic links are not followed (ripgrep's default); the caller adds types or filters.
pub fn builder(root: &Path, threads: usize) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.standard_filters(true).require_git(false).follow_links(false).threads(self::threads(threads));
    b
}

/// The walk was stopped because the call was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// Walk `builder`'s tree in parallel and collect what `visitor` keeps, in no particular order.
///
/// `visitor` is called once per walker thread to make that thread's entry callback, so each
/// thread can own its buffers. Unreadable entries are skipped. `cancel` is checked before each
/// entry; once it fires the walk stops.
///
/// # Errors
/// [`Cancelled`] when `cancel` fired before the walk finished.
pub fn collect<T, F, V>(builder: &WalkBuilder, cancel: &CancellationToken, visitor: F) -> Result<Vec<T>, Cancelled>
where
    T: Send,
    F: Fn() -> V,
    V: FnMut(&DirEntry) -> Option<T> + Send,
{
    let out = Mutex::new(Vec::new());
    builder.build_parallel().run(|| {
        let mut visit = visitor();
        let out = &out;
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            if let Ok(entry) = entry
                && let Some(item) = visit(&entry)
            {
                out.lock().expect("no code panics while holding the results lock").push(item);
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(Cancelled);
    }
    Ok(out.into_inner().expect("no code panics while holding the results lock"))
}

/// `path` relative to `root` (the path itself when it is not under `root`).
///
/// A byte-prefix test rather than [`Path::strip_prefix`], which walks components and showed
/// up in Glob's profile; `root` is the walk's root, so every path starts with it as given.
pub fn relative<'a>(root: &Path, path: &'a Path) -> &'a Path {
    use std::os::unix::ffi::OsStrExt;
    let (root, bytes) = (root.as_os_str().as_bytes(), path.as_os_str().as_bytes());
    match bytes.strip_prefix(root) {
        Some([b'/', rest @ ..]) => Path::new(std::ffi::OsStr::from_bytes(rest)),
        Some(rest) if root.ends_with(b"/") => Path::new(std::ffi::OsStr::from_bytes(rest)),
        Some([]) => Path::new(""),
        _ => path,
    }
}

/// Path order for listings: byte order of the paths, which is cheap to compare (a sort by
/// components costs a third of a large Glob) and groups each directory's files together.
pub fn path_order(a: &Path, b: &Path) -> Ordering {
    a.as_os_str().as_encoded_bytes().cmp(b.as_os_str().as_encoded_bytes())
}

/// Put the `keep` newest paths first, newest modification time first, ties in
/// [`path_order`] (Claude Code's order for file lists); the rest stay in no particular order.
pub fn sort_newest_first(paths: &mut [(SystemTime, PathBuf)], keep: usize) {
    let order =
        |a: &(SystemTime, PathBuf), b: &(SystemTime, PathBuf)| b.0.cmp(&a.0).then_with(|| path_order(&a.1, &b.1));
    let keep = keep.min(paths.len());
    if keep < paths.len() && keep > 0 {
        paths.select_nth_unstable_by(keep - 1, order);
    }
    paths[..keep].sort_unstable_by(order);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sorts_newest_first_then_by_path() {
        let t = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let v = vec![
            (t(1), PathBuf::from("b")),
            (t(2), PathBuf::from("z")),
            (t(1), PathBuf::from("a")),
            (t(0), PathBuf::from("c")),
            (t(1), PathBuf::from("a-b/x")),
            (t(1), PathBuf::from("a/x")),
        ];
        let order = |keep| {
            let mut v = v.clone();
            sort_newest_first(&mut v, keep);
            v.iter().take(keep).map(|(_, p)| p.to_str().unwrap().to_owned()).collect::<Vec<_>>()
        };
        assert_eq!(order(6), ["z", "a", "a-b/x", "a/x", "b", "c"]);
        assert_eq!(order(3), ["z", "a", "a-b/x"]);
        assert_eq!(order(0), Vec::<String>::new());
        assert_eq!(threads(3), 3);
        assert!(threads(0) >= 1);
        assert_eq!(relative(Path::new("/r"), Path::new("/r/x/y")), Path::new("x/y"));
        assert_eq!(relative(Path::new("/"), Path::new("/x/y")), Path::new("x/y"));
        assert_eq!(relative(Path::new("/r"), Path::new("/r")), Path::new(""));
        assert_eq!(relative(Path::new("/r"), Path::new("/rs/x")), Path::new("/rs/x"));
    }
}

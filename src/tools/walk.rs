//! The directory walk shared by `Glob` and `Grep`: ripgrep's default filters (`.gitignore`,
//! `.ignore`, hidden files and directories skipped), applied whether or not the tree is a git
//! repository, walked in parallel, and the sort orders both tools print in.

use std::cmp::Reverse;
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
pub fn relative<'a>(root: &Path, path: &'a Path) -> &'a Path {
    path.strip_prefix(root).unwrap_or(path)
}

/// Modification time of `path`, or the epoch when it cannot be read.
pub fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Sort paths newest modification time first, ties by path (Claude Code's order for file lists).
pub fn sort_newest_first(paths: &mut [(SystemTime, PathBuf)]) {
    paths.sort_unstable_by(|a, b| (Reverse(a.0), &a.1).cmp(&(Reverse(b.0), &b.1)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sorts_newest_first_then_by_path() {
        let t = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let mut v = vec![(t(1), PathBuf::from("b")), (t(2), PathBuf::from("z")), (t(1), PathBuf::from("a"))];
        sort_newest_first(&mut v);
        let order: Vec<_> = v.iter().map(|(_, p)| p.to_str().unwrap()).collect();
        assert_eq!(order, ["z", "a", "b"]);
        assert_eq!(threads(3), 3);
        assert!(threads(0) >= 1);
        assert_eq!(relative(Path::new("/r"), Path::new("/r/x/y")), Path::new("x/y"));
    }
}

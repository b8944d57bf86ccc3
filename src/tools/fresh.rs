//! Guards against blind and stale writes: Write and Edit change an existing file only when
//! this run has read it and it has not changed on disk since. Reading records the file's
//! modification time in [`ToolContext::reads`]; every write records the new one, so a
//! following Edit or Write goes through without a fresh Read.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{ReadRecord, ToolContext, ToolOutput};

/// Why Write or Edit refuses to change an existing file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StaleWrite {
    /// The file was never read in this run.
    #[error("{0} has not been read in this run. Read it first, then change it.")]
    NotRead(String),
    /// The file changed on disk after this run read it.
    #[error(
        "{0} has been modified on disk since it was read (by the user, a formatter or another process). \
         Read it again, then change it."
    )]
    Modified(String),
}

impl From<StaleWrite> for ToolOutput {
    fn from(e: StaleWrite) -> Self {
        ToolOutput::error(e.to_string())
    }
}

/// Check that `path` (canonical) was read in this run and still has the modification time
/// recorded then; `current` is its modification time now and `shown` names it in errors.
///
/// # Errors
/// [`StaleWrite::NotRead`] when there is no record, [`StaleWrite::Modified`] when the times differ.
pub fn check(ctx: &ToolContext, path: &Path, shown: &str, current: Option<SystemTime>) -> Result<(), StaleWrite> {
    let reads = ctx.reads.lock().expect("reads lock is never poisoned: no code panics while holding it");
    match reads.get(path) {
        None => Err(StaleWrite::NotRead(shown.to_owned())),
        Some(record) if record.modified != current => Err(StaleWrite::Modified(shown.to_owned())),
        Some(_) => Ok(()),
    }
}

/// Record that `path` (canonical) has modification time `modified` as this run last saw it.
pub fn record(ctx: &ToolContext, path: PathBuf, modified: Option<SystemTime>) {
    ctx.reads
        .lock()
        .expect("reads lock is never poisoned: no code panics while holding it")
        .insert(path, ReadRecord { modified });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn refuses_unread_and_changed_files() {
        let ctx = ToolContext::new("/tmp");
        let path = Path::new("/tmp/x.txt");
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(check(&ctx, path, "x.txt", Some(t0)), Err(StaleWrite::NotRead("x.txt".into())));
        record(&ctx, path.to_path_buf(), Some(t0));
        assert_eq!(check(&ctx, path, "x.txt", Some(t0)), Ok(()));
        assert_eq!(check(&ctx, path, "x.txt", Some(t1)), Err(StaleWrite::Modified("x.txt".into())));
        assert_eq!(
            StaleWrite::NotRead("x.txt".into()).to_string(),
            "x.txt has not been read in this run. Read it first, then change it."
        );
    }
}

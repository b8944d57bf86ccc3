//! `isolation: "worktree"`: a subagent that works in a fresh `git worktree` of the parent's
//! repository, at `<repository>/.claude/worktrees/agent-<id>` (inside the working directory,
//! so the parent's sandbox and path rules let the child write there), on a detached `HEAD`.
//!
//! When the child ends, a worktree with no change (a clean status and the same `HEAD`) is
//! removed; one with changes is kept, and the report names it and what changed.
//!
//! The repository's configuration must not run programs through these git commands (a
//! checkout runs hooks, smudge filters…): a repository whose configuration can
//! ([`crate::permissions::git::repo_config_risk`]) is refused, and git runs with the
//! program-running settings it can override switched off
//! ([`crate::permissions::git::neutralise`]).

use std::path::{Path, PathBuf};

use tokio::process::Command;

/// A worktree made for one subagent.
#[derive(Debug)]
pub(crate) struct Worktree {
    /// The repository's top directory.
    top: PathBuf,
    /// The worktree's directory.
    pub(crate) path: PathBuf,
    /// The commit it was made at.
    base: String,
    /// The child's working directory: the parent's, at the same place in the worktree.
    pub(crate) cwd: PathBuf,
}

/// What became of a worktree when its subagent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WorktreeEnd {
    /// Nothing changed: it is removed.
    Removed,
    /// It has changes, kept at `path`: `status` is `git status --short`, `commits` the
    /// commits made on top of the base.
    Kept { path: PathBuf, status: String, commits: u32 },
}

/// Run git in `dir` with `args`, its program-running settings neutralised; stdout on success.
async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut command = Command::new("git");
    command.arg("-C").arg(dir).args(args).stdin(std::process::Stdio::null()).kill_on_drop(true);
    crate::permissions::git::neutralise(&mut command);
    let out = command.output().await.map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
    } else {
        Err(format!("git {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Worktree {
    /// A fresh worktree of the repository `cwd` is in, for subagent `agent_id`.
    ///
    /// # Errors
    /// What the model reads: no repository, no commit, a configuration that can run programs,
    /// or git's own failure.
    pub(crate) async fn create(cwd: &Path, agent_id: &str) -> Result<Worktree, String> {
        let Some(top) = crate::permissions::git::repository_top(cwd) else {
            return Err(format!("isolation \"worktree\" needs a git repository, and {} is in none", cwd.display()));
        };
        if let Some(risk) = crate::permissions::git::repo_config_risk(cwd) {
            return Err(format!(
                "isolation \"worktree\" is refused: the repository's configuration can run programs ({risk})"
            ));
        }
        let base = git(&top, &["rev-parse", "--verify", "HEAD"]).await.map_err(|_| {
            "isolation \"worktree\" needs a commit to start from, and the repository has none".to_owned()
        })?;
        let path = top.join(".claude").join("worktrees").join(format!("agent-{agent_id}"));
        let shown = path.to_string_lossy().into_owned();
        git(&top, &["worktree", "add", "--detach", "--quiet", &shown, &base]).await?;
        let within = cwd.strip_prefix(&top).unwrap_or(Path::new(""));
        let child_cwd = path.join(within);
        Ok(Worktree { top, cwd: if child_cwd.is_dir() { child_cwd } else { path.clone() }, path, base })
    }

    /// Remove the worktree if its subagent changed nothing; otherwise keep it and say what
    /// changed.
    pub(crate) async fn finish(self) -> WorktreeEnd {
        let status = git(&self.path, &["status", "--short", "--untracked-files=all"]).await;
        let head = git(&self.path, &["rev-parse", "HEAD"]).await;
        match (status, head) {
            (Ok(status), Ok(head)) if status.is_empty() && head == self.base => {
                let shown = self.path.to_string_lossy().into_owned();
                match git(&self.top, &["worktree", "remove", "--force", &shown]).await {
                    Ok(_) => WorktreeEnd::Removed,
                    Err(e) => WorktreeEnd::Kept { path: self.path, status: e, commits: 0 },
                }
            }
            (status, head) => {
                let range = format!("{}..HEAD", self.base);
                let commits = match head {
                    Ok(_) => git(&self.path, &["rev-list", "--count", &range]).await.ok(),
                    Err(_) => None,
                };
                WorktreeEnd::Kept {
                    path: self.path,
                    status: status.unwrap_or_else(|e| e),
                    commits: commits.and_then(|c| c.parse().ok()).unwrap_or(0),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, script: &str) {
        let ok = std::process::Command::new("sh").arg("-c").arg(script).current_dir(dir).status().unwrap().success();
        assert!(ok, "{script}");
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        sh(
            dir.path(),
            "git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m base && \
             mkdir sub && echo one > sub/a.txt && git add sub && \
             git -c user.name=t -c user.email=t@t commit -q -m a",
        );
        dir
    }

    #[tokio::test]
    async fn an_unchanged_worktree_is_removed_and_a_changed_one_kept() {
        let dir = repo();
        let top = dir.path().canonicalize().unwrap();
        let clean = Worktree::create(&top.join("sub"), "a1").await.unwrap();
        assert_eq!(clean.path, top.join(".claude/worktrees/agent-a1"));
        assert_eq!(clean.cwd, clean.path.join("sub"), "the child starts where the parent is");
        assert_eq!(std::fs::read_to_string(clean.cwd.join("a.txt")).unwrap(), "one\n");
        let path = clean.path.clone();
        assert_eq!(clean.finish().await, WorktreeEnd::Removed);
        assert!(!path.exists());

        let changed = Worktree::create(&top, "a2").await.unwrap();
        std::fs::write(changed.path.join("sub/a.txt"), "two\n").unwrap();
        std::fs::write(changed.path.join("new.txt"), "new\n").unwrap();
        let path = changed.path.clone();
        assert_eq!(
            changed.finish().await,
            WorktreeEnd::Kept { path: path.clone(), status: " M sub/a.txt\n?? new.txt".into(), commits: 0 }
        );
        assert_eq!(std::fs::read_to_string(path.join("sub/a.txt")).unwrap(), "two\n");
        assert_eq!(std::fs::read_to_string(top.join("sub/a.txt")).unwrap(), "one\n", "the parent's tree is untouched");
    }

    #[tokio::test]
    async fn no_repository_and_a_program_running_configuration_are_refused() {
        let plain = tempfile::tempdir().unwrap();
        let e = Worktree::create(plain.path(), "a1").await.unwrap_err();
        assert!(e.starts_with("isolation \"worktree\" needs a git repository"), "{e}");
        let dir = repo();
        sh(dir.path(), "git config core.fsmonitor 'touch pwned'");
        let e = Worktree::create(dir.path(), "a1").await.unwrap_err();
        assert!(e.contains("can run programs") && e.contains("core.fsmonitor"), "{e}");
        assert!(!dir.path().join("pwned").exists());
        assert!(!dir.path().join(".claude/worktrees").exists());
    }
}

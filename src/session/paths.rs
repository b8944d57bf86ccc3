//! Where sessions live and the project slug: `$AGENTLOOP_HOME` when set, else Claude Code's
//! configuration directory (`$CLAUDE_CONFIG_DIR`, default `~/.claude`), so that Claude Code's
//! own tools find them; sessions written by older versions under `~/.agentloop` are still
//! read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable naming agentloop's own directory (the interactive history, and
/// when set, the session store).
pub const HOME_VAR: &str = "AGENTLOOP_HOME";

/// The environment variable Claude Code reads for its configuration directory.
pub const CLAUDE_CONFIG_VAR: &str = "CLAUDE_CONFIG_DIR";

/// The directories of the session store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// Where sessions are written (and read first).
    pub primary: PathBuf,
    /// Where versions before the move to Claude Code's directory wrote them (`~/.agentloop`):
    /// read, never written. `None` when `AGENTLOOP_HOME` names the store, or it is the same
    /// directory.
    pub legacy: Option<PathBuf>,
}

/// The store's directories given the values of `AGENTLOOP_HOME`, `CLAUDE_CONFIG_DIR` and
/// `HOME` (empty values count as unset): `AGENTLOOP_HOME` alone when set; else
/// `CLAUDE_CONFIG_DIR`, else `$HOME/.claude`, with `$HOME/.agentloop` read as well.
pub fn roots_from(
    agentloop_home: Option<OsString>,
    claude_config: Option<OsString>,
    home: Option<OsString>,
) -> Option<Roots> {
    if let Some(dir) = agentloop_home.filter(|v| !v.is_empty()) {
        return Some(Roots { primary: PathBuf::from(dir), legacy: None });
    }
    let home = home.filter(|v| !v.is_empty()).map(PathBuf::from);
    let primary = match claude_config.filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => home.as_ref()?.join(".claude"),
    };
    let legacy = home.map(|h| h.join(".agentloop")).filter(|l| *l != primary);
    Some(Roots { primary, legacy })
}

/// The branch checked out in the repository `cwd` is in, as Claude Code records it
/// (`gitBranch`): the name of the branch `HEAD` names, else `HEAD` (a detached head, or no
/// repository at all). Read from the files, without running git.
pub fn git_branch(cwd: &Path) -> String {
    const DETACHED: &str = "HEAD";
    let Some(dot_git) = cwd.ancestors().map(|dir| dir.join(".git")).find(|p| p.exists()) else {
        return DETACHED.into();
    };
    let git_dir = if dot_git.is_file() {
        // A worktree or submodule: `gitdir: <path>`, relative to the file's directory.
        let Ok(text) = std::fs::read_to_string(&dot_git) else { return DETACHED.into() };
        match text.trim().strip_prefix("gitdir:") {
            Some(dir) => dot_git.parent().unwrap_or(cwd).join(dir.trim()),
            None => return DETACHED.into(),
        }
    } else {
        dot_git
    };
    std::fs::read_to_string(git_dir.join("HEAD"))
        .ok()
        .and_then(|head| head.trim().strip_prefix("ref: refs/heads/").map(str::to_owned))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| DETACHED.into())
}

/// The root directory given the values of `AGENTLOOP_HOME` and `HOME`: the first when set
/// and non-empty, else `$HOME/.agentloop`, else `None`.
pub fn home_from(agentloop_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    match agentloop_home.filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home.filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".agentloop")),
    }
}

/// The directory name of a working directory's sessions: every character of the path that is
/// not an ASCII letter or digit becomes `-`, as Claude Code names its `projects/` entries
/// (`/home/user/project` → `-home-user-project`). Like Claude Code's JavaScript, a character
/// outside the Basic Multilingual Plane counts as two (two UTF-16 units, two dashes); bytes
/// that are not UTF-8 count as one character each.
pub fn slug(cwd: &Path) -> String {
    let text = cwd.to_string_lossy();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('-');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_like_claude_code() {
        assert_eq!(slug(Path::new("/home/user/project")), "-home-user-project");
        assert_eq!(slug(Path::new("/home/user/my.project_x")), "-home-user-my-project-x");
        assert_eq!(slug(Path::new("/tmp/été 🦀")), "-tmp--t----");
    }

    #[test]
    fn the_store_is_agentloop_home_else_claude_codes_directory() {
        let os = |s: &str| Some(OsString::from(s));
        let roots = |primary: &str, legacy: Option<&str>| {
            Some(Roots { primary: PathBuf::from(primary), legacy: legacy.map(PathBuf::from) })
        };
        assert_eq!(roots_from(os("/srv/al"), os("/c"), os("/home/u")), roots("/srv/al", None));
        assert_eq!(roots_from(None, os("/c"), os("/home/u")), roots("/c", Some("/home/u/.agentloop")));
        assert_eq!(roots_from(os(""), os(""), os("/home/u")), roots("/home/u/.claude", Some("/home/u/.agentloop")));
        assert_eq!(roots_from(None, os("/c"), None), roots("/c", None));
        assert_eq!(roots_from(None, os("/home/u/.agentloop"), os("/home/u")), roots("/home/u/.agentloop", None));
        assert_eq!(roots_from(None, None, None), None);
    }

    #[test]
    fn the_branch_comes_from_head() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(git_branch(&repo.join("src/deep")), "feature/x");
        std::fs::write(repo.join(".git/HEAD"), "4bdf88436342492bbefa479c5e1777ac00000000\n").unwrap();
        assert_eq!(git_branch(&repo), "HEAD");
        let worktree = dir.path().join("wt");
        std::fs::create_dir_all(dir.path().join("gitdirs/wt")).unwrap();
        std::fs::create_dir_all(&worktree).unwrap();
        std::fs::write(worktree.join(".git"), "gitdir: ../gitdirs/wt\n").unwrap();
        std::fs::write(dir.path().join("gitdirs/wt/HEAD"), "ref: refs/heads/session\n").unwrap();
        assert_eq!(git_branch(&worktree), "session");
    }

    #[test]
    fn home_prefers_agentloop_home_then_home() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(home_from(os("/srv/al"), os("/home/u")), Some(PathBuf::from("/srv/al")));
        assert_eq!(home_from(os(""), os("/home/u")), Some(PathBuf::from("/home/u/.agentloop")));
        assert_eq!(home_from(None, os("/home/u")), Some(PathBuf::from("/home/u/.agentloop")));
        assert_eq!(home_from(None, None), None);
        assert_eq!(home_from(None, os("")), None);
    }
}

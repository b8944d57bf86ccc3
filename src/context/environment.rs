//! What the model is told of where it runs: the working directory, whether it is a git
//! repository, the platform and OS version, today's date (UTC) and, for a repository, a
//! snapshot of git at the session's start (the branch, the main branch, `git status --short`
//! cut at [`STATUS_CAP_BYTES`], the last [`RECENT_COMMITS`] commits).
//!
//! It is taken once, when the session starts, and sent after the system prompt of every
//! request: the cached prefix stays the same from turn to turn (the snapshot says it is as of
//! the start). The model line is added per request ([`crate::engine::options::EngineOptions`]),
//! so a model switch is told.
//!
//! Git runs with its program-running settings neutralised, and not at all in a repository
//! whose configuration can run programs anyway ([`crate::permissions::git`]): then the block
//! says the snapshot is left out and why.

use std::path::Path;
use std::process::Command;

/// Bytes of `git status --short` the snapshot keeps.
pub const STATUS_CAP_BYTES: usize = 2_000;

/// Commits the snapshot lists.
pub const RECENT_COMMITS: usize = 5;

/// The environment of a session in `cwd`, as of now: the block (to which a request adds the
/// model's line), and the git snapshot of a repository.
pub fn take(cwd: &Path) -> (String, Option<String>) {
    let top = crate::permissions::git::repository_top(cwd);
    let os_version = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|v| v.trim().to_owned()).ok();
    let date = &crate::session::time::format_rfc3339_millis(std::time::SystemTime::now())[..10];
    let out = format!(
        "# Environment\n\nWorking directory: {}\nIs a git repository: {}\nPlatform: {}{}\nToday's date: {date}",
        cwd.display(),
        if top.is_some() { "yes" } else { "no" },
        std::env::consts::OS,
        os_version.map(|v| format!(" (kernel {v})")).unwrap_or_default(),
    );
    (out, top.map(|top| snapshot(&top, cwd)))
}

/// [`take`] as one text, the model line left out (for tests).
#[cfg(test)]
fn block(cwd: &Path) -> String {
    match take(cwd) {
        (block, Some(git)) => format!("{block}\n\n{git}"),
        (block, None) => block,
    }
}

/// The git snapshot of the repository at `top`, run from `cwd`.
fn snapshot(top: &Path, cwd: &Path) -> String {
    if let Some(risk) = crate::permissions::git::repo_config_risk(cwd) {
        return format!("Git status: not taken: the repository's configuration can run programs ({risk}).");
    }
    let git = |args: &[&str]| git(cwd, args);
    let branch = git(&["rev-parse", "--abbrev-ref", "HEAD"]).unwrap_or_else(|| "(no commit yet)".into());
    let main = git(&["symbolic-ref", "--short", "refs/remotes/origin/HEAD"])
        .map(|r| r.trim_start_matches("origin/").to_owned())
        .or_else(|| {
            ["main", "master"]
                .into_iter()
                .find(|b| git(&["rev-parse", "--verify", "--quiet", &format!("refs/heads/{b}")]).is_some())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| branch.clone());
    let mut status = git(&["status", "--short"]).unwrap_or_default();
    if status.len() > STATUS_CAP_BYTES {
        let mut end = STATUS_CAP_BYTES;
        while !status.is_char_boundary(end) {
            end -= 1;
        }
        let end = status[..end].rfind('\n').unwrap_or(end);
        let more = status[end..].lines().filter(|l| !l.is_empty()).count();
        status.truncate(end);
        status.push_str(&format!("\n… ({more} more lines: run git status for all of them)"));
    }
    let commits = git(&["log", "--oneline", "-n", &RECENT_COMMITS.to_string()]).unwrap_or_default();
    format!(
        "Git status, as of the start of the session (it changes as work goes on):\nRepository: {}\nCurrent \
         branch: {branch}\nMain branch (for pull requests): {main}\n\nStatus:\n{}\n\nRecent commits:\n{}",
        top.display(),
        if status.is_empty() { "(clean)" } else { &status },
        if commits.is_empty() { "(none)" } else { &commits },
    )
}

/// `git -C dir ARGS` with its program-running settings neutralised; its stdout, trimmed, on
/// success.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let mut command = Command::new("git");
    command.arg("-C").arg(dir).args(args).stdin(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    crate::permissions::git::neutralise_std(&mut command);
    let out = command.output().ok().filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, script: &str) {
        assert!(std::process::Command::new("sh").arg("-c").arg(script).current_dir(dir).status().unwrap().success());
    }

    #[test]
    fn a_repository_gets_its_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        sh(
            &top,
            "git init -q -b main && echo a > a.txt && git add a.txt && \
             git -c user.name=t -c user.email=t@t commit -q -m 'first commit' && echo b > b.txt",
        );
        let text = block(&top);
        let date = &crate::session::time::format_rfc3339_millis(std::time::SystemTime::now())[..10];
        let head = format!(
            "# Environment\n\nWorking directory: {}\nIs a git repository: yes\nPlatform: {}",
            top.display(),
            std::env::consts::OS
        );
        assert!(text.starts_with(&head), "{text}");
        assert!(text.contains(&format!("\nToday's date: {date}\n\nGit status, as of the start")), "{text}");
        let tail = format!(
            "Repository: {}\nCurrent branch: main\nMain branch (for pull requests): main\n\nStatus:\n?? b.txt\n\n\
             Recent commits:\n",
            top.display()
        );
        assert!(text.contains(&tail), "{text}");
        assert!(text.ends_with(" first commit"), "{text}");
    }

    #[test]
    fn no_repository_no_snapshot_and_a_risky_one_is_not_run() {
        let plain = tempfile::tempdir().unwrap();
        let text = block(plain.path());
        assert!(text.contains("\nIs a git repository: no\n") && !text.contains("Git status"), "{text}");
        let dir = tempfile::tempdir().unwrap();
        sh(dir.path(), "git init -q && git config core.fsmonitor 'touch pwned'");
        let text = block(dir.path());
        assert!(text.ends_with("Git status: not taken: the repository's configuration can run programs (.git/config sets core.fsmonitor)."), "{text}");
        assert!(!dir.path().join("pwned").exists());
    }

    #[test]
    fn a_long_status_is_cut_at_a_line() {
        let dir = tempfile::tempdir().unwrap();
        sh(dir.path(), "git init -q && for i in $(seq 1 400); do touch file-$i.txt; done");
        let text = block(dir.path());
        let status = text.split("\n\nStatus:\n").nth(1).unwrap().split("\n\nRecent commits:").next().unwrap();
        assert!(status.len() < STATUS_CAP_BYTES + 80, "{}", status.len());
        assert!(status.lines().last().unwrap().starts_with("… ("), "{status}");
        assert!(status.lines().rev().nth(1).unwrap().starts_with("?? file-"), "{status}");
    }
}

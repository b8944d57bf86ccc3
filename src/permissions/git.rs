//! Git without the repository's programs: a planted `.git/config` must not run code through
//! a command that was approved only because it reads.
//!
//! Two defences. [`repo_config_risk`] reads the repository's own configuration files (without
//! running git) and names any setting that can run a program — an open-ended set, since
//! `diff.<driver>.textconv` and `filter.<driver>.clean` take any driver name — so such a
//! repository gets no auto-approved git at all. And [`neutralise`] makes every git in an
//! auto-approved Bash call ignore the fixed-name settings (`core.fsmonitor`,
//! `core.hooksPath`, `core.pager`, …) through `GIT_CONFIG_*`, which git reads with
//! command-line precedence, in case a configuration changes between the check and the run.

use std::path::{Path, PathBuf};

/// Settings git applies with command-line precedence in an auto-approved call.
pub const NEUTRALISED: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),
    ("core.askPass", "false"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
];

/// Variables removed from an auto-approved call: each names a program git would run, or
/// points git at another repository or configuration.
pub const REMOVED: &[&str] = &[
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_EXEC_PATH",
];

/// Most submodule configuration files read before the repository counts as risky.
const MAX_SUBMODULE_CONFIGS: usize = 64;

/// Apply [`NEUTRALISED`] and [`REMOVED`] to a command (after its own environment is set).
pub fn neutralise(command: &mut tokio::process::Command) {
    for name in REMOVED {
        command.env_remove(name);
    }
    command.env("GIT_CONFIG_COUNT", NEUTRALISED.len().to_string());
    for (i, (key, value)) in NEUTRALISED.iter().enumerate() {
        command.env(format!("GIT_CONFIG_KEY_{i}"), key).env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    command.env("GIT_PAGER", "cat").env("PAGER", "cat");
}

/// Why git in the repository around `cwd` could run a program from the repository's own
/// configuration, naming the file and key; `None` when it cannot (or there is no repository).
pub fn repo_config_risk(cwd: &Path) -> Option<String> {
    let (git_dir, common_dir) = find_repository(cwd)?;
    let mut files = vec![common_dir.join("config"), git_dir.join("config.worktree")];
    let modules = common_dir.join("modules");
    if modules.is_dir() {
        let mut stack = vec![(modules, 0usize)];
        let mut found = 0;
        while let Some((dir, depth)) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if entry.file_name() == "config" && path.is_file() {
                    found += 1;
                    if found > MAX_SUBMODULE_CONFIGS {
                        return Some(format!(
                            "{} holds too many submodule configurations to check",
                            modules_display(&dir)
                        ));
                    }
                    files.push(path);
                } else if depth < 6 && entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((path, depth + 1));
                }
            }
        }
    }
    for file in files {
        let text = match std::fs::read(&file) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Some(format!("{} cannot be read ({e})", file.display())),
        };
        if let Some(key) = risky_key(&text) {
            return Some(format!("{} sets {key}", file.display()));
        }
    }
    None
}

fn modules_display(dir: &Path) -> String {
    dir.display().to_string()
}

/// The git directory and the common directory (where `config` lives) of the repository
/// containing `cwd`, found as git finds it: the nearest `.git` directory or `gitdir:` file.
fn find_repository(cwd: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut dir = Some(cwd);
    while let Some(d) = dir {
        let dot_git = d.join(".git");
        let git_dir = if dot_git.is_dir() {
            Some(dot_git)
        } else if dot_git.is_file() {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
            Some(d.join(target))
        } else {
            None
        };
        if let Some(git_dir) = git_dir {
            let common = match std::fs::read_to_string(git_dir.join("commondir")) {
                Ok(text) => git_dir.join(text.trim()),
                Err(_) => git_dir.clone(),
            };
            return Some((git_dir, common));
        }
        dir = d.parent();
    }
    None
}

/// The first `section[.subsection].key` in a git config text that can run a program.
fn risky_key(text: &str) -> Option<String> {
    let mut section = String::new();
    let mut subsection: Option<String> = None;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header.split(']').next().unwrap_or_default().trim();
            match header.split_once(char::is_whitespace) {
                Some((name, sub)) => {
                    section = name.to_ascii_lowercase();
                    subsection = Some(sub.trim().trim_matches('"').to_owned());
                }
                None => match header.split_once('.') {
                    Some((name, sub)) => {
                        section = name.to_ascii_lowercase();
                        subsection = Some(sub.to_owned());
                    }
                    None => {
                        section = header.to_ascii_lowercase();
                        subsection = None;
                    }
                },
            }
            let rest = raw.split_once(']').map(|(_, r)| r.trim()).unwrap_or_default();
            if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
                continue;
            }
            if let Some(found) = check_key(&section, subsection.as_deref(), rest) {
                return Some(found);
            }
            continue;
        }
        if let Some(found) = check_key(&section, subsection.as_deref(), line) {
            return Some(found);
        }
    }
    None
}

fn check_key(section: &str, subsection: Option<&str>, line: &str) -> Option<String> {
    let key = line.split(['=', ' ', '\t']).next().unwrap_or_default().to_ascii_lowercase();
    if key.is_empty() || !key.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let risky = match (section, subsection, key.as_str()) {
        ("core", None, k) => matches!(
            k,
            "fsmonitor"
                | "hookspath"
                | "pager"
                | "sshcommand"
                | "askpass"
                | "editor"
                | "gitproxy"
                | "alternaterefscommand"
                | "worktree"
        ),
        ("diff", None, "external") => true,
        ("diff", Some(_), k) => matches!(k, "textconv" | "command"),
        ("filter" | "include" | "includeif" | "alias" | "pager" | "protocol", _, _) => true,
        ("merge", Some(_), "driver") => true,
        ("gpg", _, "program") => true,
        ("credential", _, k) => k.contains("helper"),
        ("uploadpack", _, k) => k.contains("hook"),
        ("sequence", None, "editor") => true,
        ("remote", Some(_), k) => matches!(k, "uploadpack" | "receivepack"),
        _ => false,
    };
    risky.then(|| match subsection {
        Some(sub) => format!("{section}.{sub}.{key}"),
        None => format!("{section}.{key}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(config: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), config).unwrap();
        dir
    }

    fn risk(config: &str) -> Option<String> {
        let dir = repo(config);
        let found = repo_config_risk(dir.path());
        found.map(|r| r.rsplit(" sets ").next().unwrap().to_owned())
    }

    #[test]
    fn names_settings_that_run_programs() {
        let clean = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = x\n";
        assert_eq!(risk(clean), None);
        assert_eq!(risk("[core]\n\tfsmonitor = touch /tmp/x\n").as_deref(), Some("core.fsmonitor"));
        assert_eq!(risk("[Core]\n\tHooksPath = .h\n").as_deref(), Some("core.hookspath"));
        assert_eq!(risk("[diff \"bin\"]\n\ttextconv = sh -c x\n").as_deref(), Some("diff.bin.textconv"));
        assert_eq!(risk("[diff.bin]\n\ttextconv = x\n").as_deref(), Some("diff.bin.textconv"));
        assert_eq!(risk("[filter \"lfs\"]\n\tclean = x %f\n").as_deref(), Some("filter.lfs.clean"));
        assert_eq!(risk("[include]\n\tpath = ../evil\n").as_deref(), Some("include.path"));
        assert_eq!(risk("[alias]\n\tst = !sh\n").as_deref(), Some("alias.st"));
        assert_eq!(risk("[core] fsmonitor = x\n").as_deref(), Some("core.fsmonitor"));
        assert_eq!(risk("# [core]\n; fsmonitor = x\n"), None);
    }

    #[test]
    fn finds_the_repository_from_a_subdirectory_a_gitdir_file_and_submodules() {
        let dir = repo("[core]\n\tbare = false\n");
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        assert_eq!(repo_config_risk(&dir.path().join("a/b")), None);
        std::fs::create_dir_all(dir.path().join(".git/modules/sub")).unwrap();
        std::fs::write(dir.path().join(".git/modules/sub/config"), "[core]\n\tfsmonitor = x\n").unwrap();
        let found = repo_config_risk(&dir.path().join("a")).unwrap();
        assert!(found.ends_with("modules/sub/config sets core.fsmonitor"), "{found}");

        let elsewhere = repo("[core]\n\tpager = less\n");
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join(".git"), format!("gitdir: {}\n", elsewhere.path().join(".git").display()))
            .unwrap();
        assert!(repo_config_risk(work.path()).unwrap().ends_with("sets core.pager"));
        assert_eq!(repo_config_risk(Path::new("/")), None);
    }
}

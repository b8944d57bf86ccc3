//! Git and the repository's own configuration.
//!
//! A `git status` or `git log` is read-only as a command line, yet the repository it runs in
//! can make it run programs: `core.fsmonitor` runs on status and diff, a `filter.<driver>.clean`
//! runs on worktree files, `diff.<driver>.textconv` on diff, log -p, show and blame, a
//! `post-index-change` hook whenever status or diff refreshes the index, `gpg.program` on log
//! with `log.showSignature`, `remote.<name>.uploadpack` when a partial clone fetches a missing
//! blob… A planted `.git/config` (an unpacked archive, a checkout of someone else's tree) must
//! not get code execution through a command that was auto-approved. Two layers guard that:
//!
//! 1. [`repo_config_risk`] reads, without running git, the configuration files git would read
//!    in the repository of a working directory, and names the first setting that can run a
//!    program. Where it answers `Some`, git should not be auto-approved.
//! 2. [`neutralise`] (the lists [`neutralising_env`] and [`removed_env`]) gives a shell the
//!    environment under which every git it starts ignores the program-running settings that
//!    can be overridden by name: command-line-scope configuration through `GIT_CONFIG_COUNT`
//!    (read after every file, so it wins), `GIT_PAGER=cat`, no prompts, no lazy fetches, and
//!    none of the variables that would override those settings or point git at another
//!    repository. Configuration passed this way also reaches the git processes started for
//!    submodules.
//!
//! The second layer cannot replace the first. Drivers are named by the repository
//! (`diff.<driver>.textconv`, `diff.<driver>.command`, `filter.<driver>.clean`/`smudge`/`process`,
//! `merge.<driver>.driver`), as are remotes (`remote.<name>.uploadpack`) and include files, so
//! no fixed list of settings can switch them off; and `diff.external` set to the empty string
//! does not disable the external diff, it makes every `git diff` fail trying to run "".
//! Only reading the configuration catches those.
//!
//! What neither layer covers: a repository embedded in the worktree that is not absorbed
//! into `.git/modules` (a `sub/.git` directory, or a `sub/.git` file pointing outside
//! `.git/modules`). `git status` recurses into it when the index has a gitlink there, with or
//! without `.gitmodules`; the environment still stops its fsmonitor and hooks, but its
//! filter drivers run, and finding it would mean reading the index.

use std::ffi::OsStr;
use std::fs;
use std::io::{ErrorKind, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Config files larger than this are not read: they count as a risk.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Most entries read under `<git dir>/modules` (all levels together).
const MAX_MODULE_ENTRIES: usize = 64;
/// Deepest level of `<git dir>/modules` read (`modules/a` is level 1, `modules/a/modules/b`
/// and `modules/x/y` level 2).
const MAX_MODULE_DEPTH: usize = 4;
/// The hook that git status and git diff run when they refresh and write the index.
const INDEX_HOOK: &str = "post-index-change";

/// Why git should not be auto-approved in `cwd`: the first configuration setting (or hook)
/// of the repository git would find from `cwd` that can make a read-only git command run a
/// program, as `"<file> sets <key>"` with the file relative to the worktree when it is inside
/// it (`".git/config sets core.fsmonitor"`) and the key as git names it (lower-case section
/// and key, subsection as written). `None` when there is no repository, or nothing in it can
/// run a program.
///
/// The repository is found as git finds it: from `cwd` with symbolic links resolved, up to
/// `/`, the first `.git` directory, `.git` file (`gitdir: <path>`, relative to the file's
/// directory, as in linked worktrees and submodules) or bare repository. When the git
/// directory has a `commondir` file the shared files live there. Read are
/// `<common dir>/config`, `<git dir>/config.worktree`, the `post-index-change` hook, and the
/// same for every submodule git directory under `<common dir>/modules` (at most
/// 64 entries, 4 levels deep; beyond that the answer is "too many submodule configs").
/// A file that cannot be read or parsed is a risk too: git itself would stop on it, but this
/// check does not guess.
///
/// Nothing is executed; this is a handful of `stat`s and small reads.
pub fn repo_config_risk(cwd: &Path) -> Option<GitRisk> {
    let start = fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let mut dir = start.as_path();
    loop {
        match inspect_level(dir) {
            Level::Risk(reason) => return Some(reason),
            Level::Repository => return None,
            Level::Nothing => dir = dir.parent()?,
        }
    }
}

/// The top of the repository git finds from `cwd` — its worktree, or the git directory of a
/// bare repository — found as [`repo_config_risk`] finds it; `None` outside any repository.
/// When it is above `cwd`, git can print files outside the working directory
/// (`git show HEAD:../x`, `git diff` of the whole repository).
pub fn repository_top(cwd: &Path) -> Option<PathBuf> {
    let start = fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let mut dir = start.as_path();
    loop {
        let dot_git = dir.join(".git");
        match fs::metadata(&dot_git) {
            Ok(meta) if meta.is_dir() && is_git_directory(&dot_git) => return Some(dir.to_path_buf()),
            // git reads any other `.git` as a gitfile and stops here.
            Ok(meta) if !meta.is_dir() => return Some(dir.to_path_buf()),
            _ => {}
        }
        if is_git_directory(dir) {
            return Some(dir.to_path_buf());
        }
        dir = dir.parent()?;
    }
}

/// The environment variables to set on a shell so that every git it runs ignores the
/// program-running settings that can be overridden by name. Each was checked with git 2.47
/// against a repository whose `.git/config` (or hooks directory) plants a program:
///
/// - `core.fsmonitor=false`: status and diff no longer run the planted fsmonitor hook;
/// - `core.hooksPath=/dev/null`: no hook runs, including `.git/hooks/post-index-change`, which
///   status and diff run when they rewrite the index;
/// - `core.pager=cat` and `GIT_PAGER=cat`: no pager (only used on a terminal); `GIT_PAGER`
///   also beats a command's own `pager.<command>`, which `core.pager` does not;
/// - `core.sshCommand=false`: ssh transports run `false` instead of a planted program;
/// - `core.askPass=` (empty): no askpass program, and `SSH_ASKPASS` is not consulted;
///   `GIT_TERMINAL_PROMPT=0`: no prompt on the terminal either;
/// - `credential.helper=` (empty): the list of helpers is emptied, URL-specific ones
///   (`credential.<url>.helper`) included;
/// - `gpg.program` = `gpg` (it also overrides `gpg.openpgp.program`: git keeps the two in one
///   setting, the last read wins), `gpg.ssh.program` = `ssh-keygen`, `gpg.x509.program` =
///   `gpgsm` (git's defaults): `git log` with `log.showSignature` (or `%G?`) verifies
///   signatures with the system's programs, not the repository's. (`false` would get git
///   killed by SIGPIPE writing the payload to it; the empty value prints "cannot run" errors
///   into the log.)
/// - `GIT_NO_LAZY_FETCH=1`: a partial clone does not fetch missing objects (which would run
///   `remote.<name>.uploadpack` or an ssh command from the repository); such commands fail
///   with "lazy fetching disabled" instead.
///
/// `GIT_CONFIG_COUNT` is replaced, so configuration the environment passed that way is lost.
pub fn neutralising_env() -> &'static [(&'static str, &'static str)] {
    NEUTRALISING_ENV
}

const NEUTRALISING_ENV: &[(&str, &str)] = &[
    ("GIT_CONFIG_COUNT", "9"),
    ("GIT_CONFIG_KEY_0", "core.fsmonitor"),
    ("GIT_CONFIG_VALUE_0", "false"),
    ("GIT_CONFIG_KEY_1", "core.hooksPath"),
    ("GIT_CONFIG_VALUE_1", "/dev/null"),
    ("GIT_CONFIG_KEY_2", "core.pager"),
    ("GIT_CONFIG_VALUE_2", "cat"),
    ("GIT_CONFIG_KEY_3", "core.sshCommand"),
    ("GIT_CONFIG_VALUE_3", "false"),
    ("GIT_CONFIG_KEY_4", "core.askPass"),
    ("GIT_CONFIG_VALUE_4", ""),
    ("GIT_CONFIG_KEY_5", "credential.helper"),
    ("GIT_CONFIG_VALUE_5", ""),
    ("GIT_CONFIG_KEY_6", "gpg.program"),
    ("GIT_CONFIG_VALUE_6", "gpg"),
    ("GIT_CONFIG_KEY_7", "gpg.ssh.program"),
    ("GIT_CONFIG_VALUE_7", "ssh-keygen"),
    ("GIT_CONFIG_KEY_8", "gpg.x509.program"),
    ("GIT_CONFIG_VALUE_8", "gpgsm"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_NO_LAZY_FETCH", "1"),
];

/// The environment variables to remove from a shell along with [`neutralising_env`], each
/// checked with git 2.47:
///
/// - `GIT_CONFIG_PARAMETERS` (what `git -c` passes on) is read after `GIT_CONFIG_COUNT`, so
///   it would override the neutralising settings;
/// - `GIT_SSH_COMMAND`, `GIT_ASKPASS` and `GIT_EXTERNAL_DIFF` beat `core.sshCommand`,
///   `core.askPass` and `diff.external`: without them git runs none of those programs
///   (`GIT_SSH` needs no removal: a set `core.sshCommand` beats it);
/// - `GIT_DIR`, `GIT_WORK_TREE` and `GIT_COMMON_DIR` send git to another repository than the
///   one [`repo_config_risk`] inspected.
///
/// Kept on purpose: `GIT_EXEC_PATH` (where this git installation's own programs live),
/// `GIT_CONFIG_GLOBAL` / `GIT_CONFIG_SYSTEM` (the user's files, not the repository's),
/// `GIT_CEILING_DIRECTORIES` (it only makes git stop looking sooner).
pub fn removed_env() -> &'static [&'static str] {
    REMOVED_ENV
}

const REMOVED_ENV: &[&str] = &[
    "GIT_CONFIG_PARAMETERS",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
];

/// Make every git `command` starts ignore the program-running settings that can be
/// overridden: remove [`removed_env`], set [`neutralising_env`]. Call it after the command's
/// base environment is in place, so these win.
pub fn neutralise(command: &mut tokio::process::Command) {
    neutralise_std(command.as_std_mut());
}

/// [`neutralise`] for a [`std::process::Command`] (git run at start-up, outside the runtime).
pub fn neutralise_std(command: &mut std::process::Command) {
    for name in removed_env() {
        command.env_remove(name);
    }
    command.envs(neutralising_env().iter().copied());
}

/// Why git in a repository may run a program, or cannot be shown not to.
#[derive(Debug, thiserror::Error)]
pub enum GitRisk {
    /// A file git reads that cannot be read (git itself would stop on it).
    #[error("cannot read {file}: {why}")]
    Unreadable {
        /// The file, as [`shown`] names it.
        file: String,
        /// Why.
        why: Unreadable,
    },
    /// A config file with a line git would call bad.
    #[error("cannot parse {file}: bad config line {line}")]
    BadConfig {
        /// The file, as [`shown`] names it.
        file: String,
        /// The line.
        line: usize,
    },
    /// A config file that sets a program-running setting.
    #[error("{file} sets {setting}")]
    Sets {
        /// The file, as [`shown`] names it.
        file: String,
        /// The setting as git names it (`core.fsmonitor`).
        setting: String,
    },
    /// The `post-index-change` hook exists.
    #[error("{0} exists (git status and git diff run it)")]
    IndexHook(String),
    /// More entries under `<common dir>/modules` than are checked.
    #[error("too many submodule configs: more than {MAX_MODULE_ENTRIES} entries under {0}")]
    TooManyModules(String),
    /// Submodule git directories nested deeper than are checked.
    #[error("too many submodule configs: {0} nests deeper than {MAX_MODULE_DEPTH} levels")]
    ModulesTooDeep(String),
}

/// Why a file git reads cannot be read as one.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    /// The read failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Something else than a regular file is in its place.
    #[error("not a regular file")]
    NotRegular,
    /// Larger than any config git would be given.
    #[error("larger than {MAX_CONFIG_BYTES} bytes")]
    TooLarge,
    /// A `.git` file that was there is gone.
    #[error("it disappeared")]
    Disappeared,
    /// A `.git` file that is no gitfile.
    #[error("it does not start with `gitdir: `")]
    NotAGitfile,
    /// A gitfile whose `gitdir:` is empty.
    #[error("it names no directory")]
    NoDirectory,
}

/// What one directory on the way up from the working directory holds.
enum Level {
    /// A repository git may use here whose configuration can run a program.
    Risk(GitRisk),
    /// The repository git uses, and nothing in it runs a program.
    Repository,
    /// No repository git would stop at: go on up.
    Nothing,
}

/// `dir/.git`, then `dir` itself as a bare repository, as git looks at each level. A
/// candidate git would skip (a `.git` directory that is not a valid git directory) is still
/// inspected, but the search goes on past it.
fn inspect_level(dir: &Path) -> Level {
    let dot_git = dir.join(".git");
    match fs::metadata(&dot_git) {
        Ok(meta) if meta.is_dir() => {
            if let Err(reason) = inspect_repository(Some(dir), &dot_git, false) {
                return Level::Risk(reason);
            }
            if is_git_directory(&dot_git) {
                return Level::Repository;
            }
        }
        // git reads any other `.git` as a gitfile and stops here, found or failed.
        Ok(_) => {
            let found =
                read_gitfile(&dot_git).map_err(|why| GitRisk::Unreadable { file: shown(&dot_git, Some(dir)), why });
            return match found.and_then(|git_dir| inspect_repository(Some(dir), &git_dir, false)) {
                Ok(()) => Level::Repository,
                Err(reason) => Level::Risk(reason),
            };
        }
        Err(_) => {}
    }
    if fs::symlink_metadata(dir.join("HEAD")).is_ok() {
        if let Err(reason) = inspect_repository(None, dir, false) {
            return Level::Risk(reason);
        }
        if is_git_directory(dir) {
            return Level::Repository;
        }
    }
    Level::Nothing
}

/// The git directory a `.git` file names: `gitdir: <path>`, relative to the file's directory.
fn read_gitfile(file: &Path) -> Result<PathBuf, Unreadable> {
    let text = read_regular(file)?.ok_or(Unreadable::Disappeared)?;
    let text = text.strip_prefix(b"gitdir: ").ok_or(Unreadable::NotAGitfile)?;
    let path = Path::new(OsStr::from_bytes(trim_newlines(text)));
    if path.as_os_str().is_empty() {
        return Err(Unreadable::NoDirectory);
    }
    Ok(file.parent().unwrap_or(Path::new("/")).join(path))
}

fn trim_newlines(text: &[u8]) -> &[u8] {
    let end = text.iter().rposition(|&b| b != b'\n' && b != b'\r').map_or(0, |i| i + 1);
    &text[..end]
}

/// The whole of `path` when it is a regular file of at most [`MAX_CONFIG_BYTES`], `None`
/// when it does not exist, or why it cannot be read. Opened without blocking and checked
/// once open, so a FIFO in its place cannot hang the check.
fn read_regular(path: &Path) -> Result<Option<Vec<u8>>, Unreadable> {
    let file = match fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if !file.metadata()?.is_file() {
        return Err(Unreadable::NotRegular);
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(Unreadable::TooLarge);
    }
    Ok(Some(bytes))
}

/// The directory holding the shared files of `git_dir`: the one its `commondir` file names
/// (relative to `git_dir`), or `git_dir` itself.
fn common_dir(git_dir: &Path, top: Option<&Path>) -> Result<PathBuf, GitRisk> {
    let file = git_dir.join("commondir");
    match read_regular(&file) {
        Ok(None) => Ok(git_dir.to_path_buf()),
        Ok(Some(text)) => Ok(git_dir.join(OsStr::from_bytes(trim_newlines(&text)))),
        Err(why) => Err(GitRisk::Unreadable { file: shown(&file, top), why }),
    }
}

/// Whether git accepts `dir` as a git directory: a valid `HEAD`, and `objects` and `refs`
/// directories it may enter in the common directory. Stricter than git where it differs
/// (a `refs` that is an executable file), so a directory accepted here is one git stops at.
fn is_git_directory(dir: &Path) -> bool {
    if !valid_head(&dir.join("HEAD")) {
        return false;
    }
    let Ok(common) = common_dir(dir, None) else { return false };
    ["objects", "refs"].iter().all(|name| {
        let path = common.join(name);
        path.is_dir() && searchable(&path)
    })
}

/// Git's test of `HEAD`: a symbolic link to `refs/…`, a file `ref: refs/…`, or an object id.
fn valid_head(head: &Path) -> bool {
    let Ok(meta) = fs::symlink_metadata(head) else { return false };
    if meta.file_type().is_symlink() {
        return fs::read_link(head).is_ok_and(|target| target.as_os_str().as_bytes().starts_with(b"refs/"));
    }
    if !meta.is_file() {
        return false;
    }
    let mut start = Vec::new();
    if fs::File::open(head).and_then(|file| file.take(255).read_to_end(&mut start)).is_err() {
        return false;
    }
    if let Some(target) = start.strip_prefix(b"ref:") {
        let target = target.trim_ascii_start();
        return target.starts_with(b"refs/");
    }
    start.len() >= 40 && start[..40].iter().all(u8::is_ascii_hexdigit)
}

/// Whether this process may enter the directory `path` (`access(path, X_OK)`).
fn searchable(path: &Path) -> bool {
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: `path` is a NUL-terminated string that outlives the call; access(2) only reads it.
    unsafe { libc::access(path.as_ptr(), libc::X_OK) == 0 }
}

/// Check the files git reads for the repository whose git directory is `git_dir`, and the
/// submodule git directories under it. `top` is the worktree, for naming files.
fn inspect_repository(top: Option<&Path>, git_dir: &Path, submodule: bool) -> Result<(), GitRisk> {
    let common = common_dir(git_dir, top)?;
    check_config(&common.join("config"), top, submodule)?;
    check_config(&git_dir.join("config.worktree"), top, submodule)?;
    let hook = common.join("hooks").join(INDEX_HOOK);
    if fs::symlink_metadata(&hook).is_ok() {
        return Err(GitRisk::IndexHook(shown(&hook, top)));
    }
    if !submodule {
        let root = common.join("modules");
        let mut scan = ModuleScan { top, root: &root, seen: 0 };
        scan.scan(&root, 1)?;
    }
    Ok(())
}

/// A bounded walk of `<common dir>/modules`.
struct ModuleScan<'a> {
    top: Option<&'a Path>,
    root: &'a Path,
    /// Entries read so far, at every level.
    seen: usize,
}

impl ModuleScan<'_> {
    /// Every submodule git directory under `dir` (a `modules` directory, or a directory on
    /// the way to one whose name has slashes): a directory with a `config` or `HEAD` is one.
    fn scan(&mut self, dir: &Path, level: usize) -> Result<(), GitRisk> {
        let top = self.top;
        let unreadable = |e: std::io::Error| GitRisk::Unreadable { file: shown(dir, top), why: e.into() };
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => return Ok(()),
            Err(e) => return Err(unreadable(e)),
        };
        for entry in entries {
            let entry = entry.map_err(unreadable)?;
            self.seen += 1;
            if self.seen > MAX_MODULE_ENTRIES {
                return Err(GitRisk::TooManyModules(shown(self.root, self.top)));
            }
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            if level > MAX_MODULE_DEPTH {
                return Err(GitRisk::ModulesTooDeep(shown(self.root, self.top)));
            }
            if fs::symlink_metadata(path.join("config")).is_ok() || fs::symlink_metadata(path.join("HEAD")).is_ok() {
                inspect_repository(self.top, &path, true)?;
                self.scan(&path.join("modules"), level + 1)?;
            } else {
                self.scan(&path, level + 1)?;
            }
        }
        Ok(())
    }
}

/// Parse one config file and name the first program-running setting in it. A missing file
/// is fine: git reads nothing from it either.
fn check_config(path: &Path, top: Option<&Path>, submodule: bool) -> Result<(), GitRisk> {
    let Some(bytes) = read_regular(path).map_err(|why| GitRisk::Unreadable { file: shown(path, top), why })? else {
        return Ok(());
    };
    let entries = parse_config(&bytes).map_err(|line| GitRisk::BadConfig { file: shown(path, top), line })?;
    match entries.iter().find(|entry| entry.runs_program(submodule)) {
        Some(entry) => Err(GitRisk::Sets { file: shown(path, top), setting: entry.name.clone() }),
        None => Ok(()),
    }
}

/// `path` relative to the worktree `top` when it is inside it, else absolute; `..` and `.`
/// resolved by name.
fn shown(path: &Path, top: Option<&Path>) -> String {
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    match top.and_then(|top| clean.strip_prefix(top).ok()) {
        Some(inside) => inside.display().to_string(),
        None => clean.display().to_string(),
    }
}

/// One setting of a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// The full name as git canonicalises it: `section[.subsection].key`, section and key in
    /// lower case.
    name: String,
    /// The value; `None` for a bare `key` (true).
    value: Option<Vec<u8>>,
}

impl Entry {
    /// The section (up to the first dot) and the key (after the last dot); the subsection
    /// between them does not matter to any rule.
    fn section_and_key(&self) -> Option<(&str, &str)> {
        let (section, _) = self.name.split_once('.')?;
        let (_, key) = self.name.rsplit_once('.')?;
        Some((section, key))
    }

    /// Whether this setting can make git run another program (or, for `core.worktree`, move
    /// the worktree git reads elsewhere). `core.worktree` is normal in submodule git
    /// directories and only counted elsewhere.
    fn runs_program(&self, submodule: bool) -> bool {
        let Some((section, key)) = self.section_and_key() else { return false };
        match section {
            "alias" | "filter" | "include" | "includeif" | "pager" | "protocol" => true,
            "core" => {
                matches!(
                    key,
                    "fsmonitor"
                        | "hookspath"
                        | "pager"
                        | "sshcommand"
                        | "askpass"
                        | "editor"
                        | "gitproxy"
                        | "alternaterefscommand"
                ) || (key == "worktree" && !submodule)
            }
            "diff" => matches!(key, "external" | "textconv" | "command"),
            "merge" => key == "driver",
            "gpg" => matches!(key, "program" | "defaultkeycommand"),
            "credential" => key == "helper",
            "uploadpack" => key.contains("hook"),
            "sequence" => key == "editor",
            "remote" => matches!(key, "uploadpack" | "receivepack"),
            "interactive" => key == "difffilter",
            "trailer" => matches!(key, "command" | "cmd"),
            "difftool" | "mergetool" | "guitool" | "browser" | "man" => matches!(key, "cmd" | "path"),
            "sendemail" => matches!(key, "smtpserver" | "tocmd" | "cccmd" | "sendmailcmd"),
            "imap" => key == "tunnel",
            "submodule" => key == "update" && self.value.as_deref().is_some_and(|v| v.starts_with(b"!")),
            _ => false,
        }
    }
}

/// Git's reading of a config file, byte by byte: `\r\n` is a newline, and the end of the
/// input reads as newlines.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
    eof: bool,
}

impl Reader<'_> {
    fn next(&mut self) -> u8 {
        let Some(&c) = self.bytes.get(self.at) else {
            self.eof = true;
            return b'\n';
        };
        self.at += 1;
        let c = if c == b'\r' && self.bytes.get(self.at) == Some(&b'\n') {
            self.at += 1;
            b'\n'
        } else {
            c
        };
        if c == b'\n' {
            self.line += 1;
        }
        c
    }
}

/// Git's `isspace`: space, tab, newline, carriage return.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// The settings of a config file in order, as git reads them (sections `[core]`,
/// `[diff "x"]` and the legacy `[diff.x]`, case-insensitive section and key names, `#` and
/// `;` comments, quoted values, escapes, `\` continuation lines, a bare `key` meaning true,
/// settings on the line of their section header). `Err` holds the line git would call bad.
fn parse_config(bytes: &[u8]) -> Result<Vec<Entry>, usize> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut r = Reader { bytes, at: 0, line: 1, eof: false };
    // The current section as a name prefix ending in `.`; empty before the first header.
    let mut prefix = String::new();
    let mut comment = false;
    let mut entries = Vec::new();
    loop {
        let c = r.next();
        if c == b'\n' {
            if r.eof {
                return Ok(entries);
            }
            comment = false;
            continue;
        }
        if comment || is_space(c) {
            continue;
        }
        if c == b'#' || c == b';' {
            comment = true;
            continue;
        }
        if c == b'[' {
            let line = r.line;
            prefix = section_header(&mut r).ok_or(line)?;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return Err(r.line);
        }
        let line = r.line;
        let (key, value) = key_and_value(&mut r, c).ok_or(line)?;
        entries.push(Entry { name: format!("{prefix}{key}"), value });
    }
}

/// After `[`: the section as a name prefix, `section.` or `section.subsection.`.
fn section_header(r: &mut Reader<'_>) -> Option<String> {
    let mut name = String::new();
    loop {
        let c = r.next();
        if r.eof {
            return None;
        }
        if c == b']' {
            return (!name.is_empty()).then(|| name + ".");
        }
        if is_space(c) {
            return extended_header(r, name, c);
        }
        if !is_key_char(c) && c != b'.' {
            return None;
        }
        name.push(char::from(c.to_ascii_lowercase()));
    }
}

/// `[section "subsection"]` after the blank: the subsection keeps its case, `\` escapes the
/// next character, and nothing but `]` may follow the closing quote.
fn extended_header(r: &mut Reader<'_>, name: String, mut c: u8) -> Option<String> {
    loop {
        if c == b'\n' {
            return None;
        }
        c = r.next();
        if !is_space(c) {
            break;
        }
    }
    if c != b'"' {
        return None;
    }
    let mut sub = Vec::new();
    loop {
        let mut c = r.next();
        if c == b'\n' {
            return None;
        }
        if c == b'"' {
            break;
        }
        if c == b'\\' {
            c = r.next();
            if c == b'\n' {
                return None;
            }
        }
        sub.push(c);
    }
    (r.next() == b']').then(|| format!("{name}.{}.", String::from_utf8_lossy(&sub)))
}

/// A key starting with `first`, then `= value` or the end of the line.
fn key_and_value(r: &mut Reader<'_>, first: u8) -> Option<(String, Option<Vec<u8>>)> {
    let mut key = String::from(char::from(first.to_ascii_lowercase()));
    let mut c;
    loop {
        c = r.next();
        if r.eof || !is_key_char(c) {
            break;
        }
        key.push(char::from(c.to_ascii_lowercase()));
    }
    while c == b' ' || c == b'\t' {
        c = r.next();
    }
    if c == b'\n' {
        return Some((key, None));
    }
    if c != b'=' {
        return None;
    }
    Some((key, Some(value(r)?)))
}

/// A value up to the end of its line: quotes, escapes (`\n`, `\t`, `\b`, `\\`, `\"`),
/// `\` before a newline continuing it on the next line, comments outside quotes, trailing
/// blanks dropped.
fn value(r: &mut Reader<'_>) -> Option<Vec<u8>> {
    let (mut quote, mut comment) = (false, false);
    let mut out = Vec::new();
    let mut trim = None;
    loop {
        let c = r.next();
        if c == b'\n' {
            if quote {
                return None;
            }
            if let Some(len) = trim {
                out.truncate(len);
            }
            return Some(out);
        }
        if comment {
            continue;
        }
        if is_space(c) && !quote {
            trim.get_or_insert(out.len());
            if !out.is_empty() {
                out.push(c);
            }
            continue;
        }
        if !quote && (c == b';' || c == b'#') {
            comment = true;
            continue;
        }
        trim = None;
        if c == b'\\' {
            let escaped = match r.next() {
                b'\n' => continue,
                b't' => b'\t',
                b'b' => 8,
                b'n' => b'\n',
                c @ (b'\\' | b'"') => c,
                _ => return None,
            };
            out.push(escaped);
            continue;
        }
        if c == b'"' {
            quote = !quote;
            continue;
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests;

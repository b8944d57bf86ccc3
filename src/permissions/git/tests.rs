//! Tests of the git guard against real repositories made with the git on the machine.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use super::*;

/// `git` in `dir` with only the repository's configuration (no global or system file), no
/// terminal prompts, and none of the inherited `GIT_*` variables.
fn git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command.current_dir(dir).stdin(Stdio::null());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("GIT_") {
            command.env_remove(name);
        }
    }
    command.env("GIT_CONFIG_GLOBAL", "/dev/null").env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_TERMINAL_PROMPT", "0");
    command
}

/// Run `command`, which must succeed; its stdout.
fn ok(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(out.status.success(), "{command:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `command` with the guard's environment: [`removed_env`] removed, [`neutralising_env`] set.
fn guarded(command: &mut Command) -> &mut Command {
    for name in removed_env() {
        command.env_remove(name);
    }
    command.envs(neutralising_env().iter().copied())
}

/// A temporary directory (canonical path) holding a fresh repository `repo`.
struct Repo {
    _tmp: tempfile::TempDir,
    /// The temporary directory.
    root: PathBuf,
    /// The repository's worktree, `root/repo`.
    top: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let top = root.join("repo");
        ok(git(&root).args(["init", "-q", "repo"]));
        Repo { _tmp: tmp, root, top }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.top.join(relative)
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// Add `text` to `.git/config`.
    fn configure(&self, text: &str) {
        let mut config = fs::read_to_string(self.path(".git/config")).unwrap();
        config.push_str(text);
        self.write(".git/config", &config);
    }

    /// Commit everything.
    fn commit(&self) {
        ok(git(&self.top).args(["add", "-A"]));
        ok(git(&self.top).args(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]));
    }

    /// A program at `root/bin/name` that creates `root/bin/name.ran`, then runs `then`.
    fn plant(&self, name: &str, then: &str) -> Planted {
        let program = self.root.join("bin").join(name);
        fs::create_dir_all(program.parent().unwrap()).unwrap();
        fs::write(&program, format!("#!/bin/sh\ntouch \"$0.ran\"\n{then}\n")).unwrap();
        fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
        Planted { marker: program.with_extension("ran"), program }
    }

    fn risk(&self) -> Option<String> {
        risk_at(&self.top)
    }
}

/// A program a test plants, and the file it creates when it runs.
struct Planted {
    program: PathBuf,
    marker: PathBuf,
}

impl Planted {
    fn path(&self) -> &str {
        self.program.to_str().unwrap()
    }

    /// Whether the program ran since the last call.
    fn ran(&self) -> bool {
        fs::remove_file(&self.marker).is_ok()
    }
}

/// The risk `repo_config_risk` finds from `dir`, as its message.
fn risk_at(dir: &Path) -> Option<String> {
    repo_config_risk(dir).map(|risk| risk.to_string())
}

fn some(reason: &str) -> Option<String> {
    Some(reason.to_owned())
}

// ---- repo_config_risk ----

#[test]
fn a_fresh_repository_and_no_repository_are_no_risk() {
    let repo = Repo::new();
    assert_eq!(repo.risk(), None);
    fs::create_dir_all(repo.path("a/b")).unwrap();
    assert_eq!(risk_at(&repo.path("a/b")), None);
    let elsewhere = tempfile::tempdir().unwrap();
    assert_eq!(risk_at(elsewhere.path()), None);
}

#[test]
fn every_program_running_setting_is_named() {
    let repo = Repo::new();
    let fresh = fs::read_to_string(repo.path(".git/config")).unwrap();
    let cases: &[(&str, &str)] = &[
        ("[core]\n\tfsmonitor = /x\n", "core.fsmonitor"),
        ("[core]\n\thooksPath = hooks\n", "core.hookspath"),
        ("[core]\n\tpager = less\n", "core.pager"),
        ("[pager]\n\tlog = less\n", "pager.log"),
        ("[diff]\n\texternal = difft\n", "diff.external"),
        ("[diff \"pdf\"]\n\ttextconv = pdftotext\n", "diff.pdf.textconv"),
        ("[diff \"pdf\"]\n\tcommand = pdfdiff\n", "diff.pdf.command"),
        ("[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n", "filter.lfs.clean"),
        ("[filter \"x\"]\n\tprocess = x\n", "filter.x.process"),
        ("[merge \"ours\"]\n\tdriver = true\n", "merge.ours.driver"),
        ("[gpg]\n\tprogram = gpg2\n", "gpg.program"),
        ("[gpg \"ssh\"]\n\tprogram = x\n", "gpg.ssh.program"),
        ("[core]\n\tsshCommand = ssh -i k\n", "core.sshcommand"),
        ("[core]\n\taskPass = x\n", "core.askpass"),
        ("[credential]\n\thelper = store\n", "credential.helper"),
        ("[credential \"https://example.com\"]\n\thelper = x\n", "credential.https://example.com.helper"),
        ("[include]\n\tpath = ../other\n", "include.path"),
        ("[includeIf \"gitdir:~/\"]\n\tpath = x\n", "includeif.gitdir:~/.path"),
        ("[core]\n\talternateRefsCommand = x\n", "core.alternaterefscommand"),
        ("[uploadpack]\n\tpackObjectsHook = x\n", "uploadpack.packobjectshook"),
        ("[core]\n\teditor = vim\n", "core.editor"),
        ("[sequence]\n\teditor = vim\n", "sequence.editor"),
        ("[alias]\n\tst = status\n", "alias.st"),
        ("[core]\n\tgitProxy = x\n", "core.gitproxy"),
        ("[protocol \"ext\"]\n\tallow = always\n", "protocol.ext.allow"),
        ("[remote \"origin\"]\n\tuploadpack = x\n", "remote.origin.uploadpack"),
        ("[remote \"origin\"]\n\treceivepack = x\n", "remote.origin.receivepack"),
        ("[core]\n\tworktree = /elsewhere\n", "core.worktree"),
        ("[interactive]\n\tdiffFilter = x\n", "interactive.difffilter"),
        ("[trailer \"sign\"]\n\tcommand = x\n", "trailer.sign.command"),
        ("[submodule \"s\"]\n\tupdate = !x\n", "submodule.s.update"),
    ];
    for (text, key) in cases {
        repo.write(".git/config", &format!("{fresh}{text}"));
        assert_eq!(repo.risk(), Some(format!(".git/config sets {key}")), "{text}");
    }
}

#[test]
fn harmless_settings_are_no_risk() {
    let repo = Repo::new();
    repo.configure(concat!(
        "[remote \"origin\"]\n\turl = git@example.com:x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
        "[branch \"main\"]\n\tremote = origin\n",
        "[submodule \"s\"]\n\tupdate = rebase\n\turl = ../s\n",
        "[user]\n\tname = \"fsmonitor = x\" # [core] pager = x\n",
        "; [core] fsmonitor = x\n",
        "# [alias] st = status\n",
        "[log]\n\tshowSignature = true\n",
        "[core]\n\tautocrlf = input\n\tfsmonitorHookVersion = 2\n",
        "[core]\n\tcomment = \"first \\\n\tfsmonitor = x\"\n",
    ));
    assert_eq!(repo.risk(), None);
}

#[test]
fn names_are_read_as_git_reads_them() {
    let repo = Repo::new();
    let fresh = fs::read_to_string(repo.path(".git/config")).unwrap();
    let cases: &[(&str, &str)] = &[
        ("[CORE]\n\tFsMonitor = x\n", "core.fsmonitor"),
        ("[Diff.PDF]\n\tTextConv = x\n", "diff.pdf.textconv"),
        ("[diff \"PDF\"]\n\tTEXTCONV = x\n", "diff.PDF.textconv"),
        ("[diff.a \"B\"]\n\ttextconv = x\n", "diff.a.B.textconv"),
        ("[core] fsmonitor = x\n", "core.fsmonitor"),
        ("[user]name=x\n[core]pager\n", "core.pager"),
        ("[user]\n\tname = \"x \\\n\"\n[alias]\n\tst = status\n", "alias.st"),
        ("[user]\n\tname = x \\\n y\n\tpager = y\n[core]hooksPath=x", "core.hookspath"),
    ];
    for (text, key) in cases {
        repo.write(".git/config", &format!("{fresh}{text}"));
        assert_eq!(repo.risk(), Some(format!(".git/config sets {key}")), "{text}");
    }
}

#[test]
fn the_parser_agrees_with_git() {
    let repo = Repo::new();
    let file = repo.root.join("sample.config");
    let inputs: &[&[u8]] = &[
        b"[core] fsmonitor = a\n[diff.PDF]textconv=b\n[x \"Sub.Dot\"] K-1\n[alias]\n st = \"status \\\n fsmonitor = c\" ; trailing\nv = x\\\n  pager = y\n[a.B \"c\"] Key = \"q # r\" # s\n[sec] k = v\\",
        b"\xEF\xBB\xBF[core]k\n",
        b"[core]\r\nk = v \r\n\tq=\"a\\tb\\nc\\\\d\\\"e\"\r\n",
        b"[ \"x\"]k=v\n",
        b"k=v\n[s]\n",
        b"[a \"b\\\"c\\\\d\"]\n  x  =  spaced  value  \n",
        b"[core]\n key # c\n",
        b"[core ]\n",
        b"[core]k=v\\x\n",
        b"[core\n",
        b"[]\nk=v\n",
        b"[core]\n1k = v\n",
        b"[core]\nk = \"open\n",
        b"[a \"b\"x]\n",
    ];
    for input in inputs {
        fs::write(&file, input).unwrap();
        let out = git(&repo.root).args(["config", "-z", "-l", "-f"]).arg(&file).output().unwrap();
        let git_says: Option<Vec<String>> = out.status.success().then(|| {
            out.stdout
                .split(|&b| b == 0)
                .filter(|entry| !entry.is_empty())
                .map(|entry| String::from_utf8_lossy(entry).replacen('\n', "=", 1))
                .collect()
        });
        let we_say = parse_config(input).ok().map(|entries| {
            entries
                .iter()
                .map(|e| match &e.value {
                    Some(value) => format!("{}={}", e.name, String::from_utf8_lossy(value)),
                    None => e.name.clone(),
                })
                .collect::<Vec<_>>()
        });
        assert_eq!(we_say, git_says, "{}", String::from_utf8_lossy(input));
    }
    assert_eq!(parse_config(b"[core]\n key # c\n"), Err(2));
}

#[test]
fn a_gitfile_leads_to_its_git_directory() {
    let repo = Repo::new();
    let store = repo.root.join("store");
    fs::create_dir_all(&store).unwrap();
    fs::rename(repo.path(".git"), store.join("repo.git")).unwrap();
    repo.write(".git", "gitdir: ../store/repo.git\n");
    fs::create_dir_all(repo.path("a/b")).unwrap();
    assert_eq!(risk_at(&repo.path("a/b")), None);
    let mut config = fs::read_to_string(store.join("repo.git/config")).unwrap();
    config.push_str("[core]\n\tfsmonitor = x\n");
    fs::write(store.join("repo.git/config"), config).unwrap();
    let expected = format!("{}/store/repo.git/config sets core.fsmonitor", repo.root.display());
    assert_eq!(risk_at(&repo.path("a/b")), Some(expected.clone()));
    assert_eq!(repo.risk(), Some(expected));

    repo.write(".git", "worktree: elsewhere\n");
    assert_eq!(repo.risk(), some("cannot read .git: it does not start with `gitdir: `"));
}

#[test]
fn a_nested_working_directory_finds_the_repository() {
    let repo = Repo::new();
    fs::create_dir_all(repo.path("src/deep/er")).unwrap();
    repo.configure("[filter \"crypt\"]\n\tsmudge = x\n");
    assert_eq!(risk_at(&repo.path("src/deep/er")), some(".git/config sets filter.crypt.smudge"));
    // A `.git` directory git does not accept does not hide the repository above it.
    fs::create_dir_all(repo.path("src/.git")).unwrap();
    assert_eq!(risk_at(&repo.path("src/deep")), some(".git/config sets filter.crypt.smudge"));
}

#[test]
fn a_symlinked_working_directory_is_resolved_first() {
    let repo = Repo::new();
    repo.configure("[alias]\n\tl = log\n");
    let link = repo.root.join("link");
    std::os::unix::fs::symlink(&repo.top, &link).unwrap();
    assert_eq!(risk_at(&link), some(".git/config sets alias.l"));
}

#[test]
fn a_linked_worktree_reads_the_common_config_and_its_own() {
    let repo = Repo::new();
    repo.write("f", "x\n");
    repo.commit();
    ok(git(&repo.top).args(["worktree", "add", "-q", "../wt"]));
    let wt = repo.root.join("wt");
    assert_eq!(risk_at(&wt), None);
    fs::write(repo.path(".git/worktrees/wt/config.worktree"), "[core]\n\tpager = x\n").unwrap();
    assert_eq!(
        risk_at(&wt),
        Some(format!("{}/repo/.git/worktrees/wt/config.worktree sets core.pager", repo.root.display()))
    );
    repo.configure("[diff]\n\texternal = x\n");
    assert_eq!(risk_at(&wt), Some(format!("{}/repo/.git/config sets diff.external", repo.root.display())));
}

#[test]
fn a_bare_repository_is_found_from_inside() {
    let repo = Repo::new();
    ok(git(&repo.root).args(["init", "-q", "--bare", "bare.git"]));
    let bare = repo.root.join("bare.git");
    assert_eq!(risk_at(&bare.join("refs/heads")), None);
    let mut config = fs::read_to_string(bare.join("config")).unwrap();
    config.push_str("[gpg \"x509\"]\n\tprogram = x\n");
    fs::write(bare.join("config"), config).unwrap();
    let expected = format!("{}/bare.git/config sets gpg.x509.program", repo.root.display());
    assert_eq!(risk_at(&bare.join("refs/heads")), Some(expected.clone()));
    assert_eq!(risk_at(&bare), Some(expected));
}

#[test]
fn submodule_configs_are_read() {
    let repo = Repo::new();
    repo.write(".git/modules/sub/config", "[core]\n\tworktree = ../../../sub\n");
    repo.write(".git/modules/sub/HEAD", "ref: refs/heads/main\n");
    repo.write(".git/modules/path/to/other/config", "[core]\n\tbare = false\n");
    assert_eq!(repo.risk(), None, "core.worktree is normal in a submodule");
    repo.write(".git/modules/sub/config", "[core]\n\tworktree = ../../../sub\n\tfsmonitor = x\n");
    assert_eq!(repo.risk(), some(".git/modules/sub/config sets core.fsmonitor"));
    repo.write(".git/modules/sub/config", "");
    repo.write(".git/modules/path/to/other/modules/nested/config", "[diff \"x\"]\n\ttextconv = x\n");
    assert_eq!(repo.risk(), some(".git/modules/path/to/other/modules/nested/config sets diff.x.textconv"));
    fs::remove_file(repo.path(".git/modules/path/to/other/modules/nested/config")).unwrap();
    repo.write(".git/modules/sub/config.worktree", "[core]\n\tsshCommand = x\n");
    assert_eq!(repo.risk(), some(".git/modules/sub/config.worktree sets core.sshcommand"));
    fs::remove_file(repo.path(".git/modules/sub/config.worktree")).unwrap();
    repo.write(".git/modules/sub/hooks/post-index-change", "#!/bin/sh\n");
    assert_eq!(repo.risk(), some(".git/modules/sub/hooks/post-index-change exists (git status and git diff run it)"));
}

#[test]
fn submodule_configs_are_bounded() {
    let repo = Repo::new();
    // Four levels is the deepest read.
    repo.write(".git/modules/a/b/c/d/config", "");
    assert_eq!(repo.risk(), None);
    repo.write(".git/modules/a/b/c/x/y/config", "");
    assert_eq!(repo.risk(), some("too many submodule configs: .git/modules nests deeper than 4 levels"));
    fs::remove_dir_all(repo.path(".git/modules")).unwrap();
    for i in 0..64 {
        repo.write(&format!(".git/modules/s{i}/config"), "");
    }
    assert_eq!(repo.risk(), None);
    repo.write(".git/modules/s64/config", "");
    assert_eq!(repo.risk(), some("too many submodule configs: more than 64 entries under .git/modules"));
}

#[test]
fn the_index_hook_is_a_risk() {
    let repo = Repo::new();
    repo.write(".git/hooks/post-index-change.sample", "#!/bin/sh\n");
    assert_eq!(repo.risk(), None);
    repo.write(".git/hooks/post-index-change", "#!/bin/sh\n");
    assert_eq!(repo.risk(), some(".git/hooks/post-index-change exists (git status and git diff run it)"));
}

#[test]
fn unreadable_or_unparsable_configs_are_risks() {
    let repo = Repo::new();
    repo.write(".git/config", "[core]\n\tbare = false\n[core\n");
    assert_eq!(repo.risk(), some("cannot parse .git/config: bad config line 3"));
    fs::remove_file(repo.path(".git/config")).unwrap();
    assert_eq!(repo.risk(), None, "a missing config is an empty one");
    fs::create_dir(repo.path(".git/config")).unwrap();
    assert_eq!(repo.risk(), some("cannot read .git/config: not a regular file"));
    fs::remove_dir(repo.path(".git/config")).unwrap();
    repo.write(".git/config", &"#".repeat(MAX_CONFIG_BYTES as usize + 1));
    assert_eq!(repo.risk(), some("cannot read .git/config: larger than 1048576 bytes"));
}

// ---- the environment ----

#[test]
fn neutralising_env_is_well_formed() {
    let env = neutralising_env();
    let count: usize = env.iter().find(|(name, _)| *name == "GIT_CONFIG_COUNT").unwrap().1.parse().unwrap();
    for i in 0..count {
        assert_eq!(env.iter().filter(|(name, _)| *name == format!("GIT_CONFIG_KEY_{i}")).count(), 1, "key {i}");
        assert_eq!(env.iter().filter(|(name, _)| *name == format!("GIT_CONFIG_VALUE_{i}")).count(), 1, "value {i}");
    }
    assert_eq!(env.iter().filter(|(name, _)| name.starts_with("GIT_CONFIG_KEY_")).count(), count);
    assert_eq!(env.iter().filter(|(name, _)| name.starts_with("GIT_CONFIG_VALUE_")).count(), count);
    for name in removed_env() {
        assert!(!env.iter().any(|(set, _)| set == name), "{name} is both set and removed");
    }
}

/// Run `git args` in `repo` twice, without and with the guard: whether `planted` ran each time.
fn runs(repo: &Repo, planted: &Planted, args: &[&str], prepare: impl Fn(&mut Command)) -> (bool, bool) {
    let mut plain = git(&repo.top);
    plain.args(args);
    prepare(&mut plain);
    plain.output().unwrap();
    let unguarded = planted.ran();
    let mut command = git(&repo.top);
    command.args(args);
    prepare(&mut command);
    guarded(&mut command).output().unwrap();
    (unguarded, planted.ran())
}

#[test]
fn the_guard_stops_fsmonitor() {
    let repo = Repo::new();
    let planted = repo.plant("fsmonitor", "");
    repo.configure(&format!("[core]\n\tfsmonitor = {}\n", planted.path()));
    repo.write("f", "x\n");
    assert_eq!(runs(&repo, &planted, &["status", "--porcelain"], |_| {}), (true, false));
    assert_eq!(runs(&repo, &planted, &["diff"], |_| {}), (true, false));
}

#[test]
fn the_guard_stops_the_index_hook() {
    let repo = Repo::new();
    repo.write("f", "x\n");
    repo.commit();
    let planted = repo.plant("hook", "");
    fs::copy(&planted.program, repo.path(".git/hooks/post-index-change")).unwrap();
    // The hook creates `.git/hooks/post-index-change.ran`.
    let marker = repo.path(".git/hooks/post-index-change.ran");
    let hook = Planted { program: planted.program.clone(), marker };
    let mut back = 0;
    let touch = |back: &mut u64| {
        // A new modification time with the same content: status refreshes and rewrites the index.
        *back += 1;
        let file = fs::File::options().write(true).open(repo.path("f")).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(86_400 * *back)).unwrap();
    };
    for args in [&["status", "--porcelain"][..], &["diff"]] {
        touch(&mut back);
        ok(git(&repo.top).args(args));
        assert!(hook.ran(), "{args:?} runs the hook");
        touch(&mut back);
        assert_eq!(ok(guarded(git(&repo.top).args(args))), "");
        assert!(!hook.ran(), "{args:?} guarded");
    }
}

#[test]
fn the_guard_sets_the_pager() {
    let repo = Repo::new();
    repo.configure("[core]\n\tpager = /planted/pager\n");
    assert_eq!(ok(git(&repo.top).args(["var", "GIT_PAGER"])), "/planted/pager\n");
    assert_eq!(ok(guarded(git(&repo.top).args(["var", "GIT_PAGER"]))), "cat\n");
    assert_eq!(ok(guarded(git(&repo.top).args(["var", "GIT_PAGER"]).env("GIT_PAGER", "/planted/env"))), "cat\n");
}

#[test]
fn the_guard_stops_ssh_commands() {
    let repo = Repo::new();
    let planted = repo.plant("ssh", "");
    repo.configure(&format!("[core]\n\tsshCommand = {}\n", planted.path()));
    assert_eq!(runs(&repo, &planted, &["ls-remote", "ssh://example.invalid/x"], |_| {}), (true, false));
    repo.write(".git/config", "");
    let env = |c: &mut Command| {
        c.env("GIT_SSH_COMMAND", planted.path());
    };
    assert_eq!(runs(&repo, &planted, &["ls-remote", "ssh://example.invalid/x"], env), (true, false));
}

/// `git credential fill` for an https URL: the way to make git ask helpers and askpass.
fn credential_fill(repo: &Repo, planted: &Planted, env: impl Fn(&mut Command)) -> (bool, bool) {
    let fill = |guard: bool| {
        let mut command = git(&repo.top);
        command.args(["credential", "fill"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
        env(&mut command);
        if guard {
            guarded(&mut command);
        }
        let mut child = command.spawn().unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"protocol=https\nhost=example.invalid\n\n")
            .unwrap();
        let _: Output = child.wait_with_output().unwrap();
        planted.ran()
    };
    (fill(false), fill(true))
}

#[test]
fn the_guard_stops_credential_helpers_and_askpass() {
    let repo = Repo::new();
    let fresh = fs::read_to_string(repo.path(".git/config")).unwrap();
    let planted = repo.plant("credential", "");
    for config in [
        format!("[credential]\n\thelper = !{}\n", planted.path()),
        format!("[credential \"https://example.invalid\"]\n\thelper = !{}\n", planted.path()),
        format!("[core]\n\taskPass = {}\n", planted.path()),
    ] {
        repo.write(".git/config", &format!("{fresh}{config}"));
        assert_eq!(credential_fill(&repo, &planted, |_| {}), (true, false), "{config}");
    }
    repo.write(".git/config", &fresh);
    let askpass = |c: &mut Command| {
        c.env("GIT_ASKPASS", planted.path());
    };
    assert_eq!(credential_fill(&repo, &planted, askpass), (true, false));
}

#[test]
fn the_guard_stops_signature_programs() {
    let repo = Repo::new();
    repo.write("f", "x\n");
    repo.commit();
    let tree = ok(git(&repo.top).args(["rev-parse", "HEAD^{tree}"]));
    let planted = repo.plant("gpg", "");
    let fresh = fs::read_to_string(repo.path(".git/config")).unwrap();
    for (armor, key) in [
        ("PGP SIGNATURE", "gpg.program"),
        ("PGP SIGNATURE", "gpg.openpgp.program"),
        ("SSH SIGNATURE", "gpg.ssh.program"),
        ("SIGNED MESSAGE", "gpg.x509.program"),
    ] {
        let commit = format!(
            "tree {}\nauthor t <t@t> 1 +0000\ncommitter t <t@t> 1 +0000\ngpgsig -----BEGIN {armor}-----\n abc\n -----END {armor}-----\n\nsigned\n",
            tree.trim()
        );
        let path = repo.root.join("commit");
        fs::write(&path, commit).unwrap();
        let id = ok(git(&repo.top).args(["hash-object", "-t", "commit", "-w"]).arg(&path));
        let (section, name) = key.rsplit_once('.').unwrap();
        let (section, sub) = match section.split_once('.') {
            Some((section, sub)) => (section, format!(" \"{sub}\"")),
            None => (section, String::new()),
        };
        repo.write(
            ".git/config",
            &format!(
                "{fresh}[log]\n\tshowSignature = true\n[gpg \"ssh\"]\n\tallowedSignersFile = /dev/null\n[{section}{sub}]\n\t{name} = {}\n",
                planted.path()
            ),
        );
        let env = |c: &mut Command| {
            // The system's programs run guarded: keep them out of the real home.
            c.env("HOME", repo.root.join("home")).env_remove("GNUPGHOME");
        };
        assert_eq!(runs(&repo, &planted, &["log", "-1", id.trim()], env), (true, false), "{key}");
    }
}

#[test]
fn the_guard_stops_lazy_fetches() {
    let repo = Repo::new();
    repo.write("f", "hi\n");
    repo.commit();
    ok(git(&repo.top).args(["config", "uploadpack.allowFilter", "true"]));
    let url = format!("file://{}", repo.top.display());
    ok(git(&repo.root).args(["clone", "-q", "--no-checkout", "--filter=blob:none", &url, "partial"]));
    let partial = repo.root.join("partial");
    let planted = repo.plant("upload-pack", "exec git-upload-pack \"$@\"");
    ok(git(&partial).args(["config", "remote.origin.uploadpack", planted.path()]));
    let guarded_show = guarded(git(&partial).args(["show", "HEAD:f"])).output().unwrap();
    assert_eq!(guarded_show.status.code(), Some(128));
    assert!(!planted.ran());
    assert_eq!(ok(git(&partial).args(["show", "HEAD:f"])), "hi\n");
    assert!(planted.ran());
}

#[test]
fn removed_variables_would_override_the_guard() {
    let repo = Repo::new();
    let planted = repo.plant("external-diff", "");
    repo.write("f", "x\n");
    repo.commit();
    repo.write("f", "y\n");
    // GIT_EXTERNAL_DIFF runs instead of the built-in diff.
    let env = |c: &mut Command| {
        c.env("GIT_EXTERNAL_DIFF", planted.path());
    };
    assert_eq!(runs(&repo, &planted, &["diff"], env), (true, false));
    // GIT_CONFIG_PARAMETERS is read after GIT_CONFIG_COUNT: kept, it would win.
    let fsmonitor = repo.plant("fsmonitor", "");
    let parameters = format!("'core.fsmonitor'='{}'", fsmonitor.path());
    let mut kept = git(&repo.top);
    kept.args(["status", "--porcelain"])
        .envs(neutralising_env().iter().copied())
        .env("GIT_CONFIG_PARAMETERS", &parameters);
    ok(&mut kept);
    assert!(fsmonitor.ran());
    let mut removed = git(&repo.top);
    removed.args(["status", "--porcelain"]).env("GIT_CONFIG_PARAMETERS", &parameters);
    assert_eq!(ok(guarded(&mut removed)), " M f\n");
    assert!(!fsmonitor.ran());
    // GIT_DIR, GIT_WORK_TREE and GIT_COMMON_DIR point git at another repository.
    ok(git(&repo.root).args(["init", "-q", "other"]));
    let other = repo.root.join("other/.git");
    for name in ["GIT_DIR", "GIT_COMMON_DIR"] {
        let mut command = git(&repo.top);
        command.args(["rev-parse", "--git-common-dir"]).env(name, &other);
        assert_eq!(ok(&mut command), format!("{}\n", other.display()), "{name}");
        assert_eq!(ok(guarded(&mut command)), ".git\n", "{name}");
    }
    let mut command = git(&repo.top);
    command.args(["rev-parse", "--show-toplevel"]).env("GIT_WORK_TREE", repo.root.join("other"));
    assert_eq!(ok(&mut command), format!("{}/other\n", repo.root.display()));
    assert_eq!(ok(guarded(&mut command)), format!("{}\n", repo.top.display()));
}

#[test]
fn an_empty_diff_external_does_not_disable_it() {
    // Why `diff.external` is not in the neutralising list: set to "", git tries to run "".
    let repo = Repo::new();
    repo.write("f", "x\n");
    repo.commit();
    repo.write("f", "y\n");
    let out = git(&repo.top).args(["-c", "diff.external=", "diff"]).output().unwrap();
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: cannot run : No such file or directory\nfatal: external diff died, stopping at f\n"
    );
}

#[test]
fn the_guard_reaches_submodules() {
    let repo = Repo::new();
    ok(git(&repo.root).args(["init", "-q", "library"]));
    let library = repo.root.join("library");
    fs::write(library.join("f"), "x\n").unwrap();
    ok(git(&library).args(["add", "f"]));
    ok(git(&library).args(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]));
    let url = library.to_str().unwrap();
    ok(git(&repo.top).args(["-c", "protocol.file.allow=always", "submodule", "add", "-q", url, "sub"]));
    repo.commit();
    assert_eq!(repo.risk(), None);
    let planted = repo.plant("fsmonitor", "");
    let config = repo.path(".git/modules/sub/config");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str(&format!("[core]\n\tfsmonitor = {}\n", planted.path()));
    fs::write(&config, text).unwrap();
    assert_eq!(repo.risk(), some(".git/modules/sub/config sets core.fsmonitor"));
    repo.write("sub/f", "y\n");
    assert_eq!(runs(&repo, &planted, &["status", "--porcelain"], |_| {}), (true, false));
}

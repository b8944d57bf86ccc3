//! Which simple commands only read: the list behind read-only auto-approval and behind
//! running Bash calls concurrently. Conservative by design: unknown programs, options that
//! write or run programs, and globs that could turn into such options count as "may write".

use crate::shell::{self, SimpleCommand, WordKind, Wrapper};

/// Whether the whole command line only reads: it has no hazard and every command in it is
/// read-only. Paths are not checked here (see `super::paths`).
pub fn is_read_only(command: &str) -> bool {
    let analysis = shell::analyze(command);
    analysis.is_clean() && !analysis.commands.is_empty() && analysis.commands.iter().all(command_is_read_only)
}

/// Commands that only read whatever their arguments.
const ALWAYS_READ_ONLY: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "which", "stat", "du", "df", "cut",
    "tr", "diff", "cmp", "basename", "dirname", "realpath", "true", "false", "nl", "od", "hexdump", "readlink",
];

/// Commands whose arguments are never paths: they read no file.
pub(crate) const NO_PATH_ARGUMENTS: &[&str] =
    &["echo", "printf", "pwd", "true", "false", "which", "date", "basename", "dirname", "env", "command"];

/// Wrappers whose read-only-ness is that of the commands they run.
const READ_ONLY_WRAPPERS: &[&str] =
    &["time", "timeout", "nice", "nohup", "stdbuf", "command", "builtin", "exec", "env", "xargs", "eval"];

/// Whether one simple command only reads. Its program must be a plain name (`/bin/ls` or
/// `./ls` could be anything), its assignments harmless.
pub fn command_is_read_only(cmd: &SimpleCommand) -> bool {
    if !cmd.assignments.iter().all(|name| shell::is_harmless_variable(name)) {
        return false;
    }
    let Some(name) = cmd.program() else { return false };
    if name.contains('/') {
        return false;
    }
    let shell_script = matches!(name, "bash" | "sh") && cmd.wrapper == Wrapper::Transparent;
    if cmd.wrapper == Wrapper::Transparent && (READ_ONLY_WRAPPERS.contains(&name) || shell_script) {
        return cmd.runs.iter().all(command_is_read_only) && (!cmd.runs.is_empty() || wrapper_alone_reads(name));
    }
    if cmd.wrapper != Wrapper::None {
        return false;
    }
    let args = cmd.args();
    if ALWAYS_READ_ONLY.contains(&name) {
        return true;
    }
    // The rest have options that write or run programs: a glob or variable could smuggle one in.
    if args.iter().any(|w| w.kind != WordKind::Literal) {
        return false;
    }
    let args: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let any = |bad: &dyn Fn(&str) -> bool| args.iter().any(|a| bad(a));
    match name {
        "printf" => !any(&|a| a.starts_with("-v")),
        "rg" => !any(&|a| a.starts_with("--pre") || long_abbrev(a, &["pre", "search-zip"]) || a == "-z"),
        "find" => !any(&|a| ["-exec", "-ok", "-delete", "-fprint", "-fls"].iter().any(|p| a.starts_with(p))),
        "sort" => !any(&|a| short_cluster_has(a, 'o') || long_abbrev(a, &["output", "compress-program"])),
        "tree" => !any(&|a| short_cluster_has(a, 'o')),
        "file" => !any(&|a| short_cluster_has(a, 'C') || long_abbrev(a, &["compile"])),
        "uniq" => args.iter().filter(|a| !a.starts_with('-') || **a == "-").count() <= 1,
        "env" => args.is_empty(),
        "date" => date_is_read_only(&args),
        "git" => git_is_read_only(&args),
        "test" | "[" => !any(&|a| a == "-v" || a == "-R"),
        _ => false,
    }
}

/// `env`, `command` and `time` alone print something; the other wrappers need a command.
fn wrapper_alone_reads(name: &str) -> bool {
    matches!(name, "env" | "command" | "time")
}

/// `-xyz` (not `--…`) containing `letter`.
fn short_cluster_has(arg: &str, letter: char) -> bool {
    arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(letter)
}

/// `--name[=…]` where `name` is one of `long` or an abbreviation of it (getopt accepts those).
fn long_abbrev(arg: &str, long: &[&str]) -> bool {
    let Some(rest) = arg.strip_prefix("--") else { return false };
    let name = rest.split('=').next().unwrap_or_default();
    !name.is_empty() && long.iter().any(|l| l.starts_with(name))
}

/// `date` reads unless it sets the clock (`-s`, `--set`, or a bare `MMDDhhmm` operand).
fn date_is_read_only(args: &[&str]) -> bool {
    let mut args = args.iter();
    while let Some(a) = args.next() {
        if matches!(*a, "-d" | "--date" | "-r" | "--reference" | "-f" | "--file") {
            args.next();
        } else if short_cluster_has(a, 's') || long_abbrev(a, &["set"]) || !(a.starts_with('-') || a.starts_with('+')) {
            return false;
        }
    }
    true
}

/// Git subcommands that only read the repository.
pub(crate) const GIT_READ_ONLY: &[&str] =
    &["status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "branch"];

/// `git` with `--no-pager` at most before a read-only subcommand, never writing `--output`
/// or running an external diff.
fn git_is_read_only(args: &[&str]) -> bool {
    let Some(at) = args.iter().position(|a| *a != "--no-pager") else { return false };
    let (sub, rest) = (args[at], &args[at + 1..]);
    if rest.iter().any(|a| long_abbrev(a, &["output", "ext-diff", "textconv"])) {
        return false;
    }
    match sub {
        "branch" => branch_lists(rest),
        sub => GIT_READ_ONLY.contains(&sub),
    }
}

/// `git branch` only lists: known listing flags, and operands only in list mode.
fn branch_lists(args: &[&str]) -> bool {
    const LIST_MODE: &[&str] = &[
        "-l",
        "--list",
        "-v",
        "-vv",
        "--verbose",
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
    ];
    const FLAGS: &[&str] =
        &["-a", "--all", "-r", "--remotes", "--show-current", "--color", "--no-color", "-i", "--ignore-case"];
    let list_mode = args.iter().any(|a| LIST_MODE.contains(a));
    args.iter().all(|a| {
        LIST_MODE.contains(a)
            || FLAGS.contains(a)
            || a.starts_with("--sort=")
            || a.starts_with("--format=")
            || (list_mode && !a.starts_with('-'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_commands() {
        let cases: &[(&str, bool)] = &[
            ("ls -la", true),
            ("cat README.md | grep -n foo", true),
            ("git status && git log --oneline -5", true),
            ("git --no-pager diff HEAD~1 -- src", true),
            ("find . -name '*.rs' -type f", true),
            ("grep -r foo . 2>/dev/null", true),
            ("ls 2>&1 | head -n 3", true),
            ("ls > /dev/null; pwd", true),
            ("cat < input.txt", true),
            ("wc -l src/*.rs", true),
            ("grep \"foo$\" x.txt", true),
            ("cat a\\ b.txt", true),
            ("rg -n 'fn main' src", true),
            ("sort -u names.txt | uniq -c", true),
            ("git branch", true),
            ("git branch -a", true),
            ("git branch --list 'feat*'", true),
            ("date +%s", true),
            ("env", true),
            ("ls;", true),
            ("echo \"$HOME\"", true),
            ("timeout 5 cat x", true),
            ("bash -c 'ls -la'", true),
            ("LANG=C sort x", true),
            ("echo hi > out.txt", false),
            ("echo hi >> out.txt", false),
            ("ls >&3", true),
            ("echo $(rm -rf x)", false),
            ("echo `id`", false),
            ("diff <(ls a) <(ls b)", false),
            ("(cd src && ls)", false),
            ("ls &", true),
            ("FOO=1 ls", false),
            ("rm -rf target", false),
            ("npm test", false),
            ("cat <<EOF\nhi\nEOF", true),
            ("cat 'unterminated", false),
            ("", false),
            ("find . -name '*.tmp' -delete", false),
            ("find . -type f -execdir wc -l '{}' +", false),
            ("find . -name *.rs", false),
            ("git push", false),
            ("git -c core.pager=sh log", false),
            ("git diff --output=patch.txt", false),
            ("git log --out=x", false),
            ("git branch new-feature", false),
            ("git branch -D old", false),
            ("sort -o out.txt in.txt", false),
            ("sort --out=x in.txt", false),
            ("sort --compress-program=sh in.txt", false),
            ("sort *.txt", false),
            ("rg --pre cat foo", false),
            ("rg foo *", false),
            ("uniq in.txt out.txt", false),
            ("env rm x", false),
            ("date -s 2020-01-01", false),
            ("date 01010000", false),
            ("tree -o out.txt", false),
            ("file -C -m magic", false),
            ("/bin/ls", false),
            ("printf -v PATH x", false),
            ("xargs rm", false),
            ("sudo cat x", false),
            ("find . -exec cat {} ;", false),
            ("PATH=/tmp ls", false),
        ];
        let wrong: Vec<_> = cases.iter().filter(|(cmd, want)| is_read_only(cmd) != *want).collect();
        assert!(wrong.is_empty(), "misclassified: {wrong:?}");
    }

    /// The parallel-bash-failure demo relies on this command counting as read-only.
    #[test]
    fn a_long_read_only_pipeline_is_read_only() {
        assert!(is_read_only("head -c 3000000000 /dev/zero | wc -c"));
    }
}

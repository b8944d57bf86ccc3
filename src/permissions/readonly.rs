//! Which simple commands only read: the allow-list behind read-only auto-approval and behind
//! running Bash calls concurrently. A program is read-only only with options on its list
//! ([`programs`], [`find`], [`git`]): any other option — one a later version adds, an unknown
//! long option, an abbreviation — makes the command not read-only, so it is asked about.
//! The parse also says which words are files the command reads, option values included
//! (`grep -f FILE`, `diff --from-file=FILE`), for the path check (`super::paths`).

mod find;
mod git;
mod options;
mod programs;

#[cfg(test)]
mod tests;

pub(crate) use git::GIT_READ_ONLY;

use crate::shell::{self, SimpleCommand, Word, WordKind, Wrapper};

/// Whether the whole command line only reads: it has no hazard and every command in it is
/// read-only. Paths are not checked here (see `super::paths`).
pub fn is_read_only(command: &str) -> bool {
    let analysis = shell::analyze(command);
    analysis.is_clean() && !analysis.commands.is_empty() && analysis.commands.iter().all(command_is_read_only)
}

/// Wrappers whose read-only-ness is that of the commands they run.
const READ_ONLY_WRAPPERS: &[&str] =
    &["time", "timeout", "nice", "nohup", "stdbuf", "command", "builtin", "exec", "env", "xargs", "eval"];

/// One file a read-only command reads, as the path check needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathArg<'w> {
    /// The word holding it.
    pub(crate) word: &'w Word,
    /// Where the path starts in the word's text, when the word is an option (`--file=x`).
    pub(crate) suffix: Option<usize>,
    /// The command walks into it recursively.
    pub(crate) recursive: bool,
    /// A glob where an option may be: a file it matches must not look like one (`-R`).
    pub(crate) may_be_option: bool,
}

/// The working directory, for commands that read it when given no path (`ls`, `grep -r`).
pub(crate) static DOT: Word = Word { text: String::new(), kind: WordKind::Literal };

/// Why a listed program's words are not read-only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotReadOnly {
    /// `git` with no subcommand.
    #[error("`git` alone")]
    GitAlone,
    /// A git subcommand given by a word the shell expands.
    #[error("the git subcommand `{0}` is only known when the shell runs")]
    GitSubcommandUnknown(String),
    /// `git branch` with words that change branches.
    #[error("`git branch` changes branches")]
    GitBranchChanges,
    /// A git subcommand off the list.
    #[error("`git {0}` is not a read-only subcommand")]
    GitSubcommand(String),
    /// A `find` primary given by a word the shell expands.
    #[error("`{0}` is only known when the shell runs")]
    FindPrimaryUnknown(String),
    /// A `find` primary off the list.
    #[error("`find {0}` is not a known read-only primary")]
    FindPrimary(String),
    /// A `find` primary without the literal value it takes.
    #[error("`{0}` needs a literal value")]
    FindValue(String),
    /// An option given by a word the shell expands.
    #[error("the option `{0}` is only known when the shell runs")]
    OptionUnknown(String),
    /// An option without the value it takes.
    #[error("`{0}` needs a value")]
    OptionValueMissing(String),
    /// An option's value given by a word the shell expands.
    #[error("the value `{value}` of `{option}` is only known when the shell runs")]
    OptionValueUnknown {
        /// The option (`--file`, `-f`).
        option: String,
        /// The word of its value.
        value: String,
    },
    /// A long option off the program's list.
    #[error("`--{0}` is not a known read-only option")]
    LongOption(String),
    /// A long option that takes no value, given one.
    #[error("`--{0}` takes no value")]
    TakesNoValue(String),
    /// A short option off the program's list.
    #[error("`-{0}` is not a known read-only option")]
    ShortOption(char),
    /// An operand given by a word the shell expands, where it could be an option or a pattern.
    #[error("the operand `{0}` is only known when the shell runs")]
    OperandUnknown(String),
    /// `uniq` with an output operand.
    #[error("`uniq` writes to its second operand")]
    UniqOutput,
    /// `date` with an operand that sets the clock.
    #[error("`date` sets the clock to an operand that is not `+FORMAT`")]
    DateSetsClock,
}

/// The files `cmd` reads if its program is on the allow-list and its words fit the program's
/// entry; `Some(Err(why))` when the program is listed but these words are not read-only;
/// `None` when the program is not listed.
pub(crate) fn parse(cmd: &SimpleCommand) -> Option<Result<Vec<PathArg<'_>>, NotReadOnly>> {
    let name = cmd.program_name()?;
    let args = cmd.args();
    Some(match name {
        "find" => find::parse(args),
        "git" => git::parse(args),
        name => options::parse(programs::spec(name)?, args),
    })
}

/// `xargs`'s short options that take a value (the next word when not attached), and long ones.
const XARGS_VALUED: &str = "adEILnPs";
const XARGS_LONG_VALUED: &[&str] =
    &["--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars"];

/// The files a wrapper itself reads besides what its command reads: `xargs -a FILE` (its
/// arguments come from FILE). Its options end at the first word that is not one.
pub(crate) fn wrapper_reads(cmd: &SimpleCommand) -> Vec<PathArg<'_>> {
    let mut out = Vec::new();
    if cmd.program_name() != Some("xargs") {
        return out;
    }
    let file = |word, suffix| PathArg { word, suffix, recursive: false, may_be_option: false };
    let args = cmd.args();
    let mut i = 0;
    while let Some(arg) = args.get(i).filter(|a| a.text.starts_with('-') && a.text != "--") {
        i += 1;
        let text = arg.text.as_str();
        if let Some(long) = text.strip_prefix("--") {
            match long.split_once('=') {
                Some(("arg-file", _)) => out.push(file(arg, Some("--arg-file=".len()))),
                Some(_) => {}
                None if XARGS_LONG_VALUED.contains(&text) => {
                    if text == "--arg-file" {
                        out.extend(args.get(i).map(|value| file(value, None)));
                    }
                    i += 1;
                }
                None => {}
            }
            continue;
        }
        for (at, c) in text.char_indices().skip(1) {
            if !XARGS_VALUED.contains(c) {
                continue;
            }
            let attached = at + 1 < text.len();
            match (c, attached) {
                ('a', true) => out.push(file(arg, Some(at + 1))),
                ('a', false) => out.extend(args.get(i).map(|value| file(value, None))),
                _ => {}
            }
            if !attached {
                i += 1;
            }
            break;
        }
    }
    out
}

/// Whether one simple command only reads. Its program must be a plain name (`/bin/ls` or
/// `./ls` could be anything), its assignments harmless, its options on the list.
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
    if cmd.wrapper != Wrapper::None || !cmd.runs.is_empty() {
        return false;
    }
    matches!(parse(cmd), Some(Ok(_)))
}

/// `env`, `command` and `time` alone print something; the other wrappers need a command.
fn wrapper_alone_reads(name: &str) -> bool {
    matches!(name, "env" | "command" | "time")
}

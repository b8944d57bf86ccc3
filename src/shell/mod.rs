//! What a Bash command line would run, read off a real shell grammar (tree-sitter-bash).
//!
//! [`analyze`] parses a command line and lists every *simple command* it may run — at any
//! depth: in pipelines and lists, subshells and groups, `if`/`for`/`while`/`case` bodies,
//! command and process substitutions, function bodies, `bash -c 'LITERAL'` and
//! `eval 'LITERAL'` scripts, callbacks (`compgen -C`, `mapfile -C`), and through wrappers
//! such as `timeout 5 rm x` or `xargs rm` — with quotes and escapes resolved (`\rm`, `"rm"`,
//! `r\m` and `$'\x72m'` are all `rm`) and braces expanded (`cat secret{s,}/key` reads
//! `secrets/key` and `secret/key`). `[ … ]`, `[[ … ]]` and `(( … ))` are commands too
//! (programs `[`, `[[`, `((`).
//! Beside the commands it lists the [`Hazard`]s: everything that cannot be proven from the
//! text alone, like a substitution whose output becomes an argument, a redirection that
//! writes a file, or a program named by a variable.
//!
//! The walk is an allowlist of node kinds: any construct it does not know (and any syntax
//! error) is [`Hazard::Unparsable`], never silently skipped. What the results *mean* for a
//! permission rule is decided in `crate::permissions`.

mod brace;
mod conditional;
mod evaluate;
mod walk;
mod word;
mod wrappers;

#[cfg(test)]
mod tests;

use std::cell::RefCell;

pub use word::{Word, WordKind};

/// How deep `bash -c '…'` / `eval '…'` scripts and nested constructs are followed before the
/// command counts as [`Hazard::Unparsable`].
pub const MAX_DEPTH: usize = 16;

/// Longest command line analysed; longer ones are [`Hazard::Unparsable`].
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// Variable names that may be assigned in front of a command (`LANG=C sort`) or on their own
/// and still let the command match an allow rule. Any other name (`PATH`, `LD_PRELOAD`,
/// `GIT_DIR`, `BASH_ENV`, …) may change what runs, so it does not.
pub const HARMLESS_VARIABLES: &[&str] =
    &["LANG", "LANGUAGE", "TZ", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR", "COLUMNS", "LINES", "TERM"];

/// Whether assigning `name` cannot change what a command runs or where it writes:
/// [`HARMLESS_VARIABLES`] and the locale's `LC_*`.
pub fn is_harmless_variable(name: &str) -> bool {
    HARMLESS_VARIABLES.contains(&name) || name.strip_prefix("LC_").is_some_and(|rest| !rest.is_empty())
}

/// Variables whose assignment changes which program a name runs or what the shell executes:
/// after one of these, no name in the command line can be trusted.
const REBINDING_VARIABLES: &[&str] =
    &["PATH", "BASH_ENV", "ENV", "IFS", "PROMPT_COMMAND", "PS4", "SHELLOPTS", "BASHOPTS", "GLOBIGNORE", "CDPATH"];

/// The result of analysing one command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command the line may run, outermost first, in source order.
    pub commands: Vec<SimpleCommand>,
    /// Everything that could not be proven from the text.
    pub hazards: Vec<Hazard>,
    /// Files read through input redirections (`< file`), which path rules must also cover.
    pub reads: Vec<Word>,
    /// Some command changes the directory (`cd`, `pushd`, `popd`, `env -C`): relative paths
    /// after it no longer resolve against the working directory.
    pub changes_directory: bool,
    /// Where some variable of the line gets a value that is not known text (a substitution's
    /// output, a file name from a glob, a line `read` reads), for messages. Arithmetic over
    /// variables may then evaluate a subscript hidden in it ([`Hazard::Evaluated`]).
    pub variables_from_data: Option<String>,
}

impl Analysis {
    /// Whether the line hides which programs it runs (see [`Hazard::is_opaque`]).
    pub fn is_opaque(&self) -> bool {
        self.hazards.iter().any(Hazard::is_opaque)
    }

    /// Whether nothing in the line is unproven.
    pub fn is_clean(&self) -> bool {
        self.hazards.is_empty()
    }

    /// Every command, including those wrappers run (`timeout 5 rm x` yields both the
    /// `timeout` command and the `rm` command), depth first.
    pub fn all_commands(&self) -> impl Iterator<Item = &SimpleCommand> {
        let mut stack: Vec<&SimpleCommand> = self.commands.iter().rev().collect();
        std::iter::from_fn(move || {
            let next = stack.pop()?;
            stack.extend(next.runs.iter().rev());
            Some(next)
        })
    }
}

/// One simple command: optional assignments, a program and its arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` words before the program (`LANG=C sort`), by name.
    pub assignments: Vec<String>,
    /// The program first, then the arguments, quotes and escapes resolved.
    pub words: Vec<Word>,
    /// What this command runs when its program is a wrapper (`timeout 5 rm x` runs `rm x`;
    /// `find . -exec rm {} ;` runs `rm {}`); the commands of a `bash -c 'LITERAL'` or
    /// `eval 'LITERAL'` script. Looked through recursively.
    pub runs: Vec<SimpleCommand>,
    /// How the program relates to [`SimpleCommand::runs`].
    pub wrapper: Wrapper,
}

impl SimpleCommand {
    /// The program as written (`/bin/rm`), if it is a literal word.
    pub fn program(&self) -> Option<&str> {
        self.words.first().filter(|w| w.kind == WordKind::Literal).map(|w| w.text.as_str())
    }

    /// The program's base name (`/bin/rm` → `rm`), if it is a literal word.
    pub fn program_name(&self) -> Option<&str> {
        self.program().map(basename)
    }

    /// The arguments after the program.
    pub fn args(&self) -> &[Word] {
        self.words.get(1..).unwrap_or_default()
    }
}

/// How a command's program relates to the commands it [runs](SimpleCommand::runs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Wrapper {
    /// An ordinary program: runs nothing the analysis can see.
    #[default]
    None,
    /// A wrapper that runs its operand as given and adds nothing an allow rule should weigh:
    /// `env VAR=… cmd`, `nice`, `nohup`, `timeout`, `time`, `command`, `builtin`, `exec`,
    /// `stdbuf`, `xargs`, `busybox`, `bash -c 'LITERAL'`, `eval 'LITERAL'`. An allow rule for
    /// the inner commands covers the whole.
    Transparent,
    /// A wrapper that changes who or how the inner command runs (`sudo`, `find -exec`): deny
    /// rules see the inner commands, but an allow rule must name the wrapper itself.
    Privileged,
}

/// Something in a command line that cannot be proven from its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hazard {
    /// The line does not parse, uses a construct the analysis does not know, or nests too
    /// deep. Carries the construct or a short reason.
    Unparsable(String),
    /// `$(…)` or backticks: the output of a command becomes part of another command.
    CommandSubstitution,
    /// `<(…)` or `>(…)`.
    ProcessSubstitution,
    /// A parameter expansion with a side effect (`${X:=v}`, `${X=v}`) or one that evaluates
    /// its value (`${X@P}`, `${!X}`).
    ExpansionSideEffect(String),
    /// Arithmetic over variables (`$((x))`, `((i++))`, `[[ $a -eq 1 ]]`): bash evaluates the
    /// variables' values as expressions, which may run substitutions.
    Arithmetic,
    /// Text bash evaluates as arithmetic or as a variable name that can hide a command: an
    /// array subscript (`[[ -v 'a[$(rm x)]' ]]`, `(( 'a[$(rm x)]' ))`, `let 'x=a[$(…)]'`),
    /// quotes inside arithmetic (`$(( '$(rm x)' ))`), a substitution's output, or variables
    /// set from data. Carries what is evaluated.
    Evaluated(String),
    /// A redirection that writes a file (anything but `/dev/null` and file descriptors).
    WriteRedirect(String),
    /// A function definition: its name may shadow a program the rules trust.
    FunctionDefinition(String),
    /// A variable assigned that is not on [`HARMLESS_VARIABLES`].
    Assignment(String),
    /// The program is not a literal word (`$CMD x`, `/bin/r?`, `{rm,x}`).
    DynamicProgram(String),
    /// Code the analysis cannot read runs: `eval` or `bash -c` of a non-literal, `source`,
    /// a shell or interpreter reading a script from stdin or a file, `trap`, `env -S`.
    OpaqueCode(String),
    /// The line changes how names resolve (`PATH=…`, `alias`, `hash -p`, `enable -f`).
    Rebinding(String),
}

impl Hazard {
    /// Whether this hazard hides which programs run, so that deny rules must assume it
    /// runs anything. Substitutions, function bodies and redirections are analysed, so they
    /// hide nothing.
    pub fn is_opaque(&self) -> bool {
        match self {
            Hazard::Unparsable(_)
            | Hazard::DynamicProgram(_)
            | Hazard::OpaqueCode(_)
            | Hazard::Rebinding(_)
            | Hazard::Evaluated(_) => true,
            Hazard::CommandSubstitution
            | Hazard::ProcessSubstitution
            | Hazard::ExpansionSideEffect(_)
            | Hazard::Arithmetic
            | Hazard::WriteRedirect(_)
            | Hazard::FunctionDefinition(_)
            | Hazard::Assignment(_) => false,
        }
    }
}

impl std::fmt::Display for Hazard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Hazard::Unparsable(what) => write!(f, "it cannot be analysed ({what})"),
            Hazard::CommandSubstitution => f.write_str("it contains a command substitution"),
            Hazard::ProcessSubstitution => f.write_str("it contains a process substitution"),
            Hazard::ExpansionSideEffect(text) => write!(f, "the expansion `{text}` has side effects"),
            Hazard::Arithmetic => f.write_str("it evaluates arithmetic over variables"),
            Hazard::Evaluated(what) => write!(f, "it evaluates {what}, which can run commands hidden in it"),
            Hazard::WriteRedirect(target) => write!(f, "it redirects output to `{target}`"),
            Hazard::FunctionDefinition(name) => write!(f, "it defines the function `{name}`"),
            Hazard::Assignment(name) => write!(f, "it assigns the variable `{name}`"),
            Hazard::DynamicProgram(text) => write!(f, "the program `{text}` is not a literal name"),
            Hazard::OpaqueCode(what) => write!(f, "it runs code that cannot be read ({what})"),
            Hazard::Rebinding(what) => write!(f, "it changes how commands are found ({what})"),
        }
    }
}

/// `/bin/rm` → `rm`; `rm` → `rm`.
pub fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

thread_local! {
    static PARSER: RefCell<Option<tree_sitter::Parser>> = const { RefCell::new(None) };
    /// The last line analysed on this thread: the engine asks twice about each Bash call
    /// (may it run concurrently, may it run at all), so the second answer is a copy.
    static LAST: RefCell<Option<(String, Analysis)>> = const { RefCell::new(None) };
}

/// Analyse a Bash command line. Never fails: what cannot be understood is a `Hazard`.
pub fn analyze(command: &str) -> Analysis {
    if let Some(hit) =
        LAST.with(|last| last.borrow().as_ref().filter(|(line, _)| line == command).map(|(_, a)| a.clone()))
    {
        return hit;
    }
    let mut out = Analysis::default();
    analyze_into(command, 0, &mut out);
    if let Some(source) = out.variables_from_data.clone()
        && out.hazards.contains(&Hazard::Arithmetic)
    {
        out.hazards.push(Hazard::Evaluated(format!("variables as arithmetic, one of them set from {source}")));
    }
    LAST.with(|last| *last.borrow_mut() = Some((command.to_owned(), out.clone())));
    out
}

/// Analyse `command` as a script nested `depth` levels deep, adding to `out`; the top-level
/// commands found are returned (and not pushed to `out.commands`).
pub(crate) fn analyze_nested(command: &str, depth: usize, out: &mut Analysis) -> Vec<SimpleCommand> {
    let mut nested = Analysis::default();
    analyze_into(command, depth, &mut nested);
    for hazard in nested.hazards {
        if !out.hazards.contains(&hazard) {
            out.hazards.push(hazard);
        }
    }
    out.reads.append(&mut nested.reads);
    out.changes_directory |= nested.changes_directory;
    if out.variables_from_data.is_none() {
        out.variables_from_data = nested.variables_from_data;
    }
    nested.commands
}

fn analyze_into(command: &str, depth: usize, out: &mut Analysis) {
    if depth > MAX_DEPTH {
        out.hazards.push(Hazard::Unparsable("nested too deep".into()));
        return;
    }
    if command.len() > MAX_COMMAND_BYTES {
        out.hazards.push(Hazard::Unparsable(format!("longer than {MAX_COMMAND_BYTES} bytes")));
        return;
    }
    if command.contains('\0') {
        out.hazards.push(Hazard::Unparsable("a NUL byte".into()));
        return;
    }
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let parser = slot.get_or_insert_with(|| {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&tree_sitter_bash::LANGUAGE.into()).expect("the bundled bash grammar loads");
            parser
        });
        parser.parse(command, None)
    });
    let Some(tree) = tree else {
        out.hazards.push(Hazard::Unparsable("the parser gave up".into()));
        return;
    };
    walk::Walker::new(command, depth, out).program(tree.root_node());
}

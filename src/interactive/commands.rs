//! Slash commands: typed at the prompt, handled by the session instead of sent to the model.

/// A slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/help`.
    Help,
    /// `/cost`: tokens and dollars so far.
    Cost,
    /// `/trace`: show every transition inline, or stop.
    Trace,
    /// `/clear`: a new session.
    Clear,
    /// `/model [NAME]`: show or switch the model.
    Model(Option<String>),
    /// `/permissions`: the rules in force.
    Permissions,
    /// `/resume [N|ID]`: list this directory's sessions, or reopen one.
    Resume(Option<String>),
    /// `/compact [INSTRUCTIONS]`: replace the history with a summary now; the rest of the
    /// line, if any, is added to the summary instruction.
    Compact(Option<String>),
    /// `/memory [N]` (or `/memory open N`): list the memory files loaded, or open the N-th in
    /// the user's editor.
    Memory(Option<String>),
    /// `/init [INSTRUCTIONS]`: ask the model to write a starting `CLAUDE.md` ([`init_prompt`]);
    /// the rest of the line, if any, is added to the request.
    Init(Option<String>),
    /// `/exit` (or `/quit`).
    Exit,
    /// Anything else starting with `/`.
    Unknown(String),
}

/// The help text of `/help`.
pub const HELP: &str = "\
/help                this help
/cost                tokens and dollars of this session so far
/trace               show every transition of the machine inline (again to stop)
/clear               start a new session
/model [NAME]        show the model, or switch to NAME (any name the server serves)
/permissions         the permission mode, the rules in force and this session's grants
/resume [N|ID]       list this directory's sessions, or reopen one (by number or id)
/compact [TEXT]      replace the history with a summary now (TEXT: what the summary must keep)
/memory [N]          list the memory files loaded, or open file N in $VISUAL or $EDITOR
/init [TEXT]         ask the model to study the project and write a CLAUDE.md
/exit                leave (also Ctrl+D, or Ctrl+C twice)
Alt+Enter or Ctrl+J inserts a newline (so does a line ending in \\); Ctrl+R searches the history;
Ctrl+C interrupts a reply.";

/// The names of the built-in commands, for completion (a custom command of the same name is
/// not run: the built-in one is).
pub const BUILT_IN_NAMES: &[&str] =
    &["help", "cost", "trace", "clear", "model", "permissions", "resume", "compact", "memory", "init", "exit", "quit"];

/// What `/help` adds for the custom commands: one line each, `/NAME HINT  DESCRIPTION (source)`.
pub fn custom_help(custom: &crate::commands::Commands) -> Vec<String> {
    let mut lines: Vec<String> = custom
        .iter()
        .filter(|c| !BUILT_IN_NAMES.contains(&c.name.as_str()))
        .map(|c| {
            let usage = format!("/{} {}", c.name, c.argument_hint).trim_end().to_owned();
            format!("{usage:<20} {} ({})", c.description, c.source.as_str())
        })
        .collect();
    if !lines.is_empty() {
        lines.insert(0, "custom commands:".to_owned());
    }
    lines
}

/// What `/init` asks the model (our own wording): study the repository, then write a short
/// `CLAUDE.md` in the working directory, or improve the one there (or its `AGENTS.md`).
pub const INIT_PROMPT: &str = "\
Study this repository, then write a CLAUDE.md file in the working directory: the notes a coding agent \
reads first at the start of every session here.

Learn the project from its code and configuration (build files, CI workflows, READMEs, contributing guides, \
linter and formatter settings), then write down:
- the commands that build, lint and test it, and how to run a single test;
- its layout: the main directories and modules and what each is for, so one knows where to look (not a \
list of every file);
- the conventions its code follows that a newcomer would likely get wrong: naming, error handling, tests, \
formatting, commits.

Keep it short: what an agent needs on most tasks and cannot see at a glance. Leave out generic advice \
(write tests, handle errors) and anything a file already says plainly.

If there is a CLAUDE.md or an AGENTS.md in the working directory already, read it first and improve that \
file instead of writing a new one from scratch: keep what is still true, correct what is out of date, add \
what is missing. Both are loaded at the start of every session, so do not copy one into the other.";

/// The prompt `/init` sends: [`INIT_PROMPT`], with the user's `extra` instructions after it.
pub fn init_prompt(extra: Option<&str>) -> String {
    match extra.map(str::trim).filter(|e| !e.is_empty()) {
        Some(extra) => format!("{INIT_PROMPT}\n\nAdditional instructions: {extra}"),
        None => INIT_PROMPT.to_owned(),
    }
}

/// The command `line` is, if it is one (a line starting with `/`).
pub fn parse(line: &str) -> Option<Command> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let mut words = rest.split_whitespace();
    let name = words.next().unwrap_or("");
    let arg = words.next().map(str::to_owned);
    // Everything after the command's name, for commands that take free text.
    let text = rest.trim_start().strip_prefix(name).map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
    Some(match name {
        "help" | "?" => Command::Help,
        "cost" => Command::Cost,
        "trace" => Command::Trace,
        "clear" | "new" => Command::Clear,
        "model" => Command::Model(arg),
        "permissions" => Command::Permissions,
        "resume" => Command::Resume(arg),
        "compact" => Command::Compact(text),
        // `/memory open N` is `/memory N`.
        "memory" if arg.as_deref() == Some("open") => Command::Memory(words.next().map(str::to_owned).or(arg)),
        "memory" => Command::Memory(arg),
        "init" => Command::Init(text),
        "exit" | "quit" => Command::Exit,
        other => Command::Unknown(other.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(parse("/help"), Some(Command::Help));
        assert_eq!(parse("  /cost "), Some(Command::Cost));
        assert_eq!(parse("/model claude-opus-4-1"), Some(Command::Model(Some("claude-opus-4-1".into()))));
        assert_eq!(parse("/model"), Some(Command::Model(None)));
        assert_eq!(parse("/quit"), Some(Command::Exit));
        assert_eq!(parse("/resume 2"), Some(Command::Resume(Some("2".into()))));
        assert_eq!(parse("/frobnicate"), Some(Command::Unknown("frobnicate".into())));
        assert_eq!(parse("hello /help"), None);
        assert_eq!(parse("/compact"), Some(Command::Compact(None)));
        assert_eq!(parse("/compact  keep the file names "), Some(Command::Compact(Some("keep the file names".into()))));
        assert_eq!(parse("/memory"), Some(Command::Memory(None)));
        assert_eq!(parse("/memory 2"), Some(Command::Memory(Some("2".into()))));
        assert_eq!(parse("/memory open 3"), Some(Command::Memory(Some("3".into()))));
        assert_eq!(parse("/memory open"), Some(Command::Memory(Some("open".into()))));
        assert_eq!(parse("/init"), Some(Command::Init(None)));
        assert_eq!(
            parse(" /init  mention the fuzz targets "),
            Some(Command::Init(Some("mention the fuzz targets".into())))
        );
    }

    #[test]
    fn init_asks_for_a_claude_md_and_takes_extra_instructions() {
        assert!(INIT_PROMPT.starts_with("Study this repository, then write a CLAUDE.md file in the working directory"));
        assert_eq!(init_prompt(None), INIT_PROMPT);
        assert_eq!(init_prompt(Some("  ")), INIT_PROMPT);
        assert_eq!(
            init_prompt(Some(" mention the fuzz targets")),
            format!("{INIT_PROMPT}\n\nAdditional instructions: mention the fuzz targets")
        );
        assert!(HELP.contains("\n/memory [N] ") && HELP.contains("\n/init [TEXT] "));
        assert!(BUILT_IN_NAMES.contains(&"memory") && BUILT_IN_NAMES.contains(&"init"));
    }
}

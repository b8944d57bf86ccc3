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
/model [NAME]        show the model, or switch to NAME (claude-…)
/permissions         the permission mode, the rules in force and this session's grants
/resume [N|ID]       list this directory's sessions, or reopen one (by number or id)
/compact [TEXT]      replace the history with a summary now (TEXT: what the summary must keep)
/memory [N]          list the memory files loaded, or open file N in $VISUAL or $EDITOR
/exit                leave (also Ctrl+D, or Ctrl+C twice)
Alt+Enter or Ctrl+J inserts a newline (so does a line ending in \\); Ctrl+R searches the history;
Ctrl+C interrupts a reply.";

/// The names of the built-in commands, for completion (a custom command of the same name is
/// not run: the built-in one is).
pub const BUILT_IN_NAMES: &[&str] =
    &["help", "cost", "trace", "clear", "model", "permissions", "resume", "compact", "memory", "exit", "quit"];

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
    }
}

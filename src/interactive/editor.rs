//! The line editor (rustyline) on a thread of its own, so the async session can wait for a
//! line and for signals at once. History is kept in `$AGENTLOOP_HOME/history`; Ctrl+R
//! searches it.
//!
//! Tab completes a slash command's name (built-in or custom) at the start of the line.
//!
//! Multi-line input: Alt+Enter (the terminal sends ESC CR) and Ctrl+J (LF) insert a newline,
//! and a line ending in `\` continues on the next one when Enter is pressed. Shift+Enter sends
//! the same CR as Enter in most terminals; where it can be set to send ESC CR instead (Claude
//! Code's `/terminal-setup` does that), it inserts a newline too. The kitty keyboard protocol
//! (`CSI 13;2u`) and xterm's modifyOtherKeys (`CSI 27;2;13~`) are not turned on: rustyline 17
//! reads the first as an unknown sequence like any other and stops reading the second at its
//! second `;`, so neither can be bound.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::mpsc;

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Config, Editor, Helper, KeyCode, KeyEvent, Modifiers};

/// What a read gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A line (continuation lines joined with newlines, their `\` removed).
    Line(String),
    /// Ctrl+C.
    Interrupted,
    /// Ctrl+D on an empty line, or stdin closed.
    Eof,
}

/// Keys that insert a newline instead of sending the input: Alt+Enter (ESC CR, also what a
/// terminal set up to send ESC CR for Shift+Enter sends) and Ctrl+J (LF).
pub const NEWLINE_KEYS: [KeyEvent; 2] =
    [KeyEvent(KeyCode::Enter, Modifiers::ALT), KeyEvent(KeyCode::Char('J'), Modifiers::CTRL)];

/// One line asked of the editor thread.
struct Request {
    prompt: String,
    initial: String,
    answer: tokio::sync::oneshot::Sender<Input>,
}

/// Asks the editor thread for lines.
pub struct LineEditor {
    requests: mpsc::Sender<Request>,
}

impl LineEditor {
    /// Start the editor, with the history of `history` (created on the first line) and the
    /// slash command names Tab completes. Returns once the editor exists.
    ///
    /// rustyline takes SIGINT over while its editor exists (its handler writes to a pipe it
    /// reads only while editing); catch the signals *after* this, so that the session's own
    /// handler is the one in place and Ctrl+C during a turn interrupts it.
    pub fn start(history: Option<PathBuf>, commands: Vec<String>) -> LineEditor {
        let (requests, rx) = mpsc::channel::<Request>();
        let (ready, started) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            let config = Config::builder().auto_add_history(false).max_history_size(10_000).ok().map(|b| b.build());
            let mut editor = match Editor::<Continuation, FileHistory>::with_config(config.unwrap_or_default()) {
                Ok(editor) => editor,
                Err(e) => {
                    eprintln!("agentloop: cannot start the line editor: {e}");
                    return;
                }
            };
            editor.set_helper(Some(Continuation { commands, seen: RefCell::default() }));
            for key in NEWLINE_KEYS {
                editor.bind_sequence(key, Cmd::Newline);
            }
            let _ = ready.send(());
            if let Some(path) = &history {
                let _ = editor.load_history(path);
            }
            while let Ok(Request { prompt, initial, answer }) = rx.recv() {
                let input = match read_keeping_the_line(&mut editor, &prompt, initial) {
                    Ok(line) => {
                        if !line.trim().is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                            if let Some(path) = &history {
                                if let Some(dir) = path.parent() {
                                    let _ = std::fs::create_dir_all(dir);
                                }
                                if let Err(e) = editor.append_history(path) {
                                    eprintln!("agentloop: warning: history not saved to {}: {e}", path.display());
                                }
                            }
                        }
                        Input::Line(join_continued(&line))
                    }
                    Err(rustyline::error::ReadlineError::Interrupted) => Input::Interrupted,
                    Err(_) => Input::Eof,
                };
                let _ = answer.send(input);
            }
        });
        let _ = started.recv();
        LineEditor { requests }
    }

    /// Read one line after `prompt`, the line starting as `initial` (typed ahead during the
    /// last turn) with the cursor at its end.
    pub async fn read(&self, prompt: &str, initial: String) -> Input {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.requests.send(Request { prompt: prompt.to_owned(), initial, answer: tx }).is_err() {
            return Input::Eof;
        }
        rx.await.unwrap_or(Input::Eof)
    }
}

/// One line read, where a byte that is not UTF-8 (rustyline gives up on the whole line at one)
/// is dropped and the line read on from what was typed before it, the cursor where it was.
fn read_keeping_the_line(
    editor: &mut Editor<Continuation, FileHistory>,
    prompt: &str,
    initial: String,
) -> rustyline::Result<String> {
    let (mut left, mut right) = (initial, String::new());
    loop {
        if let Some(helper) = editor.helper() {
            helper.seen.replace((format!("{left}{right}"), left.len()));
        }
        match editor.readline_with_initial(prompt, (&left, &right)) {
            Err(rustyline::error::ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                let (line, pos) = editor.helper().map(|h| h.seen.take()).unwrap_or_default();
                let pos = (0..=pos.min(line.len())).rev().find(|&i| line.is_char_boundary(i)).unwrap_or(0);
                (left, right) = (line[..pos].to_owned(), line[pos..].to_owned());
            }
            read => return read,
        }
    }
}

/// The input as the model gets it: `\` + newline becomes a newline.
pub fn join_continued(line: &str) -> String {
    line.replace("\\\n", "\n")
}

/// The editor's helper: the validator that makes `\` + Enter continue the input, the
/// completion of slash command names, and the line as last edited.
struct Continuation {
    commands: Vec<String>,
    /// The line and the cursor's byte offset after the last edit (rustyline asks for a hint
    /// after each one), to read on from when a bad byte ends the read.
    seen: RefCell<(String, usize)>,
}

impl Validator for Continuation {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if ctx.input().ends_with('\\') { ValidationResult::Incomplete } else { ValidationResult::Valid(None) })
    }
}

impl Completer for Continuation {
    type Candidate = String;

    fn complete(&self, line: &str, pos: usize, _: &rustyline::Context<'_>) -> rustyline::Result<(usize, Vec<String>)> {
        Ok((0, complete_command(&line[..pos], &self.commands)))
    }
}

/// The completions of `typed` (the line up to the cursor) when it is a slash command's name
/// begun: `/NAME` for every name of `commands` that starts with what follows the `/`, sorted.
pub fn complete_command(typed: &str, commands: &[String]) -> Vec<String> {
    let Some(begun) = typed.strip_prefix('/') else { return Vec::new() };
    if begun.contains(char::is_whitespace) {
        return Vec::new();
    }
    let mut found: Vec<String> = commands.iter().filter(|c| c.starts_with(begun)).map(|c| format!("/{c}")).collect();
    found.sort();
    found.dedup();
    found
}

impl Hinter for Continuation {
    type Hint = String;

    fn hint(&self, line: &str, pos: usize, _: &rustyline::Context<'_>) -> Option<String> {
        self.seen.replace((line.to_owned(), pos));
        None
    }
}

impl Highlighter for Continuation {}

impl Helper for Continuation {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_command_names_complete_at_the_start_of_the_line() {
        let names: Vec<String> = ["help", "git:commit", "git:push", "model"].map(String::from).to_vec();
        assert_eq!(complete_command("/git", &names), ["/git:commit", "/git:push"]);
        assert_eq!(complete_command("/git:c", &names), ["/git:commit"]);
        assert_eq!(complete_command("/", &names).len(), 4);
        assert_eq!(complete_command("/git:commit now", &names), Vec::<String>::new());
        assert_eq!(complete_command("say /git", &names), Vec::<String>::new());
    }

    #[test]
    fn continued_lines_are_joined_with_newlines() {
        assert_eq!(join_continued("first\\\nsecond\\\nthird"), "first\nsecond\nthird");
        assert_eq!(join_continued("a \\ b"), "a \\ b");
    }
}

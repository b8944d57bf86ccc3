//! What the session prints: the screen (streamed text, whole lines, and the status line kept
//! as the last line while a prompt runs), and the one-line renderings of tool calls and of
//! permission questions.

use std::collections::HashSet;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;

/// ANSI styles, used only when colour is on.
pub const DIM: &str = "\x1b[2m";
/// Bold.
pub const BOLD: &str = "\x1b[1m";
/// Green.
pub const GREEN: &str = "\x1b[32m";
/// Red.
pub const RED: &str = "\x1b[31m";
/// Yellow.
pub const YELLOW: &str = "\x1b[33m";
/// Cyan.
pub const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// Colouring on or off (off when stdout is no terminal or `NO_COLOR` is set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Whether ANSI colours are written.
    pub color: bool,
}

impl Style {
    /// Colour on a terminal unless `NO_COLOR` is set (to anything but "").
    pub fn detect() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style { color: !no_color && std::io::IsTerminal::is_terminal(&std::io::stdout()) }
    }

    /// `text` in `style`.
    pub fn paint(self, style: &str, text: &str) -> String {
        if self.color { format!("{style}{text}{RESET}") } else { text.to_owned() }
    }
}

/// The terminal's output, shared by the turn's event sink, the approver and the ticker.
#[derive(Clone)]
pub struct Screen {
    inner: Arc<Mutex<Inner>>,
    /// The colours.
    pub style: Style,
}

struct Inner {
    out: Box<dyn Write + Send>,
    status: Option<String>,
    /// Lines drawn under the status line (what is typed ahead).
    extra: Vec<String>,
    /// How many lines of the status block are on the screen.
    shown: usize,
    /// A question is open: other output waits in `held` until it is answered.
    asking: bool,
    held: Vec<Held>,
    at_line_start: bool,
    /// Characters written since the last newline (to know when the cursor sits at the right
    /// margin, waiting to wrap: a saved and restored cursor would lose that wait).
    column: usize,
    /// The reply attempt on screen that may still be abandoned (a stream retried, a
    /// withheld reply sent again): where it started, so that it can be erased.
    attempt: Option<Attempt>,
    /// Ids of the tool calls whose start line is shown (it is shown once, by whichever of the
    /// start event and the permission question comes first).
    tools_shown: HashSet<String>,
}

/// Where the reply attempt on screen started, counted from the cursor.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    /// Rows the cursor moved down since the attempt's first character (wrapped rows included).
    rows: usize,
    /// The column the attempt started at.
    start_column: usize,
    /// The cursor's column on its row (wrapping counted).
    column: usize,
}

/// What is written in place of an abandoned attempt too tall to erase.
pub const CUT_OFF: &str = "  (cut off; the reply is asked for again)";

/// Output that arrived while a question was open.
enum Held {
    Text(String),
    EndLine,
    Line(String),
}

impl Screen {
    /// The screen on stdout.
    pub fn stdout(style: Style) -> Screen {
        Screen::new(Box::new(std::io::stdout()), style)
    }

    /// A screen writing to `out`.
    pub fn new(out: Box<dyn Write + Send>, style: Style) -> Screen {
        let inner = Inner {
            out,
            status: None,
            extra: Vec::new(),
            shown: 0,
            asking: false,
            held: Vec::new(),
            at_line_start: true,
            column: 0,
            attempt: None,
            tools_shown: HashSet::new(),
        };
        Screen { inner: Arc::new(Mutex::new(inner)), style }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ask the terminal to mark pasted text (bracketed paste, `ESC [ ? 2004 h`), or to stop.
    /// While a turn runs the type-ahead needs the marks, so that a pasted block's newlines are
    /// part of one prompt rather than several queued ones; the line editor sets its own.
    pub fn bracketed_paste(&self, on: bool) {
        let mut inner = self.lock();
        let _ = inner.out.write_all(if on { b"\x1b[?2004h" } else { b"\x1b[?2004l" });
        let _ = inner.out.flush();
    }

    /// End an open line of text, if any.
    pub fn end_line(&self) {
        self.lock().put(Held::EndLine);
    }

    /// One whole line (ending an open line of text first).
    pub fn line(&self, line: &str) {
        self.lock().put(Held::Line(line.to_owned()));
    }

    /// A text delta of the reply being streamed, as it arrives; the first one starts an
    /// attempt that [`Screen::abandon_attempt`] can erase.
    pub fn reply_text(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut s = self.lock();
        if s.attempt.is_none() && !s.asking {
            let column = if s.at_line_start { 0 } else { s.column % super::term::columns() };
            s.attempt = Some(Attempt { rows: 0, start_column: column, column });
        }
        s.put(Held::Text(text.to_owned()));
    }

    /// The reply being streamed is kept in the conversation: it can no longer be abandoned.
    pub fn keep_attempt(&self) {
        self.lock().attempt = None;
    }

    /// The reply being streamed is not kept: erase it (everything written since its first
    /// text, up to the cursor), or, when it no longer fits on the screen, mark it cut off.
    pub fn abandon_attempt(&self) {
        let mut s = self.lock();
        let Some(attempt) = s.attempt.take() else { return };
        s.hide();
        if attempt.rows + 1 < super::term::rows() {
            let up = if attempt.rows > 0 { format!("\x1b[{}A", attempt.rows) } else { String::new() };
            let right =
                if attempt.start_column > 0 { format!("\x1b[{}C", attempt.start_column) } else { String::new() };
            let _ = write!(s.out, "\r{up}{right}\x1b[J");
            s.at_line_start = attempt.start_column == 0;
            s.column = attempt.start_column;
        } else {
            let line = self.style.paint(DIM, CUT_OFF);
            s.write(Held::Line(line));
        }
        s.draw();
    }

    /// The start line of call `id`, unless it is shown already.
    pub fn tool_started(&self, id: &str, line: &str) {
        let mut s = self.lock();
        if s.tools_shown.insert(id.to_owned()) {
            s.put(Held::Line(line.to_owned()));
        }
    }

    /// Change the status line's text without redrawing it: the next output draws it.
    pub fn store_status(&self, status: String) {
        self.lock().status = Some(status);
    }

    /// Show `status` as the last line (or none).
    pub fn set_status(&self, status: Option<String>) {
        let mut s = self.lock();
        s.hide();
        s.status = status;
        s.draw();
    }

    /// Show `lines` under the status line (while one is shown), redrawn in place.
    pub fn set_extra(&self, lines: Vec<String>) {
        let mut s = self.lock();
        if s.extra == lines {
            return;
        }
        s.hide();
        s.extra = lines;
        s.draw();
    }

    /// Open a question: the status line is hidden and other output is held until
    /// [`Screen::end_question`]; the question writes with the `ask_` methods.
    pub fn begin_question(&self) {
        let mut s = self.lock();
        s.hide();
        s.asking = true;
        s.write(Held::EndLine);
    }

    /// A whole line of the question.
    pub fn ask_line(&self, line: &str) {
        self.lock().write(Held::Line(line.to_owned()));
    }

    /// Text of the question that waits on its line (`  > `).
    pub fn ask_text(&self, text: &str) {
        self.lock().write(Held::Text(text.to_owned()));
    }

    /// Finish the question's open line with `text` (the answer after `> `).
    pub fn ask_finish(&self, text: &str) {
        let mut s = self.lock();
        s.write(Held::Text(text.to_owned()));
        s.write(Held::Text("\n".to_owned()));
    }

    /// Erase the last character of the question's open line (a Backspace in a typed answer).
    pub fn ask_erase(&self) {
        let mut s = self.lock();
        if s.column > 0 {
            let _ = s.out.write_all(b"\x08 \x08");
            let _ = s.out.flush();
            s.column -= 1;
        }
    }

    /// Close the question: what was held is written, the status line comes back.
    pub fn end_question(&self) {
        let mut s = self.lock();
        s.asking = false;
        for held in std::mem::take(&mut s.held) {
            s.write(held);
        }
        s.draw();
    }
}

impl Inner {
    /// Write `what`, or hold it while a question is open.
    fn put(&mut self, what: Held) {
        if self.asking {
            self.held.push(what);
        } else {
            self.write(what);
            self.draw();
        }
    }

    fn write(&mut self, what: Held) {
        self.hide();
        if let Some(attempt) = &mut self.attempt {
            let columns = super::term::columns();
            let at_line_start = self.at_line_start;
            let mut advance = |text: &str| {
                for c in text.chars() {
                    if c == '\n' {
                        attempt.rows += 1;
                        attempt.column = 0;
                    } else {
                        if attempt.column >= columns {
                            attempt.rows += 1;
                            attempt.column = 0;
                        }
                        attempt.column += 1;
                    }
                }
            };
            match &what {
                Held::Text(text) => advance(text),
                Held::EndLine if !at_line_start => advance("\n"),
                Held::EndLine => {}
                Held::Line(line) => {
                    if !at_line_start {
                        advance("\n");
                    }
                    advance(&strip_ansi(line));
                    advance("\n");
                }
            }
        }
        match what {
            Held::Text(text) => {
                let _ = self.out.write_all(text.as_bytes());
                self.at_line_start = text.ends_with('\n');
                self.column = match text.rfind('\n') {
                    Some(at) => text[at + 1..].chars().count(),
                    None => self.column + text.chars().count(),
                };
            }
            Held::EndLine => {
                if !self.at_line_start {
                    let _ = self.out.write_all(b"\n");
                    self.at_line_start = true;
                    self.column = 0;
                }
            }
            Held::Line(line) => {
                if !self.at_line_start {
                    let _ = self.out.write_all(b"\n");
                }
                let _ = self.out.write_all(line.as_bytes());
                let _ = self.out.write_all(b"\n");
                self.at_line_start = true;
                self.column = 0;
            }
        }
    }

    fn hide(&mut self) {
        if self.shown > 0 {
            // On the cursor's line, or (under an open line of text) on the line below, and
            // the lines under it: save the cursor, go down, clear, come back.
            let mut clear = Vec::new();
            let below = if self.at_line_start {
                clear.extend_from_slice(b"\r\x1b[K");
                self.shown - 1
            } else {
                self.shown
            };
            if below > 0 {
                clear.extend_from_slice(b"\x1b7");
                for _ in 0..below {
                    clear.extend_from_slice(b"\x1bD\r\x1b[K");
                }
                clear.extend_from_slice(b"\x1b8");
            }
            let _ = self.out.write_all(&clear);
            self.shown = 0;
        }
    }

    /// Draw the status line and the lines under it: at the start of a line, on it; under an
    /// open line of text, on the line below (IND scrolls when the cursor is on the last row,
    /// and RI comes back up, both keeping the column), so the status stays in view while text
    /// streams.
    fn draw(&mut self) {
        let columns = super::term::columns();
        let waiting_to_wrap = !self.at_line_start && self.column > 0 && self.column.is_multiple_of(columns);
        if let (Some(status), false, false) = (&self.status, self.asking, waiting_to_wrap) {
            let width = columns.saturating_sub(1);
            let lines: Vec<String> =
                std::iter::once(status).chain(&self.extra).map(|l| l.chars().take(width).collect()).collect();
            let mut out = Vec::new();
            let below: &[String] = if self.at_line_start {
                out.extend_from_slice(b"\r\x1b[K");
                out.extend_from_slice(lines[0].as_bytes());
                &lines[1..]
            } else {
                &lines
            };
            if !below.is_empty() {
                // Make room under the cursor first, so that the saved position stays right.
                out.extend(std::iter::repeat_n(b"\x1bD".as_slice(), below.len()).flatten());
                out.extend(std::iter::repeat_n(b"\x1bM".as_slice(), below.len()).flatten());
                out.extend_from_slice(b"\x1b7");
                for line in below {
                    out.extend_from_slice(b"\x1bD\r\x1b[K");
                    out.extend_from_slice(line.as_bytes());
                }
                out.extend_from_slice(b"\x1b8");
            }
            let _ = self.out.write_all(&out);
            self.shown = lines.len();
        }
        let _ = self.out.flush();
    }
}

/// Model text as it may reach the terminal: a tab becomes four spaces and any other control
/// character but the newline becomes `�`, so a reply cannot move the cursor, change colours or
/// retitle the window.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `text` without its ANSI escape sequences (`ESC [ … letter`), as it takes room on screen.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        }
    }
    out
}

/// The argument that says what a call does: its command, path or pattern.
/// The input's first string field stands in for a tool that has none of the known ones (an
/// MCP tool's `message`, say).
pub fn key_argument(input: &Value) -> Option<String> {
    let field = ["command", "file_path", "pattern", "path", "url", "query", "notebook_path", "description"]
        .iter()
        .find_map(|name| input.get(*name).and_then(Value::as_str))
        .or_else(|| input.as_object()?.values().find_map(Value::as_str))?;
    Some(shorten(field.lines().next().unwrap_or(""), 80))
}

/// `text` cut to `max` characters, with `…` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The line shown when a call starts: `● Bash(ls -la)`.
pub fn tool_started(style: Style, name: &str, input: &Value) -> String {
    let arg = key_argument(input).map(|a| format!("({a})")).unwrap_or_default();
    format!("{} {}{arg}", style.paint(CYAN, "●"), style.paint(BOLD, name))
}

/// The line shown when a call finishes: `  ⎿ Bash ok · 12 ms · total 8 (+3 lines)`, the
/// preview (see [`crate::engine::events::result_preview`]) dimmed.
pub fn tool_finished(style: Style, name: &str, is_error: bool, duration: Duration, preview: &str) -> String {
    let status = if is_error { style.paint(RED, "error") } else { style.paint(GREEN, "ok") };
    let preview = match preview {
        "" => String::new(),
        text => format!(" · {}", style.paint(DIM, text)),
    };
    format!("  ⎿ {name} {status} · {}{preview}", short_duration(duration))
}

/// `12 ms` under a second, `1.5s` above.
pub fn short_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) { format!("{} ms", d.as_millis()) } else { format!("{:.1}s", d.as_secs_f64()) }
}

/// Lines of the content a call would write, at most this many.
const PREVIEW_LINES: usize = 8;

/// The question asked before a call runs: the tool, what it would do, why it asks, the keys.
pub fn permission_prompt(style: Style, tool: &str, input: &Value, reason: &str, suggestion: Option<&str>) -> String {
    let mut out = Vec::new();
    let head = match key_argument(input) {
        Some(arg) => format!("{} {}({arg})", style.paint(YELLOW, "?"), style.paint(BOLD, tool)),
        None => format!("{} {}", style.paint(YELLOW, "?"), style.paint(BOLD, tool)),
    };
    out.push(head);
    let text = |field: &str| input.get(field).and_then(Value::as_str);
    match tool {
        "Bash" => {
            if let Some(command) = text("command").filter(|c| c.contains('\n')) {
                out.extend(preview(style, "  ", command, DIM));
            }
        }
        "Edit" => {
            if let Some(old) = text("old_string") {
                out.extend(preview(style, "  - ", old, RED));
            }
            if let Some(new) = text("new_string") {
                out.extend(preview(style, "  + ", new, GREEN));
            }
        }
        "Write" => {
            if let Some(content) = text("content") {
                out.extend(preview(style, "  + ", content, GREEN));
            }
        }
        _ if key_argument(input).is_none() => out.push(format!("  {}", shorten(&input.to_string(), 200))),
        _ => {}
    }
    out.push(style.paint(DIM, &format!("  {reason}")));
    let mut keys = vec!["y allow once".to_owned()];
    if let Some(rule) = suggestion {
        keys.push(format!("a allow {rule} for this session"));
    }
    keys.push("n deny".into());
    keys.push("Esc deny and interrupt".into());
    out.push(format!("  {}", keys.join(" · ")));
    out.join("\n")
}

fn preview(style: Style, prefix: &str, text: &str, colour: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(PREVIEW_LINES)
        .map(|l| style.paint(colour, &format!("{prefix}{}", shorten(l, 120))))
        .collect();
    if lines.len() > PREVIEW_LINES {
        out.push(style.paint(DIM, &format!("  … {} more lines", lines.len() - PREVIEW_LINES)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PLAIN: Style = Style { color: false };

    #[test]
    fn tool_lines_name_the_key_argument() {
        assert_eq!(tool_started(PLAIN, "Bash", &json!({"command": "ls -la\necho hi"})), "● Bash(ls -la)");
        assert_eq!(tool_started(PLAIN, "Read", &json!({"file_path": "src/main.rs"})), "● Read(src/main.rs)");
        assert_eq!(tool_started(PLAIN, "Grep", &json!({"pattern": "fn main", "path": "src"})), "● Grep(fn main)");
        assert_eq!(tool_started(PLAIN, "TodoWrite", &json!({"todos": []})), "● TodoWrite");
    }

    #[test]
    fn tool_lines_as_they_start_and_finish() {
        use crate::engine::events::result_preview;
        let lines = [
            tool_started(PLAIN, "Read", &json!({"file_path": "src/main.rs"})),
            tool_finished(PLAIN, "Read", false, Duration::from_millis(3), &result_preview("fn main() {\n}\n")),
            tool_started(PLAIN, "Bash", &json!({"command": "cargo test --lib 2>&1 | tail -3", "timeout": 60000})),
            tool_finished(
                PLAIN,
                "Bash",
                true,
                Duration::from_millis(12_400),
                &result_preview("\nerror[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5\n"),
            ),
            tool_started(PLAIN, "Edit", &json!({"file_path": "src/lib.rs", "old_string": "a", "new_string": "b"})),
            tool_finished(PLAIN, "Edit", false, Duration::from_millis(1), &result_preview("")),
            tool_started(PLAIN, "mcp__everything__echo", &json!({"message": "hi"})),
            tool_finished(PLAIN, "Grep", false, Duration::from_millis(40), &result_preview(&"x".repeat(100))),
        ];
        insta::assert_snapshot!(lines.join("\n"), @r"
        ● Read(src/main.rs)
          ⎿ Read ok · 3 ms · fn main() { (+1 lines)
        ● Bash(cargo test --lib 2>&1 | tail -3)
          ⎿ Bash error · 12.4s · error[E0425]: cannot find value `x` in this scope (+1 lines)
        ● Edit(src/lib.rs)
          ⎿ Edit ok · 1 ms
        ● mcp__everything__echo(hi)
          ⎿ Grep ok · 40 ms · xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…
        ");
    }

    #[test]
    fn model_text_cannot_drive_the_terminal() {
        assert_eq!(printable("plain\ntext"), "plain\ntext");
        assert_eq!(printable("a\tb\x1b[2Jc\r\x07"), "a    b\u{fffd}[2Jc\u{fffd}\u{fffd}");
        assert_eq!(crate::engine::events::result_preview("1\talpha\x1b[31m\n2\tbeta"), "1 alpha [31m (+1 lines)");
    }

    #[test]
    fn a_finished_line_in_colour_dims_the_preview() {
        let line = tool_finished(Style { color: true }, "Bash", false, Duration::from_millis(12), "ok");
        assert_eq!(line, "  ⎿ Bash \x1b[32mok\x1b[0m · 12 ms · \x1b[2mok\x1b[0m");
    }

    #[test]
    fn coloured_tool_lines() {
        let line = tool_started(Style { color: true }, "Bash", &json!({"command": "ls"}));
        assert_eq!(line, "\x1b[36m●\x1b[0m \x1b[1mBash\x1b[0m(ls)");
    }

    #[test]
    fn permission_prompt_for_a_command() {
        let prompt = permission_prompt(
            PLAIN,
            "Bash",
            &json!({"command": "git push origin main"}),
            "no allow rule covers `git push`",
            Some("Bash(git push:*)"),
        );
        insta::assert_snapshot!(prompt, @r"
        ? Bash(git push origin main)
          no allow rule covers `git push`
          y allow once · a allow Bash(git push:*) for this session · n deny · Esc deny and interrupt
        ");
    }

    #[test]
    fn permission_prompt_for_an_edit_shows_a_diff() {
        let input =
            json!({"file_path": "src/lib.rs", "old_string": "let a = 1;", "new_string": "let a = 2;\nlet b = 3;"});
        let prompt = permission_prompt(PLAIN, "Edit", &input, "Edit changes files", None);
        insta::assert_snapshot!(prompt, @r"
        ? Edit(src/lib.rs)
          - let a = 1;
          + let a = 2;
          + let b = 3;
          Edit changes files
          y allow once · n deny · Esc deny and interrupt
        ");
    }

    #[test]
    fn permission_prompt_for_a_write_shows_the_head_of_the_content() {
        let content: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let input = json!({"file_path": "notes.txt", "content": content});
        let prompt = permission_prompt(PLAIN, "Write", &input, "Write changes files", Some("Write"));
        insta::assert_snapshot!(prompt, @r"
        ? Write(notes.txt)
          + line 1
          + line 2
          + line 3
          + line 4
          + line 5
          + line 6
          + line 7
          + line 8
          … 2 more lines
          Write changes files
          y allow once · a allow Write for this session · n deny · Esc deny and interrupt
        ");
    }

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Buf {
        fn take(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
        }
    }

    #[test]
    fn an_abandoned_attempt_is_erased_and_a_kept_one_stays() {
        let buf = Buf::default();
        let screen = Screen::new(Box::new(buf.clone()), PLAIN);
        screen.line("> prompt");
        buf.take();
        // Two rows of text and a tool line: the cursor goes back up three rows.
        screen.reply_text("first\nsecond");
        screen.tool_started("toolu_1", "● Read(a)");
        screen.abandon_attempt();
        assert_eq!(buf.take(), "first\nsecond\n● Read(a)\n\r\x1b[3A\x1b[J");
        // Nothing to erase: nothing is written.
        screen.abandon_attempt();
        assert_eq!(buf.take(), "");
        // A kept reply is not erased by a later stream.
        screen.reply_text("kept");
        screen.keep_attempt();
        screen.abandon_attempt();
        assert_eq!(buf.take(), "kept");
        // An attempt that starts mid-line goes back to its column.
        screen.reply_text("more");
        screen.abandon_attempt();
        assert_eq!(buf.take(), "more\r\x1b[4C\x1b[J");
    }

    #[test]
    fn a_tool_start_line_is_shown_once() {
        let buf = Buf::default();
        let screen = Screen::new(Box::new(buf.clone()), PLAIN);
        // The question's own start line first; the engine's start event then adds nothing,
        // even while the question is open.
        screen.tool_started("toolu_1", "● Bash(ls)");
        screen.begin_question();
        screen.ask_line("? Bash(ls)");
        screen.tool_started("toolu_1", "● Bash(ls)");
        screen.ask_finish("  > y — allowed once");
        screen.end_question();
        screen.tool_started("toolu_2", "● Bash(pwd)");
        assert_eq!(buf.take(), "● Bash(ls)\n? Bash(ls)\n  > y — allowed once\n● Bash(pwd)\n");
    }

    #[test]
    fn typed_ahead_lines_are_drawn_under_the_status_line_and_erased_with_it() {
        let buf = Buf::default();
        let screen = Screen::new(Box::new(buf.clone()), PLAIN);
        screen.set_status(Some("S".into()));
        assert_eq!(buf.take(), "\r\x1b[KS");
        // At the start of a line: the status on it, the typed line below (room made first).
        screen.set_extra(vec!["› ab".into()]);
        assert_eq!(buf.take(), "\r\x1b[K\r\x1b[KS\x1bD\x1bM\x1b7\x1bD\r\x1b[K› ab\x1b8");
        // The same lines again: nothing is written.
        screen.set_extra(vec!["› ab".into()]);
        assert_eq!(buf.take(), "");
        // Under an open line of text: both lines below it, and both erased before more text.
        screen.reply_text("Hi");
        assert_eq!(
            buf.take(),
            "\r\x1b[K\x1b7\x1bD\r\x1b[K\x1b8Hi\x1bD\x1bD\x1bM\x1bM\x1b7\x1bD\r\x1b[KS\x1bD\r\x1b[K› ab\x1b8"
        );
        screen.set_status(None);
        assert_eq!(buf.take(), "\x1b7\x1bD\r\x1b[K\x1bD\r\x1b[K\x1b8");
    }

    #[test]
    fn the_status_line_is_erased_before_text_and_drawn_after_a_line() {
        let buf = Buf::default();
        let screen = Screen::new(Box::new(buf.clone()), PLAIN);
        screen.set_status(Some("Request · 0.1s".into()));
        screen.reply_text("Hel");
        screen.reply_text("lo");
        screen.line("● Read(a)");
        screen.set_status(None);
        let out = String::from_utf8(std::mem::take(&mut *buf.0.lock().unwrap())).unwrap();
        let below = |status: &str| format!("\x1bD\x1bM\x1b7\x1bD\r\x1b[K{status}\x1b8");
        let hide_below = "\x1b7\x1bD\r\x1b[K\x1b8";
        let status = "Request · 0.1s";
        assert_eq!(
            out,
            format!(
                "\r\x1b[K{status}\r\x1b[KHel{}{hide_below}lo{}{hide_below}\n● Read(a)\n\r\x1b[K{status}\r\x1b[K",
                below(status),
                below(status)
            )
        );

        // Output that arrives while a question is open waits until it is answered.
        screen.begin_question();
        screen.ask_line("? Bash(ls)");
        screen.ask_text("  > ");
        screen.line("● Bash(ls)");
        screen.ask_finish("y — allowed once");
        screen.end_question();
        let out = String::from_utf8(std::mem::take(&mut *buf.0.lock().unwrap())).unwrap();
        assert_eq!(out, "? Bash(ls)\n  > y — allowed once\n● Bash(ls)\n");
    }
}

//! What the session prints: the screen (streamed text, whole lines, and the status line kept
//! as the last line while a prompt runs), and the one-line renderings of tool calls and of
//! permission questions.

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
    shown: bool,
    /// A question is open: other output waits in `held` until it is answered.
    asking: bool,
    held: Vec<Held>,
    at_line_start: bool,
    /// Characters written since the last newline (to know when the cursor sits at the right
    /// margin, waiting to wrap: a saved and restored cursor would lose that wait).
    column: usize,
}

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
        let inner =
            Inner { out, status: None, shown: false, asking: false, held: Vec::new(), at_line_start: true, column: 0 };
        Screen { inner: Arc::new(Mutex::new(inner)), style }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Streamed text, as it arrives.
    pub fn text(&self, text: &str) {
        if !text.is_empty() {
            self.lock().put(Held::Text(text.to_owned()));
        }
    }

    /// End an open line of text, if any.
    pub fn end_line(&self) {
        self.lock().put(Held::EndLine);
    }

    /// One whole line (ending an open line of text first).
    pub fn line(&self, line: &str) {
        self.lock().put(Held::Line(line.to_owned()));
    }

    /// Show `status` as the last line (or none).
    pub fn set_status(&self, status: Option<String>) {
        let mut s = self.lock();
        s.hide();
        s.status = status;
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

    /// The terminal itself ended the line (it echoed the Enter of a typed answer).
    pub fn ask_line_ended(&self) {
        let mut s = self.lock();
        s.at_line_start = true;
        s.column = 0;
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
        if self.shown {
            // On the cursor's line, or (under an open line of text) on the line below:
            // save the cursor, go down, clear, come back.
            let clear: &[u8] = if self.at_line_start { b"\r\x1b[K" } else { b"\x1b7\x1bD\r\x1b[K\x1b8" };
            let _ = self.out.write_all(clear);
            self.shown = false;
        }
    }

    /// Draw the status line: at the start of a line, on it; under an open line of text, on
    /// the line below (IND scrolls when the cursor is on the last row, and RI comes back up,
    /// both keeping the column), so the status stays in view while text streams.
    fn draw(&mut self) {
        let columns = super::term::columns();
        let waiting_to_wrap = !self.at_line_start && self.column > 0 && self.column.is_multiple_of(columns);
        if let (Some(status), false, false) = (&self.status, self.asking, waiting_to_wrap) {
            let width = columns.saturating_sub(1);
            let line: String = status.chars().take(width).collect();
            if self.at_line_start {
                let _ = self.out.write_all(b"\r\x1b[K");
                let _ = self.out.write_all(line.as_bytes());
            } else {
                let _ = self.out.write_all(b"\x1bD\x1bM\x1b7\x1bD\r\x1b[K");
                let _ = self.out.write_all(line.as_bytes());
                let _ = self.out.write_all(b"\x1b8");
            }
            self.shown = true;
        }
        let _ = self.out.flush();
    }
}

/// The argument that says what a call does: its command, path or pattern.
pub fn key_argument(input: &Value) -> Option<String> {
    let field = ["command", "file_path", "pattern", "path", "url", "query", "notebook_path", "description"]
        .iter()
        .find_map(|name| input.get(*name).and_then(Value::as_str))?;
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

/// The line shown when a call finishes: `  ⎿ Bash ok · 12 ms`.
pub fn tool_finished(style: Style, name: &str, is_error: bool, duration: Duration) -> String {
    let status = if is_error { style.paint(RED, "error") } else { style.paint(GREEN, "ok") };
    format!("  ⎿ {name} {status} · {}", short_duration(duration))
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
        assert_eq!(tool_finished(PLAIN, "Bash", false, Duration::from_millis(12)), "  ⎿ Bash ok · 12 ms");
        assert_eq!(tool_finished(PLAIN, "Read", true, Duration::from_millis(1500)), "  ⎿ Read error · 1.5s");
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

    #[test]
    fn the_status_line_is_erased_before_text_and_drawn_after_a_line() {
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
        let buf = Buf::default();
        let screen = Screen::new(Box::new(buf.clone()), PLAIN);
        screen.set_status(Some("Request · 0.1s".into()));
        screen.text("Hel");
        screen.text("lo");
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

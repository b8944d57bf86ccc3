//! How the model's text reaches stdout in text mode: streamed on a terminal (an abandoned
//! attempt erased with ANSI escapes), held back until the reply is kept otherwise.

use std::io::{IsTerminal, Write};

/// How the model's text reaches stdout in text mode.
///
/// With a terminal (`cols` known) each piece is printed as it arrives, and the cursor's
/// movement since the attempt's first piece is counted (wrapped rows, and lines other output
/// put on the same screen) so that an abandoned attempt can be erased: cursor up that many
/// rows, then clear to the end of the screen. Without one, the attempt's text is held and
/// printed when the reply is kept.
#[derive(Debug)]
pub struct TextOut {
    cols: Option<usize>,
    /// Text of the current attempt: held back (no terminal) or on screen (terminal).
    attempt: String,
    /// Rows the cursor moved down since the attempt's first piece (terminal only).
    rows: usize,
    /// The cursor's column (terminal only).
    col: usize,
    /// A line of text is open on stdout: a newline ends it before other output.
    line_open: bool,
}

impl TextOut {
    /// Text output for a terminal `cols` wide, or for a pipe or file (`None`).
    pub fn new(cols: Option<usize>) -> Self {
        TextOut { cols, attempt: String::new(), rows: 0, col: 0, line_open: false }
    }

    /// A piece of the current attempt's text.
    pub fn delta(&mut self, out: &mut dyn Write, text: &str) {
        self.attempt.push_str(text);
        if self.cols.is_some() {
            self.advance(text);
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            self.line_open = true;
        }
    }

    /// The current attempt's reply is kept in the conversation: it can no longer be retried.
    pub fn keep(&mut self, out: &mut dyn Write) {
        let text = std::mem::take(&mut self.attempt);
        if self.cols.is_none() && !text.is_empty() {
            let _ = out.write_all(text.as_bytes());
            self.line_open = true;
        }
        self.rows = 0;
        self.end_line(out);
    }

    /// The current attempt is not kept: drop its held text, or erase it from the screen.
    pub fn abandon(&mut self, out: &mut dyn Write) {
        if self.attempt.is_empty() {
            return;
        }
        self.attempt.clear();
        if self.cols.is_some() {
            let up = if self.rows > 0 { format!("\x1b[{}A", self.rows) } else { String::new() };
            let _ = write!(out, "\r{up}\x1b[J");
            let _ = out.flush();
            self.rows = 0;
            self.col = 0;
            self.line_open = false;
        }
    }

    /// End the open line of text, if any, before other output.
    pub fn end_line(&mut self, out: &mut dyn Write) {
        if self.line_open {
            let _ = out.write_all(b"\n");
            let _ = out.flush();
            self.line_open = false;
            if !self.attempt.is_empty() {
                self.rows += 1;
            }
            self.col = 0;
        }
    }

    /// A whole line written to the same screen by other output (stderr) while an attempt's
    /// text is shown: erasing the attempt must go up past it too.
    pub fn other_line(&mut self, line: &str) {
        if let Some(cols) = self.cols
            && !self.attempt.is_empty()
        {
            self.rows += line.chars().count().div_ceil(cols).max(1);
        }
    }

    fn advance(&mut self, text: &str) {
        let Some(cols) = self.cols else { return };
        for c in text.chars() {
            if c == '\n' {
                self.rows += 1;
                self.col = 0;
            } else {
                if self.col == cols {
                    self.rows += 1;
                    self.col = 0;
                }
                self.col += 1;
            }
        }
    }
}

/// The width of the terminal stdout is, or `None` when stdout is not a terminal.
pub fn stdout_columns() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    // SAFETY: TIOCGWINSZ fills the `winsize` it is given and reads nothing else.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    Some(if ok && size.ws_col > 0 { usize::from(size.ws_col) } else { 80 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(out: &[u8]) -> String {
        String::from_utf8_lossy(out).into_owned()
    }

    #[test]
    fn without_a_terminal_only_kept_replies_are_printed() {
        let mut text = TextOut::new(None);
        let mut out = Vec::new();
        text.delta(&mut out, "Hel");
        assert_eq!(shown(&out), "", "held until the reply is kept");
        text.abandon(&mut out);
        text.delta(&mut out, "Hel");
        text.delta(&mut out, "lo!");
        text.keep(&mut out);
        text.delta(&mut out, "Second.");
        text.keep(&mut out);
        assert_eq!(shown(&out), "Hello!\nSecond.\n");
    }

    #[test]
    fn on_a_terminal_an_abandoned_attempt_is_erased() {
        let mut text = TextOut::new(Some(10));
        let mut out = Vec::new();
        text.delta(&mut out, "Hel");
        text.abandon(&mut out);
        text.delta(&mut out, "Hello!");
        text.keep(&mut out);
        assert_eq!(shown(&out), "Hel\r\x1b[JHello!\n");
    }

    #[test]
    fn erasing_goes_up_past_wrapped_rows_newlines_and_other_lines() {
        let mut text = TextOut::new(Some(10));
        let mut out = Vec::new();
        // 25 characters on a 10-column screen: three rows, the cursor on the third.
        text.delta(&mut out, "abcdefghijklmnopqrstuvwxy");
        text.delta(&mut out, "\nline two");
        // A tool line on stderr ends the text line and takes two rows of its own.
        text.end_line(&mut out);
        text.other_line("→ Read {\"file\"}");
        text.delta(&mut out, "more");
        text.abandon(&mut out);
        // Rows down: 2 wraps, 1 newline, the line ended, 2 for the tool line.
        assert_eq!(shown(&out), "abcdefghijklmnopqrstuvwxy\nline two\nmore\r\x1b[6A\x1b[J");
    }

    #[test]
    fn lines_outside_an_attempt_are_not_counted() {
        let mut text = TextOut::new(Some(10));
        let mut out = Vec::new();
        text.other_line("a warning before any text");
        text.delta(&mut out, "ok");
        text.abandon(&mut out);
        assert_eq!(shown(&out), "ok\r\x1b[J");
    }
}

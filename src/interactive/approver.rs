//! Permission questions on the terminal: the call is shown and one key answers it, without
//! Enter — `y` allow once, `a` allow for the session, `n` deny (then an optional reason for
//! the model), Esc deny and interrupt. The status line is paused while the question waits.

use futures::future::BoxFuture;

use super::render::{DIM, Screen, permission_prompt, tool_started};
use super::term::{self, Key, Terminal};
use crate::permissions::approver::{Approval, ApprovalRequest, Approver};

/// What the model reads when a call is denied without a reason.
pub const DENIED: &str = "The user denied this tool call. Do not retry it; ask the user how to proceed.";
/// What the model reads when the user denies a call and interrupts.
pub const DENIED_AND_INTERRUPTED: &str =
    "The user denied this tool call and interrupted. Wait for the next instruction.";

/// Asks the person at the terminal.
pub struct TerminalApprover {
    screen: Screen,
    terminal: Terminal,
}

impl TerminalApprover {
    /// An approver that asks on `screen` and reads keys from stdin.
    pub fn new(screen: Screen, terminal: Terminal) -> TerminalApprover {
        TerminalApprover { screen, terminal }
    }
}

/// The answer a key gives, or `None` for a key that answers nothing (asked again).
pub fn answer_for_key(key: Key, suggestion: Option<&str>) -> Option<KeyAnswer> {
    match key {
        Key::Byte(b'y' | b'Y') => Some(KeyAnswer::Once),
        Key::Byte(b'a' | b'A') => suggestion.map(|rule| KeyAnswer::Session(rule.to_owned())),
        Key::Byte(b'n' | b'N') => Some(KeyAnswer::Deny),
        Key::Escape | Key::Byte(0x03) | Key::Closed => Some(KeyAnswer::Interrupt),
        Key::Byte(_) => None,
    }
}

/// What a key chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyAnswer {
    /// `y`.
    Once,
    /// `a`, with the rule.
    Session(String),
    /// `n`.
    Deny,
    /// Esc.
    Interrupt,
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let style = self.screen.style;
            let suggestion = request.suggestion.as_deref();
            // The call's start line comes first, even if the question is put before the
            // engine's start event is shown.
            self.screen.tool_started(&request.tool_use_id, &tool_started(style, &request.tool, &request.input));
            self.screen.begin_question();
            self.screen.ask_line(&permission_prompt(style, &request.tool, &request.input, &request.reason, suggestion));
            self.screen.ask_text("  > ");
            term::discard_typeahead();
            let choice = loop {
                let key = term::on_thread(term::read_key).await.unwrap_or(Key::Closed);
                if let Some(answer) = answer_for_key(key, suggestion) {
                    break answer;
                }
            };
            let approval = match choice {
                KeyAnswer::Once => {
                    self.screen.ask_finish("y — allowed once");
                    Approval::AllowOnce
                }
                KeyAnswer::Session(rule) => {
                    self.screen.ask_finish(&format!("a — allowed for this session: {rule}"));
                    Approval::AllowForSession { rule }
                }
                KeyAnswer::Interrupt => {
                    self.screen.ask_finish("Esc — denied; interrupting");
                    Approval::DenyAndInterrupt { message: DENIED_AND_INTERRUPTED.into() }
                }
                KeyAnswer::Deny => {
                    self.screen.ask_finish("n — denied");
                    self.screen.ask_text(&style.paint(DIM, "  reason for the model (Enter to skip): "));
                    self.terminal.line_mode();
                    let reason = term::on_thread(term::read_line).await.unwrap_or_default();
                    self.terminal.turn_mode();
                    self.screen.ask_line_ended();
                    let reason = reason.trim();
                    let message = if reason.is_empty() {
                        DENIED.to_owned()
                    } else {
                        format!("The user denied this tool call: {reason}")
                    };
                    Approval::Deny { message }
                }
            };
            self.screen.end_question();
            approval
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_answer_the_question() {
        let rule = Some("Bash(git push:*)");
        assert_eq!(answer_for_key(Key::Byte(b'y'), rule), Some(KeyAnswer::Once));
        assert_eq!(answer_for_key(Key::Byte(b'a'), rule), Some(KeyAnswer::Session("Bash(git push:*)".into())));
        assert_eq!(answer_for_key(Key::Byte(b'a'), None), None);
        assert_eq!(answer_for_key(Key::Byte(b'n'), rule), Some(KeyAnswer::Deny));
        assert_eq!(answer_for_key(Key::Escape, rule), Some(KeyAnswer::Interrupt));
        assert_eq!(answer_for_key(Key::Byte(b'x'), rule), None);
        assert_eq!(answer_for_key(Key::Byte(b'\r'), rule), None);
    }
}

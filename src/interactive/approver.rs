//! Permission questions on the terminal: the call is shown and one key answers it, without
//! Enter — `y` allow once, `a` allow for the session, `n` deny (then an optional reason for
//! the model), Esc deny and interrupt. The status line is paused while the question waits.
//! Keys come from the turn's one reader ([`Keyboard`]): while the question is open they go to
//! it, never to the type-ahead buffer, and keys typed before it was asked never answer it.

use futures::future::BoxFuture;

use super::keys::{Key, Keyboard, Question};
use super::render::{DIM, Screen, permission_prompt, tool_started};
use crate::permissions::approver::{Approval, ApprovalRequest, Approver};

/// What the model reads when a call is denied without a reason.
pub const DENIED: &str = "The user denied this tool call. Do not retry it; ask the user how to proceed.";
/// What the model reads when the user denies a call and interrupts.
pub const DENIED_AND_INTERRUPTED: &str =
    "The user denied this tool call and interrupted. Wait for the next instruction.";

/// Asks the person at the terminal.
pub struct TerminalApprover {
    screen: Screen,
    keyboard: Keyboard,
}

impl TerminalApprover {
    /// An approver that asks on `screen` and takes its keys from `keyboard`.
    pub fn new(screen: Screen, keyboard: Keyboard) -> TerminalApprover {
        TerminalApprover { screen, keyboard }
    }
}

/// The answer a key gives, or `None` for a key that answers nothing (asked again).
pub fn answer_for_key(key: Key, suggestion: Option<&str>) -> Option<KeyAnswer> {
    match key {
        Key::Char('y' | 'Y') => Some(KeyAnswer::Once),
        Key::Char('a' | 'A') => suggestion.map(|rule| KeyAnswer::Session(rule.to_owned())),
        Key::Char('n' | 'N') => Some(KeyAnswer::Deny),
        Key::Escape | Key::Control(0x03) | Key::Closed => Some(KeyAnswer::Interrupt),
        Key::Char(_)
        | Key::Enter
        | Key::Newline
        | Key::Backspace
        | Key::Control(_)
        | Key::PasteStart
        | Key::PasteEnd => None,
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
            let reason = match &request.agent {
                Some(agent) => format!("subagent {agent}: {}", request.reason),
                None => request.reason.clone(),
            };
            self.screen.ask_line(&permission_prompt(style, &request.tool, &request.input, &reason, suggestion));
            self.screen.ask_text("  > ");
            // From here keys answer the question; those typed before stay typed ahead.
            let mut keys = self.keyboard.question();
            let choice = loop {
                let key = keys.key().await;
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
                    let Some(reason) = self.read_reason(&mut keys).await else {
                        self.screen.ask_finish(" — Esc: denied; interrupting");
                        return self.close(Approval::DenyAndInterrupt { message: DENIED_AND_INTERRUPTED.into() });
                    };
                    let reason = reason.trim();
                    let message = if reason.is_empty() {
                        DENIED.to_owned()
                    } else {
                        format!("The user denied this tool call: {reason}")
                    };
                    Approval::Deny { message }
                }
            };
            self.close(approval)
        })
    }
}

impl TerminalApprover {
    fn close(&self, approval: Approval) -> Approval {
        self.screen.end_question();
        approval
    }

    /// The reason typed after `n`, echoed and edited here (Backspace), ended by Enter;
    /// `None` when Esc gives up on it (deny and interrupt).
    async fn read_reason(&self, keys: &mut Question) -> Option<String> {
        let mut reason = String::new();
        loop {
            match keys.key().await {
                Key::Char(c) => {
                    reason.push(c);
                    self.screen.ask_text(&c.to_string());
                }
                Key::Backspace => {
                    if reason.pop().is_some() {
                        self.screen.ask_erase();
                    }
                }
                Key::Enter | Key::Closed => {
                    self.screen.ask_text("\n");
                    return Some(reason);
                }
                Key::Escape => return None,
                Key::Control(_) | Key::Newline | Key::PasteStart | Key::PasteEnd => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_answer_the_question() {
        let rule = Some("Bash(git push:*)");
        assert_eq!(answer_for_key(Key::Char('y'), rule), Some(KeyAnswer::Once));
        assert_eq!(answer_for_key(Key::Char('a'), rule), Some(KeyAnswer::Session("Bash(git push:*)".into())));
        assert_eq!(answer_for_key(Key::Char('a'), None), None);
        assert_eq!(answer_for_key(Key::Char('n'), rule), Some(KeyAnswer::Deny));
        assert_eq!(answer_for_key(Key::Escape, rule), Some(KeyAnswer::Interrupt));
        assert_eq!(answer_for_key(Key::Char('x'), rule), None);
        assert_eq!(answer_for_key(Key::Enter, rule), None);
    }
}

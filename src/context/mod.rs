//! Context management: token estimates, the window's thresholds, collapse of old tool
//! results, the messages compaction and recovery add to the conversation, and the output
//! styles the system prompt carries ([`output_style`]).

pub mod environment;
pub mod memory;
pub mod output_style;

use std::borrow::Borrow;

use crate::protocol::{ContentBlock, Message, Role, ToolDefinition, ToolResultContent};

/// Characters per token in our estimates (the usual rough rule for English and code).
pub const CHARS_PER_TOKEN: usize = 4;

/// Marker prefix of a collapsed tool result.
pub const COLLAPSED_PREFIX: &str = "[collapsed: ";

/// Characters the tool definitions add to every request: their JSON.
pub fn tools_chars(tools: &[ToolDefinition]) -> usize {
    serde_json::to_string(tools).map_or(0, |s| s.len())
}

/// Estimated tokens of `chars` characters of request (the engine keeps a running count).
pub fn estimate_tokens_of_chars(chars: usize) -> u64 {
    chars.div_ceil(CHARS_PER_TOKEN) as u64
}

/// The thresholds of a context window, scaled down for small windows so that small
/// scenarios reach them. For 200_000 tokens: autocompact at 167_000, blocking at 177_000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Above this, Prepare compacts the history before the call.
    pub autocompact: u64,
    /// Above this, the call is not made (`blocking_limit`).
    pub blocking: u64,
}

impl Thresholds {
    /// Thresholds for a window of `window` tokens.
    pub fn for_window(window: u64) -> Self {
        let reserve = (window / 10).min(20_000);
        let effective = window - reserve;
        Thresholds {
            autocompact: effective - (window / 15).min(13_000),
            blocking: effective - (window / 60).min(3_000),
        }
    }
}

/// Number of tool results that a collapse drain would replace: every tool result outside
/// the last user message that is not collapsed already.
pub fn staged_collapses<M: Borrow<Message>>(messages: &[M]) -> usize {
    let last_user = messages.iter().rposition(|m| m.borrow().role == Role::User);
    messages
        .iter()
        .map(Borrow::borrow)
        .enumerate()
        .filter(|(i, _)| Some(*i) != last_user)
        .flat_map(|(_, m)| &m.content)
        .filter(|b| matches!(b, ContentBlock::ToolResult { content, .. } if !is_collapsed(content)))
        .count()
}

fn is_collapsed(content: &ToolResultContent) -> bool {
    content.as_str().starts_with(COLLAPSED_PREFIX)
}

/// Commit every staged collapse: the content of each older tool result becomes a short marker.
/// The blocks stay, so every tool_use keeps its tool_result. Returns how many were collapsed.
pub fn commit_collapses(messages: &mut [Message]) -> usize {
    let last_user = messages.iter().rposition(|m| m.role == Role::User);
    let mut committed = 0;
    for (i, message) in messages.iter_mut().enumerate() {
        if Some(i) == last_user {
            continue;
        }
        for block in &mut message.content {
            if let ContentBlock::ToolResult { content, .. } = block
                && !is_collapsed(content)
            {
                let chars = match content {
                    ToolResultContent::Text(s) => s.len(),
                    ToolResultContent::Blocks(b) => b.iter().map(|v| v.to_string().len()).sum(),
                };
                *content =
                    ToolResultContent::Text(format!("{COLLAPSED_PREFIX}older tool result of {chars} characters]"));
                committed += 1;
            }
        }
    }
    committed
}

/// The instruction of a compaction (aux) request.
pub const COMPACT_INSTRUCTION: &str = "Summarize the conversation so far for a fresh start: the user's request, \
what has been done, the files involved, what remains. Be complete but brief. Reply with the summary only.";

/// System prompt of a compaction request.
pub const COMPACT_SYSTEM: &str = "You write summaries of coding-agent conversations.";

/// The messages of a compaction request: the history, then the instruction, with the
/// user's `instructions` (`/compact keep the file names`) after it when given.
/// A trailing user message is merged with the instruction so roles keep alternating.
pub fn compaction_request_messages<M: Borrow<Message>>(history: &[M], instructions: Option<&str>) -> Vec<Message> {
    let instruction = match instructions.map(str::trim).filter(|i| !i.is_empty()) {
        Some(extra) => format!("{COMPACT_INSTRUCTION}\n\nAdditional instructions: {extra}"),
        None => COMPACT_INSTRUCTION.to_owned(),
    };
    let mut messages: Vec<Message> = history.iter().map(|m| m.borrow().clone()).collect();
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(ContentBlock::text(instruction)),
        _ => messages.push(Message::user_text(instruction)),
    }
    messages
}

/// The history after a compaction: one user message holding the summary.
pub fn compacted_history(summary: &str) -> Vec<Message> {
    vec![Message::user_text(format!(
        "This session continues an earlier conversation that was compacted. Summary of it:\n\n{summary}\n\n\
Continue the task from where it was left, without asking the user again."
    ))]
}

/// The hidden message of `max_output_tokens_recovery`.
pub const RESUME_MESSAGE: &str = "Output token limit hit. Resume directly from where you stopped: no apology, no \
recap. If the cut came mid-thought, continue mid-thought. Break the remaining work into smaller pieces.";

/// The nudge of `token_budget_continuation`.
pub fn budget_nudge(used: u64, budget: u64) -> String {
    let pct = (used as f64 / budget as f64 * 100.0).round() as u64;
    format!("Stopped at {pct}% of token target ({used} / {budget}). Keep working — do not summarize.")
}

/// The message a blocking Stop hook's feedback becomes.
pub fn stop_hook_feedback(feedback: &str) -> String {
    format!("Stop hook feedback:\n{feedback}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_match_claude_code_for_a_full_window_and_scale_down() {
        assert_eq!(Thresholds::for_window(200_000), Thresholds { autocompact: 167_000, blocking: 177_000 });
        assert_eq!(Thresholds::for_window(6_000), Thresholds { autocompact: 5_000, blocking: 5_300 });
    }

    #[test]
    fn collapse_keeps_blocks_and_the_last_results() {
        let mut history = vec![
            Message::user_text("go"),
            Message { role: Role::User, content: vec![ContentBlock::tool_result("a", "x".repeat(40), false)] },
            Message { role: Role::User, content: vec![ContentBlock::tool_result("b", "recent", false)] },
        ];
        assert_eq!(staged_collapses(&history), 1);
        assert_eq!(commit_collapses(&mut history), 1);
        assert_eq!(
            history[1].content[0],
            ContentBlock::tool_result("a", "[collapsed: older tool result of 40 characters]", false)
        );
        assert_eq!(history[2].content[0], ContentBlock::tool_result("b", "recent", false));
        assert_eq!(staged_collapses(&history), 0);
    }

    #[test]
    fn compaction_instructions_follow_the_summary_instruction() {
        let history = vec![
            Message::user_text("hi"),
            Message { role: Role::Assistant, content: vec![ContentBlock::text("hello")] },
        ];
        let plain = compaction_request_messages(&history, None);
        assert_eq!(plain.len(), 3);
        assert_eq!(plain[2], Message::user_text(COMPACT_INSTRUCTION));
        let extra = compaction_request_messages(&history, Some(" keep the file names "));
        assert_eq!(
            extra[2],
            Message::user_text(format!("{COMPACT_INSTRUCTION}\n\nAdditional instructions: keep the file names"))
        );
        // A trailing user message takes the instruction as one more block.
        let merged = compaction_request_messages(&history[..1], None);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].content.len(), 2);
    }

    #[test]
    fn estimates_round_up() {
        assert_eq!(estimate_tokens_of_chars(5), 2);
        assert_eq!(
            budget_nudge(450, 1000),
            "Stopped at 45% of token target (450 / 1000). Keep working — do not summarize."
        );
    }
}

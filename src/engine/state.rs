//! The loop's data: the conversation, the counters the table declares, and what one
//! state hands to the next. The machine's handlers read and write it; nothing else does.

use std::time::Duration;

use serde::Serialize;

use crate::engine::options::EngineOptions;
use crate::engine::table::{Counters, Table};
use crate::model::assemble::Assembler;
use crate::model::{DEFAULT_MAX_TOKENS, ESCALATED_MAX_TOKENS, ModelRequest, Purpose, ReplyStream};
use std::borrow::Borrow;

use crate::protocol::{ContentBlock, Message, Role, ToolDefinition, Transcript, Usage};
use crate::tools::ToolCall;

/// Counter names, generated from the table.
pub use crate::engine::generated::counter;

/// An error held back from the caller while recovery may still fix it.
#[derive(Debug, Clone, PartialEq)]
pub enum Withheld {
    /// The API refused the prompt as too long.
    PromptTooLong(String),
    /// The reply was cut at the output cap.
    Truncated {
        /// The reply as received (without any unfinished tool call).
        reply: Message,
        /// What the API said about it.
        info: Box<crate::session::ReplyInfo>,
        /// The output cap it hit.
        max_tokens: u32,
    },
}

/// Token totals of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct UsageTotals {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_creation_input_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cache_read_input_tokens: u64,
}

impl UsageTotals {
    /// Add one reply's usage.
    pub fn add(&mut self, u: &Usage) {
        self.input_tokens += u.input_tokens.unwrap_or(0);
        self.output_tokens += u.output_tokens.unwrap_or(0);
        self.cache_creation_input_tokens += u.cache_creation_input_tokens.unwrap_or(0);
        self.cache_read_input_tokens += u.cache_read_input_tokens.unwrap_or(0);
    }

    /// Every token counted, of all four kinds (a subagent's `total_tokens`).
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }
}

/// The loop's data.
pub struct LoopState {
    /// Options of the run.
    pub options: EngineOptions,
    /// The conversation so far; requests share its messages.
    pub messages: Transcript,
    /// Tool definitions sent with every main request.
    pub tools: Vec<ToolDefinition>,
    /// Characters of the serialized tool definitions, for estimates.
    pub tools_chars: usize,
    /// Counter values (what is left).
    pub counters: Counters,
    /// Counter bounds in force.
    pub bounds: Counters,
    /// The request Prepare built; Request sends it (again on retries and escalation).
    pub request: Option<ModelRequest>,
    /// The open reply stream.
    pub stream: Option<ReplyStream>,
    /// A reply interrupted mid-stream, kept for the abort handler.
    pub partial: Option<Assembler>,
    /// Tool calls of the current reply, in call order.
    pub calls: Vec<ToolCall>,
    /// The executor of the current reply's calls (started while the reply streamed).
    pub executor: Option<crate::tools::streaming::Executor>,
    /// Results of calls of an interrupted reply, by tool_use id.
    pub partial_results: std::collections::HashMap<String, ContentBlock>,
    /// Results gathered by an interrupted tool phase.
    pub interrupted_results: Option<Vec<ContentBlock>>,
    /// The withheld error Recover works on.
    pub withheld: Option<Withheld>,
    /// A tool hook's `continue: false` reason.
    pub hook_stop: Option<String>,
    /// Wait before the next attempt (set by retry edges).
    pub backoff: Option<Duration>,
    /// Output tokens at the last budget check.
    pub budget_last_used: u64,
    /// Output tokens added between the last two budget checks.
    pub budget_last_delta: u64,
    /// The message that explains a failed ending.
    pub error: Option<String>,
    /// The model call whose failure ended (or may end) the run, for the result frame.
    pub api_failure: Option<crate::model::ApiFailure>,
    /// Every call that was refused, in the order the phases finished.
    pub permission_denials: Vec<crate::permissions::Denial>,
    /// Token totals.
    pub usage: UsageTotals,
    /// Main requests sent (retries included).
    pub model_calls: u32,
    /// Cost in USD of every reply so far, from the price table (replies of unpriced models add 0).
    pub cost_usd: f64,
    /// The models that answered whose price nobody knows: the run's cost is unknown.
    pub unpriced_models: std::collections::BTreeSet<String>,
    /// Tokens and cost of model calls made for this run's calls (its subagents'), by model;
    /// their cost is in `cost_usd` too.
    pub delegated: Vec<(String, UsageTotals, f64)>,
    /// What the session's earlier prompts cost: the spend cap counts it too.
    pub spent_before_usd: f64,
    /// What the last main request left in the prompt cache (the spend cap prices it as a
    /// read); `None` before the first reply and after the history was rewritten.
    pub cached_prefix: Option<crate::engine::budget::CachedPrefix>,
    /// Characters of the prompt of the request being sent (system, tools, messages).
    pub sent_chars: usize,
    /// The output cap of the request being sent (the spend cap may have lowered it).
    pub sent_max_tokens: u32,
    /// What the last tool phase's `StructuredOutput` calls came to.
    pub structured: Option<crate::tools::structured_output::Answer>,
    /// The run's structured answer: the first `StructuredOutput` call that matched.
    pub structured_output: Option<serde_json::Value>,
    /// The model was told once to answer through `StructuredOutput` (at an end of turn
    /// without it).
    pub structured_nudged: bool,
    /// A resumed session's cut tool phase, which the run finishes before its prompt
    /// (`prepare.resume_tools`); taken when that edge is.
    pub resume: Option<ResumeTools>,
}

/// A tool phase a kill cut off, and the prompt of the run that finishes it: the prompt
/// follows the phase's results in the history and the transcript.
#[derive(Debug, Clone)]
pub struct ResumeTools {
    /// The cut reply's calls: what the journal settled, and what is left to run.
    pub pending: crate::session::PendingTools,
    /// The prompt, held back until the results are in.
    pub prompt: Message,
    /// The prompt's transcript uuid.
    pub uuid: crate::session::Uuid,
    /// The prompt's `origin`, from the Agent SDK.
    pub origin: Option<serde_json::Value>,
}

impl LoopState {
    /// The state at the start of a run on `prompt`.
    pub fn new(options: EngineOptions, prompt: &str, tools: Vec<ToolDefinition>, table: &Table) -> Self {
        LoopState::with_history(options, Transcript::default(), Some(prompt), tools, table)
    }

    /// The state at the start of a prompt on a session whose conversation so far is
    /// `history`: the prompt is appended to it (merged into a last user message, as the API
    /// wants roles to alternate). `None` when the prompt waits for a resumed tool phase
    /// ([`ResumeTools`]).
    pub fn with_history(
        options: EngineOptions,
        history: Transcript,
        prompt: Option<&str>,
        tools: Vec<ToolDefinition>,
        table: &Table,
    ) -> Self {
        let mut bounds = Counters::new();
        let mut counters = Counters::new();
        for c in &table.counters {
            let bound = match c.option.as_deref() {
                Some("max_turns") => options.max_turns.unwrap_or(c.bound),
                Some("max_retries") => options.max_retries.unwrap_or(c.bound),
                // A cap the user set is the cap: raising it is not the loop's call.
                Some("max_output_tokens") if options.max_output_tokens.is_some() => 0,
                _ => c.bound,
            };
            bounds.insert(c.name.clone(), bound);
            counters.insert(c.name.clone(), bound.saturating_sub(c.spent_at_start));
        }
        let tools_chars = crate::context::tools_chars(&tools);
        LoopState {
            options,
            messages: {
                let mut messages = history;
                if let Some(prompt) = prompt {
                    messages.push_merging(Message::user_text(prompt));
                }
                messages
            },
            tools,
            tools_chars,
            counters,
            bounds,
            request: None,
            stream: None,
            partial: None,
            calls: Vec::new(),
            executor: None,
            partial_results: Default::default(),
            interrupted_results: None,
            withheld: None,
            hook_stop: None,
            backoff: None,
            budget_last_used: 0,
            budget_last_delta: 0,
            error: None,
            api_failure: None,
            permission_denials: Vec::new(),
            usage: UsageTotals::default(),
            model_calls: 0,
            cost_usd: 0.0,
            unpriced_models: std::collections::BTreeSet::new(),
            delegated: Vec::new(),
            spent_before_usd: 0.0,
            cached_prefix: None,
            sent_chars: 0,
            sent_max_tokens: 0,
            structured: None,
            structured_output: None,
            structured_nudged: false,
            resume: None,
        }
    }

    /// What is left of counter `name`.
    pub fn left(&self, name: &str) -> u32 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    /// How much of counter `name` has been used since its last reset.
    pub fn used(&self, name: &str) -> u32 {
        self.bounds.get(name).copied().unwrap_or(0) - self.left(name)
    }

    /// The current turn, 1-based (derived from the turns counter).
    pub fn turn(&self) -> u32 {
        self.used(counter::TURNS)
    }

    /// The output cap of the next request: the user's cap when one is set, else escalated once
    /// `escalations` is spent this turn.
    pub fn max_tokens(&self) -> u32 {
        if let Some(cap) = self.options.max_output_tokens {
            return cap;
        }
        if self.used(counter::ESCALATIONS) > 0 { ESCALATED_MAX_TOKENS } else { DEFAULT_MAX_TOKENS }
    }

    /// The model of the next request: the fallback once a fallback was taken.
    pub fn model(&self) -> &str {
        match (&self.options.fallback_model, self.used(counter::FALLBACKS)) {
            (Some(fallback), n) if n > 0 => fallback,
            _ => &self.options.model,
        }
    }

    /// Characters of the next request's prompt: system prompt, tool definitions, messages.
    pub fn prompt_chars(&self) -> usize {
        self.options.system_prompt_len() + self.tools_chars + self.messages.chars()
    }

    /// What is left of `--max-budget-usd` after the session's spend so far; `None` without a cap.
    pub fn budget_left(&self) -> Option<f64> {
        self.options.max_budget_usd.map(|cap| cap - self.spent_before_usd - self.cost_usd)
    }

    /// Build the main request from the conversation.
    pub fn build_request(&self) -> ModelRequest {
        ModelRequest {
            model: self.model().to_owned(),
            system: self.options.system.clone(),
            system_context: self.options.system_context(),
            server_tools: Vec::new(),
            messages: self.messages.clone(),
            tools: self.tools.clone(),
            max_tokens: self.max_tokens(),
            thinking: self.options.thinking_budget,
            purpose: Purpose::Main,
        }
    }

    /// Count model calls made on this run's behalf (its subagents'), by model: their cost
    /// joins the run's.
    pub fn add_delegated(&mut self, usage: impl IntoIterator<Item = (String, UsageTotals, f64)>) {
        for (model, tokens, cost) in usage {
            self.cost_usd += cost;
            self.delegated.push((model, tokens, cost));
        }
    }

    /// Append a message, merging it into the previous one when both have the same role (the
    /// API wants roles to alternate; a reply that continues a paused turn extends it).
    /// Empty messages are not appended.
    pub fn push_message(&mut self, message: Message) -> Option<&Message> {
        self.messages.push_merging(message)
    }

    /// The text of the last assistant message.
    pub fn final_text(&self) -> String {
        self.messages.iter().rev().find(|m| m.role == Role::Assistant).map(|m| m.text()).unwrap_or_default()
    }
}

/// The first violation of the pairing invariant in `messages`, if any: every `tool_use`
/// must have exactly one `tool_result` in the very next message, which must be a user message,
/// and no `tool_result` may answer a call that message does not follow.
pub fn pairing_violation<M: Borrow<Message>>(messages: &[M]) -> Option<String> {
    for (i, message) in messages.iter().map(Borrow::borrow).enumerate() {
        let results: Vec<&str> = message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        let calls: Vec<&str> = match i.checked_sub(1).map(|p| messages[p].borrow()) {
            Some(prev) if prev.role == Role::Assistant => prev.tool_uses().map(|t| t.id).collect(),
            _ => Vec::new(),
        };
        if message.role == Role::User || !results.is_empty() {
            if calls != results {
                return Some(format!(
                    "message {i}: tool_results {results:?} do not answer the calls {calls:?} before it"
                ));
            }
        } else if message.role == Role::Assistant && !calls.is_empty() {
            return Some(format!("message {i}: assistant follows tool calls {calls:?} that got no results"));
        }
    }
    if let Some(last) = messages.last().map(Borrow::borrow)
        && last.role == Role::Assistant
        && last.tool_uses().next().is_some()
    {
        return Some("the last message has tool calls with no results".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse { id: id.into(), name: "Read".into(), input: json!({}) }
    }

    #[test]
    fn pairing_is_checked_in_order() {
        let assistant = Message { role: Role::Assistant, content: vec![call("a"), call("b")] };
        let good = Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result("a", "x", false), ContentBlock::tool_result("b", "y", true)],
        };
        let swapped = Message {
            role: Role::User,
            content: vec![ContentBlock::tool_result("b", "y", false), ContentBlock::tool_result("a", "x", false)],
        };
        let user = Message::user_text("go");
        assert_eq!(pairing_violation(&[user.clone(), assistant.clone(), good]), None);
        assert!(pairing_violation(&[user.clone(), assistant.clone(), swapped]).is_some());
        assert!(pairing_violation(&[user, assistant]).is_some());
    }

    #[test]
    fn user_messages_merge() {
        let table = crate::engine::table::shipped();
        let mut st = LoopState::new(EngineOptions::default(), "hi", Vec::new(), table);
        st.push_message(Message::user_text("more"));
        assert_eq!(st.messages.len(), 1);
        assert_eq!(st.messages[0].all_text(), "hi\nmore");
        assert_eq!(st.turn(), 1);
        assert_eq!(st.left(counter::TURNS), 99);
        assert_eq!(st.max_tokens(), DEFAULT_MAX_TOKENS);
    }
}

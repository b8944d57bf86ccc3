//! The model seam: the [`Model`] trait, the request it receives, the stream it returns
//! and the errors it can fail with.
//!
//! A provider answers a request with a [`ReplyStream`] ([`reply`]), which pushes what arrives
//! into the shared [`assemble::Assembler`]; the assembler turns the events into messages, so the
//! engine never knows which provider it talks to.

pub mod anthropic;
pub mod assemble;
pub(crate) mod body_buffer;
pub mod chat;
pub(crate) mod encoded;
mod error;
pub mod reply;
pub mod responses;
pub mod scripted;
pub mod side;
pub mod translate;
pub mod window;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::protocol::{ToolDefinition, Transcript};

pub use error::{ApiFailure, ErrorClass, ModelError};
pub use reply::{EventStream, Reply, ReplyStream};

/// The default output cap of a request.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 16_000;
/// The output cap after `max_output_tokens_escalate`.
pub(crate) const ESCALATED_MAX_TOKENS: u32 = 64_000;

/// What a request is for: the main loop, or a side request such as a compaction summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A request of the agent loop itself.
    Main,
    /// A side request (summaries for compaction).
    Aux,
}

/// One Messages API request, provider-neutral.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRequest {
    /// Model name.
    pub model: String,
    /// System prompt: the part that is the same in every session, cached on its own.
    pub system: String,
    /// What this session adds to the system prompt (the environment block, the git snapshot,
    /// the memory files): sent after [`ModelRequest::system`] as a block of its own, so a
    /// new day or a new commit does not invalidate the cached prompt before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_context: Option<String>,
    /// The conversation, shared with the history it was built from.
    pub messages: Transcript,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// Server tools the API runs itself (`{"type": "web_search_20250305", "name":
    /// "web_search", …}`), sent after [`ModelRequest::tools`]; only side requests use them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_tools: Vec<serde_json::Value>,
    /// Output cap.
    pub max_tokens: u32,
    /// Extended thinking's budget in tokens, sent as `thinking: {type: enabled,
    /// budget_tokens}` below `max_tokens` (`thinking_budget`); `None` for no thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<u32>,
    /// Main loop or side request.
    #[serde(skip)]
    pub purpose: Purpose,
}

impl ModelRequest {
    /// The system prompt and what the session adds to it as one text, for a protocol with one
    /// place for instructions (Chat Completions' `system` message, Responses' `instructions`).
    pub fn whole_system(&self) -> String {
        match &self.system_context {
            Some(context) if !self.system.is_empty() => format!("{}\n\n{context}", self.system),
            Some(context) => context.clone(),
            None => self.system.clone(),
        }
    }
}

/// Check a model name a user gave (`--model`, `/model`, the SDK's `set_model`): any name the
/// server at `ANTHROPIC_BASE_URL` serves is one (`claude-sonnet-4-5`, a local server's
/// `qwen2.5-coder:0.5b`), so only an empty name or one with whitespace is refused.
///
/// # Errors
/// What is wrong with the name.
pub fn check_model_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().any(char::is_whitespace) {
        return Err(format!("{name:?} is not a model name: a name is one word, such as claude-sonnet-4-5"));
    }
    Ok(())
}

/// The smallest thinking budget the Messages API accepts.
pub(crate) const MIN_THINKING_BUDGET: u32 = 1024;

/// The `budget_tokens` a request with `max_tokens` sends for a wanted `budget`: below
/// `max_tokens` (the API requires it), and `None` when not even [`MIN_THINKING_BUDGET`] fits.
pub(crate) fn thinking_budget(budget: u32, max_tokens: u32) -> Option<u32> {
    let fitted = budget.min(max_tokens.saturating_sub(1));
    (fitted >= MIN_THINKING_BUDGET).then_some(fitted)
}

/// A language model that answers Messages requests with streamed replies.
///
/// Implementations do no retrying of their own: the engine's `Request` state owns retries,
/// backoff and fallback so that each one is an edge in the trace.
pub trait Model: Send + Sync {
    /// Open a streamed reply to `request`. An error here is an HTTP-level failure
    /// (the request was refused or the connection failed before any event arrived).
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ReplyStream, ModelError>>;

    /// The context window, in tokens, that the server says `model` has ([`window::probe`]),
    /// or `None` when it does not say (the default: Claude's window is known).
    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u64>> {
        let _ = model;
        Box::pin(std::future::ready(None))
    }

    /// A journal answered `request` from its record of an earlier life of the run, without
    /// sending it ([`crate::engine::effects`]). A model that plays a script in order (the
    /// scripted model) moves past the reply it would have given; others do nothing.
    fn replayed(&self, request: &ModelRequest) {
        let _ = request;
    }

    /// Who answers, as the OpenTelemetry GenAI conventions name providers
    /// (`gen_ai.provider.name`): `anthropic` for the Messages API (the default), `openai` for
    /// the OpenAI APIs, something of the model's own otherwise.
    fn provider_name(&self) -> &'static str {
        "anthropic"
    }
}

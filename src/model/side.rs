//! Side requests: one model call made beside the loop (a compaction summary, a session title,
//! WebFetch's answer over a page, WebSearch's search), read to its end as one message.
//!
//! A side request is [`Purpose::Aux`]: the scripted model answers it from a scenario's `aux`
//! replies, and it never moves the loop's state. Its usage goes back to the caller, which
//! adds it to the run's cost.

use std::sync::Arc;

use crate::model::assemble::{Assembled, Assembler, Step};
use crate::model::{Model, ModelError, ModelRequest, Purpose, ReplyStream, reply};
use crate::protocol::{Message, Usage};

/// A side request's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SideAnswer {
    /// The assistant message, with every block the model sent (server tool blocks too).
    pub message: Message,
    /// The reply's usage.
    pub usage: Usage,
}

impl SideAnswer {
    /// The answer's usage as a call reports it ([`crate::tools::CallExtra::usage`]): the
    /// model, its tokens, and their cost in USD (0 for a model missing from the price table).
    pub fn priced(&self, model: &str) -> (String, crate::engine::state::UsageTotals, f64) {
        let mut tokens = crate::engine::state::UsageTotals::default();
        tokens.add(&self.usage);
        let cost = crate::model::anthropic::pricing::cost_usd(model, &self.usage).unwrap_or(0.0);
        (model.to_owned(), tokens, cost)
    }
}

/// Send `request` (marked [`Purpose::Aux`]) and read the whole reply.
///
/// # Errors
/// The request's [`ModelError`]: refused, failed while streaming, or incomplete.
pub async fn ask(model: &dyn Model, mut request: ModelRequest) -> Result<SideAnswer, ModelError> {
    request.purpose = Purpose::Aux;
    let mut reply = model.stream(request).await?;
    let done = read_whole(&mut reply).await?;
    let usage = done.usage;
    let (message, _) = done.into_message();
    Ok(SideAnswer { message, usage })
}

/// Read `reply` to its end as one whole reply.
///
/// # Errors
/// The reply's failure, an `error` event as [`ModelError::Stream`], or
/// [`ModelError::Incomplete`] for a reply that ended before `message_stop`.
pub async fn read_whole(reply: &mut ReplyStream) -> Result<Assembled, ModelError> {
    let mut asm = Assembler::new();
    let mut failed = None;
    reply::read_to_end(reply, &mut asm, &mut |step| {
        if let Step::Failed(e) = step {
            failed = Some(ModelError::Stream { kind: e.kind, message: e.message });
        }
    })
    .await?;
    if let Some(error) = failed {
        return Err(error);
    }
    if !asm.is_complete() {
        return Err(ModelError::Incomplete);
    }
    Ok(asm.finish())
}

/// The model a tool's side requests go to, and its name: the session's small, fast model.
#[derive(Clone)]
pub struct SideModel {
    /// Who answers.
    pub model: Arc<dyn Model>,
    /// The model id sent (`claude-haiku-4-5` unless `ANTHROPIC_DEFAULT_HAIKU_MODEL` or
    /// `ANTHROPIC_SMALL_FAST_MODEL` names another).
    pub name: String,
}

impl std::fmt::Debug for SideModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SideModel").field("name", &self.name).finish_non_exhaustive()
    }
}

/// The small model used when the environment names none.
pub const DEFAULT_SMALL_MODEL: &str = "claude-haiku-4-5";

/// The small, fast model of side requests, as Claude Code chooses it: `$ANTHROPIC_DEFAULT_HAIKU_MODEL`,
/// then `$ANTHROPIC_SMALL_FAST_MODEL`, then [`DEFAULT_SMALL_MODEL`].
pub fn small_model_from_env() -> String {
    ["ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL"]
        .into_iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_SMALL_MODEL.to_owned())
}

//! Compaction: the history replaced by a summary the model writes in an aux request.
//!
//! The loop compacts in Prepare when the history is over the autocompact threshold (and
//! after a prompt-too-long error, through `reactive_compact_retry`); a person compacts
//! between prompts with `/compact`, through [`compact_session`]. Both send the same request
//! ([`summarize`]) and keep its summary the same way ([`Summary::history`]).

use tokio_util::sync::CancellationToken;

use crate::context;
use crate::engine::events::{EngineEvent, EventSink};
use crate::engine::machine::Deps;
use crate::engine::options::EngineOptions;
use crate::engine::session::{Session, TranscriptLog};
use crate::model::{Model, ModelError, ModelRequest, Purpose};
use crate::protocol::{Message, Usage};
use crate::session::HistoryReason;

/// What a summary request gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The summary's text.
    pub text: String,
    /// The request's usage (counted whether or not the summary is kept).
    pub usage: Usage,
}

impl Summary {
    /// The history that replaces the compacted one: one user message holding the summary.
    ///
    /// # Errors
    /// [`ModelError::Protocol`] when the summary is empty.
    pub fn history(&self) -> Result<Vec<Message>, ModelError> {
        if self.text.trim().is_empty() {
            return Err(ModelError::Protocol("the compaction summary was empty".into()));
        }
        Ok(context::compacted_history(&self.text))
    }
}

/// Ask `model_name` for a summary of `history`, in at most `max_tokens` output tokens;
/// `instructions`, if any, are appended to the summary instruction.
///
/// # Errors
/// The request's [`ModelError`]: refused, failed while streaming, or incomplete.
pub async fn summarize(
    model: &dyn Model,
    model_name: &str,
    history: &[impl std::borrow::Borrow<Message>],
    instructions: Option<&str>,
    max_tokens: u32,
) -> Result<Summary, ModelError> {
    let request = ModelRequest {
        model: model_name.to_owned(),
        system: context::COMPACT_SYSTEM.to_owned(),
        system_context: None,
        server_tools: Vec::new(),
        messages: context::compaction_request_messages(history, instructions).into(),
        tools: Vec::new(),
        max_tokens,
        thinking: None,
        purpose: Purpose::Aux,
    };
    let answer = crate::model::side::ask(model, request).await?;
    Ok(Summary { text: answer.message.text(), usage: answer.usage })
}

/// Why [`compact_session`] left the history as it was.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// The session has no messages.
    #[error("nothing to compact: the conversation is empty")]
    Empty,
    /// The cancel token fired before the summary arrived.
    #[error("compaction interrupted; the history is unchanged")]
    Interrupted,
    /// The summary request failed, or its summary was empty.
    #[error("compaction failed: {error}")]
    Failed {
        /// What went wrong.
        error: ModelError,
        /// The request's usage, if a reply arrived (an empty summary still costs tokens).
        usage: Option<Usage>,
    },
}

/// What [`compact_session`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// Estimated tokens of a request before (system prompt, tools and history).
    pub tokens_before: u64,
    /// The same estimate after.
    pub tokens_after: u64,
    /// Messages before.
    pub messages_before: usize,
    /// The summary request's usage.
    pub usage: Usage,
    /// Its cost in USD (0 for a model missing from the price table).
    pub cost_usd: f64,
}

/// Compact `session` now, between prompts: the same summary request and the same replaced
/// history as the loop's autocompact, the new history recorded in the transcript as an
/// `agentloop-history` snapshot (reason `compaction`). `instructions` are appended to the
/// summary instruction (`/compact keep the file names`). Cancelling `deps.cancel` stops the
/// request and leaves the history unchanged. `sink` gets the request's `Usage` event and any
/// warning (a transcript that can no longer be written).
///
/// # Errors
/// [`CompactError`]; the session is then unchanged.
pub async fn compact_session(
    session: &mut Session,
    deps: &Deps,
    options: &EngineOptions,
    instructions: Option<&str>,
    sink: &mut dyn EventSink,
) -> Result<Compacted, CompactError> {
    if session.messages.is_empty() {
        return Err(CompactError::Empty);
    }
    let tools_chars = context::tools_chars(&deps.tools.definitions());
    let estimate = |chars: usize| context::estimate_tokens_of_chars(options.system_prompt_len() + tools_chars + chars);
    let tokens_before = estimate(session.messages.chars());
    let messages_before = session.messages.len();
    let cancel: &CancellationToken = &deps.cancel;
    let max_tokens = crate::model::DEFAULT_MAX_TOKENS;
    let summary = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(CompactError::Interrupted),
        summary = summarize(&*deps.model, &options.model, &session.messages[..], instructions, max_tokens) => summary,
    }
    .map_err(|error| CompactError::Failed { error, usage: None })?;
    let cost_usd = crate::model::anthropic::cost_usd(&options.model, &summary.usage);
    sink.event(&EngineEvent::Usage { model: options.model.clone(), usage: summary.usage, cost_usd });
    // It counts towards the session's spend cap (`--max-budget-usd`), kept or not.
    session.cost_usd += cost_usd.unwrap_or(0.0);
    let history = summary.history().map_err(|error| CompactError::Failed { error, usage: Some(summary.usage) })?;
    session.messages = history.into();
    session.cached_prefix = None;
    let mut log = TranscriptLog::new(session.transcript.take());
    if let Some(warning) = log.history(&session.messages.to_messages(), HistoryReason::Compaction) {
        sink.event(&warning);
    }
    session.transcript = log.into_writer();
    Ok(Compacted {
        tokens_before,
        tokens_after: estimate(session.messages.chars()),
        messages_before,
        usage: summary.usage,
        cost_usd: cost_usd.unwrap_or(0.0),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::engine::machine::Deps;
    use crate::protocol::{ContentBlock, Role};
    use crate::session::Uuid;

    /// Deps whose model answers summary requests with `summaries`, in order.
    fn deps(summaries: &[&str], dir: &std::path::Path) -> Deps {
        let aux: Vec<_> = summaries.iter().map(|s| json!({"content": [{"type": "text", "text": s}]})).collect();
        let scenario: crate::scenario::Scenario =
            serde_json::from_value(json!({"prompt": "x", "responses": [], "aux": aux})).unwrap();
        let cancel = CancellationToken::new();
        Deps {
            model: Arc::new(crate::model::scripted::ScriptedModel::new(&scenario, cancel.clone())),
            tools: crate::tools::Registry::standard(),
            hooks: Arc::new(crate::hooks::NoHooks),
            effects: Arc::new(crate::engine::clock::SystemClock::new()),
            cancel,
            cwd: dir.to_path_buf(),
            policy: Arc::new(crate::permissions::Policy::new(crate::permissions::Mode::Default, dir.into())),
            shell_env: crate::tools::shell_env::ShellEnv::inherited_default(),
            sandbox: crate::sandbox::Sandbox::none(),
            approver: Arc::new(crate::permissions::Unattended),
        }
    }

    fn session(dir: &std::path::Path) -> Session {
        let mut session = Session::in_memory(Uuid::new_v4(), dir.to_path_buf());
        session.messages = vec![
            Message::user_text("Read every file and tell me about them. ".repeat(50)),
            Message { role: Role::Assistant, content: vec![ContentBlock::text("They are fine. ".repeat(100))] },
        ]
        .into();
        session
    }

    fn options() -> EngineOptions {
        EngineOptions { model: "claude-sonnet-4-5".into(), ..EngineOptions::default() }
    }

    #[tokio::test]
    async fn the_history_becomes_the_summary() {
        let dir = tempfile::tempdir().unwrap();
        let deps = deps(&["The user asked about the files; they are fine."], dir.path());
        let mut session = session(dir.path());
        let mut events = Vec::new();
        let mut sink = |e: &EngineEvent| events.push(e.clone());
        let done =
            compact_session(&mut session, &deps, &options(), Some("keep the file names"), &mut sink).await.unwrap();
        assert_eq!(
            session.messages.to_messages(),
            context::compacted_history("The user asked about the files; they are fine.")
        );
        assert_eq!(done.messages_before, 2);
        assert!(done.tokens_after < done.tokens_before, "{done:?}");
        assert_eq!(events.len(), 1);
        assert!(matches!(&events[0], EngineEvent::Usage { usage, .. } if *usage == done.usage));
    }

    #[tokio::test]
    async fn an_empty_summary_an_empty_session_and_an_interrupt_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let before = session(dir.path()).messages.to_messages();

        let deps_blank = deps(&["  "], dir.path());
        let mut s = session(dir.path());
        let result = compact_session(&mut s, &deps_blank, &options(), None, &mut |_: &EngineEvent| {}).await;
        assert!(matches!(result, Err(CompactError::Failed { usage: Some(_), .. })), "{result:?}");
        assert_eq!(s.messages.to_messages(), before);

        let mut empty = Session::in_memory(Uuid::new_v4(), dir.path().to_path_buf());
        let result = compact_session(&mut empty, &deps_blank, &options(), None, &mut |_: &EngineEvent| {}).await;
        assert!(matches!(result, Err(CompactError::Empty)), "{result:?}");

        let deps_cancelled = deps(&["unused"], dir.path());
        deps_cancelled.cancel.cancel();
        let mut s = session(dir.path());
        let result = compact_session(&mut s, &deps_cancelled, &options(), None, &mut |_: &EngineEvent| {}).await;
        assert!(matches!(result, Err(CompactError::Interrupted)), "{result:?}");
        assert_eq!(s.messages.to_messages(), before);
    }
}

//! Embedding agentloop: a tool of your own, a model of your own, one run, and its trace.
//!
//! ```text
//! cargo run --example embed
//! ```
//!
//! No network and no API key: [`Relay`] is a [`Model`] that first asks for the [`Shout`] tool
//! and, once the tool's result is in the conversation, answers with it. The run goes through
//! the same machine as `agentloop run` (the permission check, the tool call, the checkpoint),
//! and the example prints the trace records of every transition and the final text.
//! `cargo test --example embed` runs the same run and checks every edge it took.

use std::sync::Arc;

use agentloop::hooks::NoHooks;
use agentloop::model::reply;
use agentloop::permissions::{Mode, Policy, Unattended};
use agentloop::protocol::{ContentBlock, Message, Role, StopReason};
use agentloop::sandbox::Sandbox;
use agentloop::tools::{ShellEnv, ToolContext, ToolOutput, typed_call};
use agentloop::{
    Deps, EngineEvent, EngineOptions, Model, ModelError, ModelRequest, Registry, ReplyStream, RunOutcome, SystemClock,
    Tool,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A tool: the `text` it is given, in capitals.
struct Shout;

/// What [`Shout`] takes.
#[derive(serde::Deserialize)]
struct ShoutInput {
    text: String,
}

impl Tool for Shout {
    fn name(&self) -> &str {
        "Shout"
    }

    fn description(&self) -> &str {
        "Say `text` in capitals."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }

    /// It touches nothing: it may run beside other calls, and it only "reads", so the policy
    /// lets it run in the default mode without a rule.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        // A bad input (no `text`) becomes an error result the model reads, not a failure.
        typed_call("Shout", input, |input: ShoutInput| async move { Ok(ToolOutput::ok(input.text.to_uppercase())) })
    }
}

/// A model: asks for `Shout` with its prompt's text, then answers with what the tool said.
struct Relay;

impl Model for Relay {
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ReplyStream, ModelError>> {
        let last = request.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        let shouted = last.iter().find_map(|block| match block {
            ContentBlock::ToolResult { content, .. } => Some(content.as_str().to_owned()),
            _ => None,
        });
        let reply = match shouted {
            // The tool answered: the turn ends with the text.
            Some(shouted) => {
                reply::whole(&assistant(ContentBlock::text(format!("The tool says: {shouted}"))), StopReason::EndTurn)
            }
            // The prompt: call the tool with it.
            None => {
                let prompt = last.iter().find_map(|block| match block {
                    ContentBlock::Text { text, .. } => Some(text.clone()),
                    _ => None,
                });
                let call = ContentBlock::ToolUse {
                    id: "toolu_relay_1".into(),
                    name: "Shout".into(),
                    input: json!({"text": prompt.unwrap_or_default()}),
                };
                reply::whole(&assistant(call), StopReason::ToolUse)
            }
        };
        Box::pin(async move { Ok(reply) })
    }
}

/// An assistant message of one block.
fn assistant(block: ContentBlock) -> Message {
    Message { role: Role::Assistant, content: vec![block] }
}

/// Run `prompt` with [`Relay`] and [`Shout`] in `cwd`; the events the engine emitted come
/// with the outcome.
async fn embed(prompt: &str, cwd: &std::path::Path) -> (RunOutcome, Vec<EngineEvent>) {
    let mut tools = Registry::new();
    tools.register(Arc::new(Shout));
    let deps = Deps {
        model: Arc::new(Relay),
        tools,
        hooks: Arc::new(NoHooks),
        effects: Arc::new(SystemClock::new()),
        cancel: CancellationToken::new(),
        cwd: cwd.to_path_buf(),
        policy: Arc::new(Policy::new(Mode::Default, cwd.to_path_buf())),
        shell_env: ShellEnv::inherited_default(),
        sandbox: Sandbox::none(),
        approver: Arc::new(Unattended),
    };
    let options = EngineOptions { model: "relay-1".into(), ..EngineOptions::default() };
    // The sink sees every event as it happens; here it keeps them for the caller.
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = events.clone();
    let sink = move |event: &EngineEvent| seen.lock().expect("never poisoned").push(event.clone());
    let outcome = agentloop::run(deps, options, prompt, Box::new(sink)).await.expect("the engine keeps to its table");
    let events = std::mem::take(&mut *events.lock().expect("never poisoned"));
    (outcome, events)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (outcome, events) = embed("hello from the embedder", dir.path()).await;
    for event in &events {
        if let EngineEvent::ToolFinished { name, is_error, .. } = event {
            println!("tool {name} finished{}", if *is_error { " with an error" } else { "" });
        }
    }
    println!("trace:");
    for record in &outcome.trace {
        let reason = record.reason.map(|r| format!(" ({r})")).unwrap_or_default();
        println!(
            "  {:>2} turn {} {} -> {} [{}] {}{reason}",
            record.seq, record.turn, record.from, record.to, record.kind, record.edge
        );
    }
    println!("ended: {}", outcome.terminal.as_str());
    println!("final text: {}", outcome.final_text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_tool_runs_and_the_model_answers_with_its_result() {
        let dir = tempfile::tempdir().unwrap();
        let (outcome, events) = embed("hello", dir.path()).await;
        assert_eq!(outcome.terminal.as_str(), "completed");
        assert_eq!(outcome.final_text, "The tool says: HELLO");
        assert_eq!(
            outcome.edge_ids(),
            [
                "prepare.request",
                "request.stream_opened",
                "consume.tools",
                "tools.done",
                "checkpoint.next_turn",
                "prepare.request",
                "request.stream_opened",
                "consume.end_turn",
                "checkpoint.completed",
            ]
        );
        let finished: Vec<(&str, bool)> = events
            .iter()
            .filter_map(|e| match e {
                EngineEvent::ToolFinished { name, is_error, .. } => Some((name.as_str(), *is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(finished, [("Shout", false)]);
    }
}

//! One run's spans and measurements, made from the engine's events as they arrive: the
//! run's `invoke_agent` span, a `chat {model}` span per model attempt, an `execute_tool
//! {name}` span per call, the table's transitions as events of the run's span, and the same
//! again, nested under the `Agent` call, for each subagent.

use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};

use super::Telemetry;
use crate::engine::events::{EngineEvent, EventSink};
use crate::permissions::Approval;

/// What a run's span is made from.
pub(crate) struct RunInfo {
    /// The session (`gen_ai.conversation.id`).
    pub session_id: String,
    /// The run's id.
    pub run_id: String,
    /// The model asked first.
    pub model: String,
    /// `gen_ai.provider.name` of the run's model client.
    pub provider: &'static str,
    /// The prompt (exported only when prompts are opted in).
    pub prompt: String,
}

/// The sink of a run with telemetry: the run's own sink, and the spans beside it.
pub(crate) struct Recording {
    inner: Box<dyn EventSink>,
    run: RunSpans,
    children: HashMap<String, RunSpans>,
    telemetry: &'static Telemetry,
}

impl Recording {
    /// Record the run `info` describes; its events then reach `inner`.
    pub(crate) fn new(telemetry: &'static Telemetry, info: RunInfo, inner: Box<dyn EventSink>) -> Recording {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", "agentloop"),
            KeyValue::new("gen_ai.provider.name", info.provider),
            KeyValue::new("gen_ai.request.model", info.model.clone()),
            KeyValue::new("gen_ai.conversation.id", info.session_id.clone()),
            KeyValue::new("agentloop.run_id", info.run_id.clone()),
        ];
        if telemetry.content.prompts {
            let messages = serde_json::json!([{"role": "user", "parts": [{"type": "text", "content": info.prompt}]}]);
            attributes.push(KeyValue::new("gen_ai.input.messages", messages.to_string()));
        }
        let span = telemetry
            .tracer
            .span_builder("invoke_agent agentloop")
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(&telemetry.tracer, &telemetry.parent);
        let run = RunSpans::new(Context::new().with_span(span), info.session_id, info.provider);
        Recording { inner, run, children: HashMap::new(), telemetry }
    }

    fn record(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::SubagentStarted { agent, .. } => {
                let parent = self.run.tools.get(&agent.tool_use_id).cloned().unwrap_or_else(|| self.run.root.clone());
                let span = self
                    .telemetry
                    .tracer
                    .span_builder(format!("invoke_agent {}", agent.agent_type))
                    .with_kind(SpanKind::Internal)
                    .with_attributes([
                        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                        KeyValue::new("gen_ai.agent.name", agent.agent_type.clone()),
                        KeyValue::new("gen_ai.agent.id", agent.agent_id.clone()),
                        KeyValue::new("gen_ai.provider.name", self.run.provider),
                        KeyValue::new("gen_ai.request.model", agent.model.clone()),
                        KeyValue::new("gen_ai.conversation.id", self.run.conversation.clone()),
                        KeyValue::new("agentloop.run_id", agent.run_id.clone()),
                        KeyValue::new("agentloop.background", agent.background),
                    ])
                    .start_with_context(&self.telemetry.tracer, &parent);
                let child =
                    RunSpans::new(Context::new().with_span(span), self.run.conversation.clone(), self.run.provider);
                self.children.insert(agent.run_id.clone(), child);
            }
            EngineEvent::Subagent { agent, event } => {
                if let Some(child) = self.children.get_mut(&agent.run_id) {
                    child.record(self.telemetry, event);
                }
            }
            EngineEvent::SubagentEnded { agent, report } => {
                if let Some(mut child) = self.children.remove(&agent.run_id) {
                    child.end_reason(report.terminal.as_str());
                    child.finish(self.telemetry);
                }
            }
            other => self.run.record(self.telemetry, other),
        }
    }
}

impl EventSink for Recording {
    fn event(&mut self, event: &EngineEvent) {
        self.record(event);
        self.inner.event(event);
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        for (_, mut child) in self.children.drain() {
            child.finish(self.telemetry);
        }
        self.run.finish(self.telemetry);
    }
}

/// A model attempt in flight.
struct Attempt {
    span: opentelemetry_sdk::trace::Span,
    started: Instant,
    request_model: String,
    response_model: Option<String>,
    error: Option<String>,
}

/// A finished tool call whose span waits for its result (only when tool content is
/// exported: the result arrives in the next user message).
struct Finished {
    context: Context,
    at: SystemTime,
}

/// The open spans of one run (the top run or a subagent's).
struct RunSpans {
    root: Context,
    conversation: String,
    provider: &'static str,
    attempt: Option<Attempt>,
    /// Every tool call's span by `tool_use` id (a subagent's span hangs under its call's).
    tools: HashMap<String, Context>,
    /// Calls finished but not yet ended, waiting for their results.
    waiting: HashMap<String, Finished>,
}

impl RunSpans {
    fn new(root: Context, conversation: String, provider: &'static str) -> RunSpans {
        RunSpans { root, conversation, provider, attempt: None, tools: HashMap::new(), waiting: HashMap::new() }
    }

    fn record(&mut self, telemetry: &Telemetry, event: &EngineEvent) {
        match event {
            EngineEvent::Transition(record) => {
                if self.attempt.is_some() && record.to != "Consume" {
                    self.end_attempt(telemetry);
                }
                self.end_waiting();
                let edge = record.edge.clone();
                self.root.span().add_event(
                    "agentloop.transition",
                    vec![
                        KeyValue::new("from", record.from),
                        KeyValue::new("edge", edge.clone()),
                        KeyValue::new("to", record.to),
                        KeyValue::new("seq", record.seq as i64),
                        KeyValue::new("turn", i64::from(record.turn)),
                    ],
                );
                if let Some(instruments) = &telemetry.instruments {
                    instruments.transitions.add(1, &[KeyValue::new("edge", edge)]);
                }
                if let ("terminal", Some(reason)) = (record.kind, record.reason) {
                    self.end_reason(reason);
                }
            }
            EngineEvent::AttemptStarted { model, max_tokens, attempt } => {
                self.end_attempt(telemetry);
                let span = telemetry
                    .tracer
                    .span_builder(format!("chat {model}"))
                    .with_kind(SpanKind::Client)
                    .with_attributes([
                        KeyValue::new("gen_ai.operation.name", "chat"),
                        KeyValue::new("gen_ai.provider.name", self.provider),
                        KeyValue::new("gen_ai.request.model", model.clone()),
                        KeyValue::new("gen_ai.request.max_tokens", i64::from(*max_tokens)),
                        KeyValue::new("gen_ai.conversation.id", self.conversation.clone()),
                        KeyValue::new("agentloop.attempt", i64::from(*attempt)),
                    ])
                    .start_with_context(&telemetry.tracer, &self.root);
                self.attempt = Some(Attempt {
                    span,
                    started: Instant::now(),
                    request_model: model.clone(),
                    response_model: None,
                    error: None,
                });
            }
            EngineEvent::ReplyStarted { id, model, .. } => {
                if let Some(attempt) = &mut self.attempt {
                    let ms = attempt.started.elapsed().as_secs_f64() * 1e3;
                    attempt.span.set_attribute(KeyValue::new("agentloop.time_to_first_event_ms", ms.round() as i64));
                    if let Some(id) = id {
                        attempt.span.set_attribute(KeyValue::new("gen_ai.response.id", id.clone()));
                    }
                    if let Some(model) = model {
                        attempt.span.set_attribute(KeyValue::new("gen_ai.response.model", model.clone()));
                        attempt.response_model = Some(model.clone());
                    }
                }
            }
            EngineEvent::ReplyDelta { stop_reason: Some(reason), .. } => {
                if let Some(attempt) = &mut self.attempt {
                    let reason = serde_json::to_value(reason).ok().and_then(|v| v.as_str().map(str::to_owned));
                    let reasons = vec![opentelemetry::StringValue::from(reason.unwrap_or_default())];
                    attempt.span.set_attribute(KeyValue::new(
                        "gen_ai.response.finish_reasons",
                        opentelemetry::Value::Array(reasons.into()),
                    ));
                }
            }
            EngineEvent::Usage { model, usage, cost_usd } => {
                let read = usage.cache_read_input_tokens.unwrap_or(0);
                let written = usage.cache_creation_input_tokens.unwrap_or(0);
                // The conventions count every prompt token as input, cached or not.
                let input = usage.input_tokens.unwrap_or(0) + read + written;
                let output = usage.output_tokens.unwrap_or(0);
                let response_model = self.attempt.as_ref().and_then(|a| a.response_model.clone());
                if let Some(attempt) = &mut self.attempt {
                    for (key, n) in [
                        ("gen_ai.usage.input_tokens", input),
                        ("gen_ai.usage.output_tokens", output),
                        ("gen_ai.usage.cache_read.input_tokens", read),
                        ("gen_ai.usage.cache_creation.input_tokens", written),
                    ] {
                        attempt.span.set_attribute(KeyValue::new(key, n as i64));
                    }
                    if let Some(cost) = cost_usd {
                        attempt.span.set_attribute(KeyValue::new("agentloop.cost_usd", *cost));
                    }
                }
                if let Some(instruments) = &telemetry.instruments {
                    let mut attributes = vec![
                        KeyValue::new("gen_ai.operation.name", "chat"),
                        KeyValue::new("gen_ai.provider.name", self.provider),
                        KeyValue::new("gen_ai.request.model", model.clone()),
                    ];
                    if let Some(m) = response_model {
                        attributes.push(KeyValue::new("gen_ai.response.model", m));
                    }
                    for (kind, n) in [("input", input), ("output", output)] {
                        let mut with_type = attributes.clone();
                        with_type.push(KeyValue::new("gen_ai.token.type", kind));
                        instruments.token_usage.record(n, &with_type);
                    }
                    if let Some(cost) = cost_usd {
                        instruments.cost.add(*cost, &[KeyValue::new("gen_ai.request.model", model.clone())]);
                    }
                }
            }
            EngineEvent::AttemptFailed { kind, message } => {
                if let Some(attempt) = &mut self.attempt {
                    attempt.span.set_attribute(KeyValue::new("error.type", kind.clone()));
                    attempt.span.set_status(Status::error(message.clone()));
                    attempt.error = Some(kind.clone());
                }
            }
            EngineEvent::Retrying { attempt, delay, .. } => {
                self.root.span().add_event(
                    "agentloop.retry",
                    vec![
                        KeyValue::new("attempt", i64::from(*attempt)),
                        KeyValue::new("delay_ms", delay.as_millis() as i64),
                    ],
                );
            }
            EngineEvent::ToolStarted { id, name, input, early, mcp, .. } => {
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", name.clone()),
                    KeyValue::new("gen_ai.tool.call.id", id.clone()),
                    KeyValue::new("gen_ai.tool.type", if mcp.is_some() { "extension" } else { "function" }),
                    KeyValue::new("gen_ai.provider.name", self.provider),
                    KeyValue::new("gen_ai.conversation.id", self.conversation.clone()),
                    KeyValue::new("agentloop.tool.early", *early),
                ];
                if let Some(origin) = mcp {
                    attributes.push(KeyValue::new("mcp.server", origin.server.clone()));
                }
                if telemetry.content.tools {
                    attributes.push(KeyValue::new("gen_ai.tool.call.arguments", input.to_string()));
                }
                let span = telemetry
                    .tracer
                    .span_builder(format!("execute_tool {name}"))
                    .with_kind(SpanKind::Internal)
                    .with_attributes(attributes)
                    .start_with_context(&telemetry.tracer, &self.root);
                self.tools.insert(id.clone(), Context::new().with_span(span));
            }
            EngineEvent::ToolFinished { id, is_error, .. } => {
                let Some(context) = self.tools.get(id) else { return };
                let span = context.span();
                if *is_error {
                    span.set_attribute(KeyValue::new("error.type", "tool_error"));
                    span.set_status(Status::error("the tool call failed"));
                }
                if telemetry.content.tools {
                    self.waiting.insert(id.clone(), Finished { context: context.clone(), at: SystemTime::now() });
                } else {
                    span.end();
                }
            }
            EngineEvent::ApprovalAnswered { request, approval } => {
                if let Some(context) = self.tools.get(&request.tool_use_id) {
                    let decision = match approval {
                        Approval::AllowOnce | Approval::AllowChanged { .. } | Approval::AllowForSession { .. } => {
                            "allow"
                        }
                        Approval::Deny { .. } | Approval::DenyAndInterrupt { .. } => "deny",
                    };
                    context.span().add_event("agentloop.permission", vec![KeyValue::new("decision", decision)]);
                }
            }
            EngineEvent::Message { message, .. } if !self.waiting.is_empty() => {
                for block in &message.content {
                    if let crate::protocol::ContentBlock::ToolResult { tool_use_id, content, .. } = block
                        && let Some(finished) = self.waiting.remove(tool_use_id)
                    {
                        let span = finished.context.span();
                        span.set_attribute(KeyValue::new("gen_ai.tool.call.result", content.as_str().to_owned()));
                        span.end_with_timestamp(finished.at);
                    }
                }
            }
            _ => {}
        }
    }

    /// End the attempt in flight, measuring its duration.
    fn end_attempt(&mut self, telemetry: &Telemetry) {
        let Some(mut attempt) = self.attempt.take() else { return };
        if let Some(instruments) = &telemetry.instruments {
            let mut attributes = vec![
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", self.provider),
                KeyValue::new("gen_ai.request.model", attempt.request_model.clone()),
            ];
            if let Some(model) = &attempt.response_model {
                attributes.push(KeyValue::new("gen_ai.response.model", model.clone()));
            }
            if let Some(kind) = &attempt.error {
                attributes.push(KeyValue::new("error.type", kind.clone()));
            }
            instruments.duration.record(attempt.started.elapsed().as_secs_f64(), &attributes);
        }
        attempt.span.end();
    }

    /// End the calls waiting for a result that never came.
    fn end_waiting(&mut self) {
        for (_, finished) in self.waiting.drain() {
            finished.context.span().end_with_timestamp(finished.at);
        }
    }

    /// The run ended in `reason`: on its span, an error unless it completed.
    fn end_reason(&mut self, reason: &str) {
        let span = self.root.span();
        span.set_attribute(KeyValue::new("agentloop.terminal_reason", reason.to_owned()));
        if reason != "completed" {
            span.set_attribute(KeyValue::new("error.type", reason.to_owned()));
            span.set_status(Status::error(format!("the run ended in {reason}")));
        }
    }

    /// End every span still open, the run's last.
    fn finish(&mut self, telemetry: &Telemetry) {
        self.end_attempt(telemetry);
        self.end_waiting();
        for context in self.tools.values() {
            // Ending an ended span does nothing.
            context.span().end();
        }
        self.root.span().end();
    }
}

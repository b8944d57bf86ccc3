//! The driver: builds the machine, feeds it `Step` (or `Abort` once cancelled while a model
//! call or a tool phase is open) until it reaches `Done`, and returns what happened.

use serde::Serialize;
use statig::prelude::*;
use tracing::Instrument;

use crate::engine::events::EventSink;
use crate::engine::machine::{Ctx, Deps, Event, Machine, State};
use crate::engine::options::EngineOptions;
use crate::engine::reason::TerminalReason;
use crate::engine::session::{Session, TranscriptLog};
use crate::engine::state::{LoopState, ResumeTools, UsageTotals};
use crate::engine::table::{self, Counters};
use crate::engine::trace::{TRACE_SCHEMA, TraceHeader, TraceRecord};
use crate::protocol::Message;
use crate::session::Uuid;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use crate::agents::host::{Children, ParentSink, SharedSink, Sidechains};

use crate::hooks::HookEnv;
use crate::tools::ToolContext;
use crate::tools::orchestrate::{Approvals, Toolbox};
use crate::tools::spill::SpillDir;
use crate::tools::structured_output::StructuredOutput;

/// Dispatches after which a run is declared stuck (far above any bounded run).
const MAX_DISPATCHES: usize = 1_000_000;

/// Why a run could not be carried out at all (as opposed to ending with a terminal reason).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// The options cannot run.
    #[error("invalid options: {0}")]
    Options(crate::engine::options::OptionsError),
    /// The machine took a transition the table does not declare: a bug.
    #[error("undeclared transition: {0}")]
    UndeclaredTransition(String),
    /// A state handled `Step` without moving and without an abort: a bug.
    #[error("the machine stalled in {0}")]
    Stalled(&'static str),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    /// The terminal reason.
    pub terminal: TerminalReason,
    /// What went wrong, for endings other than `completed`.
    pub error: Option<String>,
    /// The final conversation.
    pub messages: Vec<Message>,
    /// Text of the last assistant message.
    pub final_text: String,
    /// Token totals.
    pub usage: UsageTotals,
    /// Main model requests sent (retries included).
    pub model_calls: u32,
    /// Cost in USD of the replies of priced models.
    pub cost_usd: f64,
    /// The models that answered whose price nobody knows (neither the table nor the
    /// settings' `modelPrices`): when any did, the run's cost is unknown.
    pub unpriced_models: Vec<String>,
    /// Turns taken.
    pub turns: u32,
    /// The structured answer (`--json-schema`): the `StructuredOutput` input that matched the
    /// schema; `final_text` is then its JSON text.
    pub structured_output: Option<serde_json::Value>,
    /// Every transition, in order.
    pub trace: Vec<TraceRecord>,
    /// The failed model call, for a run that ended as `model_error` or `prompt_too_long`.
    pub api_failure: Option<crate::model::ApiFailure>,
    /// Every call a hook, a rule, the mode or the approver refused.
    pub permission_denials: Vec<crate::permissions::Denial>,
    /// Tokens and cost of the model calls of the run's subagents, by model (their cost is
    /// in `cost_usd` too; their tokens are not in `usage`).
    pub delegated: Vec<(String, UsageTotals, f64)>,
    /// What became of the run's subagents, for a run offered `Agent`.
    pub subagents: Option<crate::agents::SubagentStats>,
}

impl RunOutcome {
    /// The edge ids of the trace, in order.
    pub fn edge_ids(&self) -> Vec<&str> {
        self.trace.iter().map(|r| r.edge.as_str()).collect()
    }
}

/// The trace header a run with these options starts with.
pub fn header(options: &EngineOptions) -> TraceHeader {
    let table = options.table();
    let st = LoopState::new(options.clone(), "", Vec::new(), table);
    TraceHeader {
        record_type: "header",
        schema: TRACE_SCHEMA,
        table_sha256: table.sha256.clone(),
        run_id: options.run_id.clone(),
        bounds: st.bounds,
        counters: st.counters,
        sandbox: None,
        memory_files: Vec::new(),
        memory_warnings: Vec::new(),
        recovered_calls: None,
        parent_run_id: options.link.as_ref().map(|l| l.parent_run_id.clone()),
        parent_tool_use_id: options.link.as_ref().map(|l| l.parent_tool_use_id.clone()),
    }
}

fn st_run_id(st: &LoopState) -> String {
    if st.options.run_id.is_empty() { format!("run-{}", std::process::id()) } else { st.options.run_id.clone() }
}

/// Run the loop on `prompt` to a terminal reason, in a fresh session kept in memory.
///
/// # Errors
/// [`EngineError`] when the options are invalid or the machine breaks its table.
pub async fn run(
    deps: Deps,
    options: EngineOptions,
    prompt: &str,
    sink: Box<dyn EventSink>,
) -> Result<RunOutcome, EngineError> {
    let mut session = Session::in_memory(Uuid::new_v4(), deps.cwd.clone());
    run_prompt(&mut session, deps, options, prompt, sink).await
}

/// Run one turn sequence on `session`: `prompt` is appended to its conversation and the loop
/// runs to a terminal reason, which ends the prompt, not the session. The session's history
/// becomes the outcome's messages; its transcript gets every message as it is appended and a
/// line for how the prompt ended.
///
/// # Errors
/// [`EngineError`] when the options are invalid or the machine breaks its table; the session
/// is then left as it was (its transcript holds what was appended).
pub async fn run_prompt(
    session: &mut Session,
    deps: Deps,
    options: EngineOptions,
    prompt: &str,
    sink: Box<dyn EventSink>,
) -> Result<RunOutcome, EngineError> {
    run_prompt_with(session, deps, options, &Prompt::text(prompt), sink).await
}

/// A prompt as it arrives: its text, and what the Claude Agent SDK sent with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    /// The text.
    pub text: String,
    /// The `uuid` the SDK gave the user message: its transcript line's uuid (a fresh one
    /// when `None`).
    pub uuid: Option<Uuid>,
    /// The `origin` the SDK stamped on the message, recorded on its transcript line.
    pub origin: Option<serde_json::Value>,
}

impl Prompt {
    /// A prompt of `text` alone.
    pub fn text(text: &str) -> Prompt {
        Prompt { text: text.to_owned(), ..Prompt::default() }
    }
}

/// [`run_prompt`] of a [`Prompt`] with its uuid and origin.
///
/// # Errors
/// As [`run_prompt`].
#[tracing::instrument(name = "run", skip_all, fields(run_id = %options.run_id, session = %session.id))]
pub async fn run_prompt_with(
    session: &mut Session,
    mut deps: Deps,
    options: EngineOptions,
    prompt: &Prompt,
    sink: Box<dyn EventSink>,
) -> Result<RunOutcome, EngineError> {
    let (prompt_uuid, origin) = (prompt.uuid.unwrap_or_else(|| deps.effects.new_id()), prompt.origin.as_ref());
    let prompt = prompt.text.as_str();
    options.validate().map_err(EngineError::Options)?;
    if let Some(schema) = &options.json_schema {
        deps.tools.register(Arc::new(StructuredOutput::new(schema.clone())));
    }
    let table = options.table.clone().unwrap_or_else(|| table::shipped_shared().clone());
    // A subagent's run is recorded by its parent's sink, which sees its events.
    let sink = if options.link.is_some() {
        sink
    } else {
        crate::telemetry::observe(sink, || crate::telemetry::RunInfo {
            session_id: session.id.to_string(),
            run_id: options.run_id.clone(),
            model: options.model.clone(),
            provider: deps.model.provider_name(),
            prompt: prompt.to_owned(),
        })
    };
    // A run offered `Agent` hosts its subagents: they share its sink, and its driver polls
    // them beside its machine.
    let (sink, mut children, spawner) = if deps.tools.get(crate::agents::AGENT_TOOL).is_some() {
        let shared: SharedSink = Rc::new(RefCell::new(sink));
        let sidechains = session
            .transcript
            .as_ref()
            .map(|t| Sidechains { mirror: t.mirror(), ..Sidechains::of(t.path(), session.id) });
        let output_dir = session.background.dir().to_path_buf();
        let (children, spawner) =
            Children::new(&deps, &options, shared.clone(), sidechains, output_dir, session.nested_memory.clone());
        (Box::new(ParentSink(shared)) as Box<dyn EventSink>, Some(children), Some(spawner))
    } else {
        (sink, None, None)
    };
    let tool_ctx = ToolContext {
        children: spawner,
        cancel: deps.cancel.clone(),
        shell_env: deps.shell_env.clone(),
        sandbox: deps.sandbox.clone(),
        read_deny: deps.policy.read_deny(),
        background: session.background.clone(),
        todos: session.todos.clone(),
        side: Some(crate::model::side::SideModel { model: deps.model.clone(), name: options.small_model.clone() }),
        nested_memory: session.nested_memory.clone(),
        journal: session.transcript.as_ref().and_then(|t| t.journal()),
        ..ToolContext::new(deps.cwd.clone())
    };
    // A tool a deny rule refuses whole is not offered (a call of it would still be refused).
    let offered = deps.tools.definitions().into_iter().filter(|d| !deps.policy.withholds(&d.name)).collect();
    // A tool phase a kill cut off runs first; the prompt follows its results.
    let pending = session.pending_tools.take();
    let mut st = LoopState::with_history(
        options,
        session.messages.clone(),
        pending.is_none().then_some(prompt),
        offered,
        &table,
    );
    st.spent_before_usd = session.cost_usd + session.spent_earlier_usd;
    st.cached_prefix = session.cached_prefix.take();
    let spill_dir = std::env::temp_dir().join(format!("agentloop-{}", st_run_id(&st)));
    // Removed, with the results spilled into it, when the run ends however it ends.
    let _spilled = SpillDir::new(spill_dir.clone());
    let toolbox = Arc::new(Toolbox {
        registry: deps.tools.clone(),
        hooks: deps.hooks.clone(),
        env: HookEnv {
            session_id: st.options.run_id.clone(),
            cwd: deps.cwd.clone(),
            shell_env: deps.shell_env.clone(),
            transcript_path: session.transcript.as_ref().map(|t| t.path().to_path_buf()),
            permission_mode: deps.policy.mode().as_str(),
            sandbox: deps.sandbox.clone(),
        },
        // Read-only tools may read spilled results and background shells' output.
        policy: Arc::new(
            (*deps.policy)
                .clone()
                .with_readable_root(spill_dir.clone())
                .with_readable_root(session.background.dir().to_path_buf()),
        ),
        result_cap: st.options.tool_result_cap,
        spill_dir,
        approvals: Approvals::new(deps.approver.clone(), deps.cancel.clone()),
        effects: deps.effects.clone(),
    });
    let transcript = TranscriptLog::new(session.transcript.take());
    let tasks = children.as_ref().map(Children::tasks);
    let mut ctx = Ctx {
        deps,
        sink,
        table,
        records: Vec::new(),
        transitions: 0,
        violation: None,
        tool_ctx,
        toolbox,
        transcript,
        tasks,
    };
    let counters: Counters = st.counters.clone();
    let user = Message::user_text(prompt);
    match pending {
        Some(pending) => {
            st.resume = Some(ResumeTools { pending, prompt: user, uuid: prompt_uuid, origin: origin.cloned() });
        }
        None => ctx.record_prompt(&user, prompt_uuid, origin),
    }
    tracing::debug!(?counters, "run starts");

    let mut machine = Machine::new(st).uninitialized_state_machine().init_with_context(&mut ctx).await;
    let mut dispatches = 0;
    // Set when a state answered `Step` by stopping its work because of an interrupt: only
    // then does the superstate get `Abort`, so every state cleans up (collects what its
    // running tools produced, keeps the streamed blocks) before the run ends.
    let mut settled = false;
    let terminal = loop {
        if let Some(violation) = ctx.violation.take() {
            session.transcript = ctx.transcript.into_writer();
            return Err(EngineError::UndeclaredTransition(violation));
        }
        let state = machine.state().clone();
        if let State::Done { reason } = state {
            break reason;
        }
        let cancelled = ctx.deps.cancel.is_cancelled();
        let abortable = crate::engine::machine::leaf_state(&state).is_abortable();
        let event = if cancelled && abortable && settled { Event::Abort } else { Event::Step };
        let before = ctx.transitions;
        let span = tracing::debug_span!("dispatch", state = crate::engine::machine::state_name(&state), ?event);
        let dispatch = machine.handle_with_context(&event, &mut ctx).instrument(span);
        match &mut children {
            Some(children) => children.drive(dispatch).await,
            None => dispatch.await,
        }
        dispatches += 1;
        let moved = ctx.transitions != before || ctx.violation.is_some();
        settled = !moved && ctx.deps.cancel.is_cancelled();
        if (!moved && (!settled || event == Event::Abort)) || dispatches > MAX_DISPATCHES {
            session.transcript = ctx.transcript.into_writer();
            return Err(EngineError::Stalled(crate::engine::machine::state_name(&state)));
        }
    };
    let subagents = match children {
        Some(children) => Some(children.finish().await),
        None => None,
    };
    let st = &machine.inner().st;
    let error = if terminal == TerminalReason::Completed { None } else { st.error.clone() };
    if let Some(warning) = ctx.transcript.prompt_end(terminal.as_str(), error.as_deref(), st.turn()) {
        ctx.emit(warning);
    }
    session.messages = st.messages.clone();
    session.transcript = ctx.transcript.into_writer();
    session.prompts += 1;
    session.cost_usd += st.cost_usd;
    session.cached_prefix = st.cached_prefix.clone();
    let final_text = match &st.structured_output {
        Some(answer) => answer.to_string(),
        None => st.final_text(),
    };
    Ok(RunOutcome {
        terminal,
        error,
        messages: st.messages.to_messages(),
        final_text,
        usage: st.usage,
        model_calls: st.model_calls,
        cost_usd: st.cost_usd,
        unpriced_models: st.unpriced_models.iter().cloned().collect(),
        turns: st.turn(),
        structured_output: st.structured_output.clone(),
        trace: ctx.records,
        api_failure: match terminal {
            TerminalReason::ModelError | TerminalReason::PromptTooLong => st.api_failure.clone(),
            _ => None,
        },
        permission_denials: st.permission_denials.clone(),
        delegated: st.delegated.clone(),
        subagents,
    })
}

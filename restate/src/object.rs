//! The `Session` virtual object: one key per session, one exclusive `prompt` invocation per
//! prompt, run from Prepare to a terminal edge with every step journaled ([`crate::bridge`]).

use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex};

use agentloop::engine::effects::Effects;
use agentloop::engine::events::EngineEvent;
use agentloop::engine::run::{Prompt, run_prompt_with};
use agentloop::engine::trace::TraceHeader;
use agentloop::harness::{Setup, run_scenario_prepared, scenario_options, scenario_tools};
use agentloop::hooks::NoHooks;
use agentloop::hooks::settings::Permissions;
use agentloop::model::anthropic::{AnthropicConfig, AnthropicModel};
use agentloop::protocol::Message;
use agentloop::sandbox::{Sandbox, SandboxSettings};
use agentloop::scenario::Scenario;
use agentloop::tools::ShellEnv;
use agentloop::{Deps, EngineOptions, Registry, RunOutcome};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::bridge::{self, Bridged, EffectsLog};
use crate::ids::Ids;

/// How many prompts the session has run (object state).
const PROMPTS: &str = "prompts";
/// The conversation of a session that talks to the Messages API (object state).
const MESSAGES: &str = "messages";

/// One prompt: a scripted scenario, or a prompt for the Messages API model.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptRequest {
    /// The scripted scenario that plays the model: a built-in scenario's name or a scenario
    /// file's path. Without it, `prompt` goes to the Messages API.
    #[serde(default)]
    pub scenario: Option<String>,
    /// The prompt, for the Messages API model (`ANTHROPIC_API_KEY` or `ANTHROPIC_AUTH_TOKEN`,
    /// and `ANTHROPIC_BASE_URL`, from the worker's environment). The session's earlier
    /// prompts and replies are its history.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The model (default: the engine's).
    #[serde(default)]
    pub model: Option<String>,
    /// The permission mode (`default`, `acceptEdits`, `plan`, `bypassPermissions`).
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// Allow rules (`Bash(git diff:*)`), as `--allowedTools` takes them.
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// Deny rules, as `--disallowedTools` takes them.
    #[serde(default)]
    pub disallowed_tools: Vec<String>,
    /// The working directory (a scenario's files are written there once).
    pub dir: PathBuf,
    /// Where the run's trace (`<n>.trace.jsonl`) and transcript (`<n>.transcript.jsonl`) are
    /// written, once, when it ends; `n` counts the session's prompts from 0.
    #[serde(default)]
    pub out: Option<PathBuf>,
}

/// What a prompt runs.
enum Work {
    /// A scripted scenario.
    Scenario(Box<Scenario>),
    /// A prompt for the Messages API model, after the session's history.
    Model { prompt: String, history: Vec<Message> },
}

/// How a prompt ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptResult {
    /// The prompt's number in the session, from 0.
    pub prompt: u64,
    /// The terminal reason.
    pub reason: String,
    /// The final text.
    pub result: String,
    /// The edges taken, in order.
    pub edges: Vec<String>,
    /// The trace file written, if any.
    pub trace: Option<PathBuf>,
    /// The transcript file written, if any.
    pub transcript: Option<PathBuf>,
}

/// What the engine's thread hands back.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Finished {
    reason: String,
    result: String,
    edges: Vec<String>,
    /// The trace: its header and one line per transition.
    trace: Vec<String>,
    /// The transcript: one line per message, with its uuid.
    transcript: Vec<String>,
    /// The session's conversation after the prompt (kept as object state for the next one).
    messages: Vec<Message>,
}

/// A session.
pub struct Session;

#[restate_sdk::object]
impl Session {
    /// Run one prompt of the session to a terminal reason.
    #[handler]
    async fn prompt(&self, ctx: ObjectContext<'_>, request: Json<PromptRequest>) -> HandlerResult<Json<PromptResult>> {
        let Json(request) = request;
        let n = ctx.get::<u64>(PROMPTS).await?.unwrap_or(0);
        let work = match (&request.scenario, &request.prompt) {
            (Some(scenario), None) => Work::Scenario(Box::new(load(scenario).map_err(TerminalError::new)?)),
            (None, Some(prompt)) => {
                let history = ctx.get::<Json<Vec<Message>>>(MESSAGES).await?.map(|Json(m)| m).unwrap_or_default();
                Work::Model { prompt: prompt.clone(), history }
            }
            _ => return Err(TerminalError::new("a prompt request has either `scenario` or `prompt`").into()),
        };
        let ids = Ids::new(ctx.key(), n);
        let (run_id, session_id) = (ids.named("run"), ids.named("session"));
        let log = EffectsLog::from_env();
        // The directory, and a scenario's files, written once: a replay finds them as the
        // steps left them.
        let files = match &work {
            Work::Scenario(scenario) => Some(scenario.clone()),
            Work::Model { .. } => None,
        };
        let dir = request.dir.clone();
        ctx.run(move || async move {
            std::fs::create_dir_all(&dir).map_err(|e| TerminalError::new(format!("{}: {e}", dir.display())))?;
            if let Some(files) = files {
                files.write_files(&dir).map_err(|e| TerminalError::new(format!("{}: {e}", dir.display())))?;
            }
            Ok(())
        })
        .name("prepare the working directory")
        .await?;

        let (requests, mut asked) = mpsc::unbounded_channel();
        let (done, finished) = oneshot::channel();
        let cancel = CancellationToken::new();
        let approver = bridge::Parked::new(requests.clone());
        let effects = Bridged::new(requests, ids);
        let engine_cancel = cancel.clone();
        let dir = request.dir.clone();
        let run_request = request.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
            let outcome = match runtime {
                Ok(runtime) => {
                    let engine = Engine { effects, approver, cancel: engine_cancel, run_id, session_id };
                    runtime.block_on(async move {
                        match work {
                            Work::Scenario(scenario) => run(*scenario, dir, engine).await,
                            Work::Model { prompt, history } => {
                                run_model(&run_request, &prompt, history, dir, engine).await
                            }
                        }
                    })
                }
                Err(e) => Err(format!("cannot start the engine's runtime: {e}")),
            };
            let _ = done.send(outcome);
        });

        let mut finished = std::pin::pin!(finished);
        let mut cancelled = false;
        let outcome = loop {
            tokio::select! {
                biased;
                outcome = &mut finished => break outcome,
                Some(request) = asked.recv() => {
                    if cancelled {
                        bridge::refuse(request);
                    } else if bridge::serve(&ctx, request, &log, &cancel).await.is_err() {
                        // Cancelled: the engine takes its abort edges; nothing more is journaled.
                        cancelled = true;
                    }
                }
            }
        };
        let finished = outcome.map_err(|_| TerminalError::new("the engine's thread ended without an outcome"))?;
        let finished = finished.map_err(TerminalError::new)?;

        if cancelled {
            // Nothing can be journaled any more: the outputs are written as they stand, and the
            // invocation ends cancelled.
            let _ = emit(request.out.as_deref(), n, &finished);
            return Err(
                TerminalError::new_with_code(409, format!("cancelled: the run ended as {}", finished.reason)).into()
            );
        }
        // Emitted once: a replay after this step reads it from the journal.
        let out = request.out.clone();
        let written = finished.clone();
        let Json((trace, transcript)) = ctx
            .run(move || async move { Ok(Json(emit(out.as_deref(), n, &written)?)) })
            .name("write the trace and the transcript")
            .await?;
        ctx.set(PROMPTS, n + 1);
        if request.prompt.is_some() {
            ctx.set(MESSAGES, Json(finished.messages.clone()));
        }
        Ok(Json(PromptResult {
            prompt: n,
            reason: finished.reason,
            result: finished.result,
            edges: finished.edges,
            trace,
            transcript,
        }))
    }
}

/// A built-in scenario by name, or a scenario file.
fn load(scenario: &str) -> Result<Scenario, String> {
    if let Ok(builtin) = agentloop::scenario::builtin::load(scenario) {
        return Ok(builtin);
    }
    Scenario::load(Path::new(scenario)).map_err(|e| e.to_string())
}

/// What a run on the engine's thread is given.
struct Engine {
    effects: Bridged,
    approver: bridge::Parked,
    cancel: CancellationToken,
    run_id: agentloop::session::Uuid,
    session_id: agentloop::session::Uuid,
}

/// Run `scenario` in `dir` on the engine's thread.
async fn run(scenario: Scenario, dir: PathBuf, engine: Engine) -> Result<Finished, String> {
    let Engine { effects, approver, cancel, run_id, session_id } = engine;
    let mut options = scenario_options(&scenario);
    options.run_id = run_id.to_string();
    let header = agentloop::engine::run::header(&options);
    let effects: Arc<dyn Effects> = Arc::new(effects);
    let setup = Setup { effects, tools: scenario_tools(&scenario), options, approver: Arc::new(approver), cancel };
    let done = run_scenario_prepared(&scenario, &dir, setup, session_id).await.map_err(|e| e.to_string())?;
    Ok(finished(&header, &done.outcome, &done.events))
}

/// Run `prompt` after `history` against the Messages API, on the engine's thread: the
/// standard tools, the permission mode and rules of `request`, Bash in the kernel sandbox as
/// the command line runs it.
async fn run_model(
    request: &PromptRequest,
    prompt: &str,
    history: Vec<Message>,
    dir: PathBuf,
    engine: Engine,
) -> Result<Finished, String> {
    let Engine { effects, approver, cancel, run_id, session_id } = engine;
    let config = AnthropicConfig::from_env().map_err(|e| e.to_string())?;
    let model = Arc::new(AnthropicModel::new(config).map_err(|e| e.to_string())?);
    let mut options = EngineOptions { run_id: run_id.to_string(), ..EngineOptions::default() };
    if let Some(name) = &request.model {
        options.model = name.clone();
    }
    let header = agentloop::engine::run::header(&options);
    let policy = agentloop::harness::policy(
        &Permissions::default(),
        request.permission_mode.as_deref(),
        &request.allowed_tools,
        &request.disallowed_tools,
        &dir,
    )
    .map_err(|e| e.to_string())?;
    let sandbox = Sandbox::for_session(SandboxSettings::default(), &dir, None).map_err(|e| e.to_string())?;
    let deps = Deps {
        model,
        tools: Registry::standard(),
        hooks: Arc::new(NoHooks),
        effects: Arc::new(effects),
        cancel,
        cwd: dir.clone(),
        policy: Arc::new(policy),
        shell_env: ShellEnv::inherited_default(),
        sandbox: Arc::new(sandbox),
        approver: Arc::new(approver),
    };
    let mut session = agentloop::Session::in_memory(session_id, dir);
    session.messages = history.into();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let sink = move |event: &EngineEvent| {
        if let EngineEvent::Message { .. } = event {
            seen.lock().expect("the event log's lock is never poisoned").push(event.clone());
        }
    };
    let outcome = run_prompt_with(&mut session, deps, options, &Prompt::text(prompt), Box::new(sink))
        .await
        .map_err(|e| e.to_string())?;
    let events = std::mem::take(&mut *events.lock().expect("the event log's lock is never poisoned"));
    Ok(finished(&header, &outcome, &events))
}

/// What a run hands back: its ending, its trace (header first) and its transcript.
fn finished(header: &TraceHeader, outcome: &RunOutcome, events: &[EngineEvent]) -> Finished {
    let mut trace = vec![json_line(header)];
    trace.extend(outcome.trace.iter().map(json_line));
    let transcript = events
        .iter()
        .filter_map(|event| match event {
            EngineEvent::Message { message, uuid, .. } => {
                Some(serde_json::json!({"uuid": uuid.to_string(), "message": message}).to_string())
            }
            _ => None,
        })
        .collect();
    Finished {
        reason: outcome.terminal.as_str().to_owned(),
        result: outcome.final_text.clone(),
        edges: outcome.edge_ids().into_iter().map(str::to_owned).collect(),
        trace,
        transcript,
        messages: outcome.messages.clone(),
    }
}

/// `value` as one JSON line.
fn json_line(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Write prompt `n`'s trace and transcript under `out`; the paths written.
fn emit(out: Option<&Path>, n: u64, finished: &Finished) -> Result<(Option<PathBuf>, Option<PathBuf>), TerminalError> {
    let Some(out) = out else { return Ok((None, None)) };
    let write = |name: String, lines: &[String]| -> Result<PathBuf, TerminalError> {
        std::fs::create_dir_all(out).map_err(|e| TerminalError::new(format!("{}: {e}", out.display())))?;
        let path = out.join(name);
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| TerminalError::new(format!("{}: {e}", path.display())))?;
        Ok(path)
    };
    let trace = write(format!("{n}.trace.jsonl"), &finished.trace)?;
    let transcript = write(format!("{n}.transcript.jsonl"), &finished.transcript)?;
    Ok((Some(trace), Some(transcript)))
}

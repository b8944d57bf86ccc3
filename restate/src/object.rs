//! The `Session` virtual object: one key per session, one exclusive `prompt` invocation per
//! prompt, run from Prepare to a terminal edge with every step journaled ([`crate::bridge`]).

use std::path::{Path, PathBuf};

use agentloop::engine::effects::Effects;
use agentloop::engine::events::EngineEvent;
use agentloop::harness::{Setup, run_scenario_prepared, scenario_options, scenario_tools};
use agentloop::scenario::Scenario;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::bridge::{self, Bridged, EffectsLog};
use crate::ids::Ids;

/// How many prompts the session has run (object state).
const PROMPTS: &str = "prompts";

/// One prompt.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptRequest {
    /// The scripted scenario that plays the model: a built-in scenario's name or a scenario
    /// file's path.
    pub scenario: String,
    /// The working directory (the scenario's files are written there once).
    pub dir: PathBuf,
    /// Where the run's trace (`<n>.trace.jsonl`) and transcript (`<n>.transcript.jsonl`) are
    /// written, once, when it ends; `n` counts the session's prompts from 0.
    #[serde(default)]
    pub out: Option<PathBuf>,
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
}

/// A session.
pub struct Session;

#[restate_sdk::object]
impl Session {
    /// Run one prompt of the session to a terminal reason.
    #[handler]
    async fn prompt(&self, ctx: ObjectContext<'_>, request: Json<PromptRequest>) -> HandlerResult<Json<PromptResult>> {
        let Json(request) = request;
        let scenario = load(&request.scenario).map_err(TerminalError::new)?;
        let n = ctx.get::<u64>(PROMPTS).await?.unwrap_or(0);
        let ids = Ids::new(ctx.key(), n);
        let (run_id, session_id) = (ids.named("run"), ids.named("session"));
        let log = EffectsLog::from_env();
        // The scenario's files, written once: a replay finds them as the steps left them.
        let (files, dir) = (scenario.clone(), request.dir.clone());
        ctx.run(move || async move {
            std::fs::create_dir_all(&dir).map_err(|e| TerminalError::new(format!("{}: {e}", dir.display())))?;
            files.write_files(&dir).map_err(|e| TerminalError::new(format!("{}: {e}", dir.display())))?;
            Ok(())
        })
        .name("write the scenario's files")
        .await?;

        let (requests, mut asked) = mpsc::unbounded_channel();
        let (done, finished) = oneshot::channel();
        let cancel = CancellationToken::new();
        let approver = bridge::Parked::new(requests.clone());
        let effects = Bridged::new(requests, ids);
        let engine_cancel = cancel.clone();
        let dir = request.dir.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
            let outcome = match runtime {
                Ok(runtime) => {
                    runtime.block_on(run(scenario, dir, effects, approver, engine_cancel, run_id, session_id))
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

/// Run `scenario` in `dir` on the engine's thread.
async fn run(
    scenario: Scenario,
    dir: PathBuf,
    effects: Bridged,
    approver: bridge::Parked,
    cancel: CancellationToken,
    run_id: agentloop::session::Uuid,
    session_id: agentloop::session::Uuid,
) -> Result<Finished, String> {
    let mut options = scenario_options(&scenario);
    options.run_id = run_id.to_string();
    let header = agentloop::engine::run::header(&options);
    let effects: std::sync::Arc<dyn Effects> = std::sync::Arc::new(effects);
    let setup =
        Setup { effects, tools: scenario_tools(&scenario), options, approver: std::sync::Arc::new(approver), cancel };
    let done = run_scenario_prepared(&scenario, &dir, setup, session_id).await.map_err(|e| e.to_string())?;
    let json = |value: &dyn erased::Json| value.line();
    let mut trace = vec![json(&header)];
    trace.extend(done.outcome.trace.iter().map(|r| json(r)));
    let transcript = done
        .events
        .iter()
        .filter_map(|event| match event {
            EngineEvent::Message { message, uuid, .. } => {
                Some(serde_json::json!({"uuid": uuid.to_string(), "message": message}).to_string())
            }
            _ => None,
        })
        .collect();
    Ok(Finished {
        reason: done.outcome.terminal.as_str().to_owned(),
        result: done.outcome.final_text.clone(),
        edges: done.outcome.edge_ids().into_iter().map(str::to_owned).collect(),
        trace,
        transcript,
    })
}

/// One JSON line of anything serializable.
mod erased {
    /// A value written as one JSON line.
    pub trait Json {
        /// The line.
        fn line(&self) -> String;
    }

    impl<T: serde::Serialize> Json for T {
        fn line(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }
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

//! A run as a front end starts it: [`RunSpec`], everything the engine needs resolved (the
//! model, the session, the settings, the policy, the tools), and how its output is printed.
//! The command line resolves its flags into one (`cli::run`); the demo and the tests build
//! one from a scenario ([`spec_for_scenario`]).

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::context::output_style::{ChosenStyle, OutputStyles};
use crate::engine::options::EngineOptions;
use crate::engine::session::Session;
use crate::engine::trace::{TraceFormat, TraceWriter};
use crate::harness::{HarnessError, policy, scenario_options, scenario_settings};
use crate::hooks::settings::Settings;
use crate::model::Model;
use crate::model::scripted::ScriptedModel;
use crate::permissions::Policy;
use crate::scenario::Scenario;
use crate::stderr;
use crate::tools::Registry;

/// How a run's result is printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The model's text as it streams.
    #[default]
    Text,
    /// One JSON result object at the end.
    Json,
    /// One JSON object per line, in Claude Code's stream-json shapes.
    StreamJson,
}

/// Where a run's trace goes (`--trace[=FORMAT]`, `--trace-file FILE`).
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    /// The format asked for (`--trace`); `None` with a file means JSON Lines, `None` without
    /// one means no trace.
    pub format: Option<TraceFormat>,
    /// Write the trace to this file instead of stderr.
    pub file: Option<PathBuf>,
}

/// The trace file cannot be created.
#[derive(Debug, thiserror::Error)]
#[error("cannot create {}: {error}", .path.display())]
pub struct TraceFileError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub error: std::io::Error,
}

impl TraceOptions {
    /// The trace writer these options ask for, `None` for no trace.
    ///
    /// # Errors
    /// [`TraceFileError`] when the trace file cannot be created.
    pub fn writer(&self) -> Result<Option<TraceWriter>, TraceFileError> {
        let format = match (self.format, &self.file) {
            (Some(f), _) => f,
            (None, Some(_)) => TraceFormat::Jsonl,
            (None, None) => return Ok(None),
        };
        Ok(Some(match &self.file {
            Some(path) => {
                let file = std::fs::File::create(path).map_err(|error| TraceFileError { path: path.clone(), error })?;
                TraceWriter::new(Box::new(std::io::BufWriter::new(file)), format, false)
            }
            None => TraceWriter::new(Box::new(std::io::stderr()), format, stderr::is_terminal()),
        }))
    }
}

/// A resolved run, ready for the engine.
pub struct RunSpec {
    /// The prompt.
    pub prompt: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// Engine options.
    pub options: EngineOptions,
    /// The model.
    pub model: Arc<dyn Model>,
    /// The scripted model, when that is the model (for `abort.phase = tools`).
    pub scripted: Option<Arc<ScriptedModel>>,
    /// Hook settings.
    pub settings: Settings,
    /// Permission policy.
    pub policy: Policy,
    /// Trace options.
    pub trace: TraceOptions,
    /// Output format.
    pub format: OutputFormat,
    /// Cancelled on Ctrl+C, SIGTERM, SIGHUP or a closed stdout (and by a scenario's abort).
    pub cancel: CancellationToken,
    /// The session the prompt runs on (its id is `options.run_id`).
    pub session: Session,
    /// The tools offered to the model.
    pub tools: Registry,
    /// `--include-partial-messages`.
    pub partial_messages: bool,
    /// The MCP servers (`--mcp-config`, `.mcp.json`), started in the background as soon as
    /// they are known; the run waits for them where it first needs its tools.
    pub mcp: crate::mcp::startup::Startup,
    /// How the session's commands are confined (from the settings' `sandbox` block).
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// The settings sources read (`--setting-sources`); agents load from the same ones.
    pub setting_sources: crate::settings::SettingSources,
    /// The custom slash commands of those sources.
    pub commands: Arc<crate::commands::Commands>,
    /// The output styles there are, and the one the settings choose.
    pub output_styles: OutputStyles,
    /// The output style in force (`outputStyle`).
    pub output_style: ChosenStyle,
    /// The subagent definitions the `Agent` tool offers.
    pub agents: Arc<crate::agents::Agents>,
    /// The memory files loaded (`options.memory` holds their text), for `system/init`.
    pub memory: Arc<crate::context::memory::Memory>,
    /// The skills the `Skill` tool offers (no tool when there are none).
    pub skills: Arc<crate::tools::skill::Skills>,
    /// Ask the model server for its context window ([`RunSpec::settle_context_window`]):
    /// a run against a server, without `--context-window`.
    pub ask_context_window: bool,
}

impl RunSpec {
    /// Take the context window the model server says it has, when it says
    /// ([`crate::model::window`]), so that autocompaction and the blocking limit fit a local
    /// server's window. Asked once per process, before the first prompt.
    pub async fn settle_context_window(&mut self) {
        if !std::mem::take(&mut self.ask_context_window) {
            return;
        }
        if let Some(window) = self.model.context_window(&self.options.model).await {
            tracing::info!(window, model = %self.options.model, "the model server's context window");
            self.options.context_window = window;
        }
    }
}

/// The agents of a scenario: the built-in one and those of its `agents` object. The object
/// was checked when the scenario loaded, so nothing fails here.
pub fn scenario_agents(scenario: &Scenario) -> crate::agents::Agents {
    let mut agents = crate::agents::Agents::default();
    if !scenario.agents.is_null() {
        let _ = agents.add_json("agents", &scenario.agents, crate::agents::AgentSource::Flag);
    }
    agents
}

/// The tools a session offers: the standard ones and `Agent`, knowing `agents`.
pub fn session_tools(agents: &Arc<crate::agents::Agents>) -> Registry {
    let mut tools = Registry::standard();
    tools.register(Arc::new(crate::agents::AgentTool::new(agents.clone())));
    tools
}

/// The model `run` uses when `--model` is not given and an API key is set.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The session a scenario's run starts from: a new one, or the conversation its `resume`
/// section describes, repaired as `--resume` repairs a transcript (the calls of the cut tool
/// phase that can run are left for the run to finish).
pub fn scenario_session(scenario: &Scenario, id: crate::session::Uuid, cwd: PathBuf) -> Session {
    let mut session = Session::in_memory(id, cwd);
    if let Some(resume) = &scenario.resume {
        let mut messages = vec![
            crate::protocol::Message::user_text(&resume.prompt),
            crate::protocol::Message { role: crate::protocol::Role::Assistant, content: resume.reply.clone() },
        ];
        let mut journal = crate::session::Journaled::default();
        for line in &resume.journal {
            journal.note(line.clone());
        }
        let (report, pending) = crate::session::repair_resuming(&mut messages, &journal);
        session.messages = messages.into();
        session.recovered = crate::session::RecoveredCalls::of(&report.repairs);
        session.pending_tools = pending;
    }
    session
}

/// A run of `scenario` with the scripted model in `cwd`.
///
/// # Errors
/// [`HarnessError::Settings`] or [`HarnessError::Policy`] when the scenario's settings are
/// malformed.
pub fn spec_for_scenario(
    scenario: &Scenario,
    cwd: PathBuf,
    cancel: CancellationToken,
    trace: TraceOptions,
    format: OutputFormat,
) -> Result<RunSpec, HarnessError> {
    let scripted = Arc::new(ScriptedModel::new(scenario, cancel.clone()).forgetting_requests());
    let settings = scenario_settings(scenario)?;
    let policy = policy(&settings.permissions, None, &[], &[], &cwd)?;
    let options = scenario_options(scenario);
    let id = crate::session::Uuid::parse(&options.run_id).unwrap_or_else(|_| crate::session::Uuid::new_v4());
    let agents = Arc::new(scenario_agents(scenario));
    Ok(RunSpec {
        ask_context_window: false,
        prompt: scenario.prompt.clone(),
        session: scenario_session(scenario, id, cwd.clone()),
        tools: session_tools(&agents),
        partial_messages: false,
        mcp: crate::mcp::startup::Startup::default(),
        sandbox: crate::sandbox::Sandbox::none(),
        setting_sources: crate::settings::SettingSources::none(),
        commands: Arc::default(),
        output_styles: OutputStyles::built_in(),
        output_style: ChosenStyle::default(),
        agents,
        memory: Arc::default(),
        skills: Arc::default(),
        cwd,
        options,
        model: scripted.clone(),
        scripted: Some(scripted),
        settings,
        policy,
        trace,
        format,
        cancel,
    })
}

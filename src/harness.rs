//! Runs a scenario end to end with the scripted model: what `agentloop demo`, the tests
//! and the benchmarks share.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::engine::effects::Effects;
use crate::engine::events::EngineEvent;
use crate::engine::machine::Deps;
use crate::engine::options::EngineOptions;
use crate::engine::run::{EngineError, RunOutcome, run_prompt};
use crate::hooks::command::CommandHooks;
use crate::hooks::settings::{Permissions, Settings, SettingsError};
use crate::model::scripted::ScriptedModel;
use crate::permissions::{Approver, Mode, PermissionError, Policy, Unattended};
use crate::scenario::Scenario;
use crate::tools::Registry;
use crate::tools::shell_env::ShellEnv;

/// The result of a scenario run.
pub struct ScenarioRun {
    /// How the run ended.
    pub outcome: RunOutcome,
    /// The scripted model, with its log of requests.
    pub model: Arc<ScriptedModel>,
    /// Every event the engine emitted, in order.
    pub events: Vec<EngineEvent>,
}

/// Why a scenario could not be run.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The scenario's settings are malformed.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The permissions of its settings name a bad mode or rule.
    #[error(transparent)]
    Policy(#[from] PermissionError),
    /// The scenario's files could not be written.
    #[error("cannot write the scenario's files: {0}")]
    Files(#[from] std::io::Error),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Engine options from a scenario's `options` (a fresh run id).
pub fn scenario_options(scenario: &Scenario) -> EngineOptions {
    let o = &scenario.options;
    let mut options = EngineOptions {
        run_id: new_run_id(),
        system: crate::engine::options::SCRIPTED_SYSTEM_PROMPT.into(),
        ..EngineOptions::default()
    };
    if let Some(m) = &o.model {
        options.model = m.clone();
    }
    if let Some(n) = o.max_turns {
        options.max_turns = Some(n);
    }
    options.token_budget = o.token_budget;
    if let Some(n) = o.context_window {
        options.context_window = n;
    }
    options.fallback_model = o.fallback_model.clone();
    if let Some(n) = o.max_retries {
        options.max_retries = Some(n);
    }
    if let Some(ms) = o.retry_base_delay_ms {
        options.retry_base_delay = Duration::from_millis(ms);
    }
    if let Some(n) = o.max_tool_concurrency {
        options.max_tool_concurrency = n;
    }
    if let Some(n) = o.tool_result_cap {
        options.tool_result_cap = n;
    }
    options.max_budget_usd = o.max_budget_usd;
    // `Scenario::parse` checked the schema.
    options.json_schema =
        o.json_schema.as_ref().and_then(|s| crate::json_schema::Schema::compile(s).ok()).map(Arc::new);
    options
}

/// A fresh run id: a new session id (UUID v4), as the output and the trace header show it.
pub(crate) fn new_run_id() -> String {
    crate::session::Uuid::new_v4().to_string()
}

/// The hook settings of a scenario.
///
/// # Errors
/// [`SettingsError`] naming the scenario and the bad field.
pub(crate) fn scenario_settings(scenario: &Scenario) -> Result<Settings, SettingsError> {
    Settings::from_value(&format!("scenario {}: settings", scenario.name), &scenario.settings)
}

/// The permission policy of a run: the settings' rules and `defaultMode`, then the command
/// line's mode and `--allowedTools` / `--disallowedTools`, which add to the settings.
///
/// # Errors
/// [`PermissionError`] naming the bad mode or rule.
pub fn policy(
    permissions: &Permissions,
    mode: Option<&str>,
    allowed: &[String],
    disallowed: &[String],
    cwd: &Path,
) -> Result<Policy, PermissionError> {
    let mode: Mode = match mode.or(permissions.default_mode.as_deref()) {
        Some(m) => m.parse()?,
        None => Mode::Default,
    };
    let allow: Vec<String> = permissions.allow.iter().chain(allowed).cloned().collect();
    let deny: Vec<String> = permissions.deny.iter().chain(disallowed).cloned().collect();
    Policy::new(mode, cwd.to_path_buf()).with_rules(&allow, &deny, &permissions.ask)
}

/// Run `scenario` in `dir` (its files are written there first) on `clock`, with the
/// standard tools.
///
/// # Errors
/// [`HarnessError`] when the scenario cannot be set up or the engine breaks its table.
pub async fn run_scenario(
    scenario: &Scenario,
    dir: &Path,
    clock: Arc<dyn Effects>,
) -> Result<ScenarioRun, HarnessError> {
    run_scenario_with(scenario, dir, clock, scenario_tools(scenario), scenario_options(scenario)).await
}

/// The tools a scenario's run offers: the standard ones and `Agent`, knowing the built-in
/// agent and the scenario's `agents`.
pub fn scenario_tools(scenario: &Scenario) -> Registry {
    crate::launch::spec::session_tools(&Arc::new(crate::launch::spec::scenario_agents(scenario)))
}

/// [`run_scenario`] with a chosen tool registry and options (tests wrap tools to observe them;
/// benchmarks change options).
///
/// # Errors
/// [`HarnessError`] when the scenario cannot be set up or the engine breaks its table.
pub async fn run_scenario_with(
    scenario: &Scenario,
    dir: &Path,
    clock: Arc<dyn Effects>,
    tools: Registry,
    options: EngineOptions,
) -> Result<ScenarioRun, HarnessError> {
    run_scenario_approved(scenario, dir, clock, tools, options, Arc::new(Unattended)).await
}

/// [`run_scenario_with`] with an [`Approver`] answering the calls the policy cannot decide
/// alone (tests script a person's answers).
///
/// # Errors
/// [`HarnessError`] when the scenario cannot be set up or the engine breaks its table.
pub async fn run_scenario_approved(
    scenario: &Scenario,
    dir: &Path,
    clock: Arc<dyn Effects>,
    tools: Registry,
    options: EngineOptions,
    approver: Arc<dyn Approver>,
) -> Result<ScenarioRun, HarnessError> {
    scenario.write_files(dir)?;
    let setup = Setup { effects: clock, tools, options, approver, cancel: CancellationToken::new() };
    run_scenario_prepared(scenario, dir, setup, crate::session::Uuid::new_v4()).await
}

/// How [`run_scenario_prepared`] runs a scenario.
pub struct Setup {
    /// The run's effects (its clock, ids and journal).
    pub effects: Arc<dyn Effects>,
    /// The tools offered.
    pub tools: Registry,
    /// The engine's options.
    pub options: EngineOptions,
    /// Who answers the calls the policy cannot decide alone.
    pub approver: Arc<dyn Approver>,
    /// The run's interrupt: cancelling it takes the abort edges.
    pub cancel: CancellationToken,
}

/// Run `scenario` in `dir`, whose files were written already (a durable runner writes them
/// once, not again when it replays the run), in a session with id `session_id`.
///
/// # Errors
/// [`HarnessError`] when the scenario cannot be set up or the engine breaks its table.
pub async fn run_scenario_prepared(
    scenario: &Scenario,
    dir: &Path,
    setup: Setup,
    session_id: crate::session::Uuid,
) -> Result<ScenarioRun, HarnessError> {
    let Setup { effects: clock, tools, options, approver, cancel } = setup;
    let settings = scenario_settings(scenario)?;
    let model = Arc::new(ScriptedModel::new(scenario, cancel.clone()));
    let deps = Deps {
        model: model.clone(),
        tools,
        hooks: Arc::new(CommandHooks::new(settings.hooks)),
        effects: clock,
        cancel,
        cwd: dir.to_path_buf(),
        policy: Arc::new(policy(&settings.permissions, None, &[], &[], dir)?),
        shell_env: Arc::new(ShellEnv::inherited(&settings.shell_environment.keep)),
        sandbox: crate::sandbox::Sandbox::none(),
        approver,
    };
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink_events = events.clone();
    let sink_model = model.clone();
    let sink = move |event: &EngineEvent| {
        match event {
            EngineEvent::ToolPhaseStarted { .. } => sink_model.tool_phase_started(),
            EngineEvent::StopHooksStarted => sink_model.stop_hooks_started(),
            _ => {}
        }
        sink_events.lock().expect("event log lock is never poisoned").push(event.clone());
    };
    let mut session = crate::launch::spec::scenario_session(scenario, session_id, dir.to_path_buf());
    let outcome = run_prompt(&mut session, deps, options, &scenario.prompt, Box::new(sink)).await?;
    let events = std::mem::take(&mut *events.lock().expect("event log lock is never poisoned"));
    Ok(ScenarioRun { outcome, model, events })
}

//! `agentloop run`: resolve the flags into a run and execute it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::interrupt::{EXIT_SIGINT, Signals, Stdout, Stop, stderr_line};
use crate::cli::output::{CliSink, result_object, stderr_is_terminal};
use crate::cli::table_file;
use crate::cli::{EXIT_INTERNAL, EXIT_USAGE, OutputFormat, TraceArgs};
use crate::engine::clock::SystemClock;
use crate::engine::machine::Deps;
use crate::engine::options::EngineOptions;
use crate::engine::run::{header, run};
use crate::engine::trace::{TraceFormat, TraceWriter};
use crate::harness::{new_run_id, policy, scenario_options, scenario_settings};
use crate::hooks::command::CommandHooks;
use crate::hooks::settings::Settings;
use crate::model::Model;
use crate::model::ModelError;
use crate::model::anthropic::{AnthropicConfig, AnthropicModel};
use crate::model::scripted::ScriptedModel;
use crate::permissions::Policy;
use crate::scenario::Scenario;
use crate::tools::Registry;
use crate::tools::shell_env::ShellEnv;
use tokio_util::sync::CancellationToken;

/// `agentloop run` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The prompt. With a scripted model it defaults to the scenario's `prompt`.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// `claude-…` for the Anthropic API, or `scripted:FILE` for a scenario file.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Model to switch to after three overloaded errors in a row.
    #[arg(long, value_name = "NAME")]
    pub fallback_model: Option<String>,
    /// Turns before the run ends as `max_turns` (default 100).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Output-token target: keep working while under 90% of it.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u64>,
    /// Working directory for tools and hooks (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Claude Code settings file (hooks, permissions).
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// default, acceptEdits, plan or bypassPermissions.
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,
    /// Rules that allow tool calls, e.g. "Bash(git status:*)" "Edit(src/**)" (comma or space separated).
    #[arg(long = "allowedTools", alias = "allowed-tools", value_name = "RULES", num_args = 1..)]
    pub allowed_tools: Vec<String>,
    /// Rules that refuse tool calls; they win over allow rules.
    #[arg(long = "disallowedTools", alias = "disallowed-tools", value_name = "RULES", num_args = 1..)]
    pub disallowed_tools: Vec<String>,
    /// Concurrency-safe tool calls that may run at once (default 10).
    #[arg(long, value_name = "N")]
    pub max_tool_concurrency: Option<usize>,
    /// Retries of one model request (default 10).
    #[arg(long, value_name = "N")]
    pub max_retries: Option<u32>,
    /// First retry delay in milliseconds; doubles per attempt, plus up to 25% jitter (default 500).
    #[arg(long, value_name = "MS")]
    pub retry_base_delay_ms: Option<u64>,
    /// Longest retry delay in milliseconds (default 32000).
    #[arg(long, value_name = "MS")]
    pub retry_max_delay_ms: Option<u64>,
    /// Seconds without a byte from the model before the stream counts as dead and is retried (default 60).
    #[arg(long, value_name = "SECS")]
    pub stream_idle_timeout: Option<f64>,
    /// How the result is printed.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Run the loop under this transition table instead of the shipped one (an edited copy of
    /// transitions/loop.toml). It is audited first; a table that fails is refused (exit 2).
    #[arg(long, value_name = "FILE")]
    pub table: Option<PathBuf>,
    /// Trace options.
    #[command(flatten)]
    pub trace: TraceArgs,
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
    pub trace: TraceArgs,
    /// Output format.
    pub format: OutputFormat,
    /// Cancelled on Ctrl+C, SIGTERM, SIGHUP or a closed stdout (and by a scenario's abort).
    pub cancel: CancellationToken,
}

/// Run `agentloop run`.
pub async fn command(args: RunArgs) -> u8 {
    match resolve(args) {
        Ok(spec) => execute(spec).await,
        Err(message) => {
            eprintln!("agentloop: {message}");
            EXIT_USAGE
        }
    }
}

fn resolve(args: RunArgs) -> Result<RunSpec, String> {
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    if !cwd.is_dir() {
        return Err(format!("--cwd {}: not a directory", cwd.display()));
    }
    let table = args.table.as_deref().map(|path| table_file::load(path, args.max_turns)).transpose()?;
    let cancel = CancellationToken::new();
    let mut spec = match args.model.as_deref().and_then(|m| m.strip_prefix("scripted:")) {
        Some(file) => {
            let scenario = Scenario::load(Path::new(file)).map_err(|e| e.to_string())?;
            scenario.write_files(&cwd).map_err(|e| format!("cannot write the scenario's files: {e}"))?;
            spec_for_scenario(&scenario, cwd, cancel, args.trace.clone(), args.output_format)?
        }
        None => spec_for_api(&args, cwd, cancel)?,
    };
    if let Some(prompt) = args.prompt.clone() {
        spec.prompt = prompt;
    }
    if spec.prompt.trim().is_empty() {
        return Err("no prompt: pass -p PROMPT".into());
    }
    apply_flags(&mut spec.options, &args);
    spec.options.table = table;
    spec.options.validate()?;
    if let Some(path) = &args.settings {
        spec.settings = Settings::load(path).map_err(|e| e.to_string())?;
    }
    spec.policy = policy(
        &spec.settings.permissions,
        args.permission_mode.as_deref(),
        &split_rules(&args.allowed_tools),
        &split_rules(&args.disallowed_tools),
        &spec.cwd,
    )?;
    Ok(spec)
}

/// A run against the Anthropic Messages API (or any server speaking it at `ANTHROPIC_BASE_URL`).
fn spec_for_api(args: &RunArgs, cwd: PathBuf, cancel: CancellationToken) -> Result<RunSpec, String> {
    let name = match args.model.as_deref() {
        Some(name) if name.starts_with("claude") => name.to_owned(),
        Some(other) => {
            return Err(format!("unknown model `{other}`: use claude-… (the Messages API) or scripted:FILE"));
        }
        None => DEFAULT_MODEL.to_owned(),
    };
    let mut config = AnthropicConfig::from_env().map_err(|e| match e {
        ModelError::Config(help) => help,
        other => other.to_string(),
    })?;
    if let Some(secs) = args.stream_idle_timeout {
        config.idle_timeout = Duration::from_secs_f64(secs);
    }
    let model = AnthropicModel::new(config).map_err(|e| e.to_string())?;
    let options = EngineOptions { model: name, run_id: new_run_id(), ..EngineOptions::default() };
    Ok(RunSpec {
        prompt: String::new(),
        cwd,
        options,
        model: Arc::new(model),
        scripted: None,
        settings: Settings::default(),
        policy: Policy::default(),
        trace: args.trace.clone(),
        format: args.output_format,
        cancel,
    })
}

/// The model `run` uses when `--model` is not given and an API key is set.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

fn apply_flags(options: &mut EngineOptions, args: &RunArgs) {
    if let Some(n) = args.max_turns {
        options.max_turns = Some(n);
    }
    if let Some(n) = args.token_budget {
        options.token_budget = Some(n);
    }
    if let Some(m) = &args.fallback_model {
        options.fallback_model = Some(m.clone());
    }
    if let Some(n) = args.max_tool_concurrency {
        options.max_tool_concurrency = n;
    }
    if let Some(n) = args.max_retries {
        options.max_retries = Some(n);
    }
    if let Some(ms) = args.retry_base_delay_ms {
        options.retry_base_delay = Duration::from_millis(ms);
    }
    if let Some(ms) = args.retry_max_delay_ms {
        options.retry_max_delay = Duration::from_millis(ms);
    }
}

/// Split rule lists given as `"Bash(git log:*) Edit"` or `Read,Grep` into rules, keeping
/// spaces and commas inside parentheses.
pub fn split_rules(values: &[String]) -> Vec<String> {
    let mut rules = Vec::new();
    for value in values {
        let mut depth = 0usize;
        let mut current = String::new();
        for c in value.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth == 0 && (c == ',' || c.is_whitespace()) {
                if !current.is_empty() {
                    rules.push(std::mem::take(&mut current));
                }
            } else {
                current.push(c);
            }
        }
        if !current.is_empty() {
            rules.push(current);
        }
    }
    rules
}

/// A run of `scenario` with the scripted model in `cwd`.
///
/// # Errors
/// A message when the scenario's settings are malformed.
pub fn spec_for_scenario(
    scenario: &Scenario,
    cwd: PathBuf,
    cancel: CancellationToken,
    trace: TraceArgs,
    format: OutputFormat,
) -> Result<RunSpec, String> {
    let scripted = Arc::new(ScriptedModel::new(scenario, cancel.clone()).forgetting_requests());
    let settings = scenario_settings(scenario)?;
    let policy = policy(&settings.permissions, None, &[], &[], &cwd)?;
    Ok(RunSpec {
        prompt: scenario.prompt.clone(),
        cwd,
        options: scenario_options(scenario),
        model: scripted.clone(),
        scripted: Some(scripted),
        settings,
        policy,
        trace,
        format,
        cancel,
    })
}

fn trace_writer(args: &TraceArgs) -> Result<Option<TraceWriter>, String> {
    let format = match (args.trace, &args.trace_file) {
        (Some(f), _) => TraceFormat::from(f),
        (None, Some(_)) => TraceFormat::Jsonl,
        (None, None) => return Ok(None),
    };
    Ok(Some(match &args.trace_file {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            TraceWriter::new(Box::new(std::io::BufWriter::new(file)), format, false)
        }
        None => TraceWriter::new(Box::new(std::io::stderr()), format, stderr_is_terminal()),
    }))
}

/// Execute a resolved run; returns the exit status.
pub async fn execute(spec: RunSpec) -> u8 {
    let started = Instant::now();
    let mut trace = match trace_writer(&spec.trace) {
        Ok(t) => t,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return EXIT_USAGE;
        }
    };
    if let Some(t) = &mut trace
        && let Err(e) = t.header(&header(&spec.options))
    {
        eprintln!("agentloop: cannot write the trace: {e}");
        return EXIT_USAGE;
    }
    let session_id = spec.options.run_id.clone();
    let trace_on_stderr = trace.is_some() && spec.trace.trace_file.is_none();
    let stdout = Stdout::new();
    let mut sink = CliSink::new(trace, spec.format, session_id.clone(), stdout.clone());
    // The pretty trace already shows each tool's start and end; don't print them twice.
    sink.pretty_trace_on_stderr = trace_on_stderr && spec.trace.trace != Some(crate::cli::TraceFormatArg::Jsonl);
    sink.show_tools &= !sink.pretty_trace_on_stderr;
    if let Some(scripted) = spec.scripted.clone() {
        let at_stop_hooks = scripted.clone();
        sink.on_tool_phase = Some(Arc::new(move || scripted.tool_phase_started()));
        sink.on_stop_hooks = Some(Arc::new(move || at_stop_hooks.stop_hooks_started()));
    }
    let tools = Registry::standard();
    if spec.format == OutputFormat::StreamJson {
        let names: Vec<String> = tools.definitions().into_iter().map(|d| d.name).collect();
        stdout.line(
            &serde_json::json!({"type": "system", "subtype": "init", "session_id": session_id,
                "cwd": spec.cwd, "model": spec.options.model, "tools": names,
                "permissionMode": spec.policy.mode().as_str()})
            .to_string(),
        );
    }
    let deps = Deps {
        model: spec.model,
        tools,
        hooks: Arc::new(CommandHooks::new(spec.settings.hooks)),
        clock: Arc::new(SystemClock::new()),
        cancel: spec.cancel.clone(),
        cwd: spec.cwd,
        policy: Arc::new(spec.policy),
        shell_env: Arc::new(ShellEnv::inherited(&spec.settings.shell_environment.keep)),
        approver: Arc::new(crate::permissions::Unattended),
    };
    let (result, stop) = supervise(run(deps, spec.options, &spec.prompt, Box::new(sink)), &spec.cancel, &stdout).await;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            stderr_line(&format!("agentloop: internal error: {e}"));
            return EXIT_INTERNAL;
        }
    };
    match spec.format {
        OutputFormat::Text => {}
        OutputFormat::Json | OutputFormat::StreamJson => {
            stdout.line(&result_object(&outcome, &session_id, started).to_string());
        }
    }
    let stop = stop.or(stdout.is_closed().then_some(Stop::ClosedStdout));
    if let Some(error) = &outcome.error
        && stop != Some(Stop::ClosedStdout)
    {
        stderr_line(&format!("agentloop: ended with {}: {error}", outcome.terminal));
    }
    match stop {
        Some(stop) => stop.exit_code(),
        None => outcome.terminal.exit_code(),
    }
}

/// How long a second signal lets the run write its terminal record, once every tool and
/// hook process group is killed, before the process exits without it.
const QUIT_GRACE: Duration = Duration::from_secs(1);

/// Drive `run` while watching for signals and a closed stdout. The first one cancels the run
/// (it ends as `aborted_*`, or as it was ending anyway); a second signal kills every tool and
/// hook process group at once, and exits the process if the run still has not ended
/// [`QUIT_GRACE`] later. Returns the run's result and what stopped it, if anything did.
async fn supervise<T>(run: impl Future<Output = T>, cancel: &CancellationToken, stdout: &Stdout) -> (T, Option<Stop>) {
    let mut signals = match Signals::install() {
        Ok(signals) => Some(signals),
        Err(e) => {
            stderr_line(&format!("agentloop: warning: cannot catch signals: {e}"));
            None
        }
    };
    tokio::pin!(run);
    let mut stop: Option<Stop> = None;
    let quit = tokio::time::sleep(Duration::MAX);
    tokio::pin!(quit);
    let mut quitting = false;
    let result = loop {
        tokio::select! {
            biased;
            result = &mut run => break result,
            signal = next_signal(&mut signals) => match stop {
                None => {
                    stop = Some(signal);
                    let hint = if signal == Stop::Interrupt { " (Ctrl+C again to quit at once)" } else { "" };
                    stderr_line(&format!("\nagentloop: {}{hint}", signal.describe()));
                    cancel.cancel();
                }
                Some(_) => {
                    crate::process_group::kill_all();
                    if !quitting {
                        stderr_line("agentloop: quitting");
                        quitting = true;
                        quit.as_mut().reset(tokio::time::Instant::now() + QUIT_GRACE);
                    }
                }
            },
            () = stdout.closed(), if stop.is_none() => {
                stop = Some(Stop::ClosedStdout);
                cancel.cancel();
            }
            () = &mut quit, if quitting => {
                crate::process_group::kill_all();
                std::process::exit(i32::from(stop.map_or(EXIT_SIGINT, Stop::exit_code)));
            }
        }
    };
    if stop.is_some() {
        // Every group is normally gone with the calls that owned it; make sure.
        crate::process_group::kill_all();
    }
    (result, stop)
}

async fn next_signal(signals: &mut Option<Signals>) -> Stop {
    match signals {
        Some(signals) => signals.next().await,
        None => std::future::pending().await,
    }
}

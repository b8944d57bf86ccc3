//! `agentloop run`: resolve the flags into a run and execute it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::error::ResolveError;
use crate::cli::session_args::SessionArgs;
use crate::cli::{OutputFormatArg, TraceArgs, table_file};
use crate::context::output_style::{self, ChosenStyle, OutputStyles};
use crate::engine::clock::SystemClock;
use crate::engine::machine::Deps;
use crate::engine::options::EngineOptions;
use crate::engine::run::{header, run_prompt};
use crate::engine::session::Session;
use crate::engine::trace::{TraceFormat, TraceHeader};
use crate::harness::{new_run_id, policy};
use crate::hooks::command::CommandHooks;
use crate::hooks::settings::Settings;
use crate::launch::ExitStatus;
use crate::launch::output::{
    OutputSink, WithCommands, WithSandbox, result_object, system_init, with_structured_output,
};
use crate::launch::session;
use crate::launch::signals::{Stop, supervise};
use crate::launch::spec::{DEFAULT_MODEL, OutputFormat, RunSpec, spec_for_scenario};
use crate::launch::stdio::Stdout;
use crate::model::anthropic::{AnthropicConfig, AnthropicModel};
use crate::permissions::Policy;
use crate::scenario::Scenario;
use crate::stderr;
use crate::tools::Registry;
use crate::tools::shell_env::ShellEnv;
use tokio_util::sync::CancellationToken;

/// `agentloop run`: `-p PROMPT` and the run flags.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The prompt. With a scripted model it defaults to the scenario's `prompt`.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Everything else.
    #[command(flatten)]
    pub flags: RunFlags,
}

/// The flags of a run, shared by `agentloop run` and the top-level command line.
#[derive(Debug, Clone, clap::Args)]
pub struct RunFlags {
    /// A model the server at `ANTHROPIC_BASE_URL` serves (`claude-…` for the Anthropic API, any
    /// name for a compatible local server), or `scripted:FILE` for a scenario file.
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
    /// Spend cap of the session in US dollars: a request is sent only when what it may cost
    /// (its prompt, and its output cap lowered to what fits) fits what is left; otherwise the
    /// run ends as `budget_exhausted` (`error_max_budget_usd`).
    #[arg(long, value_name = "USD")]
    pub max_budget_usd: Option<f64>,
    /// The answer's format, a JSON Schema (the JSON text): the model is offered a
    /// `StructuredOutput` tool with it as input schema, and the run ends with the first call
    /// that matches, its input in the result's `structured_output`.
    #[arg(long, value_name = "SCHEMA")]
    pub json_schema: Option<String>,
    /// Working directory for tools and hooks (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Claude Code settings (hooks, permissions, …): a file, or the JSON itself. Read after
    /// the settings files of --setting-sources, and wins over them.
    #[arg(long, value_name = "FILE_OR_JSON")]
    pub settings: Option<String>,
    /// Which settings files, commands and output styles load: comma-separated `user`
    /// (~/.claude, or $CLAUDE_CONFIG_DIR), `project` (.claude/settings.json, .claude/commands,
    /// .claude/output-styles), `local` (.claude/settings.local.json); "" for none. Default:
    /// all three (a scripted scenario: none, it carries its own settings).
    #[arg(long, value_name = "SOURCES")]
    pub setting_sources: Option<String>,
    /// Subagent definitions the `Agent` tool may delegate to, as JSON:
    /// `{"NAME": {"description": …, "prompt": …, "tools": [...], "model": "haiku"}}`; they join
    /// the built-in `general-purpose` and the `agents/*.md` files of --setting-sources.
    #[arg(long, value_name = "JSON")]
    pub agents: Option<String>,
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
    #[arg(long, value_enum, default_value_t = OutputFormatArg::Text)]
    pub output_format: OutputFormatArg,
    /// Run the loop under this transition table instead of the shipped one (an edited copy of
    /// transitions/loop.toml). It is audited first; a table that fails is refused (exit 2).
    #[arg(long, value_name = "FILE")]
    pub table: Option<PathBuf>,
    /// How the prompt arrives: `text` (the argument) or `stream-json` (NDJSON on stdin, with
    /// the Claude Agent SDK's control protocol; see `agentloop --help`).
    #[arg(long, value_enum, default_value_t = InputFormat::Text)]
    pub input_format: InputFormat,
    /// With `--output-format stream-json`: also print each raw streaming event as a
    /// `stream_event` line.
    #[arg(long)]
    pub include_partial_messages: bool,
    /// Accepted for the Claude Agent SDK: stream-json output is always complete.
    #[arg(long)]
    pub verbose: bool,
    /// Extended thinking: the most tokens of a reply the model may think in (at least 1024,
    /// kept below the reply's output cap). `MAX_THINKING_TOKENS` in the environment does the
    /// same; this flag wins.
    #[arg(long, value_name = "TOKENS")]
    pub max_thinking_tokens: Option<u32>,
    /// The output cap of every request, in tokens; it is not escalated. `CLAUDE_CODE_MAX_OUTPUT_TOKENS`
    /// in the environment does the same; this flag wins.
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_output_tokens: Option<u32>,
    /// The model's context window in tokens, for autocompaction and the blocking limit.
    /// Without it a server that says its window (llama.cpp's `/props`, an OpenAI-style
    /// `/v1/models` with `max_model_len` or `meta.n_ctx`) is believed, else 200 000.
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1024..))]
    pub context_window: Option<u64>,
    /// `enabled` or `adaptive`: think with as much of the output cap as the API allows (or
    /// `--max-thinking-tokens`); `disabled`: no thinking, whatever else says so.
    #[arg(long, value_enum, value_name = "MODE")]
    pub thinking: Option<ThinkingMode>,
    /// Accepted for the Claude Agent SDK: how thinking is shown (agentloop streams it whole).
    #[arg(long, value_name = "DISPLAY", hide = true)]
    pub thinking_display: Option<String>,
    /// The system prompt; an empty one means agentloop's default.
    #[arg(long, value_name = "TEXT", conflicts_with = "system_prompt_file")]
    pub system_prompt: Option<String>,
    /// Read the system prompt from a file.
    #[arg(long, value_name = "FILE")]
    pub system_prompt_file: Option<PathBuf>,
    /// Text appended to the system prompt.
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    /// The tools the model is offered: comma-separated names, `default` for all, "" for none.
    #[arg(long, value_name = "NAMES")]
    pub tools: Option<String>,
    /// `stdio`: ask the Claude Agent SDK (a `can_use_tool` control request) when a permission
    /// decision is "ask", instead of refusing.
    #[arg(long, value_name = "TOOL")]
    pub permission_prompt_tool: Option<String>,
    /// MCP servers whose tools the model is offered as `mcp__<server>__<tool>`, in Claude
    /// Code's format: `{"mcpServers": {"NAME": {"command": …, "args": […], "env": {…}} |
    /// {"type": "http", "url": …, "headers": {…}}}}`; a file (Claude Code's `~/.claude.json`
    /// included), or the JSON itself. Repeatable; a later server of the same name wins. `${VAR}`
    /// and `${VAR:-default}` are expanded. `"sse"` servers, and `"sdk"` ones outside the Claude
    /// Agent SDK, are reported as failed. Their tools need an allow rule (`mcp__NAME` for a
    /// whole server, `mcp__NAME__TOOL` for one) unless the mode is bypassPermissions.
    #[arg(long, value_name = "FILE_OR_JSON", num_args = 1..)]
    pub mcp_config: Vec<String>,
    /// Use only the servers of `--mcp-config`, not those of the project's `.mcp.json` (which
    /// start only when the settings' `enableAllProjectMcpServers` or `enabledMcpjsonServers`
    /// allow them).
    #[arg(long)]
    pub strict_mcp_config: bool,
    /// Accepted for Claude Code's clients (the Claude ACP adapter passes it): the SDK may switch
    /// a session to bypassPermissions with or without it.
    #[arg(long)]
    pub allow_dangerously_skip_permissions: bool,
    /// Accepted for the TypeScript Claude Agent SDK, which passes it when it sends MCP servers
    /// in `initialize`: agentloop reads stdin in order, so the servers of an `initialize`
    /// always start before a prompt written after it.
    #[arg(long)]
    pub await_initialize: bool,
    /// With `--input-format stream-json`: echo each user message on stdout (`isReplay: true`,
    /// its own `uuid`) as its prompt starts, as Claude Code does.
    #[arg(long)]
    pub replay_user_messages: bool,
    /// Flags of Claude Code's command line that agentloop accepts but does not honour yet.
    #[command(flatten)]
    pub unsupported: UnsupportedFlags,
    /// Session options.
    #[command(flatten)]
    pub session: SessionArgs,
    /// Trace options.
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// `--thinking`: whether replies think.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ThinkingMode {
    /// Think, with the budget of `--max-thinking-tokens` or all the output cap allows.
    Enabled,
    /// The same as `enabled` (Claude Code lets newer models pick their budget).
    Adaptive,
    /// Never think.
    Disabled,
}

/// The thinking budget a run asks for: `--thinking disabled` wins, then
/// `--max-thinking-tokens`, then `MAX_THINKING_TOKENS` (`env`), then `--thinking enabled`
/// (as much as fits below the output cap). `Err` names a `MAX_THINKING_TOKENS` that is not
/// a number.
fn thinking_budget(args: &RunFlags, env: Option<&str>) -> Result<Option<u32>, ResolveError> {
    let from_env = env
        .filter(|v| !v.trim().is_empty())
        .map(|v| v.trim().parse::<u32>().map_err(|_| ResolveError::ThinkingTokens(v.to_owned())))
        .transpose()?;
    Ok(match (args.thinking, args.max_thinking_tokens.or(from_env)) {
        (Some(ThinkingMode::Disabled), _) | (None, Some(0)) => None,
        (_, Some(budget)) => Some(budget),
        (Some(ThinkingMode::Enabled | ThinkingMode::Adaptive), None) => Some(u32::MAX),
        (None, None) => None,
    })
}

/// The output cap a run asks for: `--max-output-tokens`, then `CLAUDE_CODE_MAX_OUTPUT_TOKENS`
/// (`env`; its name holds `TOKEN`, so it is read from the sealed store). `Err` names a value
/// that is not a positive number.
fn output_cap(args: &RunFlags, env: Option<&str>) -> Result<Option<u32>, ResolveError> {
    if let Some(cap) = args.max_output_tokens {
        return Ok(Some(cap));
    }
    env.filter(|v| !v.trim().is_empty())
        .map(|v| {
            v.trim().parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| ResolveError::OutputTokens(v.to_owned()))
        })
        .transpose()
}

/// How a run's prompt arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum InputFormat {
    /// The prompt argument.
    #[default]
    Text,
    /// Newline-delimited JSON on stdin: user messages and control requests (Claude Agent SDK).
    StreamJson,
}

/// Claude Code flags agentloop accepts so that the Claude Agent SDK's command lines parse, but
/// does not honour yet: each one given is named in a one-line warning on stderr.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct UnsupportedFlags {
    /// Not honoured yet: more directories tools may use.
    #[arg(long, value_name = "DIR", hide = true)]
    pub add_dir: Vec<PathBuf>,
    /// Not honoured yet.
    #[arg(long, hide = true)]
    pub include_hook_events: bool,
    /// Not honoured yet.
    #[arg(long, value_name = "BETAS", hide = true)]
    pub betas: Option<String>,
    /// The Claude Agent SDK's session store: each transcript line is also printed as a
    /// `transcript_mirror` frame (stream-json input only).
    #[arg(long, hide = true)]
    pub session_mirror: bool,
    /// Not honoured yet.
    #[arg(long, value_name = "DIR", hide = true)]
    pub plugin_dir: Vec<PathBuf>,
    /// Not honoured yet.
    #[arg(long, value_name = "TOKENS", hide = true)]
    pub task_budget: Option<u64>,
}

impl UnsupportedFlags {
    /// The flags given, as typed.
    pub fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut note = |on: bool, name: &'static str| {
            if on {
                out.push(name);
            }
        };
        note(!self.add_dir.is_empty(), "--add-dir");
        note(self.include_hook_events, "--include-hook-events");
        note(self.betas.is_some(), "--betas");
        note(!self.plugin_dir.is_empty(), "--plugin-dir");
        note(self.task_budget.is_some(), "--task-budget");
        out
    }
}

impl RunFlags {
    /// What the SDK mode takes from these flags besides the run ([`crate::sdk::SdkOptions`]).
    pub fn sdk_options(&self) -> crate::sdk::SdkOptions {
        crate::sdk::SdkOptions {
            session_mirror: self.unsupported.session_mirror,
            permission_prompt_tool: self.permission_prompt_tool.clone(),
            replay_user_messages: self.replay_user_messages,
        }
    }
}

/// Run `agentloop run`.
pub async fn command(args: RunArgs) -> ExitStatus {
    match resolve(args.prompt, &args.flags) {
        Ok(mut spec) => {
            spec.settle_context_window().await;
            execute(spec).await
        }
        Err(message) => {
            eprintln!("agentloop: {message}");
            ExitStatus::Usage
        }
    }
}

/// Resolve a run's prompt and flags into a [`RunSpec`] (the session opened, settings read,
/// the policy built).
///
/// # Errors
/// [`ResolveError`], a message for the user.
pub fn resolve(prompt: Option<String>, args: &RunFlags) -> Result<RunSpec, ResolveError> {
    resolve_with(prompt, args, true)
}

/// [`resolve`] for the interactive session, whose prompts are typed later: no prompt needed.
///
/// # Errors
/// [`ResolveError`], a message for the user.
pub fn resolve_interactive(args: &RunFlags) -> Result<RunSpec, ResolveError> {
    resolve_with(None, args, false)
}

fn resolve_with(prompt: Option<String>, args: &RunFlags, needs_prompt: bool) -> Result<RunSpec, ResolveError> {
    for flag in args.unsupported.given() {
        eprintln!("agentloop: warning: {flag} is not supported yet and is ignored");
    }
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(ResolveError::CurrentDir)?,
    };
    if !cwd.is_dir() {
        return Err(ResolveError::NotADirectory(cwd));
    }
    let table = args.table.as_deref().map(|path| table_file::load(path, args.max_turns)).transpose()?;
    let cancel = CancellationToken::new();
    let mut spec = match args.model.as_deref().and_then(|m| m.strip_prefix("scripted:")) {
        Some(file) => {
            let scenario = Scenario::load(Path::new(file))?;
            scenario.write_files(&cwd).map_err(ResolveError::ScenarioFiles)?;
            spec_for_scenario(&scenario, cwd, cancel, args.trace.options(), args.output_format.into())?
        }
        None => spec_for_api(args, cwd, cancel)?,
    };
    if let Some(prompt) = prompt {
        spec.prompt = prompt;
    }
    if needs_prompt && spec.prompt.trim().is_empty() && args.input_format == InputFormat::Text {
        return Err(ResolveError::NoPrompt);
    }
    load_settings(&mut spec, args)?;
    // The settings may say where an OpenAI protocol's server is: the client is made again.
    let providers = &spec.settings.model_providers;
    let wire = match args.model.as_deref() {
        Some(m) if m.starts_with("chat:") => providers.chat.as_ref().map(|p| (crate::model::chat::Wire::Chat, p)),
        Some(m) if m.starts_with("responses:") => {
            providers.responses.as_ref().map(|p| (crate::model::chat::Wire::Responses, p))
        }
        _ => None,
    };
    if let Some((wire, provider)) = wire {
        spec.model = openai_model(args, wire, Some(provider))?;
    }
    apply_flags(&mut spec.options, args, spec.output_style.style.as_ref())?;
    // The CLI writes each record as it happens and never reads them back.
    spec.options.keep_trace = false;
    // `--context-window` is the user's word; otherwise a server is asked for its own.
    spec.ask_context_window &= args.context_window.is_none();
    if let Some(names) = &args.tools {
        spec.tools = tool_subset(names, &spec.tools)?;
    }
    spec.partial_messages = args.include_partial_messages;
    spec.options.table = table;
    spec.options.validate().map_err(ResolveError::Options)?;
    spec.sandbox = Arc::new(crate::sandbox::Sandbox::for_session(spec.settings.sandbox.clone(), &spec.cwd, None)?);
    // The servers start now, while the rest is prepared (the session loaded, the trace opened).
    spec.mcp = crate::mcp::startup::Startup::begin(
        mcp_servers(args, &spec.cwd, &spec.settings)?,
        spec.cwd.clone(),
        spec.sandbox.clone(),
    );
    spec.policy = policy(
        &spec.settings.permissions,
        args.permission_mode.as_deref(),
        &split_rules(&args.allowed_tools),
        &split_rules(&args.disallowed_tools),
        &spec.cwd,
    )?;
    let cwd = std::fs::canonicalize(&spec.cwd)
        .map_err(|error| ResolveError::Canonicalize { cwd: spec.cwd.clone(), error })?;
    let nested_memory = spec.session.nested_memory.clone();
    let session_options =
        session::SessionOptions { sums_subagent_spend: args.max_budget_usd.is_some(), ..args.session.options() };
    spec.session = session::open(&session_options, &cwd).inspect_err(|error| {
        // As Claude Code does: a result the Claude Agent SDK raises, before the process ends.
        if matches!(args.output_format, OutputFormatArg::Json | OutputFormatArg::StreamJson) {
            println!("{}", session::open_failure_result(&error.to_string()));
        }
    })?;
    spec.session.nested_memory = nested_memory;
    spec.options.run_id = spec.session.id.to_string();
    let table_sha256 = spec.options.table().sha256.clone();
    session::write_meta(&mut spec.session, &spec.options.model, &table_sha256, spec.policy.mode().as_str());
    Ok(spec)
}

/// The MCP servers of a run: the project's `.mcp.json` servers the settings consent to (not
/// with `--strict-mcp-config`; a bad file is a warning, and so is each variable withheld from
/// them), then those of every `--mcp-config`, which win over a project server of the same
/// name.
fn mcp_servers(args: &RunFlags, cwd: &Path, settings: &Settings) -> Result<crate::mcp::Servers, ResolveError> {
    use crate::mcp::config;
    let mut servers = crate::mcp::Servers::new();
    if !args.strict_mcp_config {
        let consent = config::ProjectConsent {
            all: settings.enable_all_project_mcp_servers,
            enabled: &settings.enabled_mcpjson_servers,
            disabled: &settings.disabled_mcpjson_servers,
        };
        match config::project(cwd, consent, &settings.shell_environment.keep, &config::env_var) {
            Ok(project) => {
                for name in project.skipped {
                    eprintln!(
                        "agentloop: warning: MCP server `{name}` of .mcp.json is not started: the settings' \
enabledMcpjsonServers or enableAllProjectMcpServers would allow it"
                    );
                }
                for withheld in project.withheld {
                    eprintln!("agentloop: warning: {withheld}");
                }
                servers.extend(project.servers);
            }
            Err(e) => eprintln!("agentloop: warning: {e}; its servers are not started"),
        }
    }
    for value in &args.mcp_config {
        servers.extend(config::load(value, cwd, &config::env_var)?);
    }
    Ok(servers)
}

/// The client of an OpenAI protocol, configured from the environment, then `provider` (the
/// settings' `modelProviders` entry for that protocol).
fn openai_model(
    args: &RunFlags,
    wire: crate::model::chat::Wire,
    provider: Option<&crate::hooks::settings::ModelProvider>,
) -> Result<Arc<dyn crate::model::Model>, ResolveError> {
    let mut config = crate::model::chat::ChatConfig::from_env_or(provider);
    if let Some(secs) = args.stream_idle_timeout {
        config.idle_timeout = Duration::from_secs_f64(secs);
    }
    Ok(Arc::new(crate::model::chat::ChatModel::new(config, wire).map_err(ResolveError::ModelSetup)?))
}

/// A run against the Anthropic Messages API (or any server speaking it at `ANTHROPIC_BASE_URL`).
fn spec_for_api(args: &RunFlags, cwd: PathBuf, cancel: CancellationToken) -> Result<RunSpec, ResolveError> {
    let name = match args.model.as_deref() {
        Some(name) => {
            crate::model::check_model_name(name).map_err(ResolveError::BadModel)?;
            name.to_owned()
        }
        None => DEFAULT_MODEL.to_owned(),
    };
    use crate::model::chat::Wire;
    let openai = [("chat:", Wire::Chat), ("responses:", Wire::Responses)]
        .into_iter()
        .find_map(|(prefix, wire)| name.strip_prefix(prefix).map(|served| (wire, served.to_owned())));
    let chat = openai.is_some();
    let (model, name): (Arc<dyn crate::model::Model>, String) = match openai {
        // OpenAI's protocols at OPENAI_BASE_URL.
        Some((wire, served)) => {
            crate::model::check_model_name(&served).map_err(ResolveError::BadModel)?;
            (openai_model(args, wire, None)?, served)
        }
        None => {
            let mut config = AnthropicConfig::from_env().map_err(ResolveError::ModelSetup)?;
            if let Some(secs) = args.stream_idle_timeout {
                config.idle_timeout = Duration::from_secs_f64(secs);
            }
            (Arc::new(AnthropicModel::new(config).map_err(ResolveError::ModelSetup)?), name)
        }
    };
    let mut options = EngineOptions { model: name, run_id: new_run_id(), ..EngineOptions::default() };
    // A Chat Completions server serves the model it was started with: the tools' side
    // requests go to that one too.
    options.small_model = if chat { options.model.clone() } else { crate::model::side::small_model_from_env() };
    Ok(RunSpec {
        prompt: String::new(),
        session: Session::in_memory(crate::session::Uuid::new_v4(), cwd.clone()),
        tools: Registry::standard(),
        agents: Arc::default(),
        memory: Arc::default(),
        skills: Arc::default(),
        partial_messages: false,
        mcp: crate::mcp::startup::Startup::default(),
        sandbox: crate::sandbox::Sandbox::none(),
        setting_sources: crate::settings::SettingSources::none(),
        commands: Arc::default(),
        output_styles: OutputStyles::built_in(),
        output_style: ChosenStyle::default(),
        cwd,
        options,
        model,
        scripted: None,
        ask_context_window: true,
        settings: Settings::default(),
        policy: Policy::default(),
        trace: args.trace.options(),
        format: args.output_format.into(),
        cancel,
    })
}

/// The settings of `--setting-sources` and `--settings` ([`crate::settings::load`]), and the
/// commands and output styles of those sources; warnings go to stderr. A scripted scenario
/// keeps its own settings unless either flag is given.
fn load_settings(spec: &mut RunSpec, args: &RunFlags) -> Result<(), ResolveError> {
    use crate::settings::{ConfigDirs, SettingSources};
    let sources = match (&spec.scripted, args.setting_sources.as_deref()) {
        (Some(_), None) => SettingSources::none(),
        (_, flag) => SettingSources::parse(flag)?,
    };
    let dirs = ConfigDirs::from_env(&spec.cwd);
    let loaded = crate::settings::load(&sources, &dirs, args.settings.as_deref())?;
    let mut warnings = loaded.warnings;
    if spec.scripted.is_none() || args.settings.is_some() || args.setting_sources.is_some() {
        spec.settings = loaded.settings;
    }
    crate::model::anthropic::pricing::set_user_prices(
        spec.settings.model_prices.iter().map(|(prefix, price)| (prefix.clone(), price.to_price())).collect(),
    );
    let (commands, more) = crate::commands::Commands::discover(&sources, &dirs);
    warnings.extend(more);
    let (styles, more) = OutputStyles::discover(&sources, &dirs);
    warnings.extend(more);
    let (style, more) = styles.choose(spec.settings.output_style.as_deref());
    warnings.extend(more);
    for warning in warnings {
        eprintln!("agentloop: warning: {warning}");
    }
    let (mut agents, more) =
        crate::agents::Agents::discover(&sources, &dirs, args.agents.as_deref()).map_err(ResolveError::Agents)?;
    if spec.scripted.is_some() {
        // The scenario's own definitions, below the flag's and the files'.
        for definition in spec.agents.iter().filter(|d| d.source != crate::agents::AgentSource::BuiltIn) {
            if agents.get(&definition.name).is_none() {
                agents.insert(definition.clone());
            }
        }
    }
    for warning in more {
        eprintln!("agentloop: warning: {warning}");
    }
    spec.agents = Arc::new(agents);
    let roots = crate::context::memory::MemoryRoots::from_env();
    let memory = crate::context::memory::Memory::discover(&sources, &dirs, &roots);
    let (nested, more) = crate::context::memory::nested::NestedMemory::new(&memory, &sources, &dirs, &roots);
    for warning in memory.warnings.iter().chain(&more) {
        eprintln!("agentloop: warning: memory: {warning}");
    }
    spec.session.nested_memory = Arc::new(nested);
    spec.options.memory = memory.section().map(std::sync::Arc::from);
    // The scripted model is a test double: its runs carry no environment, so a scenario's
    // requests (and the token figures estimated from them) are the same on every machine.
    if spec.scripted.is_none() {
        let (environment, git) = crate::context::environment::take(&spec.cwd);
        spec.options.environment = Some(Arc::from(environment));
        spec.options.git_snapshot = git.map(Arc::from);
    }
    spec.memory = Arc::new(memory);
    spec.tools = crate::launch::spec::session_tools(&spec.agents);
    let (skills, more) = crate::tools::skill::Skills::discover(&sources, &dirs);
    for warning in more {
        eprintln!("agentloop: warning: {warning}");
    }
    spec.skills = Arc::new(skills);
    if !spec.skills.is_empty() {
        spec.tools.register(Arc::new(crate::tools::skill::SkillTool::new(spec.skills.clone())));
    }
    spec.setting_sources = sources;
    spec.commands = Arc::new(commands);
    spec.output_styles = styles;
    spec.output_style = style;
    Ok(())
}

/// `--tools`: the tools of `all` named (comma-separated), `default` for all, "" for none.
fn tool_subset(names: &str, all: &Registry) -> Result<Registry, ResolveError> {
    if names.trim() == "default" {
        return Ok(all.clone());
    }
    let mut chosen = Registry::new();
    for name in names.split([',', ' ']).map(str::trim).filter(|n| !n.is_empty()) {
        let tool = all.get(name).ok_or_else(|| ResolveError::UnknownTool {
            name: name.to_owned(),
            known: all.definitions().into_iter().map(|d| d.name).collect(),
        })?;
        chosen.register(tool);
    }
    Ok(chosen)
}

/// The flags' options; `style` joins agentloop's default system prompt when no system prompt
/// is given (an empty `--system-prompt` keeps the default prompt, without the style).
fn apply_flags(
    options: &mut EngineOptions,
    args: &RunFlags,
    style: Option<&output_style::OutputStyle>,
) -> Result<(), ResolveError> {
    match (&args.system_prompt, &args.system_prompt_file) {
        (Some(text), _) if !text.is_empty() => options.system = text.clone(),
        (_, Some(path)) => {
            options.system = std::fs::read_to_string(path)
                .map_err(|error| ResolveError::SystemPromptFile { path: path.clone(), error })?;
        }
        (None, None) => {
            if let Some(style) = style
                && crate::engine::options::is_default_system_prompt(&options.system)
            {
                options.system = output_style::system_prompt(style);
            }
        }
        _ => {}
    }
    if let Some(extra) = &args.append_system_prompt {
        options.system = format!("{}\n\n{extra}", options.system);
    }
    if let Some(n) = args.max_turns {
        options.max_turns = Some(n);
    }
    if let Some(n) = args.context_window {
        options.context_window = n;
    }
    // The name holds `TOKEN`: the variable is among those `credentials` took out of the environment.
    options.thinking_budget = thinking_budget(args, crate::credentials::var("MAX_THINKING_TOKENS").as_deref())?;
    options.max_output_tokens = output_cap(args, crate::credentials::var("CLAUDE_CODE_MAX_OUTPUT_TOKENS").as_deref())?
        .or(options.max_output_tokens);
    if let Some(n) = args.token_budget {
        options.token_budget = Some(n);
    }
    if let Some(usd) = args.max_budget_usd {
        options.max_budget_usd = Some(usd);
    }
    if let Some(text) = &args.json_schema {
        options.json_schema = Some(json_schema(text)?);
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
    Ok(())
}

/// The schema of `--json-schema`: JSON text, checked once.
fn json_schema(text: &str) -> Result<Arc<crate::json_schema::Schema>, ResolveError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(ResolveError::JsonSchemaSyntax)?;
    crate::json_schema::Schema::compile(&value).map(Arc::new).map_err(ResolveError::JsonSchema)
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

/// Execute a resolved run; returns the exit status. A prompt `/NAME ARGUMENTS` naming a custom
/// command runs that command's prompt, on its model, with its `allowed-tools`.
pub async fn execute(mut spec: RunSpec) -> ExitStatus {
    let started = Instant::now();
    let invocation = spec.commands.find(&spec.prompt).map(|(command, arguments)| command.invoke(arguments));
    if let Some(invocation) = &invocation {
        let (policy, warnings) = invocation.apply(&mut spec.options, &spec.policy);
        spec.policy = policy;
        for warning in warnings {
            stderr::line(&format!("agentloop: warning: {warning}"));
        }
    }
    let mut trace = match spec.trace.writer() {
        Ok(t) => t,
        Err(message) => {
            eprintln!("agentloop: {message}");
            return ExitStatus::Usage;
        }
    };
    if let Some(t) = &mut trace
        && let Err(e) = t.header(&TraceHeader {
            sandbox: Some(spec.sandbox.status()),
            memory_files: spec.memory.files.clone(),
            memory_warnings: spec.memory.warnings.clone(),
            recovered_calls: spec.session.recovered.clone(),
            ..header(&spec.options)
        })
    {
        eprintln!("agentloop: cannot write the trace: {e}");
        return ExitStatus::Usage;
    }
    let session_id = spec.options.run_id.clone();
    let trace_on_stderr = trace.is_some() && spec.trace.file.is_none();
    let stdout = Stdout::cancelling(spec.cancel.clone());
    let mut sink = OutputSink::new(trace, spec.format, session_id.clone(), stdout.clone());
    sink.model = spec.options.model.clone();
    sink.partial_messages = spec.format == OutputFormat::StreamJson && spec.partial_messages;
    let api_ms = sink.api_ms.clone();
    // The pretty trace already shows each tool's start and end; don't print them twice.
    sink.pretty_trace_on_stderr = trace_on_stderr && spec.trace.format != Some(TraceFormat::Jsonl);
    sink.show_tools &= !sink.pretty_trace_on_stderr;
    if let Some(scripted) = spec.scripted.clone() {
        let at_stop_hooks = scripted.clone();
        sink.on_tool_phase = Some(Arc::new(move || scripted.tool_phase_started()));
        sink.on_stop_hooks = Some(Arc::new(move || at_stop_hooks.stop_hooks_started()));
    }
    let mut tools = spec.tools.clone();
    let mut mcp_status = Vec::new();
    if !spec.mcp.is_empty() {
        // The servers started with the preparation; the run needs their tools now. A signal
        // meanwhile ends the command (their process groups die with their connections).
        let connecting = spec.mcp.finish(&mut tools);
        let cancel = spec.cancel.clone();
        let guarded = async move {
            tokio::select! {
                statuses = connecting => statuses,
                () = cancel.cancelled() => Vec::new(),
            }
        };
        let (statuses, stop) = supervise(guarded, &spec.cancel, &stdout).await;
        if let Some(stop) = stop {
            return stop.exit_status();
        }
        mcp_status = statuses;
    }
    if spec.format == OutputFormat::StreamJson {
        let names: Vec<String> = tools.definitions().into_iter().map(|d| d.name).collect();
        let mut init =
            system_init(&session_id, &spec.cwd, &spec.options.model, &names, spec.policy.mode().as_str(), &mcp_status)
                .with_sandbox(&spec.sandbox, spec.policy.mode())
                .with_commands(&spec.commands.slash_commands(), &spec.output_style.name);
        init["agents"] = serde_json::json!(spec.agents.names());
        init["memory_files"] = serde_json::json!(spec.memory.files);
        init["skills"] = serde_json::json!(spec.skills.names());
        stdout.line(&init.to_string());
    }
    let deps = Deps {
        model: spec.model,
        tools,
        hooks: Arc::new(CommandHooks::new(spec.settings.hooks)),
        effects: Arc::new(SystemClock::new()),
        cancel: spec.cancel.clone(),
        cwd: spec.cwd,
        policy: Arc::new(spec.policy),
        shell_env: Arc::new(ShellEnv::inherited(&spec.settings.shell_environment.keep)),
        sandbox: spec.sandbox.clone(),
        approver: Arc::new(crate::permissions::Unattended),
    };
    let mut session = spec.session;
    let running = async {
        let prompt = match &invocation {
            Some(invocation) => {
                let prompt = invocation.resolve(&deps, &session).await;
                for warning in prompt.warnings {
                    stderr::line(&format!("agentloop: warning: {warning}"));
                }
                prompt.text
            }
            None => spec.prompt.clone(),
        };
        run_prompt(&mut session, deps, spec.options, &prompt, Box::new(sink)).await
    };
    let (result, stop) = supervise(running, &spec.cancel, &stdout).await;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            stderr::line(&format!("agentloop: internal error: {e}"));
            return ExitStatus::Internal;
        }
    };
    match spec.format {
        OutputFormat::Text => {}
        OutputFormat::Json | OutputFormat::StreamJson => {
            let api = api_ms.load(std::sync::atomic::Ordering::Relaxed);
            stdout.line(
                &with_structured_output(result_object(&outcome, &session_id, started, api), &outcome).to_string(),
            );
        }
    }
    let stop = stop.or(stdout.is_closed().then_some(Stop::ClosedStdout));
    if let Some(error) = &outcome.error
        && stop != Some(Stop::ClosedStdout)
    {
        stderr::line(&format!("agentloop: ended with {}: {error}", outcome.terminal));
    }
    match stop {
        Some(Stop::ClosedStdout) => stdout.closed_exit_status(),
        Some(stop) => stop.exit_status(),
        None => ExitStatus::of(outcome.terminal),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        flags: RunFlags,
    }

    #[test]
    fn the_output_cap_comes_from_the_flag_then_the_environment() {
        let flags = |args: &[&str]| Flags::try_parse_from(std::iter::once("agentloop").chain(args.iter().copied()));
        let cap = |args: &[&str], env: Option<&str>| output_cap(&flags(args).unwrap().flags, env);
        assert_eq!(cap(&["--max-output-tokens", "4096"], Some("100")).unwrap(), Some(4096));
        assert_eq!(cap(&[], Some(" 8000 ")).unwrap(), Some(8000));
        assert_eq!(cap(&[], None).unwrap(), None);
        assert_eq!(
            cap(&[], Some("lots")).unwrap_err().to_string(),
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS=lots: not a positive number of tokens"
        );
        assert!(flags(&["--max-output-tokens", "0"]).is_err());
    }

    /// The budget the flags `args` and `MAX_THINKING_TOKENS=env` ask for.
    fn budget(args: &[&str], env: Option<&str>) -> Result<Option<u32>, ResolveError> {
        let parsed = Flags::try_parse_from(std::iter::once("agentloop").chain(args.iter().copied())).unwrap();
        thinking_budget(&parsed.flags, env)
    }

    #[test]
    fn thinking_comes_from_the_flags_then_the_environment() {
        assert_eq!(budget(&[], None).unwrap(), None);
        assert_eq!(budget(&[], Some("8000")).unwrap(), Some(8000));
        assert_eq!(budget(&[], Some("0")).unwrap(), None);
        assert_eq!(budget(&["--max-thinking-tokens", "3000"], Some("8000")).unwrap(), Some(3000));
        assert_eq!(budget(&["--thinking", "adaptive"], None).unwrap(), Some(u32::MAX));
        assert_eq!(budget(&["--thinking", "enabled", "--max-thinking-tokens", "2048"], None).unwrap(), Some(2048));
        assert_eq!(budget(&["--thinking", "disabled", "--max-thinking-tokens", "3000"], Some("8000")).unwrap(), None);
        assert_eq!(
            budget(&[], Some("lots")).unwrap_err().to_string(),
            "MAX_THINKING_TOKENS=lots: not a number of tokens"
        );
    }
}

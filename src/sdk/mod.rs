//! The Claude Agent SDK mode: `agentloop --input-format stream-json --output-format
//! stream-json`, the command line the SDK launches its CLI with.
//!
//! Both directions are newline-delimited JSON. From the SDK: `initialize` (which registers its
//! hook callbacks), user messages — each one a prompt on the same session, run one after the
//! other; `/NAME ARGUMENTS` runs a custom command ([`crate::commands`]) — and control requests
//! (`interrupt`, `set_permission_mode`, `set_model`, `mcp_status`; any other gets an error
//! answer, never silence). To the SDK: the answers, `system/init`, the
//! conversation's messages, one `result` per prompt, and agentloop's own control requests
//! (`hook_callback`, `can_use_tool`, `mcp_message` for the SDK's in-process MCP servers,
//! [`crate::mcp::sdk`], and `elicitation` for an MCP server's question to the user,
//! [`elicit`]), whose answers the stdin reader hands to [`control::Controller`].
//!
//! An interrupt cancels the current prompt through the engine's abort edges; the process
//! stays up for the next one. After stdin closes, the prompts already received run to their
//! end and the process exits.

pub mod approver;
pub mod control;
pub mod elicit;
pub mod info;
pub mod reset;
pub mod wire;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::engine::clock::SystemClock;
use crate::engine::machine::Deps;
use crate::engine::options::EngineOptions;
use crate::engine::run::{EngineError, Prompt, RunOutcome, run_prompt_with};
use crate::engine::session::Session;
use crate::hooks::command::CommandHooks;
use crate::hooks::settings::Settings;
use crate::hooks::settings::{HookCommand, HookKind, HookMatcher, HookTable, ToolMatcher};
use crate::launch::ExitStatus;
use crate::launch::output::{
    Ending, OutputSink, PROTOCOL_VERSION, WithCommands, WithSandbox, result_object, system_init, with_structured_output,
};
use crate::launch::signals::{Signals, Stop};
use crate::launch::spec::{OutputFormat, RunSpec};
use crate::launch::stdio::Stdout;
use crate::model::Model;
use crate::permissions::Mode;
use crate::permissions::approver::Approver;
use crate::permissions::{Policy, Unattended};
use crate::stderr;
use crate::tools::Registry;
use crate::tools::shell_env::ShellEnv;
use control::Controller;
use wire::Inbound;

type Running = Pin<
    Box<dyn Future<Output = (Session, Result<RunOutcome, EngineError>, Instant, Arc<std::sync::atomic::AtomicU64>)>>,
>;

/// What the SDK mode takes from the command line besides the run itself.
#[derive(Debug, Clone, Default)]
pub struct SdkOptions {
    /// `--session-mirror`: print each transcript line as a `transcript_mirror` frame.
    pub session_mirror: bool,
    /// `--permission-prompt-tool`: `stdio` asks the SDK when a permission decision is "ask".
    pub permission_prompt_tool: Option<String>,
    /// `--replay-user-messages`: echo each user message as its prompt starts.
    pub replay_user_messages: bool,
}

/// Serve the SDK on stdin and stdout until stdin closes and every prompt received has run.
/// Returns the exit status: 0, 1 when the last result was an error (as Claude Code exits),
/// or [`ExitStatus::Internal`] when the engine failed.
pub async fn serve(spec: RunSpec, flags: SdkOptions) -> ExitStatus {
    if spec.format != OutputFormat::StreamJson {
        eprintln!(
            "agentloop: warning: --input-format stream-json answers in stream-json whatever --output-format says"
        );
    }
    // Losing stdout ends the session: the running prompt is cancelled inside the failed write
    // (each prompt's token is a child of this one), so no further tool call of it starts.
    let session_gone = CancellationToken::new();
    let stdout = Stdout::cancelling(session_gone.clone());
    let controller = Arc::new(Controller::new(stdout.clone()));
    let (tx, mut rx) = mpsc::unbounded_channel();
    // The reader answers agentloop's own requests itself: the SDK servers' start and a
    // prompt's permission questions wait for those answers while this loop may be waiting
    // for them.
    tokio::spawn(read_stdin(tx, controller.clone()));
    let (mut host, session) = Host::new(spec, &flags, stdout.clone(), controller.clone());
    let mut session = Some(session);
    let mut queue: VecDeque<(Prompt, Value)> = VecDeque::new();
    // The prompt that runs: its result echoes its `origin` and uuid.
    let mut current: Option<Prompt> = None;
    let mut input_open = true;
    let mut running: Option<Running> = None;
    // Session titles being asked of the model.
    let mut titles = futures::stream::FuturesUnordered::new();
    let mut cancel = CancellationToken::new();
    let mut failed = false;
    // Claude Code exits 1 when the last result it reported was an error (the SDKs raise their
    // `ResultError` only then), 0 otherwise.
    let mut last_result_failed = false;
    // A signal ends the current prompt through its abort edges (its tools' process groups are
    // killed, its transcript stays consistent) and drops the prompts not yet started; a second
    // one exits at once.
    let mut signals = Signals::install().ok();
    let mut stopped: Option<Stop> = None;

    loop {
        if running.is_none() {
            if let Some((prompt, frame)) = queue.pop_front() {
                if reset::is_clear(&prompt.text) {
                    let old = session.take().expect("the session is back whenever no prompt runs");
                    session = Some(host.clear(old, &prompt));
                    continue;
                }
                // The first prompt needs the MCP servers' tools: they started with the process.
                host.servers_ready().await;
                let idle = session.take().expect("the session is back whenever no prompt runs");
                cancel = session_gone.child_token();
                running = Some(host.start(idle, prompt.clone(), &frame, cancel.clone()));
                current = Some(prompt);
            } else if !input_open {
                break;
            }
        }
        tokio::select! {
            signal = async { signals.as_mut().expect("guarded").next().await }, if signals.is_some() => {
                if stopped.is_some() {
                    crate::process_group::kill_all();
                    return signal.exit_status();
                }
                stderr::line(&format!("agentloop: {}", signal.describe()));
                stopped = Some(signal);
                cancel.cancel();
                queue.clear();
                input_open = false;
                controller.close();
            }
            () = stdout.closed(), if stopped.is_none() => {
                // Nobody reads the answers any more: the prompts not started are dropped and
                // the session ends once the running one has taken its abort edges.
                stopped = Some(Stop::ClosedStdout);
                queue.clear();
                input_open = false;
                controller.close();
            }
            Some(()) = futures::StreamExt::next(&mut titles), if !titles.is_empty() => {}
            frame = rx.recv(), if input_open => match frame {
                None => {
                    input_open = false;
                    controller.close();
                }
                Some(Inbound::User { prompt, frame }) => queue.push_back((prompt, frame)),
                // Routed by the reader; never forwarded.
                Some(Inbound::Response(_)) => {}
                Some(Inbound::Request { id, request }) => {
                    match request.get("subtype").and_then(Value::as_str) {
                        Some("mcp_status") => host.servers_if_ready().await,
                        // Asked of the model: answered when it has answered, the loop going on.
                        Some("generate_session_title") => {
                            titles.push(host.title(id, &request));
                            continue;
                        }
                        _ => {}
                    }
                    stdout.line(&host.answer(&id, &request, &cancel).to_string());
                }
                Some(Inbound::Ignored(_)) => {}
                Some(Inbound::Bad(why)) => stderr::line(&format!("agentloop: warning: ignored a line of stdin: {why}")),
            },
            (done, result, started, api_ms) = async { running.as_mut().expect("guarded").await }, if running.is_some() => {
                running = None;
                match result {
                    Ok(outcome) => {
                        let api = api_ms.load(std::sync::atomic::Ordering::Relaxed);
                        last_result_failed = Ending::of(outcome.terminal).is_error;
                        let mut result = result_object(&outcome, &done.id.to_string(), started, api);
                        let delegated: f64 = outcome.delegated.iter().map(|(_, _, cost)| cost).sum();
                        host.model_usage.add(&host.options.model, &outcome.usage, outcome.cost_usd - delegated);
                        for (model, usage, cost) in &outcome.delegated {
                            host.model_usage.add(model, usage, *cost);
                        }
                        result["modelUsage"] = host.model_usage.to_json(host.options.context_window);
                        if let Some(prompt) = current.take() {
                            echo_prompt(&mut result, &prompt);
                        }
                        stdout.line(&with_structured_output(result, &outcome).to_string());
                    }
                    Err(e) => {
                        stderr::line(&format!("agentloop: internal error: {e}"));
                        failed = true;
                    }
                }
                host.history_tokens = crate::context::estimate_tokens_of_chars(done.messages.chars());
                session = Some(done);
            }
        }
    }
    let stopped = stopped.or(stdout.is_closed().then_some(Stop::ClosedStdout));
    match (failed, stopped) {
        (true, _) => ExitStatus::Internal,
        (false, Some(Stop::ClosedStdout)) => stdout.closed_exit_status(),
        (false, Some(signal)) => signal.exit_status(),
        (false, None) => ExitStatus::failure_if(last_result_failed),
    }
}

/// What every prompt of the SDK session runs with, and what the SDK's control requests
/// change: the model, the hooks (callbacks registered by `initialize`), the permission mode.
struct Host {
    stdout: Stdout,
    controller: Arc<Controller>,
    cwd: std::path::PathBuf,
    options: EngineOptions,
    model: Arc<dyn Model>,
    settings: Settings,
    policy: Policy,
    tools: Registry,
    shell_env: Arc<ShellEnv>,
    sandbox: Arc<crate::sandbox::Sandbox>,
    approver: Arc<dyn Approver>,
    partial_messages: bool,
    /// The MCP servers' start, until the first prompt waits for it.
    mcp: Option<crate::mcp::startup::Startup>,
    /// The configured MCP servers.
    mcp_servers: crate::mcp::Servers,
    /// How each MCP server came up, once they have.
    mcp_status: Option<Vec<crate::mcp::ServerStatus>>,
    /// Whether the SDK servers were given the way to the SDK (at `initialize`, which may
    /// declare more of them, or at the first prompt or `mcp_status` without one).
    sdk_reached: bool,
    /// What the TypeScript SDK's `initialize` told of its servers, by key.
    manifests: std::collections::BTreeMap<String, crate::mcp::sdk::Manifest>,
    /// `--replay-user-messages`.
    replay: bool,
    /// The model the session started with (`set_model` to `default` or null goes back to it).
    default_model: String,
    /// The conversation's estimated tokens when the last prompt ended (`get_context_usage`).
    history_tokens: u64,
    /// What each model used over the session's prompts (the results' `modelUsage`).
    model_usage: info::ModelUsage,
    /// The `PostModelSwitch` callbacks `initialize` registered, run after each `set_model`.
    model_switch_hooks: Vec<String>,
    /// The session's id and transcript, for hook inputs outside a prompt.
    session_id: String,
    transcript_path: Option<std::path::PathBuf>,
    /// The custom slash commands: a prompt `/NAME ARGUMENTS` runs one.
    commands: Arc<crate::commands::Commands>,
    /// The output styles, and the one in force.
    output_styles: crate::context::output_style::OutputStyles,
    output_style: String,
    /// `--session-mirror`: where the transcript lines are copied for the SDK's session store.
    mirror: Option<crate::session::Mirror>,
    /// The subagent definitions (`initialize.agents` adds to them).
    agents: Arc<crate::agents::Agents>,
    /// `initialize.forwardSubagentText`: subagents' text blocks reach stdout too.
    forward_subagent_text: bool,
    /// The memory files loaded, for `system/init`.
    memory: Arc<crate::context::memory::Memory>,
    /// The skills, for `system/init`.
    skills: Arc<crate::tools::skill::Skills>,
}

impl Host {
    /// The host of `spec`'s run, and its session. The MCP servers go on starting in the
    /// background until the first prompt waits for them ([`Host::servers_ready`]): their
    /// tools join the built-in ones for every prompt.
    fn new(spec: RunSpec, flags: &SdkOptions, stdout: Stdout, controller: Arc<Controller>) -> (Host, Session) {
        let mirror = flags.session_mirror.then(|| transcript_mirror(&stdout));
        let RunSpec {
            cwd,
            options,
            model,
            settings,
            mut policy,
            session,
            tools,
            mcp,
            sandbox,
            commands,
            output_styles,
            output_style,
            partial_messages,
            agents,
            memory,
            skills,
            ..
        } = spec;
        let mcp_servers = mcp.servers().clone();
        // `--permission-prompt-tool stdio` puts the questions to the SDK; otherwise nobody is asked.
        let approver: Arc<dyn Approver> = match flags.permission_prompt_tool.as_deref() {
            Some("stdio") => {
                // The MCP servers' questions to the user go to the SDK too ([`elicit`]).
                crate::mcp::elicitation::process().answer_with(Arc::new(elicit::SdkAsker::new(controller.clone())));
                // Someone can be asked: a path outside the working directory is a question.
                policy = policy.asking_outside();
                Arc::new(approver::SdkApprover::new(controller.clone()))
            }
            Some(other) => {
                stderr::line(&format!(
                    "agentloop: warning: --permission-prompt-tool {other} is not supported (only stdio)"
                ));
                Arc::new(Unattended)
            }
            None => Arc::new(Unattended),
        };
        let shell_env = Arc::new(ShellEnv::inherited(&settings.shell_environment.keep));
        let host = Host {
            stdout,
            controller,
            cwd,
            model,
            settings,
            policy,
            tools,
            shell_env,
            sandbox,
            approver,
            partial_messages,
            mcp: Some(mcp),
            mcp_servers,
            mcp_status: None,
            sdk_reached: false,
            manifests: Default::default(),
            replay: flags.replay_user_messages,
            default_model: options.model.clone(),
            history_tokens: crate::context::estimate_tokens_of_chars(session.messages.chars()),
            model_usage: info::ModelUsage::default(),
            model_switch_hooks: Vec::new(),
            session_id: session.id.to_string(),
            transcript_path: session.transcript.as_ref().map(|t| t.path().to_path_buf()),
            options,
            commands,
            output_styles,
            output_style: output_style.name,
            mirror,
            agents,
            forward_subagent_text: false,
            memory,
            skills,
        };
        let mut session = session;
        let new = session.messages.is_empty();
        host.mirror(&mut session, new);
        (host, session)
    }

    /// With `--session-mirror`, copy `session`'s transcript lines to the SDK from now on
    /// (with `existing`, the lines already written too).
    fn mirror(&self, session: &mut Session, existing: bool) {
        if let (Some(mirror), Some(writer)) = (&self.mirror, session.transcript.as_mut())
            && let Err(e) = writer.mirror_to(mirror.clone(), existing)
        {
            stderr::line(&format!("agentloop: warning: the transcript is not mirrored to the SDK: {e}"));
        }
    }

    /// Start the SDK servers (once), reaching them through control requests; those the
    /// TypeScript SDK described in `initialize` are answered from their manifests.
    fn reach_sdk(&mut self) {
        if std::mem::replace(&mut self.sdk_reached, true) {
            return;
        }
        if let Some(startup) = &mut self.mcp {
            let channel = crate::mcp::sdk::ManifestChannel::new(self.controller.clone(), self.manifests.clone());
            startup.reach_sdk(Arc::new(channel));
        }
    }

    /// Add the in-process servers `initialize` declares (`sdkMcpServers`: their keys, with
    /// `sdkMcpServerManifests`: what each answers to `initialize` and `tools/list`), as the
    /// TypeScript SDK declares them, to those of `--mcp-config`.
    fn declare_sdk_servers(&mut self, request: &Value) {
        let keys: Vec<&str> = request
            .get("sdkMcpServers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if keys.is_empty() {
            return;
        }
        let manifests = request.get("sdkMcpServerManifests");
        let mut servers = crate::mcp::Servers::new();
        for key in keys {
            let manifest =
                crate::mcp::sdk::Manifest::from_value(manifests.and_then(|m| m.get(key)).unwrap_or(&Value::Null));
            let name = manifest
                .initialize
                .as_ref()
                .and_then(|i| i.pointer("/serverInfo/name"))
                .and_then(Value::as_str)
                .unwrap_or(key)
                .to_owned();
            self.manifests.insert(key.to_owned(), manifest);
            servers.insert(key.to_owned(), crate::mcp::ServerConfig::Sdk { name });
        }
        if self.mcp.as_mut().is_some_and(|startup| startup.add(servers.clone())) {
            self.mcp_servers.extend(servers);
        } else {
            stderr::line("agentloop: warning: the SDK servers of a second initialize are not started");
        }
    }

    /// Wait until the MCP servers are up (or failed), once: their tools join the others.
    async fn servers_ready(&mut self) {
        self.reach_sdk();
        if let Some(startup) = self.mcp.take() {
            self.mcp_status = Some(startup.finish(&mut self.tools).await);
        }
    }

    /// Take the MCP servers' statuses and tools if they have all come up (or failed), without
    /// waiting for those still starting.
    async fn servers_if_ready(&mut self) {
        self.reach_sdk();
        if self.mcp.as_ref().is_some_and(crate::mcp::startup::Startup::is_finished) {
            self.servers_ready().await;
        }
    }

    /// `/clear`: `old` is replaced by a fresh session (its background shells are stopped with
    /// it). Prints `conversation_reset` for the old session, `system/init` of the new one and
    /// the command's result, and returns the new session.
    fn clear(&mut self, old: Session, prompt: &Prompt) -> Session {
        let meta = crate::session::SessionMeta {
            model: self.options.model.clone(),
            table_sha256: self.options.table().sha256.clone(),
            permission_mode: self.policy.mode().as_str().to_owned(),
        };
        let mut fresh = reset::fresh_session(&old, &meta);
        self.mirror(&mut fresh, true);
        let started = Instant::now();
        self.stdout.line(
            &reset::reset_frame(&old.id.to_string(), prompt.uuid.unwrap_or_else(crate::session::Uuid::new_v4))
                .to_string(),
        );
        drop(old);
        self.options.run_id = fresh.id.to_string();
        self.stdout.line(&self.init_line(&fresh.id.to_string(), &self.options.model).to_string());
        let outcome = RunOutcome {
            terminal: crate::engine::reason::TerminalReason::Completed,
            error: None,
            messages: Vec::new(),
            final_text: String::new(),
            usage: crate::engine::state::UsageTotals::default(),
            model_calls: 0,
            cost_usd: 0.0,
            unpriced_models: Vec::new(),
            turns: 0,
            trace: Vec::new(),
            api_failure: None,
            permission_denials: Vec::new(),
            delegated: Vec::new(),
            subagents: None,
            structured_output: None,
        };
        let mut result = result_object(&outcome, &fresh.id.to_string(), started, 0);
        result["local_command"] = json!("clear");
        echo_prompt(&mut result, prompt);
        self.stdout.line(&result.to_string());
        fresh
    }

    /// The `system/init` line of a prompt of session `id` on `model`.
    fn init_line(&self, id: &str, model: &str) -> Value {
        let names: Vec<String> = self.tools.definitions().into_iter().map(|d| d.name).collect();
        let mode = self.policy.mode().as_str();
        let statuses = self.mcp_status.as_deref().unwrap_or_default();
        let mut init = system_init(id, &self.cwd, model, &names, mode, statuses)
            .with_sandbox(&self.sandbox, self.policy.mode())
            .with_commands(&self.commands.slash_commands(), &self.output_style);
        init["agents"] = json!(self.agents.names());
        init["memory_files"] = json!(self.memory.files);
        init["skills"] = json!(self.skills.names());
        init
    }

    /// Print `system/init` (and, with `--replay-user-messages`, the echo of the user message
    /// `frame`) and start `prompt` on `session`; the future gives the session back with the
    /// outcome. A prompt `/NAME ARGUMENTS` naming a custom command runs that command's
    /// prompt, on its model, with its `allowed-tools`.
    fn start(&self, mut session: Session, prompt: Prompt, frame: &Value, cancel: CancellationToken) -> Running {
        let invocation = self.commands.find(&prompt.text).map(|(command, arguments)| command.invoke(arguments));
        let mut options = self.options.clone();
        let mut policy = self.policy.clone();
        if let Some(invocation) = &invocation {
            let warnings;
            (policy, warnings) = invocation.apply(&mut options, &self.policy);
            for warning in warnings {
                stderr::line(&format!("agentloop: warning: {warning}"));
            }
        }
        let deps = Deps {
            model: self.model.clone(),
            tools: self.tools.clone(),
            hooks: Arc::new(CommandHooks::with_callbacks(self.settings.hooks.clone(), self.controller.clone())),
            effects: Arc::new(SystemClock::new()),
            cancel,
            cwd: self.cwd.clone(),
            policy: Arc::new(policy),
            shell_env: self.shell_env.clone(),
            sandbox: self.sandbox.clone(),
            approver: self.approver.clone(),
        };
        let id = session.id.to_string();
        self.stdout.line(&self.init_line(&id, &options.model).to_string());
        if self.replay {
            self.stdout.line(&wire::replay(frame, &id).to_string());
        }
        let mut sink = OutputSink::new(None, OutputFormat::StreamJson, id, self.stdout.clone());
        sink.model = options.model.clone();
        sink.skip_prompt_line = true;
        sink.partial_messages = self.partial_messages;
        sink.forward_subagent_text = self.forward_subagent_text;
        let api_ms = sink.api_ms.clone();
        Box::pin(async move {
            let started = Instant::now();
            let prompt = match &invocation {
                Some(invocation) => {
                    let resolved = invocation.resolve(&deps, &session).await;
                    for warning in resolved.warnings {
                        stderr::line(&format!("agentloop: warning: {warning}"));
                    }
                    Prompt { text: resolved.text, ..prompt }
                }
                None => prompt,
            };
            let result = run_prompt_with(&mut session, deps, options, &prompt, Box::new(sink)).await;
            (session, result, started, api_ms)
        })
    }

    /// The answer to the SDK's control request `id`; `cancel` is the running prompt's.
    fn answer(&mut self, id: &str, request: &Value, cancel: &CancellationToken) -> Value {
        match request.get("subtype").and_then(Value::as_str).unwrap_or("") {
            "initialize" => match self.initialize(request) {
                Ok(response) => wire::success(id, response),
                Err(e) => wire::error(id, &e.to_string()),
            },
            "interrupt" => {
                cancel.cancel();
                // Prompts queue here only after the running one: none is dropped.
                wire::success(id, json!({"still_queued": []}))
            }
            "set_permission_mode" => match request.get("mode").and_then(Value::as_str).map(str::parse::<Mode>) {
                Some(Ok(mode)) => {
                    // Shared by the running prompt's policy: it applies at once.
                    self.policy.set_mode(mode);
                    wire::success(id, json!({"mode": mode.as_str()}))
                }
                Some(Err(e)) => wire::error(id, &e.to_string()),
                None => wire::error(id, "set_permission_mode needs a `mode`"),
            },
            "set_model" => {
                let requested = request.get("model").and_then(Value::as_str);
                let to = match requested {
                    None | Some("default") => self.default_model.clone(),
                    Some(name) => match crate::model::check_model_name(name) {
                        Ok(()) => name.to_owned(),
                        Err(e) => return wire::error(id, &e),
                    },
                };
                let from = std::mem::replace(&mut self.options.model, to.clone());
                self.model_switched(&from, &to, requested);
                wire::success(id, json!({"model": requested.map_or("default", |_| to.as_str())}))
            }
            "mcp_status" => wire::success(
                id,
                crate::mcp::status::response(&self.mcp_servers, self.mcp_status.as_deref(), &self.tools),
            ),
            "get_settings" => wire::success(id, info::settings(&self.settings.permissions, &self.options.model)),
            "get_context_usage" => {
                let tools = self.tools.definitions();
                let parts = info::ContextParts {
                    model: &self.options.model,
                    window: self.options.context_window,
                    system_chars: self.options.system_prompt_len(),
                    tools: &tools,
                    messages: self.history_tokens,
                };
                wire::success(id, info::context_usage(&parts))
            }
            other => wire::error(id, &format!("agentloop does not support the `{other}` control request")),
        }
    }

    /// Answer `generate_session_title` (`description`): the future writes the answer once the
    /// model has named the session.
    fn title(&self, id: String, request: &Value) -> Pin<Box<dyn Future<Output = ()>>> {
        let description = request.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
        let (model, name, stdout) = (self.model.clone(), self.options.model.clone(), self.stdout.clone());
        Box::pin(async move {
            let title = info::session_title(model, &name, &description).await;
            stdout.line(&wire::success(&id, json!({"title": title})).to_string());
        })
    }

    /// `initialize`: register the hook callbacks, apply the system prompt the TypeScript SDK
    /// sends here (`systemPrompt`: a list of texts, joined; all empty keeps agentloop's;
    /// `appendSystemPrompt`), add the MCP servers it declares here (`mcpServers`, and its
    /// in-process `sdkMcpServers`), and start the SDK servers. The answer says who answers
    /// and what was applied.
    fn initialize(&mut self, request: &Value) -> Result<Value, InitializeError> {
        register_callbacks(&mut self.settings.hooks, &request["hooks"], &mut self.model_switch_hooks)?;
        let texts: Vec<&str> = match request.get("systemPrompt") {
            Some(Value::String(text)) => vec![text.as_str()],
            Some(Value::Array(texts)) => texts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if texts.iter().any(|t| !t.trim().is_empty()) {
            self.options.system = texts.join("\n\n");
        }
        if let Some(extra) = request.get("appendSystemPrompt").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.options.system = format!("{}\n\n{extra}", self.options.system);
        }
        let mcp_applied = match request.get("mcpServers") {
            Some(servers @ Value::Object(_)) => {
                let config = json!({"mcpServers": servers}).to_string();
                let servers = crate::mcp::config::load(&config, &self.cwd, &crate::mcp::config::env_var)?;
                let added = self.mcp.as_mut().is_some_and(|startup| startup.add(servers.clone()));
                if added {
                    self.mcp_servers.extend(servers);
                }
                Some(added)
            }
            _ => None,
        };
        if let Some(definitions) = request.get("agents").filter(|a| !a.is_null()) {
            let mut agents = (*self.agents).clone();
            for warning in agents.add_json("initialize.agents", definitions, crate::agents::AgentSource::Sdk)? {
                stderr::line(&format!("agentloop: warning: {warning}"));
            }
            self.agents = Arc::new(agents);
            if self.tools.get(crate::agents::AGENT_TOOL).is_some() {
                self.tools.register(Arc::new(crate::agents::AgentTool::new(self.agents.clone())));
            }
        }
        self.forward_subagent_text = request.get("forwardSubagentText").and_then(Value::as_bool).unwrap_or(false);
        self.declare_sdk_servers(request);
        self.reach_sdk();
        let mut response = initialize_response(
            &self.default_model,
            self.policy.mode(),
            &self.commands,
            &self.output_style,
            &self.output_styles.names(),
        );
        if let Some(applied) = mcp_applied {
            response["mcp_servers_applied"] = json!(applied);
        }
        Ok(response)
    }

    /// Run the `PostModelSwitch` callbacks after `set_model` changed the model from `from` to
    /// `to` (`requested`: what was asked for, `None` for the default), without waiting for
    /// them: they can only observe.
    fn model_switched(&self, from: &str, to: &str, requested: Option<&str>) {
        if self.model_switch_hooks.is_empty() || from == to {
            return;
        }
        let input = json!({
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": self.cwd,
            "permission_mode": self.policy.mode().as_str(),
            "hook_event_name": "PostModelSwitch",
            "from_model": from,
            "to_model": to,
            "requested_model": requested,
        });
        for callback in &self.model_switch_hooks {
            let (controller, callback, input) = (self.controller.clone(), callback.clone(), input.clone());
            tokio::spawn(async move {
                use crate::hooks::command::HookCallbacks as _;
                if let Err(e) = controller.call(&callback, &input, None).await {
                    stderr::line(&format!("agentloop: warning: PostModelSwitch hook callback {callback}: {e}"));
                }
            });
        }
    }
}

/// The mirror of `--session-mirror`: each transcript line goes to the SDK's session store as
/// `{"type": "transcript_mirror", "filePath", "entries": [line]}`, as Claude Code sends it.
fn transcript_mirror(stdout: &Stdout) -> crate::session::Mirror {
    let stdout = stdout.clone();
    crate::session::Mirror::new(move |path, line| {
        let Ok(entry) = serde_json::from_slice::<Value>(line) else { return };
        stdout.line(&json!({"type": "transcript_mirror", "filePath": path, "entries": [entry]}).to_string());
    })
}

/// What a prompt's result echoes of it, as Claude Code's does: its `origin`, and the uuid the
/// SDK gave it (`user_message_uuid`, `user_message_uuids`).
fn echo_prompt(result: &mut Value, prompt: &Prompt) {
    if let Some(origin) = &prompt.origin {
        result["origin"] = origin.clone();
    }
    if let Some(uuid) = prompt.uuid {
        result["user_message_uuid"] = json!(uuid.to_string());
        result["user_message_uuids"] = json!([uuid.to_string()]);
    }
}

/// Read stdin line by line into frames; `None` (the channel closing) means EOF. The answers
/// to agentloop's own control requests go straight to `controller`, which is closed at EOF.
///
/// A line that is not UTF-8 is skipped with a warning, as a malformed JSON line is: the
/// session and the prompts after it go on.
async fn read_stdin(tx: mpsc::UnboundedSender<Inbound>, controller: Arc<Controller>) {
    let mut reader = BufReader::new(tokio::io::stdin());
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        match reader.read_until(b'\n', &mut bytes).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(line) = std::str::from_utf8(&bytes) else {
            stderr::line("agentloop: warning: ignored a line of stdin: not UTF-8");
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        let frame = match wire::parse(line) {
            Inbound::Response(response) => {
                if !controller.answer(&response) {
                    stderr::line("agentloop: warning: a control_response answers no request of ours");
                }
                continue;
            }
            other => other,
        };
        if tx.send(frame).is_err() {
            break;
        }
    }
    controller.close();
}

/// What `initialize` answers: the custom `commands`, the output style `style` of `styles`,
/// the session's model ([`info::models`]), the credential in use (`account`, as Claude Code
/// names it), the permission mode, the hooks registered, and who answers.
fn initialize_response(
    model: &str,
    mode: Mode,
    commands: &crate::commands::Commands,
    style: &str,
    styles: &[String],
) -> Value {
    use crate::credentials::Credential;
    let account = match Credential::from_lookup(crate::credentials::var) {
        Credential::ApiKey => {
            json!({"tokenSource": "none", "apiKeySource": "ANTHROPIC_API_KEY", "apiProvider": "firstParty"})
        }
        Credential::AuthToken => json!({"tokenSource": "ANTHROPIC_AUTH_TOKEN", "apiProvider": "firstParty"}),
        Credential::None => json!({"tokenSource": "none", "apiProvider": "firstParty"}),
    };
    json!({
        "commands": commands.initialize_entries(),
        "output_style": style,
        "available_output_styles": styles,
        "models": info::models(model),
        "account": account,
        "pid": std::process::id(),
        "current_permission_mode": mode.as_str(),
        "hooks_applied": true,
        "hook_on_failure_supported": false,
        "claude_code_version": PROTOCOL_VERSION,
        "agentloop_version": env!("CARGO_PKG_VERSION"),
    })
}

/// The hook events the Claude Agent SDK (TypeScript 0.3.333) can register callbacks for.
/// PreToolUse, PostToolUse and Stop run in every prompt and PostModelSwitch after each
/// `set_model`; the others are accepted and never called, agentloop having no such event
/// (no task list, no compaction hooks, no subagent hooks yet: SubagentStart and
/// SubagentStop are not run).
pub const SDK_HOOK_EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "MessageDisplay",
    "PreSkillShellCommand",
];

/// Why the SDK's `initialize` is refused (its error answer says it).
#[derive(Debug, thiserror::Error)]
enum InitializeError {
    /// A hook callback's `matcher` that does not compile.
    #[error("hook matcher `{matcher}`: {error}")]
    Matcher {
        /// The matcher as sent.
        matcher: String,
        /// The regular expression's error.
        error: regex::Error,
    },
    /// Its `mcpServers` are not a configuration.
    #[error(transparent)]
    McpConfig(#[from] crate::mcp::config::ConfigError),
    /// Its `agents` are not an object of agent definitions.
    #[error(transparent)]
    Agents(#[from] crate::agents::DefinitionError),
}

/// Add the hook callbacks `initialize` registers (`{"PreToolUse": [{"matcher": …,
/// "hookCallbackIds": [...], "timeout": …}]}`) to the hook table, after the settings' hooks.
/// `PostModelSwitch` callback ids go to `model_switch`; the other events of
/// [`SDK_HOOK_EVENTS`] are accepted and not run, and an event outside it is named in a
/// warning.
fn register_callbacks(
    table: &mut HookTable,
    hooks: &Value,
    model_switch: &mut Vec<String>,
) -> Result<(), InitializeError> {
    let Some(events) = hooks.as_object() else { return Ok(()) };
    for (event, matchers) in events {
        let groups = match event.as_str() {
            "PreToolUse" => &mut table.pre_tool_use,
            "PostToolUse" => &mut table.post_tool_use,
            "Stop" => &mut table.stop,
            "PostModelSwitch" => {
                let ids = matchers.as_array().into_iter().flatten().filter_map(|m| m.get("hookCallbackIds"));
                model_switch
                    .extend(ids.filter_map(Value::as_array).flatten().filter_map(Value::as_str).map(str::to_owned));
                continue;
            }
            known if SDK_HOOK_EVENTS.contains(&known) => continue,
            other => {
                stderr::line(&format!("agentloop: warning: {other} hook callbacks are not run: no such hook event"));
                continue;
            }
        };
        for m in matchers.as_array().into_iter().flatten() {
            let matcher = match m.get("matcher").and_then(Value::as_str) {
                Some(text) => Some(
                    ToolMatcher::new(text)
                        .map_err(|error| InitializeError::Matcher { matcher: text.to_owned(), error })?,
                ),
                None => None,
            };
            let timeout = m.get("timeout").and_then(Value::as_u64);
            let hooks = m
                .get("hookCallbackIds")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|id| HookCommand { kind: HookKind::Callback, command: id.to_owned(), timeout })
                .collect();
            groups.push(HookMatcher { matcher, hooks });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::reason::TerminalReason;
    use crate::engine::state::UsageTotals;

    /// The recorded Claude Code frame of `type` (and `subtype`, for system frames).
    fn recorded(kind: &str, subtype: Option<&str>) -> Value {
        let path =
            concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/claude-code-protocol/cli-to-sdk.stdout.jsonl");
        let text = std::fs::read_to_string(path).expect("the shared fixtures are checked out beside the repository");
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|f| f["type"] == kind && subtype.is_none_or(|s| f["subtype"] == s))
            .unwrap_or_else(|| panic!("no recorded {kind} frame"))
    }

    /// Every key of `keys` is in both the recorded frame and ours, with the same JSON type.
    fn shares(ours: &Value, theirs: &Value, keys: &[&str]) {
        for key in keys {
            let (a, b) = (&ours[key], &theirs[key]);
            assert!(theirs.get(key).is_some(), "the recording has no `{key}`");
            assert!(ours.get(key).is_some(), "ours has no `{key}`: {ours}");
            let kind = |v: &Value| std::mem::discriminant(v);
            let both_numbers = a.is_number() && b.is_number();
            assert!(both_numbers || kind(a) == kind(b), "`{key}`: ours {a}, recorded {b}");
        }
    }

    /// `system/init` and `result` carry the keys Claude Code's do that the SDK reads, with the
    /// same JSON types.
    #[test]
    fn our_frames_carry_the_recorded_frames_keys() {
        let init =
            system_init("4bdf8843-6342-492b-befa-479c5e1777ac", std::path::Path::new("/p"), "m", &[], "default", &[]);
        let keys = [
            "type",
            "subtype",
            "session_id",
            "uuid",
            "cwd",
            "model",
            "tools",
            "mcp_servers",
            "permissionMode",
            "claude_code_version",
            "apiKeySource",
            "slash_commands",
            "output_style",
        ];
        shares(&init, &recorded("system", Some("init")), &keys);

        let outcome = RunOutcome {
            terminal: TerminalReason::Completed,
            error: None,
            messages: Vec::new(),
            final_text: "Done.".into(),
            usage: UsageTotals::default(),
            model_calls: 2,
            cost_usd: 0.01,
            unpriced_models: Vec::new(),
            turns: 2,
            structured_output: None,
            trace: Vec::new(),
            api_failure: None,
            permission_denials: Vec::new(),
            delegated: Vec::new(),
            subagents: None,
        };
        let result = result_object(&outcome, "4bdf8843-6342-492b-befa-479c5e1777ac", Instant::now(), 3);
        let keys = [
            "type",
            "subtype",
            "duration_ms",
            "duration_api_ms",
            "is_error",
            "num_turns",
            "session_id",
            "result",
            "total_cost_usd",
            "usage",
            "stop_reason",
            "uuid",
            "permission_denials",
            "terminal_reason",
        ];
        shares(&result, &recorded("result", None), &keys);
        assert_eq!(result["stop_reason"], "end_turn");
        assert_eq!(result["subtype"], "success");
    }
}

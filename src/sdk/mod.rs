//! The Claude Agent SDK mode: `agentloop --input-format stream-json --output-format
//! stream-json`, the command line the SDK launches its CLI with.
//!
//! Both directions are newline-delimited JSON. From the SDK: `initialize` (which registers its
//! hook callbacks), user messages — each one a prompt on the same session, run one after the
//! other — and control requests (`interrupt`, `set_permission_mode`, `set_model`,
//! `mcp_status`; any other gets an error answer, never silence). To the SDK: the answers, `system/init`, the
//! conversation's messages, one `result` per prompt, and agentloop's own control requests
//! (`hook_callback`, `can_use_tool`, and `mcp_message` for the SDK's in-process MCP servers,
//! [`crate::mcp::sdk`]), whose answers the stdin reader hands to [`control::Controller`].
//!
//! An interrupt cancels the current prompt through the engine's abort edges; the process
//! stays up for the next one. After stdin closes, the prompts already received run to their
//! end and the process exits.

pub mod approver;
pub mod control;
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

use crate::cli::interrupt::{Stdout, stderr_line};
use crate::cli::output::{CliSink, WithSandbox, result_object, system_init, with_structured_output};
use crate::cli::run::{RunFlags, RunSpec};
use crate::cli::{EXIT_INTERNAL, OutputFormat};
use crate::engine::clock::SystemClock;
use crate::engine::machine::Deps;
use crate::engine::options::EngineOptions;
use crate::engine::run::{RunOutcome, run_prompt};
use crate::engine::session::Session;
use crate::hooks::command::CommandHooks;
use crate::hooks::settings::Settings;
use crate::hooks::settings::{HookCommand, HookKind, HookMatcher, HookTable, ToolMatcher};
use crate::model::Model;
use crate::permissions::Mode;
use crate::permissions::approver::Approver;
use crate::permissions::{Policy, Unattended};
use crate::tools::Registry;
use crate::tools::shell_env::ShellEnv;
use control::Controller;
use wire::Inbound;

/// The Claude Code version whose stream-json protocol this mode speaks, reported as
/// `claude_code_version` so the SDK's version checks pass (agentloop's own version is
/// reported beside it as `agentloop_version`).
pub const PROTOCOL_VERSION: &str = "2.1.332";

type Running =
    Pin<Box<dyn Future<Output = (Session, Result<RunOutcome, String>, Instant, Arc<std::sync::atomic::AtomicU64>)>>>;

/// Serve the SDK on stdin and stdout until stdin closes and every prompt received has run.
/// Returns the exit status: 0, or [`EXIT_INTERNAL`] when the engine failed.
pub async fn serve(spec: RunSpec, flags: &RunFlags) -> u8 {
    if spec.format != OutputFormat::StreamJson {
        eprintln!(
            "agentloop: warning: --input-format stream-json answers in stream-json whatever --output-format says"
        );
    }
    let stdout = Stdout::new();
    let controller = Arc::new(Controller::new(stdout.clone()));
    let (tx, mut rx) = mpsc::unbounded_channel();
    // The reader answers agentloop's own requests itself: the SDK servers' start and a
    // prompt's permission questions wait for those answers while this loop may be waiting
    // for them.
    tokio::spawn(read_stdin(tx, controller.clone()));
    let (mut host, session) = Host::new(spec, flags, stdout.clone(), controller.clone());
    let mut session = Some(session);
    let mut queue: VecDeque<String> = VecDeque::new();
    let mut input_open = true;
    let mut running: Option<Running> = None;
    let mut cancel = CancellationToken::new();
    let mut failed = false;
    // A signal ends the current prompt through its abort edges (its tools' process groups are
    // killed, its transcript stays consistent) and drops the prompts not yet started; a second
    // one exits at once.
    let mut signals = crate::cli::interrupt::Signals::install().ok();
    let mut stopped: Option<crate::cli::interrupt::Stop> = None;

    loop {
        if running.is_none() {
            if let Some(prompt) = queue.pop_front() {
                // The first prompt needs the MCP servers' tools: they started with the process.
                host.servers_ready().await;
                let current = session.take().expect("the session is back whenever no prompt runs");
                cancel = CancellationToken::new();
                running = Some(host.start(current, prompt, cancel.clone()));
            } else if !input_open {
                break;
            }
        }
        tokio::select! {
            signal = async { signals.as_mut().expect("guarded").next().await }, if signals.is_some() => {
                if stopped.is_some() {
                    crate::process_group::kill_all();
                    return signal.exit_code();
                }
                stderr_line(&format!("agentloop: {}", signal.describe()));
                stopped = Some(signal);
                cancel.cancel();
                queue.clear();
                input_open = false;
                controller.close();
            }
            frame = rx.recv(), if input_open => match frame {
                None => {
                    input_open = false;
                    controller.close();
                }
                Some(Inbound::User(prompt)) => queue.push_back(prompt),
                // Routed by the reader; never forwarded.
                Some(Inbound::Response(_)) => {}
                Some(Inbound::Request { id, request }) => {
                    if request.get("subtype").and_then(Value::as_str) == Some("mcp_status") {
                        host.servers_if_ready().await;
                    }
                    stdout.line(&host.answer(&id, &request, &cancel).to_string());
                }
                Some(Inbound::Ignored(_)) => {}
                Some(Inbound::Bad(why)) => stderr_line(&format!("agentloop: warning: ignored a line of stdin: {why}")),
            },
            (done, result, started, api_ms) = async { running.as_mut().expect("guarded").await }, if running.is_some() => {
                running = None;
                match result {
                    Ok(outcome) => {
                        let api = api_ms.load(std::sync::atomic::Ordering::Relaxed);
                        let result = result_object(&outcome, &done.id.to_string(), started, api);
                        stdout.line(&with_structured_output(result, &outcome).to_string());
                    }
                    Err(e) => {
                        stderr_line(&format!("agentloop: internal error: {e}"));
                        failed = true;
                    }
                }
                session = Some(done);
            }
        }
    }
    match (failed, stopped) {
        (true, _) => EXIT_INTERNAL,
        (false, Some(signal)) => signal.exit_code(),
        (false, None) => 0,
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
}

impl Host {
    /// The host of `spec`'s run, and its session. The MCP servers go on starting in the
    /// background until the first prompt waits for them ([`Host::servers_ready`]): their
    /// tools join the built-in ones for every prompt.
    fn new(spec: RunSpec, flags: &RunFlags, stdout: Stdout, controller: Arc<Controller>) -> (Host, Session) {
        let RunSpec { cwd, options, model, settings, policy, session, tools, mut mcp, sandbox, .. } = spec;
        let mcp_servers = mcp.servers().clone();
        // The SDK's own servers start now, spoken to through control requests.
        mcp.reach_sdk(controller.clone());
        // `--permission-prompt-tool stdio` puts the questions to the SDK; otherwise nobody is asked.
        let approver: Arc<dyn Approver> = match flags.permission_prompt_tool.as_deref() {
            Some("stdio") => Arc::new(approver::SdkApprover::new(controller.clone())),
            Some(other) => {
                stderr_line(&format!(
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
            options,
            model,
            settings,
            policy,
            tools,
            shell_env,
            sandbox,
            approver,
            partial_messages: flags.include_partial_messages,
            mcp: Some(mcp),
            mcp_servers,
            mcp_status: None,
        };
        (host, session)
    }

    /// Wait until the MCP servers are up (or failed), once: their tools join the others.
    async fn servers_ready(&mut self) {
        if let Some(startup) = self.mcp.take() {
            self.mcp_status = Some(startup.finish(&mut self.tools).await);
        }
    }

    /// Take the MCP servers' statuses and tools if they have all come up (or failed), without
    /// waiting for those still starting.
    async fn servers_if_ready(&mut self) {
        if self.mcp.as_ref().is_some_and(crate::mcp::startup::Startup::is_finished) {
            self.servers_ready().await;
        }
    }

    /// Print `system/init` and start `prompt` on `session`; the future gives the session back
    /// with the outcome.
    fn start(&self, mut session: Session, prompt: String, cancel: CancellationToken) -> Running {
        let deps = Deps {
            model: self.model.clone(),
            tools: self.tools.clone(),
            hooks: Arc::new(CommandHooks::with_callbacks(self.settings.hooks.clone(), self.controller.clone())),
            clock: Arc::new(SystemClock::new()),
            cancel,
            cwd: self.cwd.clone(),
            policy: Arc::new(self.policy.clone()),
            shell_env: self.shell_env.clone(),
            sandbox: self.sandbox.clone(),
            approver: self.approver.clone(),
        };
        let id = session.id.to_string();
        let names: Vec<String> = self.tools.definitions().into_iter().map(|d| d.name).collect();
        let mode = self.policy.mode().as_str();
        let statuses = self.mcp_status.as_deref().unwrap_or_default();
        let init = system_init(&id, &self.cwd, &self.options.model, &names, mode, statuses)
            .with_sandbox(&self.sandbox, self.policy.mode());
        self.stdout.line(&init.to_string());
        let mut sink = CliSink::new(None, OutputFormat::StreamJson, id, self.stdout.clone());
        sink.model = self.options.model.clone();
        sink.skip_prompt_line = true;
        sink.partial_messages = self.partial_messages;
        let api_ms = sink.api_ms.clone();
        let options = self.options.clone();
        Box::pin(async move {
            let started = Instant::now();
            let result = run_prompt(&mut session, deps, options, &prompt, Box::new(sink)).await;
            (session, result.map_err(|e| e.to_string()), started, api_ms)
        })
    }

    /// The answer to the SDK's control request `id`; `cancel` is the running prompt's.
    fn answer(&mut self, id: &str, request: &Value, cancel: &CancellationToken) -> Value {
        match request.get("subtype").and_then(Value::as_str).unwrap_or("") {
            "initialize" => match register_callbacks(&mut self.settings.hooks, &request["hooks"]) {
                Ok(()) => wire::success(id, initialize_response()),
                Err(message) => wire::error(id, &message),
            },
            "interrupt" => {
                cancel.cancel();
                wire::success(id, json!({}))
            }
            "set_permission_mode" => match request.get("mode").and_then(Value::as_str).map(str::parse::<Mode>) {
                Some(Ok(mode)) => {
                    // Shared by the running prompt's policy: it applies at once.
                    self.policy.set_mode(mode);
                    wire::success(id, json!({}))
                }
                Some(Err(e)) => wire::error(id, &e.to_string()),
                None => wire::error(id, "set_permission_mode needs a `mode`"),
            },
            "set_model" => match request.get("model") {
                Some(Value::String(name)) if name.starts_with("claude") => {
                    self.options.model = name.clone();
                    wire::success(id, json!({}))
                }
                None | Some(Value::Null) => {
                    self.options.model = crate::cli::run::DEFAULT_MODEL.to_owned();
                    wire::success(id, json!({}))
                }
                Some(other) => wire::error(id, &format!("unknown model {other}: use a claude-… model")),
            },
            "mcp_status" => wire::success(
                id,
                crate::mcp::status::response(&self.mcp_servers, self.mcp_status.as_deref(), &self.tools),
            ),
            other => wire::error(id, &format!("agentloop does not support the `{other}` control request")),
        }
    }
}

/// Read stdin line by line into frames; `None` (the channel closing) means EOF. The answers
/// to agentloop's own control requests go straight to `controller`, which is closed at EOF.
async fn read_stdin(tx: mpsc::UnboundedSender<Inbound>, controller: Arc<Controller>) {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let frame = match wire::parse(&line) {
            Inbound::Response(response) => {
                if !controller.answer(&response) {
                    stderr_line("agentloop: warning: a control_response answers no request of ours");
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

/// What `initialize` answers: no slash commands or output styles of Claude Code's, the hooks
/// registered, and who answers.
fn initialize_response() -> Value {
    json!({
        "commands": [],
        "output_style": "default",
        "available_output_styles": ["default"],
        "models": [],
        "account": {},
        "pid": std::process::id(),
        "hooks_applied": true,
        "hook_on_failure_supported": false,
        "claude_code_version": PROTOCOL_VERSION,
        "agentloop_version": env!("CARGO_PKG_VERSION"),
    })
}

/// Add the hook callbacks `initialize` registers (`{"PreToolUse": [{"matcher": …,
/// "hookCallbackIds": [...], "timeout": …}]}`) to the hook table, after the settings' hooks.
fn register_callbacks(table: &mut HookTable, hooks: &Value) -> Result<(), String> {
    let Some(events) = hooks.as_object() else { return Ok(()) };
    for (event, matchers) in events {
        let groups = match event.as_str() {
            "PreToolUse" => &mut table.pre_tool_use,
            "PostToolUse" => &mut table.post_tool_use,
            "Stop" => &mut table.stop,
            other => {
                stderr_line(&format!(
                    "agentloop: warning: {other} hook callbacks are not run (only PreToolUse, PostToolUse and Stop)"
                ));
                continue;
            }
        };
        for m in matchers.as_array().into_iter().flatten() {
            let matcher = match m.get("matcher").and_then(Value::as_str) {
                Some(text) => Some(ToolMatcher::new(text).map_err(|e| format!("hook matcher `{text}`: {e}"))?),
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
            turns: 2,
            structured_output: None,
            trace: Vec::new(),
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

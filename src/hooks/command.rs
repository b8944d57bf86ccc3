//! [`CommandHooks`]: the [`Hooks`] of a settings file. It builds each event's JSON input,
//! runs the matching commands (through `run.rs`) and reads their exit codes and output with
//! Claude Code's semantics, so hook scripts written for Claude Code work unchanged.
//!
//! - exit 2 blocks, with stderr as the reason;
//! - exit 0 with a JSON object on stdout may block (`"decision": "block"`), stop the run
//!   (`"continue": false`) or, for PreToolUse, deny the call (`hookSpecificOutput`);
//! - any other outcome (another exit code, a signal, a timeout) changes nothing but warns.

use std::time::Duration;

use futures::future::{BoxFuture, join_all};
use serde_json::{Value, json};

use super::run::{self, Ending, Ran};
use super::settings::{HookCommand, HookKind, HookMatcher, HookTable};
use super::{HookEnv, HookPermission, Hooks, PostToolDecision, PreToolDecision, StopDecision};
use crate::peer::PeerError;

/// Seconds a hook may run when its entry gives no `timeout`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// Calls the hooks that live in another process: the Claude Agent SDK's callbacks, sent as
/// `hook_callback` control requests. The reply is the JSON a command hook would print.
pub(crate) trait HookCallbacks: Send + Sync {
    /// Call callback `id` with the hook's JSON input; the callback's JSON output, or why there
    /// is none.
    fn call<'a>(
        &'a self,
        id: &'a str,
        input: &'a Value,
        tool_use_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Value, PeerError>>;
}

/// Runs the hook commands of a [`HookTable`] as shell processes, and its callbacks through
/// `HookCallbacks`.
#[derive(Clone, Default)]
pub struct CommandHooks {
    table: HookTable,
    callbacks: Option<std::sync::Arc<dyn HookCallbacks>>,
}

impl std::fmt::Debug for CommandHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandHooks")
            .field("table", &self.table)
            .field("callbacks", &self.callbacks.is_some())
            .finish()
    }
}

impl CommandHooks {
    /// Hooks from a settings file's `hooks` table.
    pub fn new(settings: HookTable) -> Self {
        CommandHooks { table: settings, callbacks: None }
    }

    /// Hooks whose [`HookKind::Callback`](super::settings::HookKind::Callback) entries are
    /// answered by `callbacks`.
    pub(crate) fn with_callbacks(settings: HookTable, callbacks: std::sync::Arc<dyn HookCallbacks>) -> Self {
        CommandHooks { table: settings, callbacks: Some(callbacks) }
    }

    /// The table these hooks run.
    pub fn table(&self) -> &HookTable {
        &self.table
    }

    /// Run `hooks` concurrently with the same input; verdicts come back in hook order.
    async fn run_all(&self, event: Event, hooks: Vec<&HookCommand>, env: &HookEnv, input: Value) -> Vec<Verdict> {
        let mut bytes = input.to_string().into_bytes();
        // A trailing newline lets a plain `read line` in a hook see the whole input.
        bytes.push(b'\n');
        let tool_use_id = input.get("tool_use_id").and_then(Value::as_str);
        let runs = hooks.into_iter().map(|hook| {
            let (bytes, input) = (&bytes, &input);
            async move {
                let secs = hook.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
                if hook.kind == HookKind::Callback {
                    let name = format!("{} callback `{}`", event.name(), hook.command);
                    let Some(callbacks) = &self.callbacks else {
                        return Verdict::warn(format!("{name} has nobody to answer it"));
                    };
                    let call = callbacks.call(&hook.command, input, tool_use_id);
                    return match tokio::time::timeout(Duration::from_secs(secs), call).await {
                        Ok(Ok(output)) => Verdict::from_stdout(event, &name, &output.to_string()),
                        Ok(Err(e)) => Verdict::warn(format!("{name} failed: {e}")),
                        Err(_) => Verdict::warn(format!("{name} did not answer within {secs}s")),
                    };
                }
                let ran =
                    run::run(&hook.command, &env.cwd, &env.shell_env, &env.sandbox, bytes, Duration::from_secs(secs))
                        .await;
                Verdict::read(event, &hook.command, secs, ran)
            }
        });
        join_all(runs).await
    }
}

/// The events this engine runs hooks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Stop,
    PreToolUse,
    PostToolUse,
}

impl Event {
    fn name(self) -> &'static str {
        match self {
            Event::Stop => "Stop",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
        }
    }
}

/// What one hook asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Verdict {
    /// Exit 2's stderr, or the reason of a JSON block/deny.
    block: Option<String>,
    /// `continue: false`: the `stopReason` or the event's default.
    stop: Option<String>,
    /// Why the hook counted as no decision.
    warning: Option<String>,
    /// A PreToolUse `permissionDecision` of `allow` or `ask`.
    permission: Option<HookPermission>,
}

impl Verdict {
    fn read(event: Event, command: &str, timeout_secs: u64, ran: Ran) -> Verdict {
        let hook = format!("{} hook `{command}`", event.name());
        match ran.ending {
            Ending::Code(0) if ran.stdout_cut => {
                if ran.stdout.trim_start().starts_with('{') {
                    Verdict::warn(format!(
                        "{hook} printed more than {} bytes on stdout: its JSON was not read",
                        run::MAX_HOOK_OUTPUT
                    ))
                } else {
                    Verdict::default()
                }
            }
            Ending::Code(0) => Verdict::from_stdout(event, &hook, &ran.stdout),
            Ending::Code(2) => {
                let stderr = ran.stderr.trim_end();
                let reason = if stderr.is_empty() { format!("Blocked by {hook}") } else { stderr.to_owned() };
                Verdict { block: Some(reason), ..Verdict::default() }
            }
            Ending::Code(code) => {
                let first = ran.stderr.lines().map(str::trim).find(|l| !l.is_empty());
                let detail = first.map(|line| format!(": {line}")).unwrap_or_default();
                Verdict::warn(format!("{hook} failed with exit code {code}{detail}"))
            }
            Ending::Signal(signal) => Verdict::warn(format!("{hook} was killed by signal {signal}")),
            Ending::TimedOut => Verdict::warn(format!("{hook} timed out after {timeout_secs}s and was killed")),
            Ending::Failed(e) => Verdict::warn(format!("{hook} could not run: {e}")),
        }
    }

    fn warn(warning: String) -> Verdict {
        Verdict { warning: Some(warning), ..Verdict::default() }
    }

    /// Exit 0: only a JSON object on stdout can decide anything.
    fn from_stdout(event: Event, hook: &str, stdout: &str) -> Verdict {
        let Ok(Value::Object(out)) = serde_json::from_str::<Value>(stdout.trim()) else {
            return Verdict::default();
        };
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let stop = (out.get("continue") == Some(&Value::Bool(false))).then(|| {
            text(out.get("stopReason")).unwrap_or_else(|| format!("{} hook prevented continuation", event.name()))
        });
        let decision = out.get("decision").and_then(Value::as_str);
        let specific = out.get("hookSpecificOutput");
        let permission = specific.and_then(|s| s.get("permissionDecision")).and_then(Value::as_str);
        let block = if decision == Some("block") || (event == Event::PreToolUse && decision == Some("deny")) {
            Some(text(out.get("reason")).unwrap_or_else(|| format!("Blocked by {hook}")))
        } else if event == Event::PreToolUse && permission == Some("deny") {
            let reason = text(specific.and_then(|s| s.get("permissionDecisionReason")));
            Some(reason.unwrap_or_else(|| format!("Denied by {hook}")))
        } else {
            None
        };
        let permission = match (event, permission) {
            (Event::PreToolUse, Some("allow")) => Some(HookPermission::Allow),
            (Event::PreToolUse, Some("ask")) => {
                let reason = text(specific.and_then(|s| s.get("permissionDecisionReason")));
                Some(HookPermission::Ask(reason.unwrap_or_else(|| format!("{hook} asks for it"))))
            }
            _ => None,
        };
        Verdict { block, stop, warning: None, permission }
    }
}

fn warnings(verdicts: &[Verdict]) -> Vec<String> {
    verdicts.iter().filter_map(|v| v.warning.clone()).collect()
}

fn joined<'a>(reasons: impl Iterator<Item = &'a String>) -> Option<String> {
    let reasons: Vec<&str> = reasons.map(String::as_str).collect();
    (!reasons.is_empty()).then(|| reasons.join("\n"))
}

fn first_stop(verdicts: &[Verdict]) -> Option<String> {
    verdicts.iter().find_map(|v| v.stop.clone())
}

/// Prevent wins over Block; block feedbacks are joined with newlines.
fn stop_decision(verdicts: &[Verdict]) -> StopDecision {
    if let Some(reason) = first_stop(verdicts) {
        StopDecision::Prevent { reason }
    } else if let Some(feedback) = joined(verdicts.iter().filter_map(|v| v.block.as_ref())) {
        StopDecision::Block { feedback }
    } else {
        StopDecision::Pass
    }
}

/// A hook that stops the run also denies the call, with its block reason if it gave one.
fn pre_decision(verdicts: &[Verdict]) -> PreToolDecision {
    // An `ask` wins over an `allow`: one hook wanting a person asked is enough.
    let permission =
        verdicts.iter().filter_map(|v| v.permission.clone()).max_by_key(|p| matches!(p, HookPermission::Ask(_)));
    PreToolDecision {
        permission,
        deny: joined(verdicts.iter().filter_map(|v| v.block.as_ref().or(v.stop.as_ref()))),
        stop: first_stop(verdicts),
    }
}

fn post_decision(verdicts: &[Verdict]) -> PostToolDecision {
    PostToolDecision { feedback: joined(verdicts.iter().filter_map(|v| v.block.as_ref())), stop: first_stop(verdicts) }
}

fn matching<'a>(groups: &'a [HookMatcher], tool_name: &str) -> Vec<&'a HookCommand> {
    groups.iter().filter(|g| g.matches(tool_name)).flat_map(|g| &g.hooks).collect()
}

fn cwd_text(env: &HookEnv) -> String {
    env.cwd.to_string_lossy().into_owned()
}

impl Hooks for CommandHooks {
    fn runs_for_tool(&self, tool_name: &str) -> bool {
        [&self.table.pre_tool_use, &self.table.post_tool_use]
            .iter()
            .flat_map(|groups| groups.iter())
            .any(|group| !group.hooks.is_empty() && group.matches(tool_name))
    }

    fn runs_stop(&self) -> bool {
        self.table.stop.iter().any(|group| !group.hooks.is_empty())
    }

    fn stop<'a>(&'a self, env: &'a HookEnv, stop_hook_active: bool) -> BoxFuture<'a, (StopDecision, Vec<String>)> {
        Box::pin(async move {
            // Stop entries ignore their matchers.
            let hooks = self.table.stop.iter().flat_map(|g| &g.hooks).collect();
            let input = json!({
                "session_id": env.session_id,
                "transcript_path": env.transcript_path,
                "cwd": cwd_text(env),
                "permission_mode": env.permission_mode,
                "hook_event_name": Event::Stop.name(),
                "stop_hook_active": stop_hook_active,
            });
            let verdicts = self.run_all(Event::Stop, hooks, env, input).await;
            (stop_decision(&verdicts), warnings(&verdicts))
        })
    }

    fn pre_tool_use<'a>(
        &'a self,
        env: &'a HookEnv,
        tool_name: &'a str,
        tool_use_id: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, (PreToolDecision, Vec<String>)> {
        Box::pin(async move {
            let hooks = matching(&self.table.pre_tool_use, tool_name);
            let input = json!({
                "session_id": env.session_id,
                "transcript_path": env.transcript_path,
                "cwd": cwd_text(env),
                "permission_mode": env.permission_mode,
                "hook_event_name": Event::PreToolUse.name(),
                "tool_name": tool_name,
                "tool_input": input,
                "tool_use_id": tool_use_id,
            });
            let verdicts = self.run_all(Event::PreToolUse, hooks, env, input).await;
            (pre_decision(&verdicts), warnings(&verdicts))
        })
    }

    fn post_tool_use<'a>(
        &'a self,
        env: &'a HookEnv,
        tool_name: &'a str,
        tool_use_id: &'a str,
        input: &'a Value,
        response: &'a str,
        is_error: bool,
    ) -> BoxFuture<'a, (PostToolDecision, Vec<String>)> {
        Box::pin(async move {
            let hooks = matching(&self.table.post_tool_use, tool_name);
            let input = json!({
                "session_id": env.session_id,
                "transcript_path": env.transcript_path,
                "cwd": cwd_text(env),
                "permission_mode": env.permission_mode,
                "hook_event_name": Event::PostToolUse.name(),
                "tool_name": tool_name,
                "tool_input": input,
                "tool_use_id": tool_use_id,
                "tool_response": response,
                "tool_response_is_error": is_error,
            });
            let verdicts = self.run_all(Event::PostToolUse, hooks, env, input).await;
            (post_decision(&verdicts), warnings(&verdicts))
        })
    }
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;

//! Hooks: the [`Hooks`] seam the engine calls at the end of a turn (Stop) and around each
//! tool call (PreToolUse, PostToolUse), and [`command::CommandHooks`], which runs hook
//! commands from Claude Code's settings format so hooks users already have work unchanged.

pub mod command;
mod run;
pub mod settings;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::tools::shell_env::ShellEnv;

/// What the Stop hooks decided at the end of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum StopDecision {
    /// Let the turn end.
    #[default]
    Pass,
    /// Keep the model working; the feedback becomes a user message.
    Block {
        /// What the hook wants the model to read.
        feedback: String,
    },
    /// End the run now (`continue: false`).
    Prevent {
        /// The hook's `stopReason`, or a default.
        reason: String,
    },
}

/// What PreToolUse hooks decided for one call.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct PreToolDecision {
    /// `Some(reason)`: do not run the tool; the reason becomes its error result.
    pub deny: Option<String>,
    /// `Some(reason)`: the run ends as `hook_stopped` after this tool phase.
    pub stop: Option<String>,
    /// A hook's `permissionDecision` of `allow` or `ask` (a `deny` is [`Self::deny`]).
    pub permission: Option<HookPermission>,
}

/// What a PreToolUse hook's `hookSpecificOutput.permissionDecision` asks of the permission
/// check (Claude Code's semantics, with agentloop's rules kept): deny rules and plan mode
/// still refuse a call whatever a hook says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum HookPermission {
    /// `allow`: the call runs without asking anyone.
    Allow,
    /// `ask`: a person is asked even if an allow rule covers the call; the reason is shown.
    Ask(String),
}

/// What PostToolUse hooks decided for one call.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct PostToolDecision {
    /// Extra text for the model, appended to the tool result.
    pub feedback: Option<String>,
    /// `Some(reason)`: the run ends as `hook_stopped` after this tool phase.
    pub stop: Option<String>,
}

/// What a hook call sees besides its own input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEnv {
    /// Session (run) id.
    pub session_id: String,
    /// Working directory the hook runs in.
    pub cwd: std::path::PathBuf,
    /// The environment hook commands run with (no model credentials, no secrets).
    pub shell_env: Arc<ShellEnv>,
    /// The session's transcript, when it is written (`transcript_path` in the hook input).
    pub transcript_path: Option<std::path::PathBuf>,
    /// The permission mode in force (`permission_mode` in the hook input).
    pub permission_mode: &'static str,
    /// How hook commands are confined ([`crate::sandbox::Launch::Hook`]).
    pub sandbox: Arc<crate::sandbox::Sandbox>,
}

impl HookEnv {
    /// The environment of session `session_id` in `cwd`, with the default shell environment
    /// ([`ShellEnv::inherited_default`]).
    pub fn new(session_id: impl Into<String>, cwd: impl Into<std::path::PathBuf>) -> Self {
        HookEnv {
            session_id: session_id.into(),
            cwd: cwd.into(),
            shell_env: ShellEnv::inherited_default(),
            transcript_path: None,
            permission_mode: "default",
            sandbox: crate::sandbox::Sandbox::none(),
        }
    }
}

/// The hooks of a run. Warnings (a hook that failed or timed out without blocking) are
/// returned beside the decision so the engine can show them.
pub trait Hooks: Send + Sync {
    /// Run the Stop hooks. `stop_hook_active` is true when a Stop hook already blocked in this run.
    fn stop<'a>(&'a self, env: &'a HookEnv, stop_hook_active: bool) -> BoxFuture<'a, (StopDecision, Vec<String>)>;
    /// Run the PreToolUse hooks whose matcher matches `tool_name`.
    fn pre_tool_use<'a>(
        &'a self,
        env: &'a HookEnv,
        tool_name: &'a str,
        tool_use_id: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, (PreToolDecision, Vec<String>)>;
    /// Run the PostToolUse hooks whose matcher matches `tool_name`.
    fn post_tool_use<'a>(
        &'a self,
        env: &'a HookEnv,
        tool_name: &'a str,
        tool_use_id: &'a str,
        input: &'a Value,
        response: &'a str,
        is_error: bool,
    ) -> BoxFuture<'a, (PostToolDecision, Vec<String>)>;
    /// Whether a PreToolUse or PostToolUse hook command would run for `tool_name`. A hook
    /// can change anything, so such a call does not start before the reply has ended.
    fn runs_for_tool(&self, _tool_name: &str) -> bool {
        false
    }
    /// Whether a Stop hook command (or SDK callback) would run at the end of a turn.
    fn runs_stop(&self) -> bool {
        false
    }
}

/// No hooks at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {
    fn stop<'a>(&'a self, _env: &'a HookEnv, _active: bool) -> BoxFuture<'a, (StopDecision, Vec<String>)> {
        Box::pin(async { (StopDecision::Pass, Vec::new()) })
    }

    fn pre_tool_use<'a>(
        &'a self,
        _env: &'a HookEnv,
        _tool_name: &'a str,
        _tool_use_id: &'a str,
        _input: &'a Value,
    ) -> BoxFuture<'a, (PreToolDecision, Vec<String>)> {
        Box::pin(async { (PreToolDecision::default(), Vec::new()) })
    }

    fn post_tool_use<'a>(
        &'a self,
        _env: &'a HookEnv,
        _tool_name: &'a str,
        _tool_use_id: &'a str,
        _input: &'a Value,
        _response: &'a str,
        _is_error: bool,
    ) -> BoxFuture<'a, (PostToolDecision, Vec<String>)> {
        Box::pin(async { (PostToolDecision::default(), Vec::new()) })
    }
}

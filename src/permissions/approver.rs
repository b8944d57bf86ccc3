//! The approval seam: who is asked when the policy cannot decide a call alone
//! ([`super::Decision::Ask`]: an `ask` rule matched, or a call that changes things has no allow
//! rule in the `default` or `acceptEdits` mode).
//!
//! A frontend implements [`Approver`] to put the question to a person; the engine passes it in
//! [`crate::engine::machine::Deps::approver`]. The default, [`Unattended`], answers every
//! question with the denial a non-interactive run has always given, so `agentloop run -p`
//! behaves as if nobody could be asked.
//!
//! Questions are asked one at a time: the tool pipeline holds a lock while it asks, so calls
//! that run concurrently wait for each other's answers, and a call whose question was
//! settled meanwhile by an "allow for this session" answer runs without asking
//! ([`crate::tools::orchestrate::Approvals`]). An interrupt drops a pending question.

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use super::unattended_message;

/// One question for the approver: may this call run?
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    /// The `tool_use` id of the call.
    pub tool_use_id: String,
    /// The tool's name.
    pub tool: String,
    /// The call's input, as the model wrote it.
    pub input: Value,
    /// Why the call is not allowed on its own (``no allow rule covers `git push` ``).
    pub reason: String,
    /// A rule the approver may offer to allow for the rest of the session (`Edit`,
    /// `Bash(git commit:*)`), when a narrow one is known.
    pub suggestion: Option<String>,
    /// The subagent whose call this is (`greeter a1b2c3…`: its type and id); `None` for
    /// a call of the top-level run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// The approver's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Approval {
    /// Run this call; ask again next time.
    AllowOnce,
    /// Run this call with `input` instead of the model's (the Claude Agent SDK's
    /// `updatedInput`); ask again next time. The changed call is judged again: a deny rule or
    /// plan mode still refuses it, and a path outside the working directory still needs a rule.
    AllowChanged {
        /// The input the call runs with.
        input: Value,
    },
    /// Run this call and allow `rule` for the rest of the session: later calls it covers run
    /// without asking (deny rules still win; plan mode still refuses calls that change
    /// anything). A rule that does not parse allows this call once, with a warning.
    AllowForSession {
        /// A rule in Claude Code's syntax, usually [`ApprovalRequest::suggestion`].
        rule: String,
    },
    /// Do not run it; the model reads `message` as the call's error result.
    Deny {
        /// What the model reads.
        message: String,
    },
    /// Do not run it, and interrupt the run: the call's error result is `message`, every
    /// other call of the phase is answered as interrupted and the run ends `aborted_tools`.
    DenyAndInterrupt {
        /// What the model reads as this call's result.
        message: String,
    },
}

/// Asks a person (or anything else) whether a call may run.
pub trait Approver: Send + Sync {
    /// Answer `request`. The engine asks one question at a time and drops the future if the
    /// run is interrupted meanwhile.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval>;
}

/// The approver of a run nobody watches: denies every call that needs approval, telling the
/// model how the user could allow it ([`unattended_message`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unattended;

impl Approver for Unattended {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        let message = unattended_message(&request.tool, &request.reason);
        Box::pin(async move { Approval::Deny { message } })
    }
}

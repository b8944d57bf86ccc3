//! One tool call, start to finish: the pipeline every call goes through, whether it starts
//! while the reply is still streaming or after it.
//!
//! unknown tool → interrupted? → PreToolUse hooks → permission (asking the [`Approver`] when
//! the policy says [`Decision::Ask`]) → the tool → PostToolUse hooks (their feedback appended)
//! → result budget → nested memory (the memory that applies to the file a successful call
//! touched, appended after the budget so the cap never cuts it; hooks do not see it). Every
//! step that refuses produces an `is_error` result the model reads.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::engine::effects::{Effects, Step, StepResult, hooks_step, run_step};

use crate::hooks::{HookEnv, HookPermission, Hooks};
use crate::permissions::{Approval, ApprovalRequest, Approver, Decision, Mode, Policy, Unattended};
use crate::sandbox::{Launch, Sandbox};
use crate::tools::{Registry, Tool, ToolCall, ToolContext, ToolKind, ToolOutput};

/// Whether a call's input asks to run outside the sandbox
/// ([`crate::tools::bash::DISABLES_SANDBOX`]).
fn disables_sandbox(input: &serde_json::Value) -> bool {
    input.get(crate::tools::bash::DISABLES_SANDBOX) == Some(&serde_json::Value::Bool(true))
}

/// Default cap on one tool result, in characters.
pub const DEFAULT_RESULT_CAP: usize = 30_000;
/// Calls that may run at once (Claude Code's default; `--max-tool-concurrency` changes it).
pub const DEFAULT_MAX_CONCURRENCY: usize = 10;
/// Result text of a call that never started because the user interrupted.
pub const INTERRUPTED_RESULT: &str = "Interrupted by user: the tool did not run";
/// Result text of a call that may have started (and may still be running) when the run
/// stopped, whose result nobody collected: the live abort path's for a call started but not
/// answered, and the resume's repair of a call left without a result by a kill.
pub const OUTCOME_UNKNOWN_RESULT: &str = "Interrupted: the tool may have started and its outcome is unknown";
/// Warning when an interrupt killed running hooks (their decision is not read).
pub const INTERRUPTED_HOOKS: &str = "hooks interrupted and killed";
/// Result text of a call cancelled because a parallel call failed whose tool cancels its
/// siblings ([`crate::tools::Tool::failure_cancels_siblings`]; Bash).
pub const SIBLING_CANCELLED: &str = "cancelled: a parallel Bash call failed";

/// What every call of a run shares.
pub struct Toolbox {
    /// The tools.
    pub registry: Registry,
    /// The hooks.
    pub hooks: Arc<dyn Hooks>,
    /// Where hooks run.
    pub env: HookEnv,
    /// Who may run what.
    pub policy: Arc<Policy>,
    /// Results longer than this many characters are cut (the whole text is saved).
    pub result_cap: usize,
    /// Where cut results are saved (the run's temp directory).
    pub spill_dir: PathBuf,
    /// Who is asked when the policy cannot decide a call alone.
    pub approvals: Approvals,
    /// The run's effects: tool calls and hook runs are steps of its journal, if it has one.
    pub effects: Arc<dyn Effects>,
}

/// The run's [`Approver`], asked one question at a time.
///
/// Approvals are serialized: a call that needs one waits until no other call of the run is
/// being asked, so a person answers one question at a time, in the order the calls got there.
/// Once it holds the turn the call is judged again, so an "allow for this session" answer given
/// to another call meanwhile lets it run without a question.
pub struct Approvals {
    approver: Arc<dyn Approver>,
    interrupt: CancellationToken,
    turn: tokio::sync::Mutex<()>,
}

impl Approvals {
    /// Ask `approver`; a [`Approval::DenyAndInterrupt`] answer cancels `interrupt`, the run's
    /// interrupt token.
    pub fn new(approver: Arc<dyn Approver>, interrupt: CancellationToken) -> Self {
        Approvals { approver, interrupt, turn: tokio::sync::Mutex::new(()) }
    }

    /// Nobody to ask ([`Unattended`]), and a token nothing else watches.
    pub fn unattended() -> Self {
        Approvals::new(Arc::new(Unattended), CancellationToken::new())
    }
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// What the model reads.
    pub output: ToolOutput,
    /// A tool hook's `continue: false` reason.
    pub stop: Option<String>,
    /// Warnings for the user (hook failures).
    pub warnings: Vec<String>,
    /// How long the call took, less the time its permission question waited for an answer.
    pub duration: Duration,
    /// The question put to the approver for this call and its answer, if one was asked.
    pub approval: Option<Box<(ApprovalRequest, Approval)>>,
    /// A hook, a rule, the mode or the approver refused the call: it did not run.
    pub denied: bool,
}

/// What the pipeline learns about a call beside its output.
#[derive(Default)]
struct Notes {
    warnings: Vec<String>,
    stop: Option<String>,
    approval: Option<Box<(ApprovalRequest, Approval)>>,
    denied: bool,
    /// The time spent waiting for a permission question's answer.
    waited: Duration,
}

impl Toolbox {
    /// Whether `call` may run beside other concurrency-safe calls.
    pub fn is_concurrency_safe(&self, call: &ToolCall) -> bool {
        self.registry.get(&call.name).is_some_and(|t| t.is_concurrency_safe(&call.input))
    }

    /// Whether `call` may start before its reply has ended ([`Tool::may_start_early`]).
    pub fn may_start_early(&self, call: &ToolCall) -> bool {
        self.registry.get(&call.name).is_some_and(|t| t.may_start_early(&call.input))
    }

    /// The MCP server and remote tool `call` goes to, for a tool of an MCP server.
    pub fn mcp_origin(&self, call: &ToolCall) -> Option<crate::tools::McpOrigin> {
        self.registry.get(&call.name).and_then(|t| t.mcp_origin())
    }

    /// Whether a failure of `call` cancels its siblings (its tool says so).
    pub fn failure_cancels_siblings(&self, call: &ToolCall) -> bool {
        self.registry.get(&call.name).is_some_and(|t| t.failure_cancels_siblings())
    }

    /// Run one call through the whole pipeline.
    pub async fn run_call(&self, call: &ToolCall, ctx: ToolContext) -> CallResult {
        let began = Instant::now();
        let mut notes = Notes::default();
        let output = self.pipeline(call, ctx, &mut notes).await;
        let Notes { warnings, stop, approval, denied, waited } = notes;
        CallResult { output, stop, warnings, duration: began.elapsed().saturating_sub(waited), approval, denied }
    }

    async fn pipeline(&self, call: &ToolCall, mut ctx: ToolContext, notes: &mut Notes) -> ToolOutput {
        let Some(tool) = self.registry.get(&call.name) else {
            return ToolOutput::error(format!(
                "<tool_use_error>Error: No such tool available: {}</tool_use_error>",
                call.name
            ));
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(INTERRUPTED_RESULT);
        }
        // An interrupt drops the hooks' future, which kills their process groups at once.
        let pre_hooks =
            self.hook_step("PreToolUse", call, self.hooks.pre_tool_use(&self.env, &call.name, &call.id, &call.input));
        let (pre, pre_warnings) = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                if self.hooks.runs_for_tool(&call.name) {
                    notes.warnings.push(format!("{INTERRUPTED_HOOKS}: PreToolUse of {} {}", call.name, call.id));
                }
                return ToolOutput::error(INTERRUPTED_RESULT);
            }
            decided = pre_hooks => decided,
        };
        notes.warnings.extend(pre_warnings);
        if pre.stop.is_some() {
            notes.stop.clone_from(&pre.stop);
        }
        if let Some(reason) = pre.deny {
            notes.denied = true;
            return ToolOutput::error(format!("PreToolUse hook denied this call: {reason}"));
        }
        let sandbox = ctx.sandbox.clone();
        let mut decision = self.decide(tool.as_ref(), &call.input, &sandbox);
        // A hook's `permissionDecision`: `allow` settles a question, `ask` raises one; deny
        // rules and plan mode refuse the call whatever the hook says.
        let hook_asks = match (&pre.permission, &decision) {
            (Some(HookPermission::Allow), Decision::Ask { .. }) => {
                decision = self.approved(tool.as_ref(), &call.input);
                None
            }
            (Some(HookPermission::Ask(reason)), Decision::Allow { .. }) => {
                decision = Decision::Ask { reason: reason.clone(), suggestion: None };
                Some(reason.as_str())
            }
            _ => None,
        };
        let mut changed = None;
        if let Decision::Ask { .. } = decision {
            // The time the question waits for its answer is not the call's: it is left out of
            // the duration reported.
            let asked = Instant::now();
            let answered =
                self.ask(call, tool.as_ref(), hook_asks, &ctx, &mut notes.warnings, &mut notes.approval).await;
            notes.waited += asked.elapsed();
            decision = match answered {
                Ok(decision) => decision,
                Err(refusal) => {
                    // Refused by the person or the SDK, not dropped by an interrupt.
                    notes.denied = matches!(
                        notes.approval.as_deref(),
                        Some((_, Approval::Deny { .. } | Approval::DenyAndInterrupt { .. }))
                    );
                    return refusal;
                }
            };
            if let Some(answer) = notes.approval.as_deref()
                && let Approval::AllowChanged { input } = &answer.1
            {
                // The person approved this input: judged again, it may still be refused, but
                // it is not asked about a second time.
                decision = match self.decide(tool.as_ref(), input, &sandbox) {
                    Decision::Ask { .. } => self.approved(tool.as_ref(), input),
                    judged => judged,
                };
                changed = Some(input.clone());
            }
        }
        let call: std::borrow::Cow<'_, ToolCall> = match changed {
            Some(input) => std::borrow::Cow::Owned(ToolCall { input, ..call.clone() }),
            None => std::borrow::Cow::Borrowed(call),
        };
        let read_only = match decision {
            Decision::Allow { outside, guard_git, read_only } => {
                ctx.allow_outside = outside;
                ctx.guard_git = guard_git;
                ctx.launch = self.launch(read_only, &call.input, &sandbox);
                read_only
            }
            Decision::Deny(reason) => {
                notes.denied = true;
                return ToolOutput::error(reason);
            }
            Decision::Ask { reason, .. } => unreachable!("asked above: {reason}"),
        };
        // Journaled once nothing stands between the call and its effects (approved, its
        // PreToolUse hooks passed): a call a kill stops before this line never ran.
        if let Some(journal) = &ctx.journal {
            journal.started(&call.id, &call.name, read_only || tool.is_read_only(&call.input));
        }
        let cancel = ctx.cancel.clone();
        let (cwd, nested) = (ctx.cwd.clone(), ctx.nested_memory.clone());
        let mutating = !(read_only || tool.is_read_only(&call.input));
        let step = Step::ToolCall { id: call.id.clone(), name: call.name.clone(), mutating };
        let mut output = match run_step(&*self.effects, step, tool.call(call.input.clone(), ctx)).await {
            StepResult::Ran(output) => output,
            StepResult::Interrupted => ToolOutput::error(OUTCOME_UNKNOWN_RESULT),
            StepResult::Unreadable(e) => {
                ToolOutput::error(format!("the journal's result of this call is unreadable: {e}"))
            }
        };
        let post_hooks = self.hook_step(
            "PostToolUse",
            &call,
            self.hooks.post_tool_use(&self.env, &call.name, &call.id, &call.input, &output.content, output.is_error),
        );
        let (post, post_warnings) = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                // Only hooks that were to run were killed: no warning about none.
                if self.hooks.runs_for_tool(&call.name) {
                    notes.warnings.push(format!("{INTERRUPTED_HOOKS}: PostToolUse of {} {}", call.name, call.id));
                }
                self.apply_budget(&call.id, &mut output);
                return output;
            }
            decided = post_hooks => decided,
        };
        notes.warnings.extend(post_warnings);
        if let Some(feedback) = post.feedback {
            output.content.push_str(&format!("\n\nPostToolUse hook feedback:\n{feedback}"));
        }
        if notes.stop.is_none() {
            notes.stop = post.stop;
        }
        // The budget covers the feedback too: a hook's output is part of what the model reads.
        self.apply_budget(&call.id, &mut output);
        if !output.is_error && tool.attaches_memory() {
            attach_memory(tool.as_ref(), &call.input, &cwd, nested, &mut output, &mut notes.warnings).await;
        }
        output
    }

    /// Run one tool hook event's hooks for `call` as a step of the run's effects
    /// ([`hooks_step`]), when a hook command would run for it: no hook, nothing to journal.
    async fn hook_step<T>(
        &self,
        event: &'static str,
        call: &ToolCall,
        hooks: BoxFuture<'_, (T, Vec<String>)>,
    ) -> (T, Vec<String>)
    where
        T: Default + serde::Serialize + serde::de::DeserializeOwned + Send,
    {
        if !self.hooks.runs_for_tool(&call.name) {
            return hooks.await;
        }
        hooks_step(&*self.effects, event, Some(&call.id), hooks).await
    }

    /// Put a call the policy cannot decide to the approver, one question at a time. `Ok` with
    /// the decision to go on with (never [`Decision::Ask`]), or `Err` with the call's result.
    async fn ask(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        hook_asks: Option<&str>,
        ctx: &ToolContext,
        warnings: &mut Vec<String>,
        record: &mut Option<Box<(ApprovalRequest, Approval)>>,
    ) -> Result<Decision, ToolOutput> {
        let (approvals, cancel) = (&self.approvals, &ctx.cancel);
        let _turn = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ToolOutput::error(INTERRUPTED_RESULT)),
            turn = approvals.turn.lock() => turn,
        };
        // Judged again: an answer to another call may have granted a rule meanwhile.
        let (reason, suggestion) = match (self.decide(tool, &call.input, &ctx.sandbox), hook_asks) {
            (Decision::Ask { reason, suggestion }, _) => (reason, suggestion),
            (Decision::Allow { .. }, Some(reason)) => (reason.to_owned(), None),
            (settled, _) => return Ok(settled),
        };
        let request = ApprovalRequest {
            tool_use_id: call.id.clone(),
            tool: call.name.clone(),
            input: call.input.clone(),
            reason,
            suggestion,
            agent: None,
        };
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ToolOutput::error(INTERRUPTED_RESULT)),
            answer = approvals.approver.approve(&request) => answer,
        };
        tracing::debug!(tool = %call.name, id = %call.id, ?answer, "approval");
        let decided = match &answer {
            Approval::AllowOnce | Approval::AllowChanged { .. } => Ok(self.approved(tool, &call.input)),
            Approval::AllowForSession { rule } => {
                if let Err(e) = self.policy.grant(rule) {
                    warnings.push(format!("{e}; the call of {} {} was allowed once", call.name, call.id));
                }
                Ok(self.approved(tool, &call.input))
            }
            Approval::Deny { message } => Err(ToolOutput::error(message.clone())),
            Approval::DenyAndInterrupt { message } => {
                approvals.interrupt.cancel();
                Err(ToolOutput::error(message.clone()))
            }
        };
        *record = Some(Box::new((request, answer)));
        decided
    }

    /// What a question a person (or a hook) answered with "allow" becomes: the call runs, at a
    /// path outside the working directory too when that is what was asked about.
    fn approved(&self, tool: &dyn Tool, input: &serde_json::Value) -> Decision {
        Decision::Allow { outside: self.policy.is_outside(tool, input), guard_git: false, read_only: false }
    }

    /// The policy's decision on `tool` with `input`, where a command proven read-only is not
    /// run on the proof alone when nothing would contain it: without the sandbox (it is
    /// unavailable) or when the call disables it, it is a question instead.
    fn decide(&self, tool: &dyn Tool, input: &serde_json::Value, sandbox: &Sandbox) -> Decision {
        let decision = self.policy.decide(tool, input);
        let unsandboxed = disables_sandbox(input);
        match decision {
            Decision::Allow { read_only: true, .. }
                if tool.kind() == ToolKind::RunsCommands && (!sandbox.trusts_read_only_proof() || unsandboxed) =>
            {
                let why = if unsandboxed { "the call disables the sandbox" } else { "the sandbox is unavailable" };
                self.policy.unconfined_question(tool.name(), why)
            }
            decision => decision,
        }
    }

    /// How an allowed call's commands are confined: unconfined in `bypassPermissions` and
    /// for a call that disables the sandbox where the settings allow that, read-only when
    /// nothing but the read-only proof allowed it, else writing.
    fn launch(&self, read_only: bool, input: &serde_json::Value, sandbox: &Sandbox) -> Launch {
        match self.policy.mode() {
            Mode::BypassPermissions => Launch::Unconfined("bypassPermissions"),
            _ if disables_sandbox(input) && sandbox.settings().allow_unsandboxed_commands => {
                Launch::Unconfined("dangerouslyDisableSandbox")
            }
            _ if read_only => Launch::ReadOnly { readable: self.policy.readable_roots().to_vec() },
            _ => Launch::Writing,
        }
    }

    /// Cut a result over the cap, saving the whole text where the note says.
    fn apply_budget(&self, id: &str, output: &mut ToolOutput) {
        let total = output.content.chars().count();
        if total <= self.result_cap {
            return;
        }
        let path = self.spill_dir.join(format!("{}.txt", sanitize(id)));
        let saved = crate::tools::spill::save(&self.spill_dir, &path, &output.content);
        let cut: String = output.content.chars().take(self.result_cap).collect();
        let note = match saved {
            Ok(()) => format!(
                "\n\n[Result cut at {} of {total} characters. The whole result is saved at {}; Read it with offset/limit, or Grep it.]",
                self.result_cap,
                path.display()
            ),
            Err(e) => {
                format!("\n\n[Result cut at {} of {total} characters; saving the rest failed: {e}]", self.result_cap)
            }
        };
        output.content = cut + &note;
    }
}

/// Append to `output` the memory `nested` attaches for the file `tool`'s call of `input`
/// touched (its permission subject, resolved as the tool resolved it); its warnings go to the
/// user.
async fn attach_memory(
    tool: &dyn Tool,
    input: &serde_json::Value,
    cwd: &std::path::Path,
    nested: Arc<crate::context::memory::nested::NestedMemory>,
    output: &mut ToolOutput,
    warnings: &mut Vec<String>,
) {
    let crate::tools::Subject::Path(path) = tool.permission_subject(input) else { return };
    let file = cwd.join(path);
    // Reading the memory files is blocking I/O.
    let Ok(attachment) = tokio::task::spawn_blocking(move || nested.attach(&file)).await else { return };
    warnings.extend(attachment.warnings.into_iter().map(|w| format!("memory: {w}")));
    if let Some(block) = attachment.block {
        output.content.push_str("\n\n");
        output.content.push_str(&block);
    }
}

fn sanitize(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::NoHooks;
    use crate::permissions::Mode;
    use serde_json::json;

    fn toolbox(dir: &std::path::Path, cap: usize) -> Toolbox {
        Toolbox {
            registry: Registry::standard(),
            hooks: Arc::new(NoHooks),
            env: HookEnv::new("s", dir),
            policy: Arc::new(Policy::new(Mode::Default, dir.to_path_buf())),
            result_cap: cap,
            spill_dir: dir.join("spill"),
            approvals: Approvals::unattended(),
            effects: Arc::new(crate::engine::clock::VirtualClock::new()),
        }
    }

    #[tokio::test]
    async fn long_results_are_cut_and_saved_whole() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..200).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("big.txt"), &text).unwrap();
        let tb = toolbox(dir.path(), 100);
        let call = ToolCall { id: "toolu_1".into(), name: "Read".into(), input: json!({"file_path": "big.txt"}) };
        let result = tb.run_call(&call, ToolContext::new(dir.path())).await;
        let saved = std::fs::read_to_string(dir.path().join("spill/toolu_1.txt")).unwrap();
        assert!(saved.starts_with("     1\tline 0\n") && saved.ends_with("   200\tline 199\n"));
        let (head, note) = result.output.content.split_once("\n\n[").unwrap();
        assert_eq!(head.chars().count(), 100);
        assert_eq!(
            note,
            format!(
                "Result cut at 100 of {} characters. The whole result is saved at {}; Read it with offset/limit, or Grep it.]",
                saved.chars().count(),
                dir.path().join("spill/toolu_1.txt").display()
            )
        );
    }

    /// A successful Read of a file whose directory has memory gets it after its result, past
    /// the budget (the cap does not cut it); a failed call gets none.
    #[tokio::test]
    async fn nested_memory_follows_a_successful_call_after_the_budget() {
        use crate::context::memory::{Memory, MemoryRoots, nested::NestedMemory};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/CLAUDE.md"), "Sub rules.\n").unwrap();
        let text: String = (0..200).map(|i| format!("line {i}\n")).collect();
        std::fs::write(root.join("sub/x.txt"), &text).unwrap();
        let (sources, roots) =
            (crate::settings::SettingSources::parse(Some("project")).unwrap(), MemoryRoots::default());
        let dirs = crate::settings::ConfigDirs { user: None, project: root.clone() };
        let (nested, _) = NestedMemory::new(&Memory::discover(&sources, &dirs, &roots), &sources, &dirs, &roots);
        let ctx = ToolContext { nested_memory: Arc::new(nested), ..ToolContext::new(&root) };
        let tb = toolbox(&root, 100);
        let read =
            |file: &str| ToolCall { id: "toolu_1".into(), name: "Read".into(), input: json!({"file_path": file}) };
        let missing = tb.run_call(&read("sub/missing.txt"), ctx.clone()).await;
        assert!(missing.output.is_error && !missing.output.content.contains("system-reminder"));
        assert_eq!(ctx.nested_memory.attached(), Vec::new());
        let result = tb.run_call(&read("sub/x.txt"), ctx.clone()).await;
        let (_, after_cut) = result.output.content.split_once("Read it with offset/limit, or Grep it.]").unwrap();
        assert!(after_cut.starts_with("\n\n<system-reminder>\nMemory that applies to sub/x.txt, "), "{after_cut}");
        assert!(after_cut.ends_with(&format!(
            "\n\n## {}/sub/CLAUDE.md (project instructions, checked into the repository)\n\nSub rules.\n</system-reminder>",
            root.display()
        )));
        assert_eq!(result.warnings, Vec::<String>::new());
        let again = tb.run_call(&read("sub/x.txt"), ctx).await;
        assert!(!again.output.content.contains("system-reminder"));
    }

    #[tokio::test]
    async fn unknown_tools_and_denied_calls_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let tb = toolbox(dir.path(), 1000);
        let unknown = ToolCall { id: "t".into(), name: "Teleport".into(), input: json!({}) };
        let r = tb.run_call(&unknown, ToolContext::new(dir.path())).await;
        assert_eq!(
            r.output,
            ToolOutput::error("<tool_use_error>Error: No such tool available: Teleport</tool_use_error>")
        );
        let cancelled = ToolContext::new(dir.path());
        cancelled.cancel.cancel();
        let read = ToolCall { id: "t".into(), name: "Read".into(), input: json!({"file_path": "x"}) };
        assert_eq!(tb.run_call(&read, cancelled).await.output, ToolOutput::error(INTERRUPTED_RESULT));
    }

    /// Never answers; counts the questions.
    struct Silent(std::sync::atomic::AtomicUsize);

    impl Approver for Silent {
        fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> futures::future::BoxFuture<'a, Approval> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(futures::future::pending())
        }
    }

    /// An interrupt drops the pending question: the call is answered as interrupted and the
    /// file is not written.
    #[tokio::test]
    async fn an_interrupt_drops_a_pending_question() {
        let dir = tempfile::tempdir().unwrap();
        let silent = Arc::new(Silent(Default::default()));
        let mut tb = toolbox(dir.path(), 1000);
        tb.approvals = Approvals::new(silent.clone(), CancellationToken::new());
        let call =
            ToolCall { id: "w".into(), name: "Write".into(), input: json!({"file_path": "a.txt", "content": "x"}) };
        let journal_path = dir.path().join("journal.jsonl");
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&journal_path).unwrap();
        let journal =
            crate::session::ToolJournal::new(file, journal_path.clone(), crate::session::Uuid::new_v4(), None);
        let ctx = ToolContext { journal: Some(journal), ..ToolContext::new(dir.path()) };
        let cancel = ctx.cancel.clone();
        let interrupt = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(tb.run_call(&call, ctx.clone()), interrupt);
        assert_eq!(result.output, ToolOutput::error(INTERRUPTED_RESULT));
        assert_eq!(result.approval, None);
        assert_eq!(silent.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(!dir.path().join("a.txt").exists());
        // A call stopped while its question waited never started: the journal says nothing.
        assert_eq!(std::fs::read_to_string(&journal_path).unwrap(), "");
        // A call that runs is journaled just before it does, read-only as the policy judged it.
        std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
        let read = ToolCall { id: "r".into(), name: "Read".into(), input: json!({"file_path": "b.txt"}) };
        let ctx = ToolContext { cancel: CancellationToken::new(), ..ctx };
        assert!(!tb.run_call(&read, ctx).await.output.is_error);
        let line: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&journal_path).unwrap().trim_end()).unwrap();
        assert_eq!(
            (&line["type"], &line["phase"], &line["toolUseId"], &line["name"], &line["readOnly"]),
            (&json!("agentloop-tool"), &json!("start"), &json!("r"), &json!("Read"), &json!(true))
        );
    }

    /// A PostToolUse hook that blocks with 5 MB on stderr: its feedback is cut to the head and
    /// the tail like Bash output, and the result budget then applies to the result with it.
    #[tokio::test]
    async fn hook_feedback_is_capped_and_counted_in_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let command = "head -c 5000000 /dev/zero | tr '\\0' x >&2; exit 2";
        let settings = json!({"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": command}]}]}});
        let hooks = crate::hooks::settings::Settings::from_value("test", &settings).unwrap().hooks;
        let call = ToolCall { id: "toolu_9".into(), name: "Read".into(), input: json!({"file_path": "a.txt"}) };
        let half = "x".repeat(crate::tools::bash::MAX_OUTPUT_CHARS / 2);
        let feedback = format!("{half}\n… [4970000 bytes cut from the middle of stderr] …\n{half}");
        let whole = format!("     1\thello\n\n\nPostToolUse hook feedback:\n{feedback}");

        let mut tb = toolbox(dir.path(), 100_000);
        tb.hooks = Arc::new(crate::hooks::command::CommandHooks::new(hooks));
        let result = tb.run_call(&call, ToolContext::new(dir.path())).await;
        assert_eq!(result.output.content, whole);

        tb.result_cap = 1000;
        let result = tb.run_call(&call, ToolContext::new(dir.path())).await;
        let saved = dir.path().join("spill/toolu_9.txt");
        assert_eq!(std::fs::read_to_string(&saved).unwrap(), whole);
        let head: String = whole.chars().take(1000).collect();
        assert_eq!(
            result.output.content,
            format!(
                "{head}\n\n[Result cut at 1000 of {} characters. The whole result is saved at {}; Read it with offset/limit, or Grep it.]",
                whole.chars().count(),
                saved.display()
            )
        );
    }
}

//! `Bash`: run a command with `bash -c` in the run's working directory, with Claude Code's
//! input schema. The command gets its own process group, so a timeout or an abort kills it
//! and everything it started (`sleep 100 &` included) with one signal. Output is captured
//! with a size cap ([`capture`]); [`crate::permissions::readonly`] decides which commands may run concurrently.
//! With `run_in_background` the shell starts as one of the session's background shells
//! ([`super::background`]) and the call answers at once.
//! The shell's environment is the context's [`super::shell_env::ShellEnv`]: no model
//! credentials, no secret-looking variables; when the call is [`ToolContext::guard_git`], git
//! in it also ignores the repository's program-running settings
//! ([`crate::permissions::git::neutralise`]).

pub mod capture;
#[cfg(test)]
mod tests;

use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::process::Child;
use tokio_util::sync::CancellationToken;

use self::capture::{Capture, pump};
use super::{Subject, Tool, ToolContext, ToolKind, ToolOutput, typed_call};
use crate::process_group::ProcessGroup;

/// Timeout when the call gives none, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout a call may ask for, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Bytes (so at most as many characters) kept of each of stdout and stderr.
pub const MAX_OUTPUT_CHARS: usize = 30_000;
/// How long to wait for the output pipes to close once the shell has ended or been killed.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// What a call that printed nothing and succeeded reads.
pub const NO_OUTPUT: &str = "(no output)";
/// Answer of a call cancelled by `ctx.cancel`.
pub const CANCELLED: &str = "Command was cancelled";
/// Added when background processes still held the output after the shell exited.
pub const KILLED_LEFTOVERS: &str =
    "(processes the command left running in the background kept its output open and were killed)";
/// Added when a process outside the command's process group still holds the output.
pub const STOPPED_READING: &str = "(stopped reading output held open by a process outside the command's process group)";

/// The `Bash` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bash;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    command: String,
    #[serde(default)]
    timeout: Option<u64>,
    /// Shown to the user; kept with a background shell.
    #[serde(default)]
    description: Option<String>,
    /// Start the command in the background ([`super::background`]) and answer at once.
    #[serde(default)]
    run_in_background: Option<bool>,
    /// Run outside the sandbox (Claude Code's name): the tool pipeline reads it
    /// ([`DISABLES_SANDBOX`]) to decide the call's confinement and approval.
    #[serde(default, rename = "dangerouslyDisableSandbox")]
    _disable_sandbox: bool,
}

/// The input field with which a call asks to run outside the sandbox.
pub const DISABLES_SANDBOX: &str = "dangerouslyDisableSandbox";

impl Tool for Bash {
    fn name(&self) -> &'static str {
        "Bash"
    }

    fn description(&self) -> &'static str {
        "Executes a bash command (`bash -c`) in the working directory, with stdin closed, and \
         returns its stdout, then its stderr, then its exit code when it is not zero. The \
         timeout is in milliseconds: 120000 (2 minutes) by default, at most 600000 (10 \
         minutes); on timeout the command and every process it started are killed. Each of \
         stdout and stderr is cut to 30000 characters (the start and the end are kept). Each \
         call starts a fresh shell: `cd` and variables do not carry over. With \
         run_in_background: true the call answers at once with a task ID and the file that \
         gets the command's stdout and stderr; the timeout does not apply (the command runs \
         until it ends, TaskStop stops it, or the session ends); read the file with Read, \
         or use TaskOutput. Prefer the Read, Glob, Grep, Edit and Write tools over cat, \
         find, grep, sed and echo redirections. Quote paths that contain spaces."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to execute"},
                "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "Optional timeout in milliseconds (max 600000)"},
                "description": {"type": "string", "description": "Clear, concise description of what this command does in 5-10 words"},
                "dangerouslyDisableSandbox": {"type": "boolean", "description": "Set to true to run this command outside the sandbox; it is then never approved without a rule or a person"},
                "run_in_background": {"type": "boolean", "description": "Set to true to run this command in the background. Use Read to read the output later. The timeout does not apply to a background command."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    /// A read-only command, in the foreground: a background shell outlives its call, so it
    /// never starts while the reply streams (a reply cut and retried would leave one behind
    /// that the model was never told about).
    fn is_concurrency_safe(&self, input: &Value) -> bool {
        input.get("run_in_background").and_then(Value::as_bool) != Some(true)
            && input.get("command").and_then(Value::as_str).is_some_and(crate::permissions::readonly::is_read_only)
    }

    fn kind(&self) -> ToolKind {
        ToolKind::RunsCommands
    }

    fn permission_subject(&self, input: &Value) -> Subject {
        Subject::Command(input.get("command").and_then(Value::as_str).unwrap_or_default().to_owned())
    }

    /// A failing command usually means the rest of the plan is moot (Claude Code's rule).
    fn failure_cancels_siblings(&self) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        typed_call("Bash", input, move |input: Input| async move { Ok(run(input, &ctx).await) })
    }
}

/// How the shell's run ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut(u64),
    Cancelled,
    WaitFailed(std::io::Error),
}

async fn run(input: Input, ctx: &ToolContext) -> ToolOutput {
    let timeout_ms = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return ToolOutput::error(format!(
            "timeout must be between 1 and {MAX_TIMEOUT_MS} milliseconds (got {timeout_ms})"
        ));
    }
    if input.command.trim().is_empty() {
        return ToolOutput::error("command is empty");
    }
    if ctx.cancel.is_cancelled() {
        return ToolOutput::error(CANCELLED);
    }
    if input.run_in_background == Some(true) {
        return start_in_background(input, ctx);
    }
    let mut child = match shell_command(ctx, &input.command).spawn() {
        Ok(child) => child,
        Err(e) => return ToolOutput::error(format!("Cannot start bash in {}: {e}", ctx.cwd.display())),
    };
    let group = ctx.sandbox.group(child.id());
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let (mut out, mut err) = (Capture::new(MAX_OUTPUT_CHARS), Capture::new(MAX_OUTPUT_CHARS));
    let (ending, note) = {
        let reading = async {
            tokio::join!(pump(stdout, &mut out), pump(stderr, &mut err));
        };
        tokio::pin!(reading);
        supervise(&mut child, &group, reading, timeout_ms, &ctx.cancel).await
    };
    group.disarm();
    render(&out, &err, ending, note)
}

/// Start the command as one of the session's background shells; the answer names its id and
/// its output file.
fn start_in_background(input: Input, ctx: &ToolContext) -> ToolOutput {
    let shell = shell_command(ctx, &input.command);
    // The same group as a foreground shell's (see `run`).
    match ctx.background.start(shell, |pid| ctx.sandbox.group(pid), &input.command, input.description) {
        Ok(shell) => ToolOutput::ok(format!(
            "Command running in background with ID: {}. Output is being written to: {}",
            shell.id(),
            shell.output_path().display()
        )),
        Err(e) => ToolOutput::error(format!("Cannot start bash in {}: {e}", ctx.cwd.display())),
    }
}

/// The shell that runs `command` for a call with `ctx`: `bash -c` in the working directory,
/// with the call's environment and confinement, stdin closed, stdout and stderr piped, in a
/// process group of its own ([`crate::sandbox::Sandbox::command`]). Every Bash process
/// (foreground or background) starts here.
pub fn shell_command(ctx: &ToolContext, command: &str) -> tokio::process::Command {
    let launch = ctx.sandbox.effective(ctx.launch.clone(), command);
    let policy = ctx.sandbox.policy(&launch, ctx.read_deny.kernel_paths());
    let args = [std::ffi::OsStr::new("-c"), std::ffi::OsStr::new(command)];
    let mut shell = ctx.sandbox.command(policy.as_ref(), &ctx.shell_env, "bash", &args);
    if ctx.guard_git {
        crate::permissions::git::neutralise(&mut shell);
    }
    shell.current_dir(&ctx.cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    shell
}

/// Wait for the shell to exit, the deadline or cancellation while the output is read; kill
/// the group when the shell did not exit by itself, then let the readers reach the end.
async fn supervise(
    child: &mut Child,
    group: &ProcessGroup,
    mut reading: Pin<&mut impl Future<Output = ()>>,
    timeout_ms: u64,
    cancel: &CancellationToken,
) -> (Ending, Option<&'static str>) {
    let deadline = tokio::time::sleep(Duration::from_millis(timeout_ms));
    tokio::pin!(deadline);
    let mut drained = false;
    let ending = loop {
        tokio::select! {
            () = &mut reading, if !drained => drained = true,
            status = child.wait() => break status.map_or_else(Ending::WaitFailed, Ending::Exited),
            () = &mut deadline => break Ending::TimedOut(timeout_ms),
            () = cancel.cancelled() => break Ending::Cancelled,
        }
    };
    if !matches!(ending, Ending::Exited(_)) {
        group.kill();
        // Reap the shell; after SIGKILL this returns at once.
        let _ = child.wait().await;
    }
    let mut note = None;
    if !drained && tokio::time::timeout(DRAIN_GRACE, &mut reading).await.is_err() {
        // Only leftovers of an exited shell can still be alive in the group here.
        group.kill();
        note = Some(KILLED_LEFTOVERS);
        if tokio::time::timeout(DRAIN_GRACE, &mut reading).await.is_err() {
            note = Some(STOPPED_READING);
        }
    }
    (ending, note)
}

/// The answer: stdout, stderr, a note, then the status line; an error unless exit code 0.
fn render(out: &Capture, err: &Capture, ending: Ending, note: Option<&str>) -> ToolOutput {
    let mut parts: Vec<String> = [out.render("stdout"), err.render("stderr")]
        .iter()
        .map(|text| text.trim_end_matches('\n').to_owned())
        .filter(|text| !text.is_empty())
        .collect();
    parts.extend(note.map(str::to_owned));
    let status = match ending {
        Ending::Exited(status) if status.success() => None,
        Ending::Exited(status) => Some(match (status.code(), status.signal()) {
            (Some(code), _) => format!("Exit code {code}"),
            (None, Some(signal)) => format!("Killed by signal {signal}"),
            (None, None) => format!("Ended abnormally: {status}"),
        }),
        Ending::TimedOut(ms) => Some(format!("Command timed out after {ms} ms")),
        Ending::Cancelled => Some(CANCELLED.to_owned()),
        Ending::WaitFailed(e) => Some(format!("Lost track of the command: {e}")),
    };
    let is_error = status.is_some();
    parts.extend(status);
    let content = if parts.is_empty() { NO_OUTPUT.to_owned() } else { parts.join("\n") };
    ToolOutput { content, is_error, images: Vec::new(), structured: None, extra: None }
}
